"""The checks validate runs on a forward/backward pair: outputs (shapes, dtypes, what
backward returns), gradcheck and gradgradcheck, and the JVP/VJP adjoint identity, with
the numerical and analytic Jacobians they compare, and the teaching notes that explain a
failed check (what backward must return, with the user's shapes)."""

from __future__ import annotations

import inspect
import warnings

import numpy as np

from .. import _state
from .._tensor import Tensor, wrap
from . import forward_ad
from ._validate_report import (
    MAX_TEACH,
    Check,
    _count,
    _describe_value,
    _fmt,
    _indent,
    _short_error,
    _side_by_side,
)
from .function import Function, _user_backward
from .gradcheck import GradcheckError, gradcheck, gradgradcheck

#: Jacobians are formed (for the worst error, the summary and teaching) only up to this
#: many input entries and output entries in all.
MAX_JACOBIAN_SIZE = 1000


def _input_names(cls, n):
    try:
        params = list(inspect.signature(cls.forward).parameters.values())
        if cls.setup_context is Function.setup_context:
            params = params[1:]  # forward(ctx, *args); with setup_context, forward(*args)
    except (TypeError, ValueError):
        params = []
    names = []
    for k in range(n):
        p = params[k] if k < len(params) else None
        if p is None or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            names.append(f"input {k}")
        else:
            names.append(p.name)
    return names


def _prepare(example_inputs, dtype):
    """Fresh copies: float tensors (and float arrays) in ``dtype``; which need a grad."""
    raw = []
    for x in example_inputs:
        if isinstance(x, np.ndarray) and x.dtype.kind == "f":
            x = wrap(x)
        raw.append(x)
    floats = [i for i, x in enumerate(raw) if isinstance(x, Tensor) and x.dtype.kind == "f"]
    marked = [i for i in floats if raw[i]._requires_grad]
    diff = marked or floats  # the inputs marked requires_grad, or every float tensor

    def make(requires_grad=True):
        out = []
        for i, x in enumerate(raw):
            if isinstance(x, Tensor):
                t = wrap(np.array(x._data, dtype=dtype if i in floats else x.dtype))
                if i in diff and requires_grad:
                    t.requires_grad_(True)
                out.append(t)
            else:
                out.append(x)
        return tuple(out)

    return make, diff


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _diff_outputs(outputs):
    return [j for j, o in enumerate(outputs) if isinstance(o, Tensor) and o._requires_grad]


def _numerical(cls, inputs, diff, eps):
    """Central-difference Jacobians ``{(j, i): (out size, in size)}`` of ``cls.apply``."""
    result = {}
    with _state.no_grad():
        for i in diff:
            base = np.array(inputs[i]._data, dtype=np.float64)
            flat = base.reshape(-1)
            cols = {}
            for k in range(flat.size):
                vals = []
                for step in (eps, -eps):
                    pert = flat.copy()
                    pert[k] += step
                    args = list(inputs)
                    args[i] = wrap(pert.reshape(base.shape).astype(inputs[i].dtype))
                    vals.append(_as_tuple(cls.apply(*args)))
                for j, (plus, minus) in enumerate(zip(*vals)):
                    if isinstance(plus, Tensor) and plus.dtype.kind == "f":
                        col = (np.asarray(plus._data, dtype=np.float64).reshape(-1)
                               - np.asarray(minus._data, dtype=np.float64).reshape(-1))
                        cols.setdefault(j, np.zeros((col.size, flat.size)))[:, k] = col / (2 * eps)
            for j, J in cols.items():
                result[(j, i)] = J
    return result


def _vjp(cls, make, diff, cotangents):
    """``u^T J`` for each input in ``diff`` through the engine (fresh forward)."""
    from ._grad import grad

    xs = make()
    outs = _as_tuple(cls.apply(*xs))
    js = _diff_outputs(outs)
    gs = grad([outs[j] for j in js], [xs[i] for i in diff], [wrap(cotangents[j]) for j in js],
              allow_unused=True)
    return {i: (np.zeros(xs[i].shape) if g is None else np.asarray(g._data, dtype=np.float64))
            for i, g in zip(diff, gs)}


def _analytic(cls, make, diff):
    """Jacobians from backward, one row per output entry (one-hot cotangents)."""
    from ._grad import grad

    xs = make()
    outs = _as_tuple(cls.apply(*xs))
    result = {}
    for j in _diff_outputs(outs):
        y = outs[j]
        rows = {i: np.zeros((y._data.size, xs[i]._data.size)) for i in diff}
        for r in range(y._data.size):
            seed = np.zeros(y._data.size, dtype=y.dtype)
            seed[r] = 1
            gs = grad(y, [xs[i] for i in diff], wrap(seed.reshape(y.shape)), retain_graph=True,
                      allow_unused=True)
            for i, g in zip(diff, gs):
                if g is not None:
                    rows[i][r] = np.asarray(g._data, dtype=np.float64).reshape(-1)
        for i in diff:
            result[(j, i)] = rows[i]
    return result


def _diagnosis(err):
    """``(patterns, lines)`` of a GradcheckError: short pattern names and the full lines.

    Uses ``err.report.patterns`` and ``err.diagnosis`` where gradcheck provides them; a
    pattern name is otherwise the start of a diagnosis line, before ``" ("`` or ``":"``.
    """
    lines = [str(d) for d in (getattr(err, "diagnosis", None) or [])]
    patterns = getattr(getattr(err, "report", None), "patterns", None)
    if patterns is None:
        patterns = [d.split(":")[0].split(" (")[0].strip() for d in lines]
    return list(dict.fromkeys(str(p) for p in patterns)), lines


def _supports(fn, name):
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def plot_supported():
    """Whether this version of :func:`gradcheck` takes ``plot=``.

    Returns
    -------
    bool
        True when ``validate(plot=...)`` can pass the path on to gradcheck.
    """
    return _supports(gradcheck, "plot")




def _check_outputs(cls, make, diff, names, rng, state):
    """(a) what backward returns, and (e) whether anything changes in place."""
    from ._grad import grad

    xs = make()
    before = {i: np.array(x._data) for i, x in enumerate(xs) if isinstance(x, Tensor)}
    try:
        outs = _as_tuple(cls.apply(*xs))
    except Exception as err:  # the user's forward: report, do not crash
        msg = f"forward raised {type(err).__name__}: {err}"
        return (Check("outputs", "fail", "forward raised", msg),
                Check("in-place", "skip", "", "skipped: forward raised"))
    changed_in_forward = [i for i, a in before.items()
                          if not np.array_equal(a, xs[i]._data, equal_nan=True)]
    js = _diff_outputs(outs)
    state["outputs"] = outs
    state["js"] = js
    if not js:
        msg = ("forward returned no differentiable output (no float Tensor depending on an "
               "input that requires grad), so there is no backward to check")
        return (Check("outputs", "fail", "no differentiable output", msg),
                Check("in-place", "skip", "", "skipped: no backward"))
    cot = {}
    for j, o in enumerate(outs):
        if isinstance(o, Tensor):
            cot[j] = (rng.standard_normal(o.shape).astype(o.dtype) if j in js
                      else np.zeros(o.shape, dtype=o.dtype))
    state["cotangents"] = cot

    # Call backward directly, as the engine does, to see what it returns and what it touches.
    node = outs[js[0]]._grad_fn
    ctx = node.ctx
    grads_in = [None if o is None else wrap(np.array(cot[j])) for j, o in enumerate(outs)]
    labels = {}  # id -> (object, names): a saved tensor is often an input itself

    def watch(label, v):
        labels.setdefault(id(v), (v, []))[1].append(label)

    for k, t in enumerate(ctx._saved):
        if isinstance(t, Tensor):
            watch(f"saved tensor {k} {tuple(t.shape)}", t)
    for key, v in vars(ctx).items():
        if not key.startswith("_") and isinstance(v, (Tensor, np.ndarray)):
            watch(f"ctx.{key}", v)
    for i, x in enumerate(xs):
        if isinstance(x, Tensor):
            watch(f"input {i} ({names[i]})", x)
    for j, g in enumerate(grads_in):
        if g is not None:
            watch(f"grad_output {j}", g)
    watched = {" = ".join(names_): v for v, names_ in labels.values()}
    snap = {k: (np.array(v._data if isinstance(v, Tensor) else v),
                v._vc[0] if isinstance(v, Tensor) else None) for k, v in watched.items()}
    try:
        with _state.no_grad():
            returned = _user_backward(cls)(ctx, *grads_in)
    except Exception as err:
        msg = f"backward raised {type(err).__name__}: {err}"
        return (Check("outputs", "fail", "backward raised", msg),
                Check("in-place", "skip", "", "skipped: backward raised"))
    changed = []
    for key, v in watched.items():
        data = v._data if isinstance(v, Tensor) else v
        old, version = snap[key]
        moved = version is not None and v._vc[0] != version
        if moved or not np.array_equal(old, data, equal_nan=True):
            how = (f"version {version} -> {v._vc[0]}" if moved else
                   "values changed with no version bump: written through .numpy(), ._data "
                   "or NumPy")
            changed.append(f"backward modified {key} in place ({how})")
    if changed:
        changed.append("backward must not change what it reads: a second backward "
                       "(retain_graph=True) or another node using the same tensor would see "
                       "the changed values. Compute new tensors (x * 2, not x.mul_(2)).")
    changed = [f"forward modified input {i} ({names[i]}) in place; return new tensors "
               "instead (in-place custom Functions are not supported)"
               for i in changed_in_forward] + changed
    if changed:
        inplace = Check("in-place", "fail", changed[0].split(" (")[0], "\n".join(changed))
    else:
        inplace = Check("in-place", "pass", "",
                        "nothing changed in place (inputs, saved tensors, grad_output)")

    returned_t = _as_tuple(returned)
    desc = ", ".join(_describe_value(v) for v in returned_t)
    plural = "" if len(returned_t) == 1 else "s"
    got = f"backward returned {len(returned_t)} value{plural}: {desc}"
    want = "expected one per input of forward: " + ", ".join(
        f"{names[i]} {_describe_value(x)}" if isinstance(x, Tensor)
        else f"{names[i]} (not a Tensor: None)" for i, x in enumerate(xs))
    # The verdict is the library's own: run the same backward through the engine.
    try:
        xs2 = make()
        outs2 = _as_tuple(cls.apply(*xs2))
        grad([outs2[j] for j in js], [xs2[i] for i in diff], [wrap(cot[j]) for j in js],
             allow_unused=True)
    except (RuntimeError, TypeError) as err:
        msg = f"{type(err).__name__}: {err}\n{got}\n{want}"
        return Check("outputs", "fail", "wrong gradient count/shape/type", msg), inplace
    except Exception as err:
        msg = f"backward raised {type(err).__name__}: {err}"
        return Check("outputs", "fail", "backward raised", msg), inplace
    notes = []
    for i, (g, x) in enumerate(zip(returned_t, xs)):
        if isinstance(g, Tensor) and isinstance(x, Tensor) and g.dtype != x.dtype:
            notes.append(f"the gradient of {names[i]} is {g.dtype} but {names[i]} is {x.dtype}"
                         " (the library casts it)")
    for i in diff:
        if i >= len(returned_t) or returned_t[i] is None:
            notes.append(f"backward returned None for {names[i]}, which requires grad: its "
                         "gradient is taken as zero")
    msg = f"{got}; one per input, shapes and dtypes match"
    if notes:
        msg += "\nnote: " + "\nnote: ".join(notes)
    state["ok"] = True
    return Check("outputs", "pass", "", msg), inplace


def _check_gradcheck(cls, make, eps, atol, rtol, result, plot):
    kwargs = {"eps": eps, "atol": atol, "rtol": rtol}
    plot_note = None
    if plot is not None:
        if plot_supported():
            kwargs["plot"] = plot
            plot_note = f"plot: passed plot={plot!r} to gradcheck"
        else:
            plot_note = "plot: this gradcheck has no plot= argument; no plot written"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            gradcheck(cls.apply, make(), **kwargs)
            status, short, msg, err_obj = "pass", "", "", None
        except GradcheckError as err:
            status, short, err_obj = "fail", "", err
            i = getattr(err, "input_index", None)
            short = "Jacobian mismatch" + ("" if i is None else f", input {i}")
            msg = _short_error(err)
        except Exception as err:
            status, short, err_obj = "fail", "gradcheck raised", None
            msg = f"gradcheck raised {type(err).__name__}: {err}"
    for w in caught:
        note = str(w.message)
        if note not in result.notes:
            result.notes.append(note)
    errors = [np.abs(result.analytic[k] - result.jacobians[k]).max()
              for k in result.jacobians if k in result.analytic and result.jacobians[k].size]
    error = float(max(errors)) if errors else None
    if err_obj is not None and error is None and hasattr(err_obj, "analytic"):
        error = float(np.abs(err_obj.analytic - err_obj.numerical).max())
    if status == "pass":
        tail = f" (max error {error:.2e})" if error is not None else ""
        msg = "the Jacobian from backward matches finite differences of forward" + tail
    if plot_note:
        msg += "\n" + plot_note
    check = Check("gradcheck", status, short, msg, error)
    if err_obj is not None:
        check.diagnosis, check.findings = _diagnosis(err_obj)
        report = getattr(err_obj, "report", None)
        check.report = str(err_obj) if report is None else report
    return check


FIRST_ORDER_ONLY = ("first-order correct; cannot be differentiated twice: mark it "
                    "@once_differentiable, or write it with chainrule ops if you need second "
                    "derivatives")


def _check_gradgrad(cls, make, eps, atol, rtol):
    if getattr(_user_backward(cls), "_once_differentiable", False):
        return Check("gradgradcheck", "skip", "not differentiable twice (declared)",
                     "not differentiable twice: backward is marked @once_differentiable, so "
                     "second derivatives through it raise (as declared); not checked")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the float32 warning: gradcheck's note has it
            gradgradcheck(cls.apply, make(), eps=eps, atol=atol, rtol=rtol)
    except GradcheckError as err:
        error = (float(np.abs(err.analytic - err.numerical).max())
                 if hasattr(err, "analytic") else None)
        check = Check("gradgradcheck", "fail", "second derivatives wrong",
                      "the derivatives of backward itself disagree with finite differences "
                      "of backward:\n" + _short_error(err), error)
        check.diagnosis, check.findings = _diagnosis(err)
        report = getattr(err, "report", None)
        check.report = str(err) if report is None else report
        return check
    except RuntimeError as err:
        text = str(err)
        if "differentiated again" in text or "once_differentiable" in text or "numpy()" in text:
            return Check(
                "gradgradcheck", "fail", "not differentiable twice",
                "not differentiable twice: backward is not marked @once_differentiable, but "
                "its result does not depend on the inputs through chainrule ops (it used "
                "NumPy, .numpy() or .detach()), so create_graph=True / Hessians through this "
                "Function raise. .detach().numpy() in backward works for first derivatives "
                "only: write backward with chainrule ops for second derivatives, or mark it "
                "@once_differentiable.\n" + _short_error(err, 1))
        return Check("gradgradcheck", "fail", "gradgradcheck raised",
                     f"gradgradcheck raised RuntimeError: {err}")
    except Exception as err:
        return Check("gradgradcheck", "fail", "gradgradcheck raised",
                     f"gradgradcheck raised {type(err).__name__}: {err}")
    return Check("gradgradcheck", "pass", "",
                 "backward is differentiable and its derivatives match finite differences")


def _check_adjoint(cls, make, diff, names, rng, state, result, atol, rtol):
    if cls.jvp is Function.jvp:
        return Check("adjoint", "skip", "no jvp",
                     "no jvp (forward mode) defined: nothing to compare backward with")
    outs = state["outputs"]
    js = state["js"]
    xs = make(requires_grad=False)
    v = {i: rng.standard_normal(xs[i].shape) for i in diff}
    u = {j: rng.standard_normal(outs[j].shape) for j in js}
    try:
        with forward_ad.dual_level():
            duals = list(xs)
            for i in diff:
                duals[i] = forward_ad.make_dual(xs[i], v[i].astype(xs[i].dtype))
            ys = _as_tuple(cls.apply(*duals))
            tangents = {}
            for j in js:
                t = forward_ad.unpack_dual(ys[j]).tangent
                tangents[j] = (np.zeros(outs[j].shape) if t is None
                               else np.asarray(t._data, dtype=np.float64))
    except Exception as err:
        return Check("adjoint", "fail", "jvp raised", f"jvp raised {type(err).__name__}: {err}")
    bad = [j for j in js if tangents[j].shape != tuple(outs[j].shape)]
    if bad:
        j = bad[0]
        return Check("adjoint", "fail", "jvp shape",
                     f"jvp returned a tangent of shape {tangents[j].shape} for output {j}, "
                     f"which has shape {tuple(outs[j].shape)}")
    try:
        vjps = _vjp(cls, make, diff, {j: u[j].astype(outs[j].dtype) for j in js})
    except Exception as err:
        return Check("adjoint", "fail", "backward raised",
                     f"backward raised {type(err).__name__}: {err}")
    lhs = float(sum(np.vdot(u[j], tangents[j]) for j in js))  # <u, J v>
    rhs = float(sum(np.vdot(vjps[i], v[i]) for i in diff))  # <u^T J, v>
    error = abs(lhs - rhs)
    ok = error <= atol + rtol * max(abs(lhs), abs(rhs))
    msg = (f"<u, J v> from jvp = {lhs:.10g}, <u^T J, v> from backward = {rhs:.10g} "
           f"(random u, v; difference {error:.2e})")
    if not ok:
        # Which side is wrong? Compare J v with finite differences when J is available.
        if result.jacobians:
            jv_err = max(
                np.abs(tangents[j].reshape(-1)
                       - sum(result.jacobians[(j, i)] @ v[i].reshape(-1) for i in diff)).max()
                for j in js)
            side = ("jvp disagrees with finite differences (max error "
                    f"{jv_err:.2e})" if jv_err > atol + rtol else
                    "jvp matches finite differences, so backward is the wrong one")
            msg += "\n" + side
        msg += ("\njvp and backward describe different Jacobians: jvp must return J v and "
                "backward u^T J for the same J")
    return Check("adjoint", "pass" if ok else "fail",
                 "" if ok else "jvp and backward disagree", msg, error)




def _teach(cls, make, diff, names, result, state):
    outs, js = state["outputs"], state["js"]
    n_in = sum(make()[i]._data.size for i in diff)
    n_out = sum(outs[j]._data.size for j in js)
    title = f"Teaching mode: what does {cls.__name__}.backward compute?"
    lines = [title, "=" * len(title)]
    if not result.jacobians or n_in > MAX_TEACH or n_out > MAX_TEACH:
        lines.append(f"The inputs ({n_in} numbers) or outputs ({n_out}) are too large to show "
                     f"the Jacobian (at most {MAX_TEACH} each); use smaller example inputs.")
        return "\n".join(lines)
    xs = make()
    lines.append(f"{cls.__name__}.apply maps the inputs")
    for i in diff:
        lines.append(f"  {names[i]}: shape {tuple(xs[i].shape)}, {_count(xs[i])}")
    lines.append("to the output" + ("s" if len(js) > 1 else ""))
    for j in js:
        lines.append(f"  output {j}: shape {tuple(outs[j].shape)}, {_count(outs[j])}")
    lines += [
        "",
        "1. The Jacobian J. Entry J[r, c] is d output[r] / d input[c]: how fast output entry r",
        "   moves when input entry c is nudged (entries numbered in row-major order). Here it",
        "   is measured by central differences, (f(x + eps e_c) - f(x - eps e_c)) / (2 eps),",
        "   one column per input entry.",
    ]
    for (j, i), J in result.jacobians.items():
        lines.append("")
        lines.append(f"   J of output {j} with respect to {names[i]}, shape {J.shape}:")
        lines += _indent(_fmt(J).splitlines(), 5)
    # A readable cotangent: one decimal, no zeros.
    rng = np.random.default_rng(1)
    u = {}
    for j in js:
        a = np.round(rng.standard_normal(outs[j].shape), 1)
        u[j] = np.where(a == 0, 0.5, a)
    lines += [
        "",
        "2. What backward receives. backward is never given J (for a 1000 x 1000 matrix input",
        "   it would have 10^12 entries). It receives grad_output: the gradient dL/d(output)",
        "   of some final scalar L, shaped like the output. Here a random one, u:",
    ]
    for j in js:
        lines.append(f"   grad_output for output {j}, shape {tuple(outs[j].shape)}:")
        lines += _indent(_fmt(u[j], 1).splitlines(), 5)
    vjps = _vjp(cls, make, diff, {j: u[j].astype(outs[j].dtype) for j in js})
    lines += [
        "",
        "3. What backward returns: for each input, grad_output^T J, the row vector u times J",
        "   (sum_r u[r] J[r, :]), reshaped to that input's shape. This is a vector-Jacobian",
        "   product (VJP); by the chain rule it is dL/d(input).",
    ]
    if len(js) > 1:
        lines.append("   With several outputs, the products of all outputs are added up.")
    for i in diff:
        expect = sum(u[j].reshape(-1) @ result.jacobians[(j, i)] for j in js)
        expect = expect.reshape(xs[i].shape)
        got = vjps[i]
        diff_max = float(np.abs(expect - got).max()) if got.size else 0.0
        lines.append("")
        lines.append(f"   {names[i]} (shape {tuple(xs[i].shape)}):")
        lines += _indent(_side_by_side([("grad_output^T J (from J above)", _fmt(expect)),
                                        ("what backward returned", _fmt(got))]), 5)
        _, atol, rtol = result.tolerances
        agree = np.allclose(got, expect, rtol=rtol, atol=atol)
        lines.append(f"     max |difference| = {diff_max:.1e}: " + (
            "they agree." if agree else "they DISAGREE: backward does not compute u^T J."))
    j0 = js[0]
    onehot = {j: np.zeros(outs[j].shape) for j in js}
    onehot[j0].reshape(-1)[0] = 1.0
    rows = _vjp(cls, make, diff, {j: onehot[j].astype(outs[j].dtype) for j in js})
    lines += [
        "",
        "4. A one-hot grad_output picks one row of J. With grad_output = e_0 (1 at entry 0",
        f"   of output {j0}, 0 elsewhere), u^T J is row 0 of J. gradcheck builds the whole J from",
        "   backward this way, one row per output entry, and compares it with the",
        "   finite-difference J above (results flattened here, to compare with the row).",
    ]
    for i in diff:
        row = result.jacobians[(j0, i)][0]
        lines.append("")
        lines.append(f"   {names[i]}:")
        lines += _indent(_side_by_side([(f"row 0 of J (output {j0})", _fmt(row)),
                                        ("backward with grad_output = e_0",
                                         _fmt(rows[i].reshape(-1)))]), 5)
    gradcheck_ok = all(c.passed for c in result.checks if c.name == "gradcheck")
    if gradcheck_ok:
        lines += [
            "",
            f"So {cls.__name__}.backward never forms J: from grad_output (and what forward "
            "saved)",
            "it computes grad_output^T J directly with a formula. During loss.backward() its",
            "result becomes the grad_output of the operations that produced its inputs, and so",
            "on back to the leaves: that is the chain rule, one vector-Jacobian product per "
            "step.",
        ]
    else:
        lines += [
            "",
            f"So {cls.__name__}.backward does NOT compute grad_output^T J: where the rows above "
            "differ,",
            "its formula is wrong (see gradcheck's diagnosis). It must return, for each input,",
            "the row vector grad_output times the Jacobian J of forward, without forming J.",
        ]
    return "\n".join(lines)
