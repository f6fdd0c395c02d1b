"""Second-order transforms in every order, for every sample of the derivative table.

For each sample, ``s(x) = sum_k <c_k, f_k(x)>`` (fixed random weights ``c_k`` on the
float outputs) as a function of its first float input, the other inputs held fixed. The
Hessian of ``s`` from ``jacfwd(jacfwd)``, ``jacfwd(jacrev)`` and ``jacrev(jacfwd)`` must
equal the one from ``jacrev(jacrev)``, and that one must agree with central differences
of the gradient (reverse mode checked against numbers, not only against itself). For an
input of more than 6 entries the Hessian is taken in 6 random orthonormal directions.
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
from chainrule.func import jacfwd, jacrev
from samples import SAMPLES


def _float_outputs(result):
    return [o for o in (result if isinstance(result, tuple) else (result,))
            if isinstance(o, cr.Tensor) and o.dtype.kind == "f"]


def _scalarised(sample):
    """``(s, x0)``: the weighted sum of the sample's float outputs as a function of its
    first float input, and that input's value; None when the sample has none."""
    first = next((i for i, x in enumerate(sample.inputs)
                  if isinstance(x, np.ndarray) and x.dtype.kind == "f"), None)
    if first is None:
        return None
    fixed = [cr.tensor(x) if isinstance(x, np.ndarray) else x for x in sample.inputs]
    rng = np.random.default_rng(11)
    shapes = [o.shape for o in _float_outputs(sample.fn(*fixed))]
    weights = [cr.tensor(rng.standard_normal(s)) for s in shapes]

    def s(x):
        args = list(fixed)
        args[first] = x
        total = 0.0
        for o, c in zip(_float_outputs(sample.fn(*args)), weights):
            total = total + (o * c).sum()
        return total

    return s, sample.inputs[first]


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
def test_every_order_of_two_jacobian_transforms_gives_the_same_hessian(sample):
    found = _scalarised(sample)
    if found is None:
        pytest.skip("no float input")
    s_full, x0 = found
    # inputs of more than 6 entries: the Hessian restricted to 6 random directions,
    # P^T H P, the function of z being s(x0 + P z) (same transforms, less time)
    k = min(x0.size, 6)
    P = np.eye(x0.size) if k == x0.size else \
        np.linalg.qr(np.random.default_rng(3).standard_normal((x0.size, k)))[0]
    base, Pt, shape = cr.tensor(x0), cr.tensor(P), x0.shape

    def s(z):
        return s_full(base + (Pt @ z).reshape(shape))

    x0, n = np.zeros(k), k
    H = jacrev(jacrev(s))(cr.tensor(x0)).numpy().reshape(n, n)
    for outer, inner in ((jacfwd, jacfwd), (jacfwd, jacrev), (jacrev, jacfwd)):
        other = outer(inner(s))(cr.tensor(x0)).numpy().reshape(n, n)
        np.testing.assert_allclose(other, H, rtol=1e-7, atol=1e-9,
                                   err_msg=f"{outer.__name__}({inner.__name__}(f))")
    # the reverse-over-reverse Hessian against central differences of the gradient
    g = jacrev(s)
    eps = 1e-6
    numeric = np.empty((n, n))
    for j in range(n):
        step = np.zeros(n)
        step[j] = eps
        up = g(cr.tensor(x0 + step.reshape(x0.shape))).numpy().reshape(n)
        down = g(cr.tensor(x0 - step.reshape(x0.shape))).numpy().reshape(n)
        numeric[:, j] = (up - down) / (2 * eps)
    np.testing.assert_allclose(H, numeric, rtol=1e-4, atol=1e-5)
