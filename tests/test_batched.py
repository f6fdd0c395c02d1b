"""Batched cotangents and tangents: the rules run unchanged on a leading batch dimension.

For every sample of the derivative table, ``vjp_rows`` (one backward pass for B cotangents)
must equal B separate ``autograd.grad`` calls and ``jvp_columns`` (one forward pass for B
tangents) B separate forward-mode runs, without falling back to one pass per row. Then unit
tests of :class:`Batched` and of each function of the batched namespace against RAW applied
row by row.
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.autograd.forward_ad as fwAD
import chainrule.linalg  # noqa: F401  (registers its helpers in the rule namespace)
from chainrule import _dual
from chainrule._batched import BATCHED, Batched, namespace
from chainrule._engine import run_backward
from chainrule._node import accumulator
from chainrule._ns import RAW
from chainrule.autograd import Function, grad
from chainrule.autograd import batched as rows_module
from chainrule.autograd.batched import jvp_columns, vjp_rows
from samples import SAMPLES

B = 3
RNG = np.random.default_rng(99)


def randn(*shape):
    return RNG.standard_normal(shape)


@pytest.fixture
def strict(monkeypatch):
    """Fail instead of falling back to one pass per row/column."""

    def fail(*args):  # the last argument is the exception of the batched pass
        raise AssertionError("the batched pass failed (the exception above) and fell back "
                             "to one pass per row/column") from args[-1]

    monkeypatch.setattr(rows_module, "_vjp_rows_one_by_one", fail)
    monkeypatch.setattr(rows_module, "_jvp_columns_one_by_one", fail)


def _float_outputs(result):
    return [o for o in (result if isinstance(result, tuple) else (result,))
            if o.dtype.kind == "f"]


def _close(actual, expected):
    np.testing.assert_allclose(actual, expected, rtol=1e-9, atol=1e-12)


# --- every sample of the table ---------------------------------------------------------------


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
def test_vjp_rows_equals_one_backward_per_row(sample, strict):
    inputs = sample.tensors()
    diff = [x for x in inputs if isinstance(x, cr.Tensor) and x.requires_grad]
    outs = [o for o in _float_outputs(sample.fn(*inputs)) if o.requires_grad]
    rng = np.random.default_rng(5)
    cots = [rng.standard_normal((B,) + tuple(o.shape)) for o in outs]
    rows = vjp_rows(outs, diff, cots)
    assert [r.shape for r in rows] == [(B,) + tuple(x.shape) for x in diff]
    for b in range(B):
        ref = grad(outs, diff, [c[b] for c in cots], retain_graph=True, allow_unused=True)
        for r, g in zip(rows, ref):
            _close(r[b], 0.0 if g is None else g.numpy())


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
def test_jvp_columns_equals_one_forward_pass_per_column(sample, strict):
    inputs = sample.tensors()
    diff = [i for i, x in enumerate(inputs) if isinstance(x, cr.Tensor)]
    primals = [inputs[i].detach() for i in diff]

    def fn(*xs):
        args = list(inputs)
        for i, x in zip(diff, xs):
            args[i] = x
        return _float_outputs(sample.fn(*args))

    rng = np.random.default_rng(6)
    tans = [rng.standard_normal((B,) + tuple(p.shape)) for p in primals]
    outs, cols = jvp_columns(fn, primals, tans)
    assert [c.shape for c in cols] == [(B,) + tuple(o.shape) for o in outs]
    for b in range(B):
        with fwAD.dual_level():
            ref = [fwAD.unpack_dual(o) for o in fn(*(fwAD.make_dual(p, t[b])
                                                     for p, t in zip(primals, tans)))]
        for c, o, (primal, t) in zip(cols, outs, ref):
            _close(o.numpy(), primal.numpy())
            _close(c[b], 0.0 if t is None else t.numpy())


def test_batched_namespace_has_every_rule_name():
    assert set(vars(RAW)) <= set(vars(BATCHED))
    assert set(vars(RAW)) <= set(vars(namespace()))


def test_a_name_registered_later_gets_a_per_row_version(monkeypatch):
    monkeypatch.setattr(RAW, "_test_scale_rows", lambda x, k: x * k, raising=False)
    try:
        f = namespace()._test_scale_rows
        assert getattr(f, "looped", False)
        x = Batched(randn(B, 2))
        _close(f(x, 3.0).data, x.data * 3.0)
        assert f(np.ones(2), 2.0).tolist() == [2.0, 2.0]  # no Batched argument: RAW's
    finally:
        vars(BATCHED).pop("_test_scale_rows", None)


# --- Batched: operators and indexing ---------------------------------------------------------


def _rows(fn, *args):
    """fn applied row by row: Batched arguments replaced by their row b."""
    def row(a, b):
        if isinstance(a, Batched):
            return a.data[b]
        if isinstance(a, list):
            return [row(x, b) for x in a]
        return a

    return np.stack([np.asarray(fn(*(row(a, b) for a in args))) for b in range(B)])


@pytest.mark.parametrize("lshape, rshape", [
    ((3, 1), (4,)), ((4,), (2, 3, 4)), ((), (2, 2)), ((2, 3, 4), (3, 1)), ((3, 4), ()),
])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "pow", "gt", "eq"])
def test_binary_operators_broadcast_on_logical_dims(lshape, rshape, op):
    import operator

    f = getattr(operator, op)
    a = Batched(np.abs(randn(B, *lshape)) + 0.5)
    p = np.abs(randn(*rshape)) + 0.5
    q = Batched(np.abs(randn(B, *rshape)) + 0.5)
    for result, args in ((f(a, p), (a, p)), (f(p, a), (p, a)), (f(a, q), (a, q)),
                         (f(q, a), (q, a))):
        assert isinstance(result, Batched)
        expected = _rows(f, *args)
        assert result.shape == expected.shape[1:]
        _close(result.data, expected)


def test_scalars_and_unary_operators():
    a = Batched(randn(B, 2, 3))
    for result, expected in ((2.0 - a, 2.0 - a.data), (np.float64(2.0) * a, 2.0 * a.data),
                             (-a, -a.data), (abs(a), np.abs(a.data)), (a ** 2, a.data ** 2),
                             (1 / (1 + a * a), 1 / (1 + a.data ** 2))):
        assert isinstance(result, Batched)
        _close(result.data, expected)
    mask = (a > 0) * (a < 1)
    assert mask.dtype == bool and mask.shape == (2, 3)
    assert a.shape == (2, 3) and a.ndim == 2 and a.size == 6 and a.dtype == np.float64
    assert np.shape(a) == (2, 3) and np.ndim(a) == 2
    with pytest.raises(TypeError):
        bool(a)


IDX = np.array([2, 0, 2, 1])
MASK = np.array([[True, False, True, True], [False, True, False, True],
                 [True, True, False, False]])


@pytest.mark.parametrize("index", [
    (slice(1, None), slice(None, None, 2)), (Ellipsis, 1, None), 1, (Ellipsis,),
    (IDX,), (MASK,), (IDX, IDX[::-1]), (slice(None), np.array([0, 3])),
    (np.array([[0, 1], [2, 2]]), slice(1, 3)), (None, IDX), (Ellipsis, np.array([1, 0])),
], ids=str)
def test_getitem_on_logical_dims(index):
    x = Batched(randn(B, 3, 4))
    expected = _rows(lambda r: r[index], x)
    result = x[index]
    assert result.shape == expected.shape[1:]
    _close(result.data, expected)


@pytest.mark.parametrize("index", [
    (IDX, slice(None), IDX[::-1]),  # advanced indices apart: their dim goes first
    (1, slice(None), np.array([0, 2])),  # an int counts as an advanced index here
    (IDX[:2, None], slice(None), np.array([[0, 1, 2]])),
], ids=str)
def test_getitem_with_advanced_indices_apart(index):
    x = Batched(randn(B, 3, 2, 4))
    expected = _rows(lambda r: r[index], x)
    _close(x[index].data, expected)


@pytest.mark.parametrize("index, vshape", [
    ((IDX,), (4, 4)), ((IDX,), (4,)), ((MASK,), (7,)), ((IDX, IDX[::-1]), (4,)),
    ((1, slice(1, 3)), (2,)), ((slice(None), np.array([0, 0, 3])), (3, 1)),
])
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("which", ["values", "x", "both"])
def test_index_put(index, vshape, accumulate, which):
    x = randn(3, 4)
    v = randn(*vshape)
    if which != "values":
        x = Batched(randn(B, 3, 4))
    if which != "x":
        v = Batched(randn(B, *vshape))
    result = BATCHED.index_put(x, index, v, accumulate)
    expected = _rows(lambda a, c: RAW.index_put(a, index, c, accumulate), x, v)
    _close(result.data, expected)


# --- the namespace against RAW row by row ------------------------------------------------------


def _B(*shape):
    return Batched(randn(B, *shape))


def _well(*shape):
    n = shape[-1]
    return randn(*shape) + n * np.eye(n)


CASES = [
    ("sum", lambda: (_B(2, 3, 4), (0, 2), False)), ("sum", lambda: (_B(3, 4), None, True)),
    ("sum", lambda: (_B(3, 4), 1, False)), ("mean", lambda: (_B(2, 3, 4), (-1,), True)),
    ("reshape", lambda: (_B(3, 4), (4, -1))), ("reshape", lambda: (_B(3, 4), 12)),
    ("expand", lambda: (_B(3, 1), (2, 3, 4))), ("unsqueeze", lambda: (_B(3, 4), -1)),
    ("unsqueeze", lambda: (_B(3, 4), (0, 2))), ("squeeze", lambda: (_B(1, 3, 1), None)),
    ("squeeze", lambda: (_B(1, 3, 1), -1)), ("transpose", lambda: (_B(2, 3, 4), 0, -1)),
    ("permute", lambda: (_B(2, 3, 4), (2, 0, 1))), ("permute", lambda: (_B(2, 3, 4),)),
    ("mT", lambda: (_B(2, 3, 4),)), ("matmul", lambda: (_B(3, 4), randn(4, 2))),
    ("matmul", lambda: (randn(2, 3), _B(3, 4))), ("matmul", lambda: (_B(4), randn(2, 4, 3))),
    ("matmul", lambda: (randn(2, 3, 4), _B(4))), ("matmul", lambda: (_B(4), _B(4))),
    ("matmul", lambda: (_B(2, 3, 4), _B(4, 5))), ("matmul", lambda: (_B(2, 1, 3, 4),
                                                                     randn(5, 4, 2))),
    ("matmul", lambda: (randn(5, 2, 3), _B(3, 4))), ("matmul", lambda: (_B(3), randn(3))),
    ("trace", lambda: (_B(3, 4),)), ("diag", lambda: (_B(3), 1)), ("diag", lambda: (_B(3, 4), -1)),
    ("diagonal", lambda: (_B(3, 2, 4), -1, 0, 2)), ("diagonal", lambda: (_B(2, 3, 3), 0, -2, -1)),
    ("diagonal_scatter", lambda: (randn(3, 4), _B(3), 1, 0, 1)),
    ("diagonal_scatter", lambda: (_B(3, 4), randn(3), 1, 0, 1)),
    ("diagonal_scatter", lambda: (_B(2, 3, 3), _B(2, 3), 0, 1, 2)),
    ("tril", lambda: (_B(2, 3, 3), 1)), ("triu", lambda: (_B(3, 4),)),
    ("einsum", lambda: ("ij,jk->ik", _B(3, 4), randn(4, 2))),
    ("einsum", lambda: ("...ij,...jk", randn(2, 3, 4), _B(4, 2))),
    ("einsum", lambda: ("...ij,...jk->...ik", randn(1, 3, 4), _B(5, 4, 2))),
    ("einsum", lambda: ("ii->i", _B(3, 3))), ("einsum", lambda: ("i,ij,j->", randn(3), _B(3, 4),
                                                                 _B(4))),
    ("softmax", lambda: (_B(3, 4), 0)), ("softmax", lambda: (_B(3, 4), -1)),
    ("cat", lambda: ([randn(3, 4), _B(3, 2)], 1)), ("cat", lambda: ([_B(3, 4), _B(1, 4)], -2)),
    ("stack", lambda: ([_B(3), randn(3)], -1)), ("stack", lambda: ([_B(3), _B(3)], 0)),
    ("where", lambda: (MASK, _B(3, 4), 0.0)), ("where", lambda: (MASK, 0.0, _B(4))),
    ("where", lambda: (_B(3, 4) > 0, _B(4), randn(3, 1))),
    ("prod_others", lambda: (_B(3, 4), (1,))), ("prod_others", lambda: (_B(3, 4), None)),
    ("cast", lambda: (_B(3, 4), np.float32)), ("zeros_like", lambda: (_B(3, 4),)),
    ("ones_like", lambda: (_B(2),)), ("exp", lambda: (_B(3),)), ("sigmoid", lambda: (_B(3),)),
    ("sign", lambda: (_B(3),)), ("abs", lambda: (_B(3),)),
    # registered by chainrule.linalg (broadcast over leading batch dims)
    ("inv", lambda: (Batched(_well(B, 3, 3)),)), ("solve", lambda: (_well(3, 3), _B(3, 2))),
    ("solve", lambda: (Batched(_well(B, 2, 3, 3)), randn(3, 2))),
    ("cofactor", lambda: (_B(3, 3),)), ("cross", lambda: (_B(4, 3), randn(3), 1)),
    ("cross", lambda: (randn(3, 2), _B(3, 1), 0)), ("cross", lambda: (_B(2, 3), _B(3), -1)),
    ("matrix_exp_frechet", lambda: (randn(3, 3), _B(3, 3))),
    ("solve_sylvester", lambda: (_well(3, 3), _well(2, 2), _B(3, 2))),
]


@pytest.mark.parametrize("name, make", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_namespace_function_equals_raw_row_by_row(name, make):
    if not hasattr(RAW, name):
        pytest.skip(f"{name!r} is not registered by chainrule.linalg (any more)")
    args = make()
    result = getattr(namespace(), name)(*args)
    expected = _rows(getattr(RAW, name), *args)
    assert isinstance(result, Batched)
    assert result.data.shape == expected.shape
    _close(result.data, expected)


def test_cross_dim_keyword():
    a, b = _B(3, 2), randn(3, 2)
    _close(namespace().cross(a, b, dim=0).data, _rows(lambda r: RAW.cross(r, b, 0), a))


@pytest.mark.parametrize("left", [True, False])
def test_solve_triangular_keywords(left):
    f = namespace().solve_triangular
    A, b = _well(3, 3), _B(3, 3)
    _close(f(A, b, upper=True, left=left).data,
           _rows(lambda r: RAW.solve_triangular(A, r, upper=True, left=left), b))
    A, b = Batched(_well(B, 2, 3, 3)), randn(3, 3)
    _close(f(A, b, upper=False, left=left, unitriangular=True).data,
           _rows(lambda r: RAW.solve_triangular(r, b, upper=False, left=left,
                                                unitriangular=True), A))


def test_without_batched_arguments_the_namespace_is_raw():
    x = randn(3, 4)
    _close(BATCHED.sum(x, (1,), False), RAW.sum(x, (1,), False))
    _close(BATCHED.matmul(x, x.T), x @ x.T)
    assert not isinstance(BATCHED.einsum("ij->j", x), Batched)


# --- reverse mode: engine and fallbacks -------------------------------------------------------


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x ** 2

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return t * 3 * x ** 2


def test_batched_backward_through_a_custom_function_names_it():
    x = cr.tensor(randn(4), requires_grad=True)
    y = Cube.apply(x.sin()).exp()
    cot = Batched(randn(B, 4))
    with pytest.raises(NotImplementedError, match="Cube"):
        run_backward([(y.grad_fn, 0)], [cot], namespace(), retain_graph=True,
                     accumulate=False, capture={(accumulator(x), 0): 0}, batched=True)
    rows = vjp_rows([y], [x], [cot.data])  # falls back to one pass per row
    for b in range(B):
        _close(rows[0][b], grad(y, x, cr.tensor(cot.data[b]), retain_graph=True)[0].numpy())


def test_batched_backward_refuses_accumulate_and_create_graph():
    x = cr.tensor(randn(4), requires_grad=True)
    y = x.exp()
    with pytest.raises(ValueError, match="accumulate"):
        run_backward([(y.grad_fn, 0)], [Batched(randn(B, 4))], namespace(), batched=True)


def test_hooks_see_plain_cotangents():
    x = cr.tensor(randn(4), requires_grad=True)
    h = x.sin()
    seen = []
    h.register_hook(lambda g: seen.append(tuple(g.shape)))
    y = h.exp()
    cot = randn(B, 4)
    rows = vjp_rows([y], [x], [cot])
    assert seen == [(4,)] * B
    for b in range(B):
        _close(rows[0][b], grad(y, x, cr.tensor(cot[b]), retain_graph=True)[0].numpy())


def test_vjp_rows_unused_input_intermediate_input_and_output_as_input():
    x = cr.tensor(randn(3), requires_grad=True)
    z = cr.tensor(randn(2), requires_grad=True)
    h = x * 2.0
    y = (h * h).sum()
    cot_y, cot_x = randn(B), randn(B, 3)
    rows = vjp_rows([y, x], [x, z, h], [cot_y, cot_x])
    assert np.all(rows[1] == 0) and rows[1].shape == (B, 2)
    _close(rows[0], cot_y[:, None] * 8 * x.detach().numpy() + cot_x)
    _close(rows[2], cot_y[:, None] * 2 * h.detach().numpy())


def test_vjp_rows_broadcast_scalar_output():
    x = cr.tensor(randn(2, 3), requires_grad=True)
    y = (x * randn(3)).sum()
    rows = vjp_rows([y], [x], [np.arange(4.0)])
    assert rows[0].shape == (4, 2, 3)
    _close(rows[0][2], grad(y, x, cr.tensor(2.0), retain_graph=True)[0].numpy())


def test_empty_batch():
    x = cr.tensor(randn(3), requires_grad=True)
    y = x.exp()
    assert vjp_rows([y], [x], [np.zeros((0, 3))])[0].shape == (0, 3)
    outs, cols = jvp_columns(lambda a: a.exp(), [x.detach()], [np.zeros((0, 3))])
    assert cols[0].shape == (0, 3)


def test_vjp_rows_checks_shapes():
    x = cr.tensor(randn(3), requires_grad=True)
    with pytest.raises(ValueError, match="expected"):
        vjp_rows([x.exp()], [x], [randn(B, 2)])


# --- forward mode ---------------------------------------------------------------------------


def test_jvp_columns_through_a_custom_function_falls_back():
    x = randn(4)
    tans = randn(B, 4)
    outs, cols = jvp_columns(lambda a: Cube.apply(a.sin()), [x], [tans])
    _close(outs[0].numpy(), np.sin(x) ** 3)
    _close(cols[0], tans * 3 * np.sin(x) ** 2 * np.cos(x))


def test_jvp_columns_outputs_without_tangent_and_constants():
    x = cr.tensor(randn(3))
    outs, cols = jvp_columns(lambda a: [a.exp(), cr.ones(2), a.argmax()], [x], [randn(B, 3)])
    assert cols[1].shape == (B, 2) and not cols[1].any()
    assert cols[2].shape == (B,) and not cols[2].any()


def test_jvp_columns_refuses_nesting():
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="nested"):
            jvp_columns(lambda a: a, [randn(2)], [randn(B, 2)])


def test_forward_over_reverse_with_batched_tangents(strict):
    """Batched tangents flow through a recorded (create_graph) backward: Hessian columns."""
    x = randn(4)
    A = randn(4, 4)

    def gradient(a):
        leaf = cr.tensor(a.numpy(), requires_grad=True)  # a leaf that keeps a's tangent
        if _dual.tangent_of(a) is not None:
            _dual.set_tangent(leaf, _dual.tangent_of(a))
        y = ((leaf @ cr.tensor(A)).tanh() * leaf).sum()
        return grad(y, leaf, create_graph=True)[0]

    tans = np.eye(4)
    outs, cols = jvp_columns(lambda a: gradient(a), [x], [tans])
    for b in range(4):
        with fwAD.dual_level():
            ref = fwAD.unpack_dual(gradient(fwAD.make_dual(cr.tensor(x), tans[b]))).tangent
        _close(cols[0][b], ref.numpy())


def test_diag_batched_matches_its_materialized_rows():
    """The structured identity seed: every fast path equals the same op on diag(v)."""
    from chainrule._batched import BATCHED, Batched, DiagBatched

    rng = np.random.default_rng(0)
    v = rng.standard_normal(4)
    A, u = rng.standard_normal((3, 4)), rng.standard_normal(4)
    seed, dense = DiagBatched(v), Batched(np.diag(v))
    assert seed.shape == (4,) and seed.batch_size == 4
    for fast, slow in [(seed * u, dense * u), (u * seed, u * dense), (seed / 2.0, dense / 2.0),
                       (-seed, -dense), (BATCHED.matmul(A, seed), BATCHED.matmul(A, dense)),
                       (BATCHED.matmul(seed, A.T), BATCHED.matmul(dense, A.T)),
                       (seed + u, dense + u), (BATCHED.exp(seed), BATCHED.exp(dense))]:
        assert np.allclose(np.asarray(fast), np.asarray(slow))
    assert isinstance(seed * u, DiagBatched)  # stayed structured
    assert not isinstance(seed + u, DiagBatched)  # adding breaks the zeros: materialized


def _vjp_of(sample, arrays, cotangent_seed):
    """``inputs -> VJP of the sample's float outputs`` (fixed cotangents), a function of
    the array inputs; None entries for inputs the outputs do not reach are zeros."""
    def h(*args):
        args = list(args)
        leaves = {i: args[i].detach().requires_grad_(True) for i in arrays}
        for i, x in leaves.items():
            args[i] = x
        outs = [o for o in _float_outputs(sample.fn(*args)) if o.requires_grad]
        if not outs:
            return tuple(cr.zeros_like(x) for x in leaves.values())
        rng = np.random.default_rng(cotangent_seed)
        cots = [cr.tensor(rng.standard_normal(o.shape)) for o in outs]
        gs = grad(outs, list(leaves.values()), cots, allow_unused=True, materialize_grads=True)
        return tuple(gs)
    return h


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
def test_vmap_over_a_batch_of_samples_equals_each_sample(sample):
    # vmap over two samples (the sample, and its float arrays scaled by 1.001) equals the
    # function on each; so does vmap of the VJP (the rules run on the batch), and the
    # gradient flows back through vmap to inputs that require grad
    from chainrule.func import vmap

    arrays = [i for i, x in enumerate(sample.inputs) if isinstance(x, np.ndarray)]
    if not arrays:
        pytest.skip("no array input to map over")
    second = [x * 1.001 if isinstance(x, np.ndarray) and x.dtype.kind == "f" else x
              for x in sample.inputs]
    in_dims = tuple(0 if i in arrays else None for i in range(len(sample.inputs)))

    def stacked(requires_grad=False):
        return [cr.tensor(np.stack([x, y]), requires_grad=requires_grad and x.dtype.kind == "f")
                if i in arrays else x
                for i, (x, y) in enumerate(zip(sample.inputs, second))]

    def each(values, fn):
        return fn(*[cr.tensor(x) if i in arrays else x for i, x in enumerate(values)])

    f = lambda *a: _float_outputs(sample.fn(*a))  # noqa: E731
    for fn in (f, _vjp_of(sample, [i for i in arrays
                                   if sample.inputs[i].dtype.kind == "f"], 7)):
        out = vmap(fn, in_dims=in_dims)(*stacked())
        rows = [each(sample.inputs, fn), each(second, fn)]
        assert len(out) == len(rows[0])
        for k, o in enumerate(out):
            for b in range(2):
                _close(o.detach().numpy()[b], rows[b][k].detach().numpy())
    # reverse mode through vmap: the gradient of the stacked inputs is, row by row, the
    # gradient of each sample (with the same fixed cotangents)
    xs = stacked(requires_grad=True)
    diff = [i for i in arrays if xs[i].requires_grad]
    live = [o for o in vmap(f, in_dims=in_dims)(*xs) if o.requires_grad]
    if live and diff:
        rng = np.random.default_rng(8)
        cots = [rng.standard_normal(o.shape) for o in live]
        gs = grad(live, [xs[i] for i in diff], [cr.tensor(c) for c in cots],
                  allow_unused=True, materialize_grads=True)
        for b, values in enumerate((sample.inputs, second)):
            args = [cr.tensor(x) if i in arrays else x for i, x in enumerate(values)]
            leaves = [args[i].requires_grad_(True) for i in diff]
            outs = [o for o in f(*args) if o.requires_grad]
            ref = grad(outs, leaves, [cr.tensor(c[b]) for c in cots], allow_unused=True,
                       materialize_grads=True)
            for g, r in zip(gs, ref):
                _close(g.numpy()[b], r.numpy())
