"""nn and distributions on a device that refuses host copies (array-api-strict's second
device, which raises where CuPy would): each computation runs on the CPU and on the
device, and the device's outputs, input and parameter gradients and buffers must equal
the CPU's and stay on the device. Every case here failed there before (a host tensor met
a device one, a NumPy dtype or function was applied to device data, a result landed on
the CPU, or the numbers differed)."""

from __future__ import annotations

import copy
import math
import os

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn
from chainrule.nn import functional as F

# CHAINRULE_TEST_DEVICE=cuda:0 runs the same on a GPU (tools/gpu_check.sh); by default
# array-api-strict's second device, which CI has
DEV = os.environ.get("CHAINRULE_TEST_DEVICE", "array_api_strict.device1")
pytest.importorskip("cupy" if DEV.startswith("cuda") else "array_api_strict")

D = cr.distributions


def _host(t):
    return t.detach().cpu().numpy()


def _run(fn, arrays, module, device, seed):
    """``fn(module, *tensors)`` on ``device``: its outputs, the inputs' and parameters'
    gradients and the buffers, as NumPy arrays, and the devices they were on."""
    cr.manual_seed(seed)
    ts = [cr.tensor(a, device=device, requires_grad=np.asarray(a).dtype.kind == "f")
          for a in arrays]
    out = fn(module, *ts)
    outs = [o for o in (out if isinstance(out, (tuple, list)) else [out]) if o is not None]
    got = [_host(o) for o in outs]
    where = [o.device for o in outs]
    diff = [o for o in outs if o.requires_grad]
    if diff:
        sum(((o * 1.5).sum() for o in diff), start=cr.tensor(0.0, device=device)).backward()
        grads = [t.grad for t in ts if t.requires_grad]
        if module is not None:
            grads += [p.grad for p in module.parameters()]
        got += [None if g is None else _host(g) for g in grads]
        where += [g.device for g in grads if g is not None]
    if module is not None:
        got += [_host(b) for b in module.buffers()]
        where += [b.device for b in module.buffers()]
    return got, where


def check(fn, *arrays, module=None, seed=0, rtol=1e-10):
    """The device's results equal the CPU's (module deep-copied and moved with ``to``)."""
    moved = None if module is None else copy.deepcopy(module).to(DEV)
    want, _ = _run(fn, arrays, module, "cpu", seed)
    got, where = _run(fn, arrays, moved, DEV, seed)
    assert all(w == DEV for w in where), where
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if w is None:
            assert g is None
            continue
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-12)
    return got


rng = np.random.default_rng(0)


def R(*shape):
    return rng.standard_normal(shape)


def P(*shape):
    return np.abs(rng.standard_normal(shape)) + 0.5


# --- NumPy dtypes read from device data (numpy_dtype / dtype_kind) -----------------------

def test_pooling_and_interpolation_read_the_dtype_of_device_data():
    x = R(2, 3, 6, 6)
    check(lambda m, x: (F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
                        F.adaptive_avg_pool2d(x, (4, 3)), F.lp_pool2d(x, 2, 2),
                        F.interpolate(x, scale_factor=1.5, mode="area")), x)
    # float32 stays float32 there, as on the CPU
    check(lambda m, x: F.avg_pool1d(x.float(), 2), R(1, 2, 5), rtol=1e-6)


def test_rms_norm_gumbel_softmax_and_ctc_loss_on_a_device():
    check(lambda m, x: F.rms_norm(x.float(), (4,)), R(3, 4), rtol=1e-6)
    check(lambda m, x: F.gumbel_softmax(x, tau=0.5), R(3, 4), seed=3)
    log_probs, targets = R(6, 2, 4), np.array([[1, 2, 2], [3, 1, 0]])
    for reduction in ("mean", "none"):
        check(lambda m, lp, t, r=reduction: F.ctc_loss(lp.log_softmax(2), t, (6, 5), (3, 2),
                                                       reduction=r), log_probs, targets)


def test_affine_grid_and_grid_sample_on_a_device():
    theta = R(2, 2, 3) * 0.5 + np.array([[1.0, 0, 0], [0, 1.0, 0]])
    check(lambda m, t: F.affine_grid(t, [2, 3, 4, 5], align_corners=False), theta)
    # (the input's gradient, a scatter-add, is beyond array-api-strict: the grid's only)
    for mode in ("bilinear", "nearest"):
        for padding_mode in ("zeros", "reflection"):
            check(lambda m, x, g, mode=mode, pm=padding_mode: F.grid_sample(
                x.detach(), g, mode=mode, padding_mode=pm, align_corners=False),
                  R(2, 3, 4, 5), R(2, 3, 3, 2) * 1.2)


def test_attention_masks_of_any_dtype_on_a_device():
    padding = np.array([[0, 0, 0, 1, 1], [0, 0, 0, 0, 1]], dtype=bool)
    check(lambda m, q, k, kpm, am: m(q, k, k, key_padding_mask=kpm, attn_mask=am),
          R(3, 2, 4), R(5, 2, 4), padding, np.tri(3, 5, 1) == 0,
          module=nn.MultiheadAttention(4, 2).double())
    check(lambda m, q, k, kpm, am: m(q, k, k, key_padding_mask=kpm, attn_mask=am),
          R(3, 2, 4), R(5, 2, 4), R(2, 5), R(3, 5), module=nn.MultiheadAttention(4, 2).double())
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.1, batch_first=True).double()
    check(lambda m, x, kpm: m(x, src_key_padding_mask=kpm), R(2, 5, 4), padding,
          module=layer)


# --- host constants that meet the input (beside / device=) -------------------------------

def test_causal_masks_are_made_on_the_device():
    mask = nn.Transformer.generate_square_subsequent_mask(3, device=DEV)
    assert mask.device == DEV
    np.testing.assert_array_equal(_host(mask),
                                  _host(nn.Transformer.generate_square_subsequent_mask(3)))
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0).double()
    check(lambda m, s, t: m(s, t, tgt_mask=nn.Transformer.generate_square_subsequent_mask(
        3, device=s.device)), R(4, 2, 4), R(3, 2, 4), module=model)
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0), 2)
    check(lambda m, x: m(x, mask=nn.Transformer.generate_square_subsequent_mask(
        3, device=x.device), is_causal=True), R(3, 2, 4), module=encoder.double())


def test_losses_and_activations_with_host_made_terms():
    x, t, w = R(5, 4), rng.integers(0, 4, 5), P(4)
    # (values: its pick's gradient is a scatter-add, beyond array-api-strict)
    check(lambda m, x, t, w: F.multi_margin_loss(x.detach(), t, p=2, weight=w.detach(),
                                                 reduction="none"), x, t, w)
    check(lambda m, x, t, v: F.gaussian_nll_loss(x, t, v.abs()), x, R(5, 4), P(5, 4))
    check(lambda m, x: F.rrelu(x, training=True), x, seed=4)


def test_pooling_indices_stay_on_the_device():
    got = check(lambda m, x: F.max_pool2d(x, 2, return_indices=True), R(2, 3, 6, 6))
    assert got[1].dtype == np.int64
    check(lambda m, x: F.max_pool1d_with_indices(x, 3, 2), R(2, 3, 9))


# --- numbers that differed ---------------------------------------------------------------

def test_attention_rows_blocked_entirely_get_zero_weights_on_a_device():
    # PyTorch's _safe_softmax: zero weights, not NaN (was: NaN rows off NumPy)
    mask = np.zeros((3, 5))
    mask[1] = -np.inf
    got = check(lambda m, q, k, v, b: F.scaled_dot_product_attention(q, k, v, attn_mask=b),
                R(2, 3, 4), R(2, 5, 4), R(2, 5, 4), mask)
    assert np.isfinite(got[0]).all() and (got[0][:, 1] == 0).all()
    padding = np.array([[1, 1, 1], [0, 0, 1]], dtype=bool)
    check(lambda m, x, kpm: m(x, x, x, need_weights=False, key_padding_mask=kpm),
          R(3, 2, 4), padding, module=nn.MultiheadAttention(4, 2).double())


def test_the_mean_of_no_counted_class_on_a_device():
    # cross_entropy / nll_loss's 'mean' when every target is ignored: NaN, with zero
    # gradients as PyTorch's (were NaN off NumPy). Their pick's own gradient is a
    # scatter-add, beyond array-api-strict: the mean is checked on a loss made without it
    got = check(lambda m, x, w: F._counted_mean(x * w.detach(), w.detach() * 0), R(3), P(3))
    assert math.isnan(got[0]) and (got[1] == 0).all()
    got = check(lambda m, x, w: F._counted_mean(x * w.detach(), w.detach()), R(3), P(3))
    assert np.isfinite(got[0]) and (got[1] != 0).all()


# --- modules and utilities ---------------------------------------------------------------

def test_initialisers_write_on_the_device():
    def init_all(m, x):
        cr.manual_seed(3)
        nn.init.kaiming_normal_(m.weight)
        nn.init.orthogonal_(m.weight)
        nn.init.trunc_normal_(m.bias)
        nn.init.sparse_(m.weight, 0.5)
        nn.init.constant_(m.bias, 0.3)
        return m(x)

    check(init_all, R(5, 4), module=nn.Linear(4, 3).double())
    check(lambda m, x: (nn.init.dirac_(m.weight), m(x))[1], R(1, 2, 5, 5),
          module=nn.Conv2d(2, 2, 3).double())


def test_clip_grad_norm_and_total_norm_stay_on_the_device():
    def clip(m, x):
        (m(x) ** 2).sum().backward()
        total = nn.utils.clip_grad_norm_(m.parameters(), 0.1)
        inf = nn.utils.get_total_norm([p.grad for p in m.parameters()], "inf")
        return (total, inf) + tuple(p.grad.detach() for p in m.parameters())

    check(clip, R(3, 4), module=nn.Linear(4, 3).double())


def test_spectral_norm_registered_on_a_module_already_on_the_device():
    def spectral(m, x):
        nn.utils.parametrizations.spectral_norm(m)
        return m(x)

    check(spectral, R(3, 4), module=nn.Linear(4, 3).double(), seed=2)


def test_module_state_across_devices():
    x = R(5, 4)
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh()).double()
    on_device = copy.deepcopy(model).to(DEV)
    twin = copy.deepcopy(on_device)  # deepcopy of parameters on the device
    assert all(p.device == DEV for p in twin.parameters())
    fresh = nn.Sequential(nn.Linear(4, 3), nn.Tanh()).double()
    fresh.load_state_dict(on_device.state_dict())  # device values into a CPU model
    assert all(p.device == "cpu" for p in fresh.parameters())
    target = nn.Sequential(nn.Linear(4, 3), nn.Tanh()).double().to(DEV)
    target.load_state_dict(model.state_dict())  # CPU values into a device model
    assert all(p.device == DEV for p in target.parameters())
    want = _host(model(cr.tensor(x)))
    for m, d in ((twin, DEV), (fresh, "cpu"), (target, DEV)):
        np.testing.assert_allclose(_host(m(cr.tensor(x, device=d))), want, rtol=1e-12)
    (target(cr.tensor(x, device=DEV)) ** 2).sum().backward()
    target.zero_grad(set_to_none=False)
    assert all(p.grad.device == DEV and not _host(p.grad).any() for p in target.parameters())
    target.float()  # a dtype change of parameters on the device
    assert all(str(p.dtype).endswith("float32") and p.device == DEV
               for p in target.parameters())
    params = nn.ParameterList([nn.Parameter(cr.tensor(np.ones(2)))]).to(DEV)
    assert "Double" in repr(params) or "float64" in repr(params)


def test_packed_sequence_to_moves_its_permutations():
    pack = nn.utils.rnn.pack_padded_sequence(cr.tensor(R(3, 3, 2)), [3, 1, 2],
                                             enforce_sorted=False)
    moved = pack.to(DEV)
    assert moved.data.device == DEV and moved.batch_sizes.device == "cpu"
    assert moved.sorted_indices.device == DEV and moved.unsorted_indices.device == DEV
    np.testing.assert_array_equal(_host(moved.unsorted_indices), _host(pack.unsorted_indices))
    back = moved.cpu()
    assert back.sorted_indices.device == "cpu"
    inverse = nn.utils.rnn.invert_permutation(moved.sorted_indices)
    assert inverse.device == DEV
    np.testing.assert_array_equal(_host(inverse), _host(pack.unsorted_indices))


# --- distributions -----------------------------------------------------------------------

def test_distributions_with_parameters_on_a_device():
    def dist(make, value):
        def f(m, *params):
            d = make(*params)
            return (d.rsample((2,)) if d.has_rsample else d.sample((2,)),
                    d.log_prob(cr.tensor(value, device=params[0].device)), d.mean,
                    d.entropy())
        return f

    loc, scale = R(3), P(3)
    check(dist(lambda a, b: D.Normal(a, b), R(3)), loc, scale, seed=1)
    check(dist(lambda a: D.Normal(a, 2.0), R(3)), loc, seed=1)  # a number beside a tensor
    check(dist(lambda a: D.Uniform(a, 5.0), np.full(3, 4.0)), loc, seed=1)
    check(dist(lambda r: D.Exponential(r), P(3)), scale, seed=1)
    check(dist(lambda p: D.Bernoulli(probs=p.sigmoid()), np.array([0.0, 1.0, 1.0])), loc,
          seed=1)
    # (log_prob's gradient there is a scatter-add, beyond array-api-strict: values only)
    check(dist(lambda lg: D.Categorical(logits=lg.detach()), np.array([0, 3])), R(2, 4),
          seed=1)
    check(dist(lambda lg: D.OneHotCategorical(logits=lg.detach()), np.eye(4)[[1, 2]]),
          R(2, 4), seed=1)
    check(lambda m, r: D.Poisson(r).sample((3,)), scale, seed=1)
    check(lambda m, c: D.Gamma(c, 2.0).rsample((2,)), scale, seed=1)
    check(dist(lambda a, b: D.Laplace(a, b), R(3)), loc, scale, seed=1)
    check(dist(lambda a, b: D.Cauchy(a, b).expand((2, 3)), R(3)), loc, scale, seed=1)
    check(lambda m, a: (D.Gumbel(a, 1.0).rsample(), D.HalfCauchy(a.abs()).mean), loc, seed=1)
    check(dist(lambda m, a: D.MultivariateNormal(m, scale_tril=a.tril(-1) + cr.diag(
        a.diagonal().abs() + 0.5)), R(3)), loc, R(3, 3), seed=1)
    check(lambda m, a, b: D.kl_divergence(D.Normal(a, b), D.Normal(a * 0.5, b + 1)), loc,
          scale)
    check(lambda m, a: D.constraints.positive.check(a), loc)
