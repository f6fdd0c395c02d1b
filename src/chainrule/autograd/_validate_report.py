"""What validate reports: one Check per finding, the ValidationResult that prints them,
and the text helpers (side-by-side Jacobians, wrapped lines)."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

import numpy as np

from .._tensor import Tensor

#: The lint's checks (``_validate_lint``): silent mistakes in a Function.
LINT_CHECKS = ("ctx-tensors", "none-grad", "linearity", "grad-in-place", "output-views")

#: The checks, in the order they run and are listed.
CHECKS = ("outputs", "gradcheck", "gradgradcheck", "adjoint", "in-place") + LINT_CHECKS


#: Jacobian blocks are printed in the summary up to this many rows and columns.
MAX_SHOWN = 12


#: Teaching mode walks through the Jacobian up to this many input / output entries.
MAX_TEACH = 36


#: Width the summary's messages are wrapped at.
LINE_WIDTH = 100


#: Default (eps, atol, rtol) per input dtype: float32 cannot resolve a step of 1e-6.
TOLERANCES = {np.dtype(np.float64): (1e-6, 1e-5, 1e-3), np.dtype(np.float32): (1e-3, 1e-2, 1e-2)}


@dataclass
class Check:
    """The outcome of one check.

    Attributes
    ----------
    name : str
        One of :data:`CHECKS`.
    status : str
        ``"pass"``, ``"fail"``, ``"skip"`` (not applicable, or impossible after an
        earlier failure; ``message`` says why) or ``"note"`` (a failure that is not a
        requirement: second order without ``double=True``).
    short : str
        A few words for tables (``"Jacobian mismatch, input 0"``).
    message : str
        The full explanation, possibly several lines.
    error : float or None
        The largest absolute error measured, where the check measures one.
    diagnosis : list of str
        Short names of the patterns recognised in a mismatch (``"constant factor"``,
        ``"sign flip"``, ``"transpose"``), from the GradcheckError when gradcheck provides
        them (``report.patterns``, else the start of each ``diagnosis`` line).
    findings : list of str
        The full diagnosis lines (``GradcheckError.diagnosis``): pattern, where, why.
    report : object or None
        ``GradcheckError.report`` (its ``str()`` is the full text) of a failed gradcheck,
        or the error's text when gradcheck attaches no report.
    """

    name: str
    status: str
    short: str = ""
    message: str = ""
    error: float | None = None
    diagnosis: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    report: object = None

    @property
    def passed(self):
        """True unless the check failed (a skipped check counts as passed)."""
        return self.status != "fail"


@dataclass
class ValidationResult:
    """What :func:`validate` found for one Function.

    Attributes
    ----------
    name : str
        The Function's class name.
    inputs : list of str
        A description of each example input (``"A: Tensor float64 (2, 3), checked"``).
    checks : list of Check
        One per entry of :data:`CHECKS`, in that order.
    jacobians : dict
        ``{(output index, input index): array}``, the numerical (finite-difference)
        Jacobians of shape (output size, input size); empty when the inputs are too large.
    analytic : dict
        The same Jacobians built from ``backward``, one row per output entry.
    notes : list of str
        Warnings met on the way (float32 inputs, ...).
    tolerances : tuple
        The ``(eps, atol, rtol)`` used.
    teaching : str or None
        The teaching-mode text (``teach=True``).
    """

    name: str
    inputs: list = field(default_factory=list)
    checks: list = field(default_factory=list)
    jacobians: dict = field(default_factory=dict)
    analytic: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    tolerances: tuple = TOLERANCES[np.dtype(np.float64)]
    teaching: str | None = None

    @property
    def ok(self):
        """True when no check failed."""
        return all(c.passed for c in self.checks)

    passed = ok

    @property
    def failed(self):
        """The names of the failed checks."""
        return [c.name for c in self.checks if not c.passed]

    def __bool__(self):
        return self.ok

    @property
    def worst_error(self):
        """The largest absolute error any check measured, or None.

        ``max |analytic - numerical|`` over the Jacobian entries for gradcheck and
        gradgradcheck, ``|<u, J v> - <u^T J, v>|`` for the adjoint check.
        """
        errors = [c.error for c in self.checks if c.error is not None]
        return max(errors) if errors else None

    @property
    def diagnosis(self):
        """The diagnosis strings of every failed check, without repeats."""
        seen = []
        for c in self.checks:
            for d in c.diagnosis if not c.passed else ():
                if d not in seen:
                    seen.append(d)
        return seen

    def check(self, name):
        """Return the :class:`Check` called ``name``.

        Parameters
        ----------
        name : str
            One of :data:`CHECKS`; ``result[name]`` is the same.

        Returns
        -------
        Check
        """
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(f"no check {name!r}; the checks are {list(CHECKS)}")

    def __getitem__(self, name):
        return self.check(name)

    def summary(self):
        """Format the report :func:`validate` prints.

        Returns
        -------
        str
            The inputs, one line (or more) per check, the diagnosis of failures, notes,
            the small Jacobians (numerical, and backward's beside it when they differ) and
            the verdict. The teaching text is separate (``teaching``).
        """
        lines = [f"Validating {self.name}.apply(...) with inputs:"]
        lines += [f"  {d}" for d in self.inputs]
        width = max(len(n) for n in CHECKS)
        pad = " " * (width + 9)
        for c in self.checks:
            tag = {"pass": "[pass]", "fail": "[FAIL]", "skip": "[skip]",
                   "note": "[note]"}[c.status]
            body = _wrap_lines(c.message.splitlines() or [""], LINE_WIDTH - len(pad))
            if not c.passed and (c.findings or c.diagnosis):
                body.append("diagnosis:")
                body += _wrap_lines([f"  - {d}" for d in c.findings or c.diagnosis],
                                    LINE_WIDTH - len(pad))
            lines.append(f"{tag} {c.name:<{width}}  {body[0]}")
            lines += [pad + b if b else "" for b in body[1:]]
        for note in self.notes:
            lines += _wrap_lines([f"note: {note}"], LINE_WIDTH)
        lines += _jacobian_lines(self)
        worst = self.worst_error
        tail = f"; worst error {worst:.2e}" if worst is not None else ""
        if self.ok:
            lines.append(f"Result: PASS{tail}")
        else:
            lines.append(f"Result: FAIL ({', '.join(self.failed)}){tail}")
        return "\n".join(lines)

    def __str__(self):
        return self.summary()




def _wrap_lines(lines, width):
    """Wrap each line at ``width``, continuing with its own indent plus two spaces."""
    out = []
    for line in lines:
        lead = line[:len(line) - len(line.lstrip())]
        out += textwrap.wrap(line, width, subsequent_indent=lead + "  ",
                             break_on_hyphens=False, break_long_words=False) or [""]
    return out


def _fmt(a, precision=4):
    a = np.asarray(a, dtype=np.float64) + 0.0  # + 0.0: no "-0."
    with np.printoptions(precision=precision, suppress=True, linewidth=100, floatmode="fixed"):
        return str(a)


def _count(t):
    n = t._data.size
    return f"{n} number" + ("" if n == 1 else "s")


def _side_by_side(blocks, gap=4):
    """Lay out ``[(title, text), ...]`` as columns."""
    cols = [[title] + text.splitlines() for title, text in blocks]
    widths = [max(len(s) for s in col) for col in cols]
    height = max(len(col) for col in cols)
    rows = []
    for r in range(height):
        cells = [(col[r] if r < len(col) else "").ljust(w) for col, w in zip(cols, widths)]
        rows.append((" " * gap).join(cells).rstrip())
    return rows


def _indent(lines, n):
    return [" " * n + s if s else s for s in lines]


def _describe_value(v):
    if isinstance(v, Tensor):
        return f"Tensor {v.dtype} {tuple(v.shape)}"
    if v is None:
        return "None"
    if isinstance(v, np.ndarray):
        return f"ndarray {v.dtype} {v.shape} (not a Tensor)"
    return f"{type(v).__name__} (not a Tensor)"


def _jacobian_lines(result, limit=MAX_SHOWN):
    lines = []
    for (j, i), num in result.jacobians.items():
        if num.shape[0] > limit or num.shape[1] > limit:
            continue
        label = result.inputs[i].split(":")[0]
        lines.append(f"Jacobian of output {j} w.r.t. {label} ({num.shape[0]} x {num.shape[1]}; "
                     "rows: output entries, columns: input entries):")
        ana = result.analytic.get((j, i))
        _, atol, rtol = result.tolerances
        if ana is not None and not np.allclose(ana, num, rtol=rtol, atol=atol):
            lines += _indent(_side_by_side([("numerical (finite differences)", _fmt(num)),
                                            ("from backward", _fmt(ana))]), 2)
        else:
            title = "numerical (backward agrees)" if ana is not None else "numerical"
            lines += _indent(_side_by_side([(title, _fmt(num))]), 2)
    return lines


def _short_error(err, n=3):
    """The head of a gradcheck error: its first line and the largest-error lines."""
    lines = [line for line in str(err).strip().splitlines() if line.strip()]
    keep = lines[:1]
    start = next((k for k, line in enumerate(lines) if line.startswith("Jacobian mismatch")),
                 None)
    if start is not None and start > 0:
        keep += lines[start:start + n]
    else:
        keep = lines[:n]
    return "\n".join(keep) + ("\n..." if len(lines) > len(keep) else "")
