"""The checks validate runs on a forward/backward pair: outputs (shapes, dtypes, what
backward returns, and whether anything changes in place), gradcheck and gradgradcheck (with
gradcheck's diagnosis passed through), and the JVP/VJP adjoint identity. Each returns a
Check; the Jacobians they compare come from ``_validate_numerics``."""

from __future__ import annotations

import inspect
import warnings

import numpy as np

from .. import _state
from .._tensor import Tensor, wrap
from . import forward_ad
from ._validate_numerics import _as_tuple, _diff_outputs, _vjp
from ._validate_report import Check, _describe_value, _short_error
from .function import Function, _user_backward
from .gradcheck import GradcheckError, gradcheck, gradgradcheck


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
    grads_in = [wrap(np.array(cot[j])) if j in cot else None for j in range(len(outs))]
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

