"""``validate``: run every check a custom :class:`~chainrule.autograd.Function` should pass.

A hand-written ``backward`` can go wrong in several ways, and each has its own check:

``outputs``
    ``backward`` must return one gradient per positional input of ``forward`` (``None``
    for inputs that need none), each a Tensor of its input's shape and a float dtype. The
    library's own errors about wrong counts, shapes and non-tensors are caught and shown.
``gradcheck``
    The Jacobian built from ``backward`` (one vector-Jacobian product per output entry)
    must match central finite differences of ``forward``.
``gradgradcheck``
    Unless ``backward`` is marked ``@once_differentiable``, it claims to be differentiable
    itself (``create_graph=True``, Hessians); its own derivatives are checked the same way.
    A backward that leaves the library (NumPy, ``.numpy()``, ``.detach()``) without saying
    so is reported as "not differentiable twice".
``adjoint``
    When the Function also defines ``jvp`` (forward mode), ``jvp`` computes ``J v`` and
    ``backward`` computes ``u^T J`` for the same ``J``, so ``<u, J v> = <u^T J, v>`` for any
    ``u`` and ``v``.
``in-place``
    ``forward`` must not change its inputs, and ``backward`` must not change its saved
    tensors, its inputs or ``grad_output`` (a second backward, or another node reading the
    same tensor, would then see wrong values).

The lint (``_validate_lint``) finds silent mistakes, naming the line responsible where it can:

``ctx-tensors``
    a Tensor computed from an input that requires grad kept as a ``ctx`` attribute in
    ``forward`` and read in ``backward`` instead of ``ctx.save_for_backward``;
``none-grad``
    ``backward`` returns None for an input that requires grad and that the outputs depend on;
``linearity``
    ``backward`` is not linear in ``grad_output``;
``grad-in-place``
    ``backward`` writes into its ``grad_output``;
``output-views``
    ``forward`` returns an input, or a view of one, without ``ctx.mark_dirty``.

>>> import chainrule as cr
>>> from chainrule.autograd.validate import validate
>>> class Square(cr.autograd.Function):
...     @staticmethod
...     def forward(ctx, x):
...         ctx.save_for_backward(x)
...         return x * x
...     @staticmethod
...     def backward(ctx, g):
...         (x,) = ctx.saved_tensors
...         return 2 * x * g
>>> result = validate(Square, cr.randn(3), verbose=False)
>>> result.ok, [c.status for c in result.checks]
(True, ['pass', 'pass', 'pass', 'skip', 'pass', 'pass', 'pass', 'pass', 'pass', 'pass'])

``teach=True`` adds a walk-through for small inputs: the full Jacobian, the
``grad_output`` that ``backward`` receives and ``grad_output^T J`` side by side with what
``backward`` returned.
"""

from __future__ import annotations

import numpy as np

from .. import _state
from .._tensor import Tensor
from ._validate_checks import (
    FIRST_ORDER_ONLY,
    _check_adjoint,
    _check_gradcheck,
    _check_gradgrad,
    _check_outputs,
    plot_supported,
)
from ._validate_lint import lint_checks
from ._validate_numerics import MAX_JACOBIAN_SIZE, _analytic, _input_names, _numerical, _prepare
from ._validate_report import (
    CHECKS,
    LINT_CHECKS,
    TOLERANCES,
    Check,
    ValidationResult,
)
from ._validate_teach import _teach
from .function import Function

__all__ = ["validate", "ValidationResult", "Check", "CHECKS", "LINT_CHECKS", "TOLERANCES",
           "plot_supported"]


def _run_checks(function, make, diff, names, rng, result, *, teach, double, plot):
    """Run every check, filling ``result`` in place."""
    eps, atol, rtol = result.tolerances
    xs = make()
    if not diff:
        msg = "no float Tensor input: nothing to differentiate"
        result.checks = [Check("outputs", "fail", "no float input", msg)] + [
            Check(name, "skip", "", "skipped: no float input") for name in CHECKS[1:]]
        return

    state = {}
    outputs_check, inplace_check = _check_outputs(function, make, diff, names, rng, state)
    if not state.get("ok"):
        why = "skipped: fix what backward returns first (see outputs)"
        if outputs_check.short in ("forward raised", "no differentiable output"):
            why = "skipped: " + outputs_check.short
        result.checks = [outputs_check] + [Check(n, "skip", "", why)
                                           for n in ("gradcheck", "gradgradcheck", "adjoint")]
        result.checks.append(inplace_check)
        result.checks += lint_checks(function, make, diff, names, rng, result,
                                     backward_ok=False, why=why)
        return

    n_in = sum(xs[i]._data.size for i in diff)
    n_out = sum(state["outputs"][j]._data.size for j in state["js"])
    if n_in <= MAX_JACOBIAN_SIZE and n_out <= MAX_JACOBIAN_SIZE:
        try:
            result.jacobians = _numerical(function, make(False), diff, eps)
            result.analytic = _analytic(function, make, diff)
        except Exception:  # gradcheck reports the same failure with its own message
            result.jacobians, result.analytic = {}, {}
    checks = [outputs_check, _check_gradcheck(function, make, eps, atol, rtol, result, plot)]
    second = _check_gradgrad(function, make, eps, atol, rtol)
    if not double and second.status == "fail":
        # second order is a requirement only with double=True: otherwise a backward that is
        # right to first order passes, with a note saying what it cannot do
        result.notes.append(FIRST_ORDER_ONLY if second.short == "not differentiable twice"
                            else "second derivatives through this Function are wrong "
                            "(gradgradcheck fails; double=True makes that a failure)")
        second = Check("gradgradcheck", "note", second.short, second.message, second.error,
                       second.diagnosis, second.findings, second.report)
    checks.append(second)
    checks.append(_check_adjoint(function, make, diff, names, rng, state, result, atol, rtol))
    checks.append(inplace_check)
    checks += lint_checks(function, make, diff, names, rng, result)
    result.checks = checks
    if teach:
        result.teaching = _teach(function, make, diff, names, result, state)


def validate(function, *example_inputs, teach=False, eps=None, atol=None, rtol=None,
             double=False, seed=0, dtype=np.float64, plot=None, verbose=True):
    """Run the checks of a custom Function at ``example_inputs`` and summarise them.

    Parameters
    ----------
    function : type
        A subclass of :class:`chainrule.autograd.Function`.
    *example_inputs
        Positional arguments of ``function.apply``. Float Tensors (and float ndarrays) are
        copied into fresh ``dtype`` tensors; those marked ``requires_grad=True`` are
        checked, or every float tensor when none is marked. Other values are passed as they
        are (and must get ``None`` from ``backward``).
    teach : bool
        Add the teaching walk-through (Jacobian, grad_output, grad_output^T J next to what
        backward returned) for small inputs.
    eps, atol, rtol : float, optional
        Finite-difference step and tolerances, as in :func:`gradcheck`. Defaults from
        :data:`TOLERANCES` for ``dtype``: (1e-6, 1e-5, 1e-3) for float64, looser
        (1e-3, 1e-2, 1e-2) for float32.
    double : bool
        Make second derivatives a requirement: gradgradcheck always runs (not for a
        ``@once_differentiable`` backward), but by default a failure there is a note
        ("first-order correct; cannot be differentiated twice ..."), the verdict ``python -m
        chainrule check`` gives too; with ``double=True`` it fails the validation.
    seed : int
        Seed of the random cotangents and tangents.
    dtype : numpy dtype
        Dtype of the float inputs (float64; float32 makes finite differences inaccurate
        and gradcheck warns).
    plot : str, optional
        Passed to ``gradcheck(plot=...)`` when gradcheck supports it.
    verbose : bool
        Print the summary (and the teaching text).

    Returns
    -------
    ValidationResult
        Per-check outcomes (``result.checks``, ``result["gradcheck"]``), ``result.ok``,
        ``result.worst_error``, ``result.diagnosis``, the Jacobians and ``summary()``.

    Raises
    ------
    TypeError
        ``function`` is not a Function subclass.
    """
    if not (isinstance(function, type) and issubclass(function, Function)
            and function is not Function):
        raise TypeError(f"validate expects a subclass of chainrule.autograd.Function, got "
                        f"{function!r}")
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise TypeError(f"validate: dtype must be a float dtype, got {dtype}")
    default = TOLERANCES.get(dtype, TOLERANCES[np.dtype(np.float64)])
    eps, atol, rtol = (d if v is None else v for v, d in zip((eps, atol, rtol), default))
    rng = np.random.default_rng(seed)
    make, diff = _prepare(example_inputs, dtype)
    xs = make()
    names = _input_names(function, len(xs))
    result = ValidationResult(function.__name__, tolerances=(eps, atol, rtol))
    for i, x in enumerate(xs):
        role = "checked" if i in diff else "not differentiated"
        what = (f"Tensor {x.dtype} {tuple(x.shape)}, {role}" if isinstance(x, Tensor)
                else f"{type(x).__name__} {x!r}"[:60] + ", passed as is")
        result.inputs.append(f"{names[i]}: {what}")
    with _state.enable_grad():  # the checks record graphs even when called under no_grad
        _run_checks(function, make, diff, names, rng, result, teach=teach, double=double,
                    plot=plot)
    if verbose:
        print(result.summary())
        if result.teaching:
            print()
            print(result.teaching)
    return result
