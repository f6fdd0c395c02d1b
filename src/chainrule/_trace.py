"""Trace and replay: the array-level recorder behind :func:`chainrule.compile`.

While a compiled function is traced, the data of its input tensors are
:class:`TracedArray` objects: each wraps the real NumPy array (so the function runs
eagerly and gives its true result) and records every NumPy call made on it (NumPy's
``__array_function__`` and ``__array_ufunc__`` protocols, the array's operators, methods
and indexing) into a :class:`Tracer`'s list of steps. Everything in chainrule that computes
(op kernels, derivative rules, vmap's batched namespace, the engine's sums) reaches the
arrays that way, so the steps are the whole computation, in order, as NumPy calls.

Replaying the steps on new input arrays of the same shapes and dtypes computes what the
function would, at NumPy's own cost per call, provided the computation did not depend on
anything but those shapes: the tracer refuses a replay (and says why) when

- a value was read into Python (``bool``, ``float``, ``item``, ``tolist``, a host copy
  with ``numpy.asarray``, printing), as a branch on it could go the other way;
- a NumPy function returned a Python value computed from traced data;
- a random number was drawn from chainrule's generators;
- an op ran on tensors none of whose data is traced (a captured tensor's value would be
  taken as a constant);
- an attribute that exposes memory (``.ctypes``, ``.data``, ``.base``) was read.

Arrays that are not traced (constants made inside the function, a captured tensor's data
used beside traced data) are held by reference: an in-place change to them is seen by a
replay, as it would be by a new run.
"""

from __future__ import annotations

import operator
import threading

import numpy as np

_ndarray, _generic = np.ndarray, np.generic


class _Local(threading.local):
    tracer = None  # the tracer of the function being traced in this thread


LOCAL = _Local()

# NumPy functions whose Python results (shapes, dtypes, memory overlap) do not depend on
# values: a replay reproduces them
_STATIC = {np.shape, np.ndim, np.size, np.result_type, np.may_share_memory,
           np.shares_memory, np.iscomplexobj, np.isrealobj, np.broadcast_shapes,
           np.min_scalar_type, np.can_cast}
# attributes read as they are (they depend on the shapes and dtypes only)
_STATIC_ATTRS = {"shape", "dtype", "ndim", "size", "itemsize", "nbytes", "strides",
                 "flags", "device"}
# attributes and methods that expose memory or values: reading one refuses the replay
_LEAKS = {"ctypes", "tobytes", "tofile", "dump", "dumps", "item", "tolist",
          "__dlpack__", "__dlpack_device__"}
_ABSENT = {"data", "__array_interface__", "__array_struct__"}
# methods that change the array in place
_MUTATING_METHODS = {"fill", "sort", "partition", "put", "itemset", "resize", "setfield",
                     "setflags", "byteswap"}
_LIKE = {np.ones_like: np.ones, np.zeros_like: np.zeros, np.empty_like: np.empty}
_MUTATING_FUNCS = {np.copyto, np.put, np.place, np.putmask, np.put_along_axis,
                   np.fill_diagonal}


# functions whose results' shapes depend on the values (a replay would keep the shapes
# the trace saw downstream)
_DATA_SHAPED = {np.nonzero, np.argwhere, np.flatnonzero, np.unique, np.compress,
                np.extract, np.bincount, np.trim_zeros, np.unique_values, np.unique_counts,
                np.unique_inverse, np.unique_all}
_DATA_SHAPED_METHODS = {"nonzero", "compress", "repeat"}


def _has_traced(x):
    if x.__class__ is TracedArray:
        return True
    if x.__class__ in (tuple, list):
        return any(_has_traced(y) for y in x)
    return False


def _bool_index(key):
    """Whether an index holds a traced boolean array (a mask)."""
    keys = key if key.__class__ is tuple else (key,)
    return any(k.__class__ is TracedArray and k.dtype == np.bool_ for k in keys)


class Step:
    """One recorded call: ``fn(*args, **kwargs)`` with traced arrays replaced by slots;
    ``outs`` the slots its array results fill (a tuple mirroring a tuple result)."""

    __slots__ = ("fn", "args", "kwargs", "outs", "pure")

    def __init__(self, fn, args, kwargs, outs, pure):
        self.fn, self.args, self.kwargs, self.outs, self.pure = fn, args, kwargs, outs, pure


class Slot:
    """A traced array's place in a recorded step's arguments."""

    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


class Tracer:
    """The steps recorded while one function was traced, and why (if so) they cannot be
    replayed."""

    def __init__(self):
        self.steps = []
        self.n = 0  # slots given out
        self.why = None  # the first reason a replay would not compute what a run does
        self.open = True
        self.info = {}  # slot -> (owns its memory, C-contiguous, dtype) when traced
        self.captured = []  # guards: (2, weakref to a tensor, None, its array then)
        self.writes = []  # the arrays in-place steps wrote into
        self.constants = []  # the NumPy arrays steps read that are not traced

    def refuse(self, why):
        if self.why is None:
            self.why = why

    def array(self, value):
        """A new traced array holding ``value`` in a new slot."""
        t = TracedArray(value, self.n, self)
        if value.__class__ is _ndarray:
            self.info[self.n] = (value.base is None, value.flags.c_contiguous, value.dtype)
        self.n += 1
        return t

    def call(self, fn, args, kwargs, pure=True, method=None):
        """Run ``fn`` on the values of ``args`` and ``kwargs``, record it, and give its
        array results as traced arrays."""
        memo = {}
        uargs, targs = self._unwrap(args, memo)
        ukw, tkw = self._unwrap(kwargs, memo)
        if not self.open:
            return fn(*uargs, **ukw)
        if "out" in ukw or fn in _MUTATING_FUNCS or method in _MUTATING_METHODS:
            pure = False
        if fn in _DATA_SHAPED or method in _DATA_SHAPED_METHODS and _has_traced(args[1:]) or (
                fn is operator.getitem or fn is operator.setitem) and _bool_index(args[1]) \
                or fn is np.repeat and _has_traced(args[1:]):
            self.refuse(f"{getattr(fn, '__name__', fn)} gives a result whose shape depends "
                        "on values (a boolean mask, nonzero, unique)")
        if not pure:  # what it writes into: out=, else the first argument
            out = ukw.get("out", uargs[0] if uargs else None)
            self.writes.extend(out if isinstance(out, tuple) else (out,))
        result = fn(*uargs, **ukw)
        if fn in _LIKE and len(args) == 1 and set(kwargs) <= {"dtype"} and \
                result.__class__ is _ndarray and result.flags.c_contiguous:
            # ones_like(x): a function of x's shape and dtype only, which are fixed
            fn, targs, tkw = _LIKE[fn], (result.shape,), {"dtype": result.dtype}
        wrapped, outs = self._wrap(result, memo, fn)
        self.steps.append(Step(fn, targs, tkw, outs, pure))
        return wrapped

    def _unwrap(self, x, memo):
        """(the value, the template) of an argument: traced arrays become their value and
        a :class:`Slot`; containers are walked."""
        c = x.__class__
        if c is TracedArray:
            if x.tracer is not self:
                self.refuse("an array traced by another compiled function was used")
                return x.value, x.value
            memo[id(x.value)] = x
            return x.value, Slot(x.slot)
        if c is tuple or c is list:
            pairs = [self._unwrap(y, memo) for y in x]
            return c(p[0] for p in pairs), c(p[1] for p in pairs)
        if c is dict:
            pairs = {k: self._unwrap(v, memo) for k, v in x.items()}
            return {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()}
        if c is slice and any(isinstance(v, TracedArray) for v in (x.start, x.stop, x.step)):
            self.refuse("a traced array was used as a slice bound")
            return slice(*(v.value if isinstance(v, TracedArray) else v
                           for v in (x.start, x.stop, x.step))), x
        if c is _ndarray:
            self.constants.append(x)
        return x, x

    def _wrap(self, r, memo, fn):
        """(what the traced code gets, the output template) for a result."""
        c = r.__class__
        if c is _ndarray or isinstance(r, _generic):
            same = memo.get(id(r))
            if same is not None:  # the result is an argument (out=, in-place): the same slot
                return same, Slot(same.slot)
            t = self.array(r)
            return t, Slot(t.slot)
        if c is tuple or c is list:
            pairs = [self._wrap(y, memo, fn) for y in r]
            return c(p[0] for p in pairs), c(p[1] for p in pairs)
        if isinstance(r, tuple) and hasattr(r, "_make"):  # a named tuple (svd's result)
            pairs = [self._wrap(y, memo, fn) for y in r]
            return r._make(p[0] for p in pairs), tuple(p[1] for p in pairs)
        if r is None or fn in _STATIC or c is np.dtype:
            return r, None
        self.refuse(f"{getattr(fn, '__name__', fn)} gave a Python value "
                    f"({type(r).__name__}) computed from traced data")
        return r, None


def _value_read(name):
    def read(self, *args, **kwargs):
        self.tracer.refuse(f"a traced value was read into Python ({name})")
        return getattr(self.value, name)(*args, **kwargs)
    read.__name__ = name
    return read


def _binary(op):
    return lambda self, other: self.tracer.call(op, (self, other), {})


def _reflected(op):
    return lambda self, other: self.tracer.call(op, (other, self), {})


def _inplace_op(op):
    def f(self, other):
        return self.tracer.call(op, (self, other), {}, pure=False)
    return f


def _unary(op):
    return lambda self: self.tracer.call(op, (self,), {})


_VIEW = object()  # a traced view's ``.base``


class TracedArray:
    """A NumPy array whose uses are recorded (see the module docstring)."""

    __slots__ = ("value", "slot", "tracer", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, value, slot, tracer):
        self.value, self.slot, self.tracer = value, slot, tracer

    # shapes and dtypes: read as they are
    shape = property(lambda self: self.value.shape)
    dtype = property(lambda self: self.value.dtype)
    ndim = property(lambda self: self.value.ndim)
    size = property(lambda self: self.value.size)
    itemsize = property(lambda self: self.value.itemsize)
    nbytes = property(lambda self: self.value.nbytes)
    strides = property(lambda self: self.value.strides)
    flags = property(lambda self: self.value.flags)
    device = "cpu"
    numpy_like = True  # computes as a NumPy array (code that asks may treat it as one)

    @property
    def base(self):
        """None for an array that owns its memory, else a marker (never the memory: a
        view's base is reached through the recorded calls only)."""
        return None if self.value.base is None else _VIEW

    def __len__(self):
        return len(self.value)

    def __iter__(self):
        return (self[i] for i in range(len(self.value)))

    # NumPy's protocols: every function and ufunc called on a traced array is recorded
    def __array_function__(self, func, types, args, kwargs):
        return self.tracer.call(func, args, kwargs)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        fn = ufunc if method == "__call__" else getattr(ufunc, method)
        return self.tracer.call(fn, inputs, kwargs, pure=method != "at")

    def __array__(self, dtype=None, copy=None):
        self.tracer.refuse("a traced value was read into Python or copied to NumPy "
                           "(bool, float, item, .numpy(), numpy.asarray, a NumPy-only "
                           "kernel)")
        v = np.asarray(self.value)
        if dtype is not None and v.dtype != dtype:
            return v.astype(dtype)
        return v.copy() if copy else v  # numpy.array(x) asks for a copy: the function may
        #                                 write into it

    __bool__ = _value_read("__bool__")
    __float__ = _value_read("__float__")
    __int__ = _value_read("__int__")
    __index__ = _value_read("__index__")
    __complex__ = _value_read("__complex__")
    __repr__ = _value_read("__repr__")
    __str__ = _value_read("__str__")
    __format__ = _value_read("__format__")
    __reduce__ = _value_read("__reduce__")
    __reduce_ex__ = _value_read("__reduce_ex__")

    def __getitem__(self, key):
        return self.tracer.call(operator.getitem, (self, key), {})

    def __setitem__(self, key, value):
        self.tracer.call(operator.setitem, (self, key, value), {}, pure=False)

    def __copy__(self):
        return self.tracer.call(np.copy, (self,), {})

    def __deepcopy__(self, memo):
        return self.tracer.call(np.copy, (self,), {})

    def __getattr__(self, name):
        if name in _ABSENT:  # NumPy's buffer and array interfaces: absent (code that
            raise AttributeError(name)  # unwraps vmap's batches asks for .data; NumPy
            #                             probes the interfaces, then calls __array__)
        if name.startswith("__") or name in _LEAKS:
            if name in _LEAKS:
                self.tracer.refuse(f"a traced array's .{name} was read")
            return getattr(self.value, name)
        attr = getattr(self.value, name)
        if not callable(attr):  # T, mT, real, imag
            return self.tracer.call(_GETATTR[name], (self,), {})
        return lambda *a, **k: self.tracer.call(_method(name), (self,) + a, k, method=name)


class _Attr:
    def __init__(self, name):
        self.name = name
        self.__name__ = name

    def __call__(self, x):
        return getattr(x, self.name)


class _Method:
    def __init__(self, name):
        self.name = name
        self.__name__ = name

    def __call__(self, x, *args, **kwargs):
        return getattr(x, self.name)(*args, **kwargs)


class _Cache(dict):
    def __init__(self, make):
        super().__init__()
        self.make = make

    def __missing__(self, name):
        v = self[name] = self.make(name)
        return v


_GETATTR = _Cache(_Attr)
_METHODS = _Cache(_Method)


def _method(name):
    return _METHODS[name]


for _name, _op in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                   ("mod", operator.mod), ("pow", operator.pow), ("matmul", operator.matmul),
                   ("and", operator.and_), ("or", operator.or_), ("xor", operator.xor),
                   ("lshift", operator.lshift), ("rshift", operator.rshift),
                   ("divmod", divmod)):
    setattr(TracedArray, f"__{_name}__", _binary(_op))
    setattr(TracedArray, f"__r{_name}__", _reflected(_op))
for _name, _op in (("iadd", operator.iadd), ("isub", operator.isub), ("imul", operator.imul),
                   ("itruediv", operator.itruediv), ("ifloordiv", operator.ifloordiv),
                   ("imod", operator.imod), ("ipow", operator.ipow),
                   ("imatmul", operator.imatmul), ("iand", operator.iand),
                   ("ior", operator.ior), ("ixor", operator.ixor),
                   ("ilshift", operator.ilshift), ("irshift", operator.irshift)):
    setattr(TracedArray, f"__{_name}__", _inplace_op(_op))
for _name, _op in (("lt", operator.lt), ("le", operator.le), ("gt", operator.gt),
                   ("ge", operator.ge), ("eq", operator.eq), ("ne", operator.ne)):
    setattr(TracedArray, f"__{_name}__", _binary(_op))
for _name, _op in (("neg", operator.neg), ("pos", operator.pos), ("abs", operator.abs),
                   ("invert", operator.invert)):
    setattr(TracedArray, f"__{_name}__", _unary(_op))
TracedArray.__hash__ = None


# --- replay ------------------------------------------------------------------------------

def compile_steps(tracer, inputs, outputs, fold=True):
    """A Python function ``run(*input_arrays) -> tuple of output arrays`` that makes the
    recorded NumPy calls again. ``inputs`` and ``outputs`` are slot numbers.

    When no step writes in place (``fold``): steps of constants only are computed here
    once (a ``ones_like``'s chain in a backward pass), a copy of an array that nothing
    else reads is that array, and steps whose results nothing needs are left out."""
    steps = tracer.steps
    pure = fold and all(s.pure for s in steps)
    known = {}  # slot -> value computed here (pure programs)
    if pure:
        steps = _folded(steps, known, set(outputs))
        steps, rename = _copies_elided(steps, tracer.info, set(outputs))
        outputs = [rename.get(o, o) for o in outputs]
    live = set(outputs)
    keep = []
    for s in reversed(steps):
        if s.pure and not any(i in live for i in _slots(s.outs)):
            continue
        keep.append(s)
        live.update(_slots(s.args))
        live.update(_slots(s.kwargs))
    keep.reverse()
    consts = []

    def const(v):
        consts.append(v)
        return f"C[{len(consts) - 1}]"

    def src(t):
        c = t.__class__
        if c is Slot:
            return const(known[t.i]) if t.i in known else f"v{t.i}"
        if c is tuple:
            return "(" + "".join(src(y) + ", " for y in t) + ")"
        if c is list:
            return "[" + ", ".join(src(y) for y in t) + "]"
        if c is dict:
            return "{" + ", ".join(f"{k!r}: {src(y)}" for k, y in t.items()) + "}"
        if t is None or t is True or t is False or (c is int or c is float) and \
                t == t and abs(t) != float("inf"):
            return repr(t)
        return const(t)

    def target(t):
        if t is None:
            return "_"
        if t.__class__ is Slot:
            return f"v{t.i}"
        return "(" + "".join(target(y) + ", " for y in t) + ")"

    lines = [f"def run({''.join(f'v{i}, ' for i in inputs)}):"]
    for s in keep:
        call = (f"{const(s.fn)}({''.join(src(a) + ', ' for a in s.args)}"
                f"{''.join(f'{k}={src(v)}, ' for k, v in s.kwargs.items())})")
        lines.append(f"    {target(s.outs)} = {call}")
    lines.append("    return (" + "".join((f"{const(np.copy)}({const(known[i])})" if i in known
                                          else f"v{i}") + ", " for i in outputs) + ")")
    scope = {"C": consts}
    exec("\n".join(lines), scope)  # noqa: S102 - code generated from the recorded steps
    run = scope["run"]
    run.source = "\n".join(lines)
    run.steps = len(keep)
    run.constants = [c for c in consts if isinstance(c, (_ndarray, _generic))]
    return run


def _folded(steps, known, outputs):
    """The steps left once those reading no slot but one computed here are computed (an
    output computed here is copied by each replay, so that no two calls share it)."""
    left = []
    for s in steps:
        outs = list(_slots(s.outs))
        if outs and all(i in known for i in _slots(s.args)) and \
                all(i in known for i in _slots(s.kwargs)):
            result = s.fn(*_filled(s.args, known), **_filled(s.kwargs, known))
            _bind(s.outs, result, known)
            continue
        left.append(s)
    return left


def _filled(t, known):
    c = t.__class__
    if c is Slot:
        return known[t.i]
    if c is tuple or c is list:
        return c(_filled(y, known) for y in t)
    if c is dict:
        return {k: _filled(y, known) for k, y in t.items()}
    return t


def _bind(outs, result, known):
    if outs.__class__ is Slot:
        known[outs.i] = result
    elif outs is not None:
        for o, r in zip(outs, result):
            _bind(o, r, known)


def _copies_elided(steps, info, outputs):
    """A copy (``astype`` to the same dtype, ``copy``) of an array that owns its memory,
    is C-contiguous and that nothing else reads is that array itself."""
    uses = {}
    for s in steps:
        for i in _slots(s.args):
            uses[i] = uses.get(i, 0) + 1
        for i in _slots(s.kwargs):
            uses[i] = uses.get(i, 0) + 1
    made = set()
    for s in steps:
        made.update(_slots(s.outs))
    rename = {}
    left = []
    for s in steps:
        x = _copied(s, info)
        if x is not None and x in made and uses.get(x) == 1 and x not in outputs:
            owns, contiguous, _ = info[x]
            if owns and contiguous:
                rename[s.outs.i] = rename.get(x, x)
                continue
        left.append(s if not rename else
                    Step(s.fn, _renamed(s.args, rename), _renamed(s.kwargs, rename),
                         s.outs, s.pure))
    return left, rename


def _copied(s, info):
    """The slot ``s`` copies, if it is a plain copy of one slot."""
    if s.outs.__class__ is not Slot or not s.args or s.args[0].__class__ is not Slot:
        return None
    x = s.args[0].i
    if x not in info:
        return None
    if s.fn is np.copy and len(s.args) == 1 and not s.kwargs:
        return x
    if s.fn is _METHODS.get("copy") and len(s.args) == 1 and not s.kwargs:
        return x
    if s.fn is _METHODS.get("astype") and len(s.args) == 2 and s.args[1] == info[x][2] \
            and set(s.kwargs) <= {"copy"} and s.kwargs.get("copy", True) is True:
        return x
    return None


def _renamed(t, rename):
    c = t.__class__
    if c is Slot:
        return Slot(rename[t.i]) if t.i in rename else t
    if c is tuple or c is list:
        return c(_renamed(y, rename) for y in t)
    if c is dict:
        return {k: _renamed(y, rename) for k, y in t.items()}
    return t


def _slots(t):
    c = t.__class__
    if c is Slot:
        yield t.i
    elif c is tuple or c is list:
        for y in t:
            yield from _slots(y)
    elif c is dict:
        for y in t.values():
            yield from _slots(y)


# --- the backend of traced data ----------------------------------------------------------

def _register():
    from types import SimpleNamespace

    from . import _ns
    from .backend import NUMPY, Backend, register_backend

    class _TraceBackend(Backend):
        """Traced data computes with NumPy's own kernels and rules (NumPy hands each call
        back to the traced array, which records it)."""

        def kernel(self, op):
            return NUMPY.kernel(op)

        def rules(self):
            ns = self._rules
            if ns is None:
                ns = self._rules = SimpleNamespace(**vars(_ns.RAW))
                ns.maybe_any = lambda mask: True  # never branch on values: the general rule
            return ns

    b = _TraceBackend("trace", SimpleNamespace(**{k: v for k, v in vars(NUMPY.xp).items()
                                                  if not k.startswith("__")}))
    b._rules = None
    register_backend(TracedArray, b)
    return b


TRACE = _register()
