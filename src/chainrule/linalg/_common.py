"""What the linalg families share: argument checks (shapes named in every message),
helpers of their rules (``_col``, ``_scalar_to_matrix``, ...), and the pieces their
rule-namespace declarations are made of (a backend's ``xp.linalg`` name, a provider, an
xp kernel, a NumPy kernel with singular cases run exactly where the values can be read).
It declares no primitive."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg

from .._dispatch import ShapeError
from .._tensor import Tensor
from ..backend import NUMPY, numpy_dtype


def _is_array(x):
    return isinstance(x, (Tensor, np.ndarray)) or (hasattr(x, "shape") and hasattr(x, "dtype"))


def _data(x):
    if isinstance(x, Tensor):
        return x._data
    return x if _is_array(x) else np.asarray(x)


def _shape(x):
    return tuple(x.shape) if _is_array(x) else np.shape(x)


def _as_input(x):
    """Tensors and arrays of any backend pass through; array-likes become NumPy arrays."""
    return x if _is_array(x) else np.asarray(x)


def _describe(names, shapes):
    return " and ".join(f"{n} of shape {tuple(s)}" for n, s in zip(names, shapes))


def _shape_error(op, problem, names, shapes):
    return ShapeError(f"{op}: {problem}, got {_describe(names, shapes)}")


def _check_square(op, name, x, names=None, shapes=None):
    """``x`` must be ``(*, n, n)``; the message names every argument's shape."""
    s = _shape(x)
    names = names or (name,)
    shapes = shapes or (s,)
    if len(s) < 2:
        raise _shape_error(op, f"{name} must have at least 2 dimensions", names, shapes)
    if s[-1] != s[-2]:
        raise _shape_error(op, f"{name} must be a batch of square matrices, but they are "
                               f"{s[-2]} by {s[-1]} matrices", names, shapes)
    return s


def _batch(op, names, shapes, batches):
    try:
        return np.broadcast_shapes(*batches)
    except ValueError:
        raise _shape_error(op, "the batch dimensions " + " and ".join(
            str(tuple(b)) for b in batches) + " cannot be broadcast", names, shapes) from None


def _mT(x):
    return np.swapaxes(x, -1, -2)


def _first_zero_pivot(A):
    """(batch index, 1-based diagonal index of U) of the first matrix of ``A`` whose LU
    factorization has an exactly zero pivot (what LAPACK's getrf reports), or None."""
    n = A.shape[-1]
    for b, a in enumerate(A.reshape(-1, n, n)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lu, _ = scipy.linalg.lu_factor(a, check_finite=False)
        zero = np.flatnonzero(np.diagonal(lu) == 0)
        if zero.size:
            return b, int(zero[0]) + 1
    return None


def _batch_prefix(A, b):
    return f"(Batch element {b}): " if A.ndim > 2 else ""


def _col(F, x, vector):
    return F.unsqueeze(x, -1) if vector else x


def _uncol(F, x, vector):
    return F.squeeze(x, -1) if vector else x


def _batched_trace_of_product(F, X, Y):
    """tr(X Y) over the last two dims."""
    return F.sum(X * F.mT(Y), (-2, -1), False)


def _scalar_to_matrix(F, s):
    return F.unsqueeze(F.unsqueeze(s, -1), -1)


def _linalg_name(name):
    return lambda xp, dev, lazy: getattr(xp.linalg, name)


def _provided(name):
    return lambda xp, dev, lazy: getattr(xp, name)


def _kernel_of(kernel):
    """The rule-namespace version of an xp kernel ``kernel(xp, *args)`` on a backend."""
    return lambda xp, dev, lazy: lambda *args: kernel(xp, *args)


def _exact(xp, kernel, shape, arrays, general):
    """A NumPy ``kernel`` that handles the singular cases (through an SVD, a branch per
    matrix): run as it is on NumPy, as one lazy task on Dask (``numpy_task``); elsewhere
    ``general(xp, *arrays)``, the formula for invertible matrices (inf/nan at singular
    ones: telling them apart would need the values on the host)."""
    if xp is NUMPY.xp:
        return kernel(*arrays)
    if xp._backend == "dask":
        return xp.numpy_task(kernel, list(arrays), shape)
    return general(xp, *arrays)


GILES = "Giles (2008), An extended collection of matrix derivative results for forward and " \
        "reverse mode automatic differentiation"


def _float_dtype(x):
    """The float dtype of ``x`` as NumPy's (float64 for integers)."""
    dtype = numpy_dtype(_data(x).dtype)
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


def _is_vector_rhs(a_shape, b_shape):
    # PyTorch's rule: B is a (batch of) vector(s) if it is 1-D, or if it has exactly A's
    # shape without the last dimension.
    return len(b_shape) == 1 or (len(b_shape) == len(a_shape) - 1
                                 and tuple(b_shape) == tuple(a_shape[:-1]))


def _transpose(x):
    if isinstance(x, Tensor):
        return x.mT
    return _mT(np.asarray(x))
