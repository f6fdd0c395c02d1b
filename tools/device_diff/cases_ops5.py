"""Ops calls, part 5: random sampling, dtype promotion and dtype= arguments, vmap,
jacrev and hessian.

Each case(name, fn, *arrays) runs fn(ctx, *tensors) on the CPU and on the device (see
harness.case)."""
import numpy as np
from harness import case

import chainrule as cr

rng = np.random.default_rng(5)
A = rng.standard_normal((3, 4))
A3 = rng.standard_normal((2, 3, 4))
S = rng.standard_normal((3, 3)) + 3 * np.eye(3)
v3 = rng.standard_normal(3)
pos = rng.uniform(0.5, 2.0, (3, 4))
ints = np.array([3, 1, 2, 3, 0, 1], dtype=np.int64)


def shp(t):
    # shape and dtype (the values are random)
    return tuple(t.shape), str(cr.backend.numpy_dtype(t.dtype))


def where(c, t):
    # whether t lies where the call was made: on the CPU, or on c.dev
    right = t.device.type == "cpu" if c.dev is None else t.device == cr.device(c.dev)
    return "right device" if right else f"wrong device {t.device}"


for nm, fn in [("rand", lambda c: cr.rand(2, 3, device=c.dev)),
               ("randn", lambda c: cr.randn(2, 3, device=c.dev, dtype=cr.float32)),
               ("randint", lambda c: cr.randint(0, 5, (4,), device=c.dev)),
               ("randperm", lambda c: cr.randperm(5, device=c.dev)),
               ("normal_t", lambda c: cr.normal(c.T(np.zeros(3)), 1.0)),
               ("normal_std", lambda c: cr.normal(0.0, c.T(np.ones(3)))),
               ("bernoulli_p", lambda c: cr.bernoulli(c.T(np.full(3, 0.5)))),
               ("poisson", lambda c: cr.poisson(c.T(np.full(3, 2.0)))),
               ("multinomial", lambda c: cr.multinomial(c.T(np.ones(4)), 2)),
               ("empty_like_dev", lambda c: cr.empty_like(c.T(np.ones(3)))),
               ("eye_m", lambda c: cr.eye(2, 3, device=c.dev, dtype=cr.int64)),
               ("full_int", lambda c: cr.full((2,), 3, device=c.dev)),
               ("arange_f", lambda c: cr.arange(0, 1, 0.25, device=c.dev)),
               ]:
    case("r_" + nm, lambda c, fn=fn: shp(fn(c)), grad=False)
    case("rdev_" + nm, lambda c, fn=fn: where(c, fn(c)), grad=False)

case("histc_t", lambda c, x: cr.histc(x, bins=3, min=c.T(np.array(-1.0)).item(), max=1.0), A,
     grad=False)
case("narrow_copy", lambda c, x: cr.narrow_copy(x, 1, 1, 2), A)
case("diagonal", lambda c, x: cr.diagonal(x, 1), A)
case("swapaxes", lambda c, x: cr.swapaxes(x, 0, 1), A)
case("t", lambda c, x: cr.t(x), A)
case("positive", lambda c, x: cr.positive(x), A)
case("sum_to_size", lambda c, x: cr.sum_to_size(x, (3, 1)), A)
case("unsafe_chunk", lambda c, x: cr.unsafe_chunk(x, 2, 1), A)
case("dsplit", lambda c, x: cr.dsplit(x, 2), A3)
case("std_unb", lambda c, x: cr.std(x, 1, unbiased=False), A)
case("slogdet", lambda c, x: cr.slogdet(x), S)
case("logdet_t", lambda c, x: x.logdet(), S @ S.T)
case("matrix_exp_t", lambda c, x: x.matrix_exp(), S / 10)
case("max_pool1d", lambda c, x: cr.max_pool1d(x[None], 2), A)
case("avg_pool1d", lambda c, x: cr.avg_pool1d(x[None], 2), A)
case("adaptive_avg", lambda c, x: cr.adaptive_avg_pool1d(x[None], 2), A)
case("adaptive_max", lambda c, x: cr.adaptive_max_pool1d(x[None], 2), A)
case("layer_norm", lambda c, x: cr.layer_norm(x, (4,)), A)
case("group_norm", lambda c, x: cr.group_norm(x[None], 1), A)
case("rms_norm", lambda c, x: cr.rms_norm(x, (4,)), A)
case("conv1d", lambda c, x, w: cr.conv1d(x[None], w), A, rng.standard_normal((2, 3, 2)))
case("conv2d", lambda c, x, w: cr.conv2d(x[None, None], w), A, rng.standard_normal((2, 1, 2, 2)))
case("max_pool2d", lambda c, x: cr.max_pool2d(x[None, None], 2), A)
case("dropout_eval", lambda c, x: cr.nn.functional.dropout(x, 0.5, training=False), A)
case("relu_", lambda c, x: cr.relu_(x.detach().clone()), A, grad=False)
case("threshold_", lambda c, x: cr.threshold_(x.detach().clone(), 0.1, 2.0), A, grad=False)
case("celu_", lambda c, x: cr.celu_(x.detach().clone()), A, grad=False)
case("selu_", lambda c, x: cr.selu_(x.detach().clone()), A, grad=False)
case("softmax_dtype", lambda c, x: cr.softmax(x, 1, dtype=cr.float32), A)
case("log_softmax_dtype", lambda c, x: cr.log_softmax(x, 1, dtype=cr.float32), A)
case("sum_dtype_f32", lambda c, x: x.sum(dtype=cr.float32), A)
case("mean_dtype", lambda c, x: x.mean(dtype=cr.float32), A)
case("cumsum_dtype", lambda c, x: x.cumsum(1, dtype=cr.float32), A)
case("prod_dtype", lambda c, x: x.prod(1, dtype=cr.float32), A)
case("to_dtype_fn", lambda c, x: cr.to_dtype(x, cr.float32), A)
case("result_type", lambda c, x, y: str(cr.backend.numpy_dtype(cr.result_type(x, y))), A, ints,
     grad=False)
case("can_cast", lambda c, x: cr.can_cast(x.dtype, cr.int64), A, grad=False)
case("promote_types", lambda c, x: str(cr.backend.numpy_dtype(
    cr.promote_types(x.dtype, cr.float32))), A, grad=False)
case("finfo", lambda c, x: float(cr.finfo(x.dtype).eps), A, grad=False)
case("iinfo", lambda c, x: int(cr.iinfo(x.dtype).max), ints, grad=False)
case("is_floating_point_fn", lambda c, x: cr.is_floating_point(x), A, grad=False)
case("add_int_float", lambda c, x, y: x + y, A[0, :3], np.array([1, 2, 3]), grad=False)
case("mul_int_float_scalar", lambda c, x: x * 2.5, ints, grad=False)
case("div_int", lambda c, x: x / 2, ints, grad=False)
case("true_divide_int", lambda c, x, y: x / y, ints, ints + 1, grad=False)
case("pow_int_neg", lambda c, x: x ** -1, ints + 1, grad=False)
case("int_float_pow", lambda c, x: x ** 0.5, ints, grad=False)
case("bool_sum", lambda c, x: (x > 0).sum(), A, grad=False)
case("bool_mean_f", lambda c, x: (x > 0).float().mean(), A, grad=False)
case("bool_arith", lambda c, x: (x > 0) + (x < 0), A, grad=False)
case("where_int_float", lambda c, x: cr.where(x > 0, x, 0), A)
case("where_bool_int", lambda c, x, y: cr.where(x > 0, y, 0), A, np.arange(12).reshape(3, 4),
     grad=False)
case("masked_fill_int", lambda c, x: x.masked_fill(x > 1, 0.5), ints, grad=False)
case("clamp_tensor_int", lambda c, x: cr.clamp(x, min=c.T(np.array(1))), ints, grad=False)
case("sort_stable", lambda c, x: cr.sort(x, stable=True), ints, grad=False)
case("argsort_desc", lambda c, x: cr.argsort(x, descending=True, stable=True), ints, grad=False)
case("topk_small", lambda c, x: cr.topk(x, 2, largest=False), A)
case("median_int", lambda c, x: cr.median(x), ints, grad=False)
case("quantile_nograd_lin", lambda c, x: cr.quantile(
    x.detach(), c.T(np.array([0.1, 0.9])), dim=0, interpolation="nearest"), A, grad=False)
case("nanmean_all", lambda c, x: cr.nanmean(x / (x > -0.5)), A, grad=False)
case("vmap_quantile", lambda c, x: cr.func.vmap(lambda r: cr.quantile(r, 0.5))(x), A, grad=False)
case("vmap_sort", lambda c, x: cr.func.vmap(lambda r: r.sort()[0])(x), A)
case("vmap_norm", lambda c, x: cr.func.vmap(cr.linalg.norm)(x), A)
case("vmap_where", lambda c, x: cr.func.vmap(lambda r: cr.where(r > 0, r, 0.0))(x), A)
case("vmap_cumsum", lambda c, x: cr.func.vmap(lambda r: r.cumsum(0))(x), A)
case("vmap_matmul", lambda c, x, y: cr.func.vmap(lambda r: y @ r)(x), A.T, S)
case("vmap_inv", lambda c, x: cr.func.vmap(cr.linalg.inv)(x), np.stack([S, S.T]))
case("jacrev_mat", lambda c, x: cr.func.jacrev(lambda a: a @ a)(x), S)
case("jacfwd_mat", lambda c, x: cr.func.jacfwd(lambda a: (a @ a).sum(0))(x), S)
case("hessian_mat", lambda c, x: cr.func.hessian(lambda a: (a * a).sum())(x), S)
case("grad_int_outputs", lambda c, x: cr.autograd.grad([x.sum(), (x * x).sum()], [x],
                                                       create_graph=True), A)
case("grad_outputs_list", lambda c, x: cr.autograd.grad(
    [x.sin(), x.cos()], [x], grad_outputs=[c.T(np.ones((3, 4))), c.T(np.ones((3, 4)))]), A)
