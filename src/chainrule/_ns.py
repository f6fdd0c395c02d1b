"""The namespaces ``F`` that derivative rules compute with.

Every name a rule may use is declared once here (or by an op family through
:func:`register`), as a function of a backend's array namespace ``xp``: the namespace of a
backend is generated from these declarations, never listed by hand.

- :data:`RAW`: the declarations bound to NumPy, for a first-order backward on plain
  arrays (no graph, full speed); :func:`raw_for` gives the same on any backend (Dask,
  CuPy, Array API libraries), with constructors on the backend's device.
- :func:`differentiable`: the same names over chainrule's own ops on Tensors, so that a
  backward pass run with it is itself recorded (higher-order derivatives). The ops layer
  gives them (:func:`register_differentiable`); :func:`differentiable` refuses to run
  while a declared name lacks one.

Rules use only these names (and Python operators), which is what lets one formula serve
every namespace; :func:`chainrule._table.defop` checks a rule's ``F.<name>`` uses against
:func:`names` when the op is declared.
"""

from __future__ import annotations

from types import SimpleNamespace

from ._tensor import wrap
from .backend import NUMPY, _chunked_broadcast, on_device_of


def _prod_others(xp, x, dim):
    """prod_{j != i} x_j along ``dim`` (all entries when None), exact with zeros."""
    shape = x.shape
    if dim is None:
        return xp.reshape(_prod_others(xp, xp.reshape(x, (-1,)), (0,)), shape)
    n, k = x.ndim, len(dim)
    last = tuple(range(n - k, n))
    moved = xp.moveaxis(x, dim, last)
    flat = xp.reshape(moved, moved.shape[: n - k] + (-1,))
    ones = xp.ones_like(flat[..., :1])
    left = xp.cumulative_prod(xp.concat([ones, flat[..., :-1]], axis=-1), axis=-1)
    right = xp.flip(xp.cumulative_prod(
        xp.concat([ones, xp.flip(flat[..., 1:], axis=-1)], axis=-1), axis=-1), axis=-1)
    return xp.moveaxis(xp.reshape(left * right, moved.shape), last, dim)


def _squeeze(xp):
    def squeeze(x, dim=None):
        if dim is None:
            dim = tuple(i for i, n in enumerate(x.shape) if n == 1)
        return xp.squeeze(x, axis=dim)

    return squeeze


def make_onehot(xp, dev, lazy=False):
    """onehot(index, n, dim, dtype): ``dtype`` array, 1 where the position along the new
    axis ``dim`` (of length ``n``) equals ``index`` (an integer array), else 0."""
    def onehot(index, n, dim, dtype):
        index = xp.expand_dims(index, axis=dim)
        shape = [1] * index.ndim
        shape[dim] = n
        positions = xp.reshape(xp.arange(n, dtype=index.dtype, **(dev or on_device_of(index))),
                               tuple(shape))
        return xp.astype(positions == index, dtype)

    return onehot


def _maybe_any(xp, lazy):
    """maybe_any(mask): False only when ``mask`` is known to be all False (a lazy
    backend answers True without computing, so a rule takes its general branch)."""
    if lazy:
        return lambda mask: True
    return lambda mask: bool(xp.any(mask))


# name -> declare(xp, dev, lazy) -> the function rules call. ``dev`` is {} or
# {"device": d}: constructors make arrays on the device of the arrays being
# differentiated (array-api-strict's device1, a GPU).
_DECLARED = {
    "where": lambda xp, dev, lazy: xp.where,
    "exp": lambda xp, dev, lazy: xp.exp,
    "log": lambda xp, dev, lazy: xp.log,
    "sin": lambda xp, dev, lazy: xp.sin,
    "cos": lambda xp, dev, lazy: xp.cos,
    "abs": lambda xp, dev, lazy: xp.abs,
    "sign": lambda xp, dev, lazy: xp.sign,
    "sigmoid": lambda xp, dev, lazy: xp.expit,
    "zeros_like": lambda xp, dev, lazy: xp.zeros_like,
    "ones_like": lambda xp, dev, lazy: xp.ones_like,
    "zeros": lambda xp, dev, lazy: lambda shape, dtype: xp.zeros(shape, dtype=dtype, **dev),
    "ones": lambda xp, dev, lazy: lambda shape, dtype: xp.ones(shape, dtype=dtype, **dev),
    "eye": lambda xp, dev, lazy: lambda n, m=None, dtype=None: xp.eye(n, m, dtype=dtype,
                                                                       **dev),
    "cast": lambda xp, dev, lazy: lambda x, dtype: xp.astype(xp.asarray(x), dtype,
                                                             copy=False),
    "reshape": lambda xp, dev, lazy: xp.reshape,
    "expand": lambda xp, dev, lazy: _chunked_broadcast(xp) if lazy else xp.broadcast_to,
    "unsqueeze": lambda xp, dev, lazy: xp.expand_dims,
    "squeeze": lambda xp, dev, lazy: _squeeze(xp),
    "transpose": lambda xp, dev, lazy: xp.swapaxes,
    "permute": lambda xp, dev, lazy: xp.permute_dims,
    "mT": lambda xp, dev, lazy: xp.matrix_transpose,
    "sum": lambda xp, dev, lazy: lambda x, dim, keepdim: xp.sum(x, axis=dim, keepdims=keepdim),
    "mean": lambda xp, dev, lazy: lambda x, dim, keepdim: xp.mean(x, axis=dim,
                                                                  keepdims=keepdim),
    "prod_others": lambda xp, dev, lazy: lambda x, dim: _prod_others(xp, x, dim),
    "maybe_any": lambda xp, dev, lazy: _maybe_any(xp, lazy),
    "onehot": make_onehot,
    "matmul": lambda xp, dev, lazy: xp.matmul,
    "trace": lambda xp, dev, lazy: xp.trace,
    "diag": lambda xp, dev, lazy: xp.diag,
    "diagonal": lambda xp, dev, lazy: xp.diagonal,
    "diagonal_scatter": lambda xp, dev, lazy: xp.diagonal_scatter,
    "tril": lambda xp, dev, lazy: lambda x, k=0: xp.tril(x, k=k),
    "triu": lambda xp, dev, lazy: lambda x, k=0: xp.triu(x, k=k),
    "einsum": lambda xp, dev, lazy: xp.einsum,
    "cat": lambda xp, dev, lazy: lambda xs, dim: xp.concat(xs, axis=dim),
    "stack": lambda xp, dev, lazy: lambda xs, dim: xp.stack(xs, axis=dim),
}


def _missing(name, backend, error):
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"the derivative rules need {name}, which the {backend} "
                                  f"backend does not provide ({error})")
    return refuse


def _bind(backend, device=None):
    xp = backend.xp
    dev = {} if device is None else {"device": device}
    ns = {}
    for name, declare in _DECLARED.items():
        try:
            ns[name] = declare(xp, dev, backend.lazy)
        except (NotImplementedError, AttributeError) as error:
            ns[name] = _missing(name, backend.name, error)
    return ns


RAW = SimpleNamespace(**_bind(NUMPY))

#: The namespaces of one backend and device each (RAW, raw_for's, differentiable's), by id
#: (kept alive here, so an id is never reused): a backward across devices switches between
#: them per node; a batched namespace (vmap's) is never switched away from.
PER_DEVICE = {id(RAW): RAW}


_DIFFERENTIABLE = {}
_CACHE = {}


def names():
    """Every name the rule namespaces have (what a rule may write after ``F.``)."""
    return _DECLARED.keys()


def raw_for(backend, device=None):
    """The first-order rule namespace of ``backend`` (cached; :data:`RAW` for NumPy),
    generated from the declarations and the backend's ``xp``; constructors make arrays
    on ``device``. A name the backend cannot provide raises NotImplementedError when
    called, naming it and the backend."""
    if backend is NUMPY:
        return RAW
    rules = getattr(backend, "rules", None)
    if rules is not None:  # a backend with its own rule namespace (vmap's batched one)
        return rules()
    key = (backend.name, str(device), len(_DECLARED))
    ns = _CACHE.get(key)
    if ns is None:
        ns = _CACHE[key] = SimpleNamespace(**_bind(backend, device))
        PER_DEVICE[id(ns)] = ns
    return ns


#: How each registered name runs on a batch (the batched namespace reads it): "leading"
#: for a function that broadcasts over leading batch dims, ("leading", (position, keyword))
#: when it also takes an axis argument; absent: once per row of the batch.
BATCH_RULES = {}


def register(name, raw, diff, declare=None, batch=None):
    """Declare ``name`` for the rules: ``raw`` works on NumPy arrays (first-order
    backward), ``diff`` is the differentiable chainrule function with the same meaning,
    ``declare(xp, dev, lazy)`` gives the version on any backend (without it, other
    backends raise NotImplementedError naming the name), ``batch`` how it runs on a batch
    (see :data:`BATCH_RULES`). The op families (``chainrule.ops``, ``chainrule.linalg``)
    call this for the names their rules use; this module imports none of them."""
    if name in _DECLARED:
        raise ValueError(f"register: {name!r} is already in the rule namespace")
    if batch is not None:
        BATCH_RULES[name] = batch

    def bound(xp, dev, lazy):
        if xp is NUMPY.xp:
            return raw
        if declare is None:
            raise NotImplementedError("no generic version is declared")
        return declare(xp, dev, lazy)

    _DECLARED[name] = bound
    setattr(RAW, name, raw)
    _DIFFERENTIABLE[name] = diff
    _CACHE.clear()


def register_differentiable(**fns):
    """The differentiable versions of the declared names (``exp=ops.exp``), given by the
    ops layer."""
    unknown = [n for n in fns if n not in _DECLARED]
    if unknown:
        raise ValueError(f"register_differentiable: {unknown} are not in the rule namespace")
    _DIFFERENTIABLE.update(fns)
    _CACHE.clear()


_CONSTRUCTORS = ("zeros", "ones", "eye")


def differentiable(backend=None, device=None):
    """The namespace of differentiable ops with RAW's names (built once, and again when
    more names are registered); for another ``backend``, its constructors make tensors on
    that backend and ``device``. Raises RuntimeError naming any declared name without a
    differentiable version (a rule using it could not be differentiated again)."""
    if backend is not None and backend is not NUMPY:
        key = ("ns", backend.name, str(device), len(_DECLARED))
        ns = _CACHE.get(key)
        if ns is None:
            raw = raw_for(backend, device)
            fns = dict(vars(differentiable()))
            for name in _CONSTRUCTORS:
                fns[name] = (lambda make: lambda *a, **k: wrap(make(*a, **k)))(
                    getattr(raw, name))
            ns = _CACHE[key] = SimpleNamespace(**fns)
            PER_DEVICE[id(ns)] = ns
        return ns
    ns = _CACHE.get("ns")
    if ns is None:
        missing = sorted(set(_DECLARED) - set(_DIFFERENTIABLE))
        if missing:
            raise RuntimeError(f"the differentiable rule namespace lacks {missing}: "
                               "import chainrule (its op families register them)")
        ns = _CACHE["ns"] = SimpleNamespace(**_DIFFERENTIABLE)
        PER_DEVICE[id(ns)] = ns
    return ns


class NotBatchable(NotImplementedError):
    """Raised inside ``vmap``'s batched evaluation by whatever has no batched version (a
    host copy of a batched value that would mix its samples, results whose shapes differ
    between samples); ``vmap`` then evaluates the function once per sample."""


class _Batching:
    """Filled by the batching layers: ``batched`` is the class of batched values and
    ``namespace()`` the batched namespace (``chainrule._batched``); ``per_sample(fn, *args)``
    runs ``fn(F, *rows)`` once per sample of vmap's batched values in ``args`` and stacks
    the results (``chainrule._vmap_backend``: the fallback of a derivative rule that has
    no batched version)."""

    batched = None
    namespace = None
    per_sample = None


BATCHING = _Batching()


def batched():
    """The batched namespace (rules run on a batch of cotangents or tangents)."""
    if BATCHING.namespace is None:
        raise RuntimeError("the batched namespace is not loaded (import chainrule._batched)")
    return BATCHING.namespace()
