"""Explain a gradcheck failure: detectors for the usual ways a backward goes wrong.

Each detector is a small pure function of the analytic Jacobian (built from the backward),
the numerical one (central differences), the shapes of the output and the input, and for
some the other (output, input) pairs' Jacobians. It returns a :class:`Finding` (the pattern's
short name and one line for a person) or None. Jacobians have shape (output size, input
size): row ``r`` is output entry ``r`` (C order), column ``k`` input entry ``k``.

Two arrays "agree" with gradcheck's own criterion ``|a - n| <= atol + rtol |n|`` entrywise,
so a detector fires only when its explanation holds to the check's tolerances.

:func:`diagnose_pair` runs them all on one failing pair; :func:`precision` turns the
re-checks gradcheck makes (float64, other step sizes) into a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "Finding", "agree", "fit_factor", "format_factor", "nonfinite", "zero_gradient",
    "sign_flip", "constant_factor", "transposed", "swapped_inputs", "one_triangle",
    "diagonal_factor", "unread_entries", "unsummed_broadcast", "partial_agreement",
    "difference_term", "precision", "diagnose_pair",
]

ATOL, RTOL = 1e-5, 1e-3


@dataclass(frozen=True)
class Finding:
    """One explanation of a mismatch.

    Attributes
    ----------
    pattern : str
        Short name of the pattern: ``"constant factor"``, ``"sign flip"``, ``"transpose"``,
        ``"swapped inputs"``, ``"one triangle"``, ``"symmetric input"``, ``"unread entries"``,
        ``"diagonal factor"``, ``"broadcast not summed"``, ``"partial agreement"``, ``"difference
        term"``, ``"zero gradient"``, ``"zero numerical"``, ``"not finite"``, ``"float32
        round-off"``, ``"step size"``, ``"real bug"``, ``"precision skipped"``.
    message : str
        One line for a person.
    details : dict
        The numbers behind it (a factor, an input index, ...).
    """

    pattern: str
    message: str
    details: dict = field(default_factory=dict, compare=False)

    def __str__(self):
        return self.message


# --- helpers ------------------------------------------------------------------------------


def agree(analytic, numerical, atol=ATOL, rtol=RTOL):
    """Entrywise agreement with gradcheck's criterion (False where either is NaN).

    Parameters
    ----------
    analytic, numerical : ndarray
        Arrays of one shape.
    atol, rtol : float
        Tolerances: ``|analytic - numerical| <= atol + rtol |numerical|``.

    Returns
    -------
    ndarray of bool
    """
    return np.abs(analytic - numerical) <= atol + rtol * np.abs(numerical)


def _close(a, b, atol, rtol):
    return a.size == 0 or bool(np.all(agree(a, b, atol, rtol)))


def _zero(x, atol):
    return x.size == 0 or float(np.max(np.abs(x))) <= atol


def fit_factor(analytic, numerical):
    """Least-squares ``c`` in ``analytic ~ c numerical`` (None when numerical is zero).

    Parameters
    ----------
    analytic, numerical : ndarray

    Returns
    -------
    float or None
    """
    nn = float(np.vdot(numerical, numerical))
    if not np.isfinite(nn) or nn == 0.0:
        return None
    c = float(np.vdot(numerical, analytic)) / nn
    return c if np.isfinite(c) else None


def _fits(analytic, target, c, atol, rtol):
    """``analytic = c target`` to the tolerances, with a relative residual below rtol."""
    model = c * target
    if not _close(analytic, model, atol, rtol):
        return False
    norm = float(np.linalg.norm(analytic))
    return norm == 0.0 or float(np.linalg.norm(analytic - model)) <= max(rtol, 1e-8) * norm


def format_factor(c):
    """A factor for a person: ``2``, ``0.5``, ``1/3``, ``-0.25`` or ``1.234``.

    Parameters
    ----------
    c : float

    Returns
    -------
    str
    """
    for q in range(1, 13):
        p = round(c * q)
        if p != 0 and abs(c - p / q) <= 1e-6 * max(1.0, abs(c)):
            if q == 1:
                return str(p)
            return f"{p / q:g}" if q in (2, 4, 5, 8, 10) else f"{p}/{q}"
    return f"{c:.4g}"


def _transpose_perm(shape):
    """Flat permutation that swaps the last two indices of an array of ``shape`` (square
    in those, size > 1), or None."""
    if shape is None or len(shape) < 2 or shape[-1] != shape[-2] or shape[-1] < 2:
        return None
    idx = np.arange(int(np.prod(shape))).reshape(shape)
    return np.swapaxes(idx, -1, -2).reshape(-1)


def _labels(shape, n):
    if shape is None or int(np.prod(shape)) != n:
        return [str(k) for k in range(n)]
    if len(shape) == 0:
        return ["()"]
    if len(shape) == 1:
        return [str(k) for k in range(n)]
    return ["(" + ", ".join(str(int(v)) for v in np.unravel_index(k, shape)) + ")"
            for k in range(n)]


def _runs(mask, labels, limit=4):
    """Describe the True entries of a 1-D mask as runs: ``0-2, 5`` or ``(0, 0)-(0, 2)``."""
    idx = np.flatnonzero(mask)
    runs, start = [], None
    for a, b in zip(idx, list(idx[1:]) + [None]):
        start = a if start is None else start
        if b is None or b != a + 1:
            runs.append(labels[start] if start == a else f"{labels[start]}-{labels[a]}")
            start = None
    if len(runs) > limit:
        return ", ".join(runs[:limit]) + f" and {len(runs) - limit} more"
    return ", ".join(runs)


# --- detectors ----------------------------------------------------------------------------


def nonfinite(analytic, numerical):
    """NaN or infinite entries in either Jacobian.

    Parameters
    ----------
    analytic, numerical : ndarray

    Returns
    -------
    Finding or None
    """
    bad_a, bad_n = int(np.sum(~np.isfinite(analytic))), int(np.sum(~np.isfinite(numerical)))
    if not bad_a and not bad_n:
        return None
    parts = []
    if bad_a:
        parts.append(f"analytic has {bad_a} NaN/inf entries (the backward divides by zero or "
                     "overflows here)")
    if bad_n:
        parts.append(f"numerical has {bad_n} NaN/inf entries (the function is not finite "
                     "within eps of this point)")
    return Finding("not finite", "; ".join(parts), {"analytic": bad_a, "numerical": bad_n})


def zero_gradient(analytic, numerical, *, atol=ATOL):
    """One Jacobian is zero and the other is not.

    Parameters
    ----------
    analytic, numerical : ndarray
    atol : float
        What counts as zero.

    Returns
    -------
    Finding or None
        ``"zero gradient"`` (the backward returns zero or None for this input, or the
        output does not reach it in the graph) or ``"zero numerical"`` (the output does not
        depend on the input, but the backward says it does).
    """
    za, zn = _zero(analytic, atol), _zero(numerical, atol)
    if za and not zn:
        return Finding("zero gradient", "analytic Jacobian is zero but numerical is not: the "
                       "backward returns zero (or None) for this input, or the output does not "
                       "reach it in the graph (.detach(), NumPy, an integer step)")
    if zn and not za:
        return Finding("zero numerical", "numerical Jacobian is zero but analytic is not: the "
                       "output does not depend on this input (or only through a piecewise "
                       "constant step), yet the backward returns a gradient for it")
    return None


def sign_flip(analytic, numerical, *, atol=ATOL, rtol=RTOL):
    """``analytic = -numerical``.

    Parameters
    ----------
    analytic, numerical : ndarray
    atol, rtol : float

    Returns
    -------
    Finding or None
    """
    c = fit_factor(analytic, numerical)
    if c is None or abs(c + 1) > 10 * rtol or not _fits(analytic, -numerical, 1.0, atol, rtol):
        return None
    return Finding("sign flip", "analytic = -1 x numerical: the sign is flipped (a missing "
                   "minus, or a - b written as b - a)", {"factor": -1.0})


def constant_factor(analytic, numerical, *, atol=ATOL, rtol=RTOL):
    """``analytic = c numerical`` for a constant ``c`` other than 1, -1 and 0.

    ``c`` is the least-squares ratio; the finding needs the residual to be within the
    tolerances (entrywise and relative to the norm).

    Parameters
    ----------
    analytic, numerical : ndarray
    atol, rtol : float

    Returns
    -------
    Finding or None
        With ``details["factor"]``.
    """
    c = fit_factor(analytic, numerical)
    if c is None or min(abs(c - 1), abs(c + 1), abs(c)) <= 10 * rtol:
        return None
    if not _fits(analytic, numerical, c, atol, rtol):
        return None
    text = format_factor(c)
    if abs(c - 2) <= 10 * rtol:
        hint = "a term counted twice, or a stray factor 2"
    elif abs(c - 0.5) <= 10 * rtol:
        hint = "a missing factor 2, e.g. one of two equal terms"
    elif 0 < c < 1:
        hint = "a missing factor, or a mean where a sum belongs"
    else:
        hint = "a wrong constant in the backward"

    return Finding("constant factor", f"analytic = {text} x numerical: off by a constant factor "
                   f"({hint})", {"factor": c})


def transposed(analytic, numerical, out_shape, in_shape, *, atol=ATOL, rtol=RTOL):
    """The analytic Jacobian is the right one with matrix indices transposed.

    Tries, in order: the input's last two indices swapped (the gradient returned is the
    transpose of the right one, e.g. ``x g^T`` instead of ``g x^T``), the output's (the
    backward reads ``grad_output`` transposed), both, and the full Jacobian transposed when
    it is square (the backward applies ``J`` instead of ``J^T``, e.g. ``A @ g`` for
    ``A.T @ g``).

    Parameters
    ----------
    analytic, numerical : ndarray
    out_shape, in_shape : tuple or None
        Shapes of the output and the input (None: unknown, e.g. structured directions).
    atol, rtol : float

    Returns
    -------
    Finding or None
        With ``details["which"]`` in ``"input"``, ``"output"``, ``"both"``, ``"jacobian"``.
    """
    pi, po = _transpose_perm(in_shape), _transpose_perm(out_shape)
    cands = []
    if pi is not None:
        cands.append(("input", numerical[:, pi], "analytic = numerical with the input's matrix "
                      "indices transposed: the backward returns the transpose of the right "
                      "gradient (e.g. x g^T instead of g x^T; transpose it)"))
    if po is not None:
        cands.append(("output", numerical[po, :], "analytic = numerical with the output's "
                      "matrix indices transposed: the backward uses grad_output transposed "
                      "(G^T where G belongs)"))
    if pi is not None and po is not None:
        cands.append(("both", numerical[po][:, pi], "analytic = numerical with the input's and "
                      "the output's matrix indices transposed: the backward works on "
                      "transposed matrices throughout"))
    m, n = numerical.shape
    if m == n and m > 1:
        cands.append(("jacobian", numerical.T, "analytic = numerical^T (the whole Jacobian "
                      "transposed): the backward applies J instead of J^T (e.g. A @ g where "
                      "A.T @ g belongs)"))
    for which, cand, message in cands:
        if _close(cand, numerical, atol, rtol):
            continue  # transposing changes nothing here: not evidence
        if _close(analytic, cand, atol, rtol):
            return Finding("transpose", message, {"which": which})
    return None


def swapped_inputs(analytic, numerical, pair, *, atol=ATOL, rtol=RTOL):
    """The gradients of two inputs are swapped (needs the other pairs' Jacobians).

    Parameters
    ----------
    analytic, numerical : dict
        ``{(output, input): Jacobian}`` for every checked pair.
    pair : tuple
        The failing ``(output, input)``.
    atol, rtol : float

    Returns
    -------
    Finding or None
        ``details["other"]`` is the other input. Also fires, one-sided, when input ``i``'s
        analytic Jacobian is input ``k``'s numerical one.
    """
    j, i = pair
    a_i, n_i = analytic[pair], numerical[pair]
    for (jj, k), n_k in numerical.items():
        if jj != j or k == i or n_k.shape != n_i.shape or (j, k) not in analytic:
            continue
        if _close(n_k, n_i, atol, rtol) or _zero(n_k, atol):
            continue
        if not _close(a_i, n_k, atol, rtol):
            continue
        if _close(analytic[(j, k)], n_i, atol, rtol):
            return Finding("swapped inputs", f"the gradients of inputs {i} and {k} are swapped: "
                           f"analytic for input {i} matches numerical for input {k} and vice "
                           "versa (backward returns them in the wrong order)", {"other": k})
        return Finding("swapped inputs", f"analytic for input {i} matches numerical for input "
                       f"{k}: the backward returns input {k}'s gradient in input {i}'s place",
                       {"other": k})
    return None


def _triangle_masks(in_shape):
    n = in_shape[-1]
    r, c = np.indices((n, n))
    masks = [np.broadcast_to(m, in_shape).reshape(-1) for m in (r > c, r < c, r == c)]
    return masks


def one_triangle(analytic, numerical, in_shape, *, atol=ATOL, rtol=RTOL, input_index=None):
    """Only one triangle of a symmetric term, for a square-matrix input.

    Fires when analytic matches numerical on one triangle and the diagonal and is zero or
    half on the other triangle (``"one triangle"``), or when the function reads only one
    triangle (numerical is zero on the other) while the backward returns the symmetric
    gradient, half on each side (``"symmetric input"``: check it with ``structure``).

    Parameters
    ----------
    analytic, numerical : ndarray
    in_shape : tuple or None
        The input's shape; needs square last two dimensions.
    atol, rtol : float
    input_index : int, optional
        Named in the suggestion.

    Returns
    -------
    Finding or None
    """
    if _transpose_perm(in_shape) is None:
        return None
    lower, upper, diag = _triangle_masks(in_shape)
    name = "the input" if input_index is None else f"input {input_index}"
    key = "i" if input_index is None else input_index

    def same(mask, scale=1.0):
        return _close(analytic[:, mask], scale * numerical[:, mask], atol, rtol)

    for keep, other, kname, oname in ((lower, upper, "lower", "upper"),
                                      (upper, lower, "upper", "lower")):
        if not same(diag):
            continue
        if same(keep) and not _zero(numerical[:, other], atol):
            if _zero(analytic[:, other], atol):
                how = "zero"
            elif same(other, 0.5):
                how = "half of numerical"
            else:
                continue
            func = "tril" if kname == "lower" else "triu"
            return Finding("one triangle", f"analytic matches numerical on the {kname} triangle "
                           f"and the diagonal of {name} but is {how} on the strict {oname} "
                           f"triangle: the backward keeps only one triangle of a symmetric term "
                           f"({func}(G) where G, or G + G^T, belongs)",
                           {"triangle": kname, "other": how})
        if (_zero(numerical[:, other], atol) and not _zero(analytic[:, other], atol)
                and same(keep, 0.5)):
            perm = _transpose_perm(in_shape)
            if _close(analytic[:, other], analytic[:, perm][:, other], atol, rtol):
                return Finding("symmetric input", f"the function reads only the {kname} "
                               f"triangle of {name} (numerical is zero on the {oname} one) and "
                               "the backward returns the symmetric gradient (half on each side, "
                               "as chainrule.linalg does): not a bug for a symmetric input; "
                               f"check it with structure={{{key}: 'symmetric'}}",
                               {"triangle": kname})
    return None


def unread_entries(analytic, numerical, in_shape, *, atol=ATOL, rtol=RTOL, input_index=None):
    """The function does not read some input entries, but the backward gives them a gradient.

    Fires when numerical is zero on some columns (input entries), analytic is not, and the
    two match on every other column. When the unread entries are a strict triangle or the
    off-diagonal of a square matrix, the input is presumably triangular or diagonal and the
    finding suggests the matching ``structure``.

    Parameters
    ----------
    analytic, numerical : ndarray
    in_shape : tuple or None
    atol, rtol : float
    input_index : int, optional
        Named in the message.

    Returns
    -------
    Finding or None
        With ``details["entries"]`` (flat indices) and ``details["structure"]`` (or None).
    """
    unread = np.all(np.abs(numerical) <= atol, axis=0) & ~np.all(np.abs(analytic) <= atol, axis=0)
    if not unread.any() or unread.all():
        return None
    if not _close(analytic[:, ~unread], numerical[:, ~unread], atol, rtol):
        return None
    name = "the input" if input_index is None else f"input {input_index}"
    key = "i" if input_index is None else input_index
    structure = None
    if _transpose_perm(in_shape) is not None:
        lower, upper, diag = _triangle_masks(in_shape)
        for mask, kind, text in ((upper, "lower", "only the lower triangle"),
                                 (lower, "upper", "only the upper triangle"),
                                 (lower | upper, "diagonal", "only the diagonal")):
            if np.array_equal(unread, mask):
                structure = kind
                return Finding("unread entries", f"the function reads {text} of {name} "
                               "(numerical is zero elsewhere) but the backward returns a gradient "
                               f"for the other entries too; if {name} is {kind} by construction "
                               f"check it with structure={{{key}: {kind!r}}}, otherwise the "
                               "backward should return zero there",
                               {"entries": np.flatnonzero(unread).tolist(),
                                "structure": structure})
    labels = _labels(in_shape, analytic.shape[1])
    return Finding("unread entries", f"the function does not read entries "
                   f"{_runs(unread, labels)} of {name} (numerical is zero there) but the backward "
                   "returns a gradient for them; elsewhere analytic matches numerical",
                   {"entries": np.flatnonzero(unread).tolist(), "structure": None})


def diagonal_factor(analytic, numerical, in_shape, *, atol=ATOL, rtol=RTOL):
    """For a square-matrix input: right off the diagonal, off by a factor on it.

    Parameters
    ----------
    analytic, numerical : ndarray
    in_shape : tuple or None
    atol, rtol : float

    Returns
    -------
    Finding or None
        With ``details["factor"]`` (e.g. 2: a symmetric term's diagonal counted twice).
    """
    if _transpose_perm(in_shape) is None:
        return None
    lower, upper, diag = _triangle_masks(in_shape)
    off = lower | upper
    if not _close(analytic[:, off], numerical[:, off], atol, rtol):
        return None
    a, n = analytic[:, diag], numerical[:, diag]
    c = fit_factor(a, n)
    if c is None or abs(c - 1) <= 10 * rtol or not _fits(a, n, c, atol, rtol):
        return None
    return Finding("diagonal factor", f"analytic matches numerical off the diagonal of the input "
                   f"matrix, but is {format_factor(c)} x numerical on its diagonal (e.g. the "
                   "diagonal of G + G^T counted twice, or a diag/2 missing)", {"factor": c})


def _broadcast_dims(out_shape, in_shape):
    """Output dimensions along which an input of ``in_shape`` is broadcast to ``out_shape``
    (None when the shapes are not broadcast-compatible that way)."""
    if out_shape is None or in_shape is None or len(in_shape) > len(out_shape):
        return None
    lead = len(out_shape) - len(in_shape)
    dims = []
    for d, size in enumerate(out_shape):
        s = in_shape[d - lead] if d >= lead else 1
        if s == size:
            continue
        if s != 1:
            return None
        dims.append(d)
    return dims


def unsummed_broadcast(analytic, numerical, out_shape, in_shape, *, atol=ATOL, rtol=RTOL):
    """A broadcast dimension not summed in the backward.

    Fires when the input is broadcast along some output dimensions and analytic =
    numerical / n with ``n`` the size of one of them (or of all: a mean where the sum
    belongs), when analytic matches numerical on one slice along a broadcast dimension and
    is zero on the others (one slice taken instead of the sum), or, without broadcasting,
    when analytic = numerical / n with ``n`` the size of an output dimension.

    Parameters
    ----------
    analytic, numerical : ndarray
    out_shape, in_shape : tuple or None
    atol, rtol : float

    Returns
    -------
    Finding or None
    """
    dims = _broadcast_dims(out_shape, in_shape)
    if out_shape is None or int(np.prod(out_shape)) != analytic.shape[0]:
        return None
    c = fit_factor(analytic, numerical)
    fits = c is not None and 0 < c < 1 - 10 * rtol and _fits(analytic, numerical, c, atol, rtol)
    if fits:
        ratio = 1 / c
        cands = [((d,), out_shape[d]) for d in dims or ()]
        if dims and len(dims) > 1:
            cands.append((tuple(dims), int(np.prod([out_shape[d] for d in dims]))))
        for ds, count in cands:
            if abs(ratio - count) <= 1e-3 * count:
                where = ", ".join(str(d) for d in ds)
                return Finding(
                    "broadcast not summed", f"analytic = numerical / {count}: the input is "
                    f"broadcast along output dim {where} (size {count}) and the backward "
                    "averages over it (or divides by its size) instead of summing",
                    {"dims": ds, "count": count})
        if not dims:
            for d, size in enumerate(out_shape):
                if size > 1 and abs(ratio - size) <= 1e-3 * size:
                    return Finding(
                        "broadcast not summed", f"analytic = numerical / {size}, the size of "
                        f"output dim {d}: a mean over that dimension where the sum belongs?",
                        {"dims": (d,), "count": size})
    for d in dims or ():
        size = out_shape[d]
        a = np.moveaxis(analytic.reshape(tuple(out_shape) + (-1,)), d, 0)
        n = np.moveaxis(numerical.reshape(tuple(out_shape) + (-1,)), d, 0)
        for s in range(size):
            rest = np.arange(size) != s
            if (_close(a[s], n[s], atol, rtol) and _zero(a[rest], atol)
                    and not _zero(n[rest], atol)):
                return Finding(
                    "broadcast not summed", f"analytic matches numerical only at index {s} of "
                    f"output dim {d}, along which the input is broadcast, and is zero at the "
                    f"other {size - 1}: the backward takes one slice of grad_output instead of "
                    "summing over the broadcast dimension", {"dims": (d,), "slice": s})
    return None


def partial_agreement(analytic, numerical, out_shape=None, in_shape=None, *, atol=ATOL,
                      rtol=RTOL, in_labels=None):
    """Where analytic and numerical agree and where not: rows, columns, diagonal, blocks.

    Parameters
    ----------
    analytic, numerical : ndarray
    out_shape, in_shape : tuple or None
        Used to name the entries (multi-indices) and the blocks (first dimensions).
    atol, rtol : float
    in_labels : list of str, optional
        Names of the columns (e.g. structured directions) instead of input indices.

    Returns
    -------
    Finding or None
        None when nothing matches and no structure was found.
    """
    ok = agree(analytic, numerical, atol, rtol)
    m, k = ok.shape
    rlab = _labels(out_shape, m)
    clab = list(in_labels) if in_labels is not None else _labels(in_shape, k)
    parts = []
    rows, cols = ok.all(1), ok.all(0)
    if 0 < rows.sum() < m:
        parts.append(f"output entries {_runs(rows, rlab)} match, {_runs(~rows, rlab)} differ")
    if 0 < cols.sum() < k:
        what = "input entries" if in_labels is None else "input directions"
        parts.append(f"{what} {_runs(cols, clab)} match, {_runs(~cols, clab)} differ")
    elementwise = False
    if m == k and m > 1:
        eye = np.eye(m, dtype=bool)
        dg, off = ok[eye], ok[~eye]
        n_off = int(np.sum(np.abs(numerical[~eye]) > atol))
        if _zero(analytic[~eye], atol) and n_off:
            elementwise = True
            parts.append(f"analytic is diagonal (an elementwise derivative) but numerical has "
                         f"{n_off} nonzero off-diagonal entries: the function mixes entries and "
                         "the backward treats it as elementwise (docs/matrix-vjps.md derives "
                         "the VJP of a matrix function, e.g. G X^T + X^T G for X @ X)")
            if dg.all():
                parts.append("the diagonal matches")
            elif dg.any():
                parts.append(f"{int(dg.sum())} of {m} diagonal entries match")
        elif dg.all() and not off.all():
            parts.append("matches on the diagonal, wrong off the diagonal")
        elif off.all() and not dg.all():
            parts.append("matches off the diagonal, wrong on the diagonal")
    if (not parts and out_shape and in_shape and len(out_shape) > 1 and len(in_shape) > 1
            and out_shape[0] > 1 and in_shape[0] > 1 and in_labels is None):
        p, q = out_shape[0], in_shape[0]
        blocks = ok.reshape(p, m // p, q, k // q).all(axis=(1, 3))
        if 0 < blocks.sum() < blocks.size:
            if p == q and np.diag(blocks).all():
                parts.append("matches on the diagonal blocks (output[b] vs input[b]), wrong "
                             "off them")
            else:
                bad = [f"(output[{a}], input[{b}])" for a, b in zip(*np.nonzero(~blocks))]
                more = f" and {len(bad) - 4} more" if len(bad) > 4 else ""
                parts.append(f"blocks by first index: {', '.join(bad[:4])}{more} differ, the "
                             "others match")
    bad = ~ok
    c = fit_factor(analytic[bad], numerical[bad])
    if (c is not None and 0 < bad.sum() < bad.size and abs(c - 1) > 10 * rtol
            and abs(c) > 10 * rtol and _fits(analytic[bad], numerical[bad], c, atol, rtol)):
        parts.append(f"where they differ, analytic = {format_factor(c)} x numerical")
    missing = int(np.sum(bad & (np.abs(analytic) <= atol) & (np.abs(numerical) > atol)))
    extra = int(np.sum(bad & (np.abs(numerical) <= atol) & (np.abs(analytic) > atol)))
    if missing and not elementwise:
        parts.append(f"analytic is zero at {missing} entries where numerical is not (a missing "
                     "term)")
    if extra:
        parts.append(f"analytic is nonzero at {extra} entries where numerical is zero (an extra "
                     "term)")
    if not parts and not ok.any():
        return None
    head = f"{int(ok.sum())} of {ok.size} entries match"
    return Finding("partial agreement", "; ".join([head] + parts),
                   {"matching": int(ok.sum()), "rows": np.flatnonzero(rows).tolist(),
                    "columns": np.flatnonzero(cols).tolist()})


def _name_matrix(M, values, atol, rtol):
    """Name ``M`` as ``[-]input k[^T]`` when it is (minus) an input's value or its transpose."""
    for k, V in (values or {}).items():
        V = np.asarray(V, dtype=np.float64)
        if V.ndim != 2:
            continue
        for sign in (1, -1):
            for W, t in ((V, ""), (V.T, "^T")):
                if W.shape == M.shape and _close(M, sign * W, atol, rtol):
                    return sign, f"input{k}{t}"
    return None


def _tr(expr):
    return expr[:-2] if expr.endswith("^T") else expr + "^T"


def difference_term(analytic, numerical, out_shape, in_shape, *, atol=ATOL, rtol=RTOL,
                    values=None):
    """``analytic - numerical`` is itself a simple term.

    Tries ``c`` times: the diagonal or the off-diagonal part of numerical, numerical with
    the input's or the output's matrix indices transposed; and, for matrix input and
    output, a one-sided product term ``dX -> dX @ M`` or ``dX -> M @ dX`` for a fixed
    ``M`` (named after an input when it is one: ``values``).

    Parameters
    ----------
    analytic, numerical : ndarray
    out_shape, in_shape : tuple or None
    atol, rtol : float
    values : dict, optional
        ``{input index: value}`` of matrix inputs, to name ``M``.

    Returns
    -------
    Finding or None
    """
    diff = analytic - numerical
    m, k = diff.shape
    cands = []
    if m == k and m > 1:
        eye = np.eye(m, dtype=bool)
        cands.append(("the diagonal of numerical", np.where(eye, numerical, 0.0),
                      "the diagonal (elementwise) term"))
        cands.append(("the off-diagonal part of numerical", np.where(eye, 0.0, numerical),
                      "the cross (off-diagonal) terms"))
    pi, po = _transpose_perm(in_shape), _transpose_perm(out_shape)
    if pi is not None:
        cands.append(("numerical with the input indices transposed", numerical[:, pi],
                      "a transposed term (G^T where G + G^T, or G, belongs)"))
    if po is not None:
        cands.append(("numerical with the output indices transposed", numerical[po, :],
                      "a term with grad_output transposed"))
    for name, T, what in cands:
        c = fit_factor(diff, T)
        if c is None or abs(c) <= 10 * rtol or not _close(analytic, numerical + c * T, atol, rtol):
            continue
        if abs(c + 1) <= 10 * rtol:
            verdict = f"{what} is missing"
        elif abs(c - 1) <= 10 * rtol:
            verdict = f"{what} is counted twice"
        else:
            verdict = f"{what} has a wrong factor"
        return Finding("difference term", f"analytic - numerical = {format_factor(c)} x {name}: "
                       f"{verdict}", {"term": name, "factor": c})
    if (out_shape is not None and in_shape is not None and len(out_shape) == 2
            and len(in_shape) == 2 and not _zero(diff, atol)):
        (p, q), (r, s) = out_shape, in_shape
        D = diff.reshape(p, q, r, s)
        if p == r:  # dY = dX @ M: J[a, b, c, d] = delta_ac M[d, b]
            M = np.einsum("abad->db", D) / p
            T = np.einsum("ac,db->abcd", np.eye(p), M).reshape(m, k)
            if _close(analytic, numerical + T, atol, rtol):
                return _product_term("dX @ M", M, values, atol, rtol, right=True)
        if q == s:  # dY = M @ dX: J[a, b, c, d] = M[a, c] delta_bd
            M = np.einsum("abcb->ac", D) / q
            T = np.einsum("ac,bd->abcd", M, np.eye(q)).reshape(m, k)
            if _close(analytic, numerical + T, atol, rtol):
                return _product_term("M @ dX", M, values, atol, rtol, right=False)
    return None


def _product_term(form, M, values, atol, rtol, right):
    named = _name_matrix(M, values, atol, rtol)
    if named is None:
        return Finding("difference term", f"analytic - numerical is a one-sided product term "
                       f"dX -> {form} for a fixed M: the backward misses (or double-counts) "
                       f"the term {'G @ M^T' if right else 'M^T @ G'} of the gradient",
                       {"form": form})
    sign, expr = named
    term = f"dX @ {expr}" if right else f"{expr} @ dX"
    grad_term = f"G @ {_tr(expr)}" if right else f"{_tr(expr)} @ G"
    if sign < 0:  # analytic = numerical - term: the backward lacks it
        text = (f"analytic - numerical = -({term}): the backward misses the term {grad_term} "
                f"(from dY = {term})")
    else:
        text = (f"analytic - numerical = {term}: the backward has an extra (or doubled) term "
                f"{grad_term}")
    return Finding("difference term", text, {"form": form, "matrix": expr, "sign": sign})


def precision(dtype, passes_in_float64, eps_results, eps):
    """Verdict from the re-checks: float32 round-off, step size, or a real bug.

    Parameters
    ----------
    dtype : str
        The lowest precision among the checked inputs (``"float32"``, ``"float64"``).
    passes_in_float64 : bool or None
        Whether the check passes with the inputs cast to float64 (None: not tried).
    eps_results : dict
        ``{step: passes}`` at other step sizes, in the inputs' own dtype.
    eps : float
        The step of the failed check.

    Returns
    -------
    Finding or None
    """
    passing = sorted((e for e, ok in eps_results.items() if ok), reverse=True)
    steps = ", ".join(f"{e:g}" for e in passing)
    if passes_in_float64:
        extra = f"; in {dtype} it passes at eps={steps}" if passing else ""
        return Finding("float32 round-off", f"passes in float64: {dtype} round-off, not a bug "
                       f"(check in float64, or loosen atol/rtol){extra}",
                       {"passing_eps": passing})
    if passing:
        return Finding("step size", f"passes at eps={steps}: the failure at eps={eps:g} is "
                       "finite-difference truncation or round-off error, not a bug",
                       {"passing_eps": passing})
    if eps_results:
        tried = sorted(eps_results)
        also = " and in float64" if passes_in_float64 is False else ""
        return Finding("real bug", f"fails at every step size (eps={tried[-1]:g} to "
                       f"{tried[0]:g}){also}: a real bug, not finite-difference error",
                       {"tried_eps": tried})
    if passes_in_float64 is False:
        return Finding("real bug", "fails in float64 too: a real bug, not round-off")
    return None


def diagnose_pair(analytic, numerical, out_shape, in_shape, *, atol=ATOL, rtol=RTOL,
                  all_analytic=None, all_numerical=None, pair=None, values=None,
                  in_labels=None):
    """Run every detector on one failing (output, input) pair.

    The exact explanations (sign flip, constant factor, broadcast, transpose, swapped
    inputs, triangles, diagonal factor) come first; partial agreement and a simple
    difference term are reported only when none of them holds.

    Parameters
    ----------
    analytic, numerical : ndarray
        The pair's Jacobians, shape (output size, input size or number of directions).
    out_shape, in_shape : tuple
        Shapes of the output and the input.
    atol, rtol : float
    all_analytic, all_numerical : dict, optional
        ``{(output, input): Jacobian}`` for every pair (for swapped inputs).
    pair : tuple, optional
        This pair's ``(output, input)``.
    values : dict, optional
        ``{input index: value}`` of the inputs (to name product terms).
    in_labels : list of str, optional
        Column names when the columns are structured directions, not input entries; the
        detectors that need the input's own indices are skipped then.

    Returns
    -------
    list of Finding
    """
    f = nonfinite(analytic, numerical)
    if f:
        return [f]
    f = zero_gradient(analytic, numerical, atol=atol)
    if f:
        return [f]
    coords = in_labels is None
    tol = {"atol": atol, "rtol": rtol}
    found = []
    for f in (
        sign_flip(analytic, numerical, **tol),
        unsummed_broadcast(analytic, numerical, out_shape, in_shape, **tol) if coords else None,
    ):
        if f:
            found.append(f)
    if not any(f.pattern == "broadcast not summed" for f in found):
        f = constant_factor(analytic, numerical, **tol)
        if f:
            found.append(f)
    i = None if pair is None else pair[1]
    for f in (
        transposed(analytic, numerical, out_shape, in_shape, **tol) if coords else None,
        (swapped_inputs(all_analytic, all_numerical, pair, **tol)
         if all_analytic is not None and pair is not None else None),
        one_triangle(analytic, numerical, in_shape, input_index=i, **tol) if coords else None,
        unread_entries(analytic, numerical, in_shape, input_index=i, **tol) if coords else None,
        diagonal_factor(analytic, numerical, in_shape, **tol) if coords else None,
    ):
        if f:
            found.append(f)
    if found:
        return found
    for f in (
        partial_agreement(analytic, numerical, out_shape, in_shape, in_labels=in_labels, **tol),
        (difference_term(analytic, numerical, out_shape, in_shape, values=values, **tol)
         if coords else None),
    ):
        if f:
            found.append(f)
    return found
