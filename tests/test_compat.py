"""PyTorch's helpers around the math (type tests, dtype queries, inference_mode, saving,
the random state, cuda/backends/jit, amp): what ported code calls, with PyTorch's results
on a CPU machine. Expected values are derived; where torch is installed they are also
compared with its."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn

try:
    import torch
except ImportError:  # the comparisons with torch are skipped; the rest runs
    torch = None


def test_type_tests_and_dtype_queries():
    t = cr.ones(2, 2, dtype=cr.float32)
    assert cr.is_tensor(t) and cr.is_tensor(nn.Parameter(np.ones(1))) and not cr.is_tensor(1.0)
    assert cr.is_floating_point(t) and not cr.is_floating_point(cr.tensor([1, 2]))
    assert cr.is_nonzero(cr.tensor([2.0])) and not cr.is_nonzero(cr.tensor(0.0))
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        cr.is_nonzero(t)
    with pytest.raises(RuntimeError, match="no values is ambiguous"):
        cr.is_nonzero(cr.zeros(0))
    assert cr.finfo(cr.float32).eps == np.finfo(np.float32).eps
    assert cr.finfo().eps == np.finfo(np.float64).eps        # the default float dtype
    assert cr.iinfo(cr.int32).max == 2 ** 31 - 1
    assert cr.promote_types(cr.float32, cr.int64) == np.float32
    assert cr.result_type(t, 2.5) == np.float32             # a Python number does not widen
    assert cr.result_type(t, cr.ones(1)) == np.float64
    assert cr.can_cast(cr.int64, cr.float32) and cr.can_cast(cr.float64, cr.float32)
    assert not cr.can_cast(cr.float32, cr.int64) and not cr.can_cast(cr.float32, cr.bool)
    assert cr.broadcast_shapes((2, 1), (3,), 1) == (2, 3) and cr.Size([2, 3]).numel() == 6
    with pytest.raises(RuntimeError, match=r"broadcast_shapes.*\(2,\).*\(3,\)"):
        cr.broadcast_shapes((2,), (3,))
    assert t.type() == "torch.FloatTensor" and t.type(cr.float64).dtype == np.float64
    assert t.type("torch.LongTensor").dtype == np.int64


# PyTorch's rules, in words: a cast is allowed unless it goes from a floating dtype to an
# integer one, or from a non-bool to bool; two dtypes promote within their category (the
# wider), and across categories (bool < integer < floating) to the higher category's dtype
KIND = {np.dtype(np.bool_): 0, np.dtype(np.int32): 1, np.dtype(np.int64): 1,
        np.dtype(np.float32): 2, np.dtype(np.float64): 2}


def _can_cast(a, b):
    a, b = np.dtype(a), np.dtype(b)
    return not (KIND[a] == 2 and KIND[b] == 1) and not (KIND[a] > 0 and KIND[b] == 0)


def _promote(a, b):
    a, b = np.dtype(a), np.dtype(b)
    if KIND[a] != KIND[b]:
        return a if KIND[a] > KIND[b] else b
    return a if a.itemsize >= b.itemsize else b


# result_type: dimensioned tensors outrank 0-d tensors, which outrank Python numbers; a
# lower rank counts only when its category is higher (then its dtype, or the default float
# dtype, float64 in chainrule, for a Python float)
RESULT_CASES = [  # (a, b, PyTorch's result dtype)
    (np.ones(2, np.float32), 2.5, "float32"),                     # a float does not widen
    (np.ones(2, np.int64), 2.5, "float64"),                       # the default float dtype
    (np.ones(2, np.float32), np.array(1.0), "float32"),           # nor does a 0-d tensor
    (np.ones(2, np.int32), np.array(1.0, np.float32), "float32"),  # a higher category
    (np.array(1, np.int64), 3, "int64"),
    (np.ones(2, np.int32), np.ones(2, np.int64), "int64"),        # both dimensioned: wider
]


def test_type_queries_follow_pytorchs_rules():
    dtypes = [(cr.float32, "float32"), (cr.float64, "float64"), (cr.int64, "int64"),
              (cr.int32, "int32"), (cr.bool, "bool")]
    for a, _ in dtypes:
        for b, _ in dtypes:
            assert cr.can_cast(a, b) == _can_cast(a, b), (a, b)
            if a is not cr.bool and b is not cr.bool:
                assert np.dtype(cr.promote_types(a, b)) == _promote(a, b), (a, b)

    def mk(m, v):
        return m.tensor(v) if isinstance(v, np.ndarray) else v

    for a, b, want in RESULT_CASES:
        assert np.dtype(cr.result_type(mk(cr, a), mk(cr, b))).name == want, (a.dtype, b)
    # float32's smallest normal number is 2**-126
    assert cr.finfo(cr.float32).tiny == 2.0 ** -126 == np.finfo(np.float32).tiny
    assert cr.ones(1).type() == "torch.DoubleTensor"  # float64, the default float dtype
    assert cr.is_nonzero(cr.tensor([0.5]))
    if torch is None:
        return
    tdtypes = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64,
               "int32": torch.int32, "bool": torch.bool}
    for a, na in dtypes:
        for b, nb in dtypes:
            assert cr.can_cast(a, b) == torch.can_cast(tdtypes[na], tdtypes[nb]), (a, b)
            if a is not cr.bool and b is not cr.bool:
                assert np.dtype(cr.promote_types(a, b)).name == \
                    str(torch.promote_types(tdtypes[na], tdtypes[nb])).rpartition(".")[2]
    torch.set_default_dtype(torch.float64)                  # chainrule's default float dtype
    try:
        for a, b, _ in RESULT_CASES:
            ours = np.dtype(cr.result_type(mk(cr, a), mk(cr, b))).name
            theirs = str(torch.result_type(mk(torch, a), mk(torch, b))).rpartition(".")[2]
            assert ours == theirs, (a.dtype, a.ndim, b)
    finally:
        torch.set_default_dtype(torch.float32)
    assert cr.finfo(cr.float32).tiny == torch.finfo(torch.float32).tiny
    assert cr.ones(1).type() == torch.ones(1, dtype=torch.float64).type()
    assert cr.is_nonzero(cr.tensor([0.5])) == torch.is_nonzero(torch.tensor([0.5]))


def test_inference_mode():
    x = cr.ones(2, requires_grad=True)
    with cr.inference_mode():
        assert cr.is_inference_mode_enabled() and not cr.is_grad_enabled()
        assert not (x * 2).requires_grad
    assert not cr.is_inference_mode_enabled() and cr.is_grad_enabled()
    with cr.inference_mode(False):
        assert (x * 2).requires_grad and not cr.is_inference_mode_enabled()

    @cr.inference_mode
    def bare(a):
        return a * 2

    @cr.inference_mode()
    def called(a):
        return a * 2

    assert not bare(x).requires_grad and not called(x).requires_grad
    assert (x * 2).requires_grad


def test_save_and_load_round_trip(tmp_path):
    cr.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    x = cr.randn(4, 3)
    path = tmp_path / "model.pt"
    cr.save({"state": model.state_dict(), "x": x, "step": 7}, path)
    back = cr.load(path)
    assert back["step"] == 7
    np.testing.assert_array_equal(np.asarray(back["x"]), np.asarray(x))
    other = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    other.load_state_dict(back["state"])
    model.eval()
    other.eval()
    np.testing.assert_array_equal(np.asarray(other(x).detach()), np.asarray(model(x).detach()))
    with open(tmp_path / "t.pt", "wb") as fh:          # file objects too
        cr.save(cr.tensor([1.0, 2.0], requires_grad=True), fh)
    with open(tmp_path / "t.pt", "rb") as fh:
        t = cr.load(fh, map_location="cpu")
    assert t.requires_grad and t.is_leaf
    with pytest.raises(RuntimeError, match="map_location"):
        cr.load(path, map_location="cuda:3")


def test_rng_state_printing_and_namespaces():
    state = cr.get_rng_state()
    a = cr.rand(3)
    cr.set_rng_state(state)
    np.testing.assert_array_equal(np.asarray(cr.rand(3)), np.asarray(a))
    try:
        cr.set_printoptions(precision=2)
        assert "0.33" in repr(cr.tensor([1 / 3])) and "0.333" not in repr(cr.tensor([1 / 3]))
        cr.set_printoptions(threshold=5)
        assert "..." in repr(cr.arange(100.0))
    finally:
        cr.set_printoptions(profile="default")
    assert repr(cr.tensor([1 / 3])) == "tensor([0.3333])"  # PyTorch's default precision
    assert isinstance(cr.cuda.is_available(), bool) and not cr.backends.mps.is_available()
    cr.backends.cudnn.deterministic = True                  # settable, as in training scripts

    def f(v):
        return v * 2

    assert cr.jit.script(f) is f  # compile (trace and replay) has tests/test_compile.py
    assert cr.jit.trace(f, (cr.ones(1),)) is f


def _scaler_program(m, scaler_cls, grads):
    """SGD steps on w with the given gradient directions through a GradScaler."""
    w = m.nn.Parameter(m.tensor([1.0, 2.0], dtype=m.float64))
    opt = m.optim.SGD([w], lr=0.1)
    scaler = scaler_cls("cpu", init_scale=8.0, growth_interval=2)
    scales, weights = [], []
    for d in grads:
        opt.zero_grad()
        loss = (w * m.tensor(d, dtype=m.float64)).sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        weights.append(np.asarray(w.detach()).copy())
    return scales, weights


GRADS = [[1.0, 1.0], [np.inf, 0.0], [0.5, -1.0], [1.0, 0.0], [2.0, 2.0]]


def test_grad_scaler_steps_skips_and_rescales():
    scales, weights = _scaler_program(cr, cr.amp.GradScaler, GRADS)
    # good, inf (skipped, backoff), good, good (growth after 2), good
    assert scales == [8.0, 4.0, 4.0, 8.0, 8.0]
    expected, w = [], np.array([1.0, 2.0])
    for d in GRADS:
        if np.all(np.isfinite(d)):
            w = w - 0.1 * np.array(d)      # the unscaled gradient: plain SGD
        expected.append(w.copy())
    np.testing.assert_allclose(np.array(weights), np.array(expected))
    off = cr.amp.GradScaler(enabled=False)
    loss = cr.tensor(3.0)
    assert off.scale(loss) is loss and off.get_scale() == 1.0
    with cr.amp.autocast("cpu", dtype=cr.float16):
        assert (cr.ones(2) * 2).dtype == np.float64          # dtypes are left as they are
    if torch is not None:
        t_scales, t_weights = _scaler_program(torch, torch.amp.GradScaler, GRADS)
        assert scales == t_scales
        np.testing.assert_allclose(np.array(weights), np.array([w for w in t_weights]))


# PyTorch's notation (torch._tensor_str._Formatter): 4 decimals; "1." when every finite entry
# is an integer; scientific when the finite nonzero magnitudes span more than 1000x, exceed
# 1e8, or (not all integers) go below 1e-4; one width for all entries
REPRS = [
    ([1.5, 2.25], "tensor([1.5000, 2.2500])"),
    ([np.pi, 0.0, np.nan], "tensor([3.1416, 0.0000,    nan])"),
    ([1e-8, 1.0], "tensor([1.0000e-08, 1.0000e+00])"),
    ([1e10, 1.0], "tensor([1.0000e+10, 1.0000e+00])"),
    ([0.0, 0.0], "tensor([0., 0.])"),
    ([1.0, -2.0, np.inf], "tensor([ 1., -2., inf])"),
    ([[1.123456, -22.5], [3.0, 4.0]],
     "tensor([[  1.1235, -22.5000],\n        [  3.0000,   4.0000]])"),
    (2.5, "tensor(2.5000)"),
    (3.0, "tensor(3.)"),
]


@pytest.mark.parametrize("make, text", [
    (lambda m: m.tensor([True]), "tensor([True])"),
    (lambda m: m.tensor([True, False]), "tensor([ True, False])"),
    (lambda m: m.zeros(0), "tensor([])"),
    (lambda m: m.zeros(0, 3, dtype=m.int32), "tensor([], size=(0, 3), dtype={}int32)"),
])
def test_repr_of_bool_and_empty_tensors(make, text):
    assert repr(make(cr)) == text.format("")
    if torch is not None:
        assert repr(make(torch)) == text.format("torch.")


@pytest.mark.parametrize("values, text", REPRS)
def test_repr_uses_pytorchs_notation(values, text):
    assert repr(cr.tensor(values)) == text
    assert repr(cr.tensor(values, dtype=cr.float32)) == text[:-1] + ", dtype=float32)"
    if torch is not None:
        assert repr(torch.tensor(values, dtype=torch.float64)) == \
            text[:-1] + ", dtype=torch.float64)"


def test_set_printoptions_is_chainrules_own():
    before = np.get_printoptions()
    try:
        cr.set_printoptions(precision=2, sci_mode=True)
        assert repr(cr.tensor([1 / 3])) == "tensor([3.33e-01])"
        cr.set_printoptions(sci_mode=False, precision=3)
        assert repr(cr.tensor([1e-8, 1.0])) == "tensor([0.000, 1.000])"
        assert np.get_printoptions() == before  # NumPy's own options untouched
    finally:
        cr.set_printoptions(profile="default")
    assert repr(cr.tensor([1 / 3])) == "tensor([0.3333])"


def test_shape_is_a_size():
    x = cr.ones(2, 3, 4)
    assert isinstance(x.shape, cr.Size) and isinstance(x.size(), cr.Size)
    assert x.shape == (2, 3, 4) and x.shape.numel() == 24 == x.numel()
    assert isinstance(x.shape[1:], cr.Size) and x.shape[1:].numel() == 12
    assert x.size(1) == 3 and isinstance(x.shape[0], int)
    assert repr(x.shape) == "chainrule.Size([2, 3, 4])"
    if torch is not None:
        assert tuple(torch.ones(2, 3, 4).shape) == x.shape
        assert torch.ones(2, 3, 4).shape.numel() == x.shape.numel()


def test_ieee_results_come_without_numpy_warnings_and_users_warnings_stay():
    # log(0) = -inf, sqrt(-1) = nan, exp overflow = inf, 0 / 0 = nan and their derivatives
    # are IEEE's values, which PyTorch computes silently; a user's own NumPy call still warns.
    # A fresh interpreter with every warning shown (pytest resets filters around tests).
    import subprocess
    import sys

    code = (
        "import numpy as np, chainrule as cr\n"
        "x = cr.tensor([0.0, -1.0, 1e308], requires_grad=True)\n"
        "(cr.log(x).sum() + cr.sqrt(x).sum() + (x * 10).exp().sum()).backward()\n"
        "q = cr.tensor([1.0, 0.0]) / cr.tensor([0.0, 0.0])\n"
        "print((x.grad.tolist(), q.tolist()))\n"
        "np.log(np.zeros(1))\n")
    r = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    grad, q = eval(r.stdout.strip().replace("nan", "float('nan')").replace("inf", "float('inf')"))
    # d/dx = 1/x + 1/(2 sqrt x) + 10 exp(10 x): inf at 0, nan at -1, overflow at 1e308
    assert grad[0] == np.inf and np.isnan(grad[1]) and grad[2] == np.inf
    assert q[0] == np.inf and np.isnan(q[1])
    lines = [ln for ln in r.stderr.splitlines() if "Warning" in ln]
    assert len(lines) == 1 and "<string>:6" in lines[0] and "divide by zero" in lines[0]


def test_memory_formats_autocast_and_matmul_precision_are_accepted():
    # the lines PyTorch's own optimizers and AMP scripts are written with
    p = cr.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    z = cr.zeros_like(p, memory_format=cr.preserve_format)
    assert z.shape == (2, 3) and not z.requires_grad and z.sum().item() == 0
    c = p.t().clone(memory_format=cr.contiguous_format)
    assert c.is_contiguous() and not p.t().clone().is_contiguous()  # preserve keeps layout
    c.sum().backward()  # the copy keeps the history: d sum / dp = 1
    assert np.array_equal(p.grad.numpy(), np.ones((2, 3)))
    assert p.contiguous(memory_format=cr.contiguous_format) is p
    assert cr.full_like(p, 2.0, memory_format=cr.preserve_format).sum().item() == 12
    with pytest.raises(TypeError, match="zeros_like: memory_format must be"):
        cr.zeros_like(p, memory_format="channels_last")
    with cr.autocast("cpu", dtype=cr.float32):  # dtypes are left as they are
        assert (p @ p.t()).dtype == cr.float64
    scaler = cr.cuda.amp.GradScaler(enabled=False)
    assert scaler.scale(p.sum()) is not None and not scaler.is_enabled()
    cr.set_float32_matmul_precision("high")
    assert cr.get_float32_matmul_precision() == "high"
    cr.set_float32_matmul_precision("highest")
    with pytest.raises(ValueError, match="set_float32_matmul_precision"):
        cr.set_float32_matmul_precision("fast")
    if torch is not None:
        tp = torch.tensor(p.detach().numpy(), requires_grad=True)
        assert not tp.t().clone().is_contiguous()
        assert tp.t().clone(memory_format=torch.contiguous_format).is_contiguous()


def test_cuda_queries_without_a_gpu_answer_as_pytorch_without_cuda():
    if cr.cuda.is_available():
        pytest.skip("a GPU is present (tests/test_backends.py checks these there)")
    assert cr.cuda.device_count() == 0 and cr.cuda.memory_allocated() == 0
    cr.cuda.synchronize()  # nothing queued: returns at once
    cr.cuda.empty_cache()
    with pytest.raises(RuntimeError, match="not compiled with CUDA"):
        cr.cuda.current_device()
    with pytest.raises(RuntimeError, match="not compiled with CUDA"):
        cr.cuda.get_device_name(0)
