"""``chainrule.testing``: ``assert_close`` and ``make_tensor``, as ``torch.testing``'s, for
test suites ported from PyTorch.

``assert_close(actual, expected)`` checks shape, dtype (``check_dtype``) and values within
``atol + rtol * |expected|``, with PyTorch's default tolerances per dtype (float64: 1e-7 and
1e-7; float32: 1.3e-6 and 1e-5; float16: 1e-3 and 1e-5; integers and bools: exact), and
PyTorch's messages (``Tensor-likes are not close!``, the mismatch count, the greatest
absolute and relative differences and where). Sequences and mappings are compared item by
item; the failing item is named.
"""

from __future__ import annotations

import math

import numpy as np

from . import _creation
from ._tensor import Tensor
from .backend import numpy_dtype

__all__ = ["assert_close", "make_tensor"]

_TOLERANCES = {np.dtype(np.float16): (1e-3, 1e-5), np.dtype(np.float32): (1.3e-6, 1e-5),
               np.dtype(np.float64): (1e-7, 1e-7)}


def _tolerances(*dtypes):
    """PyTorch's defaults: the loosest of the dtypes' (exact for integers and bools)."""
    pairs = [_TOLERANCES.get(np.dtype(d), (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _name(dtype):
    return "chainrule." + np.dtype(dtype).name


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Raise AssertionError unless ``actual`` and ``expected`` are close (see the module
    docstring). ``rtol`` and ``atol`` go together (give both or neither); ``equal_nan``
    counts NaN == NaN; ``msg`` (a string, or a function of the default message) replaces
    the message.

    Raises ValueError when only one of ``rtol``/``atol`` is given, TypeError for inputs of
    different kinds (a tensor against a mapping, ...).
    """
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but "
                         f"got no {'rtol' if rtol is None else 'atol'}.")
    _compare(actual, expected, rtol, atol, equal_nan, check_dtype, msg, [])


def _compare(actual, expected, rtol, atol, equal_nan, check_dtype, msg, path):
    if isinstance(expected, dict) or isinstance(actual, dict):
        if not (isinstance(actual, dict) and isinstance(expected, dict)):
            raise TypeError(f"assert_close: cannot compare a {type(actual).__name__} with a "
                            f"{type(expected).__name__}")
        if set(actual) != set(expected):
            _fail(f"The keys of the mappings do not match: {sorted(map(str, actual))} != "
                  f"{sorted(map(str, expected))}.", msg, path)
        for k in expected:
            _compare(actual[k], expected[k], rtol, atol, equal_nan, check_dtype, msg,
                     path + [repr(k)])
        return
    if isinstance(expected, (list, tuple)) or isinstance(actual, (list, tuple)):
        if not (isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple))):
            raise TypeError(f"assert_close: cannot compare a {type(actual).__name__} with a "
                            f"{type(expected).__name__}")
        if len(actual) != len(expected):
            _fail(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                  msg, path)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, rtol, atol, equal_nan, check_dtype, msg, path + [str(i)])
        return
    scalar = not isinstance(actual, (Tensor, np.ndarray)) and \
        not isinstance(expected, (Tensor, np.ndarray))
    a, e = _array(actual), _array(expected)
    if a.shape != e.shape:
        _fail(f"The values for attribute 'shape' do not match: {a.shape} != {e.shape}.", msg,
              path)
    if check_dtype and a.dtype != e.dtype and not scalar:
        _fail(f"The values for attribute 'dtype' do not match: {_name(a.dtype)} != "
              f"{_name(e.dtype)}.", msg, path)
    if rtol is None:
        rtol, atol = _tolerances(a.dtype, e.dtype) if not scalar else _tolerances(
            np.float64 if isinstance(actual, float) or isinstance(expected, float)
            else np.int64)
    _values(a, e, rtol, atol, equal_nan, msg, path, scalar, actual, expected)


def _array(x):
    if isinstance(x, Tensor):
        x = x.detach()._data
    return np.asarray(x)


def _values(a, e, rtol, atol, equal_nan, msg, path, scalar, actual, expected):
    exact = rtol == 0 and atol == 0
    af, ef = a.astype(np.float64), e.astype(np.float64)
    with np.errstate(invalid="ignore"):
        ok = np.isclose(af, ef, rtol=rtol, atol=atol, equal_nan=equal_nan) if not exact \
            else (af == ef) | (equal_nan & np.isnan(af) & np.isnan(ef))
    if bool(np.all(ok)):
        return
    with np.errstate(divide="ignore", invalid="ignore"):
        abs_diff = np.abs(af - ef)
        rel_diff = abs_diff / np.abs(ef)
    allowed = (lambda x: f" (up to {x} allowed)") if not exact else (lambda x: "")
    if scalar or a.ndim == 0:  # PyTorch words a 0-d tensor as a scalar too
        got = actual if scalar else a.item()
        want = expected if scalar else e.item()
        _fail(f"Scalars are not {'equal' if exact else 'close'}!\n\nExpected {want} but got "
              f"{got}.\nAbsolute difference: {float(abs_diff)}{allowed(atol)}\nRelative "
              f"difference: {float(rel_diff)}{allowed(rtol)}", msg, path)
    bad = ~ok
    n_bad, n = int(bad.sum()), ok.size

    def worst(d):  # where the largest difference among the mismatches is (NaN counts most)
        d = np.where(bad, np.where(np.isnan(d), np.inf, d), -np.inf)
        return np.unravel_index(int(np.argmax(d)), ok.shape)

    ia, ir = worst(abs_diff), worst(rel_diff)
    fmt = (lambda v: f"{int(v)}") if exact and a.dtype.kind in "iub" else (lambda v: f"{v}")
    _fail(f"Tensor-likes are not {'equal' if exact else 'close'}!\n\nMismatched elements: "
          f"{n_bad} / {n} ({100 * n_bad / n:.1f}%)\nGreatest absolute difference: "
          f"{fmt(abs_diff[ia])} at index {tuple(int(k) for k in ia)}{allowed(atol)}\n"
          f"Greatest relative difference: {float(rel_diff[ir])} at index "
          f"{tuple(int(k) for k in ir)}{allowed(rtol)}", msg, path)


def _fail(text, msg, path):
    if path:
        text += f"\n\nThe failure occurred for item {''.join(f'[{p}]' for p in path)}"
    if msg is not None:
        text = msg(text) if callable(msg) else msg
    raise AssertionError(text)


def make_tensor(*shape, dtype, device=None, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of ``shape`` filled with uniform values in [low, high) (floats: default
    [-9, 9]; integers: [-9, 10); bools: random), from chainrule's generator, as
    ``torch.testing.make_tensor``. ``exclude_zero`` replaces zeros by the dtype's
    smallest step (or 1).

    Raises ValueError when ``low >= high``.
    """
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    dt = np.dtype(numpy_dtype(dtype))
    rng = _creation.default_generator
    if dt.kind == "b":
        data = rng.random(shape) < 0.5
    else:
        lo = -9 if low is None else low
        hi = (10 if dt.kind in "iu" else 9) if high is None else high
        if not lo < hi and not (dt.kind == "f" and math.isclose(lo, hi)):
            raise ValueError(f"make_tensor: low ({lo}) must be less than high ({hi})")
        data = rng.integers(math.ceil(lo), math.ceil(hi), size=shape) if dt.kind in "iu" \
            else rng.uniform(lo, hi, size=shape)
        data = data.astype(dt)
        if exclude_zero:
            data[data == 0] = 1 if dt.kind in "iu" else np.finfo(dt).eps
    t = _creation.tensor(data, dtype=dt, device=device)
    return t.requires_grad_(True) if requires_grad else t
