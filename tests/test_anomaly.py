"""detect_anomaly: NaN/Inf provenance in the forward and the backward pass."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import chainrule as cr
from chainrule.autograd import AnomalyError, detect_anomaly

HERE = __file__


def _line_of(fragment, fn):
    source, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(source) if fragment in line)


def _nan_in_forward():
    x = cr.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x * 2
    return y.log()  # log of a negative number: NaN


def _inf_only_in_backward():
    x = cr.tensor([0.0, 4.0], requires_grad=True)
    s = x.sqrt()  # sqrt(0) = 0 is fine; its derivative 1 / (2 sqrt(0)) is not
    (s * 3).sum().backward()


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def test_nan_made_in_forward_names_the_op_inputs_and_source_line():
    with detect_anomaly(), pytest.raises(AnomalyError) as info:
        _nan_in_forward()
    err = info.value
    assert err.phase == "forward" and err.op == "log"
    text = str(err)
    assert "1 NaN" in text and "shape (3,) float64" in text
    assert f"{HERE}:{_line_of('y.log()', _nan_in_forward)}" in err.where
    assert "y.log()" in text


def test_inf_made_only_in_backward_names_the_node_and_forward_line():
    with detect_anomaly(), pytest.raises(AnomalyError) as info:
        _inf_only_in_backward()
    err = info.value
    assert err.phase == "backward" and err.op == "SqrtBackward0"
    assert "1 Inf" in str(err) and "(self)" in str(err) and "float64" in str(err)
    assert f"{HERE}:{_line_of('x.sqrt()', _inf_only_in_backward)}" in err.where


def test_check_forward_false_checks_only_the_backward():
    with detect_anomaly(check_forward=False):
        y = _nan_in_forward()  # no error in forward
    assert np.isnan(y.detach().numpy()).any()
    with detect_anomaly(check_forward=False), pytest.raises(AnomalyError, match="Sqrt"):
        _inf_only_in_backward()


def test_without_anomaly_mode_nothing_is_checked_and_mode_is_restored():
    y = _nan_in_forward()
    assert np.isnan(y.detach().numpy()).any()
    assert not cr.autograd.is_anomaly_enabled()
    with detect_anomaly():
        assert cr.autograd.is_anomaly_enabled()
    assert not cr.autograd.is_anomaly_enabled()


def test_finite_computation_passes_unchanged():
    x = cr.tensor([0.5, 2.0], requires_grad=True)
    with detect_anomaly():
        (x.log() * x).sum().backward()
    assert np.allclose(x.grad.numpy(), np.log([0.5, 2.0]) + 1)


def test_custom_function_backward_producing_nan_is_named():
    class Bad(cr.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    x = cr.tensor([1.0], requires_grad=True)
    with detect_anomaly(), pytest.raises(AnomalyError) as info:
        Bad.apply(x).sum().backward()
    # The NaN is caught where it is made: the op inside Bad.backward, at its source line.
    assert info.value.phase == "backward" and info.value.op == "mul"
    assert 'g * float("nan")' in info.value.where
    assert "while computing the backward pass" in str(info.value)


def test_custom_function_backward_leaving_the_library_is_named():
    class BadNumpy(cr.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return cr.tensor(g.numpy() * np.inf)

    x = cr.tensor([1.0], requires_grad=True)
    with detect_anomaly(), pytest.raises(AnomalyError, match="BadNumpyBackward"):
        BadNumpy.apply(x).sum().backward()


def test_check_nan_false_records_lines_and_raises_nothing():
    # PyTorch's detect_anomaly(check_nan=False): the NaN gradient passes through
    x = cr.tensor([4.0, 0.0], requires_grad=True)
    with detect_anomaly(check_nan=False), np.errstate(all="ignore"):
        cr.where(x > 0, cr.sqrt(x), 0.0).sum().backward()
    assert np.isnan(x.grad.numpy()[1]) and x.grad.numpy()[0] == 0.25
