"""Elementwise primitives with NumPy broadcasting.

Their Jacobians are diagonal (unary) or diagonal per input (binary), so each VJP is the
cotangent times the partial derivative, and the JVP is the tangent times the same factor.
Broadcast inputs get their cotangent summed back by the engine.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from .._dispatch import IN_PLACE, ShapeError, apply, promote_0d
from .._ns import RAW
from .._state import STATE
from .._table import TABLE, Singular, defop, documented, elementwise
from .._tensor import Tensor, check_memory_format, contiguous_format, preserve_format, wrap
from ..backend import (
    NUMPY,
    backend_of,
    beside,
    dtype_kind,
    native_dtype,
    numpy_dtype,
    on_device_of,
    xp_kernel,
)
from ._dims import number_arg

__all__ = [
    "add", "sub", "mul", "div", "true_divide", "pow", "neg", "abs", "sign", "exp", "log",
    "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "relu", "softplus",
    "erf", "clamp", "clip", "maximum", "minimum", "where", "square", "reciprocal",
    "lt", "le", "gt", "ge", "eq", "ne", "logical_not", "isnan", "isfinite", "clone",
    "to_dtype",
]

CALCULUS = "elementary calculus (derivative of a scalar function applied elementwise)"

# --- binary arithmetic ---------------------------------------------------------------

ADD = defop(
    "add", "add", ("self", "other"),
    vjp={"self": lambda F, g: g, "other": lambda F, g: g},
    jvp={"self": lambda F, t: t, "other": lambda F, t: t},
    math={"self": "grad_x = grad", "other": "grad_y = grad", "out": "dz = dx + dy"},
    source=CALCULUS + "; broadcasting undone by summing (the engine's sum_to)",
)
SUB = defop(
    "sub", "subtract", ("self", "other"),
    vjp={"self": lambda F, g: g, "other": lambda F, g: -g},
    jvp={"self": lambda F, t: t, "other": lambda F, t: -t},
    math={"self": "grad_x = grad", "other": "grad_y = -grad", "out": "dz = dx - dy"},
    source=CALCULUS,
)
MUL = defop(
    "mul", "multiply", ("self", "other"),
    vjp={"self": lambda F, g, other: g * other, "other": lambda F, g, self: g * self},
    jvp={"self": lambda F, t, other: t * other, "other": lambda F, t, self: self * t},
    math={"self": "grad_x = grad * y", "other": "grad_y = grad * x",
          "out": "dz = dx * y + x * dy"},
    source=CALCULUS + " (product rule)",
)
DIV = defop(
    "div", "divide", ("self", "other"),
    # grad_y from x and y (as PyTorch's div backward), not from the output: changing the
    # quotient in place (z = x / y; z.mul_(2)) then leaves the backward valid
    vjp={"self": lambda F, g, other: g / other,
         "other": lambda F, g, self, other: -g * (self / other) / other},
    jvp={"self": lambda F, t, other: t / other,
         "other": lambda F, t, out, other: -t * out / other},
    math={"self": "grad_x = grad / y", "other": "grad_y = -grad * (x / y) / y",
          "out": "dz = dx / y - dy * z / y"},
    source=CALCULUS + " (quotient rule)",
    singular={"self": Singular("y = 0", "infinite", lambda other: other == 0,
                               "where(m, x / where(m, y, 1.0), 0.0)"),
              "other": Singular("y = 0", "infinite", lambda other: other == 0,
                                "where(m, x / where(m, y, 1.0), 0.0)")},
)


def _pow_base(F, g, self, exponent):
    # d/dx x^p = p x^(p-1); where p == 0 the derivative is 0 even at x == 0 (PyTorch's choice).
    # grad * (p x^(p-1)), grouped as PyTorch's pow_backward: the second derivative then
    # multiplies grad * p by (p - 1) x^(p-2), which is 0 (not inf * 0 = NaN) for x = 0.5,
    # p = 1e300
    if isinstance(exponent, (int, float)):  # a number: decided here, not elementwise
        return F.zeros_like(g) if exponent == 0 else g * (exponent * self ** (exponent - 1))
    return F.where(exponent == 0, 0.0, g * (exponent * self ** (exponent - 1)))


def _pow_exponent(F, g, self, exponent, out):
    # d/dp x^p = x^p log x; defined as 0 where x == 0 and p >= 0 (the limit for p > 0), as
    # PyTorch's pow_backward_exponent (where p < 0, x^p log x = inf * -inf stays). log x is
    # cast to the result's dtype: a scalar base (2.0 ** x) must not upcast a float32 x.
    if isinstance(self, (int, float)):  # a number base (2.0 ** x)
        if self == 0:  # 0 where p >= 0, and inf * log(0) = -inf where p < 0 (PyTorch's)
            if isinstance(exponent, (int, float)):
                return F.zeros_like(g) if exponent >= 0 else g * out * -math.inf
            return F.where(exponent >= 0, 0.0, g * out * -math.inf)
        # log of a negative base is NaN (the real power has no derivative in p), not
        # math.log's ValueError
        return g * out * (math.log(self) if self > 0 else math.nan)
    masked = (self == 0) & (exponent >= 0)
    log_self = F.cast(F.log(F.where(masked, 1.0, self)), out.dtype)
    return F.where(masked, 0.0, g * out * log_self)


@xp_kernel
def _pow_forward(xp, x, p):
    try:
        return xp.pow(x, p)
    except ValueError:  # NumPy: "Integers to negative integer powers are not allowed"
        return _int_pow_negative(xp, x, p)


def _int_pow_negative(xp, x, p):
    """Integer ``x ** p`` with some ``p < 0``, as PyTorch's: 1 / x^|p| truncated, so 1 for
    x = 1, +-1 for x = -1 (by the parity of p), and 0 otherwise (0 ** -1 included)."""
    like = x if hasattr(x, "shape") else p  # a number goes beside the other's device
    x, p = (a if hasattr(a, "shape") else xp.asarray(a, **on_device_of(like)) for a in (x, p))
    negative = p < 0
    out = xp.pow(x, xp.where(negative, 0, p))
    odd = (p % 2) != 0
    sign = 1 - 2 * xp.astype(odd, x.dtype)  # (-1)^p (a where of two numbers is not standard)
    small = xp.where(x == 1, 1, xp.where(x == -1, sign, 0))
    return xp.where(negative, xp.astype(small, out.dtype), out)


POW = defop(
    "pow", _pow_forward, ("self", "exponent"),
    vjp={"self": _pow_base, "exponent": _pow_exponent},
    jvp={"self": _pow_base, "exponent": _pow_exponent},
    math={"self": "grad_x = grad * p * x^(p-1)", "exponent": "grad_p = grad * x^p * log(x)",
          "out": "dz = p x^(p-1) dx + x^p log(x) dp"},
    source=CALCULUS + "; zero-masking at x = 0 follows PyTorch's pow_backward",
    singular={"self": Singular("x = 0 with an exponent below 1", "infinite",
                               lambda self, exponent: (self == 0) & (exponent < 1)
                               & (exponent != 0),
                               "where(m, where(m, x, 1.0) ** p, 0.0)")},
)


_ndarray = np.ndarray


def _tie_split(F, g, a, b):
    # g where a wins, g/2 at ties (the subgradient PyTorch uses), 0 where b wins (even an
    # inf or NaN g), and g where either is NaN (it propagates: PyTorch's maximum backward)
    return keep(F, g, ~(a <= b)) + keep(F, g * 0.5, a == b)


def _mask(F, mask, like):
    return F.cast(mask, like.dtype)


_SAME_SIZE_INT = {np.dtype(np.float64): np.int64, np.dtype(np.float32): np.int32,
                  np.dtype(np.float16): np.int16}


def keep(F, g, mask):
    """``where(mask, g, 0)``: the cotangent (or tangent) ``g`` where ``mask`` holds and an
    exact 0 elsewhere, even where ``g`` is inf or NaN (``g * mask`` would give NaN there;
    PyTorch's threshold, clamp and maximum backwards use where / masked_fill).

    On NumPy float arrays (a first-order pass) the mask selects g's bits: branch-free, as
    fast as a product, where ``np.where`` on a random mask is several times slower."""
    if F is RAW and g.__class__ is _ndarray and mask.__class__ is _ndarray:
        ints = _SAME_SIZE_INT.get(g.dtype)
        if ints is not None:
            bits = mask.astype(ints)
            np.negative(bits, out=bits)  # 1 -> all bits set, 0 -> none
            if bits.shape == g.shape:
                return np.bitwise_and(g.view(ints), bits, out=bits).view(g.dtype)
            return np.bitwise_and(g.view(ints), bits).view(g.dtype)
    return F.where(mask, g, 0.0)


def _pick(name, kernel, word, first):
    """maximum / minimum: ``first(a, b)`` orders the arguments so the winner comes first."""
    return defop(
        name, kernel, ("self", "other"),
        vjp={"self": lambda F, g, self, other: _tie_split(F, g, *first(self, other)),
             "other": lambda F, g, self, other: _tie_split(F, g, *first(other, self))},
        jvp={"self": lambda F, t, self, other: _tie_split(F, t, *first(self, other)),
             "other": lambda F, t, self, other: _tie_split(F, t, *first(other, self))},
        math={"self": "grad_x = grad * ([x wins] + [x == y] / 2)  (NaN: the gradient passes)",
              "other": "grad_y = grad * ([y wins] + [x == y] / 2)  (NaN: the gradient passes)",
              "out": "dz = [x wins] dx + [y wins] dy (halves at ties)"},
        source=f"subgradient of {word}(x, y); ties split evenly as in PyTorch",
    )


MAXIMUM = _pick("maximum", "maximum", "max", lambda a, b: (a, b))
MINIMUM = _pick("minimum", "minimum", "min", lambda a, b: (b, a))
WHERE = defop(
    "where", "where", ("condition", "self", "other"),
    vjp={"condition": lambda F, g: None,
         "self": lambda F, g, condition: F.where(condition, g, 0.0),
         "other": lambda F, g, condition: F.where(condition, 0.0, g)},
    jvp={"condition": lambda F, t: None,
         "self": lambda F, t, condition: F.where(condition, t, 0.0),
         "other": lambda F, t, condition: F.where(condition, 0.0, t)},
    math={"condition": "not differentiable (boolean)",
          "self": "grad_x = where(c, grad, 0)", "other": "grad_y = where(c, 0, grad)",
          "out": "dz = where(c, dx, dy)"},
    source="selection is linear in each branch; the condition is not differentiable",
)


@documented(ADD)
def add(input, other, *, alpha=1, out=None):
    """``input + alpha * other`` with NumPy broadcasting. Shapes must broadcast (ValueError)."""
    if out is not None:  # PyTorch's out=: the result written into out
        return IN_PLACE.write_out(out, add(input, other, alpha=alpha), "add")
    if alpha != 1:
        # a number stays a number (a weak scalar): 0-d float32 + 3.0 * 2 stays float32
        other = other * alpha if isinstance(other, (int, float)) else mul(other, alpha)
    return apply(ADD, (input, other))


@documented(SUB)
def sub(input, other, *, alpha=1, out=None):
    """``input - alpha * other`` with NumPy broadcasting."""
    if out is not None:
        return IN_PLACE.write_out(out, sub(input, other, alpha=alpha), "sub")
    if alpha != 1:
        # a number stays a number (a weak scalar): 0-d float32 + 3.0 * 2 stays float32
        other = other * alpha if isinstance(other, (int, float)) else mul(other, alpha)
    return apply(SUB, (input, other))


@documented(MUL)
def mul(input, other, *, out=None):
    """Elementwise product with NumPy broadcasting."""
    if out is not None:
        return IN_PLACE.write_out(out, mul(input, other), "mul")
    return apply(MUL, (input, other))


@documented(DIV)
def div(input, other, *, rounding_mode=None, out=None):
    """Elementwise true division with NumPy broadcasting. ``rounding_mode="trunc"`` rounds
    the quotient toward zero, ``"floor"`` down (as ``floor_divide``); both have a zero
    gradient, as in PyTorch."""
    if out is not None:
        return IN_PLACE.write_out(out, div(input, other, rounding_mode=rounding_mode), "div")
    if rounding_mode is None:
        return apply(DIV, (input, other))
    if rounding_mode == "floor":  # the ops of chainrule.ops.elementwise_more, by name
        return apply(TABLE["floor_divide"], (input, other))
    if rounding_mode == "trunc":
        if _integral(input) and _integral(other):  # exact, and integer as PyTorch's
            return mul(mul(sign(input), sign(other)),
                       apply(TABLE["floor_divide"], (abs(input), abs(other))))
        return apply(TABLE["trunc_divide"], (input, other))
    raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")


def _integral(x):
    """An integer or bool tensor, or a Python / NumPy integer."""
    if isinstance(x, Tensor):
        return dtype_kind(x.dtype) in "iub"
    return isinstance(x, (int, np.integer))


true_divide = div


@documented(POW)
def pow(input, exponent):
    """``input ** exponent``; either may be a tensor or a Python number."""
    return apply(POW, (input, exponent))


@documented(MAXIMUM)
def maximum(input, other):
    """Elementwise maximum with broadcasting; at ties each side gets half the gradient."""
    return apply(MAXIMUM, (input, other))


@documented(MINIMUM)
def minimum(input, other):
    """Elementwise minimum with broadcasting; at ties each side gets half the gradient."""
    return apply(MINIMUM, (input, other))


@documented(WHERE)
def where(condition, input=None, other=None):
    """``input`` where ``condition`` (bool, broadcastable) holds, else ``other``;
    ``where(condition)`` alone is ``nonzero(condition, as_tuple=True)``, as PyTorch's."""
    if other is None or input is None:
        if other is not input:
            raise TypeError("where: give both input and other, or neither (got "
                            f"{type(input).__name__} and {type(other).__name__})")
        from .searching import nonzero

        return nonzero(condition, as_tuple=True)
    c = condition._data if isinstance(condition, Tensor) else condition
    if c.__class__ is not np.ndarray and hasattr(c, "shape") and not hasattr(input, "shape") \
            and not hasattr(other, "shape"):  # two numbers beside another backend's condition
        # (the Array API's where takes one at most): the first as a 0-d array beside it
        input = wrap(beside(np.asarray(input, dtype=np.result_type(input, other)), c))
    return apply(WHERE, (condition, input, other))


# --- unary ---------------------------------------------------------------------------

NEG = defop(
    "neg", "negative", ("self",),
    vjp={"self": lambda F, g: -g}, jvp={"self": lambda F, t: -t},
    math={"self": "grad_x = -grad", "out": "dy = -dx"}, source=CALCULUS,
    pointwise=True,
)
@xp_kernel
def _sign_forward(xp, x):
    s = xp.sign(x)
    dtype = getattr(x, "dtype", None)
    if dtype is None:  # a Python number
        return s if x == x else s.dtype.type(0)
    if getattr(dtype, "kind", None) != "f" and dtype_kind(dtype) != "f":
        return s
    return xp.where(xp.isnan(x), xp.zeros_like(s), s)  # sign(NaN) = 0, as PyTorch


SIGN = defop(
    "sign", _sign_forward, ("self",),
    vjp={"self": lambda F, g: F.zeros_like(g)}, jvp={"self": lambda F, t: F.zeros_like(t)},
    math={"self": "grad_x = 0", "out": "dy = 0"},
    source="sign is piecewise constant; 0 everywhere as in PyTorch",
    pointwise=True,
)
ABS = elementwise("abs", "abs", lambda F, self: F.sign(F.where(self == self, self, 0.0)),
                  math="sign(x)  (0 at x = 0 and at NaN)",
                  source=CALCULUS + "; subgradient 0 at x = 0 and at NaN, as in PyTorch",
                  floating=False)
EXP = elementwise("exp", "exp", lambda F, out: out, math="exp(x)", source=CALCULUS)
LOG = elementwise("log", "log", lambda F, self: 1 / self, math="1 / x", source=CALCULUS,
                  singular=Singular("x = 0", "infinite", lambda self: self == 0,
                                    "where(m, log(where(m, x, 1.0)), 0.0); for x * log(x), "
                                    "xlogy(x, x), which is 0 at x = 0"))
LOG1P = elementwise("log1p", "log1p", lambda F, self: 1 / (1 + self), math="1 / (1 + x)",
                    source=CALCULUS,
                    singular=Singular("x = -1", "infinite", lambda self: self == -1,
                                      "where(m, log1p(where(m, x, 0.0)), 0.0)"))
# exp(x) from x, not y + 1: where expm1(x) is near -1 (x < -20) y + 1 cancels (1.7e-4
# relative error at x = -30, 0 below -37), and elu/celu/selu take their slope from here
EXPM1 = elementwise("expm1", "expm1", lambda F, self: F.exp(self), math="exp(x)",
                    source=CALCULUS)
SQRT = elementwise("sqrt", "sqrt", lambda F, out: 0.5 / out, math="1 / (2 sqrt(x))",
                   source=CALCULUS,
                   singular=Singular("x = 0", "infinite", lambda out: out == 0,
                                     "where(m, sqrt(where(m, x, 1.0)), 0.0); for a norm, "
                                     "sqrt(sum(x ** 2) + eps)"))
RECIPROCAL = elementwise("reciprocal", xp_kernel(lambda xp, x: 1.0 / x),
                         lambda F, out: -(out * out), math="-1 / x^2 = -y^2",
                         source=CALCULUS + "; saves the result, as PyTorch's reciprocal, so "
                         "changing x in place afterwards is harmless",
                         singular=Singular("x = 0", "infinite",
                                           lambda out: ~(abs(out) < float("inf")),
                                           "where(m, 1 / where(m, x, 1.0), 0.0)"))
SIN = elementwise("sin", "sin", lambda F, self: F.cos(self), math="cos(x)", source=CALCULUS)
COS = elementwise("cos", "cos", lambda F, self: -F.sin(self), math="-sin(x)", source=CALCULUS)
TAN = elementwise("tan", "tan", lambda F, out: 1 + out * out, math="1 + tan(x)^2",
                  source=CALCULUS)
TANH = elementwise("tanh", "tanh", lambda F, out: 1 - out * out, math="1 - tanh(x)^2",
                   source=CALCULUS)
SIGMOID = elementwise("sigmoid", "expit", lambda F, out: out * (1 - out),
                      math="s (1 - s), s = sigmoid(x)", source=CALCULUS)
def _relu_kernel(xp, x):
    # max(x, 0.0) for floats (NumPy's fast path); an int x takes an int 0 and stays int
    return xp.maximum(x, 0.0 if getattr(x.dtype, "kind", "f") == "f" else 0)


RELU = defop(
    "relu", xp_kernel(_relu_kernel), ("self",),
    vjp={"self": lambda F, g, out: keep(F, g, ~(out <= 0))},
    jvp={"self": lambda F, t, out: keep(F, t, ~(out <= 0))},
    math={"self": "grad_x = grad * [x > 0]  (1 at NaN)", "out": "dy = dx * [x > 0]"},
    source=CALCULUS + "; subgradient 0 at x = 0 and NaN passing the gradient, as PyTorch's "
           "threshold_backward",
    pointwise=True,
)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
ERF = elementwise("erf", "erf", lambda F, self: _TWO_OVER_SQRT_PI * F.exp(-self * self),
                  math="2 / sqrt(pi) * exp(-x^2)",
                  source="Abramowitz and Stegun (1964), eq. 7.1.19")


@xp_kernel
def _softplus_forward(xp, x, beta, threshold):
    z = x * beta
    # log(1 + e^z) = max(z, 0) + log1p(e^-|z|), NumPy's logaddexp(0, z)
    soft = (xp.maximum(z, 0.0) + xp.log1p(xp.exp(-xp.abs(z)))) / beta
    return xp.where(z > threshold, x, soft)


def _softplus_deriv(F, self, beta, threshold):
    z = self * beta
    return F.where(z > threshold, 1.0, F.sigmoid(z))


SOFTPLUS = defop(
    "softplus", _softplus_forward, ("self",), attrs=("beta", "threshold"),
    vjp={"self": lambda F, g, self, beta, threshold: g * _softplus_deriv(F, self, beta, threshold)},
    jvp={"self": lambda F, t, self, beta, threshold: t * _softplus_deriv(F, self, beta, threshold)},
    math={"self": "grad_x = grad * sigmoid(beta x)  (grad where beta x > threshold)",
          "out": "dy = sigmoid(beta x) dx"},
    source=CALCULUS + "; linear above the threshold as in torch.nn.functional.softplus",
    pointwise=True,
)


def _clamp_mask(self, min, max):
    # The gradient passes where min <= x <= max (boundaries included, as in PyTorch).
    if min is None:
        return self <= max
    if max is None:
        return self >= min
    return (self >= min) & (self <= max)


CLAMP = defop(
    "clamp", xp_kernel(lambda xp, x, min, max: xp.clip(x, min, max)), ("self",),
    attrs=("min", "max"),
    vjp={"self": lambda F, g, self, min, max: keep(F, g, _clamp_mask(self, min, max))},
    jvp={"self": lambda F, t, self, min, max: keep(F, t, _clamp_mask(self, min, max))},
    math={"self": "grad_x = grad * [min <= x <= max]", "out": "dy = [min <= x <= max] dx"},
    source=CALCULUS + "; boundaries pass the gradient as in PyTorch",
    pointwise=True,
)


CLAMP_TENSOR = defop(
    "clamp_tensor",
    xp_kernel(lambda xp, x, lo, hi: xp.minimum(xp.maximum(x, lo), hi)), ("self", "min", "max"),
    vjp={"self": lambda F, g, self, min, max: keep(F, g, (self >= min) & (self <= max)),
         "min": lambda F, g, self, min, max: keep(F, g, (self < min) & (min < max)),
         "max": lambda F, g, self, min, max: keep(F, g, (self > max) | (max < min))},
    jvp={"self": lambda F, t, self, min, max: keep(F, t, (self >= min) & (self <= max)),
         "min": lambda F, t, self, min, max: keep(F, t, (self < min) & (min < max)),
         "max": lambda F, t, self, min, max: keep(F, t, (self > max) | (max < min))},
    math={"self": "grad_x = grad * [min <= x <= max]  (boundaries pass, as with number bounds)",
          "min": "grad_min = grad * [x < min and min < max]",
          "max": "grad_max = grad * [x > max or max < min]  (where min > max the result "
                 "is max)",
          "out": "dy = [min <= x <= max] dx + [x < min < max] dmin + [x > max or max < min] "
                 "dmax"},
    source=CALCULUS + "; PyTorch's clamp.Tensor backward (clamp_backward_min_max: ties pass "
           "the gradient to x, and where min > max the output is max)",
    node_name="ClampBackward1",
)


def _copy_layout(out, x):
    """A copy ``out`` of ``x`` laid out as PyTorch's (preserve_format): the order of
    ``x``'s strides (a transpose stays a transpose), but row-major where ``x`` is expanded
    (a 0 stride), where NumPy's order "K" may give a permuted layout."""
    flags = getattr(out, "flags", None)
    if flags is None or flags.c_contiguous or 0 not in x.strides:
        return out
    return out.copy(order="C")


@xp_kernel
def _cast(xp, x, dtype, src_dtype):
    return _copy_layout(xp.astype(x, dtype, copy=True), x)


TO_COPY = defop(
    "_to_copy", _cast, ("self",), attrs=("dtype", "src_dtype"),
    vjp={"self": lambda F, g, src_dtype: F.cast(g, src_dtype)},
    jvp={"self": lambda F, t, dtype: F.cast(t, dtype)},
    math={"self": "grad_x = grad, cast back to x's dtype", "out": "dy = dx, cast to dtype"},
    source="a dtype conversion is the identity map up to rounding",
    pointwise=True,
)
CLONE = defop(
    "clone", xp_kernel(lambda xp, x: _copy_layout(xp.asarray(x, copy=True), x)), ("self",),
    vjp={"self": lambda F, g: g}, jvp={"self": lambda F, t: t},
    math={"self": "grad_x = grad", "out": "dy = dx"}, source="the identity map",
    pointwise=True,
)


@documented(TO_COPY)
def to_dtype(input, dtype):
    """A copy of ``input`` converted to ``dtype`` (differentiable between float dtypes; a
    conversion to an integer or bool dtype has no gradient, and its result does not require
    grad, as PyTorch's)."""
    data = input._data if isinstance(input, Tensor) else input
    dtype = native_dtype(backend_of(data) if isinstance(input, Tensor) else NUMPY, dtype)
    if isinstance(input, Tensor) and input._requires_grad and dtype_kind(dtype) != "f":
        if dtype_kind(dtype) == "c" and STATE.enabled:  # a gradient PyTorch would give
            raise RuntimeError(
                f"to: the tensor requires grad and the result would be complex ({dtype}); "
                "chainrule is real-valued and does not differentiate through complex "
                "values. Detach it first, or convert under chainrule.no_grad()")
        input = input.detach()
    src = input.dtype if isinstance(input, Tensor) else np.asarray(input).dtype
    return apply(TO_COPY, (input,), (dtype, src))


@documented(CLONE)
def clone(input, *, memory_format=preserve_format):
    """A copy of ``input`` that keeps its history (gradient flows through), laid out as
    ``input`` (``preserve_format``) or row-major (``contiguous_format``)."""
    if memory_format is not preserve_format:
        check_memory_format(memory_format, "clone")
        return input.contiguous() if memory_format is contiguous_format \
            and not input.is_contiguous() else apply(CLONE, (input,))
    return apply(CLONE, (input,))


@documented(NEG)
def neg(input):
    """``-input``."""
    return apply(NEG, (input,))


@documented(SIGN)
def sign(input):
    """Elementwise sign (-1, 0 or 1); its gradient is zero. A bool tensor is its own sign."""
    try:
        return apply(SIGN, (input,))
    except TypeError:
        if isinstance(input, Tensor) and dtype_kind(input.dtype) == "b":  # NumPy: no bool sign
            return clone(input)
        raise


def _unary(op, summary):
    """The public function of a unary op is its call function itself (no wrapper)."""
    op.call.__doc__ = summary
    return documented(op)(op.call)


abs = _unary(ABS, "Elementwise absolute value; gradient sign(x) (0 at 0).")
exp = _unary(EXP, "Elementwise e^x.")
log = _unary(LOG, "Elementwise natural logarithm.")
log1p = _unary(LOG1P, "Elementwise log(1 + x), accurate for small x.")
expm1 = _unary(EXPM1, "Elementwise e^x - 1, accurate for small x.")
sqrt = _unary(SQRT, "Elementwise square root.")
sin = _unary(SIN, "Elementwise sine.")
cos = _unary(COS, "Elementwise cosine.")
tan = _unary(TAN, "Elementwise tangent.")
tanh = _unary(TANH, "Elementwise hyperbolic tangent.")
sigmoid = _unary(SIGMOID, "Elementwise logistic sigmoid 1 / (1 + e^-x).")
relu = _unary(RELU, "Elementwise max(x, 0); gradient [x > 0].")
erf = _unary(ERF, "Elementwise error function.")


@documented(SOFTPLUS)
def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta x)) / beta``, linear where ``beta x > threshold`` (numbers, or
    one-element tensors that do not require grad)."""
    return apply(SOFTPLUS, (input,), (number_arg(beta, "softplus", "beta"),
                                      number_arg(threshold, "softplus", "threshold")))


def _integer_bounds(input, min, max, lo, hi):
    """The missing bound of an integer clamp by a tensor: the integer dtype's extreme rather
    than an infinity, which would make the result float (PyTorch's stays integer)."""
    given = min if max is None else max
    if isinstance(input, Tensor) and isinstance(given, Tensor) and \
            dtype_kind(input.dtype) in "iub" and dtype_kind(given.dtype) in "iub":
        common = np.result_type(numpy_dtype(input.dtype), numpy_dtype(given.dtype))
        if common.kind == "b":  # a bool clamped by a bool stays bool (PyTorch)
            return (False, hi) if min is None else (lo, True)
        info = np.iinfo(common)
        return (info.min, hi) if min is None else (lo, info.max)
    return lo, hi


@documented(CLAMP)
def clamp(input, min=None, max=None):
    """Clamp into ``[min, max]``. Number bounds are attributes; tensor bounds go through
    ``maximum``/``minimum``. At least one bound is required (ValueError)."""
    if min is None and max is None:
        raise ShapeError("clamp: at least one of min and max must be given")
    # a NumPy number is a Python number (it does not widen a float32 tensor), as PyTorch's
    min = min.item() if isinstance(min, np.generic) else min
    max = max.item() if isinstance(max, np.generic) else max
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        lo = -math.inf if min is None else min
        hi = math.inf if max is None else max
        if min is None or max is None:
            lo, hi = _integer_bounds(input, min, max, lo, hi)
        return apply(CLAMP_TENSOR, (input, lo, hi))
    return apply(CLAMP, (input,), (min, max))


clip = clamp


def square(input):
    """``input * input`` (a bool tensor's square is int64, as PyTorch's)."""
    if isinstance(input, Tensor) and dtype_kind(input.dtype) == "b":
        input = to_dtype(input, np.int64)
    return mul(input, input)


@documented(RECIPROCAL)
def reciprocal(input):
    """``1 / input`` (an integer input gives the default float dtype)."""
    return apply(RECIPROCAL, (input,))


# --- comparisons and predicates (no gradient) ----------------------------------------


def _data(x):
    return x._data if isinstance(x, Tensor) else x


def _host_or_number(x):
    return x.__class__ is np.ndarray or not hasattr(x, "shape") or isinstance(x, np.generic)


def _compare(ufunc, op):
    def fn(input, other):
        a, b = _data(input), _data(other)
        if a.__class__ is np.ndarray and b.__class__ is np.ndarray and a.dtype != b.dtype:
            a, b = promote_0d(a, b)  # PyTorch's dtype: float32 == 0-d float64 in float32
        if _host_or_number(a) and _host_or_number(b):
            return wrap(np.asarray(ufunc(a, b)))  # (a 0-d result stays an array)
        return wrap(op(a, b))  # another backend's array (vmap's batch too): its operator

    fn.__name__ = ufunc.__name__
    fn.__doc__ = f"Elementwise ``{ufunc.__name__}``; returns a bool tensor without grad."
    return fn


lt, le, gt, ge, eq, ne = (_compare(u, o) for u, o in (
    (np.less, operator.lt), (np.less_equal, operator.le), (np.greater, operator.gt),
    (np.greater_equal, operator.ge), (np.equal, operator.eq), (np.not_equal, operator.ne)))


def _predicate(name):
    def fn(input):
        a = _data(input)
        if a.__class__ is np.ndarray:
            return wrap(np.asarray(getattr(np, name)(a)))  # (a 0-d result stays an array)
        return wrap(getattr(backend_of(a).xp, name)(a))

    return fn


def logical_not(input):
    """Elementwise not; a bool tensor without grad."""
    return _predicate("logical_not")(input)


def isnan(input):
    """Elementwise NaN test; a bool tensor without grad."""
    return _predicate("isnan")(input)


def isfinite(input):
    """Elementwise finiteness test; a bool tensor without grad."""
    return _predicate("isfinite")(input)
