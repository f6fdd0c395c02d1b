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
_GENERIC = {}  # name -> fn(xp) giving the raw version on any backend (from register(xp=))


def _missing(name, backend):
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"the derivative rules need {name}, which the {backend} "
                                  "backend does not provide")
    return refuse


def _has(xp, name):
    return name in vars(xp)


def make_raw(backend):
    """The rule namespace on arrays of ``backend`` (not NumPy: that is :data:`RAW`),
    generated from its Array API namespace ``xp`` and the generic versions of registered
    names. A name the backend cannot provide raises NotImplementedError when called,
    naming it and the backend."""
    xp = backend.xp
    name = backend.name

    def pick(attr):
        return getattr(xp, attr) if _has(xp, attr) else _missing(attr, name)

    def swap(x, a, b):
        axes = list(range(x.ndim))
        axes[a], axes[b] = axes[b], axes[a]
        return xp.permute_dims(x, tuple(axes))

    def squeeze(x, dim=None):
        if dim is None:
            dim = tuple(i for i, n in enumerate(x.shape) if n == 1)
        return xp.squeeze(x, axis=dim)

    ns = dict(
        where=xp.where, exp=xp.exp, log=xp.log, sin=xp.sin, cos=xp.cos, abs=xp.abs,
        sign=xp.sign, sigmoid=pick("expit"),
        zeros_like=xp.zeros_like, ones_like=xp.ones_like,
        zeros=lambda shape, dtype: xp.zeros(shape, dtype=dtype),
        ones=lambda shape, dtype: xp.ones(shape, dtype=dtype),
        eye=lambda n, m=None, dtype=None: xp.eye(n, m, dtype=dtype),
        cast=lambda x, dtype: xp.astype(x, dtype, copy=False),
        reshape=xp.reshape, expand=xp.broadcast_to, unsqueeze=xp.expand_dims,
        squeeze=squeeze, transpose=pick("swapaxes") if _has(xp, "swapaxes") else swap,
        permute=xp.permute_dims, mT=xp.matrix_transpose,
        sum=lambda x, dim, keepdim: xp.sum(x, axis=dim, keepdims=keepdim),
        mean=lambda x, dim, keepdim: xp.mean(x, axis=dim, keepdims=keepdim),
        prod_others=_missing("prod_others", name),
        matmul=xp.matmul, trace=pick("trace"), diag=pick("diag"), diagonal=pick("diagonal"),
        tril=pick("tril"), triu=pick("triu"), einsum=pick("einsum"),
        cat=lambda xs, dim: xp.concat(xs, axis=dim),
        stack=lambda xs, dim: xp.stack(xs, axis=dim),
    )
    for key in vars(RAW):
        if key not in ns:
            ns[key] = _GENERIC[key](xp) if key in _GENERIC else _missing(key, name)
    return SimpleNamespace(**ns)


def raw_for(backend):
    """The first-order rule namespace of ``backend`` (cached; :data:`RAW` for NumPy)."""
    if backend.name == "numpy":
        return RAW
    key = ("raw", backend.name, len(vars(RAW)))
    ns = _CACHE.get(key)
    if ns is None:
        ns = _CACHE[key] = make_raw(backend)
    return ns


def register(name, raw, diff, generic=None):
    """Add ``name`` to both namespaces: ``raw`` works on arrays (first-order backward),
    ``diff`` is the differentiable chainrule function with the same meaning. The op
    families (``chainrule.ops``, ``chainrule.linalg``) call this for the names their rules
    use; this module imports none of them."""
    if hasattr(RAW, name):
        raise ValueError(f"register: {name!r} is already in the rule namespace")
    setattr(RAW, name, raw)
    _DIFFERENTIABLE[name] = diff
    if generic is not None:  # generic(xp) -> the raw version on any backend
        _GENERIC[name] = generic
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
