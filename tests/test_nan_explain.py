"""detect_anomaly explains why a NaN gradient appeared: the op's table entry says where its
derivative is infinite, the cotangent arriving there is 0 (masked by a where, on which
line), and the standard fix, written for the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
from chainrule.autograd import AnomalyError, detect_anomaly


def _error(fn, check_forward=True):
    with detect_anomaly(check_forward=check_forward), pytest.raises(AnomalyError) as info, \
            np.errstate(all="ignore"):
        fn()
    return str(info.value)


def test_where_around_sqrt_at_zero_is_explained_and_fixed_on_the_users_line():
    x = cr.tensor([4.0, 0.0, 1.0], requires_grad=True)
    text = _error(lambda: cr.where(x > 0, cr.sqrt(x), 0.0).sum().backward())
    assert "SqrtBackward0 returned 1 NaN" in text
    assert "infinite where x = 0 (its table entry); here at 1 of the 1 entries" in text
    assert "e.g. index (1,)" in text
    assert "The cotangent arriving at those entries is 0: they were masked out downstream " \
           "by the `where` created at" in text
    assert "test_nan_explain.py" in text  # the where's line, in this file
    assert "0 * inf = NaN" in text
    assert "Fix: where(m, sqrt(where(m, x, 1.0)), 0.0)" in text
    here = [line for line in text.splitlines() if line.startswith("Here: ")]
    assert here == ["Here: text = _error(lambda: cr.where(x > 0, cr.sqrt(cr.where(x > 0, x, "
                    "1.0)), 0.0).sum().backward())"]
    # the rewritten line gives the right gradient: 1 / (2 sqrt(x)) where x > 0, else 0
    x.grad = None
    with detect_anomaly():
        cr.where(x > 0, cr.sqrt(cr.where(x > 0, x, 1.0)), 0.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.25, 0.0, 0.5])


def test_method_calls_and_the_else_branch_are_rewritten_too():
    x = cr.tensor([0.0, 2.0], requires_grad=True)
    text = _error(lambda: cr.where(x <= 0, 0.0, x.sqrt()).sum().backward())
    assert "Here: text = _error(lambda: cr.where(x <= 0, 0.0, cr.where(x <= 0, 1.0, x)" \
           ".sqrt()).sum().backward())" in text


def test_a_cotangent_that_is_not_zero_means_no_derivative_exists():
    v = cr.tensor([0.0, 0.0], requires_grad=True)
    text = _error(lambda: cr.sqrt((v * v).sum()).backward())
    assert "infinite where x = 0" in text
    assert "The cotangent arriving there is not 0" in text
    assert "sqrt(sum(x ** 2) + eps)" in text


def test_a_nan_born_in_the_forward_pass_of_a_masked_branch():
    x = cr.tensor([3.0, -1.0], requires_grad=True)
    text = _error(lambda: cr.where(x > 0, cr.log(x), 0.0).sum().backward())
    assert text.startswith("log produced 1 NaN")
    assert "If a `where` masks these entries out later, their gradient is NaN all the same" \
        in text
    assert "where(m, log(where(m, x, 1.0)), 0.0)" in text and "xlogy(x, x)" in text


def test_division_by_zero_in_a_masked_branch():
    a = cr.tensor([1.0, 2.0], requires_grad=True)
    b = cr.tensor([0.0, 4.0], requires_grad=True)
    # (the forward check would stop at the Inf of 1 / 0 first: backward checks only)
    text = _error(lambda: cr.where(b != 0, a / b, 0.0).sum().backward(), check_forward=False)
    assert "the derivative of div with respect to" in text and "where y = 0" in text
    assert "Fix: where(m, x / where(m, y, 1.0), 0.0)" in text


def test_explain_false_gives_the_short_message():
    x = cr.tensor([4.0, 0.0], requires_grad=True)
    with detect_anomaly(explain=False), pytest.raises(AnomalyError) as info, \
            np.errstate(all="ignore"):
        cr.where(x > 0, cr.sqrt(x), 0.0).sum().backward()
    assert "Why:" not in str(info.value) and "Hint:" in str(info.value)


def test_every_table_entry_with_singular_points_finds_them():
    # each declared test runs on the saved values its op keeps, at a singular point
    cases = {
        "sqrt": lambda x: x.sqrt(), "log": lambda x: x.log(), "log2": lambda x: x.log2(),
        "log10": lambda x: x.log10(), "rsqrt": lambda x: x.rsqrt(),
        "log1p": lambda x: (x - 1.0).log1p(), "acos": lambda x: (x + 1.0).acos(),
        "asin": lambda x: (x + 1.0).asin(), "atanh": lambda x: (x + 1.0).atanh(),
        "acosh": lambda x: (x + 1.0).acosh(), "pow": lambda x: x ** 0.5,
        "div": lambda x: 2.0 / x, "reciprocal": lambda x: x.reciprocal(),
        "linalg_vector_norm": lambda x: cr.linalg.vector_norm(x),
    }
    declared = {name for name, op in cr.TABLE.items() if op.singular}
    assert declared == set(cases)
    for name, fn in cases.items():
        x = cr.tensor([0.0], requires_grad=True)
        with np.errstate(all="ignore"):
            y = fn(x)
        node = y.grad_fn
        while node.plan.op.name != name:  # past the shift (x - 1, x + 1)
            node = node.next_functions[0][0]
        op = node.plan.op
        saved = dict(zip(node.plan.names, node.saved))
        for sing in op.singular.values():
            with np.errstate(all="ignore"):
                mask = np.asarray(sing.test(**{p: saved[p] for p in sing.params}))
            assert mask.any(), name
