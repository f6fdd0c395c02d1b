"""chainrule.nn: Parameter, Module (registration, traversal, state_dict, modes), the layers,
the loss modules, nn.init and functional_call; torch comparisons when torch is installed."""

import copy
import math
from collections import OrderedDict

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn
from chainrule.nn import functional as F
from chainrule.nn import init

RNG = np.random.default_rng(99)


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8, dtype=cr.float64)
        self.bn = nn.BatchNorm1d(8, dtype=cr.float64)
        self.drop = nn.Dropout(0.5)
        self.head = nn.Sequential(nn.Tanh(), nn.Linear(8, 3, dtype=cr.float64))
        self.scale = nn.Parameter(cr.ones(1, dtype=cr.float64))

    def forward(self, x):
        return self.head(self.drop(self.bn(self.fc1(x)))) * self.scale


NET_PARAMS = ["scale", "fc1.weight", "fc1.bias", "bn.weight", "bn.bias", "head.1.weight",
              "head.1.bias"]
NET_STATE = ["scale", "fc1.weight", "fc1.bias", "bn.weight", "bn.bias", "bn.running_mean",
             "bn.running_var", "bn.num_batches_tracked", "head.1.weight", "head.1.bias"]


def test_chainrule_nn_is_the_package():
    import chainrule

    assert chainrule.nn is nn and nn.functional is F
    assert chainrule.ops.nn.cross_entropy is not None  # the primitives stay in ops.nn
    assert "nn" in chainrule.__all__


def test_parameter_is_a_leaf_tensor():
    p = nn.Parameter(cr.zeros(2, 3))
    assert isinstance(p, cr.Tensor) and p.requires_grad and p.is_leaf
    assert repr(p).startswith("Parameter containing:\ntensor(")
    q = nn.Parameter(cr.zeros(2), requires_grad=False)
    assert not q.requires_grad
    with pytest.raises(RuntimeError, match="only tensors of floating point dtype"):
        nn.Parameter(cr.tensor([1, 2]))
    d = copy.deepcopy(p)
    assert isinstance(d, nn.Parameter) and d is not p and d.requires_grad
    # as PyTorch's: a Parameter's deepcopy leaves .grad behind (a plain tensor's keeps it)
    p.sum().backward()
    assert copy.deepcopy(p).grad is None and p.grad is not None
    assert copy.deepcopy(nn.Linear(2, 2)).weight.grad is None


def test_named_parameters_order_and_names():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == NET_PARAMS
    assert [p.shape for p in net.parameters()] == [(1,), (8, 4), (8,), (8,), (8,), (3, 8), (3,)]
    assert [n for n, _ in net.named_buffers()] == ["bn.running_mean", "bn.running_var",
                                                   "bn.num_batches_tracked"]
    assert [n for n, _ in net.named_children()] == ["fc1", "bn", "drop", "head"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "bn", "drop", "head", "head.0",
                                                   "head.1"]
    assert len(list(net.modules())) == 7 and len(list(net.children())) == 4
    assert list(net.parameters(recurse=False)) == [net.scale]


def test_shared_parameters_are_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, nn.ReLU(), lin)
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias"]
    assert len(list(seq.named_modules())) == 3


def test_setattr_registration_and_errors():
    m = nn.Module()
    m.w = nn.Parameter(cr.ones(2))
    m.register_buffer("b", cr.zeros(2))
    m.register_buffer("tmp", cr.zeros(1), persistent=False)
    m.sub = nn.Linear(2, 1)
    m.plain = 3
    assert list(m.state_dict()) == ["w", "b", "sub.weight", "sub.bias"]
    with pytest.raises(TypeError, match=r"cannot assign 'torch\.DoubleTensor' as parameter "
                                        r"'w' \(torch\.nn\.Parameter or None expected\)"):
        m.w = cr.ones(2)
    m.w = None
    assert [n for n, _ in m.named_parameters()] == ["sub.weight", "sub.bias"]
    with pytest.raises(KeyError, match="attribute 'plain' already exists"):
        m.register_buffer("plain", cr.zeros(1))
    with pytest.raises(KeyError, match="module name can"):
        m.add_module("a.b", nn.ReLU())
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nope'"):
        _ = m.nope
    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
        class Bad(nn.Module):
            def __init__(self):
                self.p = nn.Parameter(cr.ones(1))

        Bad()
    del m.sub
    assert "sub" not in dict(m.named_children())


def test_state_dict_round_trip_into_a_fresh_module():
    cr.manual_seed(0)
    a = Net()
    a.train()
    a(cr.randn(6, 4, dtype=cr.float64))  # moves the running statistics
    cr.manual_seed(1)
    b = Net()
    sd = a.state_dict()
    assert list(sd) == NET_STATE
    assert all(not t.requires_grad for t in sd.values())
    result = b.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    for k, v in b.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), sd[k].numpy())
    assert isinstance(b.fc1.weight, nn.Parameter) and b.fc1.weight.requires_grad
    a.eval()
    b.eval()
    x = cr.randn(3, 4, dtype=cr.float64)
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())
    # the loaded values are copies; the state dict shares a's storage, as in PyTorch
    sd["fc1.bias"]._data[0] = 123.0
    assert b.fc1.bias.detach().numpy()[0] != 123.0
    assert a.fc1.bias.detach().numpy()[0] == 123.0


def test_load_state_dict_strict_and_shape_errors():
    net = Net()
    sd = net.state_dict()
    del sd["scale"]
    sd["extra"] = cr.zeros(1)
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "scale"'):
        net.load_state_dict(sd)
    result = net.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["scale"] and result.unexpected_keys == ["extra"]
    bad = net.state_dict()
    bad["fc1.bias"] = cr.zeros(5)
    with pytest.raises(RuntimeError, match=r"size mismatch for fc1.bias: copying a param with "
                                           r"shape torch\.Size\(\[5\]\) from checkpoint"):
        net.load_state_dict(bad)


def test_state_dict_keys_match_torch():
    net = Net()
    keys = list(net.state_dict())
    assert keys == NET_STATE
    torch = _torch()
    if torch is None:
        return
    tnn = torch.nn

    class TNet(tnn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = tnn.Linear(4, 8)
            self.bn = tnn.BatchNorm1d(8)
            self.drop = tnn.Dropout(0.5)
            self.head = tnn.Sequential(tnn.Tanh(), tnn.Linear(8, 3))
            self.scale = tnn.Parameter(torch.ones(1))

    tnet = TNet()
    assert keys == list(tnet.state_dict())
    assert [n for n, _ in net.named_parameters()] == [n for n, _ in tnet.named_parameters()]
    # a torch state dict loads into the chainrule module
    net.load_state_dict({k: v.double().numpy() for k, v in tnet.state_dict().items()})
    np.testing.assert_array_equal(net.fc1.weight.detach().numpy(),
                                  tnet.fc1.weight.detach().double().numpy())


def test_train_eval_and_dropout_module():
    net = Net()
    assert net.training and net.head[1].training
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    drop = nn.Dropout(0.4)
    x = cr.ones(1000, dtype=cr.float64)
    cr.manual_seed(5)
    y = drop(x)
    assert set(np.unique(y.numpy()).tolist()) == {0.0, 1 / 0.6}
    drop.eval()
    assert drop(x) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        nn.Dropout(2.0)


def test_batchnorm1d_running_stats_and_modes():
    bn = nn.BatchNorm1d(3, momentum=0.25, dtype=cr.float64)
    xs = [RNG.standard_normal((6, 3)) * 2 + 1, RNG.standard_normal((6, 3)) - 2]
    mean, var = np.zeros(3), np.ones(3)
    for x in xs:
        out = bn(cr.tensor(x))
        np.testing.assert_allclose(out.detach().numpy(),
                                   (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-10)
        mean = 0.75 * mean + 0.25 * x.mean(0)
        var = 0.75 * var + 0.25 * x.var(0, ddof=1)
    np.testing.assert_allclose(bn.running_mean.numpy(), mean, rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), var, rtol=1e-12)
    assert bn.num_batches_tracked.item() == 2
    bn.eval()
    x = RNG.standard_normal((2, 3))
    np.testing.assert_allclose(bn(cr.tensor(x)).detach().numpy(),
                               (x - mean) / np.sqrt(var + 1e-5), rtol=1e-12)
    assert bn.num_batches_tracked.item() == 2
    # momentum=None: cumulative average
    cum = nn.BatchNorm1d(3, momentum=None, dtype=cr.float64)
    for x in xs:
        cum(cr.tensor(x))
    np.testing.assert_allclose(cum.running_mean.numpy(), (xs[0].mean(0) + xs[1].mean(0)) / 2,
                               rtol=1e-12)
    # 3-D input (N, C, L)
    x3 = RNG.standard_normal((4, 3, 5))
    out = nn.BatchNorm1d(3, dtype=cr.float64)(cr.tensor(x3))
    m, v = x3.mean((0, 2), keepdims=True), x3.var((0, 2), keepdims=True)
    np.testing.assert_allclose(out.detach().numpy(), (x3 - m) / np.sqrt(v + 1e-5), rtol=1e-10)
    with pytest.raises(ValueError, match="BatchNorm1d: expected 2D or 3D input"):
        bn(cr.zeros(3))


def test_batchnorm1d_against_torch():
    x = RNG.standard_normal((5, 4))
    bn = nn.BatchNorm1d(4, dtype=cr.float64)
    out = bn(cr.tensor(x))
    assert out.shape == (5, 4) and bn.num_batches_tracked.item() == 1
    torch = _torch()
    if torch is None:
        return
    tbn = torch.nn.BatchNorm1d(4).double()
    tout = tbn(torch.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(bn.running_var.numpy(), tbn.running_var.numpy(), rtol=1e-12)
    np.testing.assert_allclose(bn.running_mean.numpy(), tbn.running_mean.numpy(), rtol=1e-12)


def test_zero_grad_and_requires_grad():
    net = Net()
    net.eval()
    net(cr.randn(3, 4, dtype=cr.float64)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(np.all(p.grad.numpy() == 0) for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_linear_module():
    cr.manual_seed(0)
    lin = nn.Linear(16, 5)
    assert lin.weight.shape == (5, 16) and lin.bias.shape == (5,)
    assert lin.weight.dtype == cr.get_default_dtype()
    bound = 1 / math.sqrt(16)  # kaiming_uniform(a=sqrt(5)) and the bias: U(-1/4, 1/4)
    assert np.abs(lin.weight.detach().numpy()).max() <= bound
    assert np.abs(lin.bias.detach().numpy()).max() <= bound
    assert np.abs(lin.weight.detach().numpy()).max() > 0.8 * bound
    x = RNG.standard_normal((3, 16))
    np.testing.assert_allclose(lin(cr.tensor(x)).detach().numpy(),
                               x @ lin.weight.detach().numpy().T + lin.bias.detach().numpy(),
                               rtol=1e-12)
    assert repr(lin) == "Linear(in_features=16, out_features=5, bias=True)"
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(3x15 and 16x5\)"):
        lin(cr.zeros(3, 15))
    nb = nn.Linear(2, 3, bias=False, dtype=cr.float32)
    assert nb.bias is None and [n for n, _ in nb.named_parameters()] == ["weight"]
    assert nb(cr.zeros(1, 2, dtype=cr.float32)).dtype == np.float32


def test_sequential_containers_and_repr():
    seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    assert len(seq) == 3 and isinstance(seq[1], nn.ReLU) and isinstance(seq[-1], nn.Linear)
    assert [type(m).__name__ for m in seq] == ["Linear", "ReLU", "Linear"]
    sub = seq[:2]
    assert isinstance(sub, nn.Sequential) and len(sub) == 2
    x = cr.randn(5, 3)
    np.testing.assert_allclose(seq(x).detach().numpy(),
                               seq[2](seq[1](seq[0](x))).detach().numpy())
    assert repr(seq) == ("Sequential(\n  (0): Linear(in_features=3, out_features=4, bias=True)\n"
                         "  (1): ReLU()\n  (2): Linear(in_features=4, out_features=2, bias=True)"
                         "\n)")
    named = nn.Sequential(OrderedDict(enc=nn.Linear(2, 2), act=nn.Tanh()))
    assert [n for n, _ in named.named_parameters()] == ["enc.weight", "enc.bias"]
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    ml.append(nn.Identity())
    assert len(ml) == 4 and len(list(ml.parameters())) == 6
    assert [n for n, _ in ml.named_parameters()][:2] == ["0.weight", "0.bias"]
    md = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.ReLU()})
    assert list(md) == ["a", "b"] and "a" in md and len(list(md.parameters())) == 2
    with pytest.raises(IndexError, match="index 3 is out of range"):
        seq[3]


def test_module_to_dtype_and_apply():
    net = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    net.to(cr.float32)
    assert all(p.dtype == np.float32 for p in net.parameters())
    assert all(isinstance(p, nn.Parameter) for p in net.parameters())
    assert net[1].running_mean.dtype == np.float32
    assert net[1].num_batches_tracked.dtype == np.int64
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "BatchNorm1d", "Sequential"]
    net.apply(lambda m: init.zeros_(m.weight) if isinstance(m, nn.Linear) else None)
    assert np.all(net[0].weight.detach().numpy() == 0)


def test_layer_norm_embedding_flatten_identity_modules():
    ln = nn.LayerNorm(4, dtype=cr.float64)
    assert [n for n, _ in ln.named_parameters()] == ["weight", "bias"]
    x = RNG.standard_normal((2, 4))
    np.testing.assert_allclose(ln(cr.tensor(x)).detach().numpy(),
                               (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True)
                                                                        + 1e-5), rtol=1e-10)
    emb = nn.Embedding(5, 3, padding_idx=0, dtype=cr.float64)
    assert np.all(emb.weight.detach().numpy()[0] == 0)
    assert emb(cr.tensor([[1, 0]])).shape == (1, 2, 3)
    assert nn.Flatten()(cr.zeros(2, 3, 4)).shape == (2, 12)
    x = cr.zeros(2)
    assert nn.Identity(7, k=1)(x) is x
    bil = nn.Bilinear(2, 3, 4, dtype=cr.float64)
    assert bil(cr.zeros(5, 2, dtype=cr.float64), cr.zeros(5, 3, dtype=cr.float64)).shape == (5, 4)


def test_activation_and_loss_modules_call_the_functionals():
    x = cr.tensor(RNG.standard_normal((3, 4)))
    y = cr.tensor(RNG.standard_normal((3, 4)))
    t = cr.tensor([0, 3, 1])
    pairs = [
        (nn.ReLU(), F.relu(x)), (nn.GELU("tanh"), F.gelu(x, approximate="tanh")),
        (nn.LeakyReLU(0.3), F.leaky_relu(x, 0.3)), (nn.ELU(alpha=0.5), F.elu(x, 0.5)),
        (nn.Softplus(beta=2), F.softplus(x, 2)), (nn.Softmax(dim=0), F.softmax(x, 0)),
        (nn.LogSoftmax(1), F.log_softmax(x, 1)), (nn.SiLU(), F.silu(x)), (nn.Tanh(), x.tanh()),
        (nn.Sigmoid(), x.sigmoid()), (nn.Hardtanh(-2, 2), F.hardtanh(x, -2, 2)),
        (nn.SELU(), F.selu(x)), (nn.Mish(), F.mish(x)),
    ]
    for module, expected in pairs:
        np.testing.assert_array_equal(module(x).numpy(), expected.numpy())
    assert repr(nn.LeakyReLU(0.3)) == "LeakyReLU(negative_slope=0.3)"
    assert repr(nn.GELU()) == "GELU(approximate='none')"
    losses = [
        (nn.MSELoss(), F.mse_loss(x, y)),
        (nn.L1Loss(reduction="sum"), F.l1_loss(x, y, reduction="sum")),
        (nn.HuberLoss(delta=0.3), F.huber_loss(x, y, delta=0.3)),
        (nn.SmoothL1Loss(beta=0.3), F.smooth_l1_loss(x, y, beta=0.3)),
    ]
    for module, expected in losses:
        assert module(x, y).item() == expected.item()
    w = cr.tensor([1.0, 2.0, 0.5, 1.0])
    assert nn.CrossEntropyLoss(weight=w, label_smoothing=0.1)(x, t).item() == \
        F.cross_entropy(x, t, weight=w, label_smoothing=0.1).item()
    assert nn.NLLLoss(ignore_index=3)(x, t).item() == F.nll_loss(x, t, ignore_index=3).item()
    p = x.sigmoid()
    q = y.sigmoid()
    assert nn.BCELoss()(p, q).item() == F.binary_cross_entropy(p, q).item()
    assert nn.BCEWithLogitsLoss(pos_weight=w)(x, q).item() == \
        F.binary_cross_entropy_with_logits(x, q, pos_weight=w).item()
    assert nn.KLDivLoss(reduction="batchmean")(F.log_softmax(x, 1), F.softmax(y, 1)).item() == \
        F.kl_div(F.log_softmax(x, 1), F.softmax(y, 1), reduction="batchmean").item()
    assert [n for n, _ in nn.CrossEntropyLoss(weight=w).named_buffers()] == ["weight"]


def test_init_functions():
    cr.manual_seed(0)
    w = cr.empty(200, 300, dtype=cr.float64, requires_grad=True)
    v0 = w._version
    assert init.xavier_uniform_(w, gain=2.0) is w and w._version > v0
    a = 2.0 * math.sqrt(6 / 500)
    assert np.abs(w.detach().numpy()).max() <= a and w.detach().numpy().std() > 0.5 * a / 2
    init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(w.detach().numpy().std() - math.sqrt(2 / 200)) < 0.005
    init.xavier_normal_(w)
    assert abs(w.detach().numpy().std() - math.sqrt(2 / 500)) < 0.003
    init.kaiming_uniform_(w, a=math.sqrt(5))
    assert np.abs(w.detach().numpy()).max() <= 1 / math.sqrt(300)
    init.normal_(w, 3.0, 0.1)
    assert abs(w.detach().numpy().mean() - 3.0) < 0.01
    init.uniform_(w, -1, 1)
    assert -1 <= w.detach().numpy().min() and w.detach().numpy().max() <= 1
    init.constant_(w, 0.25)
    assert np.all(w.detach().numpy() == 0.25)
    init.ones_(w)
    assert np.all(w.detach().numpy() == 1)
    init.zeros_(w)
    assert np.all(w.detach().numpy() == 0)
    assert w.requires_grad and w.is_leaf
    q = cr.empty(3, 5, dtype=cr.float64)
    init.orthogonal_(q, gain=2.0)
    np.testing.assert_allclose(q.numpy() @ q.numpy().T, 4 * np.eye(3), atol=1e-12)
    assert init.calculate_gain("tanh") == 5 / 3
    assert init.calculate_gain("relu") == math.sqrt(2)
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2 / 1.04)
    assert init.calculate_gain("selu") == 0.75 and init.calculate_gain("linear") == 1
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        init.calculate_gain("gelu")
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed"):
        init.xavier_uniform_(cr.zeros(3))


def test_init_reproducible_with_manual_seed():
    cr.manual_seed(11)
    a = nn.Linear(3, 4)
    cr.manual_seed(11)
    b = nn.Linear(3, 4)
    np.testing.assert_array_equal(a.weight.detach().numpy(), b.weight.detach().numpy())


def test_init_against_torch_statistics():
    w = cr.empty(64, 32, dtype=cr.float64)
    init.kaiming_uniform_(w, a=math.sqrt(5))
    assert np.abs(w.numpy()).max() <= 1 / math.sqrt(32)
    torch = _torch()
    if torch is None:
        return
    assert init.calculate_gain("leaky_relu", 0.3) == torch.nn.init.calculate_gain("leaky_relu",
                                                                                  0.3)
    tl = torch.nn.Linear(32, 64)
    # the same distribution: the same bound
    bound_t = float(tl.weight.detach().abs().max())
    assert abs(bound_t - float(np.abs(w.numpy()).max())) < 0.02


def test_functional_call_swaps_and_restores():
    net = nn.Sequential(nn.Linear(3, 2, dtype=cr.float64), nn.Tanh(),
                        nn.Linear(2, 1, dtype=cr.float64))
    x = cr.tensor(RNG.standard_normal((4, 3)))
    params = {k: cr.tensor(RNG.standard_normal(tuple(v.shape)))
              for k, v in net.named_parameters()}
    out = cr.func.functional_call(net, params, (x,))
    W0, b0, W1, b1 = (params[k].numpy() for k in ("0.weight", "0.bias", "2.weight", "2.bias"))
    expected = np.tanh(x.numpy() @ W0.T + b0) @ W1.T + b1
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    originals = list(net.parameters())
    assert all(isinstance(p, nn.Parameter) for p in originals)

    grads = cr.func.grad(lambda p: cr.func.functional_call(net, p, (x,)).sum())(params)
    assert set(grads) == set(params)
    # d/d b1 of sum over 4 rows = 4
    np.testing.assert_allclose(grads["2.bias"].numpy(), [4.0])
    h = np.tanh(x.numpy() @ W0.T + b0)
    np.testing.assert_allclose(grads["2.weight"].numpy(), h.sum(0, keepdims=True), rtol=1e-12)

    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        cr.func.functional_call(nn.Sequential(net, Boom()), {"0.0.weight": cr.zeros(2, 3)},
                                (x,))
    assert all(a is b for a, b in zip(net.parameters(), originals))
    with pytest.raises(ValueError, match="missing key"):
        cr.func.functional_call(net, {"0.weight": cr.zeros(2, 3)}, (x,), strict=True)


def test_functional_call_tied_weights_and_buffers():
    lin = nn.Linear(2, 2, bias=False, dtype=cr.float64)
    seq = nn.Sequential(lin, lin)
    W = cr.tensor(np.eye(2) * 2)
    out = cr.func.functional_call(seq, {"0.weight": W}, cr.ones(1, 2, dtype=cr.float64))
    assert out.tolist() == [[4.0, 4.0]]  # both uses swapped (tie_weights=True)
    bn = nn.BatchNorm1d(2, dtype=cr.float64).eval()
    out = cr.func.functional_call(bn, {"running_mean": cr.tensor([1.0, 1.0])},
                                  (cr.tensor([[1.0, 3.0]]),))
    np.testing.assert_allclose(out.detach().numpy(), [[0.0, 2 / math.sqrt(1 + 1e-5)]],
                               rtol=1e-12)
    assert bn.running_mean.tolist() == [0.0, 0.0]


def test_module_gradients_by_gradcheck():
    cr.manual_seed(2)
    net = nn.Sequential(nn.Linear(3, 4, dtype=cr.float64), nn.GELU(),
                        nn.LayerNorm(4, dtype=cr.float64), nn.Linear(4, 2, dtype=cr.float64))
    x = cr.tensor(RNG.standard_normal((5, 3)))
    t = cr.tensor([0, 1, 1, 0, 1])
    names = [n for n, _ in net.named_parameters()]
    params = tuple(cr.tensor(p.detach(), requires_grad=True) for p in net.parameters())

    def loss(*ps):
        return F.cross_entropy(cr.func.functional_call(net, dict(zip(names, ps)), (x,)), t)

    assert cr.autograd.gradcheck(loss, params)


def test_mlp_matches_torch_forward_and_gradients():
    cr.manual_seed(3)
    net = nn.Sequential(nn.Linear(4, 5, dtype=cr.float64), nn.ReLU(),
                        nn.Linear(5, 3, dtype=cr.float64))
    x = RNG.standard_normal((6, 4))
    t = np.array([0, 2, 1, 1, 0, 2])
    loss = nn.CrossEntropyLoss()(net(cr.tensor(x)), cr.tensor(t))
    loss.backward()
    assert all(p.grad is not None for p in net.parameters())
    torch = _torch()
    if torch is None:
        return
    tnet = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.ReLU(),
                               torch.nn.Linear(5, 3)).double()
    tnet.load_state_dict({k: torch.tensor(v.numpy()) for k, v in net.state_dict().items()})
    tloss = torch.nn.CrossEntropyLoss()(tnet(torch.tensor(x)), torch.tensor(t))
    tloss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-12)
    for (n, p), (tn, tp) in zip(net.named_parameters(), tnet.named_parameters()):
        assert n == tn
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_nn_utils_clip_grad_norm_value_and_parameter_vectors():
    from chainrule.nn.utils import (
        clip_grad_norm_,
        clip_grad_value_,
        parameters_to_vector,
        vector_to_parameters,
    )

    a = cr.tensor(np.zeros(2), requires_grad=True)
    b = cr.tensor(np.zeros(3), requires_grad=True)
    a.grad, b.grad = cr.tensor([3.0, 0.0]), cr.tensor([0.0, 4.0, 0.0])
    total = clip_grad_norm_([a, b], 1.0)  # the norm of all gradients as one vector: 5
    assert float(total) == pytest.approx(5.0)
    np.testing.assert_allclose(a.grad.numpy(), [3 / (5 + 1e-6), 0.0])
    np.testing.assert_allclose(b.grad.numpy(), [0.0, 4 / (5 + 1e-6), 0.0])
    assert float(clip_grad_norm_([a, b], 10.0)) == pytest.approx(1.0, rel=1e-5)  # no change
    b.grad = cr.tensor([-2.0, 0.5, 9.0])
    clip_grad_value_([b], 1.0)
    np.testing.assert_array_equal(b.grad.numpy(), [-1.0, 0.5, 1.0])
    model = cr.nn.Linear(3, 2)
    vec = parameters_to_vector(model.parameters())
    assert vec.shape == (8,)
    vector_to_parameters(vec * 0 + 1.0, model.parameters())
    assert (model.weight.detach().numpy() == 1).all() and (model.bias.detach().numpy() == 1).all()
    with pytest.raises(RuntimeError, match="non-finite"):
        a.grad = cr.tensor([np.inf, 0.0])
        clip_grad_norm_([a], 1.0, error_if_nonfinite=True)


def test_clip_grad_norm_p3_scales_all_gradients_together():
    g1, g2 = np.array([[1.0, -2.0], [0.5, 3.0]]), np.array([4.0, -1.0])
    ours = [cr.tensor(np.zeros_like(g), requires_grad=True) for g in (g1, g2)]
    for p, g in zip(ours, (g1, g2)):
        p.grad = cr.tensor(g)
    n1 = cr.nn.utils.clip_grad_norm_(ours, 2.0, norm_type=3.0)
    # the 3-norm of all gradients as one vector: (1 + 8 + 0.125 + 27 + 64 + 1) ** (1/3) ~ 4.66,
    # above max_norm = 2, so every gradient is scaled by 2 / (total + 1e-6)
    total = np.sum(np.abs(np.r_[g1.ravel(), g2]) ** 3) ** (1 / 3)
    assert float(n1) == pytest.approx(total)
    for p, g in zip(ours, (g1, g2)):
        np.testing.assert_allclose(p.grad.numpy(), g * (2.0 / (total + 1e-6)))
    torch = _torch()
    if torch is None:
        return
    theirs = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in (g1, g2)]
    for q, g in zip(theirs, (g1, g2)):
        q.grad = torch.tensor(g)
    n2 = torch.nn.utils.clip_grad_norm_(theirs, 2.0, norm_type=3.0)
    assert float(n1) == pytest.approx(float(n2))
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy())


def test_parameter_list_and_dict_register_their_parameters():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.scales = nn.ParameterList([cr.ones(2), nn.Parameter(cr.zeros(2))])
            self.shifts = nn.ParameterDict({"a": cr.ones(2)})
            self.shifts["b"] = cr.full((2,), 3.0)

        def forward(self, x):
            for s in self.scales:
                x = x * s + 1
            return x + self.shifts["a"] + self.shifts["b"]

    m = Model()
    assert [n for n, _ in m.named_parameters()] == ["scales.0", "scales.1", "shifts.a",
                                                    "shifts.b"]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in m.parameters())
    assert len(m.scales) == 2 and "a" in m.shifts and m.scales[-1] is m.scales[1]
    x = cr.tensor([1.0, 2.0])
    m(x).sum().backward()
    # y = (x * s0 + 1) * s1 + 1 + a + b: dy/ds1 = x * s0 + 1, dy/ds0 = x * s1 = 0
    np.testing.assert_allclose(np.asarray(m.scales[1].grad), [2.0, 3.0])
    np.testing.assert_allclose(np.asarray(m.scales[0].grad), [0.0, 0.0])
    np.testing.assert_allclose(np.asarray(m.shifts["b"].grad), [1.0, 1.0])
    assert list(m.state_dict()) == ["scales.0", "scales.1", "shifts.a", "shifts.b"]
    with pytest.raises(IndexError, match="ParameterList: index 5"):
        m.scales[5]


def test_prelu_and_rmsnorm_modules():
    x = np.array([[-2.0, 1.0, -0.5], [3.0, -1.0, 0.0]])
    p = nn.PReLU(3, init=0.1)
    assert p.weight.shape == (3,)
    np.testing.assert_allclose(np.asarray(p(cr.tensor(x)).detach()), np.where(x > 0, x, 0.1 * x))
    r = nn.RMSNorm(3, eps=1e-6)
    expected = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(np.asarray(r(cr.tensor(x)).detach()), expected)
    torch = _torch()
    if torch is None:
        return
    tp, tr = torch.nn.PReLU(3, init=0.1).double(), torch.nn.RMSNorm(3, eps=1e-6).double()
    np.testing.assert_allclose(np.asarray(p(cr.tensor(x)).detach()),
                               tp(torch.tensor(x)).detach().numpy())
    np.testing.assert_allclose(np.asarray(r(cr.tensor(x)).detach()),
                               tr(torch.tensor(x)).detach().numpy())
    assert [n for n, _ in p.named_parameters()] == [n for n, _ in tp.named_parameters()]


@pytest.mark.parametrize("make, text", [
    (lambda nn: nn.BatchNorm1d(4), "BatchNorm1d(4, eps=1e-05, momentum=0.1, affine=True, "
                                   "bias=True, track_running_stats=True)"),
    (lambda nn: nn.BatchNorm1d(4, bias=False), "BatchNorm1d(4, eps=1e-05, momentum=0.1, "
                                               "affine=True, bias=False, "
                                               "track_running_stats=True)"),
    (lambda nn: nn.GroupNorm(2, 4, bias=False), "GroupNorm(2, 4, eps=1e-05, affine=True, "
                                                "bias=False)"),
    (lambda nn: nn.LayerNorm(4), "LayerNorm((4,), eps=1e-05, elementwise_affine=True, "
                                 "bias=True)"),
])
def test_norm_layers_take_bias_and_print_it_as_pytorch(make, text):
    m = make(nn)
    assert repr(m) == text
    assert (m.bias is None) == ("bias=False" in text)
    try:
        import torch
    except ImportError:
        return
    assert repr(make(torch.nn)) == text
