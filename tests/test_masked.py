"""chainrule.masked: reductions over the entries a mask selects, as torch.masked; values
worked out by hand, gradients by gradcheck (masked-out entries get 0), torch if installed."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
from chainrule.autograd import gradcheck

try:
    import torch
except ImportError:  # the comparisons with torch are skipped; the rest runs
    torch = None

M = cr.masked
X = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
MASK = np.array([[True, False, True], [False, False, False]])


def x(grad=False):
    return cr.tensor(X, requires_grad=grad)


m = cr.tensor(MASK)

# selected: row 0 -> {1, 3}; row 1 -> nothing
EXPECTED = {
    "sum": (lambda a: M.sum(a, 1, mask=m), [4.0, 0.0]),
    "mean": (lambda a: M.mean(a, 1, mask=m), [2.0, np.nan]),
    "amax": (lambda a: M.amax(a, 1, mask=m), [3.0, -np.inf]),
    "amin": (lambda a: M.amin(a, 1, mask=m), [1.0, np.inf]),
    "prod": (lambda a: M.prod(a, 1, mask=m), [3.0, 1.0]),
    "cumsum": (lambda a: M.cumsum(a, 1, mask=m), [[1.0, 1.0, 4.0], [0.0, 0.0, 0.0]]),
    "cumprod": (lambda a: M.cumprod(a, 1, mask=m), [[1.0, 1.0, 3.0], [1.0, 1.0, 1.0]]),
    "softmax": (lambda a: M.softmax(a, 1, mask=m),
                [[1 / (1 + np.e ** 2), 0.0, np.e ** 2 / (1 + np.e ** 2)], [np.nan] * 3]),
    "logsumexp": (lambda a: M.logsumexp(a, 1, mask=m), [np.log(np.e + np.e ** 3), -np.inf]),
    "norm": (lambda a: M.norm(a, 2.0, 1, mask=m), [np.sqrt(10.0), 0.0]),
    "var": (lambda a: M.var(a, 1, unbiased=True, mask=m), [2.0, np.nan]),
    "median": (lambda a: M.median(a, 1, mask=m), [1.0, np.nan]),
}


# torch.masked's function of the same name and arguments (called only where torch is installed)
TORCH_NAMES = {
    "sum": lambda a, tm: torch.masked.sum(a, 1, mask=tm),
    "mean": lambda a, tm: torch.masked.mean(a, 1, mask=tm),
    "amax": lambda a, tm: torch.masked.amax(a, 1, mask=tm),
    "amin": lambda a, tm: torch.masked.amin(a, 1, mask=tm),
    "prod": lambda a, tm: torch.masked.prod(a, 1, mask=tm),
    "cumsum": lambda a, tm: torch.masked.cumsum(a, 1, mask=tm),
    "cumprod": lambda a, tm: torch.masked.cumprod(a, 1, mask=tm),
    "softmax": lambda a, tm: torch.masked.softmax(a, 1, mask=tm),
    "logsumexp": lambda a, tm: torch.masked.logsumexp(a, 1, mask=tm),
    "norm": lambda a, tm: torch.masked.norm(a, 2.0, 1, mask=tm),
    "var": lambda a, tm: torch.masked.var(a, 1, unbiased=True, mask=tm),
    "median": lambda a, tm: torch.masked.median(a, 1, mask=tm),
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_values_on_a_partly_and_a_fully_masked_row(name):
    fn, expected = EXPECTED[name]
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(fn(x()).numpy(), expected)
        ours = fn(x(True))  # the same values from an input that requires grad
        np.testing.assert_allclose(ours.detach().numpy(), expected)
    if torch is not None:
        with np.errstate(all="ignore"):
            theirs = TORCH_NAMES[name](torch.tensor(X, requires_grad=True),
                                       torch.tensor(MASK))
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(),
                                   err_msg=name)


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "cumsum", "norm"])
def test_gradients_skip_the_masked_out_entries(name):
    rows = cr.tensor(np.array([[True, False, True], [True, True, False]]))
    fn = {"sum": lambda a: M.sum(a, 1, mask=rows), "mean": lambda a: M.mean(a, 1, mask=rows),
          "prod": lambda a: M.prod(a, 1, mask=rows),
          "cumsum": lambda a: M.cumsum(a, 1, mask=rows),
          "norm": lambda a: M.norm(a, 2.0, 1, mask=rows)}[name]
    a = x(True)
    assert gradcheck(fn, (a,))
    (g,) = cr.autograd.grad(fn(a).sum(), [a])
    assert g.numpy()[0, 1] == 0 and g.numpy()[1, 2] == 0
