"""``gradcheck``: compare the analytic Jacobian (from VJPs) with central differences.

For ``y = fn(*inputs)`` and every pair (output ``j``, differentiable input ``i``):

- numerical: column ``k`` of ``J_ji`` is ``(y_j(x_i + eps e_k) - y_j(x_i - eps e_k)) / 2 eps``;
- analytic: row ``r`` of ``J_ji`` is the VJP of the one-hot cotangent ``e_r`` of ``y_j``.

They agree when ``|analytic - numerical| <= atol + rtol |numerical|`` entrywise.

On failure the :class:`GradcheckError` explains: every failing pair, the worst entries, and
a diagnosis from :mod:`chainrule.autograd.diagnose` (a constant factor, a sign flip, a
transpose, swapped inputs, one triangle of a symmetric term, a broadcast dimension not
summed, where the Jacobians agree, float32 round-off or a real bug). ``structure`` checks
inputs that live on a structured set (symmetric, triangular, diagonal, orthogonal matrices)
along that set's directions only; ``fast_mode`` checks one random projection ``u^T J v`` per
input; ``plot`` saves the Jacobians as heatmaps.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from .. import _dual, _state
from .._tensor import Tensor, wrap
from ..backend import beside, dtype_kind, numpy_dtype
from . import _gradcheck_more as _more
from . import diagnose as _diag
from ._gradcheck_numerics import (
    EPS_SWEEP,
    _as_float64,
    _directions,
    _evaluate,
    _numerical,
    _outputs,
    _Progress,
    _tuple,
    analytic_jacobian,
    forward_jacobian,
)
from ._gradcheck_numerics import STRUCTURES as STRUCTURES  # re-exported
from ._gradcheck_numerics import numerical_jacobian as numerical_jacobian  # re-exported
from ._gradcheck_report import (
    GradcheckReport,
    PairReport,
    _plot,
    _top,
    _worst,
)
from ._gradcheck_report import WorstEntry as WorstEntry  # re-exported

#: Skip the re-checks of the diagnosis (float64, other steps) when they would take longer.
DIAGNOSIS_BUDGET_S = 20.0


class GradcheckError(RuntimeError):
    """Raised by gradcheck when an analytic Jacobian disagrees with the numerical one.

    Attributes
    ----------
    output_index, input_index : int
        The first failing pair (inputs in order, then outputs).
    analytic, numerical : ndarray
        That pair's Jacobians, shape (output size, input size); with ``structure`` for that
        input the columns are the structure's directions instead of the input's entries.
    worst : tuple
        ``(output index, input index, analytic, numerical)`` of that pair's largest error
        (the input index is a direction's name for a structured input).
    report : GradcheckReport
        Every failing pair, the worst entries across them and the diagnosis.
    diagnosis : list of str
        One short line per pattern found, ``"<pattern> (output j, input i): <explanation>"``.
    """


def _fn_name(fn):
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, type):
        return f"{owner.__name__}.{fn.__name__}"
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    return "a lambda" if name.endswith("<lambda>") else name




def _compare(fn, inputs, diff, dirs, eps, atol, rtol, progress=False, only=None,
             modes=("backward",)):
    """The numerical Jacobian of every pair (of the inputs ``only``) compared with the
    analytic one of each mode ("backward": from VJPs, "forward": from JVPs). Returns the
    pairs and the seconds the numerical Jacobians took."""
    outputs = _outputs(fn, inputs)
    analytic = {}
    for mode in modes:
        jac = (analytic_jacobian(outputs, inputs, diff) if mode == "backward"
               else forward_jacobian(fn, inputs, diff))
        analytic.update({(j, i, mode): v for (j, i), v in jac.items()})
    if "backward" in modes and not any(isinstance(y, Tensor) and y._requires_grad
                                       for y in outputs):
        # No output requires grad: the function must then be constant in its inputs (as
        # PyTorch checks), its analytic Jacobians zero; else its gradient was lost on the way
        # (a .detach(), NumPy, an op without a gradient).
        for j, y in enumerate(outputs):
            if isinstance(y, Tensor) and dtype_kind(y.dtype) in "fc":
                for i in diff:
                    analytic[(j, i, "backward")] = np.zeros((y._data.size, inputs[i]._data.size))
    check = [i for i in diff if only is None or i in only]
    bar = _Progress(2 * sum(dirs[i].size for i in check), progress,
                    "gradcheck: numerical Jacobian")
    start = time.perf_counter()
    pairs = []
    try:
        for i in check:
            numerical = _numerical(fn, inputs, i, dirs[i], eps, bar)
            for mode in modes:
                for j, y in enumerate(outputs):
                    if (j, i, mode) not in analytic:
                        continue
                    a, n = dirs[i].project(analytic[(j, i, mode)]), numerical[j]
                    ok = _diag.agree(a, n, atol, rtol)
                    err = np.abs(a - n)
                    pairs.append(PairReport(
                        j, i, bool(ok.all()), tuple(y.shape), tuple(inputs[i].shape),
                        dirs[i].structure, a, n, float(np.nanmax(err, initial=0.0)),
                        int(ok.size - ok.sum()), labels=dirs[i].labels, mode=mode))
    finally:
        bar.close()
    return pairs, time.perf_counter() - start


def _fast(fn, inputs, diff, dirs, eps, atol, rtol):
    """One random projection ``u^T J v`` per input: one VJP and two evaluations per input.
    Returns ``[(input, analytic, numerical, tolerance, ok)]``."""
    from ._grad import grad

    rng = np.random.default_rng(0)
    outputs = _outputs(fn, inputs)
    outs = [(j, y) for j, y in enumerate(outputs) if isinstance(y, Tensor) and y._requires_grad]
    if not outs:  # no output requires grad: the full check says whether it should
        return [(i, 0.0, float("nan"), 0.0, False) for i in diff]
    us = [rng.standard_normal(y.shape) for _, y in outs]
    norm = np.sqrt(sum(float(np.sum(u * u)) for u in us)) or 1.0
    us = [u / norm for u in us]
    grads = grad([y for _, y in outs], [inputs[i] for i in diff],
                 [wrap(beside(np.asarray(u, dtype=numpy_dtype(y.dtype)), y._data))
                  for u, (_, y) in zip(us, outs)],
                 retain_graph=False, allow_unused=True)
    u1 = sum(float(np.abs(u).sum()) for u in us)
    results = []
    with _state.no_grad():
        for i, g in zip(diff, grads):
            c = rng.standard_normal(dirs[i].size)
            c /= np.linalg.norm(c) or 1.0
            a = 0.0 if g is None else float(
                np.asarray(g._host(), dtype=np.float64).reshape(-1) @ dirs[i].vector(c))
            plus, minus, denom = dirs[i].along(c, eps)
            vp, vm = _evaluate(fn, inputs, i, plus), _evaluate(fn, inputs, i, minus)
            n = sum(float(u.reshape(-1) @ (vp[j] - vm[j])) for u, (j, _) in zip(us, outs)) / denom
            tol = atol * u1 * float(np.abs(c).sum()) + rtol * abs(n)
            results.append((i, a, n, tol, bool(abs(a - n) <= tol)))
    return results


def _precision(fn, inputs, diff, dirs, structure, failing, seconds, eps, atol, rtol):
    """Re-check in float64 (float32 inputs) and at the steps of EPS_SWEEP."""
    low = [numpy_dtype(inputs[i].dtype) for i in diff
           if numpy_dtype(inputs[i].dtype) != np.float64]
    fail_inputs = sorted({p.input_index for p in failing})
    frac = sum(dirs[i].size for i in fail_inputs) / max(1, sum(dirs[i].size for i in diff))
    cost = seconds * (frac * (len(EPS_SWEEP) - 1) + (1 if low else 0))
    if cost > DIAGNOSIS_BUDGET_S:
        return _diag.Finding("precision skipped", f"the re-checks in float64 and at other step "
                             f"sizes were skipped (about {cost:.0f} s)")
    passes64 = None
    if low:
        inputs64 = tuple(_as_float64(x) for x in inputs)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                dirs64 = _directions(inputs64, diff, structure, eps)
                pairs64, _ = _compare(fn, inputs64, diff, dirs64, eps, atol, rtol)
            passes64 = all(p.passed for p in pairs64)
        except Exception:  # noqa: BLE001 - the function may not run in float64
            passes64 = None
    results = {}
    for step in EPS_SWEEP:
        if np.isclose(step, eps, rtol=1e-9, atol=0):
            continue
        ok = True
        for i in fail_inputs:
            numerical = _numerical(fn, inputs, i, dirs[i], step)
            ok = ok and all(np.all(_diag.agree(p.analytic, numerical[p.output_index], atol, rtol))
                            for p in failing if p.input_index == i)
        results[step] = ok
    dtype = str(min(low, key=lambda d: d.itemsize)) if low else "float64"
    return _diag.precision(dtype, passes64, results, eps)


def _diagnose(report, fn, inputs, diff, dirs, structure, seconds):
    pairs = report.pairs
    # a pair is compared with the other pairs of its mode (backward or forward)
    analytic = {m: {(p.output_index, p.input_index): p.analytic for p in pairs
                    if p.labels is None and p.mode == m} for m in ("backward", "forward")}
    numerical = {m: {(p.output_index, p.input_index): p.numerical for p in pairs
                     if p.labels is None and p.mode == m} for m in ("backward", "forward")}
    values = {i: np.asarray(inputs[i]._host(), dtype=np.float64) for i in diff
              if inputs[i].ndim == 2}
    swaps = set()
    for p in report.failing:
        key = (p.output_index, p.input_index)
        p.findings = _diag.diagnose_pair(
            p.analytic, p.numerical, p.output_shape, p.input_shape, atol=report.atol,
            rtol=report.rtol,
            all_analytic=analytic[p.mode] if key in analytic[p.mode] else None,
            all_numerical=numerical[p.mode], pair=key, values=values, in_labels=p.labels)
        for f in p.findings:
            if f.pattern == "swapped inputs" and "vice versa" in f.message:
                swap = (p.output_index, frozenset((p.input_index, f.details["other"])))
                if swap in swaps:
                    continue  # already said for the other input of the swap
                swaps.add(swap)
            report.findings.append((p.output_index, p.input_index, f))
    if all(any(f.pattern == "symmetric input" or f.details.get("structure")
               for f in p.findings) for p in report.failing):
        return  # explained, and not a bug for a structured input: no precision verdict
    f = _precision(fn, inputs, diff, dirs, structure, report.failing, seconds, report.eps,
                   report.atol, report.rtol)
    if f is None:
        return
    if f.pattern in ("float32 round-off", "step size"):
        # Not a bug: where the Jacobians differ is noise, not a pattern; say this first.
        vague = ("partial agreement", "difference term")
        report.findings = [(None, None, f)] + [x for x in report.findings
                                               if x[2].pattern not in vague]
        for p in report.failing:
            p.findings = [g for g in p.findings if g.pattern not in vague]
    else:
        report.findings.append((None, None, f))


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False, masked=None,
              structure=None, progress=None, plot=None, return_report=False):
    """Check the gradients of ``func`` at ``inputs`` against central finite differences.

    Parameters
    ----------
    func : callable
        ``func(*inputs) -> Tensor or tuple of Tensors``.
    inputs : Tensor or tuple
        Inputs; those with ``requires_grad=True`` are checked (use float64: float32 has too
        little precision for finite differences, and a warning says so).
    eps, atol, rtol : float
        Step of the central difference and the tolerances of the comparison.
    raise_exception : bool
        On failure raise :class:`GradcheckError` (default) or return False.
    structure : dict, optional
        ``{input index: kind}`` for inputs that are structured matrices (batched over
        leading dimensions): ``"symmetric"`` (perturb entries (i, j) and (j, i) together),
        ``"spd"`` (the same, at a symmetric positive-definite point, with the step kept
        small enough to stay so), ``"lower"`` / ``"upper"`` (only that triangle),
        ``"diagonal"`` (only the diagonal), ``"orthogonal"`` (orthonormal columns, moved as
        ``X expm(eps K)``, ``K`` skew: the directions ``X K``). The numerical Jacobian then
        has one column per direction ``D`` of the structure and the analytic one is
        projected on them (``<J^T u, D>``), so a function of a symmetric matrix that reads
        one triangle (``chainrule.linalg.cholesky``, ``eigvalsh``) checks cleanly.
    check_backward_ad, check_forward_ad : bool
        Which analytic Jacobians are compared with the numerical one: from VJPs (reverse
        mode, default) and from JVPs (forward mode; a wrong ``jvp`` gets the same
        diagnosis as a wrong ``backward``). At least one must be True.
    nondet_tol : float
        Run backward twice on one graph; their Jacobians may differ by this much.
    check_undefined_grad : bool
        A custom Function's backward given no cotangent (None) must return None or zeros.
    check_batched_grad, check_batched_forward_grad : bool
        One pass for a batch of one-hot cotangents (tangents) must agree with one pass per
        row (column).
    check_grad_dtypes : bool
        Gradients must have their input's dtype.
    masked : None
        Accepted for PyTorch compatibility (sparse masked semantics; no sparse tensors here).
    fast_mode : bool
        Check one random projection ``u^T J v`` per input (one VJP for all inputs and two
        evaluations per input) instead of the full Jacobians; if it fails, run the full
        check to locate and explain the failure.
    progress : bool or None
        A tqdm bar on stderr for the numerical Jacobian: None (default) shows it when the
        first evaluation's time says it will take more than a couple of seconds.
    plot : str or path, optional
        Save a figure (PNG, needs matplotlib) of the analytic and numerical Jacobians and
        their difference, one row per failing pair (the first pair when it passes).
    return_report : bool
        Return the :class:`GradcheckReport` (true when passed) instead of a bool; a failure
        still raises unless ``raise_exception=False``.

    Returns
    -------
    bool or GradcheckReport
        True when every analytic Jacobian matches.

    Raises
    ------
    GradcheckError
        Naming every failing (output, input) pair, its largest error and where it is (as
        indices into the output and the input), both Jacobians when they are small, the
        worst entries over all failing pairs, and a diagnosis (``error.report``,
        ``error.diagnosis``).
    ValueError
        No input requires grad, or a ``structure`` does not fit its input.
    """
    fn = func
    inputs = _tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x._requires_grad]
    if not diff:
        raise ValueError("gradcheck: no input requires grad; set requires_grad=True on the "
                         "inputs to check")
    if not (check_forward_ad or check_backward_ad):
        raise ValueError("gradcheck: Expected at least one of check_forward_ad or "
                         "check_backward_ad to be True")
    if masked:
        raise NotImplementedError("gradcheck: masked=True (sparse masked semantics) is not "
                                  "supported: chainrule has no sparse tensors")
    modes = tuple(m for m, on in (("backward", check_backward_ad),
                                  ("forward", check_forward_ad)) if on)
    for i in diff:
        if numpy_dtype(inputs[i].dtype) != np.float64:
            warnings.warn(
                f"gradcheck: input {i} has dtype {inputs[i].dtype}; finite differences need "
                "float64 to be accurate (use x.double())", stacklevel=2)
    dirs = _directions(inputs, diff, structure, eps)
    name = _fn_name(fn)
    notes = [f"input {i} checked along {d.size} {d.structure} directions"
             for i, d in dirs.items() if d.structure]
    fast_failed = []
    if fast_mode and modes == ("backward",):
        results = _fast(fn, inputs, diff, dirs, eps, atol, rtol)
        fast_failed = [r for r in results if not r[4]]
        if not fast_failed:
            if plot is None and not return_report:
                return True
            notes.append("fast mode: random projections u^T J v agree for inputs "
                         + ", ".join(str(r[0]) for r in results))
            if plot is None:
                return GradcheckReport(True, name, [], eps, atol, rtol, notes=notes)
        for i, a, n, tol, _ in fast_failed:
            if np.isnan(n):  # no output requires grad (see _fast)
                continue
            notes.append(f"fast mode: u^T J v differs for input {i} (analytic {a:.6g}, "
                         f"numerical {n:.6g}, tolerance {tol:.3g}); the full check locates it")
    pairs, seconds = _compare(fn, inputs, diff, dirs, eps, atol, rtol, progress, modes=modes)
    report = GradcheckReport(all(p.passed for p in pairs), name, pairs, eps, atol, rtol,
                             notes=notes)
    if report.passed:
        failure = _fast_only_failure(fast_failed) or _more_checks(
            fn, inputs, diff, atol, rtol, check_backward_ad, nondet_tol, check_undefined_grad,
            check_grad_dtypes, check_batched_grad, check_batched_forward_grad and check_forward_ad)
        if failure is not None:
            if not raise_exception:
                return False
            raise GradcheckError(f"gradcheck failed for {name}: {failure}")
        if plot is not None:
            _plot(report, plot)
        return report if return_report else True
    if not raise_exception and plot is None and not return_report:
        return False
    if not any(isinstance(y, Tensor) and y._requires_grad for y in _outputs(fn, inputs)):
        report.notes.append("no output requires grad, so every analytic Jacobian is zero; "
                            "the outputs still change with the inputs: their gradient was "
                            "lost on the way (a .detach(), .numpy(), NumPy or an op without "
                            "a gradient?)")
    report.worst = _top(report.failing, atol, rtol)
    _diagnose(report, fn, inputs, diff, dirs, structure, seconds)
    if plot is not None:
        _plot(report, plot)
    if not raise_exception:
        return report if return_report else False
    first = report.failing[0]
    error = GradcheckError(str(report))
    error.output_index, error.input_index = first.output_index, first.input_index
    error.analytic, error.numerical = first.analytic, first.numerical
    error.worst = _worst(first, atol, rtol)
    error.report, error.diagnosis = report, report.diagnosis
    raise error


def _fast_only_failure(fast_failed):
    """The failure of a fast-mode projection that the full check did not reproduce (as in
    PyTorch, a failure): the full check seeds backward with one-hot cotangents only, so a
    backward that is not linear in its grad_output passes it."""
    failed = [r for r in fast_failed if not np.isnan(r[2])]
    if not failed:
        return None
    i, a, n, tol, _ = failed[0]
    return (f"fast mode: u^T J v differs for input {i} (analytic {a:.6g}, numerical {n:.6g}, "
            f"tolerance {tol:.3g}), although the full Jacobians, from one-hot cotangents, "
            "agree: backward is probably not linear in its grad_output (it must return "
            "grad_output^T J: no g * g, abs(g) or g / norm(g)), or the difference is just "
            "outside the tolerances")


def _more_checks(fn, inputs, diff, atol, rtol, backward, nondet_tol, undefined, dtypes,
                 batched_grad, batched_forward):
    """The checks after the Jacobians agree (see :mod:`._gradcheck_more`): the text of the
    first failure, or None."""
    checks = []
    if backward:
        checks.append(lambda: _more.reentrant(fn, inputs, diff, nondet_tol))
        if undefined:
            checks.append(lambda: _more.undefined_grad(fn, inputs))
        if dtypes:
            checks.append(lambda: _more.grad_dtypes(fn, inputs, diff))
        if batched_grad:
            checks.append(lambda: _more.batched(fn, inputs, diff, atol, rtol, forward=False))
    if batched_forward:
        checks.append(lambda: _more.batched(fn, inputs, diff, atol, rtol, forward=True))
    for check in checks:
        failure = check()
        if failure is not None:
            return failure
    return None


def _leaf_like(x):
    """``x`` as a leaf that requires grad; a dual (made by the forward-mode check for this
    call) is marked in place, so it keeps its tangent."""
    if _dual.tangent_of(x) is not None:
        return x.requires_grad_(True)
    return x.detach().requires_grad_(True)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True,
                  check_fwd_over_rev=False, check_rev_over_rev=True, **kwargs):
    """Check second derivatives: gradcheck of the map (inputs, u) -> VJP(u) of ``fn``.

    The VJP is computed with ``create_graph=True``, so its analytic Jacobian comes from
    differentiating the backward pass itself, and is compared with central differences of
    the VJP. ``grad_outputs`` (one per output, default random normal) are the cotangents
    ``u``; they are checked as inputs too (the VJP is linear in them).

    Parameters
    ----------
    func, inputs, eps, atol, rtol, raise_exception
        As for :func:`gradcheck`.
    grad_outputs : sequence, optional
        The cotangents.
    check_rev_over_rev, check_fwd_over_rev : bool
        Differentiate the VJP with reverse mode (default) and/or forward mode.
    gen_non_contig_grad_outputs : bool
        Accepted for PyTorch compatibility (arrays here have no strides to vary).
    **kwargs
        Passed to :func:`gradcheck` (``structure``, ``fast_mode``, ``progress``, ``plot``,
        ``return_report``, ``nondet_tol``, ``check_undefined_grad``, ...).

    Returns
    -------
    bool or GradcheckReport
        True, or raises :class:`GradcheckError` (returns False with
        ``raise_exception=False``) naming the failing pairs as gradcheck does; the input
        indices count the original inputs first, then the grad_outputs.
    """
    from ._grad import grad

    fn = func
    inputs = _tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x._requires_grad]
    outputs = [o for o in _outputs(fn, inputs) if isinstance(o, Tensor) and o._requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = [wrap(beside(rng.standard_normal(o.shape).astype(numpy_dtype(o.dtype)),
                                    o._data)) for o in outputs]
    # float64 copies of the cotangents, on the device they were given on
    cotangents = [wrap(beside(np.array(u._host(), dtype=np.float64), u._data))
                  if isinstance(u, Tensor) else wrap(np.array(u, dtype=np.float64))
                  for u in _tuple(grad_outputs)]
    for u in cotangents:
        u.requires_grad_(True)
    n = len(inputs)

    def vjp(*args):
        # The numerical Jacobian calls this under no_grad with perturbed copies, and the
        # forward-mode check with duals: make them leaves that require grad, so the inner
        # VJP exists (a dual keeps its tangent: forward over reverse).
        with _state.enable_grad():
            xs = [_leaf_like(x) if i in diff and not x._requires_grad else x
                  for i, x in enumerate(args[:n])]
            us = args[n:]
            ys = [o for o in _outputs(fn, xs) if isinstance(o, Tensor) and o._requires_grad]
            gs = grad(ys, [xs[i] for i in diff], us, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    vjp.__qualname__ = f"the VJP of {_fn_name(fn)}"
    try:
        return gradcheck(vjp, tuple(inputs) + tuple(cotangents), eps=eps, atol=atol,
                         rtol=rtol, raise_exception=raise_exception,
                         check_backward_ad=check_rev_over_rev,
                         check_forward_ad=check_fwd_over_rev, **kwargs)
    except RuntimeError as error:  # a backward that cannot be differentiated again
        # (@once_differentiable): a failed check, as PyTorch's (False, or the error)
        if raise_exception or "cannot be differentiated again" not in str(error):
            raise
        return False
