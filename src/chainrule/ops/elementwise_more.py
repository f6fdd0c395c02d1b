"""More elementwise primitives: inverse circular and hyperbolic functions, logarithms and
powers of 2 and 10, rounding, two-argument functions (atan2, hypot, logaddexp, fmod, ...),
and the compositions and aliases that code written for PyTorch calls (addcmul, lerp,
clamp_min, arccos, ...).

Each primitive is declared once (:func:`chainrule._table.elementwise` or
:func:`chainrule._table.defop`); compositions are plain functions of primitives (their
gradients follow from those), and aliases are the same function under another name.
Rounding ops (floor, ceil, round, trunc, floor_divide) have a zero gradient, as in PyTorch.
"""

from __future__ import annotations

import inspect
import math
import numbers

import numpy as np

from .. import _ns
from .._dispatch import _result_dtype, apply, name_errors
from .._table import Rule, Singular, defop, documented, elementwise
from .._tensor import DEFAULT_FLOAT, Tensor
from ..backend import NUMPY, dtype_kind, on_device_of, xp_kernel
from ._dims import number_arg
from .elementwise import (
    CALCULUS,
    _mask,
    _unary,
    abs,
    add,
    clamp,
    div,
    keep,
    mul,
    neg,
    sign,
    sqrt,
    sub,
    to_dtype,
)

__all__ = [
    "acos", "arccos", "asin", "arcsin", "atan", "arctan", "atan2", "arctan2", "sinh", "cosh",
    "asinh", "arcsinh", "acosh", "arccosh", "atanh", "arctanh", "log2", "log10", "exp2",
    "rsqrt", "hypot", "logaddexp", "logaddexp2", "xlogy", "sinc", "floor", "ceil", "round",
    "trunc", "fix", "frac", "fmod", "remainder", "floor_divide", "clamp_min", "clamp_max",
    "addcmul", "addcdiv", "lerp", "nan_to_num", "copysign", "fmax", "fmin", "sgn",
    "negative", "absolute", "multiply", "subtract", "divide",
]

CIRCULAR = "Abramowitz and Stegun (1964), section 4.4 (derivatives of the inverse circular " \
           "functions)"
HYPERBOLIC = "Abramowitz and Stegun (1964), section 4.5 (derivatives of the hyperbolic functions)"
INVERSE_HYPERBOLIC = "Abramowitz and Stegun (1964), section 4.6 (derivatives of the inverse " \
                     "hyperbolic functions)"
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def declare_rule_name(name, raw, diff, declare):
    """Give derivative rules ``F.<name>`` (:func:`chainrule._ns.register`), an elementwise
    function: ``raw`` on NumPy arrays, ``diff`` the differentiable op, ``declare(xp, dev,
    lazy)`` on other backends. A name another op family declared already is kept."""
    if name not in _ns.names():
        _ns.register(name, raw, diff, declare, batch="leading")


def own_or(name, fallback):
    """A kernel calling the library's own ``name`` where it has one (NumPy, Dask, and the
    SciPy special functions of the provider table), else ``fallback(xp, *args)``, written
    with the Array API standard's functions (array-api-strict)."""

    def kernel(xp, *args):
        own = vars(xp).get(name)
        return own(*args) if own is not None else fallback(xp, *args)

    kernel.__name__ = name
    return xp_kernel(kernel)


def weak_numbers(kernel):
    """``kernel(xp, x, y)`` with a Python number beside a float array given that array's
    dtype: SciPy's ufuncs (xlogy, xlog1py) take a number as float64 rather than as NumPy's
    own ufuncs do (NEP 50's weak scalars), so float32 x with 3.0 would give float64."""

    def weak(xp, x, y):
        if y.__class__ in (float, int):
            if getattr(x, "dtype", None) is not None and dtype_kind(x.dtype) == "f":
                y = xp.asarray(y, dtype=x.dtype, **on_device_of(x))
        elif x.__class__ in (float, int):
            if getattr(y, "dtype", None) is not None and dtype_kind(y.dtype) == "f":
                x = xp.asarray(x, dtype=y.dtype, **on_device_of(y))
        return kernel(xp, x, y)

    weak.__name__ = kernel.__name__
    return xp_kernel(weak)


def partial_rule(deriv):
    """The rule ``grad * deriv(F, ...)`` (VJP) or ``t * deriv(F, ...)`` (JVP) of one input of
    an elementwise op whose partial derivative is ``deriv(F, *needs)``."""
    params = tuple(inspect.signature(deriv).parameters)[1:]

    def rule(F, g, *a):
        return g * deriv(F, *a)

    rule.deriv = deriv  # the plan inlines grad * d(x) in its generated VJP
    return Rule(rule, params)


def binary(name, forward, partials, *, math, source, attrs=(), node_name=None):
    """Declare an elementwise op of ``self`` and ``other`` from its two partial derivatives
    (``{input: deriv(F, *needs)}``): VJP ``grad * d``, JVP ``t * d`` for each input."""
    rules = {k: partial_rule(d) for k, d in partials.items()}
    return defop(name, forward, ("self", "other"), rules, jvp=rules, attrs=attrs, math=math,
                 source=source, node_name=node_name)


def zero_gradient(name, forward, inputs=("self",), attrs=(), what="piecewise constant"):
    """Declare an op whose gradient is zero (rounding), as PyTorch's."""
    vjp = {k: (lambda F, g: F.zeros_like(g)) for k in inputs}
    return defop(name, forward, inputs, vjp, jvp=dict(vjp), attrs=attrs,
                 math={**{k: f"grad_{k} = 0" for k in inputs}, "out": "dy = 0"},
                 source=f"{name} is {what}: its gradient is 0 almost everywhere, and 0 "
                        "everywhere as in PyTorch")


# --- rounding (zero gradient; floor and trunc are also rule names) ---------------------------

FLOOR = zero_gradient("floor", "floor")
CEIL = zero_gradient("ceil", "ceil")
TRUNC = zero_gradient("trunc", "trunc")


@xp_kernel
def _round_kernel(xp, x, decimals):
    # PyTorch's (and NumPy's) round with decimals: round half to even of x * 10^d, scaled back
    if decimals == 0:
        return xp.round(x)
    if decimals > 0:
        scale = 10.0 ** decimals
        return xp.round(x * scale) / scale
    scale = 10.0 ** -decimals
    return xp.round(x / scale) * scale


ROUND = zero_gradient("round", _round_kernel, attrs=("decimals",))
FLOOR_DIVIDE = zero_gradient("floor_divide", "floor_divide", ("self", "other"),
                             what="piecewise constant (floor(x / y))")


@xp_kernel
def _trunc_divide_kernel(xp, x, y):
    return xp.trunc(x / y)


# div(rounding_mode="trunc") of floats: one op with a zero gradient (trunc of a recorded
# division would pull a zero cotangent through x / y, 0 / 0 = NaN where y = 0)
TRUNC_DIVIDE = zero_gradient("trunc_divide", _trunc_divide_kernel, ("self", "other"),
                             what="piecewise constant (trunc(x / y))")

floor = _unary(FLOOR, "Elementwise floor (largest integer <= x); zero gradient.")
ceil = _unary(CEIL, "Elementwise ceiling (smallest integer >= x); zero gradient.")
trunc = _unary(TRUNC, "Elementwise rounding toward zero; zero gradient.")
fix = trunc


@name_errors
@documented(ROUND)
def round(input, *, decimals=0):  # noqa: A001 - PyTorch's name
    """Round half to even (``round(2.5) == 2``), to ``decimals`` decimal places (negative:
    to tens, hundreds, ...); zero gradient."""
    return apply(ROUND, (input,), (number_arg(decimals, "round", "decimals"),))


@name_errors
@documented(FLOOR_DIVIDE)
def floor_divide(input, other):
    """``floor(input / other)`` (Python's ``//``); zero gradient (PyTorch raises for this
    op and gives zero through ``div(rounding_mode="floor")``)."""
    return apply(FLOOR_DIVIDE, (input, other))


@name_errors
def frac(input):
    """``input - trunc(input)`` (the sign of ``input``); gradient 1. A composition."""
    return sub(input, trunc(input))


declare_rule_name("floor", NUMPY.xp.floor, lambda x: floor(x), lambda xp, dev, lazy: xp.floor)
declare_rule_name("trunc", NUMPY.xp.trunc, lambda x: trunc(x), lambda xp, dev, lazy: xp.trunc)

# --- inverse circular and hyperbolic functions -----------------------------------------------

declare_rule_name("sqrt", NUMPY.xp.sqrt, lambda x: sqrt(x), lambda xp, dev, lazy: xp.sqrt)
declare_rule_name("sinh", NUMPY.xp.sinh, lambda x: sinh(x), lambda xp, dev, lazy: xp.sinh)
declare_rule_name("cosh", NUMPY.xp.cosh, lambda x: cosh(x), lambda xp, dev, lazy: xp.cosh)
SINH = elementwise("sinh", "sinh", lambda F, self: F.cosh(self), math="cosh(x)",
                   source=HYPERBOLIC)
COSH = elementwise("cosh", "cosh", lambda F, self: F.sinh(self), math="sinh(x)",
                   source=HYPERBOLIC)
# 1 / sqrt(1 - x^2), not (1 - x^2) ** -0.5: for |x| = 1e300 or inf (acos NaN), the power
# of -inf is 0 (IEEE pow), a silent zero gradient; sqrt(-inf) is NaN, as PyTorch's
ACOS = elementwise("acos", "acos", lambda F, self: -1 / F.sqrt(1 - self * self),
                   math="-1 / sqrt(1 - x^2)", source=CIRCULAR,
                   singular=Singular("x = -1 or x = 1", "infinite", lambda self: abs(self) == 1,
                                     "acos(clamp(x, -1 + eps, 1 - eps))"))
ASIN = elementwise("asin", "asin", lambda F, self: 1 / F.sqrt(1 - self * self),
                   math="1 / sqrt(1 - x^2)", source=CIRCULAR,
                   singular=Singular("x = -1 or x = 1", "infinite", lambda self: abs(self) == 1,
                                     "asin(clamp(x, -1 + eps, 1 - eps))"))
ATAN = elementwise("atan", "atan", lambda F, self: 1 / (1 + self * self),
                   math="1 / (1 + x^2)", source=CIRCULAR)
ASINH = elementwise("asinh", "asinh", lambda F, self: (self * self + 1) ** -0.5,
                    math="1 / sqrt(x^2 + 1)", source=INVERSE_HYPERBOLIC)
ACOSH = elementwise("acosh", "acosh", lambda F, self: (self * self - 1) ** -0.5,
                    math="1 / sqrt(x^2 - 1)", source=INVERSE_HYPERBOLIC,
                    singular=Singular("x = 1", "infinite", lambda self: self == 1,
                                      "acosh(clamp(x, min=1 + eps))"))
ATANH = elementwise("atanh", "atanh", lambda F, self: 1 / (1 - self * self),
                    math="1 / (1 - x^2)", source=INVERSE_HYPERBOLIC,
                    singular=Singular("x = -1 or x = 1", "infinite", lambda self: abs(self) == 1,
                                      "atanh(clamp(x, -1 + eps, 1 - eps))"))

# --- logarithms and powers ---------------------------------------------------------------------

LOG2 = elementwise("log2", "log2", lambda F, self: 1 / (self * _LN2), math="1 / (x ln 2)",
                   source=CALCULUS,
                   singular=Singular("x = 0", "infinite", lambda self: self == 0,
                                     "where(m, log2(where(m, x, 1.0)), 0.0)"))
LOG10 = elementwise("log10", "log10", lambda F, self: 1 / (self * _LN10),
                    math="1 / (x ln 10)", source=CALCULUS,
                    singular=Singular("x = 0", "infinite", lambda self: self == 0,
                                      "where(m, log10(where(m, x, 1.0)), 0.0)"))
EXP2 = elementwise("exp2", own_or("exp2", lambda xp, x: 2.0 ** x),
                   lambda F, out: out * _LN2, math="2^x ln 2", source=CALCULUS)
RSQRT = elementwise("rsqrt", xp_kernel(lambda xp, x: 1.0 / xp.sqrt(x)),
                    lambda F, out: -0.5 * (out * out * out), math="-x^(-3/2) / 2",
                    source=CALCULUS,
                    singular=Singular("x = 0", "infinite", lambda out: ~(abs(out) < float("inf")),
                                      "rsqrt(x + eps), or where(m, rsqrt(where(m, x, 1.0)), "
                                      "0.0)"))


def _sinc_fallback(xp, x):
    y = math.pi * xp.where(x == 0, 1.0, x)
    return xp.where(x == 0, 1.0, xp.sin(y) / y)


def _sinc_deriv(F, self):
    # (cos(pi x) - sinc(x)) / x away from 0; near 0 that difference cancels (the second
    # derivative at 0 would be lost), so for |x| < 0.01 the Taylor series of sinc' is used:
    # -pi^2 x / 3 + pi^4 x^3 / 30 - pi^6 x^5 / 840 (next term below 1e-13 of it there).
    # sinc(x) is recomputed from x, not read from the output, as PyTorch's (which saves
    # only self): changing the output in place then leaves the backward valid
    small = F.abs(self) < 0.01
    safe = F.where(small, 1.0, self)
    x2 = self * self
    series = self * (-_PI2 / 3 + x2 * (_PI2 * _PI2 / 30 - x2 * (_PI2 * _PI2 * _PI2 / 840)))
    return F.where(small, series, (F.cos(math.pi * safe) - F.sinc(safe)) / safe)


_PI2 = math.pi * math.pi


_SINC_KERNEL = own_or("sinc", _sinc_fallback)
declare_rule_name("sinc", lambda x: _SINC_KERNEL(NUMPY.xp, x), lambda x: sinc(x),
                  lambda xp, dev, lazy: lambda x: _SINC_KERNEL(xp, x))
SINC = elementwise("sinc", _SINC_KERNEL, _sinc_deriv,
                   math="(cos(pi x) - sinc(x)) / x; its Taylor series near 0 (0 at x = 0)",
                   source=CALCULUS + "; sinc(x) = sin(pi x) / (pi x), 1 at 0, as torch.sinc")

acos = _unary(ACOS, "Elementwise arccosine (radians), for x in [-1, 1].")
asin = _unary(ASIN, "Elementwise arcsine (radians), for x in [-1, 1].")
atan = _unary(ATAN, "Elementwise arctangent (radians).")
sinh = _unary(SINH, "Elementwise hyperbolic sine.")
cosh = _unary(COSH, "Elementwise hyperbolic cosine.")
asinh = _unary(ASINH, "Elementwise inverse hyperbolic sine.")
acosh = _unary(ACOSH, "Elementwise inverse hyperbolic cosine, for x >= 1.")
atanh = _unary(ATANH, "Elementwise inverse hyperbolic tangent, for x in (-1, 1).")
log2 = _unary(LOG2, "Elementwise base-2 logarithm.")
log10 = _unary(LOG10, "Elementwise base-10 logarithm.")
exp2 = _unary(EXP2, "Elementwise 2^x.")
rsqrt = _unary(RSQRT, "Elementwise 1 / sqrt(x).")
sinc = _unary(SINC, "Elementwise normalized sinc, sin(pi x) / (pi x), 1 at x = 0.")
arccos, arcsin, arctan = acos, asin, atan
arcsinh, arccosh, arctanh = asinh, acosh, atanh

# --- two-argument functions --------------------------------------------------------------------

def _atan2_partial(F, numerator, self, other):
    """``numerator / (self^2 + other^2)``, 0 where both are 0 (PyTorch's atan2 gradient at
    the origin, where atan2 has no derivative)."""
    r2 = self * self + other * other
    zero = r2 == 0
    return F.where(zero, 0.0, numerator / F.where(zero, 1.0, r2))


ATAN2 = binary(
    "atan2", "atan2",
    {"self": lambda F, self, other: _atan2_partial(F, other, self, other),
     "other": lambda F, self, other: _atan2_partial(F, -self, self, other)},
    math={"self": "grad_y = grad * x / (x^2 + y^2)", "other": "grad_x = -grad * y / (x^2 + y^2)",
          "out": "dz = (x dy - y dx) / (x^2 + y^2)  (z = atan2(y, x), y = self, x = other); "
                 "0 at the origin, as PyTorch"},
    source=CIRCULAR + "; atan2(y, x) = atan(y / x) up to a multiple of pi",
)
HYPOT = binary(
    "hypot", "hypot",
    {"self": lambda F, self, out: self / out, "other": lambda F, other, out: other / out},
    math={"self": "grad_x = grad * x / z", "other": "grad_y = grad * y / z",
          "out": "dz = (x dx + y dy) / z,  z = sqrt(x^2 + y^2)"},
    source=CALCULUS,
)
LOGADDEXP = binary(
    "logaddexp", "logaddexp",
    {"self": lambda F, self, other: F.sigmoid(self - other),
     "other": lambda F, self, other: F.sigmoid(other - self)},
    math={"self": "grad_x = grad * sigmoid(x - y) = grad / (1 + exp(y - x))",
          "other": "grad_y = grad * sigmoid(y - x)",
          "out": "dz = sigmoid(x - y) dx + sigmoid(y - x) dy"},
    source=CALCULUS + "; z = log(e^x + e^y)",
)


def _logaddexp2_fallback(xp, a, b):
    return xp.logaddexp(a * _LN2, b * _LN2) / _LN2


LOGADDEXP2 = binary(
    "logaddexp2", own_or("logaddexp2", _logaddexp2_fallback),
    {"self": lambda F, self, other: F.sigmoid((self - other) * _LN2),
     "other": lambda F, self, other: F.sigmoid((other - self) * _LN2)},
    math={"self": "grad_x = grad / (1 + 2^(y - x))", "other": "grad_y = grad / (1 + 2^(x - y))",
          "out": "dz = dx / (1 + 2^(y - x)) + dy / (1 + 2^(x - y))"},
    source=CALCULUS + "; z = log2(2^x + 2^y)",
)


def _xlogy_fallback(xp, x, y):
    out = x * xp.log(y)
    return xp.where((x == 0) & ~xp.isnan(y), xp.zeros_like(out), out)


def _xlogy_x(F, self, other):
    # log(y), and 0 where x = 0 and y <= 0 (where log(y) is -inf or NaN), as PyTorch's
    masked = (self == 0) & (other <= 0)
    return F.where(masked, 0.0, F.log(F.where(masked, 1.0, other)))


XLOGY = binary(
    "xlogy", weak_numbers(own_or("xlogy", _xlogy_fallback)),
    {"self": _xlogy_x, "other": lambda F, self, other: self / other},
    math={"self": "grad_x = grad * log(y)  (0 where x = 0 and y <= 0)",
          "other": "grad_y = grad * x / y", "out": "dz = log(y) dx + x / y dy"},
    source=CALCULUS + "; xlogy(0, y) = 0 (unless y is NaN), and the masking of the x-gradient "
           "of PyTorch's xlogy backward",
)


def _fmod_fallback(xp, x, y):
    # C's fmod has the sign of x; the standard's remainder has the sign of y: shift by y
    r = xp.remainder(x, y)
    return xp.where((r != 0) & ((r < 0) != (x < 0)), r - y, r)


def _modulo(name, forward, other, math, source):
    """fmod / remainder: x - q y with q the rounded quotient: gradient 1 for x, and
    ``other`` (-q) for y."""
    other = partial_rule(other)
    return defop(name, forward, ("self", "other"),
                 {"self": lambda F, g: g, "other": other},
                 jvp={"self": lambda F, t: t, "other": other}, math=math, source=source)


# trunc(x / y) as one op with a zero derivative, as PyTorch's div(rounding_mode="trunc") in
# its fmod backward (trunc of a differentiable x / y made second derivatives 0 * inf = NaN
# where y = 0)
declare_rule_name("trunc_divide", lambda x, y: NUMPY.xp.trunc(x / y),
                  lambda x, y: div(x, y, rounding_mode="trunc"),
                  lambda xp, dev, lazy: lambda x, y: xp.trunc(x / y))
FMOD = _modulo(
    "fmod", own_or("fmod", _fmod_fallback), lambda F, self, other: -F.trunc_divide(self, other),
    math={"self": "grad_x = grad", "other": "grad_y = -grad * trunc(x / y)",
          "out": "dz = dx - trunc(x / y) dy"},
    source=CALCULUS + "; fmod(x, y) = x - trunc(x / y) y (sign of x), PyTorch's fmod backward",
)
# floor(x / y) as floor_divide computes it (consistently with remainder: 3 // 0.2 is 14,
# where floor(3 / 0.2) rounds to 15), as PyTorch's div(rounding_mode="floor")
declare_rule_name("floor_divide", NUMPY.xp.floor_divide, lambda x, y: floor_divide(x, y),
                  lambda xp, dev, lazy: xp.floor_divide)
REMAINDER = _modulo(
    "remainder", "remainder", lambda F, self, other: -F.floor_divide(self, other),
    math={"self": "grad_x = grad", "other": "grad_y = -grad * floor(x / y)",
          "out": "dz = dx - floor(x / y) dy"},
    source=CALCULUS + "; remainder(x, y) = x - floor(x / y) y (sign of y, Python's %), "
           "PyTorch's remainder backward",
)


def _copysign_deriv(F, self, out):
    # out / x = +-1 (0 where x = 0), PyTorch's copysign_tensor_self_backward
    return F.where(self == 0, 0.0, out / F.where(self == 0, 1.0, self))


COPYSIGN = defop(
    "copysign", "copysign", ("self", "other"),
    {"self": partial_rule(_copysign_deriv), "other": lambda F, g: F.zeros_like(g)},
    jvp={"self": partial_rule(_copysign_deriv), "other": lambda F, t: F.zeros_like(t)},
    math={"self": "grad_x = grad * copysign(1, y) sign(x)  (0 at x = 0)",
          "other": "grad_y = 0", "out": "dz = (z / x) dx"},
    source=CALCULUS + "; as PyTorch's copysign backward",
)


def _nan_safe(xp, fn):
    def kernel(a, b):
        return xp.where(xp.isnan(b), a, xp.where(xp.isnan(a), b, fn(a, b)))

    return kernel


def _winner(F, g, wins):
    return keep(F, g, wins)  # 0 to the loser even for an inf or NaN g (masked_fill)


def _fpick(name, word, first_wins):
    """fmax / fmin: the NaN-ignoring maximum / minimum. PyTorch's gradient: all of it to
    ``self`` where ``first_wins(self, other)`` (ties included) or ``other`` is NaN, else to
    ``other``."""
    def wins(self, other):
        return first_wins(self, other) | (other != other)

    return defop(
        name, own_or(name, lambda xp, a, b: _nan_safe(xp, getattr(xp, word))(a, b)),
        ("self", "other"),
        {"self": lambda F, g, self, other: _winner(F, g, wins(self, other)),
         "other": lambda F, g, self, other: _winner(F, g, ~wins(self, other))},
        jvp={"self": lambda F, t, self, other: _winner(F, t, wins(self, other)),
             "other": lambda F, t, self, other: _winner(F, t, ~wins(self, other))},
        math={"self": "grad_x = grad * [x wins or y is NaN]  (ties: x, as in PyTorch)",
              "other": "grad_y = grad * [y wins and y is not NaN]",
              "out": "dz = [x wins] dx + [y wins] dy"},
        source=f"subgradient of {word}(x, y) ignoring NaN; PyTorch's {name} backward",
    )


FMAX = _fpick("fmax", "maximum", lambda a, b: a >= b)
FMIN = _fpick("fmin", "minimum", lambda a, b: a <= b)


@xp_kernel
def _nan_to_num_kernel(xp, x, nan, posinf, neginf):
    if dtype_kind(x.dtype) != "f":
        return xp.asarray(x, copy=True)
    info = xp.finfo(x.dtype)
    big = info.max if posinf is None else posinf
    small = info.min if neginf is None else neginf
    out = xp.where(xp.isnan(x), nan, x)
    return xp.where(out == math.inf, big, xp.where(out == -math.inf, small, out))


NAN_TO_NUM = defop(
    "nan_to_num", _nan_to_num_kernel, ("self",), attrs=("nan", "posinf", "neginf"),
    vjp={"self": lambda F, g, self: g * _mask(F, F.abs(self) < math.inf, g)},
    jvp={"self": lambda F, t, self: t * _mask(F, F.abs(self) < math.inf, t)},
    math={"self": "grad_x = grad * [x finite]", "out": "dy = [x finite] dx"},
    source="the identity where x is finite, a constant elsewhere; PyTorch's nan_to_num "
           "backward",
)


def _binary_doc(op, summary, floating=False):
    """The public function of a binary op, with PyTorch's argument names (``input``,
    ``other``: ``fmod(x, other=y)``). ``floating``: integer and bool operands give the
    default float dtype (``atan2`` of two int tensors is a float, not NumPy's float16 for
    int8)."""
    call = op.call
    if floating:
        def fn(input, other):
            if not (_is_floating(input) or _is_floating(other)):
                if isinstance(input, Tensor):
                    input = to_dtype(input, DEFAULT_FLOAT[0])
                elif isinstance(other, Tensor):
                    other = to_dtype(other, DEFAULT_FLOAT[0])
            return call(input, other)
    else:
        def fn(input, other):
            return call(input, other)
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = summary
    return documented(op)(fn)


def _is_floating(x):
    if isinstance(x, Tensor):
        return dtype_kind(x.dtype) in "fc"
    return isinstance(x, (float, complex, np.floating, np.complexfloating))


atan2 = _binary_doc(ATAN2, "Elementwise atan2(input, other): the angle of (other, input), "
                           "in (-pi, pi].", floating=True)
arctan2 = atan2
hypot = _binary_doc(HYPOT, "Elementwise sqrt(input^2 + other^2), without overflow.")
logaddexp = _binary_doc(LOGADDEXP, "Elementwise log(e^input + e^other), computed stably.")
logaddexp2 = _binary_doc(LOGADDEXP2, "Elementwise log2(2^input + 2^other), computed stably.")
xlogy = _binary_doc(XLOGY, "Elementwise input * log(other), 0 where input == 0 (unless other "
                           "is NaN).")
fmod = _binary_doc(FMOD, "Elementwise C fmod: input - trunc(input / other) * other (the sign "
                         "of input).")
remainder = _binary_doc(REMAINDER, "Elementwise Python modulus: input - floor(input / other) "
                                   "* other (the sign of other).")
_copysign = _binary_doc(COPYSIGN, "Elementwise |input| with the sign of other.")


def copysign(input, other):
    """Elementwise ``|input|`` with the sign of ``other``; integer and bool operands give
    the default float dtype (NumPy's copysign of int8 would be float16)."""
    if not any(isinstance(x, Tensor) and dtype_kind(x.dtype) in "fc" or isinstance(x, float)
               for x in (input, other)):
        input = to_dtype(input, DEFAULT_FLOAT[0]) if isinstance(input, Tensor) else \
            float(input)
    return _copysign(input, other)


fmax = _binary_doc(FMAX, "Elementwise maximum ignoring NaN (NaN only where both are NaN).")
fmin = _binary_doc(FMIN, "Elementwise minimum ignoring NaN (NaN only where both are NaN).")


@name_errors
@documented(NAN_TO_NUM)
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN replaced by ``nan``, +inf by ``posinf`` and -inf by ``neginf`` (default: the
    dtype's largest and lowest finite values); the gradient passes where ``input`` is
    finite. ``nan=None`` is 0, as PyTorch's."""
    nan = _number(0.0 if nan is None else nan, "nan")
    posinf = None if posinf is None else _number(posinf, "posinf")
    neginf = None if neginf is None else _number(neginf, "neginf")
    return apply(NAN_TO_NUM, (input,), (nan, posinf, neginf))


def _number(value, name):
    """A replacement value of :func:`nan_to_num`, which must be a real number."""
    if isinstance(value, numbers.Real):  # Python and NumPy ints and floats
        return value
    if isinstance(value, Tensor) and value.ndim == 0 and dtype_kind(value.dtype) in "biuf":
        return value.item()
    raise TypeError(f"nan_to_num: argument '{name}' must be a number, not {type(value).__name__}")


# --- compositions and aliases ------------------------------------------------------------------


@name_errors
def clamp_min(input, min):
    """``clamp(input, min=min)`` (a number or a tensor). A composition."""
    return clamp(input, min=min)


@name_errors
def clamp_max(input, max):
    """``clamp(input, max=max)`` (a number or a tensor). A composition."""
    return clamp(input, max=max)


def _common_dtype(*xs):
    """The tensors of a composed op cast to PyTorch's dtype of all of them first, so each
    step computes in it (addcmul of a float64 input and a float32 0-d tensor multiplies in
    float64, as PyTorch's kernel does, not in float32)."""
    arrays = [x._data for x in xs if isinstance(x, Tensor) and x._data.__class__ is np.ndarray]
    if len(arrays) < 2 or len({a.dtype for a in arrays}) == 1:
        return xs
    want = _result_dtype(arrays)
    return tuple(to_dtype(x, want) if isinstance(x, Tensor) and x._data.dtype != want
                 and dtype_kind(x.dtype) != "b" else x for x in xs)


@name_errors
def addcmul(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 * tensor2``. A composition."""
    input, tensor1, tensor2 = _common_dtype(input, tensor1, tensor2)
    prod = mul(tensor1, tensor2)
    if value == 1:
        return add(input, prod)
    if isinstance(value, float) and isinstance(prod, Tensor) and dtype_kind(prod.dtype) != "f":
        # PyTorch computes in the dtype of the three tensors, value a scalar of it: an int
        # product beside a float input takes input's dtype; with an int input too, value is
        # truncated (0.5 -> 0), rather than the number widening the result to float64
        if isinstance(input, Tensor) and dtype_kind(input.dtype) == "f":
            prod = to_dtype(prod, input.dtype)
        else:
            value = int(value)
    return add(input, mul(prod, value))


@name_errors
def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2``. A composition."""
    input, tensor1, tensor2 = _common_dtype(input, tensor1, tensor2)
    quot = div(tensor1, tensor2)
    return add(input, quot if value == 1 else mul(quot, value))


@name_errors
def lerp(input, end, weight):
    """``input + weight * (end - input)``; ``weight`` a number or a tensor. A composition,
    rounded as PyTorch's kernel: ``end - (end - input) * (1 - weight)`` where
    ``|weight| >= 0.5`` (so ``weight = 1`` gives ``end`` exactly); the two forms are equal
    in exact arithmetic, so the derivatives are the same."""
    diff = sub(end, input)
    if not isinstance(weight, Tensor):
        if abs(weight) < 0.5:
            return add(input, mul(weight, diff))
        return sub(end, mul(diff, 1 - weight))
    from .elementwise import where

    return where(abs(weight) < 0.5, add(input, mul(weight, diff)),
                 sub(end, mul(diff, 1 - weight)))


sgn = sign  # the sign of a real tensor (PyTorch's sgn is sign for real inputs)
negative = neg
absolute = abs
multiply = mul
subtract = sub
divide = div
