"""Lazy modules (``nn.LazyLinear``, ``LazyConv*``, ``LazyConvTranspose*``,
``LazyBatchNorm*``, ``LazyInstanceNorm*``), ``nn.parameter`` (``UninitializedParameter``,
``UninitializedBuffer``), and the names ported code imports (``nn.RNNBase``,
``nn.RNNCellBase``, ``nn.Container``, ``nn.NLLLoss2d``, ``torch.nn.modules.*``).

Values without PyTorch: a lazy module after its first call equals the eager module built
with the same seed, and with any state loaded computes what the eager module does (train
and eval); before it, it prints as the eager module of size 0 with "Lazy" in front. With
PyTorch installed also: reprs, state-dict keys, outputs with PyTorch's weights copied in
(float64, 1e-10) and error types."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

import chainrule as cr
import chainrule.nn.functional as F
from chainrule import nn, optim

try:
    import torch
except ImportError:
    torch = None

# (lazy constructor, eager constructor given the inferred size, input shape)
CASES = {
    "LazyLinear": (lambda: nn.LazyLinear(3), lambda n: nn.Linear(n, 3), (4, 5)),
    "LazyLinear-nobias": (lambda: nn.LazyLinear(3, bias=False),
                          lambda n: nn.Linear(n, 3, bias=False), (2, 6, 5)),
    "LazyConv1d": (lambda: nn.LazyConv1d(4, 3, padding=1), lambda n: nn.Conv1d(n, 4, 3, padding=1),
                   (2, 3, 7)),
    "LazyConv2d": (lambda: nn.LazyConv2d(4, 3, stride=2, groups=2),
                   lambda n: nn.Conv2d(n, 4, 3, stride=2, groups=2), (2, 6, 7, 7)),
    "LazyConv2d-unbatched": (lambda: nn.LazyConv2d(2, 2, bias=False),
                             lambda n: nn.Conv2d(n, 2, 2, bias=False), (3, 5, 5)),
    "LazyConv3d": (lambda: nn.LazyConv3d(2, 2), lambda n: nn.Conv3d(n, 2, 2), (1, 3, 4, 4, 4)),
    "LazyConvTranspose1d": (lambda: nn.LazyConvTranspose1d(4, 3, stride=2),
                            lambda n: nn.ConvTranspose1d(n, 4, 3, stride=2), (2, 3, 5)),
    "LazyConvTranspose2d": (lambda: nn.LazyConvTranspose2d(4, 3, groups=2),
                            lambda n: nn.ConvTranspose2d(n, 4, 3, groups=2), (1, 6, 5, 5)),
    "LazyConvTranspose3d": (lambda: nn.LazyConvTranspose3d(2, 2),
                            lambda n: nn.ConvTranspose3d(n, 2, 2), (1, 3, 3, 3, 3)),
    "LazyBatchNorm1d": (lambda: nn.LazyBatchNorm1d(), lambda n: nn.BatchNorm1d(n), (6, 4)),
    "LazyBatchNorm2d": (lambda: nn.LazyBatchNorm2d(momentum=None),
                        lambda n: nn.BatchNorm2d(n, momentum=None), (3, 4, 5, 5)),
    "LazyBatchNorm3d": (lambda: nn.LazyBatchNorm3d(affine=False),
                        lambda n: nn.BatchNorm3d(n, affine=False), (2, 3, 2, 3, 3)),
    "LazyInstanceNorm1d": (lambda: nn.LazyInstanceNorm1d(),
                           lambda n: nn.InstanceNorm1d(n, affine=True, track_running_stats=True),
                           (2, 3, 6)),
    "LazyInstanceNorm2d": (lambda: nn.LazyInstanceNorm2d(affine=False, track_running_stats=False),
                           lambda n: nn.InstanceNorm2d(n), (2, 3, 4, 4)),
    "LazyInstanceNorm3d": (lambda: nn.LazyInstanceNorm3d(bias=False),
                           lambda n: nn.InstanceNorm3d(n, affine=True, track_running_stats=True,
                                                       bias=False), (2, 3, 2, 3, 3)),
}


def _inferred(name, shape):
    if name.startswith("LazyLinear"):
        return shape[-1]
    return shape[0] if name.endswith("unbatched") else shape[1]


@pytest.mark.parametrize("name", CASES)
def test_first_call_equals_eager_same_seed(name):
    lazy_fn, eager_fn, shape = CASES[name]
    x = cr.tensor(np.random.default_rng(0).standard_normal(shape))
    cr.manual_seed(3)
    lazy = lazy_fn()
    uninitialized = lazy.has_uninitialized_params()
    assert uninitialized == any(nn.parameter.is_lazy(t) for t in
                                [*lazy.parameters(), *lazy.buffers()])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (num_features=0 of a norm with nothing to infer)
        out = lazy(x)
    cr.manual_seed(3)
    eager = eager_fn(_inferred(name, shape))
    expected = eager(x)
    assert type(lazy) is type(eager)
    if uninitialized:
        assert repr(lazy) == repr(eager)
    else:  # nothing to initialise: the size is left at 0, as PyTorch leaves it
        assert lazy.num_features == 0
    assert not hasattr(lazy, "has_uninitialized_params")
    assert np.array_equal(out.detach().numpy(), expected.detach().numpy())
    mine, theirs = lazy.state_dict(), eager.state_dict()
    assert list(mine) == list(theirs)
    for key in mine:
        assert type(mine[key]) is type(theirs[key])
        assert np.array_equal(mine[key].numpy(), theirs[key].numpy()), key
    for p in lazy.parameters():
        assert type(p) is nn.Parameter and p.requires_grad


def test_uninitialized_state():
    m = nn.LazyLinear(3)
    assert repr(m) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    assert repr(m.weight) == "<UninitializedParameter>" and m.has_uninitialized_params()
    assert isinstance(m.weight, nn.Parameter) and isinstance(m.weight, nn.UninitializedParameter)
    assert [k for k, _ in m.named_parameters()] == ["weight", "bias"]
    sd = m.state_dict()
    assert list(sd) == ["weight", "bias"] and sd["weight"] is m.weight
    assert m.weight.dtype == cr.get_default_dtype() and m.weight.requires_grad
    assert m.weight.size() == (0,) and m.weight.grad is None and m.weight.is_leaf
    bn = nn.LazyBatchNorm2d()
    assert repr(bn) == ("LazyBatchNorm2d(0, eps=1e-05, momentum=0.1, affine=True, bias=True, "
                        "track_running_stats=True)")
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                     "num_batches_tracked"]
    assert repr(bn.running_mean) == "<UninitializedBuffer>"
    assert repr(nn.LazyConv2d(4, 3, padding=1, bias=False)) == \
        "LazyConv2d(0, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)"
    bare = nn.LazyBatchNorm1d(affine=False, track_running_stats=False)
    assert not bare.has_uninitialized_params() and list(bare.state_dict()) == []
    assert bare(cr.randn(4, 3)).shape == (4, 3) and type(bare) is nn.BatchNorm1d


def test_using_uninitialized_raises():
    p = nn.LazyLinear(3).weight
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        _ = p.shape
    for use in (lambda: p + 1, lambda: p.sum(), lambda: cr.exp(p), lambda: p.numel(),
                lambda: F.linear(cr.ones(2, 2), p), lambda: p[0]):
        with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
            use()
    with pytest.raises(NotImplementedError, match="initialize_parameters is not implemented"):
        nn.modules.lazy.LazyModuleMixin.initialize_parameters(nn.LazyLinear(3))
    with pytest.raises(RuntimeError, match="Expected 3D .unbatched. or 4D .batched. input to "
                                           "LazyConv2d"):
        nn.LazyConv2d(3, 2)(cr.ones(3))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv2d(4, 2, groups=2)(cr.ones(1, 3, 4, 4))
    with pytest.raises(RuntimeError, match="Can't access the shape"):  # lazy into eager
        nn.Linear(2, 3).load_state_dict(nn.LazyLinear(3).state_dict())


def test_materialize():
    p = nn.UninitializedParameter(requires_grad=False, dtype=cr.float32)
    p.materialize((2, 3))
    assert type(p) is nn.Parameter and p.shape == (2, 3) and p.dtype == cr.float32
    assert not p.requires_grad
    b = nn.UninitializedBuffer(persistent=False)
    assert b.persistent is False and not b.requires_grad
    b.materialize((4,), dtype=cr.float32)
    assert type(b) is cr.Tensor and b.shape == (4,) and b.dtype == cr.float32
    m = nn.Module()
    m.stat = nn.UninitializedBuffer(persistent=False)  # registers as a buffer
    assert "stat" in m._buffers and "stat" not in m.state_dict()


def test_optimizer_before_forward_and_dtype():
    cr.manual_seed(0)
    model = nn.Sequential(nn.LazyLinear(4), nn.Tanh(), nn.LazyLinear(2)).float()
    assert model[0].weight.dtype == cr.float32
    params = list(model.parameters())
    opt = optim.SGD(model.parameters(), lr=0.5)
    x = cr.randn(5, 3, dtype=cr.float32)
    model(x).sum().backward()
    assert [id(p) for p in model.parameters()] == [id(p) for p in params]
    before = [p.detach().clone() for p in params]
    opt.step()
    for p, b in zip(params, before):
        assert p.dtype == cr.float32
        np.testing.assert_allclose(p.detach().numpy(), (b - 0.5 * p.grad).numpy(), rtol=1e-6)


def test_state_dict_round_trips():
    cr.manual_seed(1)
    full = nn.LazyLinear(3)
    full(cr.ones(2, 4))
    lazy = nn.LazyLinear(3)
    lazy.load_state_dict(full.state_dict())  # materialized with the loaded shapes
    assert type(lazy) is nn.LazyLinear and not lazy.has_uninitialized_params()
    assert np.array_equal(lazy.weight.detach().numpy(), full.weight.detach().numpy())
    assert lazy(cr.ones(2, 4)).shape == (2, 3) and type(lazy) is nn.Linear
    other = nn.LazyLinear(3)
    assert other.load_state_dict(nn.LazyLinear(3).state_dict()) == ([], [])
    assert other.has_uninitialized_params()
    twin = copy.deepcopy(nn.LazyConv1d(2, 3))
    assert twin.has_uninitialized_params() and twin(cr.ones(1, 4, 6)).shape == (1, 2, 4)
    again = pickle.loads(pickle.dumps(nn.LazyBatchNorm1d()))
    assert again(cr.randn(3, 5)).shape == (3, 5) and type(again) is nn.BatchNorm1d


def test_names_ported_code_imports():
    from chainrule.nn.modules.batchnorm import _BatchNorm
    from chainrule.nn.modules.conv import _ConvNd
    from chainrule.nn.modules.lazy import LazyModuleMixin
    from chainrule.nn.modules.loss import _Loss, _WeightedLoss
    from chainrule.nn.modules.module import Module
    from chainrule.nn.modules.utils import _ntuple, _pair, _single, _triple

    from chainrule.nn.parameter import Buffer, Parameter, UninitializedParameter

    assert Module is nn.Module and Parameter is nn.Parameter and Buffer is nn.Buffer
    assert UninitializedParameter is nn.UninitializedParameter
    assert issubclass(nn.LazyLinear, LazyModuleMixin) and isinstance(nn.MSELoss(), _Loss)
    assert isinstance(nn.NLLLoss(), _WeightedLoss) and isinstance(nn.Conv2d(1, 1, 1), _ConvNd)
    assert isinstance(nn.ConvTranspose2d(1, 1, 1), _ConvNd)
    assert all(isinstance(m, _BatchNorm) for m in (nn.BatchNorm1d(2), nn.BatchNorm3d(2),
                                                    nn.SyncBatchNorm(2), nn.LazyBatchNorm2d()))
    assert not isinstance(nn.InstanceNorm2d(2), _BatchNorm)

    class MyNorm(_BatchNorm):
        def _check_input_dim(self, input):
            pass

    assert isinstance(MyNorm(3), _BatchNorm) and MyNorm(3)(cr.randn(4, 3)).shape == (4, 3)
    assert (_single(2), _pair(2), _triple((1, 2, 3)), _ntuple(4)(1)) == \
        ((2,), (2, 2), (1, 2, 3), (1, 1, 1, 1))
    assert nn.modules.pooling.MaxPool2d is nn.MaxPool2d
    assert nn.modules.rnn.RNNBase is nn.RNNBase
    assert isinstance(nn.LSTM(2, 3), nn.RNNBase) and isinstance(nn.GRUCell(2, 3), nn.RNNCellBase)
    assert not isinstance(nn.GRUCell(2, 3), nn.RNNBase)
    cell = nn.RNNCellBase(3, 5, True, 2)
    assert cell.weight_ih.shape == (10, 3) and cell.bias_hh.shape == (10,)
    sd = {"module.a": 1, "module.b.c": 2, "x": 3}
    nn.modules.utils.consume_prefix_in_state_dict_if_present(sd, "module.")
    assert sd == {"a": 1, "b.c": 2, "x": 3}


def test_deprecated_names():
    with pytest.warns(FutureWarning, match="nn.Container` is deprecated"):
        c = nn.Container(fc=nn.Linear(2, 3))
    assert [k for k, _ in c.named_children()] == ["fc"]
    with pytest.warns(FutureWarning, match="NLLLoss2d` has been deprecated"):
        loss = nn.NLLLoss2d(ignore_index=1)
    x = F.log_softmax(cr.randn(2, 3, 4, 4), 1)
    t = cr.randint(0, 3, (2, 4, 4))
    assert loss(x, t).item() == nn.NLLLoss(ignore_index=1)(x, t).item()


# --- against the eager modules and PyTorch -----------------------------------------------

def _random_state(module):
    """Random values of the shapes of ``module``'s state (variances positive), the step
    counter kept."""
    rng = np.random.default_rng(7)
    state = {}
    for k, v in module.state_dict().items():
        if k.endswith("num_batches_tracked"):
            state[k] = v
        elif k.endswith("running_var"):
            state[k] = cr.tensor(rng.random(tuple(v.shape)) + 0.5)
        else:
            state[k] = cr.tensor(rng.standard_normal(tuple(v.shape)))
    return state


@pytest.mark.parametrize("name", CASES)
def test_against_eager_and_torch(name):
    lazy_fn, eager_fn, shape = CASES[name]
    mine = lazy_fn()
    # without torch: before the first call the lazy module prints as the eager module of
    # size 0 with "Lazy" in front, and has its state-dict keys, parameters and buffers
    # uninitialised (the step counter is a plain 0)
    eager0 = eager_fn(0)
    assert repr(mine) == "Lazy" + repr(eager0)
    assert list(mine.state_dict()) == list(eager0.state_dict())
    params = {k for k, _ in eager0.named_parameters()}
    assert [repr(v) for v in mine.state_dict().values()] == [
        "<UninitializedParameter>" if k in params else
        repr(cr.tensor(0)) if k.endswith("num_batches_tracked") else "<UninitializedBuffer>"
        for k in mine.state_dict()]
    # after it, with any state loaded, it computes what the eager module does
    x, y = np.random.default_rng(5).standard_normal((2, *shape))
    uninitialized = mine.has_uninitialized_params()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine(cr.tensor(x))
    eager = eager_fn(_inferred(name, shape))
    # (with nothing to initialise the size stays 0)
    assert repr(mine) == repr(eager if uninitialized else eager0)
    state = _random_state(eager)
    mine.load_state_dict(state)
    eager.load_state_dict(state)
    for mode in ("train", "eval"):
        getattr(mine, mode)()
        getattr(eager, mode)()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_allclose(mine(cr.tensor(y)).detach().numpy(),
                                       eager(cr.tensor(y)).detach().numpy(), rtol=1e-12,
                                       atol=1e-13)
        for k, v in eager.state_dict().items():
            np.testing.assert_allclose(mine.state_dict()[k].numpy(), v.numpy(), rtol=1e-12,
                                       err_msg=k)
    if torch is None:
        return
    mine = lazy_fn()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = eval("torch.nn." + _source(name))
    assert repr(mine) == repr(theirs)
    assert list(mine.state_dict()) == list(theirs.state_dict())
    assert [repr(v) for v in mine.state_dict().values()] == \
        [repr(v) for v in theirs.state_dict().values()]
    theirs = theirs.double()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs(torch.tensor(x))  # the first calls initialise
        mine(cr.tensor(x))
    assert repr(mine) == repr(theirs) and type(mine).__name__ == type(theirs).__name__
    mine.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    for mode in ("train", "eval"):
        getattr(mine, mode)()
        getattr(theirs, mode)()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = theirs(torch.tensor(y))
            out = mine(cr.tensor(y))
        np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=0,
                                   atol=1e-10)


def _source(name):
    """The torch constructor of a case, read from the lambda's text."""
    import inspect

    text = inspect.getsource(CASES[name][0]).split("lambda: nn.", 1)[1]
    depth = 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == ")" and depth == 0:
            return text[:i + 1]
    raise AssertionError(name)


def test_errors_and_signatures_against_torch():
    import inspect

    # (the exception types PyTorch documents / raises for each misuse)
    cases = [
        (lambda nn_, lib: nn_.LazyLinear(3).weight.shape, RuntimeError),
        (lambda nn_, lib: nn_.LazyLinear(3).weight + 1, ValueError),
        (lambda nn_, lib: nn_.LazyConv2d(3, 2)(lib.ones(3)), RuntimeError),
        (lambda nn_, lib: nn_.LazyConv2d(4, 2, groups=2)(lib.ones(1, 3, 4, 4)), ValueError),
        (lambda nn_, lib: nn_.LazyBatchNorm2d()(lib.ones(3, 3)), ValueError),
        (lambda nn_, lib: nn_.Linear(2, 3).load_state_dict(nn_.LazyLinear(3).state_dict()),
         RuntimeError),
        (lambda nn_, lib: nn_.modules.lazy.LazyModuleMixin.initialize_parameters(
            nn_.LazyLinear(3)), NotImplementedError),
    ]
    libs = ((nn, cr),) + (((torch.nn, torch),) if torch is not None else ())
    for case, error in cases:
        for nn_, lib in libs:
            with pytest.raises(Exception) as info:
                case(nn_, lib)
            assert info.type is error, (case, nn_)
    assert repr(nn.UninitializedParameter()) == "<UninitializedParameter>"
    assert repr(nn.UninitializedBuffer()) == "<UninitializedBuffer>"
    # the constructors' parameters as PyTorch documents them
    assert list(inspect.signature(nn.RNNCellBase).parameters) == [
        "input_size", "hidden_size", "bias", "num_chunks", "device", "dtype"]
    assert list(inspect.signature(nn.RNNBase).parameters) == [
        "mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
        "bidirectional", "proj_size", "device", "dtype"]
    if torch is None:
        return
    t = torch.nn.UninitializedParameter()
    assert repr(nn.UninitializedParameter()) == repr(t)
    assert repr(nn.UninitializedBuffer()) == repr(torch.nn.UninitializedBuffer())
    for mine, theirs in ((nn.RNNCellBase, torch.nn.RNNCellBase), (nn.RNNBase, torch.nn.RNNBase),
                         (nn.NLLLoss2d, torch.nn.NLLLoss2d)):
        assert list(inspect.signature(mine).parameters) == \
            list(inspect.signature(theirs).parameters)
