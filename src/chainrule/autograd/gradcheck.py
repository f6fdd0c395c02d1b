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

import sys
import textwrap
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from .. import _state
from .._tensor import Tensor, wrap
from . import diagnose as _diag

STRUCTURES = ("symmetric", "spd", "lower", "upper", "diagonal", "orthogonal")
#: The step sizes tried when a check fails, to tell a real bug from finite-difference error.
EPS_SWEEP = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)
#: Show a progress bar when the numerical Jacobian is estimated to take longer (seconds).
PROGRESS_AFTER_S = 2.0
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


def _tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _outputs(fn, inputs):
    return tuple(o for o in _tuple(fn(*inputs)))


def _fn_name(fn):
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, type):
        return f"{owner.__name__}.{fn.__name__}"
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    return "a lambda" if name.endswith("<lambda>") else name


# --- perturbation directions --------------------------------------------------------------


def _expm_skew(W):
    """``expm(W)`` of a real skew-symmetric matrix, through the Hermitian ``iW``."""
    w, V = np.linalg.eigh(1j * W)
    return ((V * np.exp(-1j * w)) @ V.conj().T).real


def _label(batch, text):
    return f"[{', '.join(str(int(b)) for b in batch)}] {text}" if batch else text


class _Directions:
    """How input ``i`` is perturbed: its coordinates, or the basis of a structure.

    ``size`` directions; ``column(k, eps)`` gives the two points and the denominator of the
    central difference along direction ``k``; ``project(J)`` maps the analytic Jacobian
    (columns: input entries) onto the directions (``J @ basis``).
    """

    def __init__(self, x, structure=None, index=0, eps=1e-6):
        self.structure, self.index, self.eps = structure, index, eps
        self.base = np.array(x._data, dtype=x.dtype)
        self.shape, self.dtype = self.base.shape, self.base.dtype
        self.labels = self.basis = None
        self.size = self.base.size
        if structure is None:
            return
        if structure not in STRUCTURES:
            raise ValueError(f"gradcheck: unknown structure {structure!r} for input {index}; "
                             f"expected one of {', '.join(STRUCTURES)}")
        if self.base.ndim < 2:
            raise ValueError(f"gradcheck: structure={{{index}: {structure!r}}} needs a matrix "
                             f"(or a batch of matrices), but input {index} has shape "
                             f"{tuple(self.shape)}")
        m, n = self.shape[-2:]
        square = structure in ("symmetric", "spd")
        if (square and m != n) or (structure == "orthogonal" and m < n):
            need = "square" if square else "tall (rows >= columns)"
            raise ValueError(f"gradcheck: structure {structure!r} needs {need} matrices, but "
                             f"input {index} has shape {tuple(self.shape)}")
        self.items, labels, dirs = [], [], []
        self.Q = {}
        for b in np.ndindex(*self.shape[:-2]):
            for text, mat in self._basis(structure, b):
                self.items.append((b, mat))
                labels.append(_label(b, text))
                full = np.zeros(self.shape)
                full[b] = mat if structure != "orthogonal" else (self.Q[b] @ mat)[:, :n]
                dirs.append(full.reshape(-1))
        self.labels = labels
        self.size = len(dirs)
        self.basis = np.stack(dirs, axis=1) if dirs else np.zeros((self.base.size, 0))

    def _basis(self, structure, b):
        A = np.asarray(self.base[b], dtype=np.float64)
        m, n = A.shape
        fin = np.finfo(self.dtype).eps
        if structure == "spd":
            self._check_spd(A, b, fin)
        if structure == "orthogonal":
            err = float(np.max(np.abs(A.T @ A - np.eye(n))))
            if err > 1e3 * fin * m:
                raise ValueError(f"gradcheck: structure={{{self.index}: 'orthogonal'}} needs "
                                 f"orthonormal columns, but input {self.index}"
                                 f"{_label(b, '')} has max |X^T X - I| = {err:.3g}")
            Qc = np.linalg.qr(A, mode="complete")[0]
            self.Q[b] = np.concatenate([A, Qc[:, n:]], axis=1)
            for a in range(n):
                for c in range(a + 1, m):
                    W = np.zeros((m, m))
                    W[a, c], W[c, a] = 1.0, -1.0
                    yield f"rot({a}, {c})", W
            return
        for r in range(m):
            for c in range(n):
                E = np.zeros((m, n))
                if structure in ("symmetric", "spd") and r <= c:
                    E[r, c] = E[c, r] = 1.0
                    yield (f"({r}, {r})" if r == c else f"sym({r}, {c})"), E
                elif ((structure == "lower" and r >= c) or (structure == "upper" and r <= c)
                      or (structure == "diagonal" and r == c)):
                    E[r, c] = 1.0
                    yield f"({r}, {c})", E

    def _check_spd(self, A, b, fin):
        where = f"input {self.index}{_label(b, '')}"
        scale = max(1.0, float(np.max(np.abs(A))))
        asym = float(np.max(np.abs(A - A.T)))
        if asym > 100 * fin * scale:
            raise ValueError(f"gradcheck: structure 'spd' needs a symmetric matrix, but {where} "
                             f"has max |A - A^T| = {asym:.3g}")
        lam = float(np.linalg.eigvalsh((A + A.T) / 2)[0])
        if lam <= 0:
            raise ValueError(f"gradcheck: structure 'spd' needs a positive-definite matrix, but "
                             f"{where} has smallest eigenvalue {lam:.3g}")
        if self.eps >= lam / 2:  # keep A +- eps D positive definite (|D|_2 <= 1)
            warnings.warn(f"gradcheck: eps={self.eps:g} is too large to stay positive definite "
                          f"around {where} (smallest eigenvalue {lam:.3g}); using "
                          f"{lam / 4:.3g}", stacklevel=4)
            self.eps = lam / 4

    def step(self, eps):
        """The step actually used for ``eps`` (an spd input caps it)."""
        return min(eps, self.eps) if self.structure == "spd" else eps

    def column(self, k, eps):
        eps = self.step(eps)
        if self.structure is None:
            flat = self.base.reshape(-1)
            plus, minus = flat.copy(), flat.copy()
            plus[k] += eps
            minus[k] -= eps
            denom = float(plus[k]) - float(minus[k])  # the step actually taken
            return (plus.reshape(self.shape), minus.reshape(self.shape),
                    denom if denom > 0 else 2 * eps)
        b, mat = self.items[k]
        return self._move(((b, mat),), eps) + (2 * eps,)

    def _move(self, parts, eps):
        """``base`` moved by ``+-eps`` along ``sum(parts)`` (per batch entry)."""
        points = []
        for t in (eps, -eps):
            x = np.array(self.base, dtype=np.float64)
            if self.structure == "orthogonal":
                n = self.shape[-1]
                for b in {b for b, _ in parts}:
                    W = sum(mat for bb, mat in parts if bb == b)
                    x[b] = (self.Q[b] @ _expm_skew(t * W))[:, :n]
            else:
                for b, mat in parts:
                    x[b] += t * mat
            points.append(x.astype(self.dtype))
        return tuple(points)

    def along(self, coeffs, eps):
        """The two points ``base +- eps v`` of the direction with these coordinates."""
        eps = self.step(eps)
        if self.structure is None:
            v = coeffs.reshape(self.shape)
            base = np.asarray(self.base, dtype=np.float64)
            return ((base + eps * v).astype(self.dtype), (base - eps * v).astype(self.dtype),
                    2 * eps)
        return self._move([(b, c * mat) for c, (b, mat) in zip(coeffs, self.items)], eps) + (
            2 * eps,)

    def vector(self, coeffs):
        """The direction (flat, in input coordinates) with these coordinates."""
        return coeffs if self.basis is None else self.basis @ coeffs

    def project(self, jac):
        return jac if self.basis is None else jac @ self.basis


def _directions(inputs, diff, structure, eps):
    structure = dict(structure or {})
    unknown = [k for k in structure if k not in diff]
    if unknown:
        raise ValueError(f"gradcheck: structure names input(s) {unknown}, which are not inputs "
                         f"that require grad (those are {diff})")
    return {i: _Directions(inputs[i], structure.get(i), i, eps) for i in diff}


# --- progress -----------------------------------------------------------------------------


class _Progress:
    """A tqdm bar on stderr, shown when the estimate from the first column is long (or
    always with ``mode=True``, never with ``mode=False``)."""

    def __init__(self, total, mode, desc):
        self.total, self.mode, self.desc = total, mode, desc
        self.done, self.bar, self.decided = 0, None, mode is False
        self.t0 = time.perf_counter()

    def tick(self, n):
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
        elif not self.decided:
            self.decided = True
            estimate = (time.perf_counter() - self.t0) / self.done * self.total
            if self.mode or estimate > PROGRESS_AFTER_S:
                try:
                    from tqdm import tqdm
                except ImportError:  # pragma: no cover - tqdm is a dependency
                    if self.mode:
                        warnings.warn("gradcheck: progress=True needs tqdm", stacklevel=3)
                    return
                self.bar = tqdm(total=self.total, initial=self.done, desc=self.desc,
                                unit="eval", file=sys.stderr, leave=False)

    def close(self):
        if self.bar is not None:
            self.bar.close()


# --- Jacobians ----------------------------------------------------------------------------


def _evaluate(fn, inputs, i, point):
    args = list(inputs)
    args[i] = wrap(point)
    return [np.asarray(o._data, dtype=np.float64).reshape(-1) if isinstance(o, Tensor) else None
            for o in _outputs(fn, args)]


def _numerical(fn, inputs, i, dirs, eps, progress=None):
    columns = None
    with _state.no_grad():
        for k in range(dirs.size):
            plus, minus, denom = dirs.column(k, eps)
            vals = (_evaluate(fn, inputs, i, plus), _evaluate(fn, inputs, i, minus))
            if columns is None:
                columns = [None if v is None else np.zeros((v.size, dirs.size))
                           for v in vals[0]]
            for j, (p, m) in enumerate(zip(*vals)):
                if p is not None:
                    columns[j][:, k] = (p - m) / denom
            if progress is not None:
                progress.tick(2)
    if columns is None:  # an empty input: no directions
        columns = [None if not isinstance(o, Tensor) else np.zeros((o._data.size, 0))
                   for o in _outputs(fn, inputs)]
    return columns


def numerical_jacobian(fn, inputs, i, eps):
    """Central-difference Jacobians of every output with respect to input ``i``.

    Parameters
    ----------
    fn : callable
    inputs : tuple
    i : int
        The input perturbed.
    eps : float
        The step.

    Returns
    -------
    list
        Per output, an array of shape (output size, input size) (None for an output that
        is not a Tensor). The user's arrays are never modified: each evaluation gets a
        perturbed copy.
    """
    inputs = _tuple(inputs)
    return _numerical(fn, inputs, i, _Directions(inputs[i]), eps)


def analytic_jacobian(outputs, inputs, diff_inputs):
    """Jacobians from VJPs: one backward pass per output entry.

    Parameters
    ----------
    outputs : tuple of Tensor
    inputs : tuple
    diff_inputs : list of int
        The inputs differentiated.

    Returns
    -------
    dict
        ``{(output, input): array of shape (output size, input size)}`` for the outputs
        that require grad.
    """
    from ._grad import grad

    result = {}
    for j, y in enumerate(outputs):
        if not isinstance(y, Tensor) or not y._requires_grad:
            continue
        rows = {i: np.zeros((y._data.size, inputs[i]._data.size)) for i in diff_inputs}
        for r in range(y._data.size):
            seed = np.zeros(y._data.size, dtype=y.dtype)
            seed[r] = 1
            grads = grad(y, [inputs[i] for i in diff_inputs], seed.reshape(y.shape),
                         retain_graph=True, allow_unused=True)
            for i, g in zip(diff_inputs, grads):
                if g is not None:
                    rows[i][r] = np.asarray(g._data, dtype=np.float64).reshape(-1)
        for i in diff_inputs:
            result[(j, i)] = rows[i]
    return result


# --- the report ---------------------------------------------------------------------------


@dataclass
class PairReport:
    """The comparison of one (output, input) pair.

    Attributes
    ----------
    output_index, input_index : int
    passed : bool
    output_shape, input_shape : tuple
    structure : str or None
        The input's structure; then the columns are its directions, named by ``labels``.
    analytic, numerical : ndarray
        The Jacobians compared, shape (output size, input size or number of directions).
    max_error : float
    n_bad : int
        Entries outside the tolerances.
    findings : list of Finding
        The diagnosis of this pair (failing pairs only).
    labels : list of str or None
    """

    output_index: int
    input_index: int
    passed: bool
    output_shape: tuple
    input_shape: tuple
    structure: str | None
    analytic: np.ndarray = field(repr=False)
    numerical: np.ndarray = field(repr=False)
    max_error: float = 0.0
    n_bad: int = 0
    findings: list = field(default_factory=list)
    labels: list | None = field(default=None, repr=False)

    def row_label(self, r):
        """Output entry ``r`` as a multi-index tuple."""
        if not self.output_shape:
            return ()
        return tuple(int(v) for v in np.unravel_index(r, self.output_shape))

    def col_label(self, c):
        """Input entry ``c`` as a multi-index tuple, or the name of direction ``c``."""
        if self.labels is not None:
            return self.labels[c]
        if not self.input_shape:
            return ()
        return tuple(int(v) for v in np.unravel_index(c, self.input_shape))

    def to_dict(self):
        """Plain data (no arrays)."""
        return {"output_index": self.output_index, "input_index": self.input_index,
                "passed": self.passed, "output_shape": tuple(self.output_shape),
                "input_shape": tuple(self.input_shape), "structure": self.structure,
                "max_error": self.max_error, "n_bad": self.n_bad,
                "n_entries": int(self.analytic.size),
                "findings": [{"pattern": f.pattern, "message": f.message}
                             for f in self.findings]}


@dataclass
class WorstEntry:
    """One of the largest errors: the pair, the entry, both values and the error."""

    output: int
    input: int
    output_index: tuple
    input_index: tuple | str
    analytic: float
    numerical: float
    error: float


@dataclass
class GradcheckReport:
    """What gradcheck found; ``str(report)`` is the text of the error, ``bool`` is passed.

    Attributes
    ----------
    passed : bool
    function : str
        The name of the checked function.
    pairs : list of PairReport
        Every (output, input) pair compared (empty when fast mode passed).
    worst : list of WorstEntry
        The largest errors across the failing pairs (top 5).
    findings : list of tuple
        ``(output index or None, input index or None, Finding)``.
    diagnosis : list of str
        One line per finding.
    notes : list of str
        Fast mode and structure notes.
    eps, atol, rtol : float
    """

    passed: bool
    function: str
    pairs: list
    eps: float
    atol: float
    rtol: float
    worst: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def __bool__(self):
        return self.passed

    @property
    def failing(self):
        """The failing pairs."""
        return [p for p in self.pairs if not p.passed]

    @property
    def patterns(self):
        """The names of the patterns found, in order, without repeats."""
        return list(dict.fromkeys(f.pattern for _, _, f in self.findings))

    @property
    def diagnosis(self):
        """One line per finding: ``"<pattern> (output j, input i): <explanation>"``."""
        lines = []
        for j, i, f in self.findings:
            where = "" if j is None else f" (output {j}, input {i})"
            lines.append(f"{f.pattern}{where}: {f.message}")
        return lines

    def to_dict(self):
        """Plain data: passed, pairs, worst entries, diagnosis, patterns, notes."""
        return {"passed": self.passed, "function": self.function, "eps": self.eps,
                "atol": self.atol, "rtol": self.rtol,
                "pairs": [p.to_dict() for p in self.pairs],
                "worst": [vars(w).copy() for w in self.worst], "diagnosis": self.diagnosis,
                "patterns": self.patterns, "notes": list(self.notes)}

    def __str__(self):
        tol = f"eps={self.eps:g}, atol={self.atol:g}, rtol={self.rtol:g}"
        if self.passed:
            n = sum(p.analytic.size for p in self.pairs)
            err = max((p.max_error for p in self.pairs), default=0.0)
            head = (f"gradcheck passed for {self.function}: {len(self.pairs)} (output, input) "
                    f"pairs, {n} Jacobian entries, largest error {err:.3g} ({tol})"
                    if self.pairs else f"gradcheck passed for {self.function} ({tol})")
            return "\n".join([head] + [f"  {note}" for note in self.notes])
        failing = self.failing
        names = ", ".join(f"(output {p.output_index}, input {p.input_index})" for p in failing)
        lines = [f"gradcheck failed for {self.function}: {len(failing)} of {len(self.pairs)} "
                 f"(output, input) pairs disagree: {names} ({tol})"]
        lines += [f"  {note}" for note in self.notes]
        ok = [p for p in self.pairs if p.passed]
        if ok:
            lines.append("  pairs that agree: " + ", ".join(
                f"(output {p.output_index}, input {p.input_index})" for p in ok))
        for p in failing:
            lines += ["", _describe(p, self.atol, self.rtol, matrices=len(failing) <= 3)]
        if self.worst:
            lines += ["", f"Worst entries (top {len(self.worst)} over the failing pairs):"]
            lines += _table(self.worst)
        if self.findings:
            lines += ["", "Diagnosis:"] + [f"  - {d}" for d in self.diagnosis]
        return "\n".join(lines)

    def plot(self, path):
        """Save the Jacobians as heatmaps (see gradcheck's ``plot``)."""
        _plot(self, path)


def _fmt_index(idx):
    return idx if isinstance(idx, str) else str(tuple(idx))


def _table(worst):
    head = ("output", "input", "output index", "input index", "analytic", "numerical", "error")
    rows = [(str(w.output), str(w.input), _fmt_index(w.output_index),
             _fmt_index(w.input_index), f"{w.analytic + 0.0:.6g}", f"{w.numerical + 0.0:.6g}",
             f"{w.error:.3g}") for w in worst]
    widths = [max(len(r[c]) for r in rows + [head]) for c in range(len(head))]
    just = lambda r: "  ".join(v.ljust(w) if c in (2, 3) else v.rjust(w)
                               for c, (v, w) in enumerate(zip(r, widths)))
    return ["  " + just(head).rstrip()] + ["  " + just(r).rstrip() for r in rows]


def _describe(p, atol, rtol, matrices=True):
    """The text of one failing pair (and its ``worst``)."""
    a, n = p.analytic, p.numerical
    err = np.abs(a - n)
    tol = atol + rtol * np.abs(n)
    r, c = np.unravel_index(np.argmax(np.where(np.isnan(err), np.inf, err - tol)), err.shape)
    cols = "directions" if p.labels is not None else "entries"
    where = (f"direction {p.col_label(c)}" if p.labels is not None else
             f"input index {p.col_label(c)}")
    lines = [
        f"Jacobian mismatch for output {p.output_index} with respect to input {p.input_index}"
        + (f" (along {p.structure} directions)" if p.structure else "") + ":",
        f"  largest error {err[r, c]:.3g} at output index {p.row_label(r)}, {where}: "
        f"analytic {a[r, c]:.6g}, numerical {n[r, c]:.6g}",
        f"  {p.n_bad} of {err.size} entries exceed atol={atol:g} + rtol={rtol:g} * |numerical|",
    ]
    if matrices and a.size <= 100:
        with np.printoptions(precision=4, suppress=True, linewidth=100):
            lines += [f"  analytic (rows: output entries, columns: input {cols}):",
                      "  " + str(a + 0.0).replace("\n", "\n  "),  # + 0.0: no "-0."
                      "  numerical:", "  " + str(n + 0.0).replace("\n", "\n  ")]
    return "\n".join(lines)


def _worst(p, atol, rtol):
    a, n = p.analytic, p.numerical
    err = np.abs(a - n)
    r, c = np.unravel_index(np.argmax(np.where(np.isnan(err), np.inf,
                                               err - atol - rtol * np.abs(n))), err.shape)
    return (p.row_label(r), p.col_label(c), float(a[r, c]), float(n[r, c]))


def _top(pairs, atol, rtol, k=5):
    entries = []
    for p in pairs:
        err = np.abs(p.analytic - p.numerical)
        bad = ~_diag.agree(p.analytic, p.numerical, atol, rtol)
        err = np.where(bad, np.where(np.isnan(err), np.inf, err), -1.0).reshape(-1)
        best = np.argsort(-err, kind="stable")[:k]  # this pair's largest failing errors
        for flat in best[err[best] >= 0]:
            r, c = np.unravel_index(flat, p.analytic.shape)
            entries.append((float(err[flat]), p, int(r), int(c)))
    entries.sort(key=lambda e: -e[0])
    return [WorstEntry(p.output_index, p.input_index, p.row_label(r), p.col_label(c),
                       float(p.analytic[r, c]), float(p.numerical[r, c]), e)
            for e, p, r, c in entries[:k]]


# --- checking -----------------------------------------------------------------------------


def _compare(fn, inputs, diff, dirs, eps, atol, rtol, progress=False, only=None):
    """Both Jacobians of every pair (of the inputs ``only``), compared. Returns the pairs
    and the seconds the numerical Jacobians took."""
    outputs = _outputs(fn, inputs)
    analytic = analytic_jacobian(outputs, inputs, diff)
    check = [i for i in diff if only is None or i in only]
    bar = _Progress(2 * sum(dirs[i].size for i in check), progress,
                    "gradcheck: numerical Jacobian")
    start = time.perf_counter()
    pairs = []
    try:
        for i in check:
            numerical = _numerical(fn, inputs, i, dirs[i], eps, bar)
            for j, y in enumerate(outputs):
                if (j, i) not in analytic:
                    continue
                a, n = dirs[i].project(analytic[(j, i)]), numerical[j]
                ok = _diag.agree(a, n, atol, rtol)
                err = np.abs(a - n)
                pairs.append(PairReport(
                    j, i, bool(ok.all()), tuple(y.shape), tuple(inputs[i].shape),
                    dirs[i].structure, a, n, float(np.nanmax(err, initial=0.0)),
                    int(ok.size - ok.sum()), labels=dirs[i].labels))
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
    if not outs:
        return []
    us = [rng.standard_normal(y.shape) for _, y in outs]
    norm = np.sqrt(sum(float(np.sum(u * u)) for u in us)) or 1.0
    us = [u / norm for u in us]
    grads = grad([y for _, y in outs], [inputs[i] for i in diff],
                 [wrap(np.asarray(u, dtype=y.dtype)) for u, (_, y) in zip(us, outs)],
                 retain_graph=False, allow_unused=True)
    u1 = sum(float(np.abs(u).sum()) for u in us)
    results = []
    with _state.no_grad():
        for i, g in zip(diff, grads):
            c = rng.standard_normal(dirs[i].size)
            c /= np.linalg.norm(c) or 1.0
            a = 0.0 if g is None else float(
                np.asarray(g._data, dtype=np.float64).reshape(-1) @ dirs[i].vector(c))
            plus, minus, denom = dirs[i].along(c, eps)
            vp, vm = _evaluate(fn, inputs, i, plus), _evaluate(fn, inputs, i, minus)
            n = sum(float(u.reshape(-1) @ (vp[j] - vm[j])) for u, (j, _) in zip(us, outs)) / denom
            tol = atol * u1 * float(np.abs(c).sum()) + rtol * abs(n)
            results.append((i, a, n, tol, bool(abs(a - n) <= tol)))
    return results


def _as_float64(x):
    if not isinstance(x, Tensor) or x.dtype.kind != "f" or x.dtype == np.float64:
        return x
    return wrap(np.asarray(x._data, dtype=np.float64), requires_grad=x._requires_grad)


def _precision(fn, inputs, diff, dirs, structure, failing, seconds, eps, atol, rtol):
    """Re-check in float64 (float32 inputs) and at the steps of EPS_SWEEP."""
    low = [inputs[i].dtype for i in diff if inputs[i].dtype != np.float64]
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
    analytic = {(p.output_index, p.input_index): p.analytic for p in pairs
                if p.labels is None}
    numerical = {(p.output_index, p.input_index): p.numerical for p in pairs
                 if p.labels is None}
    values = {i: np.asarray(inputs[i]._data, dtype=np.float64) for i in diff
              if inputs[i].ndim == 2}
    swaps = set()
    for p in report.failing:
        key = (p.output_index, p.input_index)
        p.findings = _diag.diagnose_pair(
            p.analytic, p.numerical, p.output_shape, p.input_shape, atol=report.atol,
            rtol=report.rtol, all_analytic=analytic if key in analytic else None,
            all_numerical=numerical, pair=key, values=values, in_labels=p.labels)
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


def gradcheck(fn, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              structure=None, fast_mode=False, progress=None, plot=None, return_report=False):
    """Check the gradients of ``fn`` at ``inputs`` against central finite differences.

    Parameters
    ----------
    fn : callable
        ``fn(*inputs) -> Tensor or tuple of Tensors``.
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
    inputs = _tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x._requires_grad]
    if not diff:
        raise ValueError("gradcheck: no input requires grad; set requires_grad=True on the "
                         "inputs to check")
    for i in diff:
        if inputs[i].dtype != np.float64:
            warnings.warn(
                f"gradcheck: input {i} has dtype {inputs[i].dtype}; finite differences need "
                "float64 to be accurate (use x.double())", stacklevel=2)
    dirs = _directions(inputs, diff, structure, eps)
    name = _fn_name(fn)
    notes = [f"input {i} checked along {d.size} {d.structure} directions"
             for i, d in dirs.items() if d.structure]
    fast_failed = []
    if fast_mode:
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
            notes.append(f"fast mode: u^T J v differs for input {i} (analytic {a:.6g}, "
                         f"numerical {n:.6g}, tolerance {tol:.3g}); the full check locates it")
    pairs, seconds = _compare(fn, inputs, diff, dirs, eps, atol, rtol, progress)
    report = GradcheckReport(all(p.passed for p in pairs), name, pairs, eps, atol, rtol,
                             notes=notes)
    if report.passed:
        if fast_failed:
            warnings.warn("gradcheck: the fast-mode projection disagreed but the full check "
                          "passes (an error just outside the tolerances?)", stacklevel=2)
        if plot is not None:
            _plot(report, plot)
        return report if return_report else True
    if not raise_exception and plot is None and not return_report:
        return False
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


def gradgradcheck(fn, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, **kwargs):
    """Check second derivatives: gradcheck of the map (inputs, u) -> VJP(u) of ``fn``.

    The VJP is computed with ``create_graph=True``, so its analytic Jacobian comes from
    differentiating the backward pass itself, and is compared with central differences of
    the VJP. ``grad_outputs`` (one per output, default random normal) are the cotangents
    ``u``; they are checked as inputs too (the VJP is linear in them).

    Parameters
    ----------
    fn, inputs, eps, atol, rtol, raise_exception
        As for :func:`gradcheck`.
    grad_outputs : sequence, optional
        The cotangents.
    **kwargs
        Passed to :func:`gradcheck` (``structure``, ``fast_mode``, ``progress``, ``plot``,
        ``return_report``).

    Returns
    -------
    bool or GradcheckReport
        True, or raises :class:`GradcheckError` (returns False with
        ``raise_exception=False``) naming the failing pairs as gradcheck does; the input
        indices count the original inputs first, then the grad_outputs.
    """
    from ._grad import grad

    inputs = _tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x._requires_grad]
    outputs = [o for o in _outputs(fn, inputs) if isinstance(o, Tensor) and o._requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = [wrap(rng.standard_normal(o.shape).astype(o.dtype)) for o in outputs]
    cotangents = [wrap(np.array(u._data if isinstance(u, Tensor) else u, dtype=np.float64))
                  for u in _tuple(grad_outputs)]
    for u in cotangents:
        u.requires_grad_(True)
    n = len(inputs)

    def vjp(*args):
        # The numerical Jacobian calls this under no_grad with perturbed copies: make them
        # leaves that require grad, so the inner VJP exists.
        with _state.enable_grad():
            xs = [x.detach().requires_grad_(True) if i in diff and not x._requires_grad else x
                  for i, x in enumerate(args[:n])]
            us = args[n:]
            ys = [o for o in _outputs(fn, xs) if isinstance(o, Tensor) and o._requires_grad]
            gs = grad(ys, [xs[i] for i in diff], us, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    vjp.__qualname__ = f"the VJP of {_fn_name(fn)}"
    return gradcheck(vjp, tuple(inputs) + tuple(cotangents), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, **kwargs)


# --- the figure ---------------------------------------------------------------------------


def _ticks(ax, axis, n, label_of, limit=16):
    """Multi-index tick labels when there are few entries; flat indices otherwise."""
    set_ticks = ax.set_xticks if axis == "x" else ax.set_yticks
    set_labels = ax.set_xticklabels if axis == "x" else ax.set_yticklabels
    if n <= limit:
        set_ticks(range(n))
        labels = [label_of(k) for k in range(n)]
        labels = [str(v[0]) if isinstance(v, tuple) and len(v) == 1 else _fmt_index(v)
                  for v in labels]
        if axis == "x":
            set_labels(labels, fontsize=7, rotation=45, ha="right")
        else:
            set_labels(labels, fontsize=7)
        return False
    from matplotlib.ticker import MaxNLocator

    (ax.xaxis if axis == "x" else ax.yaxis).set_major_locator(MaxNLocator(integer=True))
    return True


def _plot(report, path):
    """Heatmaps of analytic, numerical (one shared colorbar) and their difference (a
    diverging colormap centred at 0), one row per failing pair, saved with the Agg
    canvas (no global backend change)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError("gradcheck(plot=...) needs matplotlib: pip install matplotlib") \
            from exc
    pairs = report.failing[:6] if not report.passed else report.pairs[:1]
    notes = report.diagnosis if not report.passed else []
    if not report.passed and len(report.failing) > len(pairs):
        notes = [f"(showing {len(pairs)} of {len(report.failing)} failing pairs)"] + notes
    wrapped = [textwrap.fill(d, 150, initial_indent="- ", subsequent_indent="   ")
               for d in notes]
    text_lines = sum(w.count("\n") + 1 for w in wrapped)
    row_h = 3.6
    text_h = 0.35 + 0.17 * text_lines if wrapped else 0.0
    fig = Figure(figsize=(15, row_h * max(1, len(pairs)) + text_h + 0.6),
                 layout="constrained")
    FigureCanvasAgg(fig)
    ratios = [row_h] * max(1, len(pairs)) + ([text_h] if wrapped else [])
    subfigs = fig.subfigures(len(ratios), 1, height_ratios=ratios, squeeze=False)[:, 0]
    status = "PASSED" if report.passed else (
        f"FAILED ({len(report.failing)} of {len(report.pairs)} pairs disagree)")
    fig.suptitle(f"gradcheck of {report.function}: {status}   "
                 f"[eps={report.eps:g}, atol={report.atol:g}, rtol={report.rtol:g}]",
                 fontsize=13, fontweight="bold")
    for row, p in enumerate(pairs):
        sfig = subfigs[row]
        sub = sfig.add_gridspec(1, 6, width_ratios=[1, 1, 0.05, 0.1, 1, 0.05])
        axes = [sfig.add_subplot(sub[0, c]) for c in (0, 1, 4)]
        a, n = p.analytic, p.numerical
        d = a - n
        finite = np.concatenate([np.abs(a[np.isfinite(a)]), np.abs(n[np.isfinite(n)]), [0.0]])
        vmax = float(finite.max()) or 1.0
        dmax = float(np.nanmax(np.abs(np.where(np.isfinite(d), d, 0.0)), initial=0.0)) or 1.0
        kw = {"aspect": "auto", "interpolation": "nearest"}
        im = axes[0].imshow(a, cmap="RdBu_r", vmin=-vmax, vmax=vmax, **kw)
        axes[1].imshow(n, cmap="RdBu_r", vmin=-vmax, vmax=vmax, **kw)
        imd = axes[2].imshow(d, cmap="PuOr_r", vmin=-dmax, vmax=dmax, **kw)
        bad = ~_diag.agree(a, n, report.atol, report.rtol)
        marks = 0 < bad.sum() <= 400
        if marks:
            rr, cc = np.nonzero(bad)
            dark = np.abs(d[rr, cc]) > 0.6 * dmax  # white marks on the darkest cells
            axes[2].scatter(cc, rr, marker="x", s=22, linewidths=0.9,
                            c=np.where(dark, "white", "black"))
        sfig.colorbar(im, cax=sfig.add_subplot(sub[0, 2]),
                      label="Jacobian entry (analytic and numerical)")
        sfig.colorbar(imd, cax=sfig.add_subplot(sub[0, 5]), label="analytic - numerical")
        state = "agrees" if p.passed else f"{p.n_bad} of {a.size} entries outside tolerance"
        what = f"{p.structure} direction" if p.structure else "entry"
        titles = ("analytic (from the backward)", "numerical (central differences)",
                  f"analytic - numerical (max |error| {p.max_error:.3g})"
                  + ("\nx: outside atol + rtol |numerical|" if marks else ""))
        for ax, title in zip(axes, titles):
            ax.set_title(title, fontsize=10)
            flat_x = _ticks(ax, "x", a.shape[1], p.col_label)
            flat_y = _ticks(ax, "y", a.shape[0], p.row_label)
            ax.set_xlabel(f"input {p.input_index} {what}"
                          + (" (flat index)" if flat_x else ""), fontsize=9)
            ax.set_ylabel(f"output {p.output_index} entry" + (" (flat index)" if flat_y else ""),
                          fontsize=9)
        sub_title = (f"output {p.output_index} (shape {tuple(p.output_shape)}) with respect to "
                     f"input {p.input_index} (shape {tuple(p.input_shape)}): {state}")
        sfig.suptitle(sub_title, x=0.01, ha="left", fontsize=11, fontweight="bold",
                      color="darkgreen" if p.passed else "darkred")
    if wrapped:
        subfigs[-1].text(0.005, 0.98, "Diagnosis:\n" + "\n".join(wrapped), va="top",
                         ha="left", fontsize=9, family="monospace")
    fig.savefig(path, dpi=110)
