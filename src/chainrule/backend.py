"""Backends: which array library a tensor's data belongs to, and how to compute with it.

A tensor's data is an array of NumPy (the default), Dask (a lazy array on a cluster),
CuPy (a GPU) or any library that implements the Python Array API standard (found through
``array-api-compat``). The backend is resolved from the array's type, once per type (a
registry keyed on the class, like HIPS autograd's ``VSpace.register``); the dispatcher's
NumPy fast path never looks it up.

A backend gives:

- ``xp``: the namespace kernels and rules compute with (the Array API standard's names),
  extended by a small provider table with what the standard lacks (``einsum``, special
  functions, LAPACK-level linalg). A name a backend does not provide raises
  NotImplementedError naming the name and the backend.
- ``device(array)``: a :class:`device` (``type`` and ``index``), as PyTorch's.
- ``lazy``: True for Dask: nothing is computed until the user asks (``Tensor.numpy()``,
  :func:`chainrule.compute`).
- ``kernel(op)``: the op's forward kernel bound to this backend (cached per op).
"""

from __future__ import annotations

import functools
import importlib
from types import SimpleNamespace

import numpy as np

__all__ = ["device", "Backend", "backend_of", "register_backend", "NUMPY", "kernel_for",
           "xp_kernel", "dtype_kind", "native_dtype", "on_device_of"]


class UnsupportedDtype:
    """A PyTorch dtype that NumPy has no type for (``chainrule.bfloat16``): it exists so
    code that names it (a table of dtypes, a comparison) runs; making a tensor of it raises
    TypeError, naming it (:func:`numpy_dtype`)."""

    __slots__ = ("name",)
    is_floating_point = True
    is_complex = False
    is_signed = True
    itemsize = 2

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name

    def unsupported(self):
        return TypeError(f"{self.name} is not supported: chainrule computes in NumPy's "
                         f"dtypes and NumPy has no {self.name}; use float32 (or float16) "
                         f"instead")


BFLOAT16 = UnsupportedDtype("bfloat16")  # chainrule.bfloat16


def numpy_dtype(dtype):
    """``dtype`` of any backend (NumPy's, a name, or another library's such as
    ``array_api_strict.float64``) as NumPy's dtype.

    Raises TypeError for :class:`UnsupportedDtype` (``bfloat16``), naming it."""
    try:
        return np.dtype(dtype)
    except TypeError:
        if isinstance(dtype, UnsupportedDtype):
            raise dtype.unsupported() from None
        return np.dtype(str(dtype).rsplit(".", 1)[-1])


def dtype_kind(dtype):
    """NumPy's one-letter kind ("f", "i", "u", "b", "c") of a dtype of any backend."""
    return numpy_dtype(dtype).kind


def native_dtype(backend, dtype):
    """``dtype`` (NumPy's, a name, or another library's) as ``backend``'s own dtype."""
    np_dtype = numpy_dtype(dtype)
    return np_dtype if backend is NUMPY else getattr(backend.xp, np_dtype.name)


class device:
    """Where a tensor's data lives: ``type`` ("cpu", "cuda", or an Array API library's
    device name) and ``index`` (None when the type has one device). Compares equal to its
    string form (``device("cuda:0") == "cuda:0"``), as PyTorch's ``torch.device``."""

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, str) and ":" in type and index is None:
            type, _, idx = type.partition(":")
            index = int(idx)
        self.type = str(type)
        self.index = None if index is None else int(index)

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        idx = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{idx})"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and (self.index or 0) == (other.index or 0)

    def __hash__(self):
        return hash((self.type, self.index or 0))


CPU = device("cpu")


def row_major(a):
    """``a`` laid out row-major (C order): a NumPy array NumPy left in its input's order (a
    transposed, permuted or expanded input) is copied; anything else is returned as is.
    PyTorch returns a contiguous tensor from reductions, scans, softmax, gather/scatter,
    tril/triu, ``cat``/``stack``..., so ``.view`` of their results works: their kernels
    pass their NumPy results through this (no copy when already C-contiguous)."""
    if a.__class__ is np.ndarray and not a.flags.c_contiguous:
        return np.ascontiguousarray(a)
    return a


def as_numpy(x):
    """``x`` as NumPy's functions take it: an ndarray, or an array that computes as one
    (the traced arrays of ``chainrule.compile``, which record those calls), as it is;
    anything else (numbers, lists, NumPy scalars) through ``numpy.asarray``."""
    if x.__class__ is np.ndarray or getattr(x, "numpy_like", False):
        return x
    return np.asarray(x)


def numpy_array(x, dtype=None, copy=None):
    """``numpy.array(x, dtype=dtype, copy=copy)`` (None: copy only when needed), keeping
    an array that computes as NumPy's (see :func:`as_numpy`) such an array."""
    if getattr(x, "numpy_like", False):
        if not copy and (dtype is None or x.dtype == dtype):
            return x
        return x.astype(x.dtype if dtype is None else dtype, copy=True)
    return np.array(x, dtype=dtype, copy=copy)


def dense_copy(a):
    """A copy of the NumPy array ``a`` as PyTorch's ``clone(preserve_format)`` lays it out:
    in ``a``'s own order when ``a`` is non-overlapping and dense (transposed, permuted),
    else row-major (an expanded or strided-with-gaps ``a``)."""
    f = a.flags
    if f.c_contiguous or f.f_contiguous:
        return np.array(a, copy=True, order="K")
    expected = a.itemsize
    for stride, n in sorted((abs(s), n) for s, n in zip(a.strides, a.shape) if n != 1):
        if stride != expected:
            return np.array(a, copy=True, order="C")
        expected *= n
    return np.array(a, copy=True, order="K")


def xp_kernel(fn):
    """Mark ``fn(xp, *arrays, *attrs)`` as a forward kernel written against an array
    namespace (it then runs on every backend); a plain callable is a NumPy-only kernel."""
    fn.xp = True
    return fn


class _Namespace(SimpleNamespace):
    """A backend's namespace: the library's Array API names plus its providers. A missing
    name raises NotImplementedError naming it and the backend."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotImplementedError(
            f"{name} is not available on the {self.__dict__.get('_backend', '?')} backend "
            "(neither its array namespace nor chainrule's provider table for it has it)")


# --- generic providers: NumPy's meaning, from the standard's names ------------------------
# A backend whose library lacks one of these names gets this version, written against the
# Array API standard (and the providers above it in this list).

def _swapaxes(xp):
    def swapaxes(x, axis1, axis2):
        axes = list(range(x.ndim))
        axes[axis1], axes[axis2] = axes[axis2], axes[axis1]
        return xp.permute_dims(x, tuple(axes))

    return swapaxes


def _diagonal(xp):
    def diagonal(x, offset=0, axis1=0, axis2=1):
        return xp.linalg.diagonal(xp.moveaxis(x, (axis1, axis2), (-2, -1)), offset=offset)

    return diagonal


def _trace(xp):
    def trace(x, offset=0, axis1=0, axis2=1):
        return xp.sum(xp.diagonal(x, offset, axis1, axis2), axis=-1)

    return trace


def host_to(dev, array):
    """NumPy ``array`` copied onto ``dev`` (a :class:`device`): "cuda:i" (CuPy), or an
    Array API library's device ("array_api_strict.device1", found among its namespace's
    ``devices()``). RuntimeError for a device that no installed library has."""
    if dev.type == "cuda":
        try:
            import cupy
        except ImportError:
            raise RuntimeError(f"device {str(dev)!r} needs CuPy (pip install "
                               "chainrule[gpu]) and a GPU") from None
        with cupy.cuda.Device(dev.index or 0):
            return cupy.asarray(array)
    library, _, name = dev.type.partition(".")
    try:
        xp = importlib.import_module(library) if name else None
    except ImportError:
        xp = None
    info = getattr(xp, "__array_namespace_info__", None)
    for d in (info().devices() if info is not None else ()):
        if str(d) == name or f"'{name}'" in str(d):
            return xp.asarray(array, device=d)
    raise RuntimeError(f"device {str(dev)!r} is not available: chainrule computes on the "
                       "CPU (NumPy, Dask), on 'cuda' (CuPy) or on an installed Array API "
                       "library's device")


def beside(array, like):
    """NumPy ``array`` (or None) on the device of ``like`` (an array of any backend): as it
    is on the CPU (NumPy, Dask, vmap's batches), else copied there (a GPU's, an Array API
    library's device), so that it can meet ``like`` in a kernel."""
    if array is None or like.__class__ is np.ndarray:
        return array
    b = backend_of(like)
    dev = b.device(like)
    return array if b.lazy or dev.type == "cpu" else host_to(dev, array)


class ChunkedShape(tuple):
    """A shape that remembers the chunks of the (lazy) array it was read from, so that a
    derivative rule broadcasting a cotangent back to it (the VJP of sum, mean, ...) makes
    the cotangent in the same chunks instead of one chunk Dask must split again."""

    def __new__(cls, shape, chunks):
        self = super().__new__(cls, shape)
        self.chunks = chunks
        return self


def _chunked_broadcast(xp):
    import dask.array as da

    def broadcast_to(g, shape):
        """``broadcast_to`` whose new and stretched dims take the chunks ``shape`` carries
        (a :class:`ChunkedShape`); the dims ``g`` already has keep ``g``'s chunks."""
        chunks = getattr(shape, "chunks", None)
        if chunks is None or not hasattr(g, "chunks"):
            return xp.broadcast_to(g, tuple(shape))
        lead = len(shape) - g.ndim
        out = tuple(chunks[i] if i < lead or g.shape[i - lead] == 1 else g.chunks[i - lead]
                    for i in range(len(shape)))
        return da.broadcast_to(g, tuple(shape), chunks=out)

    return broadcast_to


def on_device_of(x):
    """``device=`` for constructors making arrays beside ``x`` (Dask arrays have none)."""
    d = getattr(x, "device", None)
    return {} if d is None else {"device": d}


def _eye(xp):
    """eye(n_rows, n_cols, k=, dtype=, device=) by comparing two aranges (Dask's own eye
    loses a chunk when n_rows != n_cols)."""
    def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
        n_cols = n_rows if n_cols is None else n_cols
        kw = {} if device is None else {"device": device}
        rows = xp.reshape(xp.arange(n_rows, **kw), (n_rows, 1))
        cols = xp.reshape(xp.arange(n_cols, **kw), (1, n_cols))
        mask = (cols - rows) == k
        return mask if dtype == xp.bool else xp.astype(mask, dtype or xp.float64)

    return eye


def _diag(xp):
    def diag(v, k=0):
        if v.ndim == 2:
            return xp.diagonal(v, k, 0, 1)
        n = v.shape[0] + abs(k)
        parts = [v] + [xp.zeros_like(v[:1])] * abs(k)
        column = xp.concat(parts[::-1] if k > 0 else parts, axis=0)  # v[j - k] at column j
        return xp.eye(n, n, k=k, dtype=v.dtype, **on_device_of(v)) * column

    return diag


def _diagonal_scatter(xp):
    def diagonal_scatter(x, src, offset=0, dim1=0, dim2=1):
        """A copy of ``x`` with ``src`` on the diagonal (offset, dim1, dim2)."""
        moved = xp.moveaxis(x, (dim1, dim2), (-2, -1))
        n1, n2 = moved.shape[-2:]
        # src[..., i] lies at row i (offset >= 0) or column i (offset < 0): pad to that length
        length = n1 if offset >= 0 else n2
        pad = xp.zeros(tuple(src.shape[:-1]) + (length - src.shape[-1],), dtype=src.dtype,
                       **on_device_of(x))  # (an empty diagonal pads to a line of zeros)
        line = xp.concat([src, pad], axis=-1)
        line = xp.expand_dims(line, axis=-1 if offset >= 0 else -2)
        mask = xp.eye(n1, n2, k=offset, dtype=xp.bool, **on_device_of(x))
        return xp.moveaxis(xp.where(mask, line, moved), (-2, -1), (dim1, dim2))

    return diagonal_scatter


def _expit(xp):
    def expit(x):  # 1 / (1 + e^-x), split by sign so e^-x never overflows
        e = xp.exp(-xp.abs(x))
        return xp.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))

    return expit


_BASIC_INDEX = (int, np.integer, slice, type(None), type(Ellipsis))


def _index_put(xp):
    def index_put(x, indices, values, accumulate):
        """A copy of ``x`` with ``values`` written (added, when ``accumulate``) at
        ``indices``, through the library's ``__setitem__``. Adding at integer-array or
        mask indices needs a scatter-add (repeated indices add up), which the standard
        lacks: NotImplementedError."""
        out = xp.asarray(x, copy=True)
        if 0 in getattr(values, "shape", ()):  # nothing to write (Dask refuses empty ones)
            return out
        if any(i is None for i in indices) and hasattr(values, "shape"):
            # the standard's __setitem__ takes no None: drop them, and their size-1 axes
            region = out[indices].shape
            indices = tuple(i for i in indices if i is not None)
            values = xp.reshape(xp.broadcast_to(values, region), out[indices].shape)
        if accumulate:
            if not all(isinstance(i, _BASIC_INDEX) for i in indices):
                raise NotImplementedError(
                    f"index_put: adding at integer-array or mask indices needs a scatter-add, "
                    f"which the {xp._backend} backend does not provide")
            values = out[indices] + values
        # (one index alone, not in a tuple: array-api-strict converts the arrays of a tuple
        # key with NumPy, which its other devices refuse)
        out[indices[0] if len(indices) == 1 else indices] = values
        return out

    return index_put


def _numpy_index_put(x, indices, values, accumulate):
    out = dense_copy(x)
    if accumulate:
        np.add.at(out, indices, values)
    else:
        out[indices] = values
    return out


def broadcast_batch(xp, A, B):
    """``A`` (..., m, n) and ``B`` (..., p, q) broadcast to the same batch dimensions (the
    Array API's linalg.solve broadcasts them, CuPy's wants them equal)."""
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    if A.shape[:-2] != batch:
        A = xp.broadcast_to(A, batch + A.shape[-2:])
    if B.shape[:-2] != batch:
        B = xp.broadcast_to(B, batch + B.shape[-2:])
    return A, B


def _solve_triangular(xp):
    def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
        """X = T^-1 B (left) or B T^-1, T the referenced triangle of A (unit diagonal when
        ``unitriangular``), with a general solve (the standard has no triangular one)."""
        T = xp.triu(A) if upper else xp.tril(A)
        if unitriangular:
            n = A.shape[-1]
            eye = xp.eye(n, dtype=A.dtype, **on_device_of(A))
            T = T * (1 - eye) + eye
        T, B = broadcast_batch(xp, T, B)
        if left:
            return xp.linalg.solve(T, B)
        return xp.matrix_transpose(xp.linalg.solve(xp.matrix_transpose(T),
                                                   xp.matrix_transpose(B)))

    return solve_triangular


def _cross(xp):
    def cross(a, b, axis=-1):
        """a x b along ``axis`` (length 3), from the components."""
        a, b = xp.broadcast_arrays(a, b)
        a, b = xp.moveaxis(a, axis, -1), xp.moveaxis(b, axis, -1)
        a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
        b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
        c = xp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
        return xp.moveaxis(c, -1, axis)

    return cross


_GENERIC = {"solve_triangular": _solve_triangular, "cross": _cross,
            "index_put": _index_put, "expit": _expit, "swapaxes": _swapaxes,
            "diagonal": _diagonal, "trace": _trace, "diag": _diag,
            "diagonal_scatter": _diagonal_scatter}


class Backend:
    """One array library. See the module docstring."""

    def __init__(self, name, xp, *, lazy=False, providers=None, device_of=None,
                 to_numpy=None, from_numpy=None):
        self.name = name
        ns = {k: getattr(xp, k) for k in dir(xp) if not k.startswith("_")}
        for k in ("linalg", "fft"):  # extensions some libraries load on first access
            if k not in ns and hasattr(xp, k):
                ns[k] = getattr(xp, k)
        ns.update(providers or {})
        ns["_backend"] = name
        self.xp = _Namespace(**ns)
        for key, make in _GENERIC.items():
            if key not in ns:
                setattr(self.xp, key, make(self.xp))
        self.lazy = lazy
        self._device_of = device_of or (lambda a: CPU)
        self.one_device = device_of is None  # every array on one device (no check needed)
        self._to_numpy = to_numpy or np.asarray
        self._from_numpy = from_numpy
        self._kernels = {}
        self._raw = None

    def __repr__(self):
        return f"<backend {self.name}>"

    def device(self, array):
        return self._device_of(array)

    def to_numpy(self, array):
        """An explicit host copy: Dask computes, CuPy copies from the GPU."""
        return self._to_numpy(array)

    def from_numpy(self, array, like=None):
        if self._from_numpy is None:
            raise NotImplementedError(f"moving data onto the {self.name} backend is not "
                                      "supported")
        return self._from_numpy(array, like)

    def kernel(self, op):
        """``op``'s forward kernel on this backend (NotImplementedError when the op's
        kernel computes with NumPy only)."""
        k = self._kernels.get(op.name)
        if k is None:
            k = self._kernels[op.name] = kernel_for(op.kernel, self, op.name)
        return k


def kernel_for(forward, backend, name):
    """Bind a declared kernel to a backend: an Array API function name (``"exp"``), an
    :func:`xp_kernel`, or (NumPy backend only) a plain NumPy callable."""
    if isinstance(forward, str):
        return getattr(backend.xp, forward) if backend is not NUMPY else _np_name(forward)
    if getattr(forward, "xp", False):
        return functools.partial(forward, backend.xp)
    if backend is NUMPY:
        return forward

    def refuse(*args, **kwargs):
        raise NotImplementedError(
            f"{name}: its forward kernel computes with NumPy only, so it cannot run on the "
            f"{backend.name} backend (see KNOWN_GAPS in tests/backends.py)")

    return refuse


def _np_name(name):
    fn = getattr(np, name, None)
    if fn is None:
        fn = getattr(NUMPY.xp, name)
    return fn


# --- the registry ----------------------------------------------------------------------

_BY_TYPE: dict[type, Backend] = {}


def register_backend(array_type, backend):
    """Use ``backend`` for arrays of exactly ``array_type``."""
    _BY_TYPE[array_type] = backend


def backend_of(array):
    """The backend of ``array`` (resolved from its type once, then cached). Python scalars
    and NumPy scalars belong to NumPy. Raises TypeError for an object that is no array."""
    cls = array.__class__
    b = _BY_TYPE.get(cls)
    if b is not None:
        return b
    b = _resolve(array)
    _BY_TYPE[cls] = b
    return b


def _resolve(array):
    if isinstance(array, (np.ndarray, np.generic, float, int, bool, complex)):
        return NUMPY
    module = type(array).__module__.split(".")[0]
    if module == "dask":
        return _dask()
    if module == "cupy":
        return _cupy()
    try:
        from array_api_compat import array_namespace
    except ImportError as error:  # pragma: no cover - a dependency
        raise TypeError(f"{type(array).__name__} is not an array chainrule knows") from error
    try:
        xp = array_namespace(array)
    except TypeError as error:
        raise TypeError(f"{type(array).__name__} is not an array chainrule knows (NumPy, "
                        "Dask, CuPy or an Array API library)") from error
    return _array_api(xp)


#: The special functions the derivative table's kernels and rules take from a SciPy-like
#: ``special`` module (scipy.special on NumPy and Dask, whose ufuncs act on Dask arrays
#: lazily; cupyx.scipy.special on CuPy), under SciPy's names.
SPECIAL_FUNCTIONS = ("erfc", "erfinv", "erfcx", "gammaln", "digamma", "zeta", "ndtri",
                     "log_ndtr", "i0", "i0e", "i1", "i1e", "xlogy", "xlog1py", "entr",
                     "gamma", "rgamma", "gammasgn", "beta", "j0", "j1", "jn", "y0", "y1",
                     "yn", "iv", "ive", "gammainc", "gammaincc", "betainc")


def _scipy_special(special):
    """``{name: special.<name>}`` for the :data:`SPECIAL_FUNCTIONS` that ``special`` has."""
    return {name: getattr(special, name) for name in SPECIAL_FUNCTIONS
            if hasattr(special, name)}


_ROW_SUM_MAX = 128  # rows up to this length: NumPy's own sum adds them in one block too


def numpy_sum(x, axis=None, keepdims=False, dtype=None, **kwargs):
    """``np.sum``; a sum over the last axis of a C-contiguous float array whose rows are
    short (at most 128 entries, where NumPy's pairwise summation is one unrolled block as
    well) is einsum's ``'...i->...'``, about twice as fast (NumPy's reduction pays per
    row), with the same accuracy."""
    if (dtype is None and not kwargs and (x.__class__ is np.ndarray or
                                          getattr(x, "numpy_like", False)) and x.ndim > 1
            and (axis == -1 or axis == x.ndim - 1 or axis == (-1,) or axis == (x.ndim - 1,))
            and x.shape[-1] <= _ROW_SUM_MAX and x.dtype.kind == "f" and x.flags.c_contiguous):
        out = np.einsum("...i->...", x)
        return out[..., None] if keepdims else out
    return np.sum(x, axis=axis, keepdims=keepdims, dtype=dtype, **kwargs)


def _numpy_backend():
    import scipy.linalg
    from scipy import special

    def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
        batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
        A = np.broadcast_to(A, batch + A.shape[-2:])
        B = np.broadcast_to(B, batch + B.shape[-2:])
        if A.size == 0 or B.size == 0:  # SciPy refuses empty batches; the answer is empty
            return np.zeros(B.shape, dtype=np.result_type(A, B))
        if left:
            return scipy.linalg.solve_triangular(A, B, lower=not upper,
                                                 unit_diagonal=unitriangular,
                                                 check_finite=False)
        # X A' = B  <=>  A'^T X^T = B^T
        return np.swapaxes(scipy.linalg.solve_triangular(
            A, np.swapaxes(B, -1, -2), trans="T", lower=not upper,
            unit_diagonal=unitriangular, check_finite=False), -1, -2)

    providers = {"expit": special.expit, "erf": special.erf, **_scipy_special(special),
                 "swapaxes": np.swapaxes,
                 "solve_triangular": solve_triangular, "cross": np.cross,
                 "lu": scipy.linalg.lu,
                 "expm": scipy.linalg.expm, "solve_sylvester": scipy.linalg.solve_sylvester,
                 "index_put": _numpy_index_put, "sum": numpy_sum,
                 "einsum": lambda eq, *ops: np.einsum(eq, *ops, optimize=len(ops) > 2)}
    return Backend("numpy", np, providers=providers, to_numpy=np.asarray,
                   from_numpy=lambda a, like: np.asarray(a))


NUMPY = _numpy_backend()
register_backend(np.ndarray, NUMPY)


@functools.lru_cache(maxsize=None)
def _dask():
    import dask.array as da
    from array_api_compat import dask as _compat  # noqa: F401
    from scipy import special

    xp = importlib.import_module("array_api_compat.dask.array")
    def reshape(x, /, shape, **kwargs):
        """Dask reshapes only by merging or splitting dims along chunk boundaries; any
        other reshape goes through the flat array (merge, then split)."""
        try:
            return xp.reshape(x, shape, **kwargs)
        except (NotImplementedError, ValueError):
            return xp.reshape(xp.reshape(x, (-1,), **kwargs), shape, **kwargs)

    chunked_broadcast = _chunked_broadcast(xp)

    def broadcast_to(x, /, shape):
        """A :class:`ChunkedShape` (a cotangent broadcast back by a recorded rule, with
        create_graph) gives the chunks of the new and stretched dims."""
        if shape.__class__ is ChunkedShape:
            return chunked_broadcast(x, shape)
        return xp.broadcast_to(x, shape)

    providers = {
        # scipy's ufuncs act on Dask arrays lazily, chunk by chunk (__array_ufunc__)
        "expit": special.expit, "erf": special.erf, **_scipy_special(special),
        "einsum": da.einsum, "swapaxes": da.swapaxes, "reshape": reshape,
        "broadcast_to": broadcast_to,
    }

    def to_numpy(a):
        return np.asarray(a.compute())

    def from_numpy(a, like):
        chunks = "auto" if like is None else like.chunks
        return da.from_array(np.asarray(a), chunks=chunks)

    backend = Backend("dask", xp, lazy=True, providers=providers, to_numpy=to_numpy,
                      from_numpy=from_numpy)
    backend.xp.eye = _eye(backend.xp)
    ns = backend.xp
    ns.linalg, ns.expm, ns.solve_sylvester, ns.numpy_task = _dask_linalg(ns, da)
    return backend


def _dask_linalg(xp, da):
    """Dask's linalg made chunk-aware. Its factorizations take single matrices in given
    chunk layouts (QR and SVD: one chunk across the shorter dimension; LU, Cholesky:
    square blocks), so inputs are rechunked to that layout, and a batch is done matrix by
    matrix (lazily). What Dask's blocked algorithms lack (eigh, det, slogdet, expm,
    Sylvester, complete QR, full SVD) runs NumPy/SciPy on the whole matrix in one lazy
    task: that matrix must fit one worker."""
    import dask
    import scipy.linalg

    own = xp.linalg
    linalg = SimpleNamespace(**{k: getattr(own, k) for k in dir(own) if not k.startswith("_")})

    def per_matrix(fn):
        """``fn`` of single matrices, on batches (leading dims broadcast): one call per
        matrix, results stacked."""
        def batched(*arrays, **kwargs):
            if all(a.ndim <= 2 for a in arrays):
                return fn(*arrays, **kwargs)
            batch = np.broadcast_shapes(*(a.shape[:-2] for a in arrays))
            arrays = [xp.broadcast_to(a, batch + a.shape[-2:]) for a in arrays]
            outs = [fn(*(a[idx + (Ellipsis,)] for a in arrays), **kwargs)
                    for idx in np.ndindex(*batch)]
            if isinstance(outs[0], tuple):
                return tuple(xp.reshape(xp.stack(list(o)), batch + o[0].shape)
                             for o in zip(*outs))
            return xp.reshape(xp.stack(outs), batch + outs[0].shape)
        return batched

    def whole(fn, arrays, shapes):
        """``fn`` (NumPy/SciPy) on whole matrices in one lazy task; one array per shape."""
        def run(*mats):
            out = fn(*mats)
            return tuple(np.asarray(o) for o in (out if isinstance(out, tuple) else (out,)))

        parts = dask.delayed(run, nout=len(shapes), pure=True)(*arrays)
        dtype = np.result_type(*(a.dtype for a in arrays))
        outs = tuple(da.from_delayed(p, shape, dtype=dtype) for p, shape in zip(parts, shapes))
        return outs if len(outs) > 1 else outs[0]

    def one_chunk_across(x):  # tall-and-skinny / short-and-fat layouts
        if len(x.chunks[-1]) > 1 and len(x.chunks[-2]) > 1:
            return x.rechunk({x.ndim - (1 if x.shape[-1] <= x.shape[-2] else 2): -1})
        return x

    def square_chunks(x):  # every block square (LU, Cholesky)
        size = max(max(x.chunks[-1]), max(x.chunks[-2]))
        size = size if x.shape[-1] % size == 0 else x.shape[-1]
        return x.rechunk((size, size))

    def qr(x, /, *, mode="reduced"):
        if mode == "complete":  # Dask's blocked QR gives the reduced factors only
            m, n = x.shape
            return whole(lambda a: np.linalg.qr(a, mode="complete"), [x], [(m, m), (m, n)])
        return own.qr(one_chunk_across(x), mode=mode)

    def svd(x, /, *, full_matrices=True):
        if full_matrices:  # Dask's blocked SVD gives the thin factors only
            m, n = x.shape
            return whole(np.linalg.svd, [x], [(m, m), (min(m, n),), (n, n)])
        return own.svd(one_chunk_across(x), full_matrices=False)

    def cholesky(x, /, *, upper=False):
        # array-api-compat's Dask cholesky returns Dask's default, the upper factor
        return da.linalg.cholesky(square_chunks(x), lower=not upper)

    def solve(a, b, /):
        a = square_chunks(a)
        return own.solve(a, b.rechunk({0: a.chunks[0]}))

    linalg.qr, linalg.svd, linalg.cholesky = per_matrix(qr), per_matrix(svd), \
        per_matrix(cholesky)
    linalg.svdvals = per_matrix(lambda x: own.svd(one_chunk_across(x), full_matrices=False)[1])
    # (Dask's inv computes float32 in float64: the result keeps the input's dtype)
    linalg.inv = per_matrix(lambda x: own.inv(square_chunks(x)).astype(x.dtype, copy=False))
    linalg.solve = per_matrix(solve)
    linalg.eigh = per_matrix(lambda x: whole(np.linalg.eigh, [x], [x.shape[-1:], x.shape]))
    linalg.det = per_matrix(lambda x: whole(np.linalg.det, [x], [()]))
    linalg.slogdet = per_matrix(lambda x: whole(np.linalg.slogdet, [x], [(), ()]))
    expm = per_matrix(lambda x: whole(scipy.linalg.expm, [x], [x.shape]))
    sylvester = per_matrix(lambda a, b, c: whole(scipy.linalg.solve_sylvester, [a, b, c],
                                                 [c.shape]))
    def numpy_task(fn, arrays, shape):
        """``fn`` (a NumPy kernel, batched itself) on whole arrays in one lazy task."""
        return whole(fn, arrays, [shape])

    return linalg, expm, sylvester, numpy_task


@functools.lru_cache(maxsize=None)
def _cupy():  # pragma: no cover - needs a GPU
    import cupy
    import cupyx
    from cupyx.scipy import special

    xp = importlib.import_module("array_api_compat.cupy")

    # ufunc.at (CuPy 13+; cupyx.scatter_add before, deprecated since)
    add_at = cupy.add.at if hasattr(cupy.add, "at") else cupyx.scatter_add

    def index_put(x, indices, values, accumulate):
        out = cupy.array(x, copy=True)
        if accumulate:
            add_at(out, indices, values)
        else:
            out[indices] = values
        return out

    # No scatter_amax/amin for scatter_reduce: CuPy 14.2's maximum.at/minimum.at (and
    # cupyx.scatter_max/min) round float64 values to float32 (6.29 -> 6.289999961853027).
    providers = {"expit": special.expit, "erf": special.erf, **_scipy_special(special),
                 "einsum": cupy.einsum, "swapaxes": cupy.swapaxes, "index_put": index_put}
    if "jn" not in providers and hasattr(special, "jv"):  # jn is jv at integer orders
        providers["jn"] = special.jv
    import cupyx.scipy.linalg

    def matrix_by_matrix(fn, shapes):
        """``fn`` of one matrix (CuPy's expm and lu) over a batch, matrix by matrix;
        ``shapes(m, n)`` gives its outputs' matrix shapes (for an empty batch)."""
        def batched(a):
            if a.ndim == 2:
                return fn(a)
            batch, flat = a.shape[:-2], a.reshape((-1,) + a.shape[-2:])
            if flat.shape[0] == 0:
                outs = [cupy.empty(batch + s, dtype=a.dtype) for s in shapes(*a.shape[-2:])]
                return outs[0] if len(outs) == 1 else tuple(outs)
            results = [fn(m) for m in flat]
            if not isinstance(results[0], tuple):
                return cupy.stack(results).reshape(a.shape)
            return tuple(cupy.stack(parts).reshape(batch + parts[0].shape)
                         for parts in zip(*results))

        return batched

    if hasattr(cupyx.scipy.linalg, "expm"):
        providers["expm"] = matrix_by_matrix(cupyx.scipy.linalg.expm, lambda m, n: [(m, n)])
    if hasattr(cupyx.scipy.linalg, "lu"):
        providers["lu"] = matrix_by_matrix(cupyx.scipy.linalg.lu, lambda m, n: [
            (m, m), (m, min(m, n)), (min(m, n), n)])
    return Backend("cupy", xp, providers=providers,
                   device_of=lambda a: device("cuda", a.device.id),
                   to_numpy=cupy.asnumpy, from_numpy=lambda a, like: cupy.asarray(a))


@functools.lru_cache(maxsize=None)
def _array_api(xp):
    name = xp.__name__.split(".")[-1] if xp.__name__.startswith("array_api_compat") \
        else xp.__name__

    def device_of(a):
        d = str(a.device)  # e.g. "array_api_strict.Device('device1')" or "cpu"
        inner = d.split("'")[1] if "'" in d else d
        return device(inner if inner == "cpu" else f"{name}.{inner}")

    def to_numpy(a):
        # DLPack to the host; a library that refuses host copies on this device raises
        return np.asarray(xp.asarray(a, device=_default_device(xp)))

    def from_numpy(a, like):
        return xp.asarray(a, device=None if like is None else like.device)

    providers = {}
    if hasattr(xp, "einsum"):
        providers["einsum"] = xp.einsum
    return Backend(name, xp, providers=providers, device_of=device_of, to_numpy=to_numpy,
                   from_numpy=from_numpy)


def _default_device(xp):
    info = getattr(xp, "__array_namespace_info__", None)
    return info().default_device() if info is not None else None
