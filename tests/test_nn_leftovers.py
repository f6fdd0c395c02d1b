"""Leftover nn mismatches with PyTorch found by fuzzing: gradients of the piecewise activations
at NaN, class-index losses with a (1,) target of a (C,) input, empty adaptive pools and
unpools, None for a required Tensor, pickling parametrized modules, requires_grad_ of a
non-bool, PyTorch's type names in Module errors. Each test checks values derived by hand
and, where PyTorch is importable, PyTorch's own answer."""

import copy
import math
import pickle

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn
from chainrule.nn import functional as F

try:
    import torch
except ImportError:
    torch = None

NAN, INF = math.nan, math.inf


def _value_and_grad(fn, values, dtype=cr.float64, **kw):
    x = cr.tensor(values, dtype=dtype, requires_grad=True)
    y = fn(x, **kw)
    (g,) = cr.autograd.grad(y.sum(), x)
    return y.detach().numpy(), g.numpy()


def _torch_bulk(name, value, **kw):
    """PyTorch's value and gradient at ``value`` on its vectorised CPU path (a long tensor;
    the first entry)."""
    x = torch.full((64,), value, dtype=torch.float64, requires_grad=True)
    y = getattr(torch.nn.functional, name)(x, **kw)
    (g,) = torch.autograd.grad(y.sum(), x)
    return y[0].item(), g[0].item()


# --- 1. piecewise activations at NaN, at +-inf and at their kinks ---------------------------

# (function, kwargs, x, value, gradient), derived from the definitions: the gradient passes
# strictly inside the linear pieces only, so it is 0 at the kinks and at NaN
PIECEWISE = [
    ("hardtanh", {}, [NAN, -1.0, 1.0, 0.5, -INF, INF], [NAN, -1.0, 1.0, 0.5, -1.0, 1.0],
     [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]),
    ("relu6", {}, [NAN, 0.0, 6.0, 3.0, INF], [NAN, 0.0, 6.0, 3.0, 6.0], [0.0, 0.0, 0.0, 1.0, 0.0]),
    ("hardsigmoid", {}, [NAN, -3.0, 3.0, 0.0, -INF], [NAN, 0.0, 1.0, 0.5, 0.0],
     [0.0, 0.0, 0.0, 1 / 6, 0.0]),
    ("hardshrink", {}, [NAN, 0.5, -0.5, 0.2, 2.0, -INF], [NAN, 0.0, 0.0, 0.0, 2.0, -INF],
     [0.0, 0.0, 0.0, 0.0, 1.0, 1.0]),
    ("softshrink", {}, [NAN, 0.5, -0.5, 0.2, 2.0, -2.0], [NAN, 0.0, 0.0, 0.0, 1.5, -1.5],
     [0.0, 0.0, 0.0, 0.0, 1.0, 1.0]),
    ("hardtanh", {"min_val": -2.0, "max_val": 3.0}, [NAN, -2.0, 3.0, 0.0],
     [NAN, -2.0, 3.0, 0.0], [0.0, 0.0, 0.0, 1.0]),
]


@pytest.mark.parametrize("name, kw, x, value, grad", PIECEWISE)
def test_piecewise_activation_nan_gives_nan_with_zero_gradient(name, kw, x, value, grad):
    for dtype in (cr.float64, cr.float32):
        y, g = _value_and_grad(getattr(F, name), x, dtype, **kw)
        np.testing.assert_allclose(y, value, rtol=1e-6)
        np.testing.assert_allclose(g, grad, rtol=1e-6)
    if torch is not None:
        for v, ty, tg in zip(x, value, grad):
            np.testing.assert_allclose(_torch_bulk(name, v, **kw), (ty, tg), rtol=1e-6)


@pytest.mark.parametrize("name", ["elu", "selu", "celu"])
def test_elu_family_nan_gradient_is_nan(name):
    # the negative branch's exp(x) at NaN: NaN, as PyTorch's vectorised elu_backward (its
    # scalar tail would give the positive branch's 1)
    y, g = _value_and_grad(getattr(F, name), [NAN, 1.0, -INF])
    assert np.isnan(y[0]) and np.isnan(g[0])
    scale = 1.0507009873554805 if name == "selu" else 1.0
    np.testing.assert_allclose(g[1:], [scale, 0.0])
    if torch is not None:
        ty, tg = _torch_bulk(name, NAN)
        assert math.isnan(ty) and math.isnan(tg)


def test_celu_with_alpha_keeps_its_values_and_gradients():
    y, g = _value_and_grad(F.celu, [-1.0, 2.0, 0.0], alpha=2.0)
    np.testing.assert_allclose(y, [2.0 * math.expm1(-0.5), 2.0, 0.0])
    np.testing.assert_allclose(g, [math.exp(-0.5), 1.0, 1.0])


def test_heaviside_of_nan_is_zero():
    out = cr.heaviside(cr.tensor([NAN, 0.0, -1.0, 2.0, NAN]), cr.tensor([0.5, 0.5, 0.5, 0.5, NAN]))
    np.testing.assert_array_equal(out.numpy(), [0.0, 0.5, 0.0, 1.0, 0.0])
    if torch is not None:
        t = torch.heaviside(torch.tensor([NAN, 0.0, -1.0, 2.0, NAN], dtype=torch.float64),
                            torch.tensor([0.5, 0.5, 0.5, 0.5, NAN], dtype=torch.float64))
        np.testing.assert_array_equal(out.numpy(), t.numpy())


def test_nextafter_gradients_and_signed_zero():
    a = cr.tensor([1.0, 3.0, NAN, 0.0], requires_grad=True)
    b = cr.tensor([2.0, 3.0, 1.0, -0.0], requires_grad=True)
    y = cr.nextafter(a, b)
    ga, gb = cr.autograd.grad(y.sum(), (a, b))
    # d/da is 1 where a != b (NaN included), 0 where they are equal; d/db is 0
    np.testing.assert_array_equal(ga.numpy(), [1.0, 0.0, 1.0, 0.0])
    np.testing.assert_array_equal(gb.numpy(), [0.0, 0.0, 0.0, 0.0])
    v = y.detach().numpy()
    assert v[0] == np.nextafter(1.0, 2.0) and v[1] == 3.0 and np.isnan(v[2])
    assert v[3] == 0.0 and np.signbit(v[3])  # nextafter(0.0, -0.0) is -0.0 (C's: y if x == y)
    # a 0-d float64 other does not promote a float32 input (PyTorch's promotion)
    f = cr.nextafter(cr.tensor([1.0], dtype=cr.float32), cr.tensor(2.0, dtype=cr.float64))
    assert f.dtype == cr.float32 and f.item() == float(np.nextafter(np.float32(1), np.float32(2)))
    if torch is not None:
        ta = torch.tensor([1.0, 3.0, NAN, 0.0], dtype=torch.float64, requires_grad=True)
        tb = torch.tensor([2.0, 3.0, 1.0, -0.0], dtype=torch.float64, requires_grad=True)
        ty = torch.nextafter(ta, tb)
        tga, tgb = torch.autograd.grad(ty.sum(), (ta, tb))
        np.testing.assert_array_equal(ga.numpy(), tga.numpy())
        np.testing.assert_array_equal(gb.numpy(), tgb.numpy())
        assert np.signbit(ty[3].item())


# --- 2. class-index losses: a (C,) input with a target of shape (1,) ------------------------

X1 = [0.3, -1.2, 0.8, 0.1]


def _cross_entropy_by_hand(x, t):
    return math.log(sum(math.exp(v) for v in x)) - x[t]


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_and_nll_accept_a_one_element_target_of_a_1d_input(reduction):
    x = cr.tensor(X1, requires_grad=True)
    ce = F.cross_entropy(x, cr.tensor([2]), reduction=reduction)
    assert ce.shape == ()
    assert ce.item() == pytest.approx(_cross_entropy_by_hand(X1, 2))
    (g,) = cr.autograd.grad(ce, x)
    soft = np.exp(X1) / np.exp(X1).sum()
    np.testing.assert_allclose(g.numpy(), soft - np.eye(4)[2])
    nll = F.nll_loss(x, cr.tensor([2]), reduction=reduction)
    assert nll.shape == () and nll.item() == pytest.approx(-0.8)
    smooth = F.cross_entropy(x, cr.tensor([2]), reduction=reduction, label_smoothing=0.1)
    assert smooth.item() == pytest.approx(
        F.cross_entropy(x, cr.tensor(2), reduction=reduction, label_smoothing=0.1).item())
    if torch is not None:
        tx = torch.tensor(X1, dtype=torch.float64)
        assert ce.item() == pytest.approx(torch.nn.functional.cross_entropy(
            tx, torch.tensor([2]), reduction=reduction).item())
        assert nll.item() == pytest.approx(torch.nn.functional.nll_loss(
            tx, torch.tensor([2]), reduction=reduction).item())


def test_class_index_losses_refuse_other_targets_of_a_1d_input():
    x = cr.tensor(X1)
    for fn in (F.cross_entropy, F.nll_loss):
        with pytest.raises(ValueError, match="For 1D input, 1D target must have size 1, but got "
                                             "target size: 2"):
            fn(x, cr.tensor([2, 1]))
        with pytest.raises(RuntimeError, match="0D or 1D target tensor expected, multi-target "
                                               "not supported"):
            fn(x, cr.tensor([[2]]))
    if torch is not None:
        with pytest.raises(ValueError, match="For 1D input, 1D target must have size 1"):
            torch.nn.functional.cross_entropy(torch.tensor(X1), torch.tensor([2, 1]))


def test_multi_margin_loss_none_keeps_the_targets_shape_for_a_1d_input():
    x = cr.tensor(X1)
    # sum_{i != 2} max(0, 1 - x_2 + x_i) / 4 = (0.5 + 0 + 0.3) / 4
    for target, shape in ((cr.tensor([2]), (1,)), (cr.tensor(2), ())):
        out = F.multi_margin_loss(x, target, reduction="none")
        assert out.shape == shape
        np.testing.assert_allclose(out.numpy(), np.full(shape, 0.2))
    if torch is not None:
        t = torch.nn.functional.multi_margin_loss(torch.tensor(X1), torch.tensor([2]),
                                                  reduction="none")
        assert tuple(t.shape) == (1,)


# --- 3. adaptive pooling to size 0, unpooling to an empty output ---------------------------

@pytest.mark.parametrize("name, shape, size, expected", [
    ("adaptive_avg_pool1d", (2, 3, 5), 0, (2, 3, 0)),
    ("adaptive_avg_pool1d", (3, 5), 0, (3, 0)),
    ("adaptive_avg_pool2d", (2, 3, 5, 4), (0, 2), (2, 3, 0, 2)),
    ("adaptive_avg_pool2d", (3, 5, 4), 0, (3, 0, 0)),
    ("adaptive_max_pool1d", (2, 3, 5), 0, (2, 3, 0)),
    ("adaptive_max_pool2d", (2, 3, 5, 4), (2, 0), (2, 3, 2, 0)),
    ("adaptive_max_pool2d", (3, 5, 4), 0, (3, 0, 0)),
])
def test_adaptive_pool_to_size_zero_is_empty(name, shape, size, expected):
    x = cr.ones(*shape, requires_grad=True)
    out = getattr(F, name)(x, size)
    assert tuple(out.shape) == expected
    (g,) = cr.autograd.grad(out.sum(), x)
    np.testing.assert_array_equal(g.numpy(), np.zeros(shape))
    if "max" in name:
        values, idx = getattr(F, name)(x, size, return_indices=True)
        assert tuple(idx.shape) == expected and idx.dtype == cr.int64
    if torch is not None:
        t = getattr(torch.nn.functional, name)(torch.ones(*shape), size)
        assert tuple(t.shape) == expected


def test_adaptive_pool_refuses_a_negative_size_and_an_empty_input():
    with pytest.raises(RuntimeError, match="elements of output_size must be greater than or "
                                           "equal to 0"):
        F.adaptive_avg_pool2d(cr.ones(1, 2, 3, 3), -1)
    with pytest.raises(RuntimeError, match=r"Expected input to have non-zero size for non-batch "
                                           r"dimensions, but input has sizes \[3, 0, 4\] with "
                                           r"dimension 1 being empty"):
        F.adaptive_max_pool2d(cr.ones(3, 0, 4), 2)


def test_max_unpool_with_an_empty_default_output():
    # (L - 1) stride + kernel - 2 padding = 0 for L = 1, kernel 2, stride 1, padding 1
    x = cr.ones(2, 3, 1, requires_grad=True)
    out = F.max_unpool1d(x, cr.zeros(2, 3, 1, dtype=cr.int64), 2, stride=1, padding=1)
    assert tuple(out.shape) == (2, 3, 0)
    (g,) = cr.autograd.grad(out.sum(), x)
    np.testing.assert_array_equal(g.numpy(), np.zeros((2, 3, 1)))
    out2 = F.max_unpool2d(cr.ones(2, 3, 1, 1), cr.zeros(2, 3, 1, 1, dtype=cr.int64), 2,
                          stride=1, padding=(1, 0))
    assert tuple(out2.shape) == (2, 3, 0, 2)
    with pytest.raises(ValueError, match=r"max_unpooling: output_size must contain non-negative "
                                         r"spatial dimensions, but got output_size\[0\]=-1"):
        F.max_unpool1d(x, cr.zeros(2, 3, 1, dtype=cr.int64), 3, stride=1, padding=2)
    if torch is not None:
        t = torch.nn.functional.max_unpool1d(torch.ones(2, 3, 1), torch.zeros(2, 3, 1).long(),
                                             2, stride=1, padding=1)
        assert tuple(t.shape) == (2, 3, 0)


# --- 4. None where a Tensor is required -----------------------------------------------------

def _none_message(fname, arg, position):
    return (rf"{fname}\(\): argument '{arg}' \(position {position}\) must be Tensor, not "
            r"NoneType")


def test_linear_weight_none_through_functional_call():
    m = nn.Linear(3, 2)
    with pytest.raises(TypeError, match=_none_message("linear", "weight", 2)):
        nn.functional_call(m, {"weight": None}, cr.randn(4, 3))
    with pytest.raises(TypeError, match=_none_message("linear", "input", 1)):
        F.linear(None, cr.randn(2, 3))
    assert F.linear(cr.ones(1, 3), cr.ones(2, 3)).tolist() == [[3.0, 3.0]]  # (still fine)
    if torch is not None:
        with pytest.raises(TypeError, match=_none_message("linear", "weight", 2)):
            torch.func.functional_call(torch.nn.Linear(3, 2), {"weight": None},
                                       (torch.randn(4, 3),))


@pytest.mark.parametrize("fname, args, arg, position", [
    ("bilinear", (cr.ones(2, 3), None, cr.ones(4, 3, 2)), "input2", 2),
    ("prelu", (cr.ones(2, 3), None), "weight", 2),
    ("hardtanh", (None,), "input", 1),
    ("glu", (None,), "input", 1),
    ("softmax", (None, 1), "input", 1),
    ("layer_norm", (None, (4,)), "input", 1),
    ("embedding", (cr.tensor([1]), None), "weight", 1),
    ("cross_entropy", (cr.ones(2, 3), None), "target", 2),
    ("mse_loss", (None, cr.ones(2)), "input", 1),
    ("triplet_margin_loss", (cr.ones(2, 3), cr.ones(2, 3), None), "negative", 3),
    ("scaled_dot_product_attention", (cr.ones(1, 2, 3), None, cr.ones(1, 2, 3)), "key", 2),
    ("conv1d", (cr.ones(1, 2, 5), None), "weight", 2),
    ("max_pool2d", (None, 2), "input", 1),
    ("max_unpool1d", (cr.ones(1, 2, 2), None, 2), "indices", 2),
    ("conv_transpose2d", (None, cr.ones(2, 2, 2, 2)), "input", 1),
    ("grid_sample", (cr.ones(1, 1, 2, 2), None), "grid", 2),
])
def test_none_for_a_required_tensor_is_a_type_error_naming_it(fname, args, arg, position):
    with pytest.raises(TypeError, match=_none_message(fname, arg, position)):
        getattr(F, fname)(*args)


def test_module_weight_none_names_the_convolution():
    for module, x, fname in ((nn.Conv1d(3, 2, 2), cr.randn(4, 3, 5), "conv1d"),
                             (nn.ConvTranspose2d(3, 2, 2), cr.randn(1, 3, 4, 4),
                              "conv_transpose2d")):
        with pytest.raises(TypeError, match=_none_message(fname, "weight", 2)):
            nn.functional_call(module, {"weight": None}, x)


def test_instance_norm_needs_both_running_statistics_or_neither():
    with pytest.raises(ValueError, match="running_mean and running_var must either both be None "
                                         "or neither be None"):
        F.instance_norm(cr.randn(2, 3, 4), cr.zeros(3), None)
    if torch is not None:
        with pytest.raises(ValueError, match="running_mean and running_var must either both"):
            torch.nn.functional.instance_norm(torch.randn(2, 3, 4), torch.zeros(3), None)


# --- 5. pickling a parametrized module ------------------------------------------------------

class _Double(nn.Module):
    def forward(self, x):
        return 2 * x


def test_pickling_a_parametrized_module_is_refused_but_deepcopy_works():
    m = nn.Linear(2, 2)
    nn.utils.parametrize.register_parametrization(m, "weight", _Double())
    with pytest.raises(RuntimeError, match=r"Serialization of parametrized modules is only "
                                           r"supported through state_dict\(\)"):
        pickle.dumps(m)
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules"):
        pickle.dumps(nn.Sequential(m))
    twin = copy.deepcopy(m)
    np.testing.assert_array_equal(twin.weight.detach().numpy(), m.weight.detach().numpy())
    assert twin.parametrizations.weight.original is not m.parametrizations.weight.original
    nn.utils.parametrize.remove_parametrizations(m, "weight")
    assert isinstance(pickle.loads(pickle.dumps(m)), nn.Linear)
    if torch is not None:
        class TDouble(torch.nn.Module):
            def forward(self, x):
                return 2 * x

        tm = torch.nn.Linear(2, 2)
        torch.nn.utils.parametrize.register_parametrization(tm, "weight", TDouble())
        with pytest.raises(RuntimeError, match="Serialization of parametrized modules"):
            pickle.dumps(tm)


# --- 6. requires_grad_ of a non-bool --------------------------------------------------------

@pytest.mark.parametrize("value, kind", [(1, "int"), (0, "int"), (1.0, "float"),
                                         (None, "NoneType")])
def test_requires_grad_refuses_a_non_bool(value, kind):
    x = cr.zeros(2)
    with pytest.raises(TypeError, match=rf"requires_grad_\(\): argument 'requires_grad' "
                                        rf"\(position 1\) must be bool, not {kind}"):
        x.requires_grad_(value)
    assert x.requires_grad_(True).requires_grad and not x.requires_grad_(False).requires_grad
    if torch is not None:
        with pytest.raises(TypeError, match=f"must be bool, not {kind}"):
            torch.zeros(2).requires_grad_(value)


# --- 7. PyTorch's type names in Module errors -----------------------------------------------

@pytest.mark.parametrize("dtype, name", [(cr.float64, "DoubleTensor"), (cr.float32, "FloatTensor"),
                                         (cr.int64, "LongTensor"), (cr.bool_, "BoolTensor")])
def test_assignment_errors_name_the_legacy_tensor_type(dtype, name):
    m = nn.Module()
    m.w = nn.Parameter(cr.ones(2))
    with pytest.raises(TypeError, match=rf"cannot assign 'torch\.{name}' as parameter 'w' "
                                        r"\(torch\.nn\.Parameter or None expected\)"):
        m.w = cr.ones(2, dtype=dtype)


def test_load_state_dict_size_mismatch_shows_torch_size():
    net = nn.Linear(3, 3)
    sd = net.state_dict()
    sd["weight"] = cr.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"size mismatch for weight: copying a param with "
                                           r"shape torch\.Size\(\[2, 3\]\) from checkpoint, the "
                                           r"shape in current model is torch\.Size\(\[3, 3\]\)\."):
        net.load_state_dict(sd)
    if torch is not None:
        tn = torch.nn.Linear(3, 3)
        tsd = tn.state_dict()
        tsd["weight"] = torch.zeros(2, 3)
        with pytest.raises(RuntimeError, match=r"torch\.Size\(\[2, 3\]\) from checkpoint, "
                                               r"the shape in current model is "
                                               r"torch\.Size\(\[3, 3\]\)"):
            tn.load_state_dict(tsd)


def test_requires_grad_setter_and_variable_take_torchs_types():
    # x.requires_grad = 1 raises RuntimeError (the setter's message); Variable takes any
    # truthy requires_grad, as torch's
    x = cr.ones(2)
    with pytest.raises(RuntimeError, match="requires_grad must be a bool"):
        x.requires_grad = 1
    assert not x.requires_grad
    assert cr.autograd.Variable(cr.ones(2), requires_grad=1).requires_grad
    if torch is not None:
        assert torch.autograd.Variable(torch.ones(2), requires_grad=1).requires_grad


def test_top_level_spellings_of_nn_functions():
    # torch.selu, torch.threshold, torch.dropout(x, p, train), ... are top-level names too
    x = cr.tensor([[-2.0, -0.25, 0.0, 0.75]])
    assert cr.threshold(x, 0.5, 9.0).tolist() == [[9.0, 9.0, 9.0, 0.75]]
    assert cr.hardshrink(x, 0.5).tolist() == [[-2.0, 0.0, 0.0, 0.75]]
    assert cr.dropout(x, 0.9, False).tolist() == x.tolist()  # train=False: the identity
    np.testing.assert_allclose(cr.selu(x).numpy(), F.selu(x).numpy())
    np.testing.assert_allclose(cr.celu(x, 2.0).numpy(),
                               np.where(x.numpy() > 0, x.numpy(), 2 * np.expm1(x.numpy() / 2)))
    assert cr.pdist(cr.tensor([[0.0, 0.0], [3.0, 4.0]])).tolist() == [5.0]
    if torch is not None:
        tx = torch.tensor(x.numpy())
        assert torch.threshold(tx, 0.5, 9.0).tolist() == cr.threshold(x, 0.5, 9.0).tolist()


def test_dropout2d_masks_as_torch_2_13_for_each_rank():
    # feature_dropout on the input as given: (N, C) drops single entries (it dropped whole
    # rows: whole samples), (N, C, L) drops (n, c) rows (it dropped whole dim-0 slices),
    # (N, C, H, W) drops (n, c) planes
    import warnings

    cr.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z2 = (F.dropout2d(cr.ones(200, 64), 0.5, training=True) == 0).numpy()
        z3 = (F.dropout2d(cr.ones(4, 50, 6), 0.5, training=True) == 0).numpy()
    z4 = (F.dropout2d(cr.ones(4, 50, 3, 3), 0.5, training=True) == 0).numpy()
    assert not (z2.all(1) | ~z2.any(1)).any()  # no row is all kept or all dropped
    assert (z3.all(2) | ~z3.any(2)).all()  # each (n, c) row is one draw
    assert not (z3.reshape(4, -1).all(1) | ~z3.reshape(4, -1).any(1)).any()
    assert (z4.reshape(4, 50, -1).all(2) | ~z4.reshape(4, 50, -1).any(2)).all()
    assert 0.4 < z2.mean() < 0.6
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        F.dropout2d(cr.ones(3, 4), 0.5, training=True)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        F.dropout2d(cr.ones(5), 0.5, training=True)


def test_common_script_imports_and_device_queries():
    # import torch.backends.cudnn as cudnn / torch.distributed as dist, torch.accelerator,
    # Tensor.is_xpu, nn.DataParallel (one device: the module itself)
    import chainrule.backends.cudnn as cudnn
    import chainrule.distributed as dist

    from chainrule.nn.parallel import DistributedDataParallel

    cudnn.benchmark = True
    assert cr.backends.cudnn.benchmark is True
    cudnn.benchmark = False
    assert dist.is_available() is False
    assert cr.accelerator.is_available() == cr.cuda.is_available()
    assert cr.zeros(2).is_xpu is False and cr.zeros(2).is_mps is False
    lin = nn.Linear(3, 2)
    dp = nn.DataParallel(lin)
    x = cr.ones(1, 3)
    assert dp(x).tolist() == lin(x).tolist()
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    with pytest.raises(RuntimeError, match="no torch.distributed"):
        DistributedDataParallel(lin)


def test_batch_norm_training_under_vmap_refuses_to_update_unbatched_stats():
    # each sample would update the running stats in place (silently, one after another):
    # PyTorch raises; eval mode and track_running_stats=False work
    from chainrule import func

    bn = nn.BatchNorm1d(3)
    x = cr.randn(4, 5, 3)
    with pytest.raises(RuntimeError, match="running_mean or running_var"):
        func.vmap(lambda v: bn(v).sum())(x)
    assert bn.running_mean.tolist() == [0.0, 0.0, 0.0]
    bn.eval()
    out = func.vmap(lambda v: bn(v).sum())(x)
    np.testing.assert_allclose(out.detach().numpy(), (x.numpy() / np.sqrt(1 + 1e-5)).sum((1, 2)))
    free = nn.BatchNorm1d(3, track_running_stats=False)
    assert tuple(func.vmap(lambda v: free(v).sum())(x).shape) == (4,)
    if torch is not None:
        tbn = torch.nn.BatchNorm1d(3)
        with pytest.raises(RuntimeError, match="running_mean or running_var"):
            torch.func.vmap(lambda v: tbn(v).sum())(torch.randn(4, 5, 3))
