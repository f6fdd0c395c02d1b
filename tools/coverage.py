"""How much of PyTorch's and HIPS autograd's differentiable API chainrule covers, measured.

    .venv/bin/pip install torch==2.13.0 expecttest autograd   # not needed by chainrule
    .venv/bin/python tools/coverage.py [--only NAME ...] [--samples 4] [--write docs/coverage.md]

**PyTorch.** The ops are enumerated from PyTorch's own test database (``op_db`` in
``torch.testing._internal.common_methods_invocations``): every OpInfo that supports
autograd in float64, minus transposed and 3-d convolution and pooling, RNN, sparse and
quantized ops (out of the scope set by issue 12; 1-d and 2-d convolution and pooling were
added after it). Each OpInfo gives up to three entries: the function (and each of
its aliases) under its torch name (``torch.kron``, ``torch.linalg.svd``,
``torch.nn.functional.gelu``, ``Tensor.__radd__``), its Tensor method and its in-place
method. Each entry is run on OpInfo's own sample inputs (float64, requires_grad) in torch
and in chainrule (inputs converted; the same cotangents), and reported as

- ``agree``: chainrule has it under the same name, and every sample gives the same values
  and the same gradient (VJP with a random cotangent) as torch;
- ``differ``: present, but a sample gives other values, another gradient, or an error
  where torch gives none (the first difference is printed);
- ``missing``: not present, with the reason from :data:`REASONS` (or "not yet").

Random ops (dropout, bernoulli, ...) are compared by shape only.

**HIPS autograd.** Its differentiable NumPy/SciPy functions are the primitives with a VJP
(``autograd.core.primitive_vjps``) found in its public modules; each is present when
chainrule has the NumPy/SciPy name (``numpy.X`` as ``chainrule.X``, ``numpy.linalg.X`` and
``scipy.linalg.X`` as ``chainrule.linalg.X``, ``scipy.special.X`` as
``chainrule.special.X``), else missing with its reason.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import signal
import sys
import warnings
from dataclasses import dataclass

import numpy as np

EXCLUDED = re.compile(r"fractional|rnn|lstm|gru|"
                      r"sparse|quantiz|^_|ctc_loss|"
                      r"embedding_bag|torch\.ops\.")

# Why an op stays missing (a name, or a pattern matched against the entry's name).
REASONS = [
    (r"^fft\.|stft", "out of scope: FFTs have complex results; chainrule is real-valued"),
    (r"complex|polar|view_as_real|view_as_complex|^imag$|cfloat|cdouble|chalf|sgn_",
     "complex-only or complex views: chainrule is real-valued"),
    (r"bfloat16|half|float$|double$", "dtype conversion methods other than float32/float64"),
    (r"interpolate|upsample|grid_sample|grid_sampler|pixel_|channel_shuffle|unfold|"
     r"local_response_norm|instance_norm|_aa$",
     "out of scope: image resampling and spatial ops (issue 12 left out the spatial family; "
     "1-d and 2-d convolution and pooling are there)"),
    (r"as_strided|to_sparse|contiguous_format|^to$",
     "storage-level view copies / memory layout: chainrule has no strides"),
    (r"lowrank|ormqr|nextafter|frexp|ldexp|float_power|index_reduce|put$|"
     r"segment_reduce|multi_head_attention_forward|linear_cross_entropy|rms_norm|glu|"
     r"threshold|hardshrink|softshrink|prelu|rrelu|multi_margin|multilabel|soft_margin|"
     r"triplet_margin_with_distance|alpha_dropout|dropout2d|dropout3d|combinations|"
     r"repeat_interleave|unsafe_|mode$|gradient|cumulative_trapezoid|trapz|msort|fill|"
     r"zero_|positive|deg2rad|rad2deg|atleast_|dsplit|hsplit|vsplit|dstack|"
     r"broadcast_tensors|split_with_sizes|sum_to_size|slice|select_scatter|"
     r"constant_pad_nd|native_|_batch_norm|_softmax_backward|max_pool2d_with_indices",
     "not yet (beyond issue 12's list)"),
]

# Where chainrule deliberately differs from torch, and why; the report lists these apart.
DELIBERATE = {
    "cholesky_solve": "chainrule's gradient with respect to the factor is zero on the "
                      "triangle the solve does not read; PyTorch's is not (it differentiates "
                      "as if the whole matrix were the factor)",
    "cholesky_inverse": "as cholesky_solve: zero gradient on the unread triangle of the factor",
    "addbmm": "Tensor.addbmm_ on a tensor of another shape: PyTorch resizes it to the result's "
              "shape; chainrule's in-place ops keep the tensor's shape and raise (as PyTorch's "
              "other in-place ops do)",
    "bfloat16": "NumPy has no bfloat16: Tensor.bfloat16() raises TypeError naming it (the "
                "name chainrule.bfloat16 exists for tables of dtypes)",
}

RANDOM = re.compile(r"dropout|bernoulli|normal$|rrelu|multinomial|lowrank")


def _random_sample(entry, sample):
    """Whether the op draws random numbers on this sample (then only shapes compare)."""
    if RANDOM.search(entry.name) or sample.kwargs.get("dropout_p", 0) > 0:
        return True
    # multi_head_attention_forward's dropout_p is its 10th positional argument
    return (entry.name.endswith("multi_head_attention_forward") and len(sample.args) > 9
            and sample.kwargs.get("training", True) and sample.args[9] > 0)


def reason_for(name):
    for pattern, why in REASONS:
        if re.search(pattern, name):
            return why
    return "not yet"


@dataclass
class Entry:
    name: str        # as a user writes it: "torch.kron", "Tensor.add_", "torch.linalg.svd"
    kind: str        # "function", "method" or "inplace"
    opinfo: object
    torch_fn: object
    status: str = ""
    detail: str = ""


# --- enumeration ----------------------------------------------------------------------------

def torch_entries(only=None):
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    seen = {}
    for op in op_db:
        if not op.supports_autograd or torch.float64 not in op.supported_dtypes("cpu"):
            continue
        if EXCLUDED.search(op.name):
            continue
        names = [(op.name, op.op)] + [(a.name, a.op) for a in op.aliases]
        for name, fn in names:
            if not _is_torch_function(torch, name):  # e.g. "double": a method only
                continue
            key = _torch_name(name)
            seen.setdefault(key, Entry(key, "function", op, fn))
        base = op.name.split(".")[-1]
        if op.method_variant is not None and "." not in op.name:
            seen.setdefault(f"Tensor.{base}", Entry(f"Tensor.{base}", "method", op,
                                                     op.method_variant))
        if op.inplace_variant is not None and "." not in op.name:
            inplace = getattr(op.inplace_variant, "__name__", base + "_")
            if not inplace.endswith("_") or inplace.startswith("<"):
                inplace = base + "_"
            seen.setdefault(f"Tensor.{inplace}", Entry(f"Tensor.{inplace}", "inplace", op,
                                                       op.inplace_variant))
    entries = list(seen.values())
    if only:
        entries = [e for e in entries if any(o in e.name for o in only)]
    return entries


def _is_torch_function(torch, name):
    """Whether ``torch.<name>`` is a function (not a dtype such as ``torch.double``, nor a
    name OpInfo uses for a method only, such as ``contiguous``); dunders and the matrix
    transpose properties count (as Tensor attributes)."""
    if name.startswith("__") or name in ("T", "mT", "H", "mH"):
        return True
    obj = torch
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return callable(obj) and not isinstance(obj, torch.dtype)


# OpInfo's function for these is a lambda that reorders the arguments; the same order for
# chainrule's function.
ADAPTERS = {
    "torch.where": lambda f: lambda x, condition, other, **k: f(condition, x, other, **k),
    "torch.polygamma": lambda f: lambda x, n, **k: f(n, x, **k),
    "torch.special.polygamma": lambda f: lambda x, n, **k: f(n, x, **k),
    "torch.einsum": lambda f: lambda tensors, equation, **k: f(equation, *tensors, **k),
    "torch.nn.functional.embedding": lambda f: lambda weight, idx, **k: f(idx, weight, **k),
    "torch.linalg.lstsq": lambda f: lambda a, b, driver=None: tuple(f(a, b, driver=driver))[:2],
    "torch.linalg.pinv": lambda f: lambda a, b: f(a @ b.mT),
    "torch.zero_": lambda f: lambda x, *a, **k: f(x.clone(), *a, **k),
    "torch.svd_lowrank": lambda f: lambda a, b, **k: f(a @ b.mT, **k),
    "torch.pca_lowrank": lambda f: lambda a, b, **k: f(a @ b.mT, **k),
}


def _torch_name(name):
    if name.startswith("__") or name in ("T", "mT", "H", "mH"):
        return f"Tensor.{name}"
    return f"torch.{name}"


def chainrule_callable(entry):
    """chainrule's counterpart of an entry (a callable taking the converted sample), or
    None when chainrule has no such name."""
    import chainrule as cr

    name = entry.name
    if name.startswith("Tensor."):
        attr = name[len("Tensor."):]
        if attr in ("T", "mT", "H", "mH"):
            if not hasattr(cr.Tensor, attr):
                return None
            return lambda x, *a, **k: getattr(x, attr)
        if not hasattr(cr.Tensor, attr):
            return None
        return lambda x, *a, **k: getattr(x, attr)(*a, **k)
    path = name[len("torch."):].split(".")
    obj = cr
    for part in path:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    if not callable(obj) or isinstance(obj, type):
        return None
    adapt = ADAPTERS.get(name)
    lam = getattr(entry.torch_fn, "__name__", "") == "<lambda>"
    return adapt(obj) if adapt and lam else obj


# --- running one sample in both libraries ---------------------------------------------------

def _to_cr(x, leaves):
    import torch

    import chainrule as cr

    if isinstance(x, torch.Tensor):
        if x.dtype.is_complex or x.dtype in (torch.bfloat16, torch.float16):
            raise _Skip(f"a {x.dtype} input")
        data = x.detach().cpu().numpy().copy()
        t = cr.tensor(data, requires_grad=bool(x.requires_grad and x.is_leaf
                                                and x.dtype.is_floating_point))
        leaves.append((x, t))
        return t
    if isinstance(x, torch.dtype):
        return torch.empty(0, dtype=x).numpy().dtype
    if isinstance(x, torch.Size):
        return tuple(x)
    if isinstance(x, (list, tuple)):
        conv = [_to_cr(v, leaves) for v in x]
        return type(x)(conv) if not hasattr(x, "_fields") else type(x)(*conv)
    if isinstance(x, dict):
        return {k: _to_cr(v, leaves) for k, v in x.items()}
    if isinstance(x, torch.device):
        return "cpu"
    if isinstance(x, (torch.memory_format, torch.layout)):
        raise _Skip(f"a {type(x).__name__} argument")
    if callable(x) and getattr(x, "__module__", "") and x.__module__.startswith("torch"):
        # a torch function passed as an argument (distance_function=...): chainrule's own
        import chainrule as cr

        for home in (cr.nn.functional, cr, cr.linalg):
            if callable(getattr(home, x.__name__, None)):
                return getattr(home, x.__name__)
        raise _Skip(f"the torch function {x.__name__} as an argument")
    return x


class _Skip(Exception):
    """This sample cannot be expressed in chainrule (a complex or half input, a layout)."""


def _leaves(out):
    if isinstance(out, (list, tuple)):
        return [v for o in out for v in _leaves(o)]
    return [out]


def _as_array(x):
    import torch

    import chainrule as cr

    if isinstance(x, torch.Tensor):
        return x.detach().cpu().resolve_conj().numpy()
    if isinstance(x, cr.Tensor):
        return x.detach().numpy()
    return np.asarray(x)


def _close(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return f"{what}: shape {a.shape} (chainrule) vs {b.shape} (torch)"
    if np.iscomplexobj(b):
        return f"{what}: torch gives complex values"
    if a.dtype.kind == "b" or b.dtype.kind == "b" or a.dtype.kind in "iu" and b.dtype.kind in "iu":
        return None if np.array_equal(a, b) else f"{what}: values differ"
    scale = max(1.0, float(np.nanmax(np.abs(b))) if b.size and np.isfinite(b).any() else 1.0)
    # float32 values (a float32 input's gradient) are compared at float32's precision
    tol = 1e-5 if np.float32 in (a.dtype, b.dtype) else 1e-7
    if not np.allclose(a.astype(float), b.astype(float), rtol=10 * tol, atol=tol * scale,
                       equal_nan=True):
        err = np.nanmax(np.abs(a.astype(float) - b.astype(float))) if a.size else 0.0
        return f"{what}: values differ (max abs error {err:.3g})"
    return None


@contextlib.contextmanager
def _time_limit(seconds):
    def handler(signum, frame):
        raise TimeoutError(f"took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run_sample(entry, ours, sample, rng):
    """None when chainrule agrees with torch on this sample, else the difference (text);
    raises _Skip for a sample chainrule cannot take."""
    import torch

    import chainrule as cr

    inputs = [sample.input, *sample.args]
    torch_fn = entry.torch_fn
    if entry.kind == "inplace":
        base = sample.input
        torch_in = base.clone() if isinstance(base, torch.Tensor) else base
        try:
            ref = torch_fn(torch_in, *sample.args, **sample.kwargs)
        except Exception as error:  # torch refuses this sample in place (a broadcast)
            raise _Skip(f"torch raises {type(error).__name__}") from None
    else:
        ref = torch_fn(*inputs, **sample.kwargs)
    if any(isinstance(r, torch.Tensor) and r.is_complex() for r in _leaves(ref)):
        raise _Skip("torch's result is complex (chainrule computes in real arithmetic)")
    leaves = []
    cr_args = _to_cr(inputs, leaves)
    cr_kwargs = _to_cr(dict(sample.kwargs), leaves)
    try:
        if entry.kind == "inplace" and isinstance(cr_args[0], cr.Tensor):
            first = cr_args[0] * 1.0 if cr_args[0].dtype.kind == "f" else cr_args[0].clone()
            out = ours(first, *cr_args[1:], **cr_kwargs)
        else:
            out = ours(*cr_args, **cr_kwargs)
    except Exception as error:
        return f"chainrule raises {type(error).__name__}: {str(error).splitlines()[0][:160]}"
    process = getattr(sample, "output_process_fn_grad", None) or (lambda o: o)
    with contextlib.suppress(Exception):
        ref = process(ref)
    with contextlib.suppress(Exception):
        out = process(out)
    ref_leaves, out_leaves = _leaves(ref), _leaves(out)
    if len(ref_leaves) != len(out_leaves):
        return f"outputs: {len(out_leaves)} (chainrule) vs {len(ref_leaves)} (torch)"
    if _random_sample(entry, sample):
        # random values: shapes only
        for k, (o, r) in enumerate(zip(out_leaves, ref_leaves)):
            if np.shape(_as_array(o)) != np.shape(_as_array(r)):
                return f"output {k}: shape differs"
        return None
    for k, (o, r) in enumerate(zip(out_leaves, ref_leaves)):
        diff = _close(_as_array(o), _as_array(r), f"output {k}")
        if diff:
            return diff
    # gradients: the same random cotangent on every float output that needs one
    pairs = [(o, r) for o, r in zip(out_leaves, ref_leaves)
             if isinstance(r, torch.Tensor) and r.requires_grad and r.dtype.is_floating_point]
    wrt = [(tl, cl) for tl, cl in leaves if cl.requires_grad]
    if not pairs or not wrt:
        return None
    cots = [rng.standard_normal(tuple(r.shape)) for _, r in pairs]
    try:
        ref_g = torch.autograd.grad([r for _, r in pairs], [t for t, _ in wrt],
                                    [torch.tensor(c) for c in cots], allow_unused=True)
    except RuntimeError:  # torch does not differentiate this sample
        return None
    live = [(o, c) for (o, _), c in zip(pairs, cots) if isinstance(o, cr.Tensor)
            and o.requires_grad]
    if not live:  # a constant output in chainrule: right when torch's gradient is zero
        if all(r is None or not torch.any(r != 0) for r in ref_g):
            return None
        return "gradient: chainrule's output does not require grad"
    try:
        ours_g = cr.autograd.grad([o for o, _ in live], [c for _, c in wrt],
                                  [cr.tensor(c) for _, c in live], allow_unused=True)
    except Exception as error:
        return f"backward raises {type(error).__name__}: {str(error).splitlines()[0][:160]}"
    for k, (g, r) in enumerate(zip(ours_g, ref_g)):
        a = 0.0 if g is None else g.numpy()
        b = 0.0 if r is None else r.numpy()
        diff = _close(np.broadcast_to(a, np.shape(b)) if np.ndim(a) == 0 else a,
                      np.broadcast_to(b, np.shape(a)) if np.ndim(b) == 0 else b,
                      f"gradient of input {k}")
        if diff:
            return diff
    return None


def check(entry, n_samples=3):
    import torch

    ours = chainrule_callable(entry)
    if ours is None:
        entry.status, entry.detail = "missing", reason_for(entry.name.split(".", 1)[1])
        return entry
    rng = np.random.default_rng(0)
    ran = 0
    try:
        with _time_limit(30), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            samples = entry.opinfo.sample_inputs("cpu", torch.float64, requires_grad=True)
            for sample in samples:
                if ran >= n_samples:
                    break
                try:
                    diff = run_sample(entry, ours, sample, rng)
                except _Skip:
                    continue
                except Exception as error:  # torch itself refuses the sample
                    if "chainrule" in type(error).__module__:
                        raise
                    continue
                ran += 1
                if diff:
                    base = entry.name.split(".")[-1]
                    why = DELIBERATE.get(base.rstrip("_"))
                    entry.status = "deliberate" if why else "differ"
                    entry.detail = f"{why} (here: {diff})" if why else diff
                    return entry
    except TimeoutError as error:
        entry.status, entry.detail = "differ", f"timeout: {error}"
        return entry
    if ran == 0:
        entry.status, entry.detail = "agree", "present (no sample chainrule can take)"
        return entry
    entry.status = "agree"
    return entry


# --- HIPS autograd ----------------------------------------------------------------------------

HIPS_SKIP = {"array_from_args", "concatenate_args", "make_diagonal", "_original_where",
             "astype", "real_if_close"}
HIPS_REASONS = [
    (r"^numpy\.fft\.", "out of scope: FFTs have complex results"),
    (r"^scipy\.stats\.", "out of scope: scipy.stats distributions (write the log-density "
                         "with chainrule ops)"),
    (r"^scipy\.signal\.|^scipy\.integrate\.", "out of scope: convolution / ODE solvers"),
    (r"imag$", "complex-only: chainrule is real-valued"),
]


def hips_entries():
    import autograd.numpy as anp
    import autograd.scipy.linalg
    import autograd.scipy.special
    import autograd.scipy.stats as st
    from autograd.core import primitive_vjps

    found = {}
    modules = [("numpy", anp), ("numpy.linalg", anp.linalg), ("numpy.fft", anp.fft),
               ("scipy.special", autograd.scipy.special),
               ("scipy.linalg", autograd.scipy.linalg)]
    import autograd.scipy.integrate
    import autograd.scipy.signal
    modules += [("scipy.signal", autograd.scipy.signal),
                ("scipy.integrate", autograd.scipy.integrate)]
    for sub in ("norm", "t", "gamma", "beta", "poisson", "dirichlet", "multivariate_normal",
                "chi2"):
        if hasattr(st, sub):
            modules.append((f"scipy.stats.{sub}", getattr(st, sub)))
    for modname, mod in modules:
        for k, v in vars(mod).items():
            try:
                known = v in primitive_vjps
            except TypeError:
                continue
            if known and not k.startswith("_") and k not in HIPS_SKIP:
                found.setdefault(id(v), f"{modname}.{k}")
    names = set(found.values()) | {"numpy.mean", "numpy.var", "numpy.std"}
    return sorted(names)


def hips_status(name):
    import chainrule as cr

    module, attr = name.rsplit(".", 1)
    home = {"numpy": cr, "numpy.linalg": cr.linalg, "scipy.linalg": cr.linalg,
            "scipy.special": cr.special}.get(module)
    if home is not None and callable(getattr(home, attr, None)):
        return "present", ""
    for pattern, why in HIPS_REASONS:
        if re.search(pattern, name):
            return "missing", why
    return "missing", "not yet"


# --- report -------------------------------------------------------------------------------------

def report(entries, hips, path=None):
    groups = {s: [e for e in entries if e.status == s]
              for s in ("agree", "differ", "deliberate", "missing")}
    hips_present = [n for n, (s, _) in hips.items() if s == "present"]
    lines = [
        "# Coverage of PyTorch's and HIPS autograd's differentiable API",
        "",
        "Generated by `tools/coverage.py` (see its docstring for the method). Do not edit.",
        "",
        f"- PyTorch 2.13 (OpInfo database, autograd + float64, without fractional pooling, "
        f"RNN, sparse and quantized ops): **{len(entries)}** entries "
        "(functions with their aliases, Tensor methods, in-place methods)",
        f"  - present and agreeing with torch in value and gradient on its sample inputs: "
        f"**{len(groups['agree'])}**",
        f"  - present and differing: **{len(groups['differ'])}**",
        f"  - present and differing on purpose (the reason is listed below): "
        f"**{len(groups['deliberate'])}**",
        f"  - missing: **{len(groups['missing'])}**",
        f"- HIPS autograd 1.9: **{len(hips)}** differentiable NumPy/SciPy functions, "
        f"**{len(hips_present)}** present in chainrule",
        "",
        "## Present and differing",
        "",
    ]
    lines += [f"- `{e.name}`: {e.detail}" for e in groups["differ"]] or ["(none)"]
    lines += ["", "## Differing on purpose", ""]
    lines += [f"- `{e.name}`: {e.detail}" for e in groups["deliberate"]] or ["(none)"]
    lines += ["", "## Missing, with the reason", ""]
    by_reason = {}
    for e in groups["missing"]:
        by_reason.setdefault(e.detail, []).append(e.name)
    for why, names in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"- {why} ({len(names)}): " + ", ".join(f"`{n}`" for n in sorted(names)))
    lines += ["", "## HIPS autograd: missing, with the reason", ""]
    by_reason = {}
    for n, (s, why) in hips.items():
        if s == "missing":
            by_reason.setdefault(why, []).append(n)
    for why, names in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"- {why} ({len(names)}): " + ", ".join(f"`{n}`" for n in sorted(names)))
    lines += ["", "## Present and agreeing", ""]
    lines.append(", ".join(f"`{e.name}`" for e in sorted(groups["agree"], key=lambda e: e.name)))
    text = "\n".join(lines) + "\n"
    if path:
        with open(path, "w") as f:
            f.write(text)
    return text, groups, hips_present


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="entries whose name contains one of these")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--write", help="write the Markdown report to this path")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    try:
        entries = torch_entries(args.only)
    except ImportError as error:
        print(f"coverage: needs torch and expecttest installed ({error})")
        return 2
    for k, e in enumerate(entries):
        check(e, args.samples)
        if args.verbose or e.status == "differ":
            print(f"[{k + 1}/{len(entries)}] {e.status:8s} {e.name}: {e.detail}", flush=True)
    try:
        hips = {n: hips_status(n) for n in hips_entries()}
    except ImportError:
        hips = {}
    text, groups, hips_present = report(entries, hips, args.write)
    print("\n".join(text.splitlines()[4:12]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
