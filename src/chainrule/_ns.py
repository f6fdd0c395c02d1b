"""The namespaces ``F`` that derivative rules compute with.

- :data:`RAW`: NumPy on plain arrays, for a first-order backward (no graph, full speed).
- :func:`differentiable`: the same names over chainrule's own ops on Tensors, so that a
  backward pass run with it is itself recorded (higher-order derivatives).

Rules use only the names registered here (and Python operators), which is what lets one
formula serve both. This module is a registry of the core: the op families (higher layers)
register the names their rules use, with both versions (:func:`register`), and the ops
layer gives the differentiable versions of the NumPy names below
(:func:`register_differentiable`). ``tests/test_table.py`` checks that both namespaces
define them all.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from scipy import special


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
    tril=np.tril,
    triu=np.triu,
    einsum=lambda eq, *ops: np.einsum(eq, *ops, optimize=len(ops) > 2),
    cat=lambda xs, dim: np.concatenate(xs, axis=dim),
    stack=lambda xs, dim: np.stack(xs, axis=dim),
)


_DIFFERENTIABLE = {}
_CACHE = {}


def register(name, raw, diff):
    """Add ``name`` to both namespaces: ``raw`` works on arrays (first-order backward),
    ``diff`` is the differentiable chainrule function with the same meaning. The op
    families (``chainrule.ops``, ``chainrule.linalg``) call this for the names their rules
    use; this module imports none of them."""
    if hasattr(RAW, name):
        raise ValueError(f"register: {name!r} is already in the rule namespace")
    setattr(RAW, name, raw)
    _DIFFERENTIABLE[name] = diff
    _CACHE.clear()


def register_differentiable(**fns):
    """The differentiable versions of names RAW already has (``exp=ops.exp``), given by
    the ops layer."""
    unknown = [n for n in fns if not hasattr(RAW, n)]
    if unknown:
        raise ValueError(f"register_differentiable: {unknown} are not in the rule namespace")
    _DIFFERENTIABLE.update(fns)
    _CACHE.clear()


def differentiable():
    """The namespace of differentiable ops with RAW's names (built once, and again when
    more names are registered). Raises RuntimeError naming any RAW name without a
    differentiable version (a rule using it could not be differentiated again)."""
    ns = _CACHE.get("ns")
    if ns is None:
        missing = sorted(set(vars(RAW)) - set(_DIFFERENTIABLE))
        if missing:
            raise RuntimeError(f"the differentiable rule namespace lacks {missing}: "
                               "import chainrule (its op families register them)")
        ns = _CACHE["ns"] = SimpleNamespace(**_DIFFERENTIABLE)
    return ns


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
