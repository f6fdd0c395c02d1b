"""Public functions and Tensor methods built on the table's primitives, on a device that
refuses host conversion (array-api-strict's second device, as CuPy's GPU): each result
(and gradient) must stay on the device and equal the CPU's. The table samples themselves
run in tests/test_backends.py; these are the compositions around them."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import chainrule as cr

# CHAINRULE_TEST_DEVICE=cuda:0 runs the same on a GPU (tools/gpu_check.sh); by default
# array-api-strict's second device, which CI has
DEV = os.environ.get("CHAINRULE_TEST_DEVICE", "array_api_strict.device1")
pytest.importorskip("cupy" if DEV.startswith("cuda") else "array_api_strict")

rng = np.random.default_rng(0)
A = rng.standard_normal((3, 4))
POS = rng.uniform(0.5, 2.0, (3, 4))
S = rng.standard_normal((3, 3)) + 3 * np.eye(3)
SPD = S @ S.T + np.eye(3)
INTS = np.array([3, 1, 2, 3, 0, 1])


def _leaves(out):
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _leaves(o)]
    return [out]


def _run(fn, arrays, dev, grad):
    T = lambda a, **kw: cr.tensor(np.asarray(a), device=dev, **kw)  # noqa: E731
    ins = [T(a, requires_grad=grad and np.asarray(a).dtype.kind == "f") for a in arrays]
    outs = _leaves(fn(T, *ins))
    vals = []
    for o in outs:
        if isinstance(o, cr.Tensor):
            if dev is not None:
                assert o.device == DEV, f"a result landed on {o.device}"
            vals.append(o.detach().cpu().numpy())
        else:
            vals.append(o)
    grads = []
    if grad:
        loss = sum((o * T(np.cos(np.arange(o.numel())).reshape(tuple(o.shape)))).sum()
                   for o in outs if isinstance(o, cr.Tensor) and o.requires_grad)
        gs = cr.autograd.grad(loss, [x for x in ins if x.requires_grad], allow_unused=True)
        for g in gs:
            if g is not None and dev is not None:
                assert g.device == DEV, f"a gradient landed on {g.device}"
            grads.append(None if g is None else g.cpu().numpy())
    return vals, grads


def same(fn, *arrays, grad=False):
    """``fn(T, *tensors)`` on the CPU and on the device agree (values, dtypes, gradients)."""
    cpu, dev = _run(fn, arrays, None, grad), _run(fn, arrays, DEV, grad)
    for a, b in zip(cpu[0] + cpu[1], dev[0] + dev[1]):
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape, (a, b)
            np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
        else:
            assert a == b, (a, b)
    assert len(cpu[0]) == len(dev[0]) and len(cpu[1]) == len(dev[1])


def test_index_and_count_results_are_found_on_the_host_and_returned_on_the_device():
    z = np.array([[0.0, 1.0], [2.0, 0.0]])
    same(lambda T, x: cr.nonzero(x), z)
    same(lambda T, x: cr.nonzero(x, as_tuple=True), z)
    same(lambda T, x: cr.where(x), z)
    same(lambda T, x: cr.argwhere(x), z)
    same(lambda T, x: cr.unique(x, return_inverse=True, return_counts=True), INTS)
    same(lambda T, x: cr.unique_consecutive(x, return_inverse=True, return_counts=True), INTS)
    same(lambda T, x: cr.bincount(x), INTS)
    same(lambda T, x, w: cr.bincount(x, weights=w), INTS, rng.standard_normal(6))
    same(lambda T, x: cr.histc(x, bins=4), A)
    srt = np.sort(rng.standard_normal(6))
    same(lambda T, s, x: cr.searchsorted(s, x, right=True), srt, A)
    same(lambda T, x, b: cr.bucketize(x, b), A, srt)
    same(lambda T, x: cr.isin(x, T([1, 3])), INTS)
    same(lambda T, x: cr.heaviside(x, T(0.5)), A)
    same(lambda T, x: cr.mode(x.reshape(2, 3), 1), INTS)


def test_constructors_with_device_make_their_tensors_there():
    same(lambda T: cr.tril_indices(3, 4, device=T(0).device))
    same(lambda T: cr.triu_indices(3, 3, 1, device=T(0).device))
    same(lambda T: cr.scalar_tensor(2.0, device=T(0).device))
    same(lambda T, x: cr.full_like(x, 2, dtype=cr.int64), A)
    same(lambda T, x: (cr.zeros_like(x, dtype=cr.int64), cr.ones_like(x, dtype=cr.float32)), A)
    same(lambda T, x: (cr.tensor(x, dtype=cr.float32), cr.asarray(x, dtype=cr.float32)), A)
    t = cr.full_like(cr.tensor(A), 1.5, device=DEV)
    assert t.device == DEV
    assert cr.zeros_like(cr.tensor(A, device=DEV), device="cpu").device == "cpu"
    assert cr.tensor(cr.tensor(A, device=DEV), device="cpu").device == "cpu"


def test_comparisons_of_whole_tensors():
    same(lambda T, x, y: cr.isclose(x, y), A, A + 1e-9 * (A > 0))
    same(lambda T, x, y: (cr.allclose(x, y), cr.allclose(x, y + 1)), A, A)
    same(lambda T, x, y: (cr.equal(x, y), cr.equal(x, y * 2)), A, A)  # was False on device
    same(lambda T, x: (3 in x, 7 in x), INTS)


def test_elementwise_compositions_meet_numbers_on_the_device():
    same(lambda T, x: cr.where(x > 0, 1.0, -1.0), A)
    same(lambda T, x: cr.isreal(x), A)
    same(lambda T, y: cr.xlogy(2.0, y), POS, grad=True)
    same(lambda T, x: cr.ldexp(x, T([1, 2, 3, 0])), A, grad=True)
    same(lambda T, x, y: cr.nextafter(x, y), A, POS)
    same(lambda T, x: cr.frexp(x), A)
    same(lambda T, x: (x ** -1, x ** T(np.array([-1, -2, 1, 2, -3, 0]))), INTS - 1)
    same(lambda T, x: cr.clamp(x, min=T(1)), INTS)


def test_statistics_and_shape_compositions():
    same(lambda T, x: cr.cov(x, fweights=T([1, 2, 1, 3]), aweights=T([0.5, 1, 1, 2.0])), A,
         grad=True)
    same(lambda T, x: cr.gradient(x, spacing=(T([0.0, 1.0, 3.0]),), dim=0), A, grad=True)
    same(lambda T, x, y: cr.block_diag(x, y), A, S, grad=True)
    same(lambda T, x: (cr.diag_embed(x), cr.diagflat(x)), A, grad=True)
    same(lambda T, r: cr.repeat_interleave(r), np.array([1, 0, 2]))
    same(lambda T, x: cr.combinations(x[:1], 2), A[0])


def test_masked_reductions_take_a_device_mask():
    m = A > -0.3
    same(lambda T, x: (cr.masked.sum(x, 1, mask=T(m)), cr.masked.amax(x, 1, mask=T(m)),
                       cr.masked.softmax(x, 1, mask=T(m))), A, grad=True)


def test_in_place_fills_and_host_drawn_values_land_on_the_device():
    same(lambda T, x: (x.clone().zero_(), x.clone().fill_(3.0),
                       x.clone().fill_diagonal_(2.0)), A)
    same(lambda T, x: cr.masked_scatter(x, T(A > 0), x * 2), A)
    same(lambda T, x: x.clone().masked_fill_(T(A > 0), -1.0), A)
    x = cr.tensor(A, device=DEV)
    for t in (x.clone().uniform_(), x.clone().normal_(), x.clone().random_(0, 5),
              cr.bernoulli(x.abs() / 3), cr.multinomial(x.abs(), 2), cr.poisson(x.abs()),
              cr.normal(x, 1.0)):
        assert t.device == DEV


def test_linalg_compositions():
    same(lambda T, a: (cr.linalg.cond(a, "fro"), cr.linalg.cond(a, 1)), S, grad=True)
    same(lambda T, a: (cr.linalg.matrix_rank(a), cr.linalg.matrix_rank(a, hermitian=True)),
         SPD)
    tau = rng.uniform(0.5, 1.5, 3)
    same(lambda T, a, t: cr.linalg.householder_product(a, t), A.T, tau, grad=True)
    same(lambda T, a, t, c: cr.ormqr(a, t, c), A.T, tau, rng.standard_normal((4, 2)),
         grad=True)
    same(lambda T, a: (cr.linalg.inv_ex(a), cr.linalg.cholesky_ex(a)), SPD, grad=True)
    same(lambda T, a, b: cr.linalg.solve_ex(a, b), S, A[:, :2], grad=True)
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])  # info > 0 and NaN there too, as on the CPU
    same(lambda T, a: (cr.linalg.inv_ex(a), cr.linalg.cholesky_ex(a)), singular)
    same(lambda T, a: cr.cholesky_inverse(a), np.linalg.cholesky(SPD), grad=True)
    same(lambda T, x, y: cr.linalg.vecdot(x, y), A, POS, grad=True)
    same(lambda T, a: cr.linalg.ldl_factor(a), SPD)


def test_autograd_functional_defaults_and_gradcheck_on_the_device():
    same(lambda T, x: (cr.autograd.functional.jvp(lambda a: a.sin(), x),
                       cr.autograd.functional.hvp(lambda a: a.sin(), x)), np.array(0.7))
    with pytest.raises(RuntimeError, match="can only be None"):
        cr.autograd.functional.jvp(lambda a: a.sin(), cr.ones(2))  # was a NaN tangent
    x = cr.tensor(rng.standard_normal(3), device=DEV, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "not float64" warning for a device's float64
        assert cr.autograd.gradcheck(lambda a: (a.sin() * a).sum(), (x,))
        assert cr.autograd.gradcheck(lambda a: a.exp(), (x,), fast_mode=True)
    assert cr.autograd.gradgradcheck(lambda a: (a.sin() * a).sum(), (x,))



def test_as_tensor_moves_to_a_device_and_keeps_the_history():
    host = np.arange(3.0)
    same = cr.as_tensor(host, device="cpu")
    same[0] = 5.0  # shares the array on the CPU, as PyTorch
    assert host[0] == 5.0
    x = cr.tensor([1.0, 2.0], requires_grad=True)
    assert cr.as_tensor(x) is x and cr.as_tensor(x, device="cpu") is x
    y = cr.as_tensor(x, device=DEV)  # a recorded move: the gradient comes back
    assert str(y.device) == str(cr.device(DEV)) and y.requires_grad
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])  # d/dx sum(x^2) = 2x
    with pytest.raises(RuntimeError, match="as_tensor: device 'mps' is not available"):
        cr.as_tensor(host, device="mps")


def test_implicit_differentiation_on_a_device_says_it_runs_on_numpy_only():
    from chainrule.autograd.implicit import root

    p = cr.tensor([2.0, 3.0], device=DEV, requires_grad=True)
    with pytest.raises(NotImplementedError, match="root: implicit differentiation solves "
                                                  "with NumPy and SciPy only"):
        root(lambda x, q: x ** 3 - q, cr.tensor(np.cbrt([2.0, 3.0]), device=DEV), p)
    # on the CPU the same root has the implicit gradient dx/dp = 1 / (3 x^2)
    pc = cr.tensor([2.0, 3.0], requires_grad=True)
    x = root(lambda x, q: x ** 3 - q, cr.tensor(np.cbrt([2.0, 3.0])), pc)
    x.sum().backward()
    np.testing.assert_allclose(pc.grad.numpy(), 1 / (3 * np.cbrt([2.0, 3.0]) ** 2))
