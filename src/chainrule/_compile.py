"""``chainrule.compile``: a function traced once per input signature, then replayed as
the NumPy calls it made (see :mod:`chainrule._trace`)."""

from __future__ import annotations

import functools
import threading
import weakref

import numpy as np

from . import _compat_names, _dispatch, _trace
from . import func as _func
from ._batched import Batched
from ._pytree import tree_flatten, tree_unflatten
from ._state import SLOW, STATE
from ._tensor import Tensor, wrap

_ndarray = np.ndarray
_EAGER = "eager"  # a cache entry: this signature runs the function itself


class _Entry:
    """What one input signature replays: the generated ``run``, how outputs are built, and
    the guards (closure cells and globals the function read, captured tensors' arrays)."""

    __slots__ = ("run", "spec", "leaves", "checked", "impure", "guards", "single")

    def __init__(self, run, spec, leaves, impure, guards):
        self.run, self.spec, self.leaves, self.impure = run, spec, leaves, impure
        self.guards = guards
        self.checked = False  # replayed once beside a run of the function, equal
        self.single = spec is None and leaves[0][0] == "slot"  # one tensor out

    def holds(self):
        for kind, where, name, value in self.guards:
            if kind == 0:
                if where.cell_contents is not value:
                    return False
            elif kind == 1:
                if where.get(name, _MISSING) is not value:
                    return False
            else:
                t = where()
                if t is not None and t._data is not value:
                    return False
        return True


_MISSING = object()


class CompiledFunction:
    """``fn`` compiled (see :func:`compile`). ``why`` says, per input signature that runs
    the function itself, the reason; ``cache`` holds one entry per signature."""

    def __init__(self, fn, fullgraph=False):
        self._fn = fn
        self._fullgraph = fullgraph
        self.cache = {}
        self.why = {}
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args, **kwargs):
        if STATE.flags & SLOW or _trace.LOCAL.tracer is not None:
            return self._fn(*args, **kwargs)
        if not kwargs:  # the common call: tensors only, each once
            key = [STATE.flags]
            for x in args:
                if x.__class__ is not Tensor:
                    break
                d = x._data
                if d.__class__ is not _ndarray or x._requires_grad or x._extra is not None:
                    break
                key.append((d.shape, d.dtype, d.strides, d.base is None))
            else:
                if len(args) < 2 or len({id(x) for x in args}) == len(args):
                    key = tuple(key)
                    entry = self.cache.get(key)
                    if entry is not None and entry is not _EAGER and entry.checked \
                            and not entry.impure and entry.holds():
                        if entry.single:
                            return wrap(entry.run(*[x._data for x in args])[0])
                        return _build(entry, entry.run(*[x._data for x in args]), args)
        leaves, spec = tree_flatten((args, kwargs))
        key, arrays = _signature(leaves, spec)
        if key is None:
            return self._fn(*args, **kwargs)
        entry = self.cache.get(key)
        if entry is not None and entry is not _EAGER and not entry.holds():
            entry = None  # what it read changed: traced again
        if entry is None:
            return self._trace(key, args, kwargs, leaves, spec, arrays)
        if entry is _EAGER:
            return self._fn(*args, **kwargs)
        if entry.impure and _overlapping(arrays):
            return self._fn(*args, **kwargs)
        result = _build(entry, entry.run(*arrays), leaves)
        if not entry.checked:  # the second call: the replay must equal a run, bit for bit
            expected = self._fn(*args, **kwargs)
            if not _same(result, expected):
                self._give_up(key, "a replay differed from a run of the function (it reads "
                                   "something other than its arguments that changed: "
                                   "NumPy's random functions, an attribute)")
                return expected
            entry.checked = True
        return result

    def __get__(self, obj, objtype=None):  # as a method's decorator: bound to obj
        return self if obj is None else functools.partial(self, obj)

    def _give_up(self, key, why):
        self.cache[key] = _EAGER
        self.why[key] = why
        if self._fullgraph:
            raise RuntimeError(f"compile(fullgraph=True): {self.__name__} cannot be "
                               f"replayed: {why}")

    def _trace(self, key, args, kwargs, leaves, spec, arrays):
        tr = _trace.Tracer()
        traced = {}
        tleaves = []
        for x in leaves:
            if isinstance(x, Tensor):
                t = traced.get(id(x))
                if t is None:
                    t = traced[id(x)] = _traced_copy(x, tr)
                tleaves.append(t)
            else:
                tleaves.append(x)
        in_slots = [t._data.slot for t in traced.values()]
        targs, tkwargs = tree_unflatten(tleaves, spec)
        state = STATE
        state.set_modes(tracing=True)
        _trace.LOCAL.tracer = tr
        _hook(True)
        try:
            with _func.watch_randomness():
                result = self._fn(*targs, **tkwargs)
        except Exception as error:  # noqa: BLE001 - the run on traced arrays failed
            # where a run on NumPy's may not (a check of a type the library does not know
            # for traced data): the function itself, unless the failed run wrote into
            # memory it did not make (a second run would write twice)
            for x in traced.values():
                if x._data.__class__ is _trace.TracedArray:
                    x._data = x._data.value
            if _writes_outside(tr, arrays):
                raise
            self._give_up(key, f"tracing raised {type(error).__name__}: {error}")
            return self._fn(*args, **kwargs)
        finally:
            _hook(False)
            _trace.LOCAL.tracer = None
            state.set_modes(tracing=False)
            tr.open = False
        outs, ospec = tree_flatten(result)
        guards = _reads(self._fn) + tr.captured
        originals = {id(t): x for x, t in zip(leaves, tleaves) if isinstance(x, Tensor)}
        out_leaves = []  # ("in", i) an input returned, ("slot", n), ("const", v)
        out_slots = []
        for o in outs:
            if isinstance(o, Tensor):
                d = o._data
                if id(o) in originals:
                    out_leaves.append(("in", leaves.index(originals[id(o)])))
                    continue
                if d.__class__ is not _trace.TracedArray or d.tracer is not tr:
                    tr.refuse("an output tensor does not come from the inputs")
                elif o._requires_grad:
                    tr.refuse("an output requires grad (a compiled function returns no "
                              "graph)")
                else:
                    out_leaves.append(("slot", len(out_slots)))
                    out_slots.append(d.slot)
                    o._data = d.value
                    continue
                if d.__class__ is _trace.TracedArray:
                    o._data = d.value
                out_leaves.append(None)
            elif o is None or isinstance(o, (bool, int, float, str, complex)):
                out_leaves.append(("const", o))
            else:
                tr.refuse(f"an output is a {type(o).__name__}, not a tensor or a number")
                out_leaves.append(None)
        for x in traced.values():  # the traced copies of the inputs hold the real arrays again
            x._data = x._data.value
        final = tree_unflatten([originals.get(id(o), o) for o in outs], ospec)
        if tr.why is None:
            values = [o._data for o, kind in zip(outs, out_leaves)
                      if kind is not None and kind[0] == "slot"]
            if _overlapping(values + list(arrays)):
                tr.refuse("an output shares memory with an input or another output (a view)")
        if tr.why is not None:
            self._give_up(key, tr.why)
            return final
        impure = any(not s.pure for s in tr.steps)
        if impure and _writes_outside(tr, arrays):
            self._give_up(key, "it writes in place into an argument or a tensor it captured "
                               "(a replay beside a run, to check it, would write twice)")
            return final
        run = _trace.compile_steps(tr, in_slots, out_slots)
        if not impure:  # the optimized steps on this call's inputs: the same outputs, in
            # memory of their own
            got = run(*arrays)
            want = [o._data for o, kind in zip(outs, out_leaves) if kind[0] == "slot"]
            if any(not np.array_equal(g, w, equal_nan=True) or g.dtype != w.dtype or
                   g.shape != w.shape for g, w in zip(got, want)) or \
                    _overlapping(got) or any(np.may_share_memory(g, a) for g in got
                                             for a in list(arrays) + run.constants):
                self._give_up(key, "the replay did not reproduce the traced run")
                return final
        self.cache[key] = _Entry(run, ospec, out_leaves, impure, guards)
        return final


def _reads(fn):
    """The guards of what ``fn`` reads besides its arguments: the contents of its closure
    cells and the globals its code names (followed into the functions found there, as far
    as 4 calls deep; chainrule's own globals are not the user's and are left out)."""
    out = []
    _walk_reads(fn, 0, out, set())
    return out


def _walk_reads(fn, depth, out, seen):
    if id(fn) in seen or depth > 4 or len(out) > 200:
        return
    seen.add(id(fn))
    if isinstance(fn, functools.partial):
        for v in (fn.func, *fn.args, *fn.keywords.values()):
            if callable(v):
                _walk_reads(v, depth + 1, out, seen)
        return
    if isinstance(fn, CompiledFunction):
        fn = fn._fn
    f = getattr(fn, "__func__", fn)  # a bound method: its function
    code = getattr(f, "__code__", None)
    if code is None:
        return
    for cell in f.__closure__ or ():
        try:
            v = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        out.append((0, cell, None, v))
        if callable(v) and not isinstance(v, type):
            _walk_reads(v, depth + 1, out, seen)
    if (getattr(f, "__module__", None) or "").startswith("chainrule"):
        return
    g = f.__globals__
    for name in _names(code):
        if name in g:
            v = g[name]
            out.append((1, g, name, v))
            if callable(v) and not isinstance(v, type) and hasattr(v, "__code__"):
                _walk_reads(v, depth + 1, out, seen)


def _names(code):
    names = set(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            names |= _names(c)
    return names


def _traced_copy(x, tr):
    t = wrap(tr.array(x._data))
    t._vc = x._vc
    return t


def _signature(leaves, spec):
    """The cache key of a call (None: run it eagerly) and its input arrays. The key of
    tensor arguments alone, each once, is the one the fast path of
    ``CompiledFunction.__call__`` builds."""
    if spec == _POSITIONAL.get(len(leaves)) and all(
            x.__class__ is Tensor for x in leaves) and \
            len({id(x) for x in leaves}) == len(leaves):
        key = [STATE.flags]
        for x in leaves:
            d = x._data
            if d.__class__ is not _ndarray or x._requires_grad or x._extra is not None:
                return None, None
            key.append((d.shape, d.dtype, d.strides, d.base is None))
        return tuple(key), [x._data for x in leaves]
    key = [_frozen(spec), STATE.flags]
    arrays = []
    seen = {}
    for x in leaves:
        if isinstance(x, Tensor):
            d = x._data
            if d.__class__ is not np.ndarray or x._requires_grad or x._extra is not None:
                return None, None
            first = seen.setdefault(id(x), len(seen))
            key.append((d.shape, d.dtype, d.strides, d.base is None, first))
            if first == len(arrays):
                arrays.append(d)
        else:
            try:
                hash(x)
            except TypeError:
                return None, None
            key.append((type(x), x))
    return tuple(key), arrays


_POSITIONAL = {n: (tuple, [(tuple, [None] * n), (dict, ([], []))]) for n in range(1, 9)}


def _frozen(spec):
    if spec is None:
        return None
    kind, specs = spec
    if issubclass(kind, dict):
        keys, subs = specs
        return kind, tuple(keys), tuple(_frozen(s) for s in subs)
    return kind, tuple(_frozen(s) for s in specs)


def _writes_outside(tr, arrays):
    """Whether a traced in-place step wrote into memory the function did not make (an
    argument's, a captured tensor's)."""
    theirs = list(arrays) + tr.constants
    for w in tr.writes:
        w = getattr(w, "value", w)
        if isinstance(w, (np.ndarray, np.generic)) and \
                any(np.may_share_memory(w, a) for a in theirs):
            return True
    return False


def _overlapping(arrays):
    for i, a in enumerate(arrays):
        for b in arrays[i + 1:]:
            if np.may_share_memory(a, b):
                return True
    return False


def _build(entry, outs, leaves):
    tensors = [leaves[k[1]] if k[0] == "in" else wrap(outs[k[1]]) if k[0] == "slot" else k[1]
               for k in entry.leaves]
    return tree_unflatten(tensors, entry.spec)


def _same(a, b):
    fa, _ = tree_flatten(a)
    fb, _ = tree_flatten(b)
    if len(fa) != len(fb):
        return False
    for x, y in zip(fa, fb):
        if isinstance(x, Tensor) != isinstance(y, Tensor):
            return False
        if isinstance(x, Tensor):
            if x.shape != y.shape or x.dtype != y.dtype or \
                    not np.array_equal(x._data, y._data, equal_nan=True):
                return False
        elif x != y:
            return False
    return True


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,
            options=None, disable=False):
    """Speed up a function of tensors by replaying the NumPy calls it makes (PyTorch's
    ``torch.compile``)."""
    def make(fn):
        if disable or not callable(fn) or isinstance(fn, type) or \
                hasattr(fn, "parameters"):  # an nn.Module: itself
            return fn
        return CompiledFunction(fn, fullgraph=fullgraph)
    if model is None:
        return make
    return make(model)


def _untraced_op(op, inputs, datas, attrs, out, result):
    """The dispatcher's AFTER_OP hook while tracing: an op on tensors none of whose data
    is traced computed a value the replay would take as a constant."""
    tr = _trace.LOCAL.tracer
    if tr is None:
        return
    traced = any(_is_traced(d) for d in datas)
    if traced:  # a tensor's array beside traced data: read by reference in the replay,
        for x in inputs:  # which holds while the tensor keeps that array
            if isinstance(x, Tensor) and x._data.__class__ is _ndarray:
                tr.captured.append((2, weakref.ref(x), None, x._data))
    elif any(isinstance(x, Tensor) for x in inputs):
        tr.refuse(f"{op.name} ran on tensors none of whose data is traced (a tensor the "
                  "function captured, or made inside it): a replay would take its result "
                  "as a constant")


def _is_traced(d):
    c = d.__class__
    if c is _trace.TracedArray:
        return True
    return isinstance(d, Batched) and d.data.__class__ is _trace.TracedArray  # vmap's batch


_HOOK = [0]  # traces running (in any thread): the hook is in AFTER_OP while one runs
_HOOK_LOCK = threading.Lock()


def _hook(on):
    with _HOOK_LOCK:
        _HOOK[0] += 1 if on else -1
        if on and _HOOK[0] == 1:
            _dispatch.AFTER_OP.append(_untraced_op)
        elif not on and _HOOK[0] == 0:
            _dispatch.AFTER_OP.remove(_untraced_op)


_compat_names.compiler.compile = compile  # torch.compiler.compile, registered from above
