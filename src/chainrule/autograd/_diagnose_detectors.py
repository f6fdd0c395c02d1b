"""Detectors of one bug class each, comparing an analytic Jacobian with the numerical
one: non-finite entries, a zero gradient, a sign flip, a constant factor, a transpose,
swapped inputs, one triangle of a symmetric term, entries never read, a diagonal factor,
a broadcast dimension not summed. Each returns a Finding or None."""

from __future__ import annotations

import numpy as np

from ._diagnose_fit import (
    ATOL,
    RTOL,
    Finding,
    _close,
    _fits,
    _labels,
    _runs,
    _transpose_perm,
    _zero,
    fit_factor,
    format_factor,
)


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
