"""The hot path: running a primitive and recording its node.

Every op gets its own call function at declaration time (``op.call``, built by
:func:`make_call` for its arity), so ``x * y`` is one Python call to the forward kernel and,
when something requires grad, one more to record the node. When no input requires grad, or
grad mode is off, no node is built and nothing is saved.

``apply(op, inputs, attrs)`` is the generic entry point used by the public functions.
"""

from __future__ import annotations

import functools
import weakref

import numpy as np

from . import _state, _table
from ._node import MultiOpNode, OpNode, SliceNode, accumulator
from ._tensor import DEFAULT_FLOAT, INFERENCE_SAVED, InferenceUse, Tensor, _fill
from .backend import NUMPY, ChunkedShape, backend_of

_STATE = _state.STATE
_new = object.__new__
_NO_EDGE = (None, 0)
_ndarray = np.ndarray
_F64, _F32 = np.dtype(np.float64), np.dtype(np.float32)
_generic = np.generic
_asarray = np.asarray
_FORWARD_ERRORS = (ValueError, IndexError, TypeError)

# Called after every op while STATE.flags has the SLOW bit (a forward-mode level or anomaly
# mode is active): ``hook(op, inputs, datas, attrs, out, result)``. Forward mode
# (autograd.forward_ad) and anomaly mode (autograd.anomaly) register here; the dispatcher
# imports neither.
AFTER_OP = []


_PY_SCALARS = (float, int, bool)  # NumPy 2 already promotes these weakly (NEP 50)
# Ops whose nodes are SliceNodes (first-order VJP kept as a Scattered cotangent); the
# indexing family registers its basic slice here.
SCATTERED_VJP = set()


class _InPlaceHooks:
    """What op functions need of ``chainrule._inplace`` (which is built on the ops, so it
    registers them here from above): ``update(t, compute, name, *others)`` and
    ``write_out(out, result, name)`` (PyTorch's ``out=``)."""

    update = None
    write_out = None


IN_PLACE = _InPlaceHooks()
_CATEGORY = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}


def _scalar(x, op):
    """A NumPy scalar operand becomes a Python scalar, so that it does not upcast a tensor
    (PyTorch: a scalar takes part in type promotion by its category only). None and
    strings raise TypeError naming ``op`` (NumPy would make an object or string array)."""
    if x.__class__ is int:
        return x
    if isinstance(x, np.generic):
        return x.item()
    if x is None or isinstance(x, str):
        raise TypeError(f"{op.name}: expected a Tensor or a number as an operand, got "
                        f"{type(x).__name__}")
    return x


def _category(d):
    return _CATEGORY.get(d.dtype.kind, 9)


def torch_promote(a, b):
    """``torch.promote_types`` of two NumPy dtypes: within a category NumPy's widening; across
    categories the higher one's dtype (int64 with float32 is float32, where NumPy says
    float64), except that a complex dtype takes a float's precision too (complex64 with
    float64 is complex128)."""
    ka, kb = _CATEGORY.get(a.kind, 9), _CATEGORY.get(b.kind, 9)
    if ka == kb or 9 in (ka, kb) or {ka, kb} == {2, 3}:
        return np.promote_types(a, b)
    return a if ka > kb else b


def torch_can_cast(src, dst):
    """``torch.can_cast`` of two NumPy dtypes: any cast but complex to real, float to an
    integer or bool, and a number to bool (int16 to uint8 is allowed, as a wrapping cast)."""
    ks, kd = src.kind, dst.kind
    if ks == "c" and kd != "c":
        return False
    if ks == "f" and kd in "biu":
        return False
    return not (ks != "b" and kd == "b")


def _combine(higher, lower):
    """PyTorch's ``combine_categories``: the result dtype of a group of higher priority
    (dimensioned tensors, then 0-d tensors, then Python numbers) and one of lower priority,
    which counts only where its category is higher."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    kh, kl = _CATEGORY.get(higher.kind, 9), _CATEGORY.get(lower.kind, 9)
    if kh == 3 or 9 in (kh, kl):
        return higher
    if kl == 3:  # a complex of lower priority keeps a float's precision
        return np.promote_types(higher, np.complex64) if kh == 2 else lower
    if kh == 2:
        return higher
    if kh == 0 or kl == 2:
        return torch_promote(higher, lower)
    return higher


def _group_dtype(dtypes):
    out = None
    for d in dtypes:
        out = d if out is None else torch_promote(out, d)
    return out


def _result_dtype(arrays):
    """PyTorch's result dtype of NumPy operands (``at::result_type``): the dimensioned
    operands' promoted dtype, then the 0-d ones' where their category is higher
    (``float32 tensor * tensor(2.0)`` stays float32; ``int64 + float32`` is float32, where
    NumPy would give float64; ``float64 tensor + complex64 0-d`` is complex128)."""
    return _combine(_group_dtype([d.dtype for d in arrays if d.ndim]),
                    _group_dtype([d.dtype for d in arrays if not d.ndim]))


def _no_complex_grad(op, want, mask):
    """Gradients through complex values are not supported (chainrule is real-valued): a
    complex result of an op whose input requires grad raises rather than give a wrong
    gradient (PyTorch would differentiate it)."""
    if mask and want is not None and want.kind == "c" and _STATE.flags & 1:
        raise RuntimeError(
            f"{op.name}: an input requires grad and the result would be complex ({want}); "
            "chainrule is real-valued and does not differentiate through complex values. "
            "Detach the real input, or compute under chainrule.no_grad()")


def promote_0d(da, db, op=None, mask=0):
    """Operands of two dtypes cast to PyTorch's result dtype (:func:`_result_dtype`) where
    NumPy's would differ: an operand of a lower category, or a 0-d one, takes it; two
    dimensioned operands of one category are left to NumPy (the wider wins either way).
    A complex result of an input that requires grad raises (:func:`_no_complex_grad`)."""
    want = _result_dtype((da, db))
    if mask:
        _no_complex_grad(op, want, mask)
    if want is None or _CATEGORY.get(want.kind, 9) == 9:
        return da, db
    return _cast_to(da, want, db), _cast_to(db, want, da)


def _cast_to(d, want, other):
    if d.dtype == want or _category(d) in (0, 9):  # bools (where's condition) stay bool
        return d
    if d.ndim and other.ndim and _category(d) == _CATEGORY.get(want.kind, 9):
        return d  # same category, both dimensioned: NumPy widens the same way
    return d.astype(want)


def promote_all_0d(datas, op=None, mask=0):
    """:func:`promote_0d` over the operands of an op with more than two inputs (``where``)."""
    arrays = [d for d in datas if d.__class__ is _ndarray]
    if len(arrays) < 2 or len({d.dtype for d in arrays}) == 1:
        if mask and any(d.__class__ is complex for d in datas):
            _no_complex_grad(op, np.dtype(np.complex128), mask)
        return datas
    want = _result_dtype(arrays)
    if mask:
        if any(d.__class__ is complex for d in datas):
            want = _combine(want, np.dtype(np.complex128))
        _no_complex_grad(op, want, mask)
    if want is None or _CATEGORY.get(want.kind, 9) == 9:
        return datas
    return [d.astype(want) if d.__class__ is _ndarray and d.dtype != want
            and _category(d) not in (0, 9) else d for d in datas]  # bools stay bool


def _wrapped_ints(datas):
    """Python ints that NumPy 2 refuses beside an integer array of a smaller dtype (``uint8
    + 300``, ``uint8 * -1``) as 0-d arrays of that dtype, wrapped modulo its range: PyTorch
    casts a number to the op's dtype that way. Raises the OverflowError again when no such
    array is there (an int beyond int64)."""
    kinds = [d.dtype for d in datas if d.__class__ is _ndarray and d.dtype.kind in "iu"]
    if not kinds:
        raise OverflowError("a Python int out of range of the tensor's dtype")
    dtype = np.result_type(*kinds)
    out = []
    for d in datas:
        if d.__class__ is int:
            if not -2 ** 63 <= d < 2 ** 64:
                raise OverflowError(f"Python int {d} too large to convert to {dtype}")
            d = np.array(d % 2 ** 64, dtype=np.uint64).astype(dtype)
        out.append(d)
    return out


def apply(op, inputs, attrs=()):
    """Run ``op`` on ``inputs`` (Tensors or constants) with non-tensor ``attrs``.

    Returns a Tensor (a tuple of Tensors when the op has several outputs). Raises the
    forward kernel's ValueError/IndexError/TypeError re-worded to name the op and the input
    shapes.
    """
    if op.variadic:
        return op.call(inputs, *attrs)
    return op.call(*inputs, *attrs)


def _shape_of(x):
    return tuple(x.shape) if isinstance(x, (Tensor, np.ndarray)) else type(x).__name__


def _forward_error(op, inputs, error):
    if op.variadic:
        names = [f"{op.inputs[0]}[{i}]" for i in range(len(inputs))]
    else:
        names = op.inputs
    shapes = ", ".join(f"{n}={_shape_of(x)}" for n, x in zip(names, inputs))
    message = f"{op.name}: {error} (got {shapes})"
    if isinstance(error, IndexError):  # NumPy's AxisError too: PyTorch raises IndexError
        return IndexBoundsError(message)
    return _renamed(error, message)


def name_errors(fn, op=None):
    """Wrap a public function so that an error raised while it prepares its arguments
    (before a kernel runs) names the op, as every error of chainrule does: ``reshape(x, t)``
    with a tensor ``t`` says ``reshape: ...``. Messages that already start with an op's
    name are left as they are. Not used on the hot elementwise functions, whose errors
    come from their kernels and are named by the dispatcher."""
    name = op or fn.__name__

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AttributeError as error:  # an argument of the wrong type ('str'.shape)
            raise TypeError(f"{name}: an argument has the wrong type: {error}") from None
        except (TypeError, ValueError, IndexError, RuntimeError) as error:
            text = str(error)
            head = text.split(":", 1)[0]
            if head.replace("_", "").replace(".", "").isalnum() and " " not in head:
                if type(error) not in (ValueError, IndexError):
                    raise  # already names an op (possibly the one this function calls)
                raise _renamed(error, text) from None  # as a RuntimeError too
            raise _renamed(error, f"{name}: {text}") from None

    return wrapper


def _renamed(error, message):
    """``error``'s class with a new message (its builtin base when the class has a
    constructor of its own, as NumPy's UFuncTypeError has). A plain ValueError (NumPy's
    shape errors; subclasses such as LinAlgError stay) becomes a ShapeError and a plain
    IndexError an IndexBoundsError: PyTorch raises RuntimeError for those mistakes."""
    kind = type(error)
    if kind is ValueError:
        return ShapeError(message)
    if kind is IndexError:
        return IndexBoundsError(message)
    try:
        return kind(message)
    except TypeError:
        return (TypeError if isinstance(error, TypeError) else ShapeError)(message)


class ShapeError(ValueError, RuntimeError):
    """Inputs whose shapes (or values) an op cannot take: a RuntimeError as in PyTorch, and
    a ValueError as NumPy raises for the same mistake."""


class IndexBoundsError(IndexError, RuntimeError):
    """An index outside the tensor (or a tensor with fewer dims than an op indexes):
    PyTorch raises RuntimeError from some ops (gather, scatter, index_add, narrow,
    kthvalue, ops that need a matrix) and IndexError from others (index_select, take,
    embedding); this is both, so code written against either catches it."""


def _output(data, node, nr, vc):
    if data.__class__ is not _ndarray and isinstance(data, _generic):
        data = _asarray(data)  # NumPy returns scalars for 0-d results: keep arrays
    return _fill(_new(Tensor), data, node, nr, vc)


def _plain(op, out, vc):
    """Outputs of a call that records nothing."""
    if op.nout == 1:
        return _output(out, None, 0, vc)
    return tuple(_output(o, None, i, [0]) for i, o in enumerate(out))


def make_call(op):
    """The call function of ``op``: unrolled for unary and binary ops."""
    forward = op.forward
    view = op.view
    single = op.nout == 1 and not view
    promote = op.promote

    if op.arity == 1:
        floating = op.floating
        takes = len(op.attrs)

        def call(input, *attrs, out=None):  # noqa: A002  (PyTorch's name: exp(input=x))
            x = input
            if attrs and not takes:  # exp(x, array): NumPy would take the array as out=
                raise TypeError(f"{op.name}() takes 1 positional argument but "
                                f"{1 + len(attrs)} were given")
            if out is not None:  # PyTorch's out=: the result written into out
                return IN_PLACE.write_out(out, call(x, *attrs), op.name)
            if isinstance(x, Tensor):
                d = x._data
                if d.__class__ is not _ndarray:
                    return _foreign(op, (x,), attrs)
                if floating:
                    dt = d.dtype
                    if dt is not _F64 and dt is not _F32 and dt.kind in "biu":
                        d = d.astype(DEFAULT_FLOAT[0])  # exp(int) is a float, as PyTorch's
                try:
                    out = forward(d, *attrs)
                except _FORWARD_ERRORS as e:
                    raise _forward_error(op, (x,), e) from None
                flags = _STATE.flags
                if x._requires_grad and flags & 1:
                    result = _record(op, (x,), (d,), attrs, out, 1)
                elif single:
                    result = _output(out, None, 0, [0])
                elif view:
                    result = _view_plain(op, x, out, attrs)
                else:
                    result = _plain(op, out, [0])
                if flags & 2:
                    _after(op, (x,), (d,), attrs, out, result)
                return result
            if x is None or isinstance(x, str):  # NumPy would make an object array
                raise TypeError(f"{op.name}: argument 'input' must be a Tensor, not "
                                f"{type(x).__name__}")
            try:
                out = forward(x, *attrs)
            except _FORWARD_ERRORS as e:
                raise _forward_error(op, (x,), e) from None
            return _plain(op, out, [0])

    elif op.arity == 2:
        def call(a, b, *attrs):
            mask = 0
            if isinstance(a, Tensor):
                da = a._data
                if a._requires_grad:
                    mask = 1
            else:
                da = a if a.__class__ is float else _scalar(a, op)
            if isinstance(b, Tensor):
                db = b._data
                if b._requires_grad:
                    mask |= 2
                if da.__class__ is _ndarray and db.__class__ is _ndarray \
                        and da.dtype is not db.dtype and promote:
                    da, db = promote_0d(da, db, op, mask)
            elif b.__class__ is not float:
                db = _scalar(b, op)
                if da.__class__ is _ndarray and db.__class__ is _ndarray \
                        and da.dtype is not db.dtype and promote:
                    da, db = promote_0d(da, db, op, mask)
            else:
                db = b
            ca, cb = da.__class__, db.__class__
            if (ca is not _ndarray and ca not in _PY_SCALARS) or \
                    (cb is not _ndarray and cb not in _PY_SCALARS):
                return _foreign(op, (a, b), attrs)
            try:
                out = forward(da, db, *attrs)
            except _FORWARD_ERRORS as e:
                raise _forward_error(op, (a, b), e) from None
            except OverflowError:  # uint8 + 300: wrapped into the tensor's dtype, as PyTorch's
                da, db = _wrapped_ints((da, db))
                try:
                    out = forward(da, db, *attrs)
                except _FORWARD_ERRORS as e:
                    raise _forward_error(op, (a, b), e) from None
            flags = _STATE.flags
            if mask and flags & 1:
                result = _record(op, (a, b), (da, db), attrs, out, mask)
            elif single:
                result = _output(out, None, 0, [0])
            else:
                result = _plain(op, out, a._vc if view else [0])
            if flags & 2:
                _after(op, (a, b), (da, db), attrs, out, result)
            return result

    else:
        def call(*args):
            if op.variadic:
                inputs, attrs = list(args[0]), args[1:]
            else:
                inputs, attrs = args[:len(op.inputs)], args[len(op.inputs):]
            datas = []
            mask = 0
            bit = 1
            for x in inputs:
                if isinstance(x, Tensor):
                    if x._data.__class__ is not _ndarray:
                        return _foreign(op, args[0] if op.variadic else inputs, attrs)
                    datas.append(x._data)
                    if x._requires_grad:
                        mask |= bit
                else:
                    datas.append(x if x.__class__ in _PY_SCALARS else _scalar(x, op))
                bit <<= 1
            if promote and not op.variadic:
                datas = promote_all_0d(datas, op, mask)
            try:
                out = forward(datas, *attrs) if op.variadic else forward(*datas, *attrs)
            except _FORWARD_ERRORS as e:
                raise _forward_error(op, inputs, e) from None
            except OverflowError:
                if op.variadic:
                    raise
                datas = _wrapped_ints(datas)
                try:
                    out = forward(*datas, *attrs)
                except _FORWARD_ERRORS as e:
                    raise _forward_error(op, inputs, e) from None
            flags = _STATE.flags
            if mask and flags & 1:
                result = _record(op, inputs, datas, attrs, out, mask)
            else:
                result = _plain(op, out, inputs[0]._vc if view else [0])
            if flags & 2:
                _after(op, inputs, datas, attrs, out, result)
            return result

    call.__name__ = call.__qualname__ = op.name
    return call


def _common_backend(op, inputs, datas, arrays, mask):
    """The one backend of an op's array inputs (None when there are none). A NumPy
    constant (not requiring grad) beside Dask data joins Dask, as both compute on the CPU
    (PyTorch mixes tensors of one device); any other mix of backends or devices raises,
    naming both."""
    lazy = None
    batched = traced = False
    for _, b in arrays:
        if b.lazy:
            lazy = b
        elif b.name == "vmap":
            batched = True
        elif b.name == "trace":
            traced = True
    backend = first = None
    for i, b in arrays:
        d = datas[i]
        if b is NUMPY and (batched or traced):  # inside vmap: a NumPy value is one for
            continue  # every sample; beside traced data (chainrule.compile): a constant
        if batched and b.name == "trace":  # traced data is NumPy's to vmap's kernels
            continue
        if b is NUMPY and lazy is not None and not mask >> i & 1 and d.__class__ is _ndarray:
            datas[i] = lazy.from_numpy(d)
            continue
        if backend is None:
            backend, first = b, d
        elif b is not backend or (not b.one_device and b.device(d) != backend.device(first)):
            raise RuntimeError(
                f"{op.name}: expected all tensors to be on the same backend and device, "
                f"but found {backend.name} on {backend.device(first)} and {b.name} on "
                f"{b.device(d)} ({op.inputs[min(i, len(op.inputs) - 1)]})")
    return backend


def _chunked_shapes(result, datas, out, attrs):
    """On a lazy backend, the input shapes a node keeps carry the inputs' chunks (see
    :class:`chainrule.backend.ChunkedShape`), and its saved values are taken again with
    them."""
    node = next(r._grad_fn for r in (result if isinstance(result, tuple) else (result,))
                if r._grad_fn is not None)
    node.shapes = tuple(s if s is None or not hasattr(d, "chunks") else ChunkedShape(s, d.chunks)
                        for s, d in zip(node.shapes, datas))
    if node.plan.keep is not None:
        node.saved = node.plan.keep(datas, out, attrs, node.shapes)


def _foreign(op, inputs, attrs):
    """An op on data of a backend other than NumPy (Dask, CuPy, an Array API library):
    the kernel bound to that backend, then the same recording as the NumPy path. Tensors
    of two backends or devices in one op raise; Python scalars mix with any backend."""
    inputs = list(inputs)
    datas = []
    arrays = []  # (index, backend) of each array input
    mask = 0
    python_complex = False  # a Python complex number among the inputs
    zero_d = None  # (index, array) of 0-d NumPy constants read as Python numbers
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor):
            d = x._data
            grad = x._requires_grad
            if grad:
                mask |= 1 << i
        else:
            d, grad = x, False
        c = d.__class__
        if c in _PY_SCALARS or d is None:
            datas.append(d)
            continue
        if isinstance(d, _generic):  # a NumPy scalar: a tensor's 0-d data, or a constant
            d = _asarray(d) if x is not d else d.item()
            c = d.__class__
        if c is _ndarray:
            if d.ndim == 0 and not grad:
                zero_d = (zero_d or []) + [(i, d)]
                d = d.item()  # a 0-d NumPy constant mixes with any backend, as PyTorch's
                #               0-dim CPU tensors do with CUDA tensors (a Python number)
                if d.__class__ not in _PY_SCALARS:  # complex
                    python_complex = True
                    arrays.append((i, NUMPY))
            else:
                arrays.append((i, NUMPY))
        elif c not in _PY_SCALARS:
            python_complex = python_complex or c is complex
            try:
                arrays.append((i, backend_of(d)))
            except TypeError:  # no array (a str, a list): NumPy's kernel says what is wrong
                arrays.append((i, NUMPY))
        datas.append(d)
    if zero_d and all(b is NUMPY for _, b in arrays):  # no other backend to mix with: the
        for i, d in zero_d:  # 0-d arrays as they are (their dtype counts, as PyTorch's 0-d
            datas[i] = d     # tensors: float32 0-d * 1j is complex64)
    backend = _common_backend(op, inputs, datas, arrays, mask)
    kernel = op.forward if backend is None or backend is NUMPY else backend.kernel(op)
    try:
        out = kernel(datas, *attrs) if op.variadic else kernel(*datas, *attrs)
    except _FORWARD_ERRORS as e:
        raise _forward_error(op, inputs, e) from None
    flags = _STATE.flags
    if mask and flags & 1:
        if python_complex:
            _no_complex_grad(op, np.dtype(np.complex128), mask)
        result = _record(op, inputs, datas, attrs, out, mask)
        if backend.lazy and not op.variadic:
            _chunked_shapes(result, datas, out, attrs)
    elif op.view and op.nout == 1 and isinstance(inputs[0], Tensor) and \
            hasattr(out, "shares_memory"):
        # a view of a batch inside vmap: remembered as a view, as _view_plain does for
        # NumPy's, so that an update through it with a tensor that requires grad rewrites
        # its root's history (``y.clone()[0].mul_(x)``)
        result = _view_plain(op, inputs[0], out, attrs)
    else:
        result = _plain(op, out, inputs[0]._vc if op.view and isinstance(inputs[0], Tensor)
                        else [0])
    if flags & 2:
        _after(op, inputs, datas, attrs, out, result)
    return result


def edge(x):
    """The graph edge ``(node, output_nr)`` that a tensor which requires grad feeds: its
    ``grad_fn`` (brought up to date first when it is a view whose base was changed in
    place) or its leaf's AccumulateGrad node."""
    if x._extra is not None:
        refresh_view(x)
    return (x._grad_fn or accumulator(x), x._output_nr)



def _record(op, inputs, datas, attrs, out, mask):
    if op.variadic:
        mask = 1
    plan = op.plans[mask] or op.plan(mask)
    arity = op.arity
    if arity == 1:
        x = inputs[0]
        if x._extra is not None:
            refresh_view(x)
        edges = ((x._grad_fn or accumulator(x), x._output_nr),)
        shapes = (datas[0].shape,)
    elif arity == 2:
        a, b = inputs
        if mask == 3:
            edges = (edge(a), edge(b))
            shapes = (datas[0].shape, datas[1].shape)
        elif mask == 1:
            if a._extra is not None:
                refresh_view(a)
            edges = ((a._grad_fn or accumulator(a), a._output_nr), _NO_EDGE)
            shapes = (datas[0].shape, None)
        else:
            if b._extra is not None:
                refresh_view(b)
            edges = (_NO_EDGE, (b._grad_fn or accumulator(b), b._output_nr))
            shapes = (None, datas[1].shape)
    else:
        edges = tuple(edge(x) if isinstance(x, Tensor) and x._requires_grad else _NO_EDGE
                      for x in inputs)
        shapes = tuple(np.shape(d) if e[0] is not None else None for d, e in zip(datas, edges))
    if plan.all_shapes:
        shapes = tuple(np.shape(d) for d in datas)
    if op.nout == 1:
        node = _new(OpNode)
        node.out_shape = out.shape
        if op.view:
            if op in SCATTERED_VJP:
                node.__class__ = SliceNode
            if op.view is True or shares_memory(out, datas[0]):
                result = _output(out, node, 0, inputs[0]._vc)
                _mark_view(result, inputs[0], op, attrs)
            else:  # reshape had to copy: a fresh tensor, as in PyTorch
                result = _output(out, node, 0, [0])
        else:
            if out.__class__ is not _ndarray and isinstance(out, _generic):
                out = _asarray(out)
            result = _new(Tensor)  # _fill, inlined: this is the hottest line of the library
            result._data = out
            result._requires_grad = True
            result._grad_fn = node
            result._grad = None
            result._vc = [0]
            result._output_nr = 0
            result._acc = None
            result._extra = None
    else:
        node = _new(MultiOpNode)
        node.nout = op.nout
        node.out_shape = None
        result = tuple(_output(o, node if i in op.out_diff else None, i, [0])
                       for i, o in enumerate(out))
    node.plan = plan
    node.next_functions = edges
    node.shapes = shapes
    node.pre_hooks = None
    keep = plan.keep
    if keep is None:
        node.saved = ()
        node.checks = None
        return result
    node.saved = keep(datas, out, attrs, shapes)
    checks = plan.checks
    try:  # (free when nothing raises) reading an inference tensor's version raises
        if not checks:
            node.checks = None
        elif op.variadic:  # the saved list of inputs: every tensor in it is checked
            node.checks = _variadic_checks(checks, inputs, result) or None
        elif len(checks) == 1 and op.nout == 1:
            k, i = checks[0]
            src = result if i < 0 else inputs[i]
            node.checks = ((k, src._vc, src._vc[0]),) if isinstance(src, Tensor) else None
        else:
            node.checks = _checks(checks, inputs, result) or None
    except InferenceUse:  # every saved tensor input is checked: one made in inference mode
        raise RuntimeError(INFERENCE_SAVED) from None
    return result


def _variadic_checks(slots, inputs, result):
    """:func:`_checks` for a variadic op, whose saved inputs are one list: (saved index,
    version counter, version now, position in the list) for each tensor in it."""
    checks = []
    for k, i in slots:
        if i < 0:
            if isinstance(result, Tensor):
                checks.append((k, result._vc, result._vc[0], None))
            continue
        for j, x in enumerate(inputs):
            if isinstance(x, Tensor):
                checks.append((k, x._vc, x._vc[0], j))
    return checks


def _checks(slots, inputs, result):
    """(saved index, version counter, version now) for each saved tensor input or output;
    an output of an op with several outputs adds its position in the saved tuple."""
    checks = []
    for k, i in slots:
        if i >= 0:
            src = inputs[i]
        elif result.__class__ is tuple:
            src = result[-1 - i]
            checks.append((k, src._vc, src._vc[0], -1 - i))
            continue
        else:
            src = result
        if isinstance(src, Tensor):
            checks.append((k, src._vc, src._vc[0]))
    return checks


def shares_memory(out, data):
    """True when array ``out`` is a view of ``data``'s memory. An op declared as a view
    (reshape) may have had to copy; then its result is a fresh tensor, not a view. Arrays
    of other backends are never treated as views (Dask arrays are immutable)."""
    if out.__class__ is not _ndarray:  # a batch inside vmap: a view when its stack is
        shares = getattr(out, "shares_memory", None)
        return shares is not None and shares(data)
    base = out.base
    if base is None:
        return False
    return base is data or base is data.base or np.may_share_memory(out, data)


def _view_plain(op, x, out, attrs):
    """The output of a view op that records nothing: it still shares ``x``'s storage and
    version counter, and remembers how it was made, so that an in-place update through it
    can rewrite its base's history later (``buf[0].copy_(y)`` with ``y`` requiring grad)."""
    if op.view is not True and not shares_memory(out, x._data):
        return _output(out, None, 0, [0])
    result = _output(out, None, 0, x._vc)
    _mark_view(result, x, op, attrs)
    return result


def _mark_view(view, base, op, attrs):
    """Remember how ``view`` was made from its root tensor (the base that is not itself a
    view), so its history can be rebuilt when the root's history is rewritten by an
    in-place update (see refresh_view), and an in-place update of the view can rewrite the
    root's history (``chainrule._inplace``)."""
    ex = base._extra
    if ex is not None and "view_of" in ex:
        root, path = ex["view_of"], ex["path"] + ((op, attrs),)
    else:
        root, path = base, ((op, attrs),)
    view._extra = {"view_of": root, "root_fn": root._grad_fn, "path": path}
    if root._requires_grad:
        if view._grad_fn is None:
            # Made under no_grad from a tensor that requires grad: PyTorch forbids updating
            # it in place with grad mode on (its base's history could not be rewritten).
            view._extra["no_grad_view"] = True
        if not _STATE.dual_level:
            return
    # The root may gain a history later (an in-place update with a tensor that requires
    # grad), or a new tangent; it then tells its views, which rebuild their grad_fn on use
    # and take the view of its new tangent.
    rex = root._extra
    if rex is None:
        rex = root._extra = {}
    views = rex.get("views")
    if views is None:
        views = rex["views"] = []
    elif len(views) >= 64 and not len(views) & (len(views) - 1):
        views[:] = [r for r in views if r() is not None]  # drop dead views now and then
    views.append(weakref.ref(view))


CUSTOM_VIEW = (
    "Output {nr} of {name} is a view and {what}. This view was created inside a custom "
    "Function (or because an input was returned as-is) and the autograd logic to handle "
    "view+inplace would override the custom backward associated with the custom Function, "
    "leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning "
    "the output of the custom Function.")


def refresh_view(x):
    """Rebuild the history of a view whose root was changed in place after it was made.

    The view's data already shows the new values (it shares memory with the root); its
    grad_fn still points into the root's old history. Replaying the view ops on the root
    gives the history PyTorch would give it.

    An output of a custom Function that shares memory with an input (``custom_view``: the
    Function's name, the output's number, the version when made) has no view ops to replay
    (its history is the Function's backward): once its memory was changed in place, using
    it raises RuntimeError, as PyTorch.
    """
    ex = x._extra
    custom = ex.get("custom_view")
    if custom is not None and x._vc[0] != custom[2]:
        raise RuntimeError(CUSTOM_VIEW.format(
            nr=custom[1], name=custom[0], what="its base or another view of its base has "
            "been modified inplace"))
    root = ex.get("view_of")
    if root is None or root._grad_fn is ex["root_fn"]:
        return
    t = root
    with _state.enable_grad():
        for op, attrs in ex["path"]:
            t = apply(op, (t,), attrs)
    old_fn = x._grad_fn
    x._grad_fn, x._output_nr, x._requires_grad = t._grad_fn, t._output_nr, t._requires_grad
    ex["root_fn"] = root._grad_fn
    ex.pop("no_grad_view", None)
    retain = ex.get("retains_grad")
    if retain is not None and old_fn is not x._grad_fn:
        retain(x)  # retain_grad() follows the tensor to its new grad_fn


def _after(op, inputs, datas, attrs, out, result):
    """The slow path after an op: the default float dtype, then the hooks of forward mode,
    anomaly mode, inference mode and the profiler."""
    state = _STATE
    if state.low_float and result.__class__ is Tensor:
        _default_float(datas, attrs, result)
    if state.hooked:
        for hook in AFTER_OP:
            hook(op, inputs, datas, attrs, out, result)


def _default_float(datas, attrs, result):
    """With a default float dtype other than float64 (``set_default_dtype(float32)``), a
    float result computed from integer or bool tensors and Python numbers (``i * 0.5``,
    ``i / i``, ``i.pow(0.5)``, ``where(c, i, 0.5)``) has the default dtype, as PyTorch's
    wrapped numbers give; NumPy computes it in float64. A float64 tensor among the inputs,
    or a dtype asked for (``i.double()``), keeps float64."""
    d = result._data
    if getattr(d, "dtype", None) != _F64 or result._grad_fn is not None \
            or not hasattr(d, "astype"):
        return
    for x in datas:
        if getattr(x, "dtype", None) is not None and x.dtype.kind in "fc":
            return
    for a in attrs:
        if isinstance(a, (np.dtype, type)) or getattr(a, "is_floating_point", None) is not None:
            return
    result._data = d.astype(DEFAULT_FLOAT[0])


_table.DISPATCHER.make_call = make_call
