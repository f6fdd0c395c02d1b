"""What gradcheck reports: the per-(input, output) comparison (PairReport), the worst
entries, the text tables and the Jacobian pictures (matplotlib) of a GradcheckReport."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

import numpy as np

from . import diagnose as _diag


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
    mode: str = "backward"  # which derivative was checked: "backward" (VJPs) or "forward"

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
        f"Jacobian {'computed with forward mode ' if p.mode == 'forward' else ''}mismatch for "
        f"output {p.output_index} with respect to input {p.input_index}"
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
