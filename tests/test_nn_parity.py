"""nn parity fixes found by fuzzing against PyTorch: each test checks a value derived by hand
(or an invariant) and, where PyTorch is importable, PyTorch's own answer."""

import math

import numpy as np

import chainrule as cr
from chainrule import nn
from chainrule.nn import functional as F

try:
    import torch
except ImportError:
    torch = None


def _grad(out, x):
    return cr.autograd.grad(out, x)[0].numpy()


# --- attention: a query row the mask blocks entirely --------------------------------------

def test_sdpa_fully_masked_row_gives_zeros_and_finite_grads():
    rng = np.random.default_rng(0)
    q = rng.standard_normal((1, 3, 4))
    mask = np.array([[False, False, False], [False, True, False], [False, False, True]])
    x = cr.tensor(q, requires_grad=True)
    out = F.scaled_dot_product_attention(x, x, x, attn_mask=cr.tensor(mask))
    o = out.detach().numpy()
    assert np.array_equal(o[0, 0], np.zeros(4))  # the blocked row: zero weights
    # rows with one allowed key just copy that key's value
    assert np.allclose(o[0, 1], q[0, 1]) and np.allclose(o[0, 2], q[0, 2])
    g = _grad(out.sum(), x)
    assert np.isfinite(g).all()
    # the float (additive) form of the same mask agrees
    fmask = np.where(mask, 0.0, -np.inf)
    out2 = F.scaled_dot_product_attention(x, x, x, attn_mask=cr.tensor(fmask))
    assert np.array_equal(out2.detach().numpy(), o)
    if torch is not None:
        t = torch.tensor(q, requires_grad=True)
        tout = torch.nn.functional.scaled_dot_product_attention(t, t, t,
                                                                attn_mask=torch.tensor(mask))
        assert np.allclose(tout.detach().numpy(), o)
        assert np.allclose(torch.autograd.grad(tout.sum(), t)[0].numpy(), g)


def test_mha_fully_masked_row_without_weights_is_zero_with_weights_nan():
    rng = np.random.default_rng(1)
    mha = nn.MultiheadAttention(4, 2)
    x = cr.tensor(rng.standard_normal((3, 1, 4)), requires_grad=True)
    mask = cr.tensor(np.array([[False, True, True], [True, False, True], [False, False, False]]))
    kpm = cr.tensor(np.array([[False, True, True]]))  # True = may NOT attend: row 1 blocked
    out, w = mha(x, x, x, attn_mask=mask, key_padding_mask=kpm, need_weights=False)
    assert w is None
    o = out.detach().numpy()
    # the blocked row is the out-projection of zeros: its bias
    assert np.allclose(o[1, 0], mha.out_proj.bias.detach().numpy())
    assert np.isfinite(o).all()
    assert np.isfinite(_grad(out.sum(), x)).all()
    out_w, weights = mha(x, x, x, attn_mask=mask, key_padding_mask=kpm, need_weights=True)
    assert np.isnan(out_w.detach().numpy()[1]).all()  # the returned weights are NaN there
    assert np.isnan(weights.detach().numpy()[0, 1]).all()
    if torch is not None:
        tm = torch.nn.MultiheadAttention(4, 2).double()
        tm.load_state_dict({k: torch.tensor(v.detach().numpy())
                            for k, v in mha.state_dict().items()})
        t = torch.tensor(x.detach().numpy())
        tout = tm(t, t, t, attn_mask=torch.tensor(mask.numpy()),
                  key_padding_mask=torch.tensor(kpm.numpy()), need_weights=False)[0]
        assert np.allclose(tout.detach().numpy(), o)


def test_transformer_decoder_layer_padded_rows_keep_gradients_finite():
    rng = np.random.default_rng(2)
    layer = nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0)
    tgt = cr.tensor(rng.standard_normal((3, 2, 4)), requires_grad=True)
    mem = cr.tensor(rng.standard_normal((2, 2, 4)))
    causal = nn.Transformer.generate_square_subsequent_mask(3)
    # left padding: the first target position of batch 1 sees nothing under the causal mask
    kpm = cr.tensor(np.array([[False, False, False], [True, False, False]]))
    out = layer(tgt, mem, tgt_mask=causal, tgt_key_padding_mask=kpm)
    assert np.isfinite(out.detach().numpy()).all()
    grads = cr.autograd.grad(out.sum(), [tgt] + list(layer.parameters()))
    assert all(np.isfinite(g.numpy()).all() for g in grads)


# --- class losses when every target is ignored --------------------------------------------

def test_nll_loss_mean_all_ignored_is_nan_with_zero_grads():
    x = cr.tensor(np.log(np.full((2, 3), 1 / 3)), requires_grad=True)
    t = cr.tensor([1, 1])
    loss = F.nll_loss(x, t, ignore_index=1)
    assert math.isnan(loss.item())  # 0 / 0, as PyTorch's
    assert np.array_equal(_grad(loss, x), np.zeros((2, 3)))
    # one sample counted: its gradient is -1 at its class (the mean over one)
    loss1 = F.nll_loss(x, cr.tensor([0, 1]), ignore_index=1)
    g = _grad(loss1, x)
    assert np.array_equal(g, np.array([[-1.0, 0, 0], [0, 0, 0]]))
    if torch is not None:
        tx = torch.tensor(x.detach().numpy(), requires_grad=True)
        tl = torch.nn.functional.nll_loss(tx, torch.tensor([1, 1]), ignore_index=1)
        assert math.isnan(tl.item())
        assert np.array_equal(torch.autograd.grad(tl, tx)[0].numpy(), np.zeros((2, 3)))


def test_cross_entropy_mean_all_ignored_is_nan_with_zero_grads():
    x = cr.tensor(np.array([[0.1, 0.5, -0.3], [1.0, 2.0, 3.0]], dtype=np.float32),
                  requires_grad=True)
    w = cr.tensor([1.0, 2.0, 3.0], dtype=cr.float32)
    for kw in ({}, {"label_smoothing": 0.1}, {"weight": w}):
        loss = F.cross_entropy(x, cr.tensor([2, 2]), ignore_index=2, **kw)
        assert math.isnan(loss.item()) and loss.dtype == cr.float32
        g = _grad(loss, x)
        assert g.dtype == np.float32 and np.array_equal(g, np.zeros((2, 3))), kw
    unb = F.cross_entropy(x[0], cr.tensor(1), ignore_index=1)
    assert math.isnan(unb.item()) and np.array_equal(_grad(unb, x), np.zeros((2, 3)))
    # sum over nothing is 0 (and so are its gradients)
    s = F.cross_entropy(x, cr.tensor([2, 2]), ignore_index=2, reduction="sum")
    assert s.item() == 0.0
    if torch is not None:
        tx = torch.tensor(x.detach().numpy(), requires_grad=True)
        tl = torch.nn.functional.cross_entropy(tx, torch.tensor([2, 2]), ignore_index=2,
                                               label_smoothing=0.1)
        assert math.isnan(tl.item())
        assert np.array_equal(torch.autograd.grad(tl, tx)[0].numpy(), np.zeros((2, 3)))


# --- kl_div: the target's gradient at a zero target ---------------------------------------

def test_kl_div_target_gradient_matches_xlogy():
    x = cr.tensor([-1.0, -0.5, -2.0], requires_grad=True)
    t = cr.tensor([0.0, 0.25, 0.5], requires_grad=True)
    loss = F.kl_div(x, t, reduction="sum")
    # value: sum t (log t - x), 0 at t = 0
    tn, xn = np.array([0.25, 0.5]), np.array([-0.5, -2.0])
    assert np.isclose(loss.item(), np.sum(tn * (np.log(tn) - xn)))
    gx, gt = cr.autograd.grad(loss, [x, t])
    assert np.allclose(gx.numpy(), [0.0, -0.25, -0.5])
    # d/dt t (log t - x) = log t + 1 - x; at t = 0 that is -inf: NaN (0/0), as PyTorch's
    assert np.isnan(gt.numpy()[0])
    assert np.allclose(gt.numpy()[1:], np.log(tn) + 1 - xn)
    assert np.isnan(F.kl_div(x, cr.tensor([-0.5, 0.2, 0.3]), reduction="sum").item())
    if torch is not None:
        tx = torch.tensor(x.detach().numpy(), requires_grad=True)
        tt = torch.tensor(t.detach().numpy(), requires_grad=True)
        tg = torch.autograd.grad(torch.nn.functional.kl_div(tx, tt, reduction="sum"), [tx, tt])
        assert np.allclose(tg[1].numpy(), gt.numpy(), equal_nan=True)


# --- embedding(scale_grad_by_freq=True) ---------------------------------------------------

def test_embedding_scale_grad_by_freq():
    w0 = np.arange(12.0).reshape(4, 3)
    emb = nn.Embedding(4, 3, scale_grad_by_freq=True, padding_idx=3)
    with cr.no_grad():
        emb.weight.copy_(cr.tensor(w0))
    idx = cr.tensor([[0, 1, 1], [1, 2, 3]])
    out = emb(idx)
    assert np.array_equal(out.detach().numpy(), w0[idx.numpy()])  # the value is unchanged
    out.sum().backward()
    # row 1 picked 3 times: 3 * (1/3); rows 0, 2 once; padding row 3 none
    assert np.allclose(emb.weight.grad.numpy(), np.array([[1.0] * 3, [1.0] * 3, [1.0] * 3,
                                                          [0.0] * 3]))
    gout = np.arange(18.0).reshape(2, 3, 3)
    w = cr.tensor(w0, requires_grad=True)
    g = cr.autograd.grad(F.embedding(idx, w, scale_grad_by_freq=True), w, cr.tensor(gout))[0]
    want = np.zeros((4, 3))
    for pos, i in np.ndenumerate(idx.numpy()):
        want[i] += gout[pos] / np.sum(idx.numpy() == i)
    assert np.allclose(g.numpy(), want)
    if torch is not None:
        tw = torch.tensor(w0, requires_grad=True)
        to = torch.nn.functional.embedding(torch.tensor(idx.numpy()), tw, scale_grad_by_freq=True)
        assert np.allclose(torch.autograd.grad(to, tw, torch.tensor(gout))[0].numpy(), g.numpy())


# --- pad: negative (cropping) pads in the non-constant modes ------------------------------

def test_pad_negative_in_reflect_replicate_circular():
    x = np.arange(5.0).reshape(1, 1, 5)
    xt = cr.tensor(x, requires_grad=True)
    cases = {
        ("reflect", (-1, 2)): [1, 2, 3, 4, 3, 2],   # positions 1..6 of the reflected line
        ("reflect", (2, -2)): [2, 1, 0, 1, 2],
        ("replicate", (-2, 1)): [2, 3, 4, 4],
        ("replicate", (1, -3)): [0, 0, 1],
        ("circular", (-1, 2)): [1, 2, 3, 4, 1, 2],  # crop first, then wrap what is left
        ("circular", (2, -1)): [2, 3, 0, 1, 2, 3],
    }
    for (mode, pads), want in cases.items():
        out = F.pad(xt, pads, mode=mode)
        assert out.detach().numpy()[0, 0].tolist() == want, (mode, pads)
        # the gradient counts how often each input element is used
        g = _grad(out.sum(), xt)[0, 0]
        assert g.tolist() == np.bincount(np.array(want, dtype=int), minlength=5).tolist()
        if torch is not None:
            assert torch.nn.functional.pad(torch.tensor(x), pads, mode=mode)[0, 0].tolist() == want
    assert F.pad(xt, (-3, -2), mode="reflect").shape == (1, 1, 0)


# --- group_norm: an affine of the wrong size names the function and the shapes ------------

def test_group_norm_channel_mismatch_error_names_shapes():
    import pytest

    gn = nn.GroupNorm(2, 4)
    with pytest.raises(RuntimeError, match=r"group_norm.*weight of shape \[4\].*\[2, 6, 3\]"):
        gn(cr.ones(2, 6, 3))
    with pytest.raises(RuntimeError, match=r"group_norm.*bias of shape \[3\]"):
        F.group_norm(cr.ones(2, 4, 3), 2, None, cr.ones(3))
    # the right size still normalises each group to mean 0, variance 1
    x = cr.tensor(np.random.default_rng(3).standard_normal((2, 4, 3)))
    out = gn(x).detach().numpy().reshape(2, 2, 6)
    assert np.allclose(out.mean(-1), 0) and np.allclose(out.var(-1), 1, atol=1e-4)
    if torch is not None:
        with pytest.raises(RuntimeError):
            torch.nn.GroupNorm(2, 4)(torch.ones(2, 6, 3))


def test_embedding_padding_and_frequency_scale_only_the_gradient_not_the_tangent():
    # rows picked: 0 twice, 1, 2 (padding) twice, 3; the padding row gets no gradient, and
    # with scale_grad_by_freq each row's gradient is divided by its count; forward mode
    # gives the plain gather of the weight's tangent (PyTorch's rule), padding row included
    W = cr.tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
    idx = cr.tensor([[0, 2, 2], [1, 0, 3]])
    F.embedding(idx, W, padding_idx=2).sum().backward()
    np.testing.assert_array_equal(W.grad.numpy()[:, 0], [2, 1, 0, 1])
    W.grad = None
    F.embedding(idx, W, scale_grad_by_freq=True).sum().backward()
    np.testing.assert_array_equal(W.grad.numpy()[:, 0], [1, 1, 1, 1])
    T = cr.tensor(np.arange(12.0).reshape(4, 3) / 10)
    _, tangent = cr.func.jvp(lambda w: F.embedding(idx, w, padding_idx=2,
                                                   scale_grad_by_freq=True),
                             (W.detach(),), (T,))
    np.testing.assert_allclose(tangent.numpy(), T.numpy()[idx.numpy()])
    # double backward: d/dW sum(d sum(out^2)/dW) = 2 * (count of each row) * [not padding]
    W.grad = None
    (g,) = cr.autograd.grad((F.embedding(idx, W, padding_idx=2) ** 2).sum(), W,
                            create_graph=True)
    g.sum().backward()
    np.testing.assert_array_equal(W.grad.numpy()[:, 0], [4, 2, 0, 2])
