"""The first users' questions, each answered in one step: what backward receives for
f: R^2 -> R^3, a Function known only by its JVP (the Gateaux derivative), and the PyTorch
spellings these users type."""

import warnings

import numpy as np
import pytest

import chainrule as cr
from chainrule import func


class Square(cr.autograd.Function):
    """X -> X @ X, known only by its Gateaux derivative dY = V X + X V (no backward)."""

    @staticmethod
    def forward(ctx, X):
        ctx.save_for_backward(X)
        return X @ X

    @staticmethod
    def jvp(ctx, V):
        (X,) = ctx.saved_tensors
        return V @ X + X @ V


def test_jvp_only_function_gets_the_transposed_backward():
    rng = np.random.default_rng(0)
    X0, G0 = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    X = cr.tensor(X0, requires_grad=True)
    Square.apply(X).backward(cr.tensor(G0))
    # the transpose of V -> V X + X V under <A, B> = tr(A^T B) is G -> G X^T + X^T G
    np.testing.assert_allclose(np.asarray(X.grad), G0 @ X0.T + X0.T @ G0, rtol=1e-12)
    assert cr.autograd.gradcheck(Square.apply, (X,))
    assert cr.autograd.gradgradcheck(Square.apply, (X,))


class F(cr.autograd.Function):
    """f(x, y) = (x^2, x y, y^2) for a 2-vector v = (x, y); Jacobian [[2x, 0], [y, x], [0, 2y]]."""

    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        x, y = v[0], v[1]
        return cr.stack([x * x, x * y, y * y])

    @staticmethod
    def backward(ctx, u):                       # u: shape (3,), the cotangent of f(v)
        (v,) = ctx.saved_tensors
        x, y = v[0], v[1]
        F.received = u.shape
        return cr.stack([2 * x * u[0] + y * u[1], x * u[1] + 2 * y * u[2]])   # J^T u, (2,)


def test_backward_receives_a_cotangent_and_returns_u_transpose_j():
    v = cr.tensor([3.0, 5.0], requires_grad=True)
    u = cr.tensor([1.0, 10.0, 100.0])
    F.apply(v).backward(u)
    assert F.received == (3,) and v.grad.shape == (2,)
    J = np.array([[6.0, 0.0], [5.0, 3.0], [0.0, 10.0]])
    np.testing.assert_allclose(np.asarray(v.grad), np.asarray(u) @ J)
    np.testing.assert_allclose(np.asarray(func.jacrev(F.apply)(cr.tensor([3.0, 5.0]))), J)
    # the same u^T J as (u * f(v)).sum().backward()
    w = cr.tensor([3.0, 5.0], requires_grad=True)
    (u * F.apply(w)).sum().backward()
    np.testing.assert_allclose(np.asarray(w.grad), np.asarray(v.grad))
    (rows,) = cr.autograd.grad(F.apply(w), w, cr.eye(3), is_grads_batched=True)
    np.testing.assert_allclose(np.asarray(rows), J)


def test_backward_with_a_batch_of_cotangents_points_to_jacrev():
    x = cr.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="is_grads_batched"):
        (x * x).backward(cr.eye(3))
    assert x.grad is None


def test_is_grads_batched_equals_row_by_row():
    rng = np.random.default_rng(1)
    A = cr.tensor(rng.standard_normal((4, 3)))
    x = cr.tensor(rng.standard_normal(3), requires_grad=True)
    y = (A @ x).tanh()
    U = rng.standard_normal((5, 4))
    (batched,) = cr.autograd.grad(y, x, cr.tensor(U), is_grads_batched=True)
    rows = [cr.autograd.grad(y, x, cr.tensor(u), retain_graph=True)[0] for u in U]
    np.testing.assert_allclose(np.asarray(batched), np.stack([np.asarray(r) for r in rows]))


def test_dir_of_grad_fn_lists_saved_values():
    A = cr.randn(2, 3, requires_grad=True)
    B = cr.randn(3, 2, requires_grad=True)
    names = dir((A @ B).grad_fn)
    assert "_saved_self" in names and "_saved_mat2" in names
    assert "_saved_result" in dir(A.exp().grad_fn)


def test_pytorch_spellings():
    assert cr.float is cr.float32 and cr.double is cr.float64 and cr.long is cr.int64
    assert cr.float == np.float32 and cr.long == np.int64 and cr.bool == np.bool_
    assert cr.int is cr.int32 and cr.bool is cr.bool_
    assert cr.get_default_dtype() is cr.float64
    # a tensor's dtype is the dtype object itself (PyTorch: x.dtype is torch.float32), so
    # identity tests and dicts keyed by dtype work
    x = cr.ones(2, dtype=cr.float32)
    assert x.dtype is cr.float32 and x.double().dtype is cr.float64
    assert {cr.float32: "single", cr.float64: "double"}[x.dtype] == "single"
    try:
        cr.set_default_dtype(cr.float)
        assert cr.tensor(1.5).dtype == np.float32 and cr.randn(2).dtype == np.float32
        assert cr.zeros(2).dtype == np.float32 and cr.tensor([1, 2]).dtype == np.int64
        assert cr.tensor(np.array([1.5])).dtype == np.float64   # an array keeps its dtype
    finally:
        cr.set_default_dtype(cr.double)
    with pytest.raises(TypeError, match="float32 and float64"):
        cr.set_default_dtype(cr.int)
    assert cr.randn(size=(2,)).shape == (2,) and cr.zeros(size=(2, 3)).shape == (2, 3)
    t = cr.ones(2, device="cpu")
    assert t.cpu() is t
    with pytest.raises(RuntimeError, match="device 'cuda'"):
        cr.zeros(2, device="cuda")
    assert cr.allclose(cr.ones(2), cr.ones(2) + 1e-9) and not cr.equal(cr.ones(2), cr.ones(3))
    np.testing.assert_array_equal(np.asarray(cr.isclose(cr.ones(2), cr.tensor([1.0, 2.0]))),
                                  [True, False])
    a = cr.tensor([1.0, 2.0], requires_grad=True)
    d = cr.dist(a, cr.tensor([4.0, 6.0]))        # ||a - b|| = 5, gradient (a - b) / 5
    d.backward()
    assert float(d) == 5.0
    np.testing.assert_allclose(np.asarray(a.grad), [-0.6, -0.8])


def test_saved_variables_is_a_deprecated_alias():
    class Double(cr.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                (x,) = ctx.saved_variables
            assert caught and issubclass(caught[0].category, DeprecationWarning)
            return g * 2

    x = cr.tensor([1.0], requires_grad=True)
    Double.apply(x).sum().backward()
    np.testing.assert_array_equal(np.asarray(x.grad), [2.0])


def test_explain_composites_says_what_they_record(capsys):
    from chainrule import cli

    assert cli.main(["explain", "outer"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("outer is not a primitive: it records reshape and mul")
    assert "ReshapeBackward0" in out and "MulBackward0" in out   # with those rules
    assert cli.main(["explain", "matrix_power"]) == 0
    assert capsys.readouterr().out.startswith("matrix_power is not a primitive: it records mm")
    assert cli.main(["explain", "mm"]) == 0                       # a primitive: its rules
    assert capsys.readouterr().out.startswith("mm  (graph node MmBackward0)")


def test_make_dot_labels_edges_and_shows_rules():
    pytest.importorskip("graphviz")
    from chainrule.viz import make_dot

    A = cr.randn(2, 3, requires_grad=True)
    B = cr.randn(3, 2, requires_grad=True)
    src = make_dot((A @ B).sum(), params={"A": A, "B": B}, show_rules=True).source
    assert "[label=self]" in src and "[label=mat2]" in src
    assert "self: grad_A = grad @ B^T" in src and "mat2: grad_B = A^T @ grad" in src
    assert "grad_A = grad @ B^T</FONT>" not in make_dot((A @ B).sum()).source


class NumpySqrt(cr.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sqrt()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with np.errstate(divide="ignore"):
            return cr.tensor(g.numpy() / (2 * np.sqrt(x.detach().numpy())))


def test_detect_anomaly_names_the_line_that_made_a_function_node():
    x = cr.tensor([0.0, 1.0], requires_grad=True)
    with cr.autograd.detect_anomaly():
        y = NumpySqrt.apply(x)  # the line the error names
        with pytest.raises(cr.autograd.AnomalyError) as info:
            y.sum().backward()
    assert "NumpySqrtBackward" in str(info.value)
    assert "y = NumpySqrt.apply(x)  # the line the error names" in info.value.where
