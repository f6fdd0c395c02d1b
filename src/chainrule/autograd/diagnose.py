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

import numpy as np

from ._diagnose_detectors import (
    constant_factor,
    diagonal_factor,
    nonfinite,
    one_triangle,
    sign_flip,
    swapped_inputs,
    transposed,
    unread_entries,
    unsummed_broadcast,
    zero_gradient,
)
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
    agree,
    fit_factor,
    format_factor,
)

__all__ = [
    "Finding", "agree", "fit_factor", "format_factor", "nonfinite", "zero_gradient",
    "sign_flip", "constant_factor", "transposed", "swapped_inputs", "one_triangle",
    "diagonal_factor", "unread_entries", "unsummed_broadcast", "partial_agreement",
    "difference_term", "precision", "diagnose_pair",
]


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
