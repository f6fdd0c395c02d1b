"""The nn part: every nn module / functional of cases_nn on the CPU and on the device;
compares outputs, input gradients, parameter gradients and buffers, and where each lies.

With ``f32`` the float64 inputs become float32 and modules are made float32 (``.float()``),
compared to float32's precision."""
import copy

import cases_nn
import numpy as np
from harness import DEV, classify, describe, error_result, on_device

import chainrule as cr
from chainrule.backend import numpy_dtype

rng = np.random.default_rng(0)
CASES = []


def R(*shape, pos=False, scale=1.0):
    a = rng.standard_normal(shape) * scale
    return np.abs(a) + 0.1 if pos else a


def Ints(high, *shape):
    return rng.integers(0, high, shape)


def case(name, fn, inputs, module=None, train=True, seed=0, grad=True, rtol=1e-9):
    """fn(module, *tensors) -> output(s). inputs: list of numpy arrays (float: requires
    grad), or ("nograd", array)."""
    CASES.append(dict(name=name, fn=fn, inputs=inputs, module=module, train=train, seed=seed,
                      grad=grad, rtol=rtol))


def flat(out):
    if isinstance(out, cr.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        r = []
        for o in out:
            r += flat(o)
        return r
    if hasattr(out, "data") and hasattr(out, "batch_sizes"):  # PackedSequence
        return [out.data]
    return []


def host(t):
    return t.detach().cpu().numpy()


def run(c, d, mod, f32):
    cr.manual_seed(c["seed"])
    ts = []
    for a in c["inputs"]:
        nograd = isinstance(a, tuple)
        arr = a[1] if nograd else a
        if f32 and np.asarray(arr).dtype == np.float64:
            arr = np.asarray(arr, dtype=np.float32)
        req = c["grad"] and not nograd and np.asarray(arr).dtype.kind == "f"
        ts.append(cr.tensor(arr, device=d, requires_grad=req))
    if mod is not None:
        mod.train(c["train"])
        if f32:
            mod.float()
    out = c["fn"](mod, *ts)
    outs = flat(out)
    res = {}
    tensors = []
    for i, o in enumerate(outs):
        res[f"out{i}"] = host(o)
        tensors.append((f"out{i}", o))
    floats = [o for o in outs if o.requires_grad and cr.is_floating_point(o)]
    if c["grad"] and floats:
        total = None
        for i, o in enumerate(floats):
            w = np.random.default_rng(i + 7).standard_normal(tuple(o.shape))
            term = (o * cr.tensor(w.astype(numpy_dtype(o.dtype)), device=d)).sum()
            total = term if total is None else total + term
        total.backward()
        for i, t in enumerate(ts):
            if t.requires_grad:
                res[f"gin{i}"] = None if t.grad is None else host(t.grad)
                if t.grad is not None:
                    tensors.append((f"gin{i}", t.grad))
        if mod is not None:
            for n, p in mod.named_parameters():
                res[f"gp:{n}"] = None if p.grad is None else host(p.grad)
                if p.grad is not None:
                    tensors.append((f"gp:{n}", p.grad))
    if mod is not None:
        for n, b in mod.named_buffers():
            res[f"buf:{n}"] = host(b)
            tensors.append((f"buf:{n}", b))
    return res, tensors


def run_case(c, f32):
    """(name, status, detail) of one nn configuration."""
    name = c["name"]
    try:
        cr.manual_seed(123)
        mod_cpu = c["module"]() if c["module"] else None
    except Exception as e:
        return name, classify(e, False), f"building the module raised {describe(e)}"
    mod_dev = copy.deepcopy(mod_cpu).to(DEV) if mod_cpu is not None else None
    try:
        ref, _ = run(c, "cpu", mod_cpu, f32)
    except Exception as e:
        return error_result(name, e, device=False)
    try:
        got, tensors = run(c, DEV, mod_dev, f32)
    except Exception as e:
        return error_result(name, e, device=True)
    bad = [k for k in ref if k not in got]
    wrongdev = [f"{k}:{t.device}" for k, t in tensors if not on_device(t)]
    rtol = max(c["rtol"], 1e-4 if f32 else 0)
    atol = 1e-5 if f32 else 1e-10
    for k, v in ref.items():
        g = got.get(k)
        if (v is None) != (g is None):
            bad.append(f"{k}:none-mismatch")
        elif v is not None:
            if v.shape != g.shape or v.dtype != g.dtype or \
                    not np.allclose(v, g, rtol=rtol, atol=atol, equal_nan=True):
                bad.append(k)
    if bad or wrongdev:
        return name, "fail", f"mismatch {bad} wrong device {wrongdev[:3]}"
    return name, "ok", ""


def run_all(f32=False, only=None):
    """Every configuration (those whose name contains one of ``only``): a list of
    (name, status, detail)."""
    return [run_case(c, f32) for c in CASES
            if not only or any(o in c["name"] for o in only)]


cases_nn.register(case, R, Ints)
cases_nn.register_more(case, R, Ints)
