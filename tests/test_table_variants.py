"""Variants of the table samples: every primitive on 0-d, empty, non-contiguous and float32
0-d inputs, derived from the samples of tests/samples*.py (so a new op is covered as soon
as it has a sample).

- 0-d (elementwise ops): each input taken as one entry, a 0-d array (all inputs 0-d, and
  one input 0-d beside the others n-d). The value must be that entry of the n-d result, the
  gradient of each 0-d input that entry of the n-d gradient (the n-d gradient under a
  one-hot cotangent, summed), and central differences (first and second order) and the
  JVP / VJP adjoint identity must hold on the 0-d inputs.
- float32 0-d (elementwise ops): the dtype of the result and gradients is that of the n-d
  float32 run, their values its entry; a 0-d input of one float dtype beside n-d inputs of
  the other gives the n-d inputs' dtype (PyTorch's promotion), each gradient its input's.
- empty: the inputs' leading dim sliced to 0, for every sample whose function maps that
  dim row by row (elementwise ops, reductions over other dims, batched matmul and linalg):
  the result is the n-d result's first 0 rows, the gradients are empty (sliced inputs) or
  exact zeros (the others), first and second order.
- non-contiguous: every input as a Fortran-ordered ("transposed"), step-2 sliced, negative
  stride, or read-only (zero strides on its size-1 dims, as np.broadcast_to gives) view
  holding the same values, the cotangents and tangents too (the cotangent of a sum is a
  read-only broadcast array): results, gradients, JVPs (and second-order gradients on the
  first sample of each op) equal those of the contiguous inputs to 1e-15 of the largest
  entry (float32: 2e-6, NumPy's SIMD and strided float32 loops differ by an ulp), and the
  inputs, cotangents and tangents are unchanged.

A case an op cannot support must raise an error naming the op; it is then listed in
``REFUSALS`` below with its reason (a listed case that starts working fails the test too,
so that the table stays true).
"""

from __future__ import annotations

import collections
import contextlib

import numpy as np
import pytest

import chainrule as cr
import chainrule.autograd.forward_ad as fwAD
from chainrule.autograd import grad, gradcheck, gradgradcheck
from samples import SAMPLES

BY_OP = collections.defaultdict(list)
for _s in SAMPLES:
    BY_OP[_s.op].append(_s)
OPS = sorted(cr.TABLE)

# Elementwise ops that the table does not flag ``pointwise`` (that flag is for one-input
# ops with scalar attributes): n-ary ops with broadcasting, and unary ones whose kernel
# takes an order or a mode.
ELEMENTWISE_NARY = {
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "where", "clamp_tensor",
    "floor", "ceil", "trunc", "round", "floor_divide", "trunc_divide", "atan2", "hypot",
    "logaddexp", "logaddexp2", "xlogy", "xlog1py", "fmod", "remainder", "copysign", "fmax",
    "fmin", "nan_to_num", "polygamma", "zeta", "gammasgn", "beta", "jn", "yn", "iv", "ive",
    "gammainc", "gammaincc", "betainc", "binary_cross_entropy",
    # torch.special's polynomials (x and the degree n), and their derivatives' blocks
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p", "gegenbauer", "genlaguerre",
}
# ops declared in the elementwise modules that are not elementwise (none today)
NOT_ELEMENTWISE = {}
_ELEMENTWISE_MODULES = ("chainrule.ops.elementwise", "chainrule.ops.elementwise_more",
                        "chainrule.ops.special_fns")


def _elementwise(name):
    return cr.TABLE[name].pointwise or name in ELEMENTWISE_NARY


ELEMENTWISE_OPS = [n for n in OPS if _elementwise(n)]

# Samples of elementwise ops whose function is not elementwise in its inputs alone (a
# captured n-d constant, or a composition that changes the shape): no 0-d variant is
# derived from them (found by shape, and asserted to be exactly these).
NOT_ELEMENTWISE_SAMPLES = {
    "mul-outer": "outer product of two vectors",
    "sub-diff": "diff shortens the dim",
    "where": "condition is a captured (3, 4) mask",
    "where-masked_fill": "mask is a captured (3, 4) array",
    "where-scalars": "condition is a captured (3, 4) mask",
    "where-matrix_power_0": "matrix_power(a, 0) is the identity matrix of a's shape",
    "binary_cross_entropy": "mean reduction",
}
# ... of which these still take one input 0-d beside the others n-d (the captured mask
# has the result's shape)
MIXED_ONLY = {"where"}

# Cases an op cannot support: (variant, sample id) -> reason. The op must raise naming itself.
REFUSALS = {
    ("0-d mixed", "binary_cross_entropy-target_requiring_grad"):
        "target and input must have the same size (PyTorch's rule: no broadcasting)",
    ("0-d other dtype", "binary_cross_entropy-target_requiring_grad"):
        "target and input must have the same size (PyTorch's rule: no broadcasting)",
    ("transposed", "reshape-flat"):
        "view(-1) of a transposed tensor: no view exists (PyTorch raises too; reshape copies)",
    ("transposed float32", "reshape-flat"):
        "view(-1) of a transposed tensor: no view exists (PyTorch raises too; reshape copies)",
}

TOL = 1e-15
F32_TOL = 2e-6


def _entry(shape, idx):
    """The entry of an input of ``shape`` that broadcasts to output entry ``idx``."""
    idx = idx[len(idx) - len(shape):] if shape else ()
    return tuple(0 if n == 1 else i for n, i in zip(shape, idx))


def _np(t):
    return t.detach().numpy()


def _outputs(result):
    return [o for o in (result if isinstance(result, tuple) else (result,))
            if o.dtype.kind == "f"]


def _leaf(a):
    return cr.from_numpy(a).requires_grad_(True) if isinstance(a, np.ndarray) else a


def _run(sample, arrays):
    xs = [_leaf(a) for a in arrays]
    return xs, _outputs(sample.fn(*xs))


def _grads(xs, outs, seeds, create_graph=False):
    live = [(o, u) for o, u in zip(outs, seeds) if o.requires_grad]
    diff = [x for x in xs if isinstance(x, cr.Tensor)]
    if not live:
        return [None] * len(diff)
    gs = grad([o for o, _ in live], diff, [cr.from_numpy(u) for _, u in live],
              allow_unused=True, create_graph=create_graph, retain_graph=True)
    if create_graph:
        return list(gs)
    return [np.zeros(x.shape, x.dtype) if g is None else _np(g) for g, x in zip(gs, diff)]


def _close(got, want, rtol=TOL, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    # to rtol of the largest entry (at least 1): a sum taken in another order differs by an
    # ulp of its terms, which may be larger than its result
    scale = max(1.0, float(np.nanmax(np.abs(want), initial=0.0))) if rtol == TOL else \
        np.maximum(np.abs(want), 1.0)
    if rtol == TOL and want.dtype == np.float32:  # NumPy's float32 loops differ by an ulp
        rtol = F32_TOL  # between contiguous (SIMD) and strided data
    ok = (got == want) | (np.isnan(got) & np.isnan(want)) | (np.abs(got - want) <= rtol * scale)
    assert ok.all(), f"{what}: {got!r} != {want!r}"


def _seeds(outs, rng, dtype=None):
    return [rng.standard_normal(o.shape).astype(dtype or o.dtype) for o in outs]


class Cases:
    """Runs the variants of one op, collecting failures and refusals by (variant, sample)."""

    def __init__(self, op):
        self.op = op
        self.failures = []
        self.refused = set()
        self.count = 0

    @contextlib.contextmanager
    def case(self, variant, sample):
        key = (variant, sample.id)
        self.count += 1
        try:
            yield
        except Exception as e:  # noqa: BLE001 - every failure is collected, then reported
            text = f"{type(e).__name__}: {e}"
            if key in REFUSALS and not isinstance(e, AssertionError):
                if self.op not in str(e):
                    self.failures.append(f"{key}: a refusal must name the op: {text}"[:600])
                self.refused.add(key)
            else:
                self.failures.append(f"{key}: {text}"[:600])

    def check(self, samples):
        ids = {s.id for s in samples}
        stale = [k for k in REFUSALS if k[1] in ids and k not in self.refused
                 and k[0] in self.variants]
        assert not self.failures, "\n".join(self.failures)
        assert not stale, f"listed in REFUSALS but now works (remove them): {stale}"


def _zero_d_ready(sample):
    """Whether a sample of an elementwise op is elementwise in its inputs: its result has
    the broadcast shape of its inputs, also when every input keeps only one entry."""
    arrays = sample.inputs
    with cr.no_grad():
        outs = _outputs(sample.fn(*[cr.tensor(a) for a in arrays]))
        try:
            shape = np.broadcast_shapes(*[a.shape for a in arrays])
        except ValueError:  # outer(a, b)
            return False
        if len(outs) != 1 or outs[0].shape != shape:
            return False
        ones = [a[tuple(slice(0, 1) for _ in a.shape)] for a in arrays]
        outs1 = _outputs(sample.fn(*[cr.tensor(a) for a in ones]))
        return outs1[0].shape == np.broadcast_shapes(*[a.shape for a in ones])


def _zero_d_samples(op):
    return [s for s in BY_OP[op] if s.id not in NOT_ELEMENTWISE_SAMPLES]


def _mixed_samples(op):
    return [s for s in BY_OP[op] if s.id not in NOT_ELEMENTWISE_SAMPLES or s.id in MIXED_ONLY]


def test_elementwise_ops_are_classified():
    """Every op declared in an elementwise module is pointwise, listed as elementwise, or
    listed as not elementwise (so that a new elementwise op gets the 0-d variants)."""
    unlisted = []
    for op in cr.TABLE.values():
        modules = {getattr(fn, "__module__", None) for fn, _ in op.vjp_rules.values()}
        if modules & set(_ELEMENTWISE_MODULES) and not op.pointwise \
                and op.name not in ELEMENTWISE_NARY and op.name not in NOT_ELEMENTWISE:
            unlisted.append(op.name)
    assert not unlisted, f"classify as ELEMENTWISE_NARY or NOT_ELEMENTWISE: {unlisted}"
    assert ELEMENTWISE_NARY <= set(cr.TABLE), ELEMENTWISE_NARY - set(cr.TABLE)


def test_not_elementwise_samples_are_exactly_those_listed():
    """The samples found by shape are listed; a listed sample found otherwise (a matrix
    function of the same shape) raises on 0-d inputs."""
    found = {s.id for op in ELEMENTWISE_OPS for s in BY_OP[op] if not _zero_d_ready(s)}
    assert found <= set(NOT_ELEMENTWISE_SAMPLES), sorted(found - set(NOT_ELEMENTWISE_SAMPLES))
    for s in SAMPLES:
        if s.id in set(NOT_ELEMENTWISE_SAMPLES) - found:
            with pytest.raises(Exception):  # noqa: B017, PT011 - any error: not elementwise
                s.fn(*[cr.tensor(a.flat[0]) for a in s.inputs])
    assert set(NOT_ELEMENTWISE_SAMPLES) <= {s.id for s in SAMPLES}


# --- 0-d -------------------------------------------------------------------------------


def _check_all_zero_d(sample, idx, second_order):
    arrays = sample.inputs
    xs, outs = _run(sample, arrays)
    (out,) = outs
    seed = np.zeros(out.shape)
    seed[idx] = 1.0
    ref_grads = _grads(xs, outs, [seed])
    zeros = [np.array(a[_entry(a.shape, idx)]) for a in arrays]
    xs0, outs0 = _run(sample, zeros)
    (out0,) = outs0
    _close(_np(out0), _np(out)[idx], what=f"0-d value at {idx}")
    grads0 = _grads(xs0, outs0, [np.ones(())])
    for k, (g0, g) in enumerate(zip(grads0, ref_grads)):
        _close(g0, np.array(g.sum()), what=f"0-d gradient of input {k} at {idx}")
    # forward mode: the JVP along v is <grad, v> (one output)
    rng = np.random.default_rng(5)
    v = [rng.standard_normal(()) for _ in zeros]
    with fwAD.dual_level():
        duals = [fwAD.make_dual(cr.tensor(z), cr.tensor(t)) for z, t in zip(zeros, v)]
        (o,) = _outputs(sample.fn(*duals))
        t = fwAD.unpack_dual(o).tangent
    jv = 0.0 if t is None else float(_np(t))
    want = sum(float(g) * float(w) for g, w in zip(grads0, v))
    assert np.isclose(jv, want, rtol=1e-12, atol=1e-14), ("0-d JVP", jv, want)
    if second_order:
        tensors = [cr.tensor(z, requires_grad=True) for z in zeros]
        assert gradcheck(sample.fn, tensors)
        assert gradgradcheck(sample.fn, tensors)


def _check_mixed_zero_d(sample, k):
    """Input k as a 0-d array beside the others n-d, against input k as an array of ones'
    shape (1, ..., 1) holding that value (the result then has at most more leading 1s)."""
    arrays = sample.inputs
    value = arrays[k].flat[arrays[k].size // 2]
    ones = list(arrays)
    ones[k] = np.full((1,) * arrays[k].ndim, value)
    mixed = list(arrays)
    mixed[k] = np.array(value)
    xs, outs = _run(sample, ones)
    xm, outm = _run(sample, mixed)
    (want,), (got,) = outs, outm
    assert _np(want).size == _np(got).size, (got.shape, want.shape)
    _close(_np(got), _np(want).reshape(got.shape), what="value")
    seed = np.random.default_rng(11).standard_normal(got.shape)
    gf = _grads(xs, outs, [seed.reshape(want.shape)])
    gm = _grads(xm, outm, [seed])
    for j, (a, b) in enumerate(zip(gm, gf)):
        if j == k:
            _close(a, b.reshape(()), what=f"gradient of the 0-d input {k}")
        else:
            _close(a, b, what=f"gradient of input {j}")


@pytest.mark.parametrize("op", ELEMENTWISE_OPS)
def test_zero_d(op):
    cases = Cases(op)
    cases.variants = {"0-d", "0-d mixed"}
    for sample in _mixed_samples(op):
        if sample.id not in MIXED_ONLY:
            shape = np.broadcast_shapes(*[a.shape for a in sample.inputs])
            for flat in range(int(np.prod(shape))):  # every entry: a kernel's special cases
                with cases.case("0-d", sample):
                    _check_all_zero_d(sample, np.unravel_index(flat, shape),
                                      second_order=flat == 0)
        if len(sample.inputs) > 1:
            for k, a in enumerate(sample.inputs):
                if a.ndim:
                    with cases.case("0-d mixed", sample):
                        _check_mixed_zero_d(sample, k)
    cases.check(BY_OP[op])


@pytest.mark.parametrize("op", ELEMENTWISE_OPS)
def test_float32_zero_d(op):
    f32 = np.float32
    cases = Cases(op)
    cases.variants = {"float32 0-d"}
    for sample in _zero_d_samples(op):
        with cases.case("float32 0-d", sample):
            arrays = [a.astype(f32) for a in sample.inputs]
            xs, outs = _run(sample, arrays)
            (out,) = outs
            idx = np.unravel_index(_np(out).size // 2, out.shape)
            seed = np.zeros(out.shape, out.dtype)
            seed[idx] = 1
            ref = _grads(xs, outs, [seed])
            xs0, outs0 = _run(sample, [np.array(a[_entry(a.shape, idx)]) for a in arrays])
            (out0,) = outs0
            _close(_np(out0), _np(out)[idx], rtol=1e-6, what="float32 0-d value")
            for k, (g0, g) in enumerate(zip(_grads(xs0, outs0, [np.ones((), out.dtype)]), ref)):
                _close(g0, np.array(g.sum(), dtype=g.dtype), rtol=1e-5,
                       what=f"float32 0-d gradient of input {k}")
    cases.check(BY_OP[op])


@pytest.mark.parametrize("op", ELEMENTWISE_OPS)
def test_zero_d_beside_another_dtype(op):
    """A 0-d input of one float dtype beside n-d inputs of the other: the result takes the
    n-d inputs' dtype (PyTorch's promotion: a 0-d tensor does not raise the category's
    precision), each gradient its input's dtype, the values those of the n-d computation."""
    cases = Cases(op)
    cases.variants = {"0-d other dtype"}
    for sample in _mixed_samples(op):
        if len(sample.inputs) < 2:
            continue
        for k, a in enumerate(sample.inputs):
            if not a.ndim:
                continue
            for zero_dtype, nd_dtype in ((np.float64, np.float32), (np.float32, np.float64)):
                with cases.case("0-d other dtype", sample):
                    arrays = [x.astype(nd_dtype) for x in sample.inputs]
                    value = np.array(a.flat[a.size // 2], dtype=zero_dtype)
                    ones = list(arrays)  # computed in the result's dtype, as PyTorch's
                    ones[k] = np.full((1,) * a.ndim, value, dtype=nd_dtype)
                    mixed = list(arrays)
                    mixed[k] = value
                    xs, (want,) = _run(sample, ones)
                    xm, (got,) = _run(sample, mixed)
                    assert got.dtype == want.dtype, ("result dtype", got.dtype, want.dtype)
                    rtol = 1e-5 if np.float32 in (zero_dtype, nd_dtype) else TOL
                    _close(_np(got), _np(want).reshape(got.shape),
                           rtol=rtol, what="value")
                    seed = np.random.default_rng(13).standard_normal(got.shape).astype(
                        want.dtype)
                    gm = _grads(xm, [got], [seed])
                    gf = _grads(xs, [want], [seed.reshape(want.shape)])
                    for j, (g, h, x) in enumerate(zip(gm, gf, mixed)):
                        assert g.dtype == x.dtype, (f"gradient of input {j}", g.dtype, x.dtype)
                        _close(g, h.reshape(g.shape).astype(g.dtype), rtol=1e-4,
                               what=f"gradient of input {j}")
    cases.check(BY_OP[op])


# --- empty -----------------------------------------------------------------------------


def _rows(arrays):
    """The leading size N of the inputs of the most dims, and which inputs have it."""
    nd = max(a.ndim for a in arrays)
    if nd == 0:
        return None, []
    n = next(a.shape[0] for a in arrays if a.ndim == nd)
    return n, [k for k, a in enumerate(arrays) if a.ndim == nd and a.shape[0] == n]


def _row_wise(sample, outs, sliced):
    """Whether the sample maps the leading dim row by row: its first row is the n-d
    result's first row."""
    n, _ = _rows(sample.inputs)
    if not outs or any(o.ndim == 0 or o.shape[0] != n for o in outs):
        return False
    try:
        with cr.no_grad():
            ones = _outputs(sample.fn(*[cr.tensor(a) for a in sliced]))
    except Exception:  # noqa: BLE001 - not row by row (the shapes do not fit)
        return False
    return len(ones) == len(outs) and all(
        a.shape == (1,) + b.shape[1:] and np.allclose(_np(a), _np(b)[:1], rtol=1e-9,
                                                      atol=1e-12, equal_nan=True)
        for a, b in zip(ones, outs))


@pytest.mark.parametrize("op", OPS)
def test_empty_leading_dim(op):
    cases = Cases(op)
    cases.variants = {"empty", "empty float32"}
    for sample in BY_OP[op]:
        arrays = sample.inputs
        n, rows = _rows(arrays)
        if not rows or n < 2:
            continue
        with cr.no_grad():
            outs = _outputs(sample.fn(*[cr.tensor(a) for a in arrays]))
        if not _row_wise(sample, outs, [a[:1] if k in rows else a for k, a in enumerate(arrays)]):
            continue
        with cases.case("empty float32", sample):
            empty = [(a[:0] if k in rows else a).astype(np.float32) for k, a in enumerate(arrays)]
            with cr.no_grad():
                want = [o.dtype for o in _outputs(sample.fn(
                    *[cr.tensor(a.astype(np.float32)) for a in arrays]))]
            xs, outs0 = _run(sample, empty)
            assert [o.dtype for o in outs0] == want, ("float32 empty", outs0, want)
            seeds = [np.zeros(o.shape, o.dtype) for o in outs0]
            for k, (g, a) in enumerate(zip(_grads(xs, outs0, seeds), empty)):
                _close(g, np.zeros_like(a), what=f"float32 gradient of input {k}")
        with cases.case("empty", sample):
            empty = [a[:0] if k in rows else a for k, a in enumerate(arrays)]
            xs, outs0 = _run(sample, empty)
            assert [o.shape for o in outs0] == [(0,) + o.shape[1:] for o in outs], \
                ("empty result shapes", [o.shape for o in outs0])
            assert [o.dtype for o in outs0] == [o.dtype for o in outs]
            seeds = [np.zeros(o.shape, o.dtype) for o in outs0]
            for k, (g, a) in enumerate(zip(_grads(xs, outs0, seeds), empty)):
                _close(g, np.zeros_like(a), what=f"gradient of input {k}")
            # second order: the backward pass, recorded, differentiated again
            gs = _grads(xs, outs0, seeds, create_graph=True)
            live = [g for g in gs if g is not None and g.requires_grad]
            if live:
                total = sum(g.sum() for g in live)
                for k, (h, a) in enumerate(zip(grad([total], xs, allow_unused=True), empty)):
                    if h is not None:
                        _close(_np(h), np.zeros_like(a), what=f"second order of input {k}")
    cases.check(BY_OP[op])


# --- non-contiguous --------------------------------------------------------------------


def _layout(a, kind):
    """``a``'s values in a non-contiguous (or read-only) layout; None where it has none."""
    if kind == "transposed":
        return np.asfortranarray(a) if a.ndim >= 2 and max(a.shape[-2:]) > 1 else None
    if kind == "strided":
        if a.ndim == 0:
            return None
        buf = np.full(a.shape[:-1] + (2 * a.shape[-1],), np.nan, dtype=a.dtype)
        buf[..., ::2] = a
        return buf[..., ::2]
    if kind == "negative":
        return np.flip(np.flip(a).copy()) if a.ndim else None
    if kind == "broadcast":  # read-only, zero strides on size-1 dims (np.broadcast_to's)
        c = a.copy()
        strides = [0 if n == 1 else s for n, s in zip(c.shape, c.strides)]
        return np.lib.stride_tricks.as_strided(c, c.shape, strides, writeable=False)
    raise ValueError(kind)


LAYOUTS = ("transposed", "strided", "negative", "broadcast")


def _as_layout(arrays, kind):
    views = [_layout(a, kind) for a in arrays]
    return [a if v is None else v for a, v in zip(arrays, views)]


def _jvp(sample, arrays, tangents):
    """The output tangents along ``tangents`` (forward mode), as arrays."""
    with fwAD.dual_level():
        duals = [fwAD.make_dual(cr.from_numpy(a), cr.from_numpy(t))
                 for a, t in zip(arrays, tangents)]
        outs = _outputs(sample.fn(*duals))
        ts = [fwAD.unpack_dual(o).tangent for o in outs]
    return [np.zeros(o.shape, o.dtype) if t is None else _np(t)
            for o, t in zip(outs, ts)]


@pytest.mark.parametrize("op", OPS)
def test_non_contiguous_inputs(op):
    """Inputs, cotangents and tangents in each layout (the cotangent of a sum is a
    read-only broadcast array, as NumPy's broadcast_to gives)."""
    cases = Cases(op)
    cases.variants = set(LAYOUTS) | {f"{k} float32" for k in LAYOUTS}
    for n, sample, dtype in [(n, s, d) for d in (np.float64, np.float32)
                             for n, s in enumerate(BY_OP[op])]:
        arrays = [a.astype(dtype) for a in sample.inputs]
        xs, outs = _run(sample, arrays)
        rng = np.random.default_rng(17)
        seeds = _seeds(outs, rng)
        tangents = [rng.standard_normal(a.shape).astype(dtype) for a in arrays]
        ref = _grads(xs, outs, seeds)
        ref_jvp = _jvp(sample, arrays, tangents)
        second = n == 0 and dtype == np.float64
        if second:
            weights, ref2 = _second(sample, arrays, seeds)
        for kind in LAYOUTS:
            if all(_layout(a, kind) is None for a in arrays):
                continue
            views, seed_views, tangent_views = (_as_layout(x, kind)
                                                for x in (arrays, seeds, tangents))
            with cases.case(kind if dtype == np.float64 else f"{kind} float32", sample):
                before = [v.copy() for v in views + seed_views + tangent_views]
                xv, outv = _run(sample, views)
                for j, (a, b) in enumerate(zip(outv, outs)):
                    _close(_np(a), _np(b), what=f"{kind} output {j}")
                for k, (a, b) in enumerate(zip(_grads(xv, outv, seed_views), ref)):
                    _close(a, b, what=f"{kind} gradient of input {k}")
                for j, (a, b) in enumerate(zip(_jvp(sample, views, tangent_views), ref_jvp)):
                    _close(a, b, what=f"{kind} tangent of output {j}")
                if second:
                    _, got2 = _second(sample, views, seed_views, weights)
                    for k, (a, b) in enumerate(zip(got2, ref2)):
                        _close(a, b, what=f"{kind} second-order gradient of input {k}")
                after = views + seed_views + tangent_views
                for k, (v, b) in enumerate(zip(after, before)):
                    assert np.array_equal(v, b, equal_nan=True), \
                        f"{kind}: an input, cotangent or tangent ({k}) changed"
    cases.check(BY_OP[op])


def _second(sample, arrays, seeds, weights=None):
    """d/dx <w, VJP(x; u)>: the backward pass recorded and differentiated."""
    xs, outs = _run(sample, arrays)
    gs = _grads(xs, outs, seeds, create_graph=True)
    rng = np.random.default_rng(23)
    if weights is None:
        weights = [None if g is None else rng.standard_normal(g.shape) for g in gs]
    live = [(g, w) for g, w in zip(gs, weights) if g is not None and g.requires_grad]
    if not live:
        return weights, [np.zeros(x.shape) for x in xs]
    total = sum((g * cr.tensor(w)).sum() for g, w in live)
    hs = grad([total], xs, allow_unused=True)
    return weights, [np.zeros(x.shape) if h is None else _np(h) for h, x in zip(hs, xs)]
