"""Samples for the gathers, scatters and index/mask ops (chainrule.ops.scatter, take_along_dim),
see tests/samples.py.

Index arrays are NumPy constants captured by the sample functions (not inputs: only float
arrays are differentiated). amax/amin samples reduce distinct values (no ties, so central
differences are meaningful); prod samples reduce values away from zero, and with one and
two zeros at a position ("prod_zeros").
"""

from __future__ import annotations

import numpy as np

import chainrule as cr
from samples import Sample

RNG = np.random.default_rng(2468)
S = Sample


def randn(*shape):
    return RNG.standard_normal(shape)


def distinct(*shape):
    return RNG.permutation(np.arange(int(np.prod(shape)), dtype=float)).reshape(shape) * 0.37


def away_from_zero(*shape):
    return RNG.uniform(0.5, 1.5, shape) * RNG.choice([-1.0, 1.0], shape)


I34 = np.array([[0, 2, 2], [1, 1, 0], [3, 0, 3]])  # into (3, 4) along dim 1, repeats
U34 = np.array([[0, 2, 1], [3, 1, 0], [2, 0, 3]])  # no repeats along dim 1
I3D = np.array([[[1, 0]], [[0, 0]]])  # (2, 1, 2) into (3, 2, 4) along dim 0
VALUES = distinct(3, 7)  # amax/amin: input (3, 4) and src (3, 3), all entries distinct
MASK = np.array([[True, False, True, True], [False, False, True, False],
                 [True, True, False, False]])

SAMPLES = [
    # gather
    S("gather", lambda a: cr.gather(a, 1, I34), [randn(3, 4)], "repeated"),
    S("gather", lambda a: a.gather(0, I3D), [randn(3, 2, 4)], "smaller_index"),
    S("gather", lambda a: cr.gather(a, -1, I34[:2]), [randn(2, 4)], "negative_dim"),
    # scatter: src of index's shape, a larger src, repeated positions (last write wins)
    S("scatter", lambda a, b: cr.scatter(a, 1, U34, b), [randn(3, 4), randn(3, 3)]),
    S("scatter", lambda a, b: a.scatter(1, I34, b), [randn(3, 4), randn(3, 5)],
      "repeated_larger_src"),
    S("scatter", lambda a: cr.scatter(a, 0, I3D, 2.5), [randn(3, 2, 4)], "value"),
    # scatter_add
    S("scatter_add", lambda a, b: cr.scatter_add(a, 1, I34, b), [randn(3, 4), randn(3, 3)],
      "repeated"),
    S("scatter_add", lambda a, b: a.scatter_add(0, I3D, b), [randn(3, 2, 4), randn(2, 2, 3)],
      "larger_src"),
    # scatter_reduce
    S("scatter_reduce", lambda a, b: cr.scatter_reduce(a, 1, I34, b, "sum",
                                                       include_self=False),
      [randn(3, 4), randn(3, 3)], "sum_exclude_self"),
    S("scatter_reduce", lambda a, b: cr.scatter_reduce(a, 1, I34, b, "mean"),
      [randn(3, 4), randn(3, 3)], "mean"),
    S("scatter_reduce", lambda a, b: a.scatter_reduce(1, I34, b, "mean", include_self=False),
      [randn(3, 4), randn(3, 5)], "mean_exclude_self"),
    S("scatter_reduce", lambda a, b: cr.scatter_reduce(a, 1, I34, b, "amax"),
      [VALUES[:, :4].copy(), VALUES[:, 4:].copy()], "amax"),
    S("scatter_reduce", lambda a, b: cr.scatter_reduce(a, 1, I34, b, "amin",
                                                       include_self=False),
      [VALUES[:, :4].copy(), VALUES[:, 4:].copy()], "amin_exclude_self"),
    S("scatter_reduce", lambda a, b: cr.scatter_reduce(a, 1, I34, b, "prod"),
      [away_from_zero(3, 4), away_from_zero(3, 3)], "prod"),
    S("scatter_reduce", lambda a, b: cr.scatter_reduce(a, 1, I34, b, "prod"),
      [np.array([[0.0, 1.3, 0.0, -0.7], [0.8, 0.0, 1.1, 0.6], [0.0, 0.9, -1.2, 0.0]]),
       np.array([[0.0, 1.4, -0.6], [0.5, 0.0, 0.0], [1.7, 0.0, -0.8]])], "prod_zeros"),
    # compositions, recording the op named
    S("index", lambda a: cr.index_select(a, 1, np.array([3, 0, 3])), [randn(3, 4)],
      "index_select"),
    S("index", lambda a: cr.take(a, np.array([[0, -1], [5, 5]])), [randn(3, 4)], "take"),
    S("index", lambda a: cr.masked_select(a, MASK[1]), [randn(3, 4)], "masked_select"),
    S("index", lambda a: cr.take_along_dim(a, np.array([[0, 3, 3]]), 1), [randn(3, 4)],
      "take_along_dim_broadcast"),
    S("index_put", lambda a, b: cr.index_add(a, 1, np.array([0, 3, 3]), b, alpha=2.0),
      [randn(3, 4), randn(3, 3)], "index_add"),
    S("index_put", lambda a, b: a.index_copy(0, np.array([2, 0, 2]), b),
      [randn(3, 4), randn(3, 4)], "index_copy"),
    S("index_put", lambda a, v: cr.index_fill(a, 1, np.array([1, -1, 1]), v),
      [randn(3, 4), np.array(0.7)], "index_fill"),
    S("index_put", lambda a, b: a.masked_scatter(MASK, b), [randn(3, 4), randn(8)],
      "masked_scatter"),
    S("where", lambda a, v: a.masked_fill(MASK, v), [randn(3, 4), np.array(-0.4)],
      "masked_fill"),
    S("where", lambda a: cr.where(MASK, a, 0.0) + cr.where(MASK, 1.0, a), [randn(3, 4)],
      "scalars"),
]
