"""chainrule.nn's MultiheadAttention and transformer layers: against NumPy and against their
own definitions (masks, shapes, causality, dropout, errors, gradcheck), then against torch
(outputs, attention weights and gradients, parameters copied by name)."""

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn
from chainrule.autograd import gradcheck, gradgradcheck
from chainrule.nn.transformer import multi_head_attention_forward

try:
    import torch
except ImportError:
    torch = None

RNG = np.random.default_rng(2024)


def _randn(*shape):
    return cr.tensor(RNG.standard_normal(shape))


def _np(t):
    return t.detach().numpy()


def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _randomise(module):
    """Random values for every parameter (biases start at zero)."""
    module.load_state_dict({k: RNG.standard_normal(tuple(v.shape))
                            for k, v in module.state_dict().items()})
    return module


def _params_call(module, *inputs, **kwargs):
    """``(f, args)``: ``f(*inputs, *params)`` runs ``module`` with the given parameters, for
    gradcheck."""
    names = [n for n, _ in module.named_parameters()]
    params = [p.detach().clone().requires_grad_() for p in module.parameters()]

    def f(*args):
        xs, ps = args[:len(inputs)], args[len(inputs):]
        return nn.functional_call(module, dict(zip(names, ps)), xs, kwargs)
    return f, (*inputs, *params)


def _batch_of_one_is_unbatched(module, *inputs, batch_dim=1, **kwargs):
    """A module's output for unbatched inputs is its batched output's slice."""
    full = module(*inputs, **kwargs)
    one = module(*(x.select(batch_dim, 0) for x in inputs), **kwargs)
    np.testing.assert_allclose(_np(one), _np(full.select(batch_dim, 0)), rtol=1e-12,
                               atol=1e-13)


# --- without torch -------------------------------------------------------------------------

def test_one_head_is_softmax_qk_v_then_out_proj():
    m = _randomise(nn.MultiheadAttention(4, 1))
    q, k, v = _randn(3, 2, 4), _randn(5, 2, 4), _randn(5, 2, 4)
    out, w = m(q, k, v)
    wq, wk, wv = np.split(_np(m.in_proj_weight), 3)
    bq, bk, bv = np.split(_np(m.in_proj_bias), 3)
    for n in range(2):
        Q, K, V = (_np(x)[:, n] @ w_.T + b_ for x, w_, b_ in ((q, wq, bq), (k, wk, bk),
                                                             (v, wv, bv)))
        A = _softmax(Q @ K.T / np.sqrt(4))
        expected = (A @ V) @ _np(m.out_proj.weight).T + _np(m.out_proj.bias)
        np.testing.assert_allclose(_np(out)[:, n], expected, rtol=1e-12)
        np.testing.assert_allclose(_np(w)[n], A, rtol=1e-12)


def test_weights_are_distributions_and_masked_keys_get_none():
    m = nn.MultiheadAttention(6, 3)
    L, S, N, H = 4, 5, 2, 3
    q, kv = _randn(L, N, 6), _randn(S, N, 6)
    attn = RNG.random((L, S)) < 0.4
    attn[:, 0] = False
    kpm = np.zeros((N, S), bool)
    kpm[0, -2:] = True
    kpm[1, 1] = True
    out, w = m(q, kv, kv, key_padding_mask=cr.tensor(kpm), attn_mask=cr.tensor(attn),
               average_attn_weights=False)
    w = _np(w)
    blocked = np.broadcast_to(attn[None, None] | kpm[:, None, None, :], w.shape)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-12)
    assert (w[blocked] == 0).all() and (w[~blocked] > 0).all()
    # the same blocks as one float (N*H, L, S) mask of -inf
    additive = np.where(blocked, -np.inf, 0.0).reshape(N * H, L, S)
    out2, w2 = m(q, kv, kv, attn_mask=cr.tensor(additive), average_attn_weights=False)
    np.testing.assert_allclose(_np(out2), _np(out), rtol=1e-12)
    np.testing.assert_allclose(_np(w2), w, rtol=1e-12)
    # padded keys and values do not matter
    kv2 = _np(kv).copy()
    kv2[-2:, 0] += 10.0
    out3, _ = m(q, cr.tensor(kv2), cr.tensor(kv2), key_padding_mask=cr.tensor(kpm),
                attn_mask=cr.tensor(attn))
    np.testing.assert_allclose(_np(out3)[:, 0], _np(out)[:, 0], rtol=1e-12)


@pytest.mark.parametrize("batch_first", [False, True])
def test_shapes_batched_unbatched_and_batch_first(batch_first):
    L, S, N, E, H = 3, 6, 2, 4, 2
    m = nn.MultiheadAttention(E, H, kdim=3, vdim=5, batch_first=batch_first)
    q, k, v = _randn(L, N, E), _randn(S, N, 3), _randn(S, N, 5)
    lay = (lambda x: x.transpose(0, 1)) if batch_first else (lambda x: x)
    out, w = m(lay(q), lay(k), lay(v))
    assert out.shape == lay(q).shape and w.shape == (N, L, S)
    _, w_heads = m(lay(q), lay(k), lay(v), average_attn_weights=False)
    assert w_heads.shape == (N, H, L, S)
    np.testing.assert_allclose(_np(w_heads.mean(1)), _np(w), rtol=1e-12)
    out_u, w_u = m(q[:, 0], k[:, 0], v[:, 0])  # unbatched: batch_first does not apply
    assert out_u.shape == (L, E) and w_u.shape == (L, S)
    np.testing.assert_allclose(_np(out_u), _np(lay(out))[:, 0], rtol=1e-12)
    assert m(q[:, 0], k[:, 0], v[:, 0], average_attn_weights=False)[1].shape == (H, L, S)
    assert m(lay(q), lay(k), lay(v), need_weights=False)[1] is None
    # the sequence-first functional with the module's parameters
    fo, fw = multi_head_attention_forward(
        q, k, v, E, H, None, m.in_proj_bias, None, None, False, 0.0, m.out_proj.weight,
        m.out_proj.bias, use_separate_proj_weight=True, q_proj_weight=m.q_proj_weight,
        k_proj_weight=m.k_proj_weight, v_proj_weight=m.v_proj_weight)
    np.testing.assert_allclose(_np(fo), _np(lay(out)), rtol=1e-12)
    np.testing.assert_allclose(_np(fw), _np(w), rtol=1e-12)


def test_parameters_names_shapes_and_init():
    m = nn.MultiheadAttention(6, 2, add_bias_kv=True)
    assert [(n, p.shape) for n, p in m.named_parameters()] == [
        ("in_proj_weight", (18, 6)), ("in_proj_bias", (18,)), ("bias_k", (1, 1, 6)),
        ("bias_v", (1, 1, 6)), ("out_proj.weight", (6, 6)), ("out_proj.bias", (6,))]
    bound = np.sqrt(6.0 / (18 + 6))  # xavier_uniform_ of (3E, E)
    assert np.abs(_np(m.in_proj_weight)).max() <= bound
    assert not _np(m.in_proj_bias).any() and not _np(m.out_proj.bias).any()
    sep = nn.MultiheadAttention(6, 2, kdim=4, vdim=3, bias=False, dtype=cr.float32)
    assert [(n, p.shape) for n, p in sep.named_parameters()] == [
        ("q_proj_weight", (6, 6)), ("k_proj_weight", (6, 4)), ("v_proj_weight", (6, 3)),
        ("out_proj.weight", (6, 6))]
    assert sep.in_proj_weight is None and sep.q_proj_weight.dtype == np.float32
    # PyTorch's repr shows only the child module (MultiheadAttention has no extra_repr)
    assert repr(m) == ("MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear("
                       "in_features=6, out_features=6, bias=True)\n)")


def test_dropout_on_the_weights_in_training_only():
    m = nn.MultiheadAttention(4, 2, dropout=0.5)
    x = _randn(3, 2, 4)
    m.eval()
    out_eval, w_eval = m(x, x, x, average_attn_weights=False)
    np.testing.assert_allclose(_np(w_eval).sum(-1), 1.0, rtol=1e-12)
    m.train()
    _, w_train = m(x, x, x, average_attn_weights=False)
    w_train, w_eval = _np(w_train), _np(w_eval)
    kept = w_train != 0
    assert kept.any() and (~kept).any()
    np.testing.assert_allclose(w_train[kept], 2 * w_eval[kept], rtol=1e-12)  # 1 / (1 - p)


def test_gradcheck_multihead_attention():
    m = _randomise(nn.MultiheadAttention(4, 2, kdim=3, vdim=2, add_bias_kv=True))
    kpm = cr.tensor(np.array([[False, True], [False, False]]))
    q, k, v = (x.requires_grad_() for x in (_randn(3, 2, 4), _randn(2, 2, 3), _randn(2, 2, 2)))
    f, args = _params_call(m, q, k, v, key_padding_mask=kpm)
    assert gradcheck(f, args)
    assert gradgradcheck(lambda q, k: m(q, k, v, key_padding_mask=kpm)[0], (q, k))


def test_gradcheck_encoder_layer():
    layer = nn.TransformerEncoderLayer(4, 2, 6, norm_first=True).eval()
    _randomise(layer)
    x = _randn(3, 2, 4).requires_grad_()
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    f, args = _params_call(layer, x, src_mask=mask)
    assert gradcheck(f, args)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_is_its_residual_blocks(norm_first):
    layer = _randomise(nn.TransformerEncoderLayer(6, 3, 8, activation="gelu",
                                                  norm_first=norm_first)).eval()
    x = _randn(4, 2, 6)

    def sa(y):
        return layer.self_attn(y, y, y)[0]

    def ff(y):
        return layer.linear2(nn.functional.gelu(layer.linear1(y)))

    if norm_first:
        h = x + sa(layer.norm1(x))
        expected = h + ff(layer.norm2(h))
    else:
        h = layer.norm1(x + sa(x))
        expected = layer.norm2(h + ff(h))
    np.testing.assert_allclose(_np(layer(x)), _np(expected), rtol=1e-12)
    assert [n for n, _ in layer.named_children()] == [
        "self_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "dropout1", "dropout2"]


def test_encoder_stacks_deep_copies_and_applies_norm():
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0)
    enc = nn.TransformerEncoder(layer, 3, norm=nn.LayerNorm(4))
    a, b = enc.layers[0], enc.layers[1]
    assert a is not layer and a.linear1.weight is not b.linear1.weight
    np.testing.assert_array_equal(_np(a.linear1.weight), _np(layer.linear1.weight))
    x = _randn(5, 2, 4)
    expected = x
    for lay in enc.layers:
        expected = lay(expected)
    np.testing.assert_allclose(_np(enc(x)), _np(enc.norm(expected)), rtol=1e-12)


def test_causal_mask_hides_the_future():
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_array_equal(_np(mask), np.triu(np.full((4, 4), -np.inf), 1))
    model = nn.Transformer(4, 2, 1, 2, 8, dropout=0.0)
    src, tgt = _randn(3, 2, 4), _randn(4, 2, 4)
    out = _np(model(src, tgt, tgt_mask=mask))
    tgt2 = _np(tgt).copy()
    tgt2[2:] += 5.0
    out2 = _np(model(src, cr.tensor(tgt2), tgt_mask=mask, tgt_is_causal=True))
    np.testing.assert_allclose(out2[:2], out[:2], rtol=1e-12)
    assert not np.allclose(out2[2:], out[2:])


def test_decoder_and_transformer_structure():
    model = nn.Transformer(8, 2, 2, 1, 16, batch_first=True)
    names = list(model.state_dict())
    assert "encoder.layers.1.self_attn.in_proj_weight" in names
    assert "decoder.layers.0.multihead_attn.out_proj.bias" in names
    assert "decoder.layers.0.norm3.weight" in names and "encoder.norm.bias" in names
    assert len(model.encoder.layers) == 2 and len(model.decoder.layers) == 1
    src, tgt = _randn(2, 5, 8), _randn(2, 3, 8)
    assert model(src, tgt).shape == (2, 3, 8)
    with pytest.raises(RuntimeError, match=r"batch number of src and tgt"):
        model(src, _randn(3, 3, 8))
    with pytest.raises(RuntimeError, match=r"d_model=8"):
        model(src, _randn(2, 3, 6))


@pytest.mark.parametrize("call, exc, match", [
    (lambda m, x: m(x[..., :6], x, x), AssertionError,
     r"MultiheadAttention: query has embed_dim 6 but the module was built for 8"),
    (lambda m, x: m(x, x[..., :6], x[..., :6]), AssertionError, r"key has 6 features"),
    (lambda m, x: m(x, x[:2], x), AssertionError, r"key shape \[2, 2, 8\] does not match"),
    (lambda m, x: m(x[0], x, x), AssertionError, r"unbatched \(2-D\) query"),
    (lambda m, x: m(x, x, x, attn_mask=cr.zeros(3, 4)), RuntimeError,
     r"2D attn_mask is \[3, 4\], but should be \[3, 3\]"),
    (lambda m, x: m(x, x, x, key_padding_mask=cr.zeros(2, 2, dtype=cr.bool_)),
     AssertionError, r"key_padding_mask of shape \[2, 3\], got \[2, 2\]"),
    (lambda m, x: m(x, x, x, attn_mask=cr.zeros(3, 3, dtype=cr.int64)), AssertionError,
     r"only bool and floating types of attn_mask"),
    (lambda m, x: m(x, x, x, is_causal=True), RuntimeError, r"is_causal=True needs attn_mask"),
    (lambda m, x: nn.MultiheadAttention(8, 3), AssertionError, r"divisible by num_heads"),
    (lambda m, x: nn.MultiheadAttention(0, 1), ValueError, r"greater than 0"),
    (lambda m, x: nn.TransformerEncoderLayer(8, 2, activation="tanh"), RuntimeError,
     r"relu/gelu"),
])
def test_errors(call, exc, match):
    m, x = nn.MultiheadAttention(8, 2), _randn(3, 2, 8)
    with pytest.raises(exc, match=match):
        call(m, x)


def test_mixed_mask_types_warn_as_torch():
    m, x = nn.MultiheadAttention(4, 2), _randn(3, 2, 4)
    kpm = np.array([[False, False, True], [False, False, False]])
    with pytest.warns(UserWarning, match="mismatched key_padding_mask and attn_mask"):
        out, _ = m(x, x, x, key_padding_mask=cr.tensor(kpm), attn_mask=cr.tensor(_causal(3)))
        same, _ = m(x, x, x, key_padding_mask=cr.tensor(np.where(kpm, -np.inf, 0.0)),
                    attn_mask=cr.tensor(np.isinf(_causal(3))))
    np.testing.assert_allclose(_np(out), _np(same), rtol=1e-12)


def _causal(n):
    return np.triu(np.full((n, n), -np.inf), 1)


# --- against torch -------------------------------------------------------------------------

def _against_torch(torch, tmod, cmod, inputs, **kwargs):
    """Copy ``tmod``'s parameters into ``cmod`` by name; compare the outputs and the gradients
    of a random linear functional of them w.r.t. the inputs and every parameter."""
    assert list(cmod.state_dict()) == list(tmod.state_dict())
    cmod.load_state_dict({k: cr.tensor(v.detach().numpy()) for k, v in
                          tmod.state_dict().items()})
    cmod.train(tmod.training)
    tmod.zero_grad()
    cmod.zero_grad()
    t_in = [torch.tensor(x, requires_grad=True) for x in inputs]
    c_in = [cr.tensor(x, requires_grad=True) for x in inputs]
    arr = [k for k, v in kwargs.items() if isinstance(v, np.ndarray)]
    t_out = tmod(*t_in, **{**kwargs, **{k: torch.tensor(kwargs[k]) for k in arr}})
    c_out = cmod(*c_in, **{**kwargs, **{k: cr.tensor(kwargs[k]) for k in arr}})
    t_out, c_out = (o if isinstance(o, tuple) else (o,) for o in (t_out, c_out))
    t_loss = c_loss = 0
    for t, c in zip(t_out, c_out):
        if c is None:  # need_weights=False
            assert t is None
            continue
        np.testing.assert_allclose(_np(c), t.detach().numpy(), rtol=1e-9, atol=1e-12)
        g = RNG.standard_normal(tuple(c.shape))
        t_loss = t_loss + (t * torch.tensor(g)).sum()
        c_loss = c_loss + (c * cr.tensor(g)).sum()
    t_loss.backward()
    c_loss.backward()
    pairs = [(t.grad, c.grad) for t, c in zip(t_in, c_in)]
    pairs += [(p.grad, cmod.get_parameter(n).grad) for n, p in tmod.named_parameters()]
    for t, c in pairs:
        np.testing.assert_allclose(_np(c), t.numpy(), rtol=1e-9, atol=1e-12)


MHA_CASES = {
    "bool masks": ({}, dict(attn_mask="bool2", key_padding_mask="bool")),
    "kdim vdim, float 3-D mask": (dict(kdim=3, vdim=5), dict(attn_mask="float3")),
    "bias_kv": (dict(add_bias_kv=True), dict(key_padding_mask="bool", attn_mask="bool2")),
    "batch_first": (dict(batch_first=True), dict(attn_mask="bool3", key_padding_mask="bool")),
    "zero_attn, no bias": (dict(add_zero_attn=True, bias=False), dict(attn_mask="float2")),
}


def _np_mha(m, q, k, v, attn_mask=None, key_padding_mask=None):
    """MultiheadAttention by its definition, from the module's parameters: per-head
    softmax(Q K^T / sqrt(head_dim) + mask) V, the heads concatenated, then out_proj. Bias
    rows for K and V (add_bias_kv) and then zero rows (add_zero_attn) are appended to the
    keys, masks padded with unmasked columns for them; a bool mask is -inf where True.
    Returns (output, per-head weights (N, H, L, S'))."""
    if m.batch_first:
        q, k, v = (a.transpose(1, 0, 2) for a in (q, k, v))
    E, H = m.embed_dim, m.num_heads
    hd = E // H
    if m.in_proj_weight is not None:
        wq, wk, wv = np.split(_np(m.in_proj_weight), 3)
    else:
        wq, wk, wv = (_np(w) for w in (m.q_proj_weight, m.k_proj_weight, m.v_proj_weight))
    bq, bk, bv = np.split(_np(m.in_proj_bias), 3) if m.in_proj_bias is not None else (0, 0, 0)
    Q, K, V = q @ wq.T + bq, k @ wk.T + bk, v @ wv.T + bv
    L, N, S = q.shape[0], q.shape[1], k.shape[0]
    scores_mask = np.zeros((N, H, L, S))
    if attn_mask is not None:
        add = np.where(attn_mask, -np.inf, 0.0) if attn_mask.dtype == bool else attn_mask
        scores_mask = scores_mask + (add if add.ndim == 2 else add.reshape(N, H, L, S))
    if key_padding_mask is not None:
        scores_mask = scores_mask + np.where(key_padding_mask, -np.inf, 0.0)[:, None, None]
    extra = []
    if m.bias_k is not None:
        K = np.concatenate([K, np.broadcast_to(_np(m.bias_k), (1, N, E))])
        V = np.concatenate([V, np.broadcast_to(_np(m.bias_v), (1, N, E))])
        extra.append(0.0)
    Qh, Kh, Vh = (a.reshape(a.shape[0], N, H, hd).transpose(1, 2, 0, 3) for a in (Q, K, V))
    if m.add_zero_attn:
        Kh = np.concatenate([Kh, np.zeros((N, H, 1, hd))], 2)
        Vh = np.concatenate([Vh, np.zeros((N, H, 1, hd))], 2)
        extra.append(0.0)
    scores_mask = np.concatenate([scores_mask] + [np.zeros((N, H, L, 1))] * len(extra), -1)
    A = _softmax(Qh @ Kh.transpose(0, 1, 3, 2) / np.sqrt(hd) + scores_mask)
    out = (A @ Vh).transpose(2, 0, 1, 3).reshape(L, N, E)
    out = out @ _np(m.out_proj.weight).T + (0.0 if m.out_proj.bias is None
                                            else _np(m.out_proj.bias))
    return (out.transpose(1, 0, 2) if m.batch_first else out), A


@pytest.mark.parametrize("case", list(MHA_CASES))
def test_multihead_attention_against_definition_and_torch(case):
    kw, mask_kinds = MHA_CASES[case]
    E, H, L, S, N = 6, 3, 4, 5, 2
    bf = kw.get("batch_first", False)
    shape = (lambda a, d: (N, a, d)) if bf else (lambda a, d: (a, N, d))
    inputs = [RNG.standard_normal(shape(L, E)), RNG.standard_normal(shape(S, kw.get("kdim", E))),
              RNG.standard_normal(shape(S, kw.get("vdim", E)))]
    blocked = RNG.random((N * H, L, S)) < 0.3
    blocked[..., 0] = False
    masks = {"bool": RNG.random((N, S)) < 0.3, "bool2": blocked[0], "bool3": blocked,
             "float2": RNG.standard_normal((L, S)), "float3": RNG.standard_normal((N * H, L, S))}
    masks["bool"][:, 1] = False
    kwargs = {k: masks[v] for k, v in mask_kinds.items()}
    cmod = _randomise(nn.MultiheadAttention(E, H, **kw))  # (biases away from 0)
    # without torch: the definition; averaged weights are distributions over S (+ appended
    # positions); finite differences for the inputs and every parameter
    want_out, want_w = _np_mha(cmod, *inputs, **kwargs)
    ckw = {k: cr.tensor(v) for k, v in kwargs.items()}
    out, w = cmod(*(cr.tensor(x) for x in inputs), **ckw)
    extra = kw.get("add_bias_kv", False) + kw.get("add_zero_attn", False)
    assert w.shape == (N, L, S + extra)
    np.testing.assert_allclose(_np(w).sum(-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(_np(out), want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(w), want_w.mean(1), rtol=1e-10, atol=1e-12)
    w_heads = cmod(*(cr.tensor(x) for x in inputs), average_attn_weights=False, **ckw)[1]
    np.testing.assert_allclose(_np(w_heads), want_w, rtol=1e-10, atol=1e-12)
    f, args = _params_call(cmod, *(cr.tensor(x, requires_grad=True) for x in inputs), **ckw)
    assert gradcheck(f, args, fast_mode=True)
    if torch is None:
        return
    torch.manual_seed(0)
    tmod = torch.nn.MultiheadAttention(E, H, dtype=torch.float64, **kw)
    for average in (True, False):
        _against_torch(torch, tmod, cmod, inputs, average_attn_weights=average, **kwargs)
    _against_torch(torch, tmod, cmod, inputs, need_weights=False, **kwargs)


def _np_mask(mask):
    """A bool mask as the float one it stands for (-inf where True)."""
    return np.where(mask, -np.inf, 0.0) if mask.dtype == bool else mask


def _encoder_layer_blocks(layer, x, mask, kpm, activation):
    """An encoder layer as its residual blocks (eval / dropout 0): self-attention with the
    masks, then the feed-forward, each normalised before (norm_first) or after."""
    act = {"relu": nn.functional.relu, "gelu": nn.functional.gelu}[activation]

    def sa(y):
        return layer.self_attn(y, y, y, attn_mask=mask, key_padding_mask=kpm)[0]

    def ff(y):
        return layer.linear2(act(layer.linear1(y)))

    if layer.norm_first:
        h = x + sa(layer.norm1(x))
        return h + ff(layer.norm2(h))
    h = layer.norm1(x + sa(x))
    return layer.norm2(h + ff(h))


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
@pytest.mark.parametrize("norm_first, activation, train", [(False, "relu", True),
                                                           (True, "gelu", False)])
def test_encoder_layer_against_blocks_and_torch(norm_first, activation, train):
    kw = dict(norm_first=norm_first, activation=activation)
    cmod = nn.TransformerEncoderLayer(6, 2, 10, dropout=0.0 if train else 0.3, **kw)
    cmod.train(train)
    x = RNG.standard_normal((4, 3, 6))
    kpm = np.zeros((3, 4), bool)
    kpm[1, -1] = True
    _batch_of_one_is_unbatched(cmod, cr.tensor(x))
    # without torch: the residual blocks with the masks (a bool causal mask and its float
    # form the same); the stack is the layers in turn, then the final norm
    _randomise(cmod)
    src_mask = np.isinf(_causal(4))
    out = cmod(cr.tensor(x), src_mask=cr.tensor(src_mask), src_key_padding_mask=cr.tensor(kpm))
    want = _encoder_layer_blocks(cmod, cr.tensor(x), cr.tensor(_np_mask(src_mask)),
                                 cr.tensor(_np_mask(kpm)), activation)
    np.testing.assert_allclose(_np(out), _np(want), rtol=1e-10, atol=1e-12)
    f, args = _params_call(cmod, cr.tensor(x, requires_grad=True),
                           src_mask=cr.tensor(src_mask), src_key_padding_mask=cr.tensor(kpm))
    assert gradcheck(f, args, fast_mode=True)
    enc = nn.TransformerEncoder(cmod, 2, nn.LayerNorm(6))
    _randomise(enc).train(train)
    want = cr.tensor(x)
    for layer in enc.layers:
        want = _encoder_layer_blocks(layer, want, cr.tensor(_causal(4)), None, activation)
    np.testing.assert_allclose(_np(enc(cr.tensor(x), mask=cr.tensor(_causal(4)),
                                       is_causal=True)), _np(enc.norm(want)), rtol=1e-10,
                               atol=1e-12)
    if torch is None:
        return
    torch.manual_seed(1)
    tmod = torch.nn.TransformerEncoderLayer(6, 2, 10, dropout=0.0 if train else 0.3,
                                            dtype=torch.float64, **kw).train(train)
    _against_torch(torch, tmod, cmod, [x], src_mask=np.isinf(_causal(4)),
                   src_key_padding_mask=kpm)
    tenc = torch.nn.TransformerEncoder(tmod, 2, torch.nn.LayerNorm(6, dtype=torch.float64))
    tenc.train(train)
    _against_torch(torch, tenc, nn.TransformerEncoder(cmod, 2, nn.LayerNorm(6)), [x],
                   mask=_causal(4), is_causal=True)


def _decoder_layer_blocks(layer, x, mem, tgt_mask, mem_kpm):
    """A post-norm decoder layer (dropout 0, relu) as its residual blocks: masked
    self-attention, attention over the memory, feed-forward, each followed by its norm."""
    h = layer.norm1(x + layer.self_attn(x, x, x, attn_mask=tgt_mask)[0])
    h = layer.norm2(h + layer.multihead_attn(h, mem, mem, key_padding_mask=mem_kpm)[0])
    return layer.norm3(h + layer.linear2(nn.functional.relu(layer.linear1(h))))


def test_decoder_layer_against_blocks_and_torch():
    cmod = nn.TransformerDecoderLayer(6, 3, 8, dropout=0.0, batch_first=True)
    tgt, mem = RNG.standard_normal((2, 4, 6)), RNG.standard_normal((2, 5, 6))
    kpm = np.array([[False] * 4 + [True], [False] * 5])
    _batch_of_one_is_unbatched(cmod, cr.tensor(tgt), cr.tensor(mem), batch_dim=0)
    # without torch: the residual blocks; finite differences
    _randomise(cmod)
    args = (cr.tensor(tgt), cr.tensor(mem))
    masks = dict(tgt_mask=cr.tensor(_causal(4)), memory_key_padding_mask=cr.tensor(kpm),
                 tgt_is_causal=True)
    want = _decoder_layer_blocks(cmod, *args, cr.tensor(_causal(4)),
                                 cr.tensor(_np_mask(kpm)))
    np.testing.assert_allclose(_np(cmod(*args, **masks)), _np(want), rtol=1e-10, atol=1e-12)
    f, fargs = _params_call(cmod, *(a.requires_grad_() for a in args), **masks)
    assert gradcheck(f, fargs, fast_mode=True)
    if torch is None:
        return
    torch.manual_seed(2)
    tmod = torch.nn.TransformerDecoderLayer(6, 3, 8, dropout=0.0, batch_first=True,
                                            dtype=torch.float64)
    _against_torch(torch, tmod, cmod, [tgt, mem], tgt_mask=_causal(4),
                   memory_key_padding_mask=kpm, tgt_is_causal=True)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
def test_transformer_against_its_stacks_and_torch():
    cmod = nn.Transformer(6, 2, 2, 2, 8, dropout=0.0)
    src, tgt = RNG.standard_normal((5, 2, 6)), RNG.standard_normal((4, 2, 6))
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    assert _np(cmod.encoder.norm.weight).tolist() == [1.0] * 6  # LayerNorms stay at 1, 0
    _batch_of_one_is_unbatched(cmod, cr.tensor(src), cr.tensor(tgt), tgt_mask=mask)
    # without torch: the decoder stack on the encoder stack's memory, each layer in turn,
    # then each stack's final norm
    np.testing.assert_array_equal(_np(mask), _causal(4))
    _randomise(cmod)
    memory = cr.tensor(src)
    for layer in cmod.encoder.layers:
        memory = _encoder_layer_blocks(layer, memory, None, None, "relu")
    memory = cmod.encoder.norm(memory)
    want = cr.tensor(tgt)
    for layer in cmod.decoder.layers:
        want = _decoder_layer_blocks(layer, want, memory, mask, None)
    np.testing.assert_allclose(_np(cmod(cr.tensor(src), cr.tensor(tgt), tgt_mask=mask)),
                               _np(cmod.decoder.norm(want)), rtol=1e-10, atol=1e-12)
    if torch is None:
        return
    torch.manual_seed(3)
    tmod = torch.nn.Transformer(6, 2, 2, 2, 8, dropout=0.0, dtype=torch.float64)
    np.testing.assert_array_equal(
        torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64).numpy(),
        _np(mask))
    _against_torch(torch, tmod, cmod, [src, tgt], tgt_mask=_np(mask))
