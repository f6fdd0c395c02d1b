"""The vocabulary of the diagnosis: a Finding, and the fits the detectors are built on
(agreement within tolerance, a best-fit scalar factor and its text, the labels and runs
of entries that a message names)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

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
