"""chainrule.nn's recurrent layers (RNNCell, LSTMCell, GRUCell, RNN, LSTM, GRU): outputs
against a NumPy reference of the gate formulas built from the modules' own parameters,
shapes, gradcheck / gradgradcheck, errors; PyTorch comparisons when torch is installed."""

import math

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn

try:
    import torch
except ImportError:
    torch = None

RNG = np.random.default_rng(2024)

# (chainrule / torch class name, constructor kwargs, gate formulas of _np_step)
LAYERS = {
    "rnn_tanh": ("RNN", {}, "RNN_TANH"),
    "rnn_relu": ("RNN", {"nonlinearity": "relu"}, "RNN_RELU"),
    "lstm": ("LSTM", {}, "LSTM"),
    "lstm_proj": ("LSTM", {"proj_size": 2}, "LSTM"),
    "gru": ("GRU", {}, "GRU"),
}
CELLS = {
    "rnn_tanh": ("RNNCell", {}, "RNN_TANH"),
    "rnn_relu": ("RNNCell", {"nonlinearity": "relu"}, "RNN_RELU"),
    "lstm": ("LSTMCell", {}, "LSTM"),
    "gru": ("GRUCell", {}, "GRU"),
}


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def _np_step(mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
    """One step of the documented gate formulas, in NumPy; returns (h', c')."""
    gi, gh = x @ w_ih.T + b_ih, h @ w_hh.T + b_hh
    if mode == "GRU":
        (i_r, i_z, i_n), (h_r, h_z, h_n) = np.split(gi, 3, -1), np.split(gh, 3, -1)
        r, z = _sigmoid(i_r + h_r), _sigmoid(i_z + h_z)
        n = np.tanh(i_n + r * h_n)
        return (1 - z) * n + z * h, None
    if mode == "LSTM":
        i, f, g, o = np.split(gi + gh, 4, -1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        return _sigmoid(o) * np.tanh(c), c
    return (np.tanh(gi + gh) if mode == "RNN_TANH" else np.maximum(gi + gh, 0)), None


def _np_params(m, suffix=""):
    """weight_ih, weight_hh, bias_ih, bias_hh (0 when absent) of ``m`` as arrays."""
    out = []
    for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        p = getattr(m, kind + suffix, None)
        out.append(0.0 if p is None else p.detach().numpy())
    return out


def _np_net(m, mode, x, states):
    """NumPy reference of a multi-layer (bidirectional) net: x (L, N, H_in) time-major,
    states [h0] or [h0, c0]; returns (output, [h_n] or [h_n, c_n])."""
    D = 2 if m.bidirectional else 1
    L = x.shape[0]
    finals = []
    for layer in range(m.num_layers):
        outs = []
        for d in range(D):
            suffix = f"_l{layer}" + ("_reverse" if d else "")
            w = _np_params(m, suffix)
            w_hr = getattr(m, "weight_hr" + suffix, None)
            h, c = states[0][layer * D + d], states[-1][layer * D + d]
            seq = [None] * L
            for t in (reversed(range(L)) if d else range(L)):
                h, c = _np_step(mode, x[t], h, c, *w)
                if w_hr is not None:
                    h = h @ w_hr.detach().numpy().T
                seq[t] = h
            outs.append(np.stack(seq))
            finals.append((h, c))
        x = np.concatenate(outs, -1)
    return x, [np.stack(s) for s in list(zip(*finals))[:len(states)]]


def _make(name, table=LAYERS, **kwargs):
    cls, extra, mode = table[name]
    return getattr(nn, cls)(**{**extra, **kwargs}), mode


def _states(m, n, mode):
    """Random initial states (numpy) for net ``m`` and batch ``n``."""
    lead = ((1 + m.bidirectional) * m.num_layers, n)
    shapes = [lead + (m.proj_size or m.hidden_size,)]
    if mode == "LSTM":
        shapes.append(lead + (m.hidden_size,))
    return [RNG.standard_normal(s) for s in shapes]


def _hx(states):
    ts = [cr.tensor(s, requires_grad=True) for s in states]
    return ts, (tuple(ts) if len(ts) == 2 else ts[0])


def _flat(out):
    """(output, h_n) / (output, (h_n, c_n)) / h / (h, c) as a flat list."""
    if isinstance(out, tuple):
        return [t for o in out for t in _flat(o)]
    return [out]


# --- without torch ---------------------------------------------------------------------

@pytest.mark.parametrize("name", CELLS)
def test_cell_step_is_the_gate_formulas(name):
    cell, mode = _make(name, CELLS, input_size=3, hidden_size=4)
    x, h, c = (RNG.standard_normal(s) for s in ((5, 3), (5, 4), (5, 4)))
    hx = (cr.tensor(h), cr.tensor(c)) if mode == "LSTM" else cr.tensor(h)
    want = _np_step(mode, x, h, c, *_np_params(cell))
    got = _flat(cell(cr.tensor(x), hx))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), w, rtol=1e-12, atol=1e-14)
    # unbatched (input_size,) -> (hidden_size,); omitted hx means zeros
    zero = _np_step(mode, x[0], np.zeros(4), np.zeros(4), *_np_params(cell))
    got = _flat(cell(cr.tensor(x[0])))
    assert all(g.shape == (4,) for g in got)
    np.testing.assert_allclose(got[0].detach().numpy(), zero[0], rtol=1e-12, atol=1e-14)


def test_parameters_names_shapes_and_init():
    m = nn.LSTM(3, 5, num_layers=2, bidirectional=True, proj_size=2)
    names = [f"{k}_l{layer}{s}" for layer in range(2) for s in ("", "_reverse")
             for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")]
    assert [n for n, _ in m.named_parameters()] == names == list(m.state_dict())
    assert m.weight_ih_l0.shape == (20, 3) and m.weight_ih_l1_reverse.shape == (20, 4)
    assert m.weight_hh_l0.shape == (20, 2) and m.weight_hr_l1.shape == (2, 5)
    assert len(m.all_weights) == 4 and all(len(w) == 5 for w in m.all_weights)
    bound = 1 / math.sqrt(5)
    assert all(np.abs(p.detach().numpy()).max() <= bound for p in m.parameters())
    g = nn.GRU(2, 3, bias=False, dtype=cr.float32)
    assert [n for n, _ in g.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]
    assert g.weight_hh_l0.shape == (9, 3) and g.weight_hh_l0.dtype == np.float32
    cell = nn.GRUCell(2, 3, bias=False)
    assert [n for n, _ in cell.named_parameters()] == ["weight_ih", "weight_hh"]
    assert cell.bias_ih is None and nn.LSTMCell(2, 3).bias_hh.shape == (12,)
    assert repr(m) == "LSTM(3, 5, proj_size=2, num_layers=2, bidirectional=True)"
    assert repr(nn.RNNCell(2, 3, nonlinearity="relu")) == "RNNCell(2, 3, nonlinearity=relu)"
    assert repr(nn.GRU(2, 3, batch_first=True, bias=False)) == \
        "GRU(2, 3, bias=False, batch_first=True)"


@pytest.mark.parametrize("name", LAYERS)
def test_layer_shapes(name):
    m, mode = _make(name, input_size=3, hidden_size=4, num_layers=2, bidirectional=True)
    out_size = m.proj_size or 4
    x = cr.randn(6, 2, 3)
    out, h = m(x)
    hs = _flat(h)
    assert out.shape == (6, 2, 2 * out_size) and hs[0].shape == (4, 2, out_size)
    assert len(hs) == (2 if mode == "LSTM" else 1) and hs[-1].shape[-1] == (
        4 if mode == "LSTM" else out_size)
    m.batch_first = True
    out_bf, h_bf = m(cr.transpose(x, 0, 1))
    np.testing.assert_allclose(out_bf.detach().numpy(), out.detach().numpy().transpose(1, 0, 2))
    np.testing.assert_allclose(_flat(h_bf)[0].detach().numpy(), hs[0].detach().numpy())
    out_u, h_u = m(x[:, 1])  # unbatched (L, H_in) is time-major also with batch_first
    assert out_u.shape == (6, 2 * out_size) and _flat(h_u)[0].shape == (4, out_size)
    np.testing.assert_allclose(out_u.detach().numpy(), out.detach().numpy()[:, 1],
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", LAYERS)
def test_layer_is_the_numpy_reference(name):
    m, mode = _make(name, input_size=3, hidden_size=4, num_layers=2, bidirectional=True)
    x, states = RNG.standard_normal((5, 2, 3)), _states(m, 2, mode)
    out, h = m(cr.tensor(x), _hx(states)[1])
    want_out, want_h = _np_net(m, mode, x, states)
    for g, w in zip([out, *_flat(h)], [want_out, *want_h]):
        np.testing.assert_allclose(g.detach().numpy(), w, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["rnn_tanh", "lstm", "gru"])
def test_h_n_is_the_last_output(name):
    m, mode = _make(name, input_size=2, hidden_size=3)
    out, h = m(cr.randn(4, 2, 2))
    np.testing.assert_array_equal(_flat(h)[0][0].detach().numpy(), out[-1].detach().numpy())
    m2, _ = _make(name, input_size=2, hidden_size=3, bidirectional=True)
    out, h = m2(cr.randn(4, 2, 2))
    h_n = _flat(h)[0].detach().numpy()
    np.testing.assert_array_equal(h_n[0], out[-1, :, :3].detach().numpy())
    np.testing.assert_array_equal(h_n[1], out[0, :, 3:].detach().numpy())  # backward dir


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_gradcheck_input_and_h0(cls):
    m = getattr(nn, cls)(2, 2, num_layers=2, bidirectional=True)
    x = cr.tensor(RNG.standard_normal((3, 2, 2)), requires_grad=True)
    states = _hx(_states(m, 2, cls))[0]  # [h0] or [h0, c0]
    f = lambda x, *hs: _flat(m(x, tuple(hs) if len(hs) == 2 else hs[0]))
    assert cr.autograd.gradcheck(f, (x, *states))
    # through the parameters too, with functional_call
    w0 = m.weight_hh_l1_reverse.detach().requires_grad_()
    g = lambda w, x: nn.functional_call(m, {"weight_hh_l1_reverse": w}, (x,))[0]
    assert cr.autograd.gradcheck(g, (w0, x))


@pytest.mark.parametrize("cls", ["LSTMCell", "GRUCell"])
def test_gradgradcheck_cell(cls):
    cell = getattr(nn, cls)(2, 3)
    x = cr.tensor(RNG.standard_normal((2, 2)), requires_grad=True)
    h = cr.tensor(RNG.standard_normal((2, 3)), requires_grad=True)
    if cls == "LSTMCell":
        c = cr.tensor(RNG.standard_normal((2, 3)), requires_grad=True)
        assert cr.autograd.gradgradcheck(lambda x, h, c: cell(x, (h, c)), (x, h, c))
    else:
        assert cr.autograd.gradgradcheck(cell, (x, h))


def test_vmap_over_unbatched_sequences_is_the_batched_call():
    m = nn.GRU(2, 3, bidirectional=True)
    x = cr.randn(4, 5, 2)
    out = cr.func.vmap(lambda s: m(s)[0], in_dims=1, out_dims=1)(x)
    np.testing.assert_allclose(out.detach().numpy(), m(x)[0].detach().numpy(),
                               rtol=1e-12, atol=1e-14)


def test_dropout_between_layers_only_in_training():
    m = nn.RNN(2, 3, num_layers=2, dropout=1.0)
    x = cr.randn(4, 2, 2)
    # dropout=1 zeroes layer 0's output, so layer 1 sees zeros
    top = nn.RNN(3, 3)
    top.load_state_dict({k[:-1] + "0": v for k, v in m.state_dict().items() if k.endswith("1")})
    np.testing.assert_allclose(m(x)[0].detach().numpy(),
                               top(cr.zeros(4, 2, 3))[0].detach().numpy())
    m.eval()
    ref = nn.RNN(2, 3, num_layers=2)
    ref.load_state_dict(m.state_dict())
    np.testing.assert_array_equal(m(x)[0].detach().numpy(), ref(x)[0].detach().numpy())
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        nn.GRU(2, 3, dropout=0.5)


def test_errors():
    lstm = nn.LSTM(3, 4, num_layers=2)
    with pytest.raises(ValueError, match=r"LSTM: input must have 3 dimensions \(or 2 "
                                         r"unbatched\), got 4"):
        lstm(cr.zeros(1, 2, 3, 3))
    with pytest.raises(RuntimeError, match="input.size.-1. must be equal to input_size. "
                                           "Expected 3, got 5"):
        lstm(cr.zeros(2, 2, 5))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(2, 2, 4\), got "
                                           r"\(1, 2, 4\)"):
        lstm(cr.zeros(5, 2, 3), (cr.zeros(1, 2, 4), cr.zeros(2, 2, 4)))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(2, 4\), got"):
        lstm(cr.zeros(5, 3), (cr.zeros(2, 4), cr.zeros(2, 1, 4)))
    with pytest.raises(TypeError, match=r"hx must be a tuple \(h_0, c_0\)"):
        lstm(cr.zeros(5, 2, 3), cr.zeros(2, 2, 4))
    with pytest.raises(RuntimeError, match=r"GRU: Expected hidden size \(1, 3, 4\)"):
        nn.GRU(3, 4)(cr.zeros(5, 3, 3), cr.zeros(1, 2, 4))
    with pytest.raises(ValueError, match="input dtype"):
        nn.GRU(3, 4)(cr.zeros(5, 3, 3, dtype=cr.float32))
    with pytest.raises(ValueError, match=r"GRUCell: input must have 2 dimensions \(or 1"):
        nn.GRUCell(3, 4)(cr.zeros(2, 2, 3))
    with pytest.raises(RuntimeError, match=r"RNNCell: Expected hidden size \(2, 4\), got "
                                           r"\(3, 4\)"):
        nn.RNNCell(3, 4)(cr.zeros(2, 3), cr.zeros(3, 4))
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNNCell(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.LSTM(3, 4, dropout=1.5)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.GRU(3, 0)


# --- against torch ---------------------------------------------------------------------

def _assert_close(c, t):
    np.testing.assert_allclose(c.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)


def _run_both(torch, cmod, tmod, x, states):
    """Run both modules on ``x`` and the initial ``states`` (float64 arrays), compare the
    outputs, then the gradients of one random linear functional of all of them with
    respect to the input, the states and every parameter. Returns chainrule's outputs."""
    cx, tx = cr.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    chs, chx = _hx(states)
    ths = [torch.tensor(s, requires_grad=True) for s in states]
    couts = _flat(cmod(cx, chx))
    touts = _flat(tmod(tx, tuple(ths) if len(ths) == 2 else ths[0]))
    cl, tl = 0.0, 0.0
    for c, t in zip(couts, touts, strict=True):
        _assert_close(c, t)
        u = RNG.standard_normal(tuple(c.shape))
        cl = cl + (c * cr.tensor(u)).sum()
        tl = tl + (t * torch.tensor(u)).sum()
    cl.backward()
    tl.backward()
    for c, t in [(cx, tx), *zip(chs, ths)]:
        _assert_close(c.grad, t.grad)
    tparams = dict(tmod.named_parameters())
    assert [n for n, _ in cmod.named_parameters()] == list(tparams)
    for n, p in cmod.named_parameters():
        _assert_close(p.grad, tparams[n].grad)
    return couts


def _gradcheck_all(m, x, states):
    """Finite differences (one random projection each) for the input, the initial states
    and every parameter, through functional_call."""
    names = [n for n, _ in m.named_parameters()]
    params = [p.detach().clone().requires_grad_() for p in m.parameters()]
    k = len(states)

    def f(x, *rest):
        hs, ps = rest[:k], rest[k:]
        hx = tuple(hs) if k == 2 else hs[0]
        return _flat(nn.functional_call(m, dict(zip(names, ps)), (x, hx)))

    args = [cr.tensor(a, requires_grad=True) for a in (x, *states)]
    assert cr.autograd.gradcheck(f, (*args, *params), fast_mode=True)


@pytest.mark.parametrize("name", LAYERS)
def test_layer_against_reference_and_torch(name):
    cls, extra, mode = LAYERS[name]
    kw = dict(input_size=3, hidden_size=4, num_layers=2, bidirectional=True, batch_first=True,
              **extra)
    cmod = getattr(nn, cls)(**kw)
    tmod = None
    if torch is not None:
        tmod = getattr(torch.nn, cls)(**kw, dtype=torch.float64)
        with cr.no_grad():  # copy torch's values by name
            for n, p in tmod.named_parameters():
                getattr(cmod, n).copy_(cr.tensor(p.detach().numpy()))
    x, states = RNG.standard_normal((2, 5, 3)), _states(cmod, 2, mode)
    # without torch: the NumPy reference (time-major) of the same parameters, finite
    # differences
    want, want_h = _np_net(cmod, mode, x.transpose(1, 0, 2), states)
    out, h = cmod(cr.tensor(x), _hx(states)[1])
    np.testing.assert_allclose(out.detach().numpy(), want.transpose(1, 0, 2), rtol=1e-12,
                               atol=1e-14)
    for g, w in zip(_flat(h), want_h, strict=True):
        np.testing.assert_allclose(g.detach().numpy(), w, rtol=1e-12, atol=1e-14)
    _gradcheck_all(cmod, x, states)
    if tmod is not None:
        _run_both(torch, cmod, tmod, x, states)


@pytest.mark.parametrize("name", CELLS)
def test_cell_against_reference_and_torch(name):
    cls, extra, mode = CELLS[name]
    cmod = getattr(nn, cls)(3, 4, **extra)
    tmod = None
    if torch is not None:
        tmod = getattr(torch.nn, cls)(3, 4, **extra, dtype=torch.float64)
        cmod.load_state_dict(tmod.state_dict())
    x = RNG.standard_normal((2, 3))
    states = [RNG.standard_normal((2, 4)) for _ in range(1 + (mode == "LSTM"))]
    # without torch: the gate formulas, finite differences
    want = _np_step(mode, x, states[0], states[-1], *_np_params(cmod))
    got = _flat(cmod(cr.tensor(x), _hx(states)[1]))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), w, rtol=1e-12, atol=1e-14)
    _gradcheck_all(cmod, x, states)
    if tmod is not None:
        _run_both(torch, cmod, tmod, x, states)
