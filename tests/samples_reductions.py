"""Samples for the scans, sorting ops and more reductions (``chainrule.ops.scans``,
``chainrule.ops.sorting``, ``chainrule.ops.reduction``; see tests/samples.py).

Order-based ops (sort, topk, kthvalue, median, cummax / cummin, quantile) take well
separated values, so that no tie sits within the finite-difference step; cumprod takes
values away from zero here (its zero handling is tested in tests/test_reductions_more.py,
at first order: its second derivative at an exact zero is not that of the product). The
compositions (quantile, nansum, cov, diff, trapezoid, ...) have samples under an op they
record.
"""

from __future__ import annotations

import numpy as np

import chainrule as cr
from samples import Sample

RNG = np.random.default_rng(8642)
S = Sample


def randn(*shape):
    return RNG.standard_normal(shape)


def distinct(*shape):
    """Well separated values in a random order (no ties)."""
    n = int(np.prod(shape))
    return (RNG.permutation(n).astype(float) * 0.41 - n * 0.2 + 0.05).reshape(shape)


def away_from_zero(*shape):
    return RNG.uniform(0.4, 1.4, shape) * RNG.choice([-1.0, 1.0], shape)


def with_nan(*shape):
    x = randn(*shape)
    x.flat[1] = np.nan
    x.flat[-2] = np.nan
    return x


SAMPLES = [
    # scans
    S("cumsum", lambda a: a.cumsum(1), [randn(3, 4)]),
    S("cumsum", lambda a: cr.cumsum(a, -3), [randn(2, 3, 2)], "dim0"),
    S("cumprod", lambda a: a.cumprod(1), [away_from_zero(3, 4)]),
    S("cumprod", lambda a: cr.cumprod(a, 0), [away_from_zero(5)], "1d"),
    S("logcumsumexp", lambda a: cr.logcumsumexp(a, 1), [randn(3, 4)]),
    S("logcumsumexp", lambda a: a.logcumsumexp(0), [randn(4, 2) * 3.0], "dim0"),
    S("cummax", lambda a: a.cummax(1).values, [distinct(3, 5)]),
    S("cummin", lambda a: cr.cummin(a, 0)[0], [distinct(4, 3)]),
    # sorting and order statistics
    S("sort", lambda a: a.sort(1).values, [distinct(3, 4)]),
    S("sort", lambda a: cr.sort(a, 0, descending=True)[0], [distinct(4, 3)], "descending"),
    S("sort", lambda a: cr.msort(a), [distinct(4, 2)], "msort"),
    S("sort", lambda a: cr.quantile(a, np.array([0.2, 0.7]), dim=1), [distinct(3, 5)],
      "quantile"),
    S("sort", lambda a: cr.quantile(a, 0.35, interpolation="midpoint"), [distinct(2, 3)],
      "quantile_midpoint"),
    S("sort", lambda a: cr.nanquantile(a, 0.6, dim=0, keepdim=True), [distinct(4, 3)],
      "nanquantile"),
    S("topk", lambda a: cr.topk(a, 2, dim=0).values, [distinct(4, 3)]),
    S("topk", lambda a: a.topk(3, largest=False)[0], [distinct(2, 5)], "smallest"),
    S("kthvalue", lambda a: a.kthvalue(2, 1).values, [distinct(3, 4)]),
    S("kthvalue", lambda a: cr.kthvalue(a, 3, 0, keepdim=True)[0], [distinct(4, 2)], "keepdim"),
    S("median_dim", lambda a: a.median(1).values, [distinct(3, 5)]),
    S("median_dim", lambda a: cr.nanmedian(a, 0, keepdim=True).values, [distinct(4, 3)],
      "nanmedian"),
    S("median", lambda a: a.median(), [distinct(3, 4)]),
    S("median", lambda a: cr.nanmedian(a), [distinct(5)], "nanmedian"),
    # compositions of reductions
    S("sum", lambda a: cr.nansum(a, 1), [with_nan(3, 4)], "nansum"),
    S("sum", lambda a: a.nanmean(0), [with_nan(3, 4)], "nanmean"),
    S("var", lambda a: cr.var_mean(a, 1)[0] * cr.var_mean(a, 1)[1], [randn(3, 4)], "var_mean"),
    S("std", lambda a: cr.std_mean(a, 0, keepdim=True)[0], [randn(3, 4)], "std_mean"),
    S("mm", lambda a: cr.cov(a), [randn(3, 5)], "cov"),
    S("mm", lambda a: cr.corrcoef(a), [randn(3, 5)], "corrcoef"),
    S("sub", lambda a: cr.diff(a, 2, dim=1), [randn(3, 5)], "diff"),
    S("sum", lambda a: cr.trapezoid(a, dx=0.5, dim=0), [randn(4, 3)], "trapezoid"),
    S("amin", lambda a: cr.aminmax(a, dim=1).min * cr.aminmax(a, dim=1).max, [distinct(3, 4)],
      "aminmax"),
]
