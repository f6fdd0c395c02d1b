"""Differential harness: run a call on the CPU and on the device ``DEV``, compare.

``DEV`` (environment variable) names the device: ``array_api_strict.device1`` (the default,
array-api-strict's second device) or ``cuda:0`` (CuPy). Each call gives one result:

- ``ok``: outputs, input gradients (and, in the nn part, parameter gradients and buffers)
  agree, and every tensor it returns is on the device;
- ``gap``: a documented limit, not a bug: a NotImplementedError the CPU raises for a feature
  chainrule does not implement, a NotImplementedError on the device naming its backend (what
  a library lacks, such as a scatter-add or ``erf`` on array-api-strict), or an IndexError /
  TypeError from array-api-strict's own indexing and type-promotion rules;
- ``fail``: anything else (a value, gradient or device mismatch, an unexpected exception).
"""

import os
import traceback

import numpy as np

import chainrule as cr
from chainrule.backend import backend_of, dtype_kind

DEV = os.environ.get("DEV", "array_api_strict.device1")

# array-api-strict's own rules (the messages are its own; chainrule re-raises them with the
# op's name): indexing it does not allow, and no mixed int/float/bool arithmetic
STRICT_RULES = (
    "Integer index arrays are only allowed with integer indices",
    "multi-axes index only specifies",
    "Fancy indexing __setitem__ is not supported",
    "Index arrays for array_api_strict must be",
    "cannot be type promoted together",
    "Python float scalars can only be promoted with floating-point arrays",
    "Only floating-point dtypes are allowed",
    "Only numeric dtypes are allowed",
)

_BACKEND = []


def backend_name():
    """The chainrule backend that holds ``DEV``'s data: "array_api_strict", "cupy", ..."""
    if not _BACKEND:
        _BACKEND.append(backend_of(cr.zeros(1, device=DEV)._data).name)
    return _BACKEND[0]


def on_device(t):
    """Whether the tensor ``t`` lies on ``DEV``."""
    return t.device == cr.device(DEV)


def classify(exc, device):
    """Return "gap" for a documented limit (see the module docstring), else "fail"."""
    msg = str(exc)
    if isinstance(exc, NotImplementedError):
        if not device and "not implemented in chainrule" in msg:
            return "gap"
        if device and f"the {backend_name()} backend" in msg:
            return "gap"
    if device and backend_name() == "array_api_strict" and \
            isinstance(exc, (IndexError, TypeError)) and any(r in msg for r in STRICT_RULES):
        return "gap"
    return "fail"


def describe(exc, limit=200):
    """The exception in one line, with the innermost chainrule frames it went through."""
    tb = traceback.extract_tb(exc.__traceback__)
    files = [(f.filename.replace("\\", "/"), f.lineno) for f in tb]
    where = [f"{name.split('/chainrule/')[-1]}:{line}" for name, line in files
             if "/chainrule/" in name and "/tools/device_diff/" not in name]
    msg = f"{type(exc).__name__}: {str(exc)[:limit]}".replace("\n", " ")
    msg = " ".join(msg.split())
    return msg + (" @ " + " <- ".join(where[::-1][:3]) if where else "")


def error_result(name, exc, device):
    """The (name, status, detail) of a call that raised ``exc`` on the CPU or the device."""
    side = "device" if device else "cpu"
    return name, classify(exc, device), f"{side} raised {describe(exc)}"


def close(a, b, rtol=1e-7, atol=1e-9):
    """Whether two results agree: arrays by shape, dtype and values, others by ``==``.

    float32 (and complex64) results agree to float32's precision (rtol 1e-5, atol 1e-6):
    CuPy's and NumPy's float32 kernels round differently. So do float64 results whose values
    are all float32 numbers on both sides (a float32 computation cast back, such as the
    gradient of ``softmax(x, dtype=float32)`` for a float64 ``x``).
    """
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False, f"shape {a.shape} vs {b.shape}"
        if a.dtype != b.dtype:
            return False, f"dtype {a.dtype} vs {b.dtype}"
        if a.dtype.kind in "fc":
            if a.dtype in (np.float16, np.float32, np.complex64) or _float32_values(a, b):
                rtol, atol = max(rtol, 1e-5), max(atol, 1e-6)
            ok = np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = np.array_equal(a, b)
        if ok:
            return True, ""
        diff = np.max(np.abs(a.astype(complex) - b.astype(complex))) if a.size else 0
        return False, f"max diff {diff:.3g}"
    try:
        ok = bool(a == b or (a != a and b != b))
    except Exception:
        ok = repr(a) == repr(b)
    return ok, "" if ok else f"{a!r} vs {b!r}"


def _float32_values(a, b):
    if a.dtype != np.float64:
        return False
    with np.errstate(all="ignore"):
        return all(np.array_equal(x, x.astype(np.float32).astype(np.float64), equal_nan=True)
                   for x in (a, b))


# ---- the ops part: case(name, fn, *arrays) with fn(ctx, *tensors) -> output(s) -------------
CASES = []


class Ctx:
    """What a case's function gets first: ``dev`` (None on the CPU) and ``T``, a tensor on it."""

    def __init__(self, dev):
        self.dev = dev

    def T(self, a, requires_grad=False, dtype=None):
        a = np.asarray(a)
        return cr.tensor(a, device=self.dev, requires_grad=requires_grad, dtype=dtype)


def case(name, fn, *arrays, grad=True):
    """Register a call: ``fn(ctx, *tensors)`` on tensors made from ``arrays`` (the float ones
    require grad when ``grad``); its outputs and the gradients of a weighted sum of them are
    compared between the CPU and the device."""
    CASES.append((name, fn, arrays, grad))


def leaves(out):
    if isinstance(out, cr.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        r = []
        for o in out:
            r += leaves(o)
        return r
    if isinstance(out, dict):
        r = []
        for k in sorted(out):
            r += leaves(out[k])
        return r
    if hasattr(out, "_fields") or hasattr(out, "__dict__") and not isinstance(out, (int, float)):
        try:
            return leaves(tuple(out))
        except TypeError:
            pass
    return [out]


def run_one(fn, arrays, dev, grad):
    ctx = Ctx(dev)
    ins = []
    for a in arrays:
        a = np.asarray(a)
        rg = grad and a.dtype.kind == "f"
        ins.append(cr.tensor(a, device=dev, requires_grad=rg))
    out = fn(ctx, *ins)
    ls = leaves(out)
    vals = []
    tensors = []
    for o in ls:
        if isinstance(o, cr.Tensor):
            tensors.append(("out", o))
            vals.append(o.detach().cpu().numpy())
        else:
            vals.append(o)
    grads = None
    if grad:
        loss = None
        for o in ls:
            if isinstance(o, cr.Tensor) and o.requires_grad and dtype_kind(o.dtype) == "f":
                w = np.cos(np.arange(max(o.numel(), 1)))[: o.numel()].reshape(tuple(o.shape))
                term = (o * ctx.T(w)).sum()
                loss = term if loss is None else loss + term
        gi = [t for t in ins if t.requires_grad]
        if loss is not None and gi:
            gs = cr.autograd.grad(loss, gi, allow_unused=True)
            grads = []
            for g in gs:
                if g is None:
                    grads.append(None)
                else:
                    tensors.append(("grad", g))
                    grads.append(g.cpu().numpy())
    return vals, grads, tensors


def run_case(name, fn, arrays, grad):
    """(name, status, detail) of one registered ops call."""
    try:
        cv, cg, _ = run_one(fn, arrays, None, grad)
    except Exception as e:
        return error_result(name, e, device=False)
    try:
        dv, dg, tensors = run_one(fn, arrays, DEV, grad)
    except Exception as e:
        return error_result(name, e, device=True)
    bad = [f"{kind}:{t.device}" for kind, t in tensors if not on_device(t)]
    if bad:
        return name, "fail", f"wrong device {bad[:3]}"
    if len(cv) != len(dv):
        return name, "fail", f"n outputs {len(cv)} vs {len(dv)}"
    for i, (a, b) in enumerate(zip(cv, dv)):
        ok, msg = close(a, b)
        if not ok:
            return name, "fail", f"out {i}: {msg}"
    if (cg is None) != (dg is None):
        return name, "fail", "grad presence"
    # gradients through a float32 output (softmax(x, dtype=float32) of a float64 x) carry
    # float32's rounding, though they come back as float64
    low = any(getattr(v, "dtype", None) in (np.float16, np.float32, np.complex64) for v in cv)
    tol = dict(rtol=1e-5, atol=1e-6) if low else {}
    for i, (a, b) in enumerate(zip(cg or (), dg or ())):
        if (a is None) != (b is None):
            return name, "fail", f"grad {i} None mismatch"
        if a is not None:
            ok, msg = close(a, b, **tol)
            if not ok:
                return name, "fail", f"grad {i}: {msg}"
    return name, "ok", ""


def run_cases():
    """Run the registered ops calls (then forget them): a list of (name, status, detail)."""
    results = [run_case(*c) for c in CASES]
    CASES.clear()
    return results


def report(part, results):
    """Print each non-ok call and the part's summary line; return (calls, ok, gaps, fails)."""
    counts = {s: sum(r[1] == s for r in results) for s in ("ok", "gap", "fail")}
    for name, status, detail in results:
        if status != "ok":
            print(f"  {'gap' if status == 'gap' else 'FAIL':4s} {name}: {detail}"[:400])
    n, ok, gaps, fails = len(results), counts["ok"], counts["gap"], counts["fail"]
    print(f"{part}: {n} calls, ok {ok}, gaps {gaps}, failures {fails}", flush=True)
    return n, ok, gaps, fails
