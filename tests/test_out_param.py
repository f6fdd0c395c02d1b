"""PyTorch's ``out=`` keyword on the top-level functions (chainrule._out_param): the result
written into ``out`` (resized, cast as PyTorch allows), ``out`` returned, no gradient."""

import inspect

import numpy as np
import pytest

import chainrule as cr
from chainrule import _out_param

try:
    import torch
except ImportError:  # CI: the values are checked against NumPy only
    torch = None

A = np.array([[1.0, -2.0], [3.0, 4.0]])
B = np.array([[0.5, 1.0], [2.0, -1.0]])

# name, call(m, a, b, out), the NumPy value
CASES = [
    ("add", lambda m, a, b, out: m.add(a, b, out=out), A + B),
    ("matmul", lambda m, a, b, out: m.matmul(a, b, out=out), A @ B),
    ("exp", lambda m, a, b, out: m.exp(a, out=out), np.exp(A)),
    ("cat", lambda m, a, b, out: m.cat([a, b], 0, out=out), np.concatenate([A, B])),
    ("sum", lambda m, a, b, out: m.sum(a, 1, out=out), A.sum(1)),
    ("where", lambda m, a, b, out: m.where(a > 0, a, b, out=out), np.where(A > 0, A, B)),
    ("clamp", lambda m, a, b, out: m.clamp(a, -1, 1, out=out), np.clip(A, -1, 1)),
    ("stack", lambda m, a, b, out: m.stack([a, b], out=out), np.stack([A, B])),
    ("mean", lambda m, a, b, out: m.mean(a, 0, out=out), A.mean(0)),
    ("pow", lambda m, a, b, out: m.pow(a, 2, out=out), A ** 2),
]


@pytest.mark.parametrize("name, call, want", CASES, ids=[c[0] for c in CASES])
def test_out_receives_the_result_and_is_returned(name, call, want):
    out = cr.empty(0)  # resized to the result's shape, as PyTorch resizes an empty out
    version = out._version
    got = call(cr, cr.tensor(A), cr.tensor(B), out)
    assert got is out
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-15)
    assert out._version > version  # written in place: its version counter moved
    if torch is not None:
        t_out = torch.empty(0, dtype=torch.float64)
        call(torch, torch.tensor(A), torch.tensor(B), t_out)
        np.testing.assert_allclose(out.numpy(), t_out.numpy(), rtol=1e-15)


def test_several_results_and_constructors():
    v, i = cr.empty(0), cr.empty(0, dtype=cr.int64)
    cr.sort(cr.tensor(A), 1, out=(v, i))
    np.testing.assert_array_equal(v.numpy(), np.sort(A, 1))
    np.testing.assert_array_equal(i.numpy(), np.argsort(A, 1))
    c = cr.zeros(4, dtype=cr.float32)
    assert cr.arange(4, out=c) is c and c.dtype == cr.float32  # made in out's dtype
    np.testing.assert_array_equal(c.numpy(), [0, 1, 2, 3])
    c = cr.full((3,), 7.0)
    cr.zeros(2, out=c)
    assert c.shape == (2,) and not c.numpy().any()
    assert "out" in inspect.signature(cr.add).parameters


def test_out_refuses_grad_and_unsafe_casts_and_changes_nothing():
    x = cr.ones(2, requires_grad=True)
    out = cr.full((2,), 5.0)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        cr.mul(x, 2, out=out)
    np.testing.assert_array_equal(out.numpy(), [5.0, 5.0])
    with cr.no_grad():  # without grad mode PyTorch writes it
        cr.mul(x, 2, out=out)
    np.testing.assert_array_equal(out.numpy(), [2.0, 2.0])
    ints = cr.zeros(2, dtype=cr.int64)
    with pytest.raises(RuntimeError, match="can't be cast"):
        cr.mean(cr.tensor(A), 0, out=ints)  # float to int is not a safe cast
    np.testing.assert_array_equal(ints.numpy(), [0, 0])
    with pytest.raises(TypeError, match="must be Tensor"):
        cr.add(cr.tensor(A), 1, out=np.zeros((2, 2)))


def test_functions_with_their_own_out_are_not_wrapped():
    # the hot ones take out= themselves (no wrapper: the same function as the method)
    assert cr.exp is cr.Tensor.exp and cr.add is cr.Tensor.add and cr.matmul is cr.Tensor.matmul
    for name in ("max", "min", "tensordot", "exp", "add", "mul", "matmul"):
        fn = getattr(cr, name)
        assert _out_param.with_out(fn, name) is fn
    assert all(hasattr(cr, n) for n in _out_param.NAMES)


# functions whose out= must have the result's dtype exactly in PyTorch 2.13 (index results
# int64, tests bool, many kernels exact) beside ones that cast
EXACT = [
    ("argmax", lambda m, a, f: m.argmax(a, 1, out=f(2))),
    ("max", lambda m, a, f: m.max(a, 1, out=(f(2), m.zeros(2, dtype=m.int64)))),
    ("sort", lambda m, a, f: m.sort(a, 1, out=(m.zeros(2, 2, dtype=a.dtype), f(2, 2)))),
    ("isposinf", lambda m, a, f: m.isposinf(a, out=f(2, 2))),
    ("any", lambda m, a, f: m.any(a, 1, out=f(2))),
    ("mm", lambda m, a, f: m.mm(a, a, out=f(2, 2))),
    ("floor", lambda m, a, f: m.floor(a, out=f(2, 2))),
    ("where", lambda m, a, f: m.where(a > 0, a, a, out=f(2, 2))),
]


@pytest.mark.parametrize("name, call", EXACT, ids=[c[0] for c in EXACT])
def test_out_of_another_dtype_is_refused_where_pytorch_refuses_it(name, call):
    made = []

    def f32(*shape):  # every out made, filled with 9s
        made.append(cr.full(shape, 9.0, dtype=cr.float32))
        return made[-1]

    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        call(cr, cr.tensor(A), f32)
    assert all((o.numpy() == 9.0).all() for o in made)  # left as they were
    if torch is not None:
        with pytest.raises(RuntimeError):
            call(torch, torch.tensor(A), lambda *s: torch.zeros(*s, dtype=torch.float32))


def test_out_of_another_dtype_is_cast_where_pytorch_casts():
    for call, want in ((lambda o: cr.add(cr.tensor(A), cr.tensor(B), out=o), A + B),
                       (lambda o: cr.sum(cr.tensor(A), 1, out=o), A.sum(1)),
                       (lambda o: cr.exp(cr.tensor(A), out=o), np.exp(A))):
        out = cr.empty(0, dtype=cr.float32)
        assert call(out) is out and out.dtype == cr.float32
        np.testing.assert_allclose(out.numpy(), want.astype(np.float32), rtol=1e-7)
    o = cr.zeros(2, dtype=cr.bool)
    cr.all(cr.tensor(A), 1, out=o)  # all/any take out= (they refused it)
    np.testing.assert_array_equal(o.numpy(), (A != 0).all(1))


def test_a_tuple_out_is_written_only_when_every_entry_can_take_its_result():
    values, indices = cr.full((2, 2), 9.0), cr.full((2, 2), 9.0, dtype=cr.float32)
    with pytest.raises(RuntimeError, match="dtype long int, but got float"):
        cr.sort(cr.tensor(A), 1, out=(values, indices))  # the indices' out is float32
    assert (values.numpy() == 9.0).all()  # the values' out, right in dtype, was not written


def test_in_place_variants_take_no_out():
    # acos_(x, out=y) wrote acos into x and ignored y's role; PyTorch: TypeError
    x = cr.tensor([0.5])
    for call in (lambda: cr.acos_(x, out=cr.zeros(1)), lambda: x.exp_(out=cr.zeros(1)),
                 lambda: x.add_(1, out=cr.zeros(1))):
        with pytest.raises(TypeError, match="_\\(\\) got an unexpected keyword argument 'out'"):
            call()
    np.testing.assert_array_equal(x.numpy(), [0.5])  # untouched
    np.testing.assert_allclose(cr.acos_(x).numpy(), [np.arccos(0.5)])
