"""Scans, sorting ops and more reductions: values against NumPy (written independently),
gradients by gradcheck in float64, PyTorch's tie / NaN conventions, the std/var overloads
and NumPy's ``axis=`` / ``keepdims=`` spellings; and, where torch is importable, values and
gradients against torch (each such test also checks chainrule on its own first)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import chainrule as cr
import chainrule.autograd.forward_ad as fwAD
from chainrule.autograd import grad, gradcheck, gradgradcheck

try:
    import torch
except ImportError:  # the torch comparisons then check chainrule alone
    torch = None

RNG = np.random.default_rng(2024)


def randn(*shape):
    return RNG.standard_normal(shape)


def distinct(*shape):
    n = int(np.prod(shape))
    return (RNG.permutation(n) * 0.37 - 1.1).reshape(shape)


def leaf(a):
    return cr.tensor(np.asarray(a, dtype=float), requires_grad=True)


def np_of(t):
    return t.detach().numpy() if isinstance(t, cr.Tensor) else np.asarray(t)


def vjp(fn, x, cot):
    x = leaf(x)
    (g,) = grad(fn(x), [x], [cr.tensor(cot)])
    return g.numpy()


def jvp(fn, x, tangent):
    with fwAD.dual_level():
        out = fn(fwAD.make_dual(cr.tensor(np.asarray(x, float)), cr.tensor(tangent)))
        return fwAD.unpack_dual(out).tangent.numpy()


# --- scans -----------------------------------------------------------------------------


def test_cumsum_values_dtype_and_gradients():
    a = randn(3, 4)
    for d in (0, 1, -1):
        np.testing.assert_allclose(cr.cumsum(cr.tensor(a), d).numpy(), np.cumsum(a, axis=d))
    ints = cr.tensor(np.array([1, 2, 3], dtype=np.int32))
    assert ints.cumsum(0).dtype == np.int64 and ints.cumsum(0).tolist() == [1, 3, 6]
    assert cr.cumsum(cr.tensor(2.5), 0).item() == 2.5
    # the VJP is the reversed cumulative sum
    g = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(vjp(lambda x: x.cumsum(0), [0.1, 0.2, 0.3, 0.4], g),
                               [10.0, 9.0, 7.0, 4.0])
    x = leaf(a)
    assert gradcheck(lambda t: cr.cumsum(t, 1, dtype=cr.float64), [x])
    assert gradgradcheck(lambda t: cr.cumsum(t * t, 0), [x])


def test_cumsum_in_place_and_bad_dim():
    x = cr.tensor([1.0, 2.0, 3.0])
    x.cumsum_(0)
    assert x.tolist() == [1.0, 3.0, 6.0]
    with pytest.raises(IndexError, match="Dimension out of range"):
        cr.cumsum(cr.tensor(randn(2, 3)), 2)


def _cumprod_vjp_reference(x, g):
    """sum_{k >= i} g_k prod_{j <= k, j != i} x_j, by brute force."""
    n = len(x)
    return np.array([sum(g[k] * np.prod([x[j] for j in range(k + 1) if j != i])
                         for k in range(i, n)) for i in range(n)])


@pytest.mark.parametrize("x", [
    [1.5, -0.7, 2.0, 0.4, -1.2],      # no zero
    [1.5, 0.0, 2.0, 0.4, -1.2],       # one zero
    [0.0, 1.3, 0.0, 0.4, 2.0],        # two zeros, one at the start
    [1.5, 0.8, 2.0, 0.4, 0.0],        # a zero at the end
    [0.0, 0.0, 0.0, 1.0, 2.0],        # leading zeros
])
def test_cumprod_values_and_first_order_derivatives_with_zeros(x):
    x = np.array(x)
    np.testing.assert_allclose(cr.cumprod(cr.tensor(x), 0).numpy(), np.cumprod(x))
    g = RNG.standard_normal(x.shape)
    np.testing.assert_allclose(vjp(lambda t: t.cumprod(0), x, g), _cumprod_vjp_reference(x, g),
                               atol=1e-12)
    # forward mode: J t, with J_ki = prod_{j <= k, j != i} x_j for i <= k
    J = np.array([[np.prod([x[j] for j in range(k + 1) if j != i]) if i <= k else 0.0
                   for i in range(len(x))] for k in range(len(x))])
    t = RNG.standard_normal(x.shape)
    np.testing.assert_allclose(jvp(lambda v: cr.cumprod(v, 0), x, t), J @ t, atol=1e-12)
    assert gradcheck(lambda v: cr.cumprod(v, 0), [leaf(x)])


def test_cumprod_zeros_in_two_dims_and_second_order_without_zeros():
    a = np.array([[1.2, 0.0, 0.7], [0.5, 1.1, 0.0], [0.0, 2.0, 1.3]])
    assert gradcheck(lambda v: v.cumprod(1), [leaf(a)])
    assert gradcheck(lambda v: v.cumprod(0), [leaf(a)])
    assert gradgradcheck(lambda v: v.cumprod(1), [leaf(RNG.uniform(0.5, 1.5, (2, 4)))])


def _logcumsumexp_reference(a, axis):
    a = np.moveaxis(a, axis, 0)
    out = np.empty_like(a)
    acc = np.full(a.shape[1:], -np.inf)
    for i in range(a.shape[0]):
        acc = np.logaddexp(acc, a[i])
        out[i] = acc
    return np.moveaxis(out, 0, axis)


def test_logcumsumexp_values_gradients_and_wide_spread():
    a = randn(3, 4)
    for d in (0, 1):
        np.testing.assert_allclose(cr.logcumsumexp(cr.tensor(a), d).numpy(),
                                   _logcumsumexp_reference(a, d))
    wide = np.array([-1000.0, 0.0, 1000.0, -5.0])
    np.testing.assert_allclose(cr.logcumsumexp(cr.tensor(wide), 0).numpy(),
                               [-1000.0, 0.0, 1000.0, 1000.0])
    g = vjp(lambda t: t.logcumsumexp(0), wide, np.ones(4))
    assert np.all(np.isfinite(g)) and abs(g.sum() - 4.0) < 1e-9  # softmax weights sum to 1
    x = leaf(a)
    assert gradcheck(lambda t: cr.logcumsumexp(t, 1), [x])
    assert gradgradcheck(lambda t: cr.logcumsumexp(t, 0), [x])


def _cummax_reference(x, better):
    values, indices = [], []
    for i, v in enumerate(x):
        if not values or np.isnan(v) or (not np.isnan(values[-1]) and better(v, values[-1])):
            values.append(v)
            indices.append(i)
        else:
            values.append(values[-1])
            indices.append(indices[-1])
    return np.array(values), np.array(indices)


def test_cummax_cummin_ties_nan_and_gradient_to_the_running_index():
    x = np.array([1.0, 3.0, 3.0, 2.0, np.nan, 5.0, np.nan, 7.0])
    for fn, better in ((cr.cummax, np.greater_equal), (cr.cummin, np.less_equal)):
        r = fn(cr.tensor(x), 0)
        assert type(r).__name__ == fn.__name__ and r._fields == ("values", "indices")
        values, indices = _cummax_reference(x, better)
        np.testing.assert_array_equal(r.values.numpy(), values)
        np.testing.assert_array_equal(r.indices.numpy(), indices)
    # the gradient adds up at a repeated index
    np.testing.assert_allclose(vjp(lambda t: t.cummax(0).values, [3.0, 1.0, 2.0, 5.0],
                                   np.ones(4)), [3.0, 0.0, 0.0, 1.0])
    a = distinct(3, 5)
    assert gradcheck(lambda t: t.cummin(1).values, [leaf(a)])
    assert gradgradcheck(lambda t: cr.cummax(t, 0)[0], [leaf(a)])


# --- sorting ---------------------------------------------------------------------------


def test_sort_values_indices_stability_and_nan_order():
    a = distinct(3, 5)
    r = cr.sort(cr.tensor(a), 1)
    assert type(r).__name__ == "sort" and r._fields == ("values", "indices")
    np.testing.assert_array_equal(r.values.numpy(), np.sort(a, 1))
    np.testing.assert_array_equal(r.indices.numpy(), np.argsort(a, 1))
    ties = np.array([2.0, np.nan, 1.0, 2.0, 1.0, np.nan])
    up = cr.sort(cr.tensor(ties), stable=True)
    assert up.indices.tolist() == [2, 4, 0, 3, 1, 5]  # stable, NaN last
    down = cr.sort(cr.tensor(ties), descending=True, stable=True)
    assert down.indices.tolist() == [1, 5, 0, 3, 2, 4]  # NaN first, ties in order
    assert cr.argsort(cr.tensor(ties), descending=True).tolist() == [1, 5, 0, 3, 2, 4]
    ints = cr.tensor(np.array([3, -9223372036854775808, 7, 3]))
    assert cr.sort(ints, descending=True).values.tolist() == [7, 3, 3, -9223372036854775808]
    np.testing.assert_array_equal(cr.msort(cr.tensor(a)).numpy(), np.sort(a, 0))
    assert cr.sort(cr.tensor(1.5)).values.item() == 1.5


def test_sort_gradient_is_the_inverse_permutation():
    a = np.array([0.3, -1.0, 2.0, 0.9])
    g = np.array([1.0, 2.0, 3.0, 4.0])  # to the entries in sorted order
    np.testing.assert_allclose(vjp(lambda t: t.sort().values, a, g), [2.0, 1.0, 4.0, 3.0])
    x = leaf(distinct(4, 3))
    assert gradcheck(lambda t: cr.sort(t, 0, descending=True).values, [x])
    assert gradgradcheck(lambda t: cr.sort(t * t, 1).values, [x])


def test_topk_and_kthvalue():
    a = distinct(4, 6)
    r = cr.topk(cr.tensor(a), 3)
    assert type(r).__name__ == "topk"
    np.testing.assert_array_equal(r.values.numpy(), -np.sort(-a, 1)[:, :3])
    np.testing.assert_array_equal(r.indices.numpy(), np.argsort(-a, 1)[:, :3])
    small = cr.tensor(a).topk(2, dim=0, largest=False)
    np.testing.assert_array_equal(small.values.numpy(), np.sort(a, 0)[:2])
    with pytest.raises(RuntimeError, match="k out of range"):
        cr.topk(cr.tensor(a), 7)
    k = cr.kthvalue(cr.tensor(a), 2, 1)
    assert type(k).__name__ == "kthvalue"
    np.testing.assert_array_equal(k.values.numpy(), np.sort(a, 1)[:, 1])
    np.testing.assert_array_equal(k.indices.numpy(), np.argsort(a, 1)[:, 1])
    assert cr.kthvalue(cr.tensor(a), 3, 0, keepdim=True).values.shape == (1, 6)
    with pytest.raises(IndexError, match="k out of range"):
        cr.kthvalue(cr.tensor(a), 0)
    x = leaf(a)
    assert gradcheck(lambda t: cr.topk(t, 2, 0).values, [x])
    assert gradcheck(lambda t: t.kthvalue(4, 1, True).values, [x])


def test_median_and_nanmedian_conventions():
    a = distinct(3, 4)
    flat = np.sort(a.ravel())
    assert cr.median(cr.tensor(a)).item() == flat[(flat.size - 1) // 2]  # the lower median
    m = cr.median(cr.tensor(a), 1)
    assert type(m).__name__ == "median"
    np.testing.assert_array_equal(m.values.numpy(), np.sort(a, 1)[:, 1])
    np.testing.assert_array_equal(m.indices.numpy(), np.argsort(a, 1)[:, 1])
    nan = np.array([[1.0, np.nan, 3.0, 2.0, 0.5], [4.0, 1.0, 2.0, 3.0, 0.0]])
    assert math.isnan(cr.median(cr.tensor(nan)).item())
    r = cr.median(cr.tensor(nan), 1)
    assert math.isnan(r.values[0].item()) and r.indices.tolist() == [1, 2]
    assert cr.nanmedian(cr.tensor(nan)).item() == 2.0
    nm = cr.nanmedian(cr.tensor(nan), 1)
    assert nm.values.tolist() == [1.0, 2.0] and nm.indices.tolist() == [0, 2]
    assert math.isnan(cr.nanmedian(cr.tensor([np.nan, np.nan])).item())
    # odd counts: NumPy's median is the same entry
    odd = randn(5, 3)
    np.testing.assert_allclose(cr.median(cr.tensor(odd), 0).values.numpy(),
                               np.median(odd, 0))


def test_median_gradient_is_shared_by_ties():
    np.testing.assert_allclose(vjp(lambda t: t.median(), [1.0, 2.0, 2.0, 3.0], 1.0),
                               [0.0, 0.5, 0.5, 0.0])
    np.testing.assert_allclose(vjp(lambda t: cr.median(t, 0).values, [1.0, 2.0, 2.5, 3.0],
                                   1.0), [0.0, 1.0, 0.0, 0.0])
    x = leaf(distinct(3, 5))
    assert gradcheck(lambda t: t.median(), [x])
    assert gradcheck(lambda t: cr.nanmedian(t, 1).values, [x])
    assert gradgradcheck(lambda t: cr.median(t * t), [x])


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_against_numpy(method):
    a = randn(4, 7)
    q = np.array([0.0, 0.1, 0.25, 0.5, 0.9, 1.0])
    got = cr.quantile(cr.tensor(a), cr.tensor(q), dim=1, interpolation=method)
    np.testing.assert_allclose(got.numpy(), np.quantile(a, q, axis=1, method=method))
    got = cr.tensor(a).quantile(0.3, dim=0, keepdim=True, interpolation=method)
    np.testing.assert_allclose(got.numpy(), np.quantile(a, 0.3, axis=0, keepdims=True,
                                                        method=method))
    assert got.shape == (1, 7)
    np.testing.assert_allclose(cr.quantile(cr.tensor(a), 0.65, interpolation=method).numpy(),
                               np.quantile(a, 0.65, method=method))
    nan = a.copy()
    nan[0, 2] = nan[2, [1, 4]] = np.nan
    np.testing.assert_allclose(
        cr.nanquantile(cr.tensor(nan), q, dim=1, interpolation=method).numpy(),
        np.nanquantile(nan, q, axis=1, method=method))
    assert np.isnan(cr.quantile(cr.tensor(nan), 0.5, dim=1).numpy()[[0, 2]]).all()


def test_quantile_errors_and_gradient():
    x = cr.tensor(randn(3, 4))
    with pytest.raises(RuntimeError, match=r"q values must be in the range \[0, 1\]"):
        cr.quantile(x, 1.5)
    with pytest.raises(ValueError, match="interpolation"):
        cr.quantile(x, 0.5, interpolation="cubic")
    with pytest.raises(RuntimeError, match="float or double"):
        cr.quantile(cr.tensor(np.arange(4)), 0.5)
    assert gradcheck(lambda t: cr.quantile(t, cr.tensor([0.2, 0.7]), 1), [leaf(distinct(3, 5))])
    assert gradcheck(lambda t: cr.nanquantile(t, 0.4, 0, interpolation="midpoint"),
                     [leaf(distinct(4, 2))])


# --- reductions ------------------------------------------------------------------------


def test_nansum_nanmean_values_and_zero_gradient_at_nan():
    a = randn(3, 4)
    a[0, 1] = a[2, 3] = np.nan
    np.testing.assert_allclose(cr.nansum(cr.tensor(a), 1).numpy(), np.nansum(a, 1))
    np.testing.assert_allclose(cr.tensor(a).nanmean(0).numpy(), np.nanmean(a, 0))
    assert np.isnan(cr.nanmean(cr.tensor([np.nan, np.nan])).item())
    assert cr.nansum(cr.tensor(np.array([1, 2]))).item() == 3
    g = vjp(lambda t: cr.nanmean(t), a, 1.0)
    assert g[0, 1] == 0.0 and g[2, 3] == 0.0 and np.isclose(g[0, 0], 0.1)
    assert gradcheck(lambda t: cr.nansum(t, 0), [leaf(a)])


def test_std_var_positional_unbiased_is_not_a_dim():
    a = randn(3, 4)
    x = cr.tensor(a)
    # x.std(False) is unbiased=False over every entry (was read as dim 0 before the fix)
    np.testing.assert_allclose(x.std(False).numpy(), np.std(a, ddof=0))
    np.testing.assert_allclose(cr.std(x, True).numpy(), np.std(a, ddof=1))
    np.testing.assert_allclose(x.var(False).numpy(), np.var(a, ddof=0))
    assert x.std(False).shape == () and x.std(0).shape == (4,)
    np.testing.assert_allclose(x.std(0).numpy(), np.std(a, 0, ddof=1))
    np.testing.assert_allclose(x.var(1, False, True).numpy(), np.var(a, 1, ddof=0,
                                                                     keepdims=True))
    np.testing.assert_allclose(cr.var(x, 1, correction=0).numpy(), np.var(a, 1))
    v, m = cr.var_mean(x, 1)
    np.testing.assert_allclose(v.numpy(), np.var(a, 1, ddof=1))
    np.testing.assert_allclose(m.numpy(), np.mean(a, 1))
    s, m = cr.std_mean(x, False)
    np.testing.assert_allclose(s.numpy(), np.std(a))
    np.testing.assert_allclose(m.numpy(), np.mean(a))
    s, m = cr.std_mean(x, dim=0, correction=2, keepdim=True)
    np.testing.assert_allclose(s.numpy(), np.std(a, 0, ddof=2, keepdims=True))
    assert gradcheck(lambda t: cr.std_mean(t, 1)[0] + cr.var_mean(t, 1)[1], [leaf(a)])


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "std", "var", "amax", "amin",
                                  "logsumexp", "nansum", "nanmean"])
def test_numpy_spellings_axis_and_keepdims(name):
    a = RNG.uniform(0.5, 1.5, (3, 4))
    special = {"std": lambda v, **k: np.std(v, ddof=1, **k),
               "var": lambda v, **k: np.var(v, ddof=1, **k),
               "logsumexp": lambda v, **k: np.log(np.sum(np.exp(v), **k))}
    ref = special[name] if name in special else getattr(np, {"amax": "max", "amin": "min"}.get(
        name, name))
    got = getattr(cr, name)(cr.tensor(a), axis=1, keepdims=True)
    np.testing.assert_allclose(got.numpy(), ref(a, axis=1, keepdims=True))
    method = getattr(cr.tensor(a), name)(axis=0)
    np.testing.assert_allclose(method.numpy(), ref(a, axis=0))
    with pytest.raises(TypeError, match="alias"):
        getattr(cr, name)(cr.tensor(a), dim=0, axis=1)


def test_numpy_spellings_on_arg_and_value_reductions():
    a = distinct(3, 4)
    x = cr.tensor(a)
    assert cr.argmax(x, axis=1).tolist() == np.argmax(a, 1).tolist()
    assert cr.argmin(x, axis=0, keepdims=True).shape == (1, 4)
    assert cr.max(x, axis=1).values.tolist() == np.max(a, 1).tolist()
    assert x.min(axis=1, keepdims=True).indices.shape == (3, 1)


def test_cov_and_corrcoef_against_numpy():
    a = randn(3, 6)
    fw = np.array([1, 2, 1, 3, 1, 2])
    aw = RNG.uniform(0.5, 2.0, 6)
    x = cr.tensor(a)
    np.testing.assert_allclose(cr.cov(x).numpy(), np.cov(a))
    np.testing.assert_allclose(x.cov(correction=0).numpy(), np.cov(a, ddof=0))
    np.testing.assert_allclose(cr.cov(x, fweights=cr.tensor(fw)).numpy(), np.cov(a, fweights=fw))
    np.testing.assert_allclose(cr.cov(x, aweights=cr.tensor(aw)).numpy(), np.cov(a, aweights=aw))
    np.testing.assert_allclose(cr.cov(x, correction=2, fweights=cr.tensor(fw),
                                      aweights=cr.tensor(aw)).numpy(),
                               np.cov(a, ddof=2, fweights=fw, aweights=aw))
    np.testing.assert_allclose(cr.cov(x[0]).numpy(), np.cov(a[0]))
    np.testing.assert_allclose(cr.corrcoef(x).numpy(), np.corrcoef(a))
    with pytest.raises(RuntimeError, match="integral dtype"):
        cr.cov(x, fweights=cr.tensor(aw))
    with pytest.raises(RuntimeError, match="two or fewer dimensions"):
        cr.cov(cr.tensor(randn(2, 2, 2)))
    assert gradcheck(lambda t: cr.cov(t, aweights=cr.tensor(aw)), [leaf(a)])
    assert gradcheck(lambda t: cr.corrcoef(t), [leaf(a)])
    assert gradgradcheck(lambda t: cr.cov(t), [leaf(randn(2, 4))])


def test_diff_trapezoid_and_cumulative_trapezoid():
    a = randn(3, 5)
    x = cr.tensor(a)
    np.testing.assert_allclose(cr.diff(x).numpy(), np.diff(a))
    np.testing.assert_allclose(x.diff(2, 0).numpy(), np.diff(a, 2, 0))
    pre, app = randn(1, 5), randn(2, 5)
    np.testing.assert_allclose(
        cr.diff(x, 1, 0, prepend=cr.tensor(pre), append=cr.tensor(app)).numpy(),
        np.diff(a, 1, 0, prepend=pre, append=app))
    np.testing.assert_allclose(cr.diff(x, prepend=cr.tensor(0.5)).numpy(),
                               np.diff(a, prepend=0.5))
    assert cr.diff(cr.tensor([True, True, False])).tolist() == [False, True]
    assert gradcheck(lambda t: cr.diff(t, 2, 1), [leaf(a)])
    s = np.sort(RNG.uniform(0, 3, 5))
    np.testing.assert_allclose(cr.trapezoid(x, cr.tensor(s)).numpy(), np.trapezoid(a, s))
    np.testing.assert_allclose(cr.trapezoid(x, dx=0.3, dim=0).numpy(),
                               np.trapezoid(a, dx=0.3, axis=0))
    np.testing.assert_allclose(cr.trapezoid(x).numpy(), np.trapezoid(a))
    pieces = (a[:, 1:] + a[:, :-1]) / 2 * np.diff(s)
    np.testing.assert_allclose(cr.cumulative_trapezoid(x, cr.tensor(s)).numpy(),
                               np.cumsum(pieces, 1))
    assert gradcheck(lambda t: cr.trapezoid(t, cr.tensor(s)), [leaf(a)])


def test_count_nonzero_aminmax_and_norms():
    a = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    x = cr.tensor(a)
    assert cr.count_nonzero(x).item() == 3
    assert x.count_nonzero(0).tolist() == np.count_nonzero(a, 0).tolist()
    assert cr.count_nonzero(x, (0, 1)).dtype == np.int64
    r = cr.aminmax(x, dim=1)
    assert type(r).__name__ == "aminmax" and r._fields == ("min", "max")
    assert r.min.tolist() == [0.0, -1.0] and r.max.tolist() == [1.5, 2.0]
    assert x.aminmax().max.item() == 2.0
    b = randn(3, 4)
    np.testing.assert_allclose(cr.norm(cr.tensor(b), "nuc").item(), np.linalg.norm(b, "nuc"))
    np.testing.assert_allclose(cr.tensor(b).norm("fro", dim=(0, 1)).item(),
                               np.linalg.norm(b, "fro"))
    c = randn(2, 3, 4)
    np.testing.assert_allclose(cr.norm(cr.tensor(c), "nuc", dim=(1, 2)).numpy(),
                               [np.linalg.norm(m, "nuc") for m in c])
    assert gradcheck(lambda t: cr.norm(t, "nuc"), [leaf(b)])
    with pytest.raises(RuntimeError, match="nuc"):
        cr.norm(cr.tensor(randn(2, 3, 4)), "nuc")


def test_div_rounding_modes():
    a, b = np.array([7.0, -7.0, 5.5]), np.array([2.0, 2.0, -2.0])
    assert cr.div(cr.tensor(a), cr.tensor(b), rounding_mode="floor").tolist() == \
        np.floor_divide(a, b).tolist()
    assert cr.div(cr.tensor(a), cr.tensor(b), rounding_mode="trunc").tolist() == \
        np.trunc(a / b).tolist()


# --- against torch ---------------------------------------------------------------------

TORCH_CASES = {
    "cumsum": (lambda m, t: m.cumsum(t, 1), randn(3, 4)),
    "cumprod": (lambda m, t: m.cumprod(t, 1), RNG.uniform(0.5, 1.5, (3, 4))),
    "cumprod_zeros": (lambda m, t: m.cumprod(t, 0), np.array([1.5, 0.0, 2.0, 0.4, 0.0, 1.1])),
    "logcumsumexp": (lambda m, t: m.logcumsumexp(t, 0), randn(4, 3)),
    "cummax": (lambda m, t: m.cummax(t, 1).values, distinct(3, 5)),
    "cummin": (lambda m, t: m.cummin(t, 0).values, distinct(4, 3)),
    "sort": (lambda m, t: m.sort(t, 1, descending=True).values, distinct(3, 4)),
    "topk": (lambda m, t: m.topk(t, 2, 0).values, distinct(4, 3)),
    "kthvalue": (lambda m, t: m.kthvalue(t, 2, 1).values, distinct(3, 4)),
    "median": (lambda m, t: m.median(t), distinct(3, 4)),
    "median_ties": (lambda m, t: m.median(t), np.array([1.0, 2.0, 2.0, 3.0, 2.0])),
    "median_dim": (lambda m, t: m.median(t, 1).values, distinct(3, 5)),
    "nanmedian": (lambda m, t: m.nanmedian(t, 0).values, distinct(4, 3)),
    "quantile": (lambda m, t: m.quantile(t, 0.3, dim=1), distinct(3, 5)),
    "nansum": (lambda m, t: m.nansum(t, 1), randn(3, 4)),
    "nanmean": (lambda m, t: m.nanmean(t, 0), randn(3, 4)),
    "std_unbiased_positional": (lambda m, t: m.std(t, False), randn(3, 4)),
    "var_mean": (lambda m, t: m.var_mean(t, 1)[0] * m.var_mean(t, 1)[1], randn(3, 4)),
    "cov": (lambda m, t: m.cov(t), randn(3, 5)),
    "corrcoef": (lambda m, t: m.corrcoef(t), randn(3, 5)),
    "diff": (lambda m, t: m.diff(t, 2, 1), randn(3, 5)),
    "trapezoid": (lambda m, t: m.trapezoid(t, dx=0.5, dim=0), randn(4, 3)),
    "aminmax": (lambda m, t: m.aminmax(t, dim=1).max, distinct(3, 4)),
    "norm_nuc": (lambda m, t: m.norm(t, "nuc"), randn(3, 4)),
}


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_values_and_gradients_match_torch(name):
    fn, a = TORCH_CASES[name]
    x = leaf(a)
    out = fn(cr, x)
    cot = RNG.standard_normal(out.shape)
    (g,) = grad(out, [x], [cr.tensor(cot)])
    assert np.all(np.isfinite(g.numpy()))
    if name != "median_ties":  # a tie: not differentiable, the subgradient is a convention
        assert gradcheck(lambda t: fn(cr, t), [leaf(a)])
    else:
        np.testing.assert_allclose(g.numpy(), cot * np.array([0, 1, 1, 0, 1]) / 3)
    if torch is None:
        return
    tx = torch.tensor(a, requires_grad=True)
    tout = fn(torch, tx)
    (tg,) = torch.autograd.grad(tout, [tx], [torch.tensor(cot)])
    np.testing.assert_allclose(np_of(out), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-9, atol=1e-12)


def test_indices_and_nan_conventions_match_torch():
    x = np.array([[1.0, 3.0, 3.0, np.nan, 2.0, 3.0], [0.5, -1.0, 0.5, 2.0, 2.0, -1.0]])
    got = {
        "cummax": cr.cummax(cr.tensor(x), 1).indices.tolist(),
        "cummin": cr.cummin(cr.tensor(x), 1).indices.tolist(),
        "sort": cr.sort(cr.tensor(x), 1, stable=True).indices.tolist(),
        "sort_desc": cr.sort(cr.tensor(x), 1, descending=True, stable=True).indices.tolist(),
        "median": cr.median(cr.tensor(x), 1).indices.tolist(),
    }
    assert got["cummax"][0] == [0, 1, 2, 3, 3, 3]  # ties take the later index; NaN sticks
    assert got["sort"][0] == [0, 4, 1, 2, 5, 3] and got["sort_desc"][0][0] == 3
    if torch is None:
        return
    t = torch.tensor(x)
    want = {
        "cummax": torch.cummax(t, 1).indices.tolist(),
        "cummin": torch.cummin(t, 1).indices.tolist(),
        "sort": torch.sort(t, dim=1, stable=True).indices.tolist(),
        "sort_desc": torch.sort(t, dim=1, descending=True, stable=True).indices.tolist(),
        "median": [torch.median(t, 1).indices.tolist()[0], None],
    }
    got["median"][1] = None  # row 2 has ties at the median: the index is not specified
    assert got == want
