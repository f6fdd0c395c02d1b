"""Regression tests from differential testing of save/load, the random state and printing
against PyTorch (values derived without torch; compared with torch when it imports)."""

import collections
import io
import pickle

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn

try:
    import torch
except ImportError:  # CI has no torch
    torch = None

NT = collections.namedtuple("NT", "a b")


def round_trip(obj, lib=cr, **kwargs):
    buf = io.BytesIO()
    lib.save(obj, buf)
    buf.seek(0)
    return lib.load(buf, **kwargs)


# --- serialization -----------------------------------------------------------------------

def test_load_keeps_storage_sharing_between_views():
    a = cr.arange(12.0).reshape(3, 4)
    back = round_trip({"a": a, "row": a[1], "t": a.t()})
    back["a"][1, 0] = 100.0
    assert back["row"][0].item() == 100.0 and back["t"][0, 1].item() == 100.0
    views = round_trip((cr.arange(12.0)[2:5], cr.arange(12.0)[4:8]))
    assert views[0].tolist() == [2.0, 3.0, 4.0]
    base = cr.arange(12.0)
    v, w = round_trip((base[2:5], base[4:8]))
    v[2] = -1.0  # element 4 of the storage, which w starts at
    assert w.tolist() == [-1.0, 5.0, 6.0, 7.0]
    if torch is not None:
        tb = torch.arange(12.0)
        tv, tw = round_trip((tb[2:5], tb[4:8]), torch)
        tv[2] = -1.0
        assert tw.tolist() == [-1.0, 5.0, 6.0, 7.0]


def test_load_keeps_strides_parameter_sharing_and_flags():
    x = cr.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1)[::2]
    y = round_trip(x)
    assert y.tolist() == x.tolist() and y.stride() == x.stride() and not y.is_contiguous()
    a = cr.arange(4.0)
    p = nn.Parameter(a)
    t, q = round_trip([a, p])
    t[0] = 9.0
    assert type(q) is nn.Parameter and q.requires_grad and q[0].item() == 9.0
    leaf = cr.tensor([1.0, 2.0], requires_grad=True)
    nonleaf = round_trip(leaf * 2)
    assert nonleaf.requires_grad and nonleaf.is_leaf and nonleaf.tolist() == [2.0, 4.0]
    for dtype in (cr.float16, cr.float32, cr.int8, cr.uint8, cr.int32, cr.bool):
        z = round_trip(cr.tensor([1, 0, 1], dtype=dtype))
        assert z.dtype == dtype and z.tolist() == cr.tensor([1, 0, 1], dtype=dtype).tolist()
    assert round_trip(cr.zeros(0, 3)).shape == (0, 3)
    assert round_trip(cr.tensor(2.5)).item() == 2.5


def test_weights_only_is_the_default_and_refuses_other_classes():
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        round_trip(NT(cr.tensor(1), 2))
    with pytest.raises(pickle.UnpicklingError, match="weights_only"):
        round_trip(nn.Linear(2, 3))
    with pytest.raises(pickle.UnpicklingError):
        round_trip(np.arange(3))
    assert round_trip(NT(1, 2), weights_only=False) == NT(1, 2)
    m = round_trip(nn.Linear(2, 3), weights_only=False)
    assert type(m) is nn.Linear and type(m.weight) is nn.Parameter
    ok = round_trip(collections.OrderedDict(a=cr.tensor(1), b=[(3, "x", 1.5, None)],
                                            c={1: {2}}, d=cr.Size([2]), e=cr.float32))
    assert type(ok) is collections.OrderedDict and ok["d"] == (2,) and ok["e"] == cr.float32
    with cr.serialization.safe_globals([NT]):
        assert round_trip(NT(1, 2)) == NT(1, 2)
    if torch is not None:
        with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
            round_trip(NT(torch.tensor(1), 2), torch)


def test_map_location_forms():
    for loc in ("cpu", cr.device("cpu"), {"cpu": "cpu"}, {"cuda:0": "cpu"},
                lambda storage, location: storage):
        assert round_trip(cr.ones(2), map_location=loc).tolist() == [1.0, 1.0]
    seen = []
    round_trip(cr.ones(2), map_location=lambda s, location: seen.append(location))
    assert seen == ["cpu"]
    if not cr.cuda.is_available():
        with pytest.raises(RuntimeError, match="map_location"):
            round_trip(cr.ones(2), map_location="cuda")


def test_optimizer_state_dict_round_trip_continues_identically():
    def make():
        cr.manual_seed(0)
        model = nn.Linear(3, 2)
        return model, cr.optim.Adam(model.parameters(), lr=0.1)

    x = cr.ones(4, 3)
    model, opt = make()
    for _ in range(2):
        opt.zero_grad()
        model(x).pow(2).sum().backward()
        opt.step()
    saved = round_trip({"model": model.state_dict(), "opt": opt.state_dict()})
    model2, opt2 = make()
    model2.load_state_dict(saved["model"])
    opt2.load_state_dict(saved["opt"])
    for m, o in ((model, opt), (model2, opt2)):
        o.zero_grad()
        m(x).pow(2).sum().backward()
        o.step()
    assert model.weight.tolist() == model2.weight.tolist()


# --- random state ------------------------------------------------------------------------

def test_rng_state_is_a_byte_tensor_and_restores_the_seed():
    cr.manual_seed(9)
    state = cr.get_rng_state()
    assert isinstance(state, cr.Tensor) and state.dtype == cr.uint8
    a = cr.rand(3)
    cr.manual_seed(11)
    cr.set_rng_state(state.clone())
    assert cr.initial_seed() == 9 and cr.rand(3).tolist() == a.tolist()
    with pytest.raises(TypeError, match="ByteTensor"):
        cr.set_rng_state(cr.zeros(3))
    with pytest.raises(TypeError, match="ByteTensor"):
        cr.set_rng_state([1, 2])
    g = cr.Generator().manual_seed(2)
    cr.set_rng_state(g.get_state())
    assert cr.rand(3).tolist() == cr.rand(3, generator=cr.Generator().manual_seed(2)).tolist()
    assert round_trip({"rng": cr.get_rng_state()})["rng"].dtype == cr.uint8
    if torch is not None:
        torch.manual_seed(9)
        ts = torch.get_rng_state()
        torch.manual_seed(11)
        torch.set_rng_state(ts)
        assert torch.initial_seed() == 9 and ts.dtype == torch.uint8


def test_manual_seed_range_as_pytorch():
    cr.manual_seed(-1)
    assert cr.initial_seed() == 2 ** 64 - 1
    assert cr.Generator().manual_seed(-5).initial_seed() == 2 ** 64 - 5
    cr.manual_seed(-2 ** 63)
    assert cr.initial_seed() == 2 ** 63
    for bad in (2 ** 64, -2 ** 63 - 1):
        with pytest.raises(ValueError, match="Overflow"):
            cr.manual_seed(bad)
    with pytest.raises(RuntimeError, match="expected a long"):
        cr.Generator().manual_seed(1.5)
    cr.manual_seed(1.5)
    assert cr.initial_seed() == 1
    if torch is not None:
        torch.manual_seed(-1)
        assert torch.initial_seed() == 2 ** 64 - 1
    cr.manual_seed(0)


def test_fork_rng_and_deterministic_flags():
    cr.manual_seed(0)
    a = cr.rand(2)
    cr.manual_seed(0)
    with cr.random.fork_rng():
        cr.manual_seed(5)
        cr.rand(10)
    assert cr.rand(2).tolist() == a.tolist() and cr.initial_seed() == 0
    cr.manual_seed(0)
    with cr.random.fork_rng(enabled=False):
        cr.rand(3)
    assert cr.rand(2).tolist() != a.tolist()
    try:
        cr.use_deterministic_algorithms(True, warn_only=True)
        assert cr.are_deterministic_algorithms_enabled()
        assert cr.is_deterministic_algorithms_warn_only_enabled()
        assert cr.get_deterministic_debug_mode() == 1
        cr.set_deterministic_debug_mode("error")
        assert cr.get_deterministic_debug_mode() == 2
        assert not cr.is_deterministic_algorithms_warn_only_enabled()
        with pytest.raises(TypeError, match="must be bool"):
            cr.use_deterministic_algorithms("x")
    finally:
        cr.use_deterministic_algorithms(False)
    assert cr.get_deterministic_debug_mode() == 0


def test_random_constructors_refuse_what_pytorch_refuses():
    with pytest.raises(NotImplementedError):
        cr.rand(2, dtype=cr.int64)
    with pytest.raises(NotImplementedError):
        cr.randn(2, dtype=cr.int64)
    with pytest.raises(RuntimeError, match="out of bounds"):
        cr.randint(0, 300, (4,), dtype=cr.uint8)
    assert cr.randint(0, 256, (50,), dtype=cr.uint8).dtype == cr.uint8
    with pytest.raises(RuntimeError, match="negative dimension"):
        cr.randperm(-1)
    with pytest.raises(RuntimeError, match="negative dimension"):
        cr.rand(-1)


# --- printing ----------------------------------------------------------------------------

def test_summarised_repr_follows_pytorch_layout():
    assert repr(cr.arange(2000)) == \
        "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    rows = repr(cr.arange(5000).reshape(50, 100)).splitlines()
    assert rows[0] == "tensor([[   0,    1,    2,  ...,   97,   98,   99],"
    assert rows[3] == "        ...,"
    try:
        cr.set_printoptions(edgeitems=1, threshold=5)
        # the formatter sees only the shown entries (no scientific notation here)
        assert repr(cr.arange(2000.0)) == "tensor([   0.,  ..., 1999.])"
        cr.set_printoptions(linewidth=20)
        assert repr(cr.arange(5000).reshape(50, 100)).splitlines()[:3] == [
            "tensor([[   0,  ...,", "           99],", "        ...,"]
    finally:
        cr.set_printoptions(profile="default")
    if torch is not None:
        assert repr(torch.arange(2000)) == \
            "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"


def test_repr_dtype_suffix_rule():
    assert repr(cr.zeros(0, dtype=cr.int64)) == "tensor([], dtype=int64)"
    assert repr(cr.zeros(0)) == "tensor([])"
    assert repr(cr.tensor([1 + 2j, 3 - 1j])) == "tensor([1.+2.j, 3.-1.j])"
    assert repr(cr.tensor([1.5], dtype=cr.float32)) == "tensor([1.5000], dtype=float32)"
    try:
        cr.set_default_dtype(cr.float32)
        assert repr(cr.tensor([1.5], dtype=cr.float32)) == "tensor([1.5000])"
        assert repr(cr.tensor([1.5], dtype=cr.float64)) == "tensor([1.5000], dtype=float64)"
    finally:
        cr.set_default_dtype(cr.float64)
    if torch is not None:
        assert repr(torch.zeros(0, dtype=torch.int64)) == "tensor([], dtype=torch.int64)"
        assert repr(torch.tensor([1 + 2j, 3 - 1j])) == "tensor([1.+2.j, 3.-1.j])"


def test_repr_long_suffix_wraps_like_pytorch():
    expected = ("tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, "
                "1.1429,\n        1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000],\n"
                "       grad_fn=<DivBackward0>)")
    assert repr(cr.arange(15.0, requires_grad=True) / 7) == expected
    if torch is not None:
        assert repr(torch.arange(15.0, requires_grad=True) / 7) == expected
