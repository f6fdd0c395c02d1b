"""Ops calls, part 4: creation, Tensor methods, autograd (functional API, forward mode,
func, custom Function).

Each case(name, fn, *arrays) runs fn(ctx, *tensors) on the CPU and on the device (see
harness.case)."""
import numpy as np
from harness import case

import chainrule as cr

rng = np.random.default_rng(3)
A = rng.standard_normal((3, 4))
S = rng.standard_normal((3, 3)) + 3 * np.eye(3)
v3 = rng.standard_normal(3)
pos = rng.uniform(0.5, 2.0, (3, 4))
ints = np.array([3, 1, 2, 3, 0, 1], dtype=np.int64)
F = cr.autograd.functional


def _inpl(x):
    y = x * 1
    y += 1
    y *= 2
    y -= x
    y /= 3
    y.add_(x, alpha=2).mul_(0.5).clamp_(-1, 1)
    return y


def _bw(c, x):
    x = x.detach().requires_grad_()
    x.sin().backward(c.T(np.arange(3.0)))
    return x.grad


def _bw2(c, x):
    x = x.detach().requires_grad_()
    y = x.detach().requires_grad_()
    (x * y).sum().backward(inputs=[x])
    return x.grad


def _fwd(c, x):
    fw = cr.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(x, c.T(np.ones(3)))
        y = (d.sin() * d).sum()
        return fw.unpack_dual(y).tangent


def _fwd2(c, x):
    fw = cr.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(x, c.T(np.ones((3, 4))))
        y = (cr.linalg.norm(d) + d.cumsum(1).sum() + cr.where(d > 0, d, 0.0).sum() + d.max()
             + d.sort(1)[0][:, 0].sum())
        return fw.unpack_dual(y).tangent


class _Sq(cr.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def _cf(x):
    return _Sq.apply(x)


def _cgn(c, x):
    x = x.detach().requires_grad_()
    (x * 5).sum().backward()
    n = cr.nn.utils.clip_grad_norm_([x], 1.0)
    return n, x.grad


def _cgv(c, x):
    x = x.detach().requires_grad_()
    (x * 5).sum().backward()
    cr.nn.utils.clip_grad_value_([x], 1.0)
    return x.grad


def _get_device(c, x):
    # -1 on the CPU, else the device's index (cuda:0 -> 0; a device without one -> 0)
    want = -1 if c.dev is None else cr.device(c.dev).index or 0
    got = (x.get_device(), cr.get_device(x), x[0].get_device())
    return "ok" if got == (want,) * 3 else f"get_device {got}, expected {want}"


def _normal_(c, x):
    # in place, on x's device, with x's shape and dtype (the values are random)
    y = x.detach().clone()
    z = y.normal_()
    return (z is y, z.device == x.device, tuple(z.shape), str(cr.backend.numpy_dtype(z.dtype)),
            bool(cr.isfinite(z).all()), bool((z != x).any()))


def _fixed_point(c, a):
    # z = T(z, a) = 0.5 z + a holds at z = 2 a: the gradient is 2 per entry
    return cr.autograd.fixed_point(lambda z, p: 0.5 * z + p, 2 * a.detach(), a)


def _root(c, a):
    # z^3 - p = 0 at p = a^2 + 1: z = cbrt(p), dz/da = 2 a / (3 z^2)
    p = a * a + 1
    z = c.T(np.cbrt(p.detach().cpu().numpy()))
    return cr.autograd.root(lambda z, p: z * z * z - p, z, p)


# ---- creation
for nm, fn in [("zeros", lambda c: cr.zeros(2, 3, device=c.dev)),
               ("ones", lambda c: cr.ones((2, 3), device=c.dev, dtype=cr.float32)),
               ("full", lambda c: cr.full((2,), 3.0, device=c.dev)),
               ("eye", lambda c: cr.eye(3, device=c.dev)),
               ("arange", lambda c: cr.arange(5, device=c.dev)),
               ("linspace", lambda c: cr.linspace(0, 1, 5, device=c.dev)),
               ("logspace", lambda c: cr.logspace(0, 1, 5, device=c.dev)),
               ("empty", lambda c: cr.empty(2, device=c.dev).shape),
               ("scalar_tensor", lambda c: cr.scalar_tensor(2.0, device=c.dev)),
               ("asarray", lambda c: cr.asarray([1.0, 2.0], device=c.dev)),
               ("as_tensor", lambda c: cr.as_tensor([1.0, 2.0], device=c.dev)),
               ("tensor_dtype", lambda c: cr.tensor(c.T(np.arange(3.0)), dtype=cr.float32)),
               ("tensor_of_tensor", lambda c: cr.tensor(c.T(np.arange(3.0)))),
               ("asarray_t", lambda c: cr.asarray(c.T(np.arange(3.0)), dtype=cr.float32)),
               ]:
    case("c_" + nm, fn, grad=False)
case("zeros_like", lambda c, x: cr.zeros_like(x), A, grad=False)
case("zeros_like_dtype", lambda c, x: cr.zeros_like(x, dtype=cr.int64), A, grad=False)
case("ones_like_dtype", lambda c, x: cr.ones_like(x, dtype=cr.float32), A, grad=False)
case("full_like", lambda c, x: cr.full_like(x, 2.5), A, grad=False)
case("full_like_dtype", lambda c, x: cr.full_like(x, 2, dtype=cr.int64), A, grad=False)
case("empty_like", lambda c, x: cr.empty_like(x).shape, A, grad=False)
case("rand_like", lambda c, x: cr.rand_like(x).shape, A, grad=False)
case("randint_like", lambda c, x: cr.randint_like(x, 5).shape, A, grad=False)
# ---- methods
case("new_zeros", lambda c, x: x.new_zeros(2, 2), A, grad=False)
case("new_ones", lambda c, x: x.new_ones((2,)), A, grad=False)
case("new_full", lambda c, x: x.new_full((2,), 3.0), A, grad=False)
case("new_empty", lambda c, x: x.new_empty(2).shape, A, grad=False)
case("new_tensor", lambda c, x: x.new_tensor([1, 2]), A, grad=False)
case("new_tensor_f", lambda c, x: x.new_tensor([1.5, 2]), A, grad=False)
case("new_zeros_dtype", lambda c, x: x.new_zeros(2, dtype=cr.int64), A, grad=False)
case("to_dtype", lambda c, x: x.to(cr.float32), A)
case("to_dtype_str", lambda c, x: x.to(dtype=cr.int64), A, grad=False)
case("to_other", lambda c, x, y: x.to(y), A, ints, grad=False)
case("type_str", lambda c, x: x.type("torch.FloatTensor"), A)
case("type_dtype", lambda c, x: x.type(cr.float32), A)
case("type_noarg", lambda c, x: x.type(), A, grad=False)
case("type_as", lambda c, x, y: x.type_as(y), A, ints, grad=False)
case("float", lambda c, x: x.float(), A)
case("double", lambda c, x: x.long().double(), A, grad=False)
case("half", lambda c, x: x.half(), A, grad=False)
case("bool", lambda c, x: x.bool(), A, grad=False)
case("int", lambda c, x: x.int(), A, grad=False)
case("item", lambda c, x: x.sum().item(), A, grad=False)
case("tolist", lambda c, x: x.tolist(), A, grad=False)
case("int_call", lambda c, x: int(x[0, 0] * 10), A, grad=False)
case("float_call", lambda c, x: float(x.sum()), A, grad=False)
case("bool_call", lambda c, x: bool(x.sum() > 0), A, grad=False)
case("len", lambda c, x: len(x), A, grad=False)
case("is_floating_point", lambda c, x: x.is_floating_point(), A, grad=False)
case("is_floating_point_i", lambda c, x: x.is_floating_point(), ints, grad=False)
case("element_size", lambda c, x: x.element_size(), A, grad=False)
case("is_nonzero", lambda c, x: cr.is_nonzero(x[0, 0]), A, grad=False)
case("numel", lambda c, x: cr.numel(x), A, grad=False)
case("nelement", lambda c, x: x.nelement(), A, grad=False)
case("get_device", _get_device, A, grad=False)
case("clone", lambda c, x: x.clone(), A)
case("contiguous", lambda c, x: x.contiguous(), A)
case("detach_req", lambda c, x: x.detach().requires_grad_(), A)
case("view_dtype", lambda c, x: x.view(12), A)
case("iter", lambda c, x: list(x), A)
case("reversed", lambda c, x: list(reversed(x)), A)
case("contains", lambda c, x: 3 in x, ints, grad=False)
case("neg_ops", lambda c, x, y: (-x + 2 - y * 3 / y ** 2 // 1 % 1.5), A, pos)
case("rops", lambda c, x: (2 - x) + (2 * x) + (2 / (x + 5)) + (2 ** x), A)
case("matmul_op", lambda c, x, y: x @ y.T, A, pos)
case("cmp_ops", lambda c, x, y: (x < y, x <= 0.5, x == y, x != 0.1), A, pos, grad=False)
case("inplace_ops", lambda c, x: _inpl(x), A)
case("abs_op", lambda c, x: abs(x), A)
case("pow_int_t", lambda c, x: x.long() ** 2, A, grad=False)
case("sum_keepdim", lambda c, x: x.sum(1, keepdim=True), A)
case("max_other", lambda c, x, y: x.max(y), A, pos)
case("bernoulli", lambda c, x: x.bernoulli().shape, pos / 3, grad=False)
case("multinomial", lambda c, x: x.multinomial(2).shape, pos, grad=False)
case("uniform_", lambda c, x: x.detach().clone().uniform_().shape, A, grad=False)
case("normal_", _normal_, A, grad=False)
case("exponential_dev", lambda c, x: x.detach().clone().exponential_().shape, A, grad=False)
case("random_", lambda c, x: x.detach().clone().random_(0, 5).shape, A, grad=False)
case("resize_", lambda c, x: x.detach().clone().resize_(2, 6), A, grad=False)
case("nan_to_num_", lambda c, x: (x / 0).nan_to_num_(posinf=1.0), A, grad=False)
case("index_fill_", lambda c, x: x.detach().clone().index_fill_(0, c.T(np.array([1])), 0.0), A,
     grad=False)
# ---- autograd
case("jacobian", lambda c, x: F.jacobian(lambda a: a.sin() * a.sum(), x), v3)
case("jacobian_vec", lambda c, x: F.jacobian(lambda a: a.sin() * a.sum(), x, vectorize=True), v3,
     grad=False)
case("jacobian_fwd", lambda c, x: F.jacobian(lambda a: a.sin() * a.sum(), x, vectorize=True,
                                             strategy="forward-mode"), v3, grad=False)
case("hessian", lambda c, x: F.hessian(lambda a: (a.sin() * a).sum(), x), v3)
case("vjp", lambda c, x: F.vjp(lambda a: a.sin(), x, c.T(np.ones(3))), v3)
case("vjp_none", lambda c, x: F.vjp(lambda a: a.sin().sum(), x), v3)
case("jvp", lambda c, x: F.jvp(lambda a: a.sin(), x, c.T(np.ones(3))), v3)
case("jvp_none", lambda c, x: F.jvp(lambda a: a.sin().sum(), x[:1].reshape(())), v3)
case("hvp", lambda c, x: F.hvp(lambda a: (a.sin() * a).sum(), x, c.T(np.ones(3))), v3)
case("vhp", lambda c, x: F.vhp(lambda a: (a.sin() * a).sum(), x, c.T(np.ones(3))), v3)
case("grad_go", lambda c, x: cr.autograd.grad(x.sin(), x, grad_outputs=c.T(np.arange(3.0)),
                                              create_graph=True), v3)
case("grad_go_none", lambda c, x: cr.autograd.grad(x.sin().sum(), x, create_graph=True), v3)
case("backward_go", lambda c, x: _bw(c, x), v3, grad=False)
case("backward_inputs", lambda c, x: _bw2(c, x), v3, grad=False)
case("fwd_ad", lambda c, x: _fwd(c, x), v3, grad=False)
case("fwd_ad_ops", lambda c, x: _fwd2(c, x), A, grad=False)
case("gradcheck", lambda c, x: cr.autograd.gradcheck(
    lambda a: (a.sin() * a).sum(), (x.detach().requires_grad_(),)), v3, grad=False)
case("gradgradcheck", lambda c, x: cr.autograd.gradgradcheck(
    lambda a: (a.sin() * a).sum(), (x.detach().requires_grad_(),)), v3, grad=False)
case("gradcheck_fast", lambda c, x: cr.autograd.gradcheck(
    lambda a: a.exp(), (x.detach().requires_grad_(),), fast_mode=True), v3, grad=False)
case("func_grad", lambda c, x: cr.func.grad(lambda a: (a.sin() * a).sum())(x), v3)
case("func_jacrev", lambda c, x: cr.func.jacrev(lambda a: a.sin() * a)(x), v3)
case("func_jacfwd", lambda c, x: cr.func.jacfwd(lambda a: a.sin() * a)(x), v3)
case("func_hessian", lambda c, x: cr.func.hessian(lambda a: (a.sin() * a).sum())(x), v3)
case("func_vmap", lambda c, x: cr.func.vmap(lambda a: a.sin() * a.sum())(x), A)
case("func_vmap_dot", lambda c, x, y: cr.func.vmap(cr.dot)(x, y), A, pos)
case("func_vjp", lambda c, x: cr.func.vjp(lambda a: a.sin(), x)[1](c.T(np.ones(3))), v3)
case("func_jvp", lambda c, x: cr.func.jvp(lambda a: a.sin(), (x,), (c.T(np.ones(3)),)), v3)
case("func_linearize", lambda c, x: cr.func.linearize(lambda a: a.sin(), x)[1](c.T(np.ones(3))), v3)
case("func_grad_and_value", lambda c, x: cr.func.grad_and_value(lambda a: (a.sin()).sum())(x), v3)
case("custom_fn", lambda c, x: _cf(x), v3)
case("checkpoint", lambda c, x: cr.utils.checkpoint.checkpoint(lambda a: a.sin() * 2, x,
                                                               use_reentrant=False), v3)
case("clip_grad_norm", lambda c, x: _cgn(c, x), v3, grad=False)
case("clip_grad_value", lambda c, x: _cgv(c, x), v3, grad=False)
case("implicit_fixed_point", _fixed_point, v3)
case("implicit_root", _root, v3)
