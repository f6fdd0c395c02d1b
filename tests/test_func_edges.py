"""Edges of the transforms that an adversarial probe of ``chainrule.func`` against
``torch.func`` found (2026-11-28): complex values, which chainrule does not differentiate,
reaching a gradient as zeros or with their imaginary part dropped; integer outputs given a
zero cotangent where torch.func refuses them; pytree containers rebuilt as plain lists and
dicts. Each test asserts values derived by hand; torch, when importable, is compared too."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import chainrule as cr
from chainrule import func as F
from chainrule.autograd import functional as AF

try:
    import torch
except ImportError:  # the tests' own assertions do not need it
    torch = None

Z = np.array([1 + 2j, 3 - 1j])
X = np.array([0.3, -1.2, 0.7])
REAL_VALUED = "chainrule is real-valued"


# --- complex inputs and outputs: raise, never a silent zero --------------------------------

@pytest.mark.parametrize("call", [
    lambda: F.grad(lambda z: (z * z.conj()).real.sum())(cr.tensor(Z)),
    lambda: F.grad_and_value(lambda z: (z.real ** 2).sum())(cr.tensor(Z)),
    lambda: F.vjp(lambda z: z.real * 2, cr.tensor(Z))[1](cr.ones(2)),
    lambda: F.jacrev(lambda z: z.real * 2)(cr.tensor(Z)),
    lambda: F.vmap(F.grad(lambda z: z.real ** 2))(cr.tensor(Z)),
    lambda: AF.jacobian(lambda z: z.real * 2, cr.tensor(Z)),
    lambda: AF.vjp(lambda z: (z.real * 2).sum(), cr.tensor(Z)),
    lambda: AF.hessian(lambda z: (z.real ** 2).sum(), cr.tensor(Z)),
], ids=["grad", "grad_and_value", "vjp", "jacrev", "vmap_grad", "AF.jacobian", "AF.vjp",
        "AF.hessian"])
def test_a_complex_input_to_differentiate_raises(call):
    # before: grad of |z|^2 written (z * conj z).real gave 0 (PyTorch: 2z)
    with pytest.raises(RuntimeError, match="complex128. " + REAL_VALUED):
        call()


def test_the_real_and_imaginary_parts_as_two_real_inputs_give_the_gradient():
    # |z|^2 = a^2 + b^2: d/da = 2a, d/db = 2b, PyTorch's conjugate Wirtinger gradient 2z
    # packs the same numbers as 2a + 2bi
    ga, gb = F.grad(lambda a, b: (a * a + b * b).sum(), argnums=(0, 1))(
        cr.tensor(Z.real), cr.tensor(Z.imag))
    np.testing.assert_allclose(ga.numpy() + 1j * gb.numpy(), 2 * Z)
    if torch is not None:
        g = torch.func.grad(lambda z: (z * z.conj()).real.sum())(torch.tensor(Z))
        np.testing.assert_allclose(ga.numpy() + 1j * gb.numpy(), g.numpy())


def test_a_custom_function_with_a_complex_output_raises_unless_non_differentiable():
    class Rotate(cr.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * (1 + 1j)

        @staticmethod
        def backward(ctx, g):
            return (g * (1 - 1j)).real

    class RotateMarked(Rotate):
        @staticmethod
        def forward(ctx, x):
            y = x * (1 + 1j)
            ctx.mark_non_differentiable(y)
            return y

    x = cr.tensor(X, requires_grad=True)
    # before: the output was taken as constant, so (y.real + x).sum() had gradient 1, not 2
    with pytest.raises(RuntimeError, match=r"Rotate: output 0 is complex \(complex128\)"):
        Rotate.apply(x)
    assert x.grad is None and cr.is_grad_enabled()
    y = RotateMarked.apply(x)  # said to be constant: allowed
    assert not y.requires_grad
    np.testing.assert_allclose(y.numpy(), X * (1 + 1j))
    with cr.no_grad():  # nothing recorded: allowed
        np.testing.assert_allclose(Rotate.apply(x).numpy(), X * (1 + 1j))


@pytest.mark.parametrize("cotangent", [cr.tensor(np.array([1 + 1j, 2j, 1])),
                                       np.array([1 + 0j, 2, 3])])
def test_a_complex_cotangent_for_a_real_output_raises(cotangent):
    x = cr.tensor(X, requires_grad=True)
    # before: its imaginary part was dropped (the gradient of sin at [1+1j, 2j, 1] came out
    # as cos(x) * [1, 0, 1])
    msg = "grad_output and output are required to have the same dtype"
    with pytest.raises(RuntimeError, match=msg):
        x.sin().backward(cotangent)
    with pytest.raises(RuntimeError, match=msg):
        cr.autograd.grad(x.sin(), x, cotangent)
    assert x.grad is None
    x.sin().backward(cr.tensor([1.0, 0.0, 1.0]))  # a real one works
    np.testing.assert_allclose(x.grad.numpy(), np.cos(X) * [1, 0, 1])
    if torch is not None:
        tx = torch.tensor(X, requires_grad=True)
        with pytest.raises(RuntimeError, match=msg):
            tx.sin().backward(torch.tensor(np.asarray(cotangent)))


# --- integer outputs: vjp and jacrev refuse them, as torch.func ------------------------------

@pytest.mark.parametrize("call", [
    lambda f, x: F.vjp(f, x),
    lambda f, x: F.jacrev(f)(x),
    lambda f, x: F.hessian(lambda v: f(v).sum())(x),
    lambda f, x: F.jacrev(lambda v: (v.sin(), f(v)))(x),
    lambda f, x: AF.jacobian(f, x),
], ids=["vjp", "jacrev", "hessian", "jacrev_mixed", "AF.jacobian"])
def test_an_integer_output_has_no_cotangent(call):
    msg = ("vjp\\(f, ...\\): All outputs of f must be floating-point or complex Tensors, got "
           "Tensor with dtype int64")
    with pytest.raises(RuntimeError, match=msg):
        call(lambda v: (v * 2).long(), cr.tensor(X))
    if torch is not None:  # torch.func's message, which chainrule's copies
        with pytest.raises(RuntimeError, match=msg.replace("int64", "torch.int64")):
            torch.func.vjp(lambda v: (v * 2).long(), torch.tensor(X))


def test_forward_mode_and_grad_of_integer_outputs_still_give_zero_derivatives():
    # torch.func also answers these: an integer output is piecewise constant
    x = cr.tensor(X)
    out, tangent = F.jvp(lambda v: (v * 2).long(), (x,), (cr.ones(3),))
    np.testing.assert_array_equal(out.numpy(), (X * 2).astype(np.int64))
    np.testing.assert_array_equal(tangent.numpy(), 0)
    np.testing.assert_array_equal(F.jacfwd(lambda v: (v * 2).long())(x).numpy(), np.zeros((3, 3)))
    np.testing.assert_array_equal(F.grad(lambda v: (v * 2).long().sum())(x).numpy(), 0)


# --- pytrees keep their containers ---------------------------------------------------------

def test_vmap_returns_named_results_as_they_are():
    rng = np.random.default_rng(3)
    M = rng.standard_normal((4, 3, 3)) + 3 * np.eye(3)
    r = F.vmap(cr.linalg.slogdet)(cr.tensor(M))
    assert type(r).__name__ == "linalg_slogdet"  # was a list: r.logabsdet failed
    sign, logabsdet = np.linalg.slogdet(M)
    np.testing.assert_allclose(r.logabsdet.numpy(), logabsdet)
    np.testing.assert_allclose(r.sign.numpy(), sign)
    m = F.vmap(lambda a: cr.max(a, 0))(cr.tensor(M))
    np.testing.assert_array_equal(m.indices.numpy(), M.argmax(1))
    if torch is not None:
        tr = torch.func.vmap(torch.linalg.slogdet)(torch.tensor(M))
        np.testing.assert_allclose(r.logabsdet.numpy(), tr.logabsdet.numpy())


def test_grad_keeps_namedtuple_and_ordereddict_parameters():
    Params = collections.namedtuple("Params", "w b")
    w, b = np.array([0.5, -2.0]), np.array([3.0])
    # L = b * sum(w^2): dL/dw = 2 b w, dL/db = sum(w^2)
    g = F.grad(lambda p: p.b.sum() * (p.w ** 2).sum())(Params(cr.tensor(w), cr.tensor(b)))
    assert isinstance(g, Params)
    np.testing.assert_allclose(g.w.numpy(), 2 * b * w)
    np.testing.assert_allclose(g.b.numpy(), [(w ** 2).sum()])
    od = collections.OrderedDict(w=cr.tensor(w), b=cr.tensor(b))
    g = F.grad(lambda d: d["b"].sum() * (d["w"] ** 2).sum())(od)
    assert type(g) is collections.OrderedDict and list(g) == ["w", "b"]
    np.testing.assert_allclose(g["w"].numpy(), 2 * b * w)


# --- linearize checks its tangents as torch.func.linearize ---------------------------------

def test_linearize_refuses_tangents_of_another_shape_or_dtype():
    x = cr.tensor(X)
    out, jvp_fn = F.linearize(lambda v: v.sin() * v, x)
    np.testing.assert_allclose(out.numpy(), np.sin(X) * X)
    # d/dx (x sin x) = sin x + x cos x
    np.testing.assert_allclose(jvp_fn(cr.ones(3)).numpy(), np.sin(X) + X * np.cos(X))
    with pytest.raises(RuntimeError, match=r"tangent:0 with shape \(2,\) in flattened pytree "
                                           r"doesn't match the shape \(3,\)"):
        jvp_fn(cr.ones(2))
    with pytest.raises(RuntimeError, match="tangent:0 with dtype float32 in flattened pytree "
                                           "doesn't match the dtype float64"):
        jvp_fn(cr.ones(3, dtype=cr.float32))
    if torch is not None:
        _, tfn = torch.func.linearize(lambda v: v.sin() * v, torch.tensor(X))
        with pytest.raises(RuntimeError, match="doesn't match the dtype"):
            tfn(torch.ones(3, dtype=torch.float32))


def test_a_custom_backward_may_return_integer_gradients_but_not_complex_ones():
    def make(grad):
        class Twice(cr.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return grad

        return Twice

    # an integer or bool gradient is cast to the input's dtype, as PyTorch's engine does
    # (before: TypeError)
    for grad in (cr.tensor([1, 2, 3]), cr.tensor([True, False, True])):
        x = cr.tensor(X, requires_grad=True)
        make(grad).apply(x).sum().backward()
        assert x.grad.dtype == cr.float64
        np.testing.assert_array_equal(x.grad.numpy(), grad.numpy().astype(float))
    x = cr.tensor(X, requires_grad=True)
    with pytest.raises(TypeError, match="gradient of dtype complex128 for input 0"):
        make(cr.tensor(Z.tolist() + [0j])).apply(x).sum().backward()
    assert x.grad is None


@pytest.mark.parametrize("call, where", [
    (lambda f, x: F.vjp(f, x), "vjp"), (lambda f, x: F.jacrev(f)(x), "vjp"),
    (lambda f, x: F.jvp(f, (x,), (cr.ones(3),)), "jvp"), (lambda f, x: F.jacfwd(f)(x), "jvp"),
], ids=["vjp", "jacrev", "jvp", "jacfwd"])
@pytest.mark.parametrize("other", [None, 2.0, "s"], ids=["None", "float", "str"])
def test_an_output_that_is_not_a_tensor_raises_as_torch_func(call, where, other):
    # before: jacrev and jacfwd gave None (and a number) a zero Jacobian, vjp and jvp failed
    # with AttributeError
    with pytest.raises(RuntimeError, match=f"{where}\\(f, .*expected f\\(\\*primals\\) to "
                                           "return only tensors, got unsupported type"):
        call(lambda v: (v.sin(), other), cr.tensor(X))
    # a function returning tensors only: the Jacobian of sin is diag(cos x)
    J = F.jacrev(lambda v: v.sin())(cr.tensor(X))
    np.testing.assert_allclose(J.numpy(), np.diag(np.cos(X)))
    if torch is not None:
        with pytest.raises(RuntimeError, match="to return only tensors"):
            torch.func.jacrev(lambda v: (v.sin(), other))(torch.tensor(X))


def test_tangents_and_cotangents_must_match_the_structure_they_stand_for():
    x = cr.tensor(X)
    # before: a primal given two tangents took the first silently
    with pytest.raises(RuntimeError, match="Expected primals and tangents to have the same "
                                           "python structure"):
        F.jvp(lambda v: v.sin(), (x,), ((x, x),))
    with pytest.raises(RuntimeError, match="pytree structure of cotangents"):
        F.vjp(lambda v: (v, v * 2), x)[1](x)  # one cotangent for two outputs
    # matching ones: J t = cos(x) t, and u^T J = u1 + 2 u2 for outputs (x, 2x)
    _, t = F.jvp(lambda v: v.sin(), (x,), (cr.ones(3),))
    np.testing.assert_allclose(t.numpy(), np.cos(X))
    (g,) = F.vjp(lambda v: (v, v * 2), x)[1]((cr.ones(3), cr.ones(3)))
    np.testing.assert_allclose(g.numpy(), np.full(3, 3.0))
    if torch is not None:
        tx = torch.tensor(X)
        with pytest.raises(RuntimeError, match="same python structure"):
            torch.func.jvp(lambda v: v.sin(), (tx,), ((tx, tx),))


def test_vmap_over_an_empty_batch_gives_empty_results_of_the_right_shape():
    # jacrev inside vmap has no batched whole-batch evaluation here; over an empty batch
    # there is no sample to evaluate either (before: RuntimeError). One sample's Jacobian of
    # sin on R^3 is 3 x 3, so the batch of none is 0 x 3 x 3 (PyTorch's shape)
    J = F.vmap(F.jacrev(lambda v: v.sin()))(cr.zeros(0, 3))
    assert tuple(J.shape) == (0, 3, 3) and J.dtype == cr.float64
    J = F.vmap(F.jacrev(lambda v: v.sin()), out_dims=1)(cr.zeros(0, 3))
    assert tuple(J.shape) == (3, 0, 3)
    # the same function over a batch of two: diag(cos x) per sample
    J2 = F.vmap(F.jacrev(lambda v: v.sin()))(cr.tensor(np.stack([X, 2 * X])))
    np.testing.assert_allclose(J2.numpy(), np.stack([np.diag(np.cos(X)), np.diag(np.cos(2 * X))]))
    if torch is not None:
        tJ = torch.func.vmap(torch.func.jacrev(lambda v: v.sin()))(torch.zeros(0, 3))
        assert tuple(tJ.shape) == (0, 3, 3)


def test_autograd_functional_hessian_hvp_and_a_default_v_want_a_scalar_function():
    x = cr.tensor(X)
    cube_sum = lambda v: (v ** 3).sum()  # noqa: E731  Hessian diag(6x)
    # hessian of a vector function raised nothing (it returned the 3-tensor of second
    # derivatives); PyTorch's autograd.functional.hessian wants one element
    with pytest.raises(RuntimeError, match="function given to hessian should contain a "
                                           "single element"):
        AF.hessian(lambda v: v ** 3, x)
    with pytest.raises(RuntimeError, match="function given to hvp should contain"):
        AF.hvp(lambda v: v ** 3, x, x)
    with pytest.raises(RuntimeError, match="function given to vhp should contain"):
        AF.vhp(lambda v: v ** 3, x, x)
    # vjp without v of a vector function used ones (a sum of the rows): v is needed
    with pytest.raises(RuntimeError, match="v can only be None if the user-provided function "
                                           "returns a single Tensor with a single element"):
        AF.vjp(lambda v: v ** 3, x)
    # one element in any shape is a scalar: the Hessian keeps the input's shape twice
    np.testing.assert_allclose(AF.hessian(lambda v: cube_sum(v).reshape(1), x).numpy(),
                               np.diag(6 * X))
    np.testing.assert_allclose(AF.hvp(cube_sum, x, cr.ones(3))[1].numpy(), 6 * X)
    np.testing.assert_allclose(AF.vjp(cube_sum, x)[1].numpy(), 3 * X ** 2)
    if torch is not None:
        th = torch.autograd.functional.hessian(lambda v: (v ** 3).sum().reshape(1),
                                               torch.tensor(X))
        np.testing.assert_allclose(th.numpy(), np.diag(6 * X))
        with pytest.raises(RuntimeError, match="should contain a single element"):
            torch.autograd.functional.hessian(lambda v: v ** 3, torch.tensor(X))


def test_autograd_flags_and_the_legacy_inplace_function_base():
    A = cr.autograd
    assert A.is_multithreading_enabled() and not A.is_view_replay_enabled()
    with A.set_multithreading_enabled(False):  # recorded; backward runs on this thread anyway
        assert not A.is_multithreading_enabled()
        x = cr.tensor(X, requires_grad=True)
        (x ** 2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * X)
    assert A.is_multithreading_enabled()

    class Twice(cr.autograd.function.InplaceFunction):
        @staticmethod
        def forward(ctx, v):
            return v * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = cr.tensor(X, requires_grad=True)
    Twice.apply(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2.0)
    assert Twice.inplace is False


def test_rearrange_as_einops():
    img = np.arange(4 * 6 * 8 * 3, dtype=float).reshape(4, 6, 8, 3)
    x = cr.tensor(img)
    cases = [  # pattern, lengths, the same by NumPy
        ("b h w c -> (b h) w c", {}, img.reshape(24, 8, 3)),
        ("b h w c -> b c h w", {}, img.transpose(0, 3, 1, 2)),
        ("b h w c -> b (c h w)", {}, img.transpose(0, 3, 1, 2).reshape(4, -1)),
        ("b (h1 h) (w1 w) c -> (b h1 w1) h w c", dict(h1=2, w1=2),
         img.reshape(4, 2, 3, 2, 4, 3).transpose(0, 1, 3, 2, 4, 5).reshape(16, 3, 4, 3)),
        ("b ... c -> b c ...", {}, np.moveaxis(img, 3, 1)),
        ("b h w c -> b h w c 1", {}, img[..., None]),
    ]
    for pattern, lengths, want in cases:
        np.testing.assert_array_equal(F.rearrange(x, pattern, **lengths).numpy(), want)
    # a list is stacked first; the result is differentiable: d/dx_i sum(w * y) = w's entries
    xs = [cr.tensor(img[0, 0], requires_grad=True) for _ in range(3)]
    y = F.rearrange(xs, "n w c -> w (n c)")
    w = np.arange(72.0).reshape(8, 9)
    (y * cr.tensor(w)).sum().backward()
    np.testing.assert_array_equal(xs[1].grad.numpy(), w[:, 3:6])
    for bad in ("b h w -> b h w", "b h w c -> b h c", "b (h1 h) w c -> b h w c"):
        with pytest.raises(ValueError, match="rearrange"):
            F.rearrange(x, bad)
    if torch is not None:
        np.testing.assert_array_equal(
            torch.func.rearrange(torch.tensor(img), cases[3][0], **cases[3][1]).numpy(),
            cases[3][2])
