"""In-place updates (``x.mul_(2)``, ``x[i] = v``, ``x.copy_(y)``) with PyTorch's semantics.

An in-place update is recorded as the out-of-place op applied to the tensor's old value,
whose result becomes the tensor's new value and history; the shared version counter is
bumped, so nodes that saved the old value refuse to use it.

An update through a view (``y[0].mul_(3)``, ``buf[1:].copy_(z)``, ``x.diagonal().zero_()``)
rewrites the history of the view's root (the base that is not itself a view), as PyTorch's
CopySlices does: the root's new value is its old value with the viewed entries replaced,

    root_new = index_put(root_old, view_positions, f(view(root_old)))

so the gradient flows to the root's old value everywhere outside the view and through
``f`` inside it, whichever side requires grad. ``view_positions`` are found by replaying
the view ops on an array of flat positions, so every view op (slices, transposes,
reshapes, diagonals) is handled by one rule. The view and every other view of the root
then rebuild their history from the root's new one when next used.
"""

from __future__ import annotations

import numpy as np

from . import _dispatch, _dual, _state
from ._batched import Batched, write_journal
from ._dispatch import CUSTOM_VIEW, apply, refresh_view, torch_can_cast
from ._state import STATE
from ._tensor import INFERENCE_INPLACE, InferenceVersion, Tensor, is_float_dtype, wrap
from .backend import backend_of, beside, numpy_dtype, on_device_of
from .ops.elementwise import where
from .ops.indexing import INDEX_PUT
from .ops.searching import _torch_name
from .ops.shape import RESHAPE

LEAF = "a leaf Variable that requires grad is being used in an in-place operation."
# PyTorch's error for an in-place update of an unbatched tensor with a batched value inside
# vmap (each sample would write it in turn: vmap would otherwise evaluate once per sample
# and leave the last sample's, or the accumulated, value)
VMAP_INPLACE = (
    "{name}: vmap: inplace arithmetic(self, *extra_args) is not possible because there exists "
    "a Tensor `other` in extra_args that has more elements than `self`. This happened due "
    "to `other` being vmapped over but `self` not being vmapped over in a vmap. Please try "
    "to use out-of-place operators instead of inplace arithmetic.")
VIEW_OF_LEAF = ("a view of a leaf Variable that requires grad is being used in an in-place "
                "operation.")
NO_GRAD_VIEW = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
    "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
    "your code by moving both the view and the inplace either both inside the no_grad block "
    "(if you don't want the inplace to be tracked) or both outside (if you want the inplace "
    "to be tracked)."
)
OVERLAP = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)


#: Called with a tensor just before its memory is written in place, while a caller above
#: asks for it (autograd.graph's allow_mutation_on_saved_tensors keeps saved values there);
#: an empty list, skipped, otherwise
BEFORE_WRITE = []


def before_write(t):
    """Run the :data:`BEFORE_WRITE` hooks on ``t`` (call it only when the list is not empty:
    the hot paths test ``if BEFORE_WRITE`` first)."""
    for hook in BEFORE_WRITE:
        hook(t)


def check(t, name):
    """Raise, naming the op, when ``t`` may not be updated in place: an inference tensor
    outside inference mode (before anything is written), or with grad mode on a leaf that
    requires grad or a view of one. Then the :data:`BEFORE_WRITE` hooks run."""
    if t._vc.__class__ is InferenceVersion and not STATE.inference:
        raise RuntimeError(f"{name}: {INFERENCE_INPLACE}")
    if BEFORE_WRITE:
        before_write(t)
    journal = write_journal()
    if journal is not None:  # inside a batched vmap attempt (see WriteJournal)
        journal.note(t)
    if not STATE.enabled:
        return
    ex = t._extra
    if ex and ex.get("custom_view") is not None:
        custom = ex["custom_view"]
        raise RuntimeError(f"{name}: " + CUSTOM_VIEW.format(
            nr=custom[1], name=custom[0], what="is being modified inplace"))
    root = ex.get("view_of") if ex else None
    if root is None:
        if t._requires_grad and t._grad_fn is None:
            raise RuntimeError(
                f"{name}: {LEAF} Wrap the update in `with chainrule.no_grad():` (as "
                "optimizers do) or use an out-of-place op.")
        return
    if root._requires_grad and root._grad_fn is None:
        raise RuntimeError(
            f"{name}: {VIEW_OF_LEAF} Update a clone() of the leaf instead, or do it under "
            "chainrule.no_grad().")
    if ex.get("no_grad_view"):
        raise RuntimeError(f"{name}: {NO_GRAD_VIEW}")


def recording(t, *others):
    """True when an in-place update of ``t`` that reads ``others`` must be recorded (a
    graph or a forward-mode tangent to update); False when plain NumPy may write in place."""
    if STATE.dual_level and (_dual.tangent_of(t) is not None
                                 or any(_dual.tangent_of(o) is not None for o in others)):
        return True
    # a tensor that cannot require grad (int, bool) takes the values only, as PyTorch's
    if not STATE.enabled:
        return False
    if t._requires_grad:
        return True
    if not any(isinstance(o, Tensor) and o._requires_grad for o in others):
        return False
    if getattr(t._data.dtype, "kind", None) == "c":  # PyTorch's complex tensor would
        raise RuntimeError(  # take the gradient: chainrule cannot, and says so
            "in-place update of a complex tensor with a tensor that requires grad: "
            "chainrule is real-valued and does not differentiate through complex values. "
            "Detach the value, or update under chainrule.no_grad()")
    return is_float_dtype(t._data.dtype)


def update(t, compute, name, *others):
    """Set ``t`` to ``compute(old)``, where ``old`` is ``t``'s current value (a Tensor
    carrying its history) and ``others`` are the other tensors the update reads; record
    the change when it must be (:func:`recording`). Returns ``t``.

    Raises RuntimeError naming ``name`` for a leaf that requires grad (or a view of one),
    a result whose shape or dtype cannot be written into ``t``, and a view whose entries
    overlap in memory (``expand``).
    """
    if not recording(t, *others):
        return write_in_place(t, compute(t), name)
    check(t, name)
    ex = t._extra
    if STATE.enabled and ex is not None and ex.get("view_of") is not None:
        return _update_view(t, compute, name, ex)
    tangent = ex.get("tangent") if ex else None
    if STATE.enabled:
        old = _history_copy(t)
        result = compute(old)
        if old._requires_grad and not result._requires_grad:
            # a result without a gradient (a comparison, a random fill) replaces a value
            # that had one: the tensor's history is the update, whose gradient is zero
            # (PyTorch's EqBackward0, UniformBackward0), not its old history
            result = where(wrap(np.zeros(tuple(t.shape), dtype=np.bool_)), old, result)
    else:
        result = compute(t)
    _write(t, result, name)
    became = not t._requires_grad and result._requires_grad
    if result._requires_grad and result._grad_fn is not None:
        t._grad_fn = result._grad_fn
        t._output_nr = result._output_nr
        t._requires_grad = True
    new_tangent = result._extra.get("tangent") if result._extra else None
    if new_tangent is not None or tangent is not None:  # forward mode: the tangent moves on
        t._extra_set("tangent", new_tangent)
        _view_tangents(t)
    t._vc[0] += 1
    if became:
        _tell_views(t)
    _follow_retain_grad(t)
    return t


def _history_copy(t):
    """A Tensor holding a copy of ``t``'s data with ``t``'s history (and tangent): values
    saved by the update's node stay intact when ``t``'s data is overwritten."""
    if t._extra is not None:
        refresh_view(t)
    d = t._data
    old = wrap(np.array(d, copy=True) if d.__class__ is np.ndarray
               else backend_of(d).xp.asarray(d, copy=True))
    old._requires_grad = t._requires_grad
    old._grad_fn = t._grad_fn
    old._output_nr = t._output_nr
    old._acc = t._acc
    tangent = t._extra.get("tangent") if t._extra else None
    if tangent is not None:
        old._extra = {"tangent": tangent}
    return old


# Updates that write one value everywhere: through a view whose entries share memory
# (expand) every copy of an entry gets the same value, so PyTorch allows them when they
# are not recorded
_FILLS = frozenset({"zero_", "fill_"})


def view_positions(root, path, name=None):
    """Flat positions in ``root`` of the entries of the view made by ``path`` (an int
    array of the view's shape); RuntimeError when two entries share one position (unless
    the unrecorded update ``name`` is a fill)."""
    positions = np.arange(root._data.size).reshape(root._data.shape)
    for op, attrs in path:
        positions = op.forward(positions, *attrs)
    positions = np.asarray(positions)
    if positions.size > 1 and name not in _FILLS \
            and np.unique(positions).size != positions.size:
        raise RuntimeError(OVERLAP)
    return positions


def _update_view(t, compute, name, ex):
    root, path = ex["view_of"], ex["path"]
    positions = view_positions(root, path)  # recorded: a fill raises too, as PyTorch's
    old_root = _history_copy(root)
    base = _dual_base(root, t)
    if base is not None:
        # the tangent is make_dual's view's own (the root has none, as in PyTorch): the
        # update reads t from that view, and its tangent moves on there
        old_view = old_base = _history_copy(base)
        for op, attrs in path[len(base._extra["path"]):]:
            old_view = apply(op, (old_view,), attrs)
    else:
        old_view = old_root
        for op, attrs in path:
            old_view = apply(op, (old_view,), attrs)
    result = compute(old_view)
    if not isinstance(result, Tensor):
        result = wrap(np.asarray(result))
    _check_result(t, result, name)
    flat = apply(RESHAPE, (old_root,), ((-1,),))
    new_root = apply(RESHAPE, (apply(INDEX_PUT, (flat, result), ((positions,), False)),),
                     (root._data.shape,))
    _write(root, new_root, name)
    became = not root._requires_grad and new_root._requires_grad
    if new_root._requires_grad:
        root._grad_fn = new_root._grad_fn
        root._output_nr = new_root._output_nr
        root._requires_grad = True
    entry = new_root._extra.get("tangent") if new_root._extra else None
    if base is not None:
        bp = base._extra["path"]
        rel = view_positions(old_base, path[len(bp):])
        new_base = apply(RESHAPE, (apply(INDEX_PUT, (apply(RESHAPE, (old_base,), ((-1,),)),
                                                     result), ((rel,), False)),),
                         (tuple(base.shape),))
        base._extra_set("tangent", new_base._extra.get("tangent") if new_base._extra else None)
        root._extra_set("tangent", None)
        for v in {*_live_views(root), t}:
            if v is not base and _starts_with(v._extra["path"], bp):
                replay = base
                with _state.enable_grad():
                    for op, attrs in v._extra["path"][len(bp):]:
                        replay = apply(op, (replay,), attrs)
                v._extra["tangent"] = replay._extra.get("tangent") if replay._extra else None
    elif entry is not None or (root._extra and root._extra.get("tangent") is not None):
        # forward mode: the root's tangent moves on, and the view's is the view of it
        # (replayed through the view ops' JVP rules, so a batch of tangents works too)
        root._extra_set("tangent", entry)
        _view_tangents(root, t)
    root._vc[0] += 1
    if became:
        _tell_views(root)
    refresh_view(t)
    _follow_retain_grad(root)
    return t


def _check_result(t, result, name):
    """The value written into ``t`` must broadcast to ``t``'s shape and cast to its dtype
    within its kind (PyTorch: a float result is not written into an int tensor)."""
    shape = tuple(t.shape)
    try:
        ok = np.broadcast_shapes(tuple(result.shape), shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise RuntimeError(f"{name}: output with shape {list(shape)} doesn't match the "
                           f"broadcast shape of the result, {list(result.shape)}")
    src, dst = np.dtype(numpy_dtype(result.dtype)), np.dtype(numpy_dtype(t.dtype))
    if not torch_can_cast(src, dst):
        raise RuntimeError(f"{name}: result type {_torch_name(src)} can't be cast to the "
                           f"desired output type {_torch_name(dst)}")


def _write(t, result, name):
    """Copy ``result``'s values into ``t``'s storage (through its root when ``t``'s array is
    a read-only view, such as NumPy's diagonal)."""
    _check_result(t, result, name)
    if BEFORE_WRITE:
        before_write(t)
    data = result._data if isinstance(result, Tensor) else result
    dest = t._data
    if isinstance(data, Batched) and not isinstance(dest, Batched):
        raise RuntimeError(VMAP_INPLACE.format(name=name))
    if not isinstance(dest, np.ndarray) and not isinstance(dest, np.generic):
        _write_foreign(t, dest, data)
        return
    if not isinstance(dest, np.ndarray):
        t._data = dest = np.array(dest)
    if hasattr(data, "shape") and not isinstance(data, (np.ndarray, np.generic)):
        data = backend_of(data).to_numpy(data)  # copy_ from a GPU (or Dask): a host copy
    if dest.flags.writeable:
        np.copyto(dest, data, casting="unsafe")
        return
    ex = t._extra
    root = ex.get("view_of") if ex else None
    if root is None or not root._data.flags.writeable:
        raise RuntimeError(f"{name}: the tensor's memory is read-only (it was made from a "
                           "read-only array); update a clone() instead")
    positions = view_positions(root, ex["path"], name)
    root._data[np.unravel_index(positions, root._data.shape)] = np.broadcast_to(
        data, positions.shape)


def _write_foreign(t, dest, data):
    """Another backend's array: a lazy one (Dask) takes the new value as a new graph (its
    arrays are values, with no shared memory to write through); others are written in
    place with ``__setitem__`` (CuPy, Array API libraries)."""
    b = backend_of(dest)
    xp = b.xp
    if not hasattr(data, "shape"):
        data = xp.asarray(data, dtype=dest.dtype, **on_device_of(dest))
    elif data.__class__ is np.ndarray:  # made on the host (a random draw): copied there
        data = beside(data, dest)
    data = xp.astype(xp.broadcast_to(data, dest.shape), dest.dtype)
    if b.lazy:
        t._data = data
    else:
        dest[...] = data


def write_in_place(t, values, name):
    """Write ``values`` into ``t`` without recording (grad mode off or nothing requires
    grad), bumping the version counter."""
    check(t, name)
    _write(t, values if isinstance(values, Tensor) else wrap(np.asarray(values)), name)
    t._vc[0] += 1
    return t


def _view_tangents(root, *more):
    """Forward mode: after ``root``'s tangent changed in place, each of its views (and
    ``more``) takes the view of the new tangent, replayed through the view ops' JVP rules
    (so a batch of tangents works too)."""
    views = _live_views(root)
    for v in {*views, *more}:
        replay = root
        with _state.enable_grad():
            for op, attrs in v._extra["path"]:
                replay = apply(op, (replay,), attrs)
        v._extra["tangent"] = replay._extra.get("tangent") if replay._extra else None


def _tell_views(root):
    """``root`` now requires grad: its views made while it did not must record too."""
    for v in _live_views(root):
        v._requires_grad = True


def _live_views(root):
    """The views of ``root`` still alive (the root holds them by weak reference)."""
    refs = root._extra.get("views") if root._extra else None
    return [v for v in (r() for r in refs or ()) if v is not None]


def _follow_retain_grad(t):
    retain = t._extra.get("retains_grad") if t._extra else None
    if retain is not None:
        retain(t)


def reshape_in_place(t, make, name):
    """The in-place view ops that change a tensor's shape (``unsqueeze_``, ``squeeze_``,
    ``t_``, ``transpose_``): ``t`` becomes the view ``make(t)`` and keeps its identity, its
    history continuing through that view's node (PyTorch's in-place metadata change).
    Raises as other in-place updates do (a leaf that requires grad), and
    NotImplementedError for a view or a tensor with live views (their shapes would no
    longer agree)."""
    check(t, name)
    ex = t._extra
    if ex and (ex.get("view_of") is not None or _live_views(t)):
        raise NotImplementedError(
            f"{name}: changing the shape in place of a view, or of a tensor that has views, "
            "is not supported; use the out-of-place op")
    new = make(t)
    t._data = new._data
    if new._requires_grad:
        t._grad_fn, t._output_nr, t._requires_grad = new._grad_fn, new._output_nr, True
    tangent = new._extra.get("tangent") if new._extra else None
    if tangent is not None:
        t._extra_set("tangent", tangent)
    t._vc[0] += 1
    return t


def _starts_with(path, prefix):
    return len(path) >= len(prefix) and all(
        a[0] is b[0] and a[1] == b[1] for a, b in zip(path, prefix))


def _dual_base(root, t):
    """When the root has no tangent at the active level but ``t`` has: the view of the root
    that make_dual made, which ``t`` is or is a view of (the tangent-carrying view nearest
    the root on t's path; a mark set by make_dual would be cheaper and exact)."""
    if not STATE.dual_level or _dual.stored_tangent(root) is not None \
            or _dual.stored_tangent(t) is None:
        return None
    path, best = t._extra["path"], None
    for v in {*_live_views(root), t}:
        bp = v._extra.get("path") if v._extra else None
        if bp and _dual.stored_tangent(v) is not None and _starts_with(path, bp) \
                and (best is None or len(bp) < len(best._extra["path"])):
            best = v
    return best


# PyTorch's functions whose out= must have the result's dtype exactly, where the others
# cast (measured against torch 2.13: add, exp, sum, cat, pow, ... cast; these raise)
_EXACT_OUT = frozenset((
    "max", "min", "sort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode",
    "cummax", "cummin", "amax", "amin", "matmul", "mm", "bmm", "baddbmm", "addbmm", "addmm",
    "addmv", "mv", "chain_matmul", "matrix_power", "inverse", "dot", "vdot", "inner", "where",
    "gather", "take_along_dim", "index_select", "masked_select", "diag", "tril", "triu",
    "clamp", "clip", "quantile", "nanquantile", "norm", "cross", "histc", "histogram",
    "logcumsumexp", "renorm", "nan_to_num", "heaviside", "float_power", "round", "sign", "sgn",
    "frac", "floor", "ceil", "trunc", "fix", "neg", "negative", "abs", "absolute",
    "conj_physical", "argmax", "argmin", "multinomial", "searchsorted", "bucketize",
    "isposinf", "isneginf", "signbit", "all", "any"))
_C_NAMES = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
            "uint8": "unsigned char", "float64": "double", "float32": "float",
            "float16": "c10::Half", "bool": "bool", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>"}


_EXACT_IN_TUPLE_ONLY = frozenset(("max", "min", "median", "nanmedian"))  # (values, indices)


def _exact_out_dtype(name, src, dst, in_tuple):
    """RuntimeError where PyTorch's ``name`` takes no ``out`` of another dtype than its
    result's ``src`` (its indices int64, its tests bool, most of its kernels exact; max and
    min over a dim, not of two tensors or of everything)."""
    if name in _EXACT_OUT and (in_tuple or name not in _EXACT_IN_TUPLE_ONLY):
        raise RuntimeError(f"{name}: Expected out tensor to have dtype "
                           f"{_C_NAMES.get(src.name, src.name)}, but got "
                           f"{_C_NAMES.get(dst.name, dst.name)} instead")


def write_out(out, result, name):
    """PyTorch's ``out=``: ``result`` written into ``out`` (resized first where its shape
    differs), and ``out`` returned; a tuple ``out`` takes a tuple result entry by entry
    (a namedtuple of the ``out`` tensors back). Raises RuntimeError where grad would be
    needed (PyTorch's ``out=`` functions do not differentiate) or where the result's dtype
    cannot be cast to ``out``'s; TypeError for an ``out`` that is not a Tensor."""
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"{name}(): argument 'out' must be a tuple of {len(result)} "
                            f"Tensors, not {type(out).__name__}")
        for o, r in zip(out, result):  # every entry checked before any is written
            _check_out(o, r, name, True)
        outs = [_write_checked(o, r, name) for o, r in zip(out, result)]
        return type(result)(*outs) if hasattr(result, "_fields") else tuple(outs)
    _check_out(out, result, name, False)
    return _write_checked(out, result, name)


def _check_out(out, result, name, in_tuple):
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' (position 1) must be Tensor, not "
                        f"{type(out).__name__}")
    if _state.is_grad_enabled() and (result._requires_grad or out._requires_grad):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires "
                           "grad.")
    src, dst = np.dtype(numpy_dtype(result.dtype)), np.dtype(numpy_dtype(out.dtype))
    if src != dst:
        _exact_out_dtype(name, src, dst, in_tuple)
    if not torch_can_cast(src, dst):
        raise RuntimeError(f"{name}: result type {_torch_name(src)} can't be cast to the "
                           f"desired output type {_torch_name(dst)}")


def _write_checked(out, result, name):
    if tuple(out.shape) != tuple(result.shape):
        out.resize_(tuple(result.shape))
    return write_in_place(out, result, name)


_dispatch.IN_PLACE.update, _dispatch.IN_PLACE.write_out = update, write_out
