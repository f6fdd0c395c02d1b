"""PyTorch's public names that ported code uses (constants, types, aliases, in-place
variants, legacy and removed APIs). Expected values are derived without torch; each is
also compared with torch where it is installed (values, dtypes, warnings, error texts)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import chainrule as cr

try:
    import torch
except ImportError:  # pragma: no cover - torch is optional
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def _warned(fn, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args, **kwargs)
    return result, [(w.category, str(w.message)) for w in caught]


class _Kind:
    """An exception class that compares equal to each of its bases: chainrule's errors that
    are two builtin kinds at once (ShapeError is a ValueError and a RuntimeError) match the
    kind PyTorch raises."""

    def __init__(self, kind):
        self.kind = kind

    def __eq__(self, other):
        if isinstance(other, _Kind):  # torch's kind beside chainrule's
            return issubclass(self.kind, other.kind) or issubclass(other.kind, self.kind)
        return isinstance(other, type) and issubclass(self.kind, other)

    def __repr__(self):
        return self.kind.__name__


def _error(fn, *args, **kwargs):
    with pytest.raises(Exception) as info:
        fn(*args, **kwargs)
    return _Kind(info.type), str(info.value)


# --- 1. constants, types, queries, modules ------------------------------------------------

def test_constants_and_dtype_and_layout_types():
    assert cr.pi == math.pi and cr.e == math.e and cr.inf == math.inf and math.isnan(cr.nan)
    assert cr.newaxis is None
    x = cr.arange(3.0)
    assert x[cr.newaxis].shape == (1, 3)
    for d in (cr.float32, cr.float64, cr.int64, cr.bool, cr.bfloat16, x.dtype):
        assert isinstance(d, cr.dtype)
    assert not isinstance("float32", cr.dtype) and not isinstance(np.float32, cr.dtype)
    with pytest.raises(TypeError):
        cr.dtype()
    assert x.layout is cr.strided and isinstance(cr.strided, cr.layout)
    if torch is not None:
        assert (torch.pi, torch.e, torch.inf, torch.newaxis) == (cr.pi, cr.e, cr.inf, cr.newaxis)
        assert torch.arange(3.0).layout is torch.strided


def test_tensor_queries_match_torch():
    f = cr.tensor([1.5, -2.0])
    u = cr.tensor([1, 2], dtype=cr.uint8)
    b = cr.tensor([True])
    i = cr.tensor([3], dtype=cr.int32)
    assert [cr.is_signed(t) for t in (f, u, b, i)] == [True, False, False, True]
    assert [t.is_signed() for t in (f, u, b, i)] == [True, False, False, True]
    assert not cr.is_complex(f) and cr.is_complex(cr.tensor([1 + 2j]))
    assert not cr.is_conj(f) and not cr.is_neg(f)
    assert cr.is_same_size(f, cr.zeros(2)) and not cr.is_same_size(f, cr.zeros(2, 1))
    assert f.is_same_size(cr.zeros(2)) and cr.get_device(f) == -1
    assert cr.typename(f) == "torch.DoubleTensor" and cr.typename(1) == "int"
    assert cr.typename(cr.zeros(1, dtype=cr.int64)) == "torch.LongTensor"
    assert cr.typename(np.ndarray) == "numpy.ndarray"
    assert _error(cr.is_signed, 3) == (
        TypeError, "is_signed: argument 'input' (position 1) must be Tensor, not int")
    if torch is not None:
        tf, tu, tb = torch.tensor([1.5, -2.0]), torch.tensor([1, 2], dtype=torch.uint8), \
            torch.tensor([True])
        assert [torch.is_signed(t) for t in (tf, tu, tb)] == [True, False, False]
        assert torch.get_device(tf) == -1 and torch.typename(1) == "int"
        assert torch.typename(np.ndarray) == "numpy.ndarray"
        kind, text = _error(torch.is_signed, 3)  # torch's text, named as chainrule's are
        assert (kind, text.replace("is_signed():", "is_signed:")) == _error(cr.is_signed, 3)


def test_unravel_index_values_wrapping_and_errors():
    got = cr.unravel_index(cr.tensor([4, 1, 6, -1]), (2, 3))
    np.testing.assert_array_equal(got[0].numpy(), [1, 0, 0, 1])  # 6 and -1 wrap around
    np.testing.assert_array_equal(got[1].numpy(), [1, 1, 0, 2])
    assert got[0].dtype == cr.int64
    scalar = cr.unravel_index(cr.tensor(5), 6)
    assert len(scalar) == 1 and scalar[0].shape == () and scalar[0].item() == 5
    # PyTorch's texts, after the op's name (as every chainrule error starts)
    cases = [((cr.tensor([1.0], dtype=cr.float32), (2, 3)),
              (TypeError, "expected 'indices' to be integer dtype, but got torch.float32")),
             ((cr.tensor([1]), (-2, 3)),
              (ValueError, "'shape' cannot have negative values, but got (-2, 3)"))]
    for args, (kind, text) in cases:
        assert _error(cr.unravel_index, *args) == (kind, "unravel_index: " + text)
    if torch is not None:
        t = torch.unravel_index(torch.tensor([4, 1, 6, -1]), (2, 3))
        for ours, theirs in zip(got, t):
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert _error(torch.unravel_index, torch.tensor([1.0]), (2, 3)) == cases[0][1]
        assert _error(torch.unravel_index, torch.tensor([1]), (-2, 3)) == cases[1][1]


def test_version_cpu_compiler_and_vmap():
    import chainrule.compiler
    import chainrule.version

    assert chainrule.version.__version__ == cr.__version__
    assert cr.version.cuda is None and cr.version.hip is None and cr.version.debug is False
    assert cr.cpu.is_available() and cr.cpu.device_count() == 1
    assert cr.cpu.current_device() == "cpu" and cr.cpu.synchronize() is None

    @cr.compiler.disable
    def f(x):
        return x + 1

    @cr.compiler.disable(recursive=False)
    def g(x):
        return x + 2

    assert f(1) == 2 and g(1) == 3
    assert chainrule.compiler.is_compiling() is False and cr.compiler.is_dynamo_compiling() is False
    assert cr.compiler.allow_in_graph(f) is f and cr.compiler.assume_constant_result(f) is f
    assert cr.compiler.reset() is None
    assert cr.vmap is cr.func.vmap
    np.testing.assert_allclose(cr.vmap(lambda r: r.sum())(cr.ones(3, 2)).numpy(), [2.0] * 3)
    if torch is not None:
        assert torch.version.cuda is None or isinstance(torch.version.cuda, str)
        assert torch.cpu.current_device() == cr.cpu.current_device()
        assert torch.compiler.is_compiling() is cr.compiler.is_compiling()


def test_set_default_tensor_type_warns_and_sets_the_float_dtype():
    before = cr.get_default_dtype()
    try:
        _, caught = _warned(cr.set_default_tensor_type, cr.FloatTensor)
        assert cr.get_default_dtype() == cr.float32 and cr.tensor([1.5]).dtype == cr.float32
        assert caught[0][0] is UserWarning
        assert caught[0][1].startswith("torch.set_default_tensor_type() is deprecated as of "
                                       "PyTorch 2.1")
        _warned(cr.set_default_tensor_type, "torch.DoubleTensor")
        assert cr.get_default_dtype() == cr.float64
        with pytest.warns(UserWarning), pytest.raises(
                TypeError, match="only floating-point types are supported as the default type"):
            cr.set_default_tensor_type(cr.LongTensor)
        with pytest.warns(UserWarning), pytest.raises(TypeError, match="set_default_tensor_type"):
            cr.set_default_tensor_type("text")
    finally:
        cr.set_default_dtype(before)
    if torch is not None:
        tbefore = torch.get_default_dtype()
        try:
            _, tcaught = _warned(torch.set_default_tensor_type, torch.DoubleTensor)
            assert tcaught[0][0] is caught[0][0]
            assert tcaught[0][1].startswith(caught[0][1])  # + "(Triggered internally at ...)"
            with pytest.raises(TypeError, match="only floating-point types are supported"):
                torch.set_default_tensor_type(torch.LongTensor)
        finally:
            torch.set_default_dtype(tbefore)


def test_global_switches_and_autocast_state():
    assert cr.set_flush_denormal(True) is False  # NumPy cannot flush denormals
    assert cr.is_warn_always_enabled() is False
    cr.set_warn_always(True)
    try:
        assert cr.is_warn_always_enabled() is True
    finally:
        cr.set_warn_always(False)
    with pytest.raises(RuntimeError, match="setWarnOnlyOnce expects a bool, but got str"):
        cr.set_warn_always("x")
    assert cr.is_autocast_enabled() is False and cr.is_autocast_enabled("cpu") is False
    assert cr.get_autocast_dtype("cpu") is cr.bfloat16
    assert cr.get_autocast_dtype("cuda") == cr.float16
    with cr.autocast("cpu"):
        assert cr.is_autocast_enabled("cpu") and not cr.is_autocast_enabled()
    assert not cr.is_autocast_enabled("cpu")
    with pytest.warns(DeprecationWarning, match=r"get_autocast_cpu_dtype\(\) is deprecated"):
        assert cr.get_autocast_cpu_dtype() is cr.bfloat16
    with pytest.raises(RuntimeError, match="device type at start of device string: xyz"):
        cr.get_autocast_dtype("xyz")
    for bad in (lambda: cr.set_autocast_enabled("text"), lambda: cr.set_autocast_dtype("cpu", 3)):
        with pytest.raises(TypeError):
            bad()
    assert cr.is_autocast_enabled() is False
    if torch is not None:
        assert torch.is_autocast_enabled("cpu") is False
        with torch.autocast("cpu"):
            assert torch.is_autocast_enabled("cpu") and not torch.is_autocast_enabled()
        with pytest.raises(RuntimeError, match="setWarnOnlyOnce expects a bool, but got str"):
            torch.set_warn_always("x")
        kind, text = _error(torch.get_autocast_dtype, "xyz")
        assert (kind, "get_autocast_dtype: " + text) == _error(cr.get_autocast_dtype, "xyz")


# --- 2. aliases and in-place variants -----------------------------------------------------

def test_comparison_aliases_functions_and_methods():
    a, b = cr.tensor([1.0, 2.0, 3.0]), cr.tensor([2.0, 2.0, 2.0])
    expected = {"greater": [0, 0, 1], "greater_equal": [0, 1, 1], "less": [1, 0, 0],
                "less_equal": [1, 1, 0], "not_equal": [1, 0, 1]}
    for name, want in expected.items():
        np.testing.assert_array_equal(getattr(cr, name)(a, b).numpy(), np.array(want, bool))
        np.testing.assert_array_equal(getattr(a, name)(b).numpy(), np.array(want, bool))
    with pytest.raises(TypeError, match="^greater: "):
        cr.greater(a, "x")


def test_inplace_comparisons_write_into_self_dtype():
    cases = [("eq_", [1.0, 2.0, 3.0], ([1.0, 0.0, 3.0],), [1.0, 0.0, 1.0]),
             ("lt_", [1, 2, 3], (2,), [1, 0, 0]),
             ("greater_equal_", [1.0, 2.0, 3.0], (2.0,), [0.0, 1.0, 1.0]),
             ("not_equal_", [1, 2, 3], (2,), [1, 0, 1]),
             ("logical_not_", [1.0, 0.0], (), [0.0, 1.0]),
             ("logical_and_", [3, 0], ([1, 1],), [1, 0]),
             ("logical_xor_", [1.0, 0.0], ([1.0, 1.0],), [0.0, 1.0]),
             ("heaviside_", [0.0, 2.0, -1.0], ([0.5],), [0.5, 1.0, 0.0])]
    for name, data, args, want in cases:
        x = cr.tensor(data)
        targs = [cr.tensor(a) if isinstance(a, list) else a for a in args]
        out = getattr(x, name)(*targs)
        assert out is x and x.dtype == cr.tensor(data).dtype
        np.testing.assert_array_equal(x.numpy(), want)
        if torch is not None:
            t = torch.tensor(data)
            getattr(t, name)(*[torch.tensor(a) if isinstance(a, list) else a for a in args])
            np.testing.assert_array_equal(t.numpy(), want)
            assert t.is_floating_point() == x.is_floating_point()
    leaf = cr.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf.eq_(1.0)
    y = leaf * 1.0
    y.eq_(1.0)  # still requires grad, with a zero gradient (PyTorch's EqBackward)
    assert y.requires_grad
    y.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [0.0, 0.0])
    if torch is not None:
        tl = torch.tensor([1.0, 2.0], requires_grad=True)
        ty = tl * 1.0
        ty.eq_(1.0)
        ty.sum().backward()
        np.testing.assert_array_equal(tl.grad.numpy(), leaf.grad.numpy())


def test_swap_in_place_keeps_identity():
    m = cr.zeros(2, 3)
    assert m.swapdims_(0, 1) is m and m.shape == (3, 2)
    assert m.swapaxes_(0, 1) is m and m.shape == (2, 3)


def test_top_level_inplace_functions_come_from_the_methods():
    from chainrule._methods import TOP_INPLACE

    for name in TOP_INPLACE:
        assert callable(getattr(cr, name)), name
        if torch is not None:
            assert hasattr(torch, name), name
    x = cr.tensor([0.0, 1.0])
    assert cr.exp_(x) is x
    np.testing.assert_allclose(x.numpy(), [1.0, math.e])
    np.testing.assert_array_equal(cr.clamp_(cr.tensor([0.0, 3.0]), 1, 2).numpy(), [1.0, 2.0])
    assert cr.sigmoid_(cr.tensor([0.0])).item() == 0.5
    with pytest.raises(TypeError, match=r"^abs_: argument 'input'"):
        cr.abs_(3)
    d = cr.tensor([1.0], requires_grad=True) * 2
    assert cr.detach(d).requires_grad is False and d.requires_grad
    assert cr.detach_(d) is d and not d.requires_grad


def test_gcd_lcm_and_incomplete_gamma_aliases():
    a, b = cr.tensor([12, -18, 0, 0]), cr.tensor([-8, 12, 5, 0])
    np.testing.assert_array_equal(cr.gcd(a, b).numpy(), [4, 6, 5, 0])
    np.testing.assert_array_equal(a.lcm(b).numpy(), [24, 36, 0, 0])
    assert cr.gcd(cr.tensor([12], dtype=cr.int32), cr.tensor([8])).dtype == cr.int64
    c = cr.tensor([4, 9])
    assert cr.gcd_(c, cr.tensor([6, 6])) is c
    np.testing.assert_array_equal(c.numpy(), [2, 3])
    assert _error(cr.gcd, cr.tensor([4.0]), cr.tensor([2.0])) == (
        NotImplementedError, "\"gcd_cpu\" not implemented for 'Double'")
    x, s = cr.tensor([1.0, 2.0]), cr.tensor([0.5, 3.0], requires_grad=True)
    np.testing.assert_allclose(cr.igamma(x, s).detach().numpy(),
                               [1 - math.exp(-0.5), 1 - 4 * math.exp(-3.0)], rtol=1e-12)
    np.testing.assert_allclose((cr.igamma(x, s) + cr.igammac(x, s)).detach().numpy(), [1, 1])
    (g,) = cr.autograd.grad(cr.igamma(x, s).sum(), s)  # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a)
    np.testing.assert_allclose(g.numpy(), [math.exp(-0.5), 3 * math.exp(-3.0)], rtol=1e-10)
    xa = x.clone().requires_grad_()
    with pytest.raises(NotImplementedError):  # no derivative in the first argument
        cr.autograd.grad(cr.igamma(xa, s.detach()).sum(), xa)
    if torch is not None:
        np.testing.assert_array_equal(
            torch.gcd(torch.tensor([12, -18, 0, 0]), torch.tensor([-8, 12, 5, 0])).numpy(),
            [4, 6, 5, 0])
        assert _error(torch.gcd, torch.tensor([4.0], dtype=torch.float64),
                      torch.tensor([2.0], dtype=torch.float64)) == _error(
            cr.gcd, cr.tensor([4.0]), cr.tensor([2.0]))
        ts = torch.tensor([0.5, 3.0], dtype=torch.float64, requires_grad=True)
        (tg,) = torch.autograd.grad(torch.igamma(torch.tensor([1.0, 2.0], dtype=torch.float64),
                                                 ts).sum(), ts)
        np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-10)
        tx = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match="not implemented"):
            torch.igamma(tx, ts.detach()).sum().backward()


WINDOWS = {
    "hann_window": lambda n: 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / (n - 1)),
    "hamming_window": lambda n: 0.54 - 0.46 * np.cos(2 * np.pi * np.arange(n) / (n - 1)),
    "blackman_window": lambda n: (0.42 - 0.5 * np.cos(2 * np.pi * np.arange(n) / (n - 1))
                                  + 0.08 * np.cos(4 * np.pi * np.arange(n) / (n - 1))),
    "bartlett_window": lambda n: 1 - np.abs(2 * np.arange(n) / (n - 1) - 1),
    "kaiser_window": lambda n: np.kaiser(n, 12.0),
}


@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_windows_periodic_symmetric_dtype_and_errors(name):
    fn, ref = getattr(cr, name), WINDOWS[name]
    np.testing.assert_allclose(fn(6, periodic=False).numpy(), ref(6), atol=1e-12)
    np.testing.assert_allclose(fn(6).numpy(), ref(7)[:-1], atol=1e-12)
    assert fn(0).shape == (0,) and fn(1).numpy().tolist() == [1.0]
    assert fn(4).dtype == cr.get_default_dtype()
    assert fn(4, dtype=cr.float32).dtype == cr.float32
    assert fn(3, requires_grad=True).requires_grad
    assert _error(fn, -1) == (RuntimeError, f"{name} requires non-negative window_length, "
                                            "got window_length=-1")
    with pytest.raises(RuntimeError, match=f"^{name} expects floating point dtypes"):
        fn(4, dtype=cr.int64)
    if torch is not None:
        for periodic in (True, False):
            np.testing.assert_allclose(
                fn(7, periodic).numpy(),
                getattr(torch, name)(7, periodic, dtype=torch.float64).numpy(), atol=1e-12)
        assert _error(getattr(torch, name), -1) == _error(fn, -1)


def test_range_is_inclusive_and_deprecated():
    got, caught = _warned(cr.range, 0, 1, 0.25)
    np.testing.assert_allclose(got.numpy(), [0, 0.25, 0.5, 0.75, 1.0])
    assert got.dtype == cr.get_default_dtype()
    assert caught == [(UserWarning, cr.ops.torch_names.RANGE_DEPRECATED)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(cr.range(3, 0, -1).numpy(), [3, 2, 1, 0])
        assert cr.range(0, 2, dtype=cr.int64).numpy().tolist() == [0, 1, 2]
        assert _error(cr.range, 0, 3, 0) == (RuntimeError, "range: step must be nonzero")
        assert _error(cr.range, 3, 0, 1) == (
            RuntimeError, "range: upper bound and lower bound inconsistent with step sign")
    if torch is not None:
        t, tcaught = _warned(torch.range, 0, 1, 0.25)
        np.testing.assert_allclose(t.numpy(), got.numpy())
        assert tcaught == caught
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kind, text = _error(torch.range, 3, 0, 1)
            assert (kind, "range: " + text) == _error(cr.range, 3, 0, 1)


def test_norms_binomial_and_top_level_losses():
    A = cr.arange(6.0).reshape(2, 3)
    val, caught = _warned(cr.frobenius_norm, A, (0, 1))
    assert math.isclose(val.item(), math.sqrt(55.0)) and caught[0][0] is UserWarning
    assert _warned(cr.frobenius_norm, A, (1,), True)[0].shape == (2, 1)
    nuc, caught2 = _warned(cr.nuclear_norm, A)
    assert math.isclose(nuc.item(), np.linalg.svd(np.arange(6.0).reshape(2, 3))[1].sum())
    assert "at::nuclear_norm is deprecated" in caught2[0][1]
    cr.manual_seed(0)
    draw = cr.binomial(cr.tensor([10.0, 5.0]), cr.tensor([0.5, 0.0]))
    assert draw.dtype == cr.float64 and draw[1].item() == 0 and 0 <= draw[0].item() <= 10
    assert _error(cr.binomial, cr.tensor([10, 5]), cr.tensor([0.5, 0.5])) == (
        ValueError, "binomial: binomial only supports floating-point dtypes for count, got: Long")
    x, t = cr.tensor([[-1.0, -2.0], [-0.5, -3.0]]), cr.tensor([[0.3, 0.7], [0.6, 0.4]])
    pointwise = t.numpy() * (np.log(t.numpy()) - x.numpy())
    np.testing.assert_allclose(cr.kl_div(x, t).numpy(), pointwise)  # torch's default: none
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no nn.functional 'mean' warning at the top level
        assert math.isclose(cr.kl_div(x, t, 1).item(), pointwise.mean())
    assert math.isclose(cr.kl_div(x, t, 2).item(), pointwise.sum())
    w = cr.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_array_equal(cr.embedding(w, cr.tensor([2, 0])).numpy(),
                                  [[5.0, 6.0], [1.0, 2.0]])
    with pytest.raises(ValueError, match="^hinge_embedding_loss: reduction"):
        cr.hinge_embedding_loss(x, t, 1.0, 5)
    if torch is not None:
        tA = torch.arange(6.0, dtype=torch.float64).reshape(2, 3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert math.isclose(torch.frobenius_norm(tA, (0, 1)).item(), val.item())
            assert math.isclose(torch.nuclear_norm(tA).item(), nuc.item())
            assert torch.frobenius_norm(tA, (1,), True).shape == (2, 1)
        tx, tt = torch.tensor(x.numpy()), torch.tensor(t.numpy())
        for r in (0, 1, 2):
            np.testing.assert_allclose(cr.kl_div(x, t, r).numpy(), torch.kl_div(tx, tt, r).numpy())
            np.testing.assert_allclose(cr.kl_div(x, t, r, log_target=True).numpy(),
                                       torch.kl_div(tx, tt, r, log_target=True).numpy())
        y = cr.tensor([1.0, -1.0])
        ty = torch.tensor([1.0, -1.0], dtype=torch.float64)
        checks = [
            (cr.binary_cross_entropy_with_logits(x, t, None, None, 2),
             torch.binary_cross_entropy_with_logits(tx, tt, None, None, 2)),
            (cr.cosine_embedding_loss(x, t, y, 0.1, 0),
             torch.cosine_embedding_loss(tx, tt, ty, 0.1, 0)),
            (cr.hinge_embedding_loss(x, -cr.ones(2, 2)), torch.hinge_embedding_loss(
                tx, -torch.ones(2, 2, dtype=torch.float64))),
            (cr.margin_ranking_loss(x[0], t[0], y, 0.5),
             torch.margin_ranking_loss(tx[0], tt[0], ty, 0.5)),
            (cr.triplet_margin_loss(x, t, x * 2), torch.triplet_margin_loss(tx, tt, tx * 2)),
            (cr.triplet_margin_loss(x, t, x * 2, reduction=1),
             torch.triplet_margin_loss(tx, tt, tx * 2, reduction=1)),
            (cr.hinge_embedding_loss(x, -cr.ones(2, 2), 1.0, 2), torch.hinge_embedding_loss(
                tx, -torch.ones(2, 2, dtype=torch.float64), 1.0, 2)),
            (cr.poisson_nll_loss(x, t, True, False, 1e-8, 1),
             torch.poisson_nll_loss(tx, tt, True, False, 1e-8, 1)),
            (cr.embedding(w, cr.tensor([2, 0]), 0),
             torch.embedding(torch.tensor(w.numpy()), torch.tensor([2, 0]), 0)),
        ]
        for ours, theirs in checks:
            np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(),
                                       rtol=1e-12)
        inp = cr.tensor(np.arange(8.0).reshape(2, 2, 2))
        tin = torch.tensor(inp.numpy())
        rm, rv = cr.zeros(2), cr.ones(2)
        trm, trv = torch.zeros(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64)
        np.testing.assert_allclose(
            cr.batch_norm(inp, None, None, rm, rv, True, 0.1, 1e-5, False).numpy(),
            torch.batch_norm(tin, None, None, trm, trv, True, 0.1, 1e-5, False).numpy())
        np.testing.assert_allclose(rm.numpy(), trm.numpy())
        np.testing.assert_allclose(
            cr.instance_norm(inp, None, None, None, None, True, 0.1, 1e-5, False).numpy(),
            torch.instance_norm(tin, None, None, None, None, True, 0.1, 1e-5, False).numpy())


# --- 3. tensor attributes and methods -----------------------------------------------------

def test_memory_queries_and_views():
    x = cr.arange(6.0)
    assert x.is_cpu and x.itemsize == 8 and x.nbytes == 48
    assert x.storage_offset() == 0 and x[2:].storage_offset() == 2
    assert x[2:].data_ptr() - x.data_ptr() == 16 and x[:3].data_ptr() == x.data_ptr()
    assert x.is_set_to(x) and x.is_set_to(x[:]) and not x.is_set_to(x[1:])
    assert x.dim_order() == (0,)
    assert cr.zeros(2, 3, 4).permute(2, 0, 1).dim_order() == (1, 2, 0)
    assert x.is_shared() is False and x.share_memory_() is x and x.is_shared() is True
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0))  # values kept
    assert cr.tensor([2.0]).is_nonzero() and not cr.tensor([0.0]).is_nonzero()
    r = cr.tensor([1.0, 2.0])
    assert r.resize_as_(cr.zeros(2, 2)) is r and r.shape == (2, 2)
    assert cr.resize_as_(r, cr.zeros(4)).shape == (4,)
    if torch is not None:
        t = torch.arange(6.0, dtype=torch.float64)
        assert t[2:].storage_offset() == 2 and t[2:].data_ptr() - t.data_ptr() == 16
        assert t.nbytes == x.nbytes and t.itemsize == x.itemsize
        assert torch.zeros(2, 3, 4).permute(2, 0, 1).dim_order() == (1, 2, 0)
        assert t.is_set_to(t[:]) and not t.is_set_to(t[1:])


def test_legacy_new_prelu_hardshrink_subclass_and_nonzero_static():
    x = cr.tensor([1.0, -2.0, 3.0])
    assert x.new(2, 3).shape == (2, 3) and x.new(2, 3).dtype == x.dtype
    assert x.new([1, 2]).dtype == x.dtype and x.new().shape == (0,)
    np.testing.assert_allclose(x.prelu(cr.tensor([0.25])).numpy(), [1.0, -0.5, 3.0])
    np.testing.assert_allclose(x.hardshrink(1.5).numpy(), [0.0, -2.0, 3.0])

    class Sub(cr.Tensor):
        pass

    s = x.as_subclass(Sub)
    assert type(s) is Sub and np.array_equal(s.numpy(), x.numpy())
    assert _error(x.as_subclass, int)[1].startswith("Creating a Tensor subclass from a class")
    got = cr.nonzero_static(cr.tensor([0, 1, 0, 2]), size=4)
    np.testing.assert_array_equal(got.numpy(), [[1], [3], [-1], [-1]])
    np.testing.assert_array_equal(cr.tensor([[0, 1], [2, 0]]).nonzero_static(
        size=1, fill_value=-5).numpy(), [[0, 1]])
    assert _error(cr.nonzero_static, x, size=-1) == (
        RuntimeError, "nonzero_static: 'size' must be an non-negative integer")
    if torch is not None:
        tx = torch.tensor([1.0, -2.0, 3.0])
        assert type(tx.as_subclass(type("TSub", (torch.Tensor,), {}))).__name__ == "TSub"
        assert _error(tx.as_subclass, int) == _error(x.as_subclass, int)
        np.testing.assert_array_equal(
            torch.nonzero_static(torch.tensor([0, 1, 0, 2]), size=4).numpy(), got.numpy())
        assert _error(torch.nonzero_static, tx, size=-1) == _error(cr.nonzero_static, x, size=-1)


def test_apply_and_map_run_python_callables_in_place():
    x = cr.tensor([1.0, 2.0, 3.0])
    assert x.apply_(lambda v: v * 2) is x
    np.testing.assert_array_equal(x.numpy(), [2.0, 4.0, 6.0])
    i = cr.tensor([1, 2]).apply_(lambda v: v * 2.7)
    assert i.dtype == cr.int64 and i.numpy().tolist() == [2, 5]
    np.testing.assert_array_equal(
        x.map_(cr.tensor(10.0), lambda a, b: a + b).numpy(), [12.0, 14.0, 16.0])
    with pytest.raises(RuntimeError, match=r"Can't call apply_\(\) on Variable that requires"):
        cr.tensor([1.0], requires_grad=True).apply_(abs)
    assert _error(x.map_, 3, max) == (
        TypeError, "map_: argument 'other' (position 1) must be Tensor, not int")
    if torch is not None:
        assert torch.tensor([1, 2]).apply_(lambda v: v * 2.7).tolist() == [2, 5]
        assert _error(torch.tensor([1.0], requires_grad=True).apply_, abs) == _error(
            cr.tensor([1.0], requires_grad=True).apply_, abs)
        kind, text = _error(torch.tensor([1.0]).map_, 3, max)
        assert (kind, text.replace("map_():", "map_:")) == _error(x.map_, 3, max)


# --- 4. removed functions ------------------------------------------------------------------

@pytest.mark.parametrize("name", ["lstsq", "solve", "symeig", "eig", "matrix_rank"])
def test_removed_functions_raise_pytorchs_guidance(name):
    A = cr.eye(2)
    args = (A, A) if name in ("lstsq", "solve") else (A,)
    kind, text = _error(getattr(cr, name), *args)
    assert issubclass(kind.kind, RuntimeError)
    assert text.startswith(f"{name}: This function was deprecated")
    if name != "matrix_rank":
        assert _error(getattr(A, name), *args[1:]) == (kind, text)
    if torch is not None:
        tA = torch.eye(2)
        targs = (tA, tA) if name in ("lstsq", "solve") else (tA,)
        assert _error(getattr(torch, name), *targs) == (kind, text[len(name) + 2:])


# --- 5. autograd and nn.init spellings -------------------------------------------------------

def test_autograd_modules_and_deprecated_init_names():
    import chainrule.autograd.grad_mode as grad_mode

    assert cr.autograd.inference_mode is cr.inference_mode
    assert grad_mode.no_grad is cr.no_grad and grad_mode.inference_mode is cr.inference_mode
    assert cr.autograd.anomaly_mode.detect_anomaly is cr.autograd.detect_anomaly
    with cr.autograd.inference_mode():
        assert cr.is_inference_mode_enabled()
    w = cr.empty(3, 4)
    for old in ("normal", "uniform", "xavier_uniform", "xavier_normal", "kaiming_uniform",
                "kaiming_normal", "orthogonal", "eye"):
        result, caught = _warned(getattr(cr.nn.init, old), w)
        assert result is w and caught == [(FutureWarning, f"`nn.init.{old}` is now deprecated "
                                           f"in favor of `nn.init.{old}_`.")]
    _, caught = _warned(cr.nn.init.constant, w, 0.5)
    assert np.all(w.numpy() == 0.5) and caught[0][0] is FutureWarning
    _, caught = _warned(cr.nn.init.sparse, w, 0.5)
    assert caught[0][0] is FutureWarning
    conv = cr.empty(2, 2, 3)
    _warned(cr.nn.init.dirac, conv)
    assert conv[0, 0, 1].item() == 1.0
    if torch is not None:
        tw = torch.empty(3, 4)
        _, tcaught = _warned(torch.nn.init.normal, tw)
        assert tcaught == [(FutureWarning, "`nn.init.normal` is now deprecated in favor of "
                                           "`nn.init.normal_`.")]
        assert torch.autograd.grad_mode.no_grad is torch.no_grad
