"""The namespaces ``F`` that derivative rules compute with.

- :data:`RAW`: NumPy on plain arrays, for a first-order backward (no graph, full speed).
- :func:`differentiable`: the same names over chainrule's own ops on Tensors, so that a
  backward pass run with it is itself recorded (higher-order derivatives).

Rules use only the names listed here (and Python operators), which is what lets one
formula serve both. ``tests/test_table.py`` checks that both namespaces define them all.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from scipy import special

from .ops.indexing import _index_put
from .ops.matmul import _diagonal_scatter
from .ops.nn import log_softmax_array, softmax_array


def _prod_others(x, dim):
    """prod_{j != i} x_j along ``dim`` (all entries when None), exact with zeros."""
    shape = x.shape
    if dim is None:
        flat = x.reshape(-1)
        return _prod_others(flat, (0,)).reshape(shape)
    moved = np.moveaxis(x, dim, tuple(range(x.ndim - len(dim), x.ndim)))
    lead = moved.shape[: x.ndim - len(dim)]
    flat = moved.reshape(lead + (-1,))
    ones = np.ones(lead + (1,), dtype=x.dtype)
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    out = (left * right).reshape(moved.shape)
    return np.moveaxis(out, tuple(range(x.ndim - len(dim), x.ndim)), dim)


RAW = SimpleNamespace(
    where=np.where,
    exp=np.exp,
    log=np.log,
    sin=np.sin,
    cos=np.cos,
    abs=np.abs,
    sign=np.sign,
    sigmoid=special.expit,
    zeros_like=np.zeros_like,
    ones_like=np.ones_like,
    zeros=lambda shape, dtype: np.zeros(shape, dtype),
    ones=lambda shape, dtype: np.ones(shape, dtype),
    eye=lambda n, m=None, dtype=None: np.eye(n, m, dtype=dtype),
    cast=lambda x, dtype: np.asarray(x).astype(dtype, copy=False),
    reshape=np.reshape,
    expand=np.broadcast_to,
    unsqueeze=np.expand_dims,
    squeeze=np.squeeze,
    transpose=np.swapaxes,
    permute=np.transpose,
    mT=lambda x: np.swapaxes(x, -1, -2),
    sum=lambda x, dim, keepdim: np.sum(x, axis=dim, keepdims=keepdim),
    mean=lambda x, dim, keepdim: np.mean(x, axis=dim, keepdims=keepdim),
    prod_others=_prod_others,
    matmul=np.matmul,
    trace=np.trace,
    diag=np.diag,
    diagonal=np.diagonal,
    diagonal_scatter=_diagonal_scatter,
    tril=np.tril,
    triu=np.triu,
    index_put=lambda x, indices, values, accumulate: _index_put(x, values, indices,
                                                                accumulate),
    einsum=lambda eq, *ops: np.einsum(eq, *ops, optimize=len(ops) > 2),
    softmax=softmax_array,
    log_softmax=log_softmax_array,
    cat=lambda xs, dim: np.concatenate(xs, axis=dim),
    stack=lambda xs, dim: np.stack(xs, axis=dim),
)


_DIFFERENTIABLE_EXTRA = {}


def register(name, raw, diff):
    """Add ``name`` to both namespaces: ``raw`` works on arrays (first-order backward),
    ``diff`` is the differentiable chainrule function with the same meaning. Op families
    outside ``ops/`` (``chainrule.linalg``) call this for the helpers their rules use."""
    if hasattr(RAW, name):
        raise ValueError(f"register: {name!r} is already in the rule namespace")
    setattr(RAW, name, raw)
    _DIFFERENTIABLE_EXTRA[name] = diff


_CACHE = {}


class _Batching:
    """Filled by the batching layer (``chainrule._batched``): ``batched`` is its class of
    batched values, ``namespace()`` the batched namespace."""

    batched = None
    namespace = None


BATCHING = _Batching()


def batched():
    """The batched namespace (rules run on a batch of cotangents or tangents)."""
    if BATCHING.namespace is None:
        raise RuntimeError("the batched namespace is not loaded (import chainrule._batched)")
    return BATCHING.namespace()


def differentiable():
    """The namespace of differentiable ops with RAW's names (built once, and again when
    more names are registered)."""
    key = len(_DIFFERENTIABLE_EXTRA)
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = _build_differentiable()
    return _CACHE[key]


def _build_differentiable():
    from . import _creation as c
    from . import ops

    def const(fn):
        return lambda *a, **k: fn(*a, **k)

    def prod_others(x, dim):
        # prod_{j != i} x_j, differentiably: replace x_i by 1 in the i-th of n copies of the
        # reduced entries and take the product of each copy (O(n^2), exact with zeros).
        shape = x.shape
        dims = tuple(range(len(shape))) if dim is None else dim
        lead = [d for d in range(len(shape)) if d not in dims]
        moved = ops.permute(x, lead + list(dims))
        moved_shape = moved.shape
        flat = ops.reshape(moved, tuple(shape[d] for d in lead) + (-1,))
        n = flat.shape[-1]
        copies = ops.expand(ops.unsqueeze(flat, -2), flat.shape[:-1] + (n, n))
        others = ops.where(np.eye(n, dtype=bool), 1.0, copies).prod(dim=-1)
        inverse = np.argsort(lead + list(dims))
        return ops.permute(ops.reshape(others, moved_shape), tuple(inverse))

    return SimpleNamespace(
        where=ops.where, exp=ops.exp, log=ops.log, sin=ops.sin, cos=ops.cos, abs=ops.abs,
        sign=ops.sign, sigmoid=ops.sigmoid,
        zeros_like=const(c.zeros_like), ones_like=const(c.ones_like),
        zeros=lambda shape, dtype: c.zeros(shape, dtype=dtype),
        ones=lambda shape, dtype: c.ones(shape, dtype=dtype),
        eye=lambda n, m=None, dtype=None: c.eye(n, m, dtype=dtype),
        cast=ops.to_dtype,
        reshape=ops.reshape, expand=ops.broadcast_to, unsqueeze=ops.unsqueeze,
        squeeze=lambda x, dim: ops.squeeze(x, dim), transpose=ops.transpose,
        permute=ops.permute, mT=lambda x: ops.transpose(x, -1, -2),
        sum=ops.sum, mean=ops.mean, prod_others=prod_others,
        matmul=ops.matmul, trace=ops.trace, diag=ops.diag, diagonal=ops.diagonal,
        diagonal_scatter=ops.diagonal_scatter, tril=ops.tril, triu=ops.triu,
        index_put=ops.index_put, einsum=ops.einsum, softmax=ops.softmax,
        log_softmax=ops.log_softmax,
        cat=ops.cat, stack=ops.stack,
        **_DIFFERENTIABLE_EXTRA,
    )
