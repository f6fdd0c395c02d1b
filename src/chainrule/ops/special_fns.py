"""Special functions as primitives: the gamma family (lgamma, digamma, polygamma, zeta), the
error-function family (erfc, erfinv, erfcx, the normal distribution's ndtri and log_ndtr),
modified Bessel functions (i0, i0e, i1, i1e), entr and xlog1py; and the compositions that
torch.special adds (ndtr, logit, multigammaln, betaln).

Forward kernels are the backends' special functions (scipy.special on NumPy and Dask,
cupyx.scipy.special on CuPy: :data:`chainrule.backend.SPECIAL_FUNCTIONS`); a backend
without them (array-api-strict) raises NotImplementedError naming the function.

Derivatives compute through the rule namespace ``F``, so that they are differentiable again:
digamma's derivative is ``F.polygamma(1, x)``, itself a primitive with a rule, and so on.
"""

from __future__ import annotations

import math
import numbers

from .._creation import as_tensor
from .._dispatch import ShapeError, _result_dtype, apply, name_errors
from .._table import Rule, defop, documented, elementwise
from .._tensor import DEFAULT_FLOAT, Tensor
from ..backend import NUMPY, backend_of, dtype_kind, xp_kernel
from .elementwise import _unary, add, clamp, log, log1p, mul, sub, where
from .elementwise_more import (
    XLOGY,
    binary,
    declare_rule_name,
    own_or,
    partial_rule,
    weak_numbers,
    xlogy,
    zero_gradient,
)

__all__ = ["lgamma", "digamma", "polygamma", "erfc", "erfinv", "i0", "mvlgamma", "logit"]

AS = "Abramowitz and Stegun (1964)"
_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)
_SQRT_HALF = math.sqrt(0.5)


def special_kernel(name):
    """The forward kernel calling the backend's special function ``name`` (SciPy's name)."""
    kernel = xp_kernel(lambda xp, *args: getattr(xp, name)(*args))
    kernel.__name__ = name
    return kernel


def typed_special_kernel(name):
    """:func:`special_kernel` for a function of several arguments, whose result takes the
    arguments' result type with Python numbers weak (NumPy's rule): SciPy's ufuncs whose
    float64 loop comes first (gammainc, beta) compute ``f(1.5, float32 array)`` in float64."""
    def kernel(xp, *args):
        out = getattr(xp, name)(*args)
        want = xp.result_type(*args)
        return out if out.dtype == want else out.astype(want)

    kernel.__name__ = name
    return xp_kernel(kernel)


def _declare_special(name, diff, kernel=None):
    """``F.<name>``: the backend's special function (or ``kernel``), differentiable as
    ``diff``."""
    kernel = kernel or special_kernel(name)
    declare_rule_name(name, lambda *a: kernel(NUMPY.xp, *a), diff,
                      lambda xp, dev, lazy: lambda *a: kernel(xp, *a))


@xp_kernel
def _polygamma_kernel(xp, x, n):
    # psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 1 (A&S 6.4.10); psi for n = 0
    if n == 0:
        return _digamma_kernel(xp, x)
    return (-1.0) ** (n + 1) * math.factorial(n) * xp.zeta(float(n + 1), x)


# The names the rules below use; the differentiable versions are this module's functions.
_declare_special("digamma", lambda x: digamma(x),
                 kernel=xp_kernel(lambda xp, x: _digamma_kernel(xp, x)))
declare_rule_name("polygamma", lambda n, x: _polygamma_kernel(NUMPY.xp, x, n),
                  lambda n, x: polygamma(n, x),
                  lambda xp, dev, lazy: lambda n, x: _polygamma_kernel(xp, x, n))
for _name in ("i0", "i1", "i0e", "i1e"):
    _declare_special(_name, (lambda name: lambda x: globals()[name](x))(_name))
_declare_special("zeta", lambda x, q: zeta(x, q))
_declare_special("erfinv", lambda x: erfinv(x),
                 kernel=xp_kernel(lambda xp, x: xp.copysign(xp.erfinv(x), x)))
_declare_special("erfcx", lambda x: erfcx(x))
declare_rule_name("log1p", NUMPY.xp.log1p, lambda x: log1p(x), lambda xp, dev, lazy: xp.log1p)

# --- gamma family ------------------------------------------------------------------------------

# log Gamma(2 + z) = (1 - gamma) z + sum_{k>=2} (-1)^k (zeta(k) - 1) / k z^k (A&S 6.1.33),
# coefficients of z^1 .. z^22 (the terms fall like 2^-k; 0.1^k for |z| <= 0.2)
_LGAMMA_AT_2 = [
    0.42278433509846713, 0.3224670334241132, -0.0673523010531981, 0.020580808427784546,
    -0.007385551028673986, 0.0028905103307415234, -0.001192753911703261,
    0.0005096695247430425, -0.00022315475845357939, 9.945751278180853e-05,
    -4.492623673813314e-05, 2.050721277567069e-05, -9.439488275268397e-06,
    4.374866789907488e-06, -2.039215753801366e-06, 9.55141213040742e-07,
    -4.492469198764566e-07, 2.1207184805554665e-07, -1.0043224823968099e-07,
    4.7698101693639804e-08, -2.2711094608943164e-08, 1.0838659214896955e-08]


def _corrected(xp, x, out, bad, exact, safe):
    """``out`` with the entries where ``bad`` replaced by ``exact(xp, x)``: on NumPy only
    those few entries are computed (a copy: a 0-d input's result is a read-only NumPy
    scalar); elsewhere elementwise, with ``safe`` standing in for x at the other entries."""
    if x.__class__ is NUMPY.xp.ndarray:
        if bad.any():
            out = NUMPY.xp.asarray(out).copy()
            out[bad] = exact(xp, x[bad])
        return out
    return xp.where(bad, exact(xp, xp.where(bad, x, safe)), out)


def _lgamma_exact(xp, x):
    """log |Gamma(x)| where SciPy's float64 gammaln is inaccurate: near its zeros x = 1 and
    x = 2 (|x - 1|, |x - 2| < 0.2), where Cephes's log(Gamma(x + 1) / x) cancels (2.2e-16
    for 6.4e-17 at 1 - 2^-53, the wrong sign at 2 - 2^-52), by the series at 2 (and
    lgamma(1 + z) = lgamma(2 + z) - log1p(z)); and below 1e-300, where 1 / x overflows
    (gammaln(1e-310) = inf), as -log |x| (the next term, -gamma x, is below an ulp)."""
    near1 = x < 1.5
    z = xp.where(near1, x - 1.0, x - 2.0)  # exact (Sterbenz)
    s = _LGAMMA_AT_2[-1]
    for c in reversed(_LGAMMA_AT_2[:-1]):
        s = c + z * s
    s = z * s
    s = xp.where(near1, s - xp.log1p(z), s)
    return xp.where(xp.abs(x) < 1e-300, -xp.log(xp.abs(x)), s)


def _lgamma_kernel(xp, x):
    out = xp.gammaln(x)
    out = xp.where(x == -math.inf, math.inf, out)  # log |Gamma(-inf)| = inf (C, PyTorch)
    if str(x.dtype) != "float64":  # float32 loops compute in double: accurate enough
        return out
    bad = (xp.abs(x - 1.0) < 0.2) | (xp.abs(x - 2.0) < 0.2) | (xp.abs(x) < 1e-300)
    return _corrected(xp, x, out, bad, _lgamma_exact, 1.5)


_LGAMMA_KERNEL = xp_kernel(_lgamma_kernel)
_LGAMMA_KERNEL.__name__ = "gammaln"


LGAMMA = elementwise("lgamma", _LGAMMA_KERNEL, lambda F, self: F.digamma(self),
                     math="digamma(x)", source=f"{AS}, eq. 6.3.1 (psi = d/dx log Gamma)")
def _digamma_reflected(xp, x):
    # psi(x) = psi(1 - x) - pi cot(pi x) (A&S 6.3.7), cot(pi x) = cot(pi r) with r = x - round(x)
    # exact, where SciPy's (and PyTorch's) reflection loses the distance to the pole
    # (2.7e-5 relative at x = -1 + 1e-12)
    r = x - xp.round(x)
    return xp.digamma(1.0 - x) - math.pi / xp.tan(math.pi * r)


def _digamma_kernel(xp, x):
    out = xp.digamma(x)
    if str(x.dtype) != "float64":  # float32 loops compute in double
        return out
    # x < 0 and not an integer (there PyTorch's digamma is NaN, as SciPy's)
    bad = (x < 0) & (x != xp.round(x))
    return _corrected(xp, x, out, bad, _digamma_reflected, -0.5)


_DIGAMMA_KERNEL = xp_kernel(_digamma_kernel)
_DIGAMMA_KERNEL.__name__ = "digamma"
DIGAMMA = elementwise("digamma", _DIGAMMA_KERNEL,
                      lambda F, self: F.polygamma(1, self), math="polygamma(1, x)",
                      source=f"{AS}, eq. 6.4.1 (psi^(n) = d^(n+1)/dx^(n+1) log Gamma)")
POLYGAMMA = defop(
    "polygamma", _polygamma_kernel, ("self",), attrs=("n",),
    vjp={"self": lambda F, g, self, n: g * F.polygamma(n + 1, self)},
    jvp={"self": lambda F, t, self, n: t * F.polygamma(n + 1, self)},
    math={"self": "grad_x = grad * polygamma(n + 1, x)", "out": "dy = polygamma(n + 1, x) dx"},
    source=f"{AS}, eq. 6.4.1; the kernel is (-1)^(n+1) n! zeta(n + 1, x), eq. 6.4.10",
)


def _zeta_x(F, g):
    raise NotImplementedError(
        "zeta: the derivative with respect to x (the first argument) is not implemented, "
        "as in PyTorch; only q (the second) is differentiable")


ZETA = defop(
    "zeta", special_kernel("zeta"), ("self", "other"),
    vjp={"self": _zeta_x, "other": partial_rule(lambda F, self, other:
                                                -self * F.zeta(self + 1, other))},
    jvp={"self": _zeta_x, "other": partial_rule(lambda F, self, other:
                                                -self * F.zeta(self + 1, other))},
    math={"self": "not implemented (as in PyTorch)",
          "other": "grad_q = -grad * x * zeta(x + 1, q)", "out": "dz = -x zeta(x + 1, q) dq"},
    source="Hurwitz zeta: d/dq zeta(x, q) = -x zeta(x + 1, q), NIST DLMF eq. 25.11.17",
)

lgamma = _unary(LGAMMA, "Elementwise log |Gamma(x)|.")
digamma = _unary(DIGAMMA, "Elementwise digamma psi(x) = d/dx log Gamma(x).")


@name_errors
@documented(POLYGAMMA)
def polygamma(n, input):
    """The ``n``-th derivative of digamma at ``input`` (``n`` a non-negative int)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        # a negative n: PyTorch's RuntimeError (a ShapeError is one, and a ValueError)
        raise (ValueError if not isinstance(n, int) else ShapeError)(
            f"polygamma: n must be a non-negative int, got {n!r}")
    return apply(POLYGAMMA, (input,), (n,))


@name_errors
@documented(ZETA)
def zeta(input, other):
    """The Hurwitz zeta function zeta(input, other) = sum_k (k + other)^-input; the gradient
    flows to ``other`` only (as in PyTorch)."""
    return apply(ZETA, (input, other))


@name_errors
def mvlgamma(input, p):
    """The multivariate log-gamma function of dimension ``p``: ``p (p - 1) / 4 log(pi) +
    sum_{i < p} lgamma(input - i / 2)``. A composition of lgamma."""
    if not isinstance(p, int) or p < 1:
        raise (ValueError if not isinstance(p, int) else ShapeError)(
            f"mvlgamma: p must be a positive int, got {p!r}")
    total = lgamma(input)
    for i in range(1, p):
        total = add(total, lgamma(sub(input, i / 2)))
    return add(total, p * (p - 1) / 4 * math.log(math.pi))


@name_errors
def betaln(a, b):
    """``log |B(a, b)| = lgamma(a) + lgamma(b) - lgamma(a + b)`` (SciPy's name). A
    composition of lgamma."""
    return sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))


# --- error function family ---------------------------------------------------------------------

ERFC = elementwise("erfc", special_kernel("erfc"),
                   lambda F, self: (-2 / _SQRT_PI) * F.exp(-self * self),
                   math="-2 / sqrt(pi) * exp(-x^2)",
                   source=f"{AS}, eqs. 7.1.2 (erfc = 1 - erf) and 7.1.19")
# erfinv is odd, and SciPy's gives erfinv(-0.0) = +0.0 (PyTorch's: -0.0): copysign puts
# x's sign back (the result's sign is x's everywhere, NaN kept)
_ERFINV_KERNEL = xp_kernel(lambda xp, x: xp.copysign(xp.erfinv(x), x))
_ERFINV_KERNEL.__name__ = "erfinv"
ERFINV = elementwise("erfinv", _ERFINV_KERNEL,
                     # erfinv(x) recomputed from x (PyTorch saves only self): changing the
                     # output in place leaves the backward valid
                     lambda F, self: (_SQRT_PI / 2) * F.exp(F.erfinv(self) ** 2),
                     math="sqrt(pi) / 2 * exp(erfinv(x)^2)",
                     source=f"inverse function rule on {AS}, eq. 7.1.19")
# erfcx'(x) = 2 x erfcx(x) - 2/sqrt(pi): both terms tend to 2/sqrt(pi) as x grows, and the
# difference (~ -1/(sqrt(pi) x^2)) cancels (wrong sign in float32 at x = 100, and its own
# derivative, the second one, wrong by orders of magnitude). For x >= 10 the rule is the
# asymptotic series of A&S 7.1.23 put into the same formula:
#   erfcx'(x) = (2/sqrt(pi)) sum_{k>=1} (-1)^k (2k-1)!! / (2 x^2)^k,
# 12 terms (relative error below 1e-15 at x = 10, below 1e-9 at x = 5, where float32 starts
# it; the terms decrease up to k ~ x^2).
_ERFCX_SERIES = [(-1) ** k * math.prod(range(1, 2 * k, 2)) / 2.0 ** k for k in range(1, 13)]


def _erfcx_deriv(F, self, out):
    start = 10.0 if "64" in str(self.dtype) else 5.0
    big = self >= start
    u = (1.0 / F.where(big, self, start)) ** 2  # finite where not used, 0 (not nan) at inf
    series = _ERFCX_SERIES[-1]
    for c in reversed(_ERFCX_SERIES[:-1]):
        series = c + u * series
    # the other branch sees 0 where the series is used (its derivative would be 0 * inf there)
    direct = 2 * F.where(big, 0.0, self) * F.where(big, 0.0, out) - 2 / _SQRT_PI
    return F.where(big, (2 / _SQRT_PI) * u * series, direct)


ERFCX = elementwise("erfcx", special_kernel("erfcx"), _erfcx_deriv,
                    math="2 x erfcx(x) - 2 / sqrt(pi)  (for x >= 10 (float32: 5), where that "
                         "cancels: "
                         "(2 / sqrt(pi)) sum_{k=1..12} (-1)^k (2k-1)!! / (2 x^2)^k)",
                    source=f"product rule on erfcx(x) = exp(x^2) erfc(x), {AS}, eq. 7.1.19; "
                           "for large x the asymptotic expansion, eq. 7.1.23")
NDTRI = elementwise("ndtri", special_kernel("ndtri"),
                    lambda F, out: _SQRT_2PI * F.exp(out * out / 2),
                    math="sqrt(2 pi) exp(ndtri(x)^2 / 2)",
                    source=f"inverse function rule on the normal density, {AS}, eq. 26.2.1")
# pdf(x) / ndtr(x) = sqrt(2/pi) / erfcx(-x / sqrt(2)) (ndtr(x) = exp(-x^2/2) erfcx(-x/sqrt 2)
# / 2): no exp(-x^2/2 - log_ndtr(x)), whose two large terms cancel for x << 0 (0.1% off in
# float32 at x = -700)
def _log_ndtr_deriv(F, self, out):
    neg = self < 0
    # x < 0: the erfcx form; x >= 0 (ndtr >= 1/2, and erfcx(-x/sqrt 2) overflows for x > 37):
    # pdf(x) / ndtr(x) as exp(-x^2/2 - log_ndtr(x)); each branch sees a safe value where
    # the other is used
    left = math.sqrt(2 / math.pi) / F.erfcx(F.where(neg, self, 0.0) * -_SQRT_HALF)
    x = F.where(neg, 0.0, self)
    right = F.exp(-x * x / 2 - F.where(neg, -math.log(2), out)) / _SQRT_2PI
    return F.where(neg, left, right)


LOG_NDTR = elementwise("log_ndtr", special_kernel("log_ndtr"), _log_ndtr_deriv,
                       math="sqrt(2 / pi) / erfcx(-x / sqrt(2)) for x < 0, "
                            "exp(-x^2 / 2 - log_ndtr(x)) / sqrt(2 pi) for x >= 0  (= pdf(x) / "
                            "ndtr(x), without underflow or cancellation)",
                       source=f"{AS}, eqs. 26.2.1-26.2.2 and 7.1.2 (ndtr(x) = "
                              "exp(-x^2/2) erfcx(-x/sqrt 2) / 2)")

erfc = _unary(ERFC, "Elementwise complementary error function 1 - erf(x).")
erfinv = _unary(ERFINV, "Elementwise inverse error function, for x in (-1, 1).")
erfcx = _unary(ERFCX, "Elementwise scaled complementary error function exp(x^2) erfc(x).")
ndtri = _unary(NDTRI, "Elementwise inverse of the standard normal CDF, for x in (0, 1).")
log_ndtr = _unary(LOG_NDTR, "Elementwise log of the standard normal CDF, accurate for x << 0.")


@name_errors
def ndtr(input):
    """The standard normal CDF, ``erfc(-input / sqrt(2)) / 2``. A composition of erfc."""
    return mul(erfc(mul(input, -1 / math.sqrt(2))), 0.5)


@name_errors
def logit(input, eps=None):
    """``log(p / (1 - p))``; with ``eps``, ``p`` is first clamped into ``[eps, 1 - eps]``
    (the gradient is then 0 outside, as in PyTorch). Without ``eps``, the value and the
    gradient are NaN outside ``[0, 1]`` (PyTorch's convention). A composition."""
    p = input if eps is None else clamp(input, eps, 1 - eps)
    out = sub(log(p), log1p(mul(p, -1.0)))
    if eps is None and isinstance(input, Tensor):
        # outside [0, 1] the value is NaN, and so are the gradient (as in PyTorch) and the
        # second derivative (log's own rule 1/p would give finite numbers there): add
        # (input + input^2) * (NaN there, 0 elsewhere)
        d = input._data
        xp = backend_of(d).xp
        outside = (d < 0) | (d > 1)
        if d.__class__ is not NUMPY.xp.ndarray or outside.any():
            poison = xp.where(outside, xp.full_like(d, math.nan), xp.zeros_like(d))
            out = add(out, mul(add(input, mul(input, input)), poison))
    return out


# --- modified Bessel functions ---------------------------------------------------------------

_BESSEL = f"{AS}, eqs. 9.6.26-9.6.27 (I0' = I1, I1' = I0 - I1 / x)"


# I1'(x) = sum_k (2k + 1) x^(2k) / (2^(2k+1) k! (k+1)!) (from A&S 9.6.10), coefficients of
# x^0, x^2, ..., x^20: for |x| < 1 the last term is below 1e-19. Used there, where
# I0 - I1 / x loses 1 / x (1 / 5e-324 overflows: 0 or -inf for 1/2) and its own derivative,
# I1'' = I1 - (I1' - I1 / x) / x, cancels to nothing (4e-6 for 3.8e-11 at x = 1e-10).
_I1_PRIME = [(2 * k + 1) / (2.0 ** (2 * k + 1) * math.factorial(k) * math.factorial(k + 1))
             for k in range(11)]


def _i1_prime_series(F, x, small):
    x2 = F.where(small, x, 0.0) ** 2
    series = _I1_PRIME[-1]
    for c in reversed(_I1_PRIME[:-1]):
        series = c + x2 * series
    return series


def _i1_deriv(F, self, out):
    # I1' = I0 - I1 / x; for |x| < 1 its power series (1/2 at 0)
    small = F.abs(self) < 1.0
    safe = F.where(small, 1.0, self)
    return F.where(small, _i1_prime_series(F, self, small), F.i0(self) - out / safe)


def _i1e_deriv(F, self, out):
    # i1e = e^-|x| I1: i1e' = i0e - i1e (sign(x) + 1 / x) = e^-|x| I1' - sign(x) i1e; for
    # |x| < 1 the second form with I1''s power series (1/2 at 0)
    small = F.abs(self) < 1.0
    safe = F.where(small, 1.0, self)
    near = F.exp(-F.abs(self)) * _i1_prime_series(F, self, small) - F.sign(self) * out
    return F.where(small, near, F.i0e(self) - out * (F.sign(self) + 1 / safe))


I0 = elementwise("i0", special_kernel("i0"), lambda F, self: F.i1(self), math="i1(x)",
                 source=_BESSEL)
I0E = elementwise("i0e", special_kernel("i0e"),
                  lambda F, self, out: F.i1e(self) - F.sign(self) * out,
                  math="i1e(x) - sign(x) i0e(x)",
                  source=_BESSEL + "; product rule on i0e = exp(-|x|) I0")
I1 = elementwise("i1", special_kernel("i1"), _i1_deriv,
                 math="i0(x) - i1(x) / x  (for |x| < 1 its power series "
                      "sum_k (2k+1) x^(2k) / (2^(2k+1) k! (k+1)!), 1/2 at 0)",
                 source=_BESSEL + "; the series from eq. 9.6.10")
I1E = elementwise("i1e", special_kernel("i1e"), _i1e_deriv,
                  math="i0e(x) - i1e(x) (sign(x) + 1 / x)  (for |x| < 1: exp(-|x|) I1'(x) - "
                       "sign(x) i1e(x), I1' by its power series; 1/2 at 0)",
                  source=_BESSEL + "; product rule on i1e = exp(-|x|) I1")

i0 = _unary(I0, "Elementwise modified Bessel function of the first kind, order 0.")
i0e = _unary(I0E, "Elementwise exponentially scaled i0: exp(-|x|) i0(x).")
i1 = _unary(I1, "Elementwise modified Bessel function of the first kind, order 1.")
i1e = _unary(I1E, "Elementwise exponentially scaled i1: exp(-|x|) i1(x).")

# --- entropy terms ---------------------------------------------------------------------------


def _entr_fallback(xp, x):
    safe = xp.where(x > 0, x, xp.ones_like(x))
    inside = -x * xp.log(safe)
    return xp.where(x > 0, inside, xp.where(x == 0, xp.zeros_like(x), -math.inf))


ENTR = elementwise("entr", own_or("entr", _entr_fallback),
                   lambda F, self: -(F.log(self) + 1), math="-(log(x) + 1)",
                   source="elementary calculus; entr(x) = -x log(x), 0 at 0, -inf for x < 0, "
                          "as torch.special.entr")
entr = _unary(ENTR, "Elementwise -x log(x) (0 at 0, -inf for x < 0).")


def _xlog1py_fallback(xp, x, y):
    out = x * xp.log1p(y)
    return xp.where((x == 0) & ~xp.isnan(y), xp.zeros_like(out), out)


def _xlog1py_x(F, self, other):
    # log1p(y), and 0 where x = 0 and y <= -1 (where log1p(y) is -inf or NaN), as PyTorch's
    masked = (self == 0) & (other <= -1)
    return F.where(masked, 0.0, F.log1p(F.where(masked, 0.0, other)))


XLOG1PY = binary(
    "xlog1py", weak_numbers(own_or("xlog1py", _xlog1py_fallback)),
    {"self": _xlog1py_x, "other": lambda F, self, other: self / (1 + other)},
    math={"self": "grad_x = grad * log1p(y)  (0 where x = 0 and y <= -1)",
          "other": "grad_y = grad * x / (1 + y)", "out": "dz = log1p(y) dx + x / (1 + y) dy"},
    source="elementary calculus; xlog1py(0, y) = 0 (unless y is NaN), as "
           "torch.special.xlog1py",
)
xlog1py = XLOG1PY.call
xlog1py.__doc__ = "Elementwise input * log1p(other), 0 where input == 0 (unless other is NaN)."
xlog1py = documented(XLOG1PY)(xlog1py)


# --- gamma function, its sign and reciprocal, beta (SciPy's names) ---------------------------

_declare_special("lgamma", lambda x: lgamma(x), kernel=_LGAMMA_KERNEL)
_declare_special("xlogy", lambda x, y: xlogy(x, y), kernel=XLOGY.kernel)
_declare_special("xlog1py", lambda x, y: xlog1py(x, y), kernel=XLOG1PY.kernel)

GAMMA = elementwise("gamma", special_kernel("gamma"),
                    lambda F, self, out: out * F.digamma(self), math="gamma(x) digamma(x)",
                    source=f"{AS}, eq. 6.3.1 (psi = Gamma' / Gamma)")
RGAMMA = elementwise("rgamma", special_kernel("rgamma"),
                     lambda F, self, out: -out * F.digamma(self),
                     math="-rgamma(x) digamma(x)  (away from the poles of Gamma)",
                     source=f"{AS}, eq. 6.3.1, on 1 / Gamma(x)")
GAMMASGN = zero_gradient("gammasgn", special_kernel("gammasgn"),
                         what="piecewise constant (the sign of Gamma(x))")


def _beta_partial(first):
    def deriv(F, self, other, out):
        return out * (F.digamma(self if first else other) - F.digamma(self + other))
    return deriv


BETA = binary(
    "beta", typed_special_kernel("beta"),
    {"self": _beta_partial(True), "other": _beta_partial(False)},
    math={"self": "grad_a = grad * B(a, b) (digamma(a) - digamma(a + b))",
          "other": "grad_b = grad * B(a, b) (digamma(b) - digamma(a + b))",
          "out": "dB = B(a, b) ((digamma(a) - digamma(a + b)) da + (digamma(b) - digamma(a + b)) "
                 "db)"},
    source=f"{AS}, eqs. 6.2.2 (B = Gamma(a) Gamma(b) / Gamma(a + b)) and 6.3.1",
)

gamma = _unary(GAMMA, "Elementwise gamma function Gamma(x).")
rgamma = _unary(RGAMMA, "Elementwise reciprocal gamma function 1 / Gamma(x) (0 at the poles).")
gammasgn = _unary(GAMMASGN, "Elementwise sign of Gamma(x) (SciPy's gammasgn); zero gradient.")


@name_errors
@documented(BETA)
def beta(a, b):
    """The beta function B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b) (SciPy's beta)."""
    return apply(BETA, (a, b))


@name_errors
def erfcinv(input):
    """The inverse of erfc on (0, 2): ``-ndtri(input / 2) / sqrt(2)`` (SciPy's erfcinv). A
    composition of ndtri, exact: erfc(z) = 2 Phi(-z sqrt(2)), so z = -Phi^-1(y / 2) / sqrt(2)."""
    return mul(ndtri(mul(input, 0.5)), -1 / math.sqrt(2))


# --- Bessel functions of the first and second kinds, and modified of real order -------------

_BESSEL_JY = (f"{AS}, eqs. 9.1.27-9.1.28 (C_0' = -C_1, C_1' = C_0 - C_1 / x, "
              "C_n' = (C_{n-1} - C_{n+1}) / 2, for C = J, Y)")
_BESSEL_IV = (f"{AS}, eq. 9.6.26 (I_v' = (I_{{v-1}} + I_{{v+1}}) / 2); product rule on "
              "ive = exp(-|x|) I_v")


def _order_kernel(scipy_name):
    """The kernel of a function of an order and x, ``fn(xp, x, order)``, in x's dtype (SciPy
    computes yn of an int order in float64 whatever x's float type)."""
    def kernel(xp, x, order):
        out = getattr(xp, scipy_name)(order, x)
        return out if out.dtype == x.dtype else out.astype(x.dtype)

    kernel = xp_kernel(kernel)
    kernel.__name__ = scipy_name
    return kernel


_JN, _YN, _IV, _IVE = (_order_kernel(n) for n in ("jn", "yn", "iv", "ive"))


def _declare_order(name, kernel, diff):
    declare_rule_name(name, lambda order, x: kernel(NUMPY.xp, x, order), diff,
                      lambda xp, dev, lazy: lambda order, x: kernel(xp, x, order))


_declare_special("j0", lambda x: j0(x))
_declare_special("j1", lambda x: j1(x))
_declare_special("y0", lambda x: y0(x))
_declare_special("y1", lambda x: y1(x))
_declare_order("jn", _JN, lambda n, x: jn(n, x))
_declare_order("yn", _YN, lambda n, x: yn(n, x))
_declare_order("iv", _IV, lambda v, x: iv(v, x))
_declare_order("ive", _IVE, lambda v, x: ive(v, x))


def _j1_deriv(F, self, out):
    # J1' = J0 - J1 / x, whose limit at 0 is 1/2
    safe = F.where(self == 0, 1.0, self)
    return F.where(self == 0, 0.5, F.j0(self) - out / safe)


J0 = elementwise("j0", special_kernel("j0"), lambda F, self: -F.j1(self), math="-j1(x)",
                 source=_BESSEL_JY)
J1 = elementwise("j1", special_kernel("j1"), _j1_deriv, math="j0(x) - j1(x) / x  (1/2 at 0)",
                 source=_BESSEL_JY)
Y0 = elementwise("y0", special_kernel("y0"), lambda F, self: -F.y1(self), math="-y1(x)",
                 source=_BESSEL_JY)
Y1 = elementwise("y1", special_kernel("y1"), lambda F, self, out: F.y0(self) - out / self,
                 math="y0(x) - y1(x) / x", source=_BESSEL_JY)


def _order_op(name, kernel, order, deriv, math_text, source):
    """An elementwise op of ``self`` with a non-differentiable order attribute ``order``."""
    def rule(F, g, self, *a):
        return g * deriv(F, self, *a)

    params = ("self", order)
    return defop(name, kernel, ("self",), attrs=(order,),
                 vjp={"self": Rule(rule, params)}, jvp={"self": Rule(rule, params)},
                 math={"self": f"grad_x = grad * ({math_text})", "out": f"dy = ({math_text}) dx"},
                 source=source)


JN = _order_op("jn", _JN, "n", lambda F, x, n: (F.jn(n - 1, x) - F.jn(n + 1, x)) / 2,
               "(jn(n - 1, x) - jn(n + 1, x)) / 2", _BESSEL_JY)
YN = _order_op("yn", _YN, "n", lambda F, x, n: (F.yn(n - 1, x) - F.yn(n + 1, x)) / 2,
               "(yn(n - 1, x) - yn(n + 1, x)) / 2", _BESSEL_JY)
IV = _order_op("iv", _IV, "v", lambda F, x, v: (F.iv(v - 1, x) + F.iv(v + 1, x)) / 2,
               "(iv(v - 1, x) + iv(v + 1, x)) / 2", _BESSEL_IV)
IVE = _order_op("ive", _IVE, "v",
                lambda F, x, v: (F.ive(v - 1, x) + F.ive(v + 1, x)) / 2 - F.sign(x) * F.ive(v, x),
                "(ive(v - 1, x) + ive(v + 1, x)) / 2 - sign(x) ive(v, x)", _BESSEL_IV)

j0 = _unary(J0, "Elementwise Bessel function of the first kind of order 0.")
j1 = _unary(J1, "Elementwise Bessel function of the first kind of order 1.")
y0 = _unary(Y0, "Elementwise Bessel function of the second kind of order 0 (x > 0).")
y1 = _unary(Y1, "Elementwise Bessel function of the second kind of order 1 (x > 0).")


def _order(name, what, value, integral):
    if isinstance(value, Tensor) and value.ndim == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or (
            integral and value != int(value)):
        kind = "an int" if integral else "a real number"
        raise TypeError(f"{name}: the order {what} must be {kind} (it is not differentiable), "
                        f"got {value!r}")
    return int(value) if integral else value


@name_errors
@documented(JN)
def jn(n, x):
    """The Bessel function of the first kind of order ``n`` (SciPy's jn; ``n`` a number, not
    differentiable)."""
    return apply(JN, (x,), (_order("jn", "n", n, False),))


@name_errors
@documented(YN)
def yn(n, x):
    """The Bessel function of the second kind of integer order ``n`` (SciPy's yn), x > 0."""
    return apply(YN, (x,), (_order("yn", "n", n, True),))


@name_errors
@documented(IV)
def iv(v, x):
    """The modified Bessel function of the first kind of real order ``v`` (SciPy's iv;
    ``v`` a number, not differentiable)."""
    return apply(IV, (x,), (_order("iv", "v", v, False),))


@name_errors
@documented(IVE)
def ive(v, x):
    """The exponentially scaled modified Bessel function ``exp(-|x|) iv(v, x)`` (SciPy's
    ive; ``v`` a number, not differentiable)."""
    return apply(IVE, (x,), (_order("ive", "v", v, False),))


# --- regularized incomplete gamma and beta functions -----------------------------------------


def _not_differentiable(op, what):
    def rule(F, g):
        raise NotImplementedError(
            f"{op}: the derivative with respect to {what} is not implemented, as in PyTorch; "
            "only x (the last argument) is differentiable")
    return rule


def _like_x(F, v, x):
    """A Python number ``v`` as an array of ``x``'s dtype (SciPy's ufuncs would compute with
    it in float64)."""
    return F.zeros_like(x) + v if isinstance(v, numbers.Real) else v


def _gammainc_x(F, self, other):
    # x^(a-1) e^-x / Gamma(a), as exp(xlogy(a - 1, x) - x - lgamma(a)) (no overflow)
    self = _like_x(F, self, other)
    return F.exp(F.xlogy(self - 1, other) - other - F.lgamma(self))


_GAMMAINC = (f"{AS}, eqs. 6.5.1-6.5.3 (P(a, x) = gamma(a, x) / Gamma(a), Q = 1 - P; "
             "d/dx gamma(a, x) = x^(a-1) e^-x)")
GAMMAINC = defop(
    "gammainc", typed_special_kernel("gammainc"), ("self", "other"),
    vjp={"self": _not_differentiable("gammainc", "a"), "other": partial_rule(_gammainc_x)},
    jvp={"self": _not_differentiable("gammainc", "a"), "other": partial_rule(_gammainc_x)},
    math={"self": "not implemented (as in PyTorch)",
          "other": "grad_x = grad * x^(a-1) e^-x / Gamma(a)",
          "out": "dP = x^(a-1) e^-x / Gamma(a) dx"},
    source=_GAMMAINC,
)
GAMMAINCC = defop(
    "gammaincc", typed_special_kernel("gammaincc"), ("self", "other"),
    vjp={"self": _not_differentiable("gammaincc", "a"),
         "other": partial_rule(lambda F, self, other: -_gammainc_x(F, self, other))},
    jvp={"self": _not_differentiable("gammaincc", "a"),
         "other": partial_rule(lambda F, self, other: -_gammainc_x(F, self, other))},
    math={"self": "not implemented (as in PyTorch)",
          "other": "grad_x = -grad * x^(a-1) e^-x / Gamma(a)",
          "out": "dQ = -x^(a-1) e^-x / Gamma(a) dx"},
    source=_GAMMAINC,
)


def _betainc_x(F, a, b, x):
    # x^(a-1) (1-x)^(b-1) / B(a, b), in logs: xlogy(a-1, x) + xlog1py(b-1, -x) - log B(a, b)
    a, b = _like_x(F, a, x), _like_x(F, b, x)
    log_beta = F.lgamma(a) + F.lgamma(b) - F.lgamma(a + b)
    return F.exp(F.xlogy(a - 1, x) + F.xlog1py(b - 1, -x) - log_beta)


BETAINC = defop(
    "betainc", typed_special_kernel("betainc"), ("a", "b", "x"),
    vjp={"a": _not_differentiable("betainc", "a"), "b": _not_differentiable("betainc", "b"),
         "x": partial_rule(_betainc_x)},
    jvp={"a": _not_differentiable("betainc", "a"), "b": _not_differentiable("betainc", "b"),
         "x": partial_rule(_betainc_x)},
    math={"a": "not implemented", "b": "not implemented",
          "x": "grad_x = grad * x^(a-1) (1-x)^(b-1) / B(a, b)",
          "out": "dI = x^(a-1) (1-x)^(b-1) / B(a, b) dx"},
    source=f"{AS}, eq. 6.6.2 (I_x(a, b) = B_x(a, b) / B(a, b), B_x = int_0^x t^(a-1) "
           "(1-t)^(b-1) dt)",
)


@name_errors
@documented(GAMMAINC)
def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x) (SciPy's gammainc, PyTorch's
    special.gammainc); differentiable in ``x`` only (the ``a`` derivative raises
    NotImplementedError, as PyTorch's)."""
    return apply(GAMMAINC, (a, x))


@name_errors
@documented(GAMMAINCC)
def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x); differentiable
    in ``x`` only."""
    return apply(GAMMAINCC, (a, x))


@name_errors
@documented(BETAINC)
def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b) (SciPy's betainc); differentiable
    in ``x`` only (the ``a`` and ``b`` derivatives raise NotImplementedError)."""
    return apply(BETAINC, (a, b, x))

del _name


# --- torch.special's orthogonal polynomials, Airy Ai and modified Bessel K ---------------------
#
# Forward values are SciPy's (eval_chebyt, eval_chebyu, eval_hermite, eval_hermitenorm,
# eval_laguerre, eval_legendre, eval_gegenbauer, eval_genlaguerre, airy, k0, k1, k0e, k1e),
# computed in float64 and rounded to the result dtype, with PyTorch's definitions where they
# differ from SciPy's: the degree n is truncated toward zero (int64_t(n)), a negative degree
# (and a NaN or infinite one, which int64_t turns negative) gives 0, Hermite polynomials are
# NaN above torch's degree limit (128 in float32, 512 in float64), and the Chebyshev
# polynomials for |x| < 1 and n > 6 (T) or n > 8 (U, V, W) are torch's trigonometric forms.
# The kernels are NumPy only (SciPy).

_DLMF = "NIST DLMF"


def _scipy_special():
    from scipy import special

    return special


def _np_degree(n):
    """PyTorch's ``int64_t(n)`` of a degree array or number: truncated toward zero; NaN and
    values beyond int64 (where the C cast gives INT64_MIN on x86) are -1 (degree < 0: 0)."""
    n = NUMPY.xp.asarray(n)
    if n.dtype.kind in "biu":
        return n.astype(NUMPY.xp.int64)
    ok = NUMPY.xp.abs(n) < 2.0 ** 63
    return NUMPY.xp.where(ok, NUMPY.xp.trunc(NUMPY.xp.where(ok, n, 0.0)), -1).astype(
        NUMPY.xp.int64)


def _float_dtype(x):
    dt = NUMPY.xp.asarray(x).dtype
    return dt if dt.kind == "f" else NUMPY.xp.dtype(DEFAULT_FLOAT[0])


def _as_result(out, dtype):
    out = NUMPY.xp.asarray(out)
    if out.dtype == dtype:
        return out
    with NUMPY.xp.errstate(over="ignore"):  # beyond float32: +-inf
        return out.astype(dtype)


# Beyond this degree the Chebyshev polynomials at |x| > 1 use their hyperbolic forms (SciPy's
# recurrences take n steps); there |T_n(x)| >= cosh(n acosh|x|) mostly overflows.
_CHEB_DIRECT = 2 ** 16


def _chebyshev_kernel(kind, shifted):
    """T, U, V or W (``kind``) at x, or at 2x - 1 (``shifted``): SciPy's eval_chebyt /
    eval_chebyu (V_n = U_n - U_{n-1}, W_n = U_n + U_{n-1}, Mason & Handscomb (2003), eq.
    1.17), torch's trigonometric forms for |x| < 1 beyond n = 6 (T) or 8 (U, V, W)."""
    xp = NUMPY.xp

    def kernel(x, n):
        dtype = _float_dtype(x)
        x = xp.asarray(x, dtype=xp.float64)
        if shifted:
            x = x + x - 1.0
        n = _np_degree(n)
        x, n = xp.broadcast_arrays(x, n)
        sc = _scipy_special()
        ax = xp.abs(x)
        trig = (n > (6 if kind == "t" else 8)) & (ax < 1)
        hyper = (n > _CHEB_DIRECT) & (ax > 1)
        edge = ax == 1  # torch's exact values at +-1 (SciPy would take n steps)
        m = xp.where(trig | hyper | edge | (n < 0), 0, n)
        with xp.errstate(all="ignore"):
            if kind == "t":
                out = sc.eval_chebyt(m, x)
            else:
                out = sc.eval_chebyu(m, x)
                if kind != "u":
                    prev = xp.where(m > 0, sc.eval_chebyu(xp.maximum(m - 1, 0), x), 0.0)
                    out = out - prev if kind == "v" else out + prev
            out = xp.array(out, dtype=xp.float64)
            if trig.any():
                out[trig] = _chebyshev_trig(kind, x[trig], n[trig].astype(xp.float64))
            if hyper.any():
                out[hyper] = _chebyshev_hyperbolic(kind, x[hyper], n[hyper])
            if edge.any():
                out[edge] = _chebyshev_edge(kind, x[edge], n[edge])
        return _as_result(xp.where(n < 0, 0.0, out), dtype)

    kernel.__name__ = ("shifted_" if shifted else "") + f"chebyshev_polynomial_{kind}"
    return kernel


def _chebyshev_trig(kind, x, k):
    # torch's forms for |x| < 1 (Math.h), theta = acos(x): T_n = cos(n theta),
    # U_n = sin((n+1) theta) / sin(theta), V_n = cos((n+1/2) theta) / cos(theta/2),
    # W_n = sin((n+1/2) theta) / sin(theta/2) (Mason & Handscomb (2003), eqs. 1.4, 1.8-1.10)
    xp = NUMPY.xp
    th = xp.arccos(x)
    if kind == "t":
        return xp.cos(k * th)
    if kind == "u":
        s = xp.sin(th)
        safe = xp.where(s != 0, s, 1.0)
        return xp.where(s != 0, xp.sin((k + 1) * th) / safe,
                        (k + 1) * xp.cos((k + 1) * th) / x)
    odd = xp.where(k % 2 == 0, 1.0, -1.0)
    if kind == "v":
        edge = xp.sin(th / 2) == 1
        return xp.where(edge, odd * (2 * k + 1),
                        xp.cos((k + 0.5) * th) / xp.where(edge, 1.0, xp.cos(th / 2)))
    edge = xp.cos(th / 2) == 1
    return xp.where(edge, xp.where(x > 0, 2 * k + 1, odd),
                    xp.sin((k + 0.5) * th) / xp.where(edge, 1.0, xp.sin(th / 2)))


def _chebyshev_edge(kind, x, n):
    # at x = +-1 (Mason & Handscomb (2003), section 1.2): T_n(1) = 1, U_n(1) = n + 1,
    # V_n(1) = 1, W_n(1) = 2n + 1; at -1, T and U times (-1)^n, V_n(-1) = (-1)^n (2n + 1),
    # W_n(-1) = (-1)^n
    xp = NUMPY.xp
    k = n.astype(xp.float64)
    sign = xp.where((x < 0) & (n % 2 == 1), -1.0, 1.0)
    if kind == "t":
        return sign
    if kind == "u":
        return sign * (k + 1)
    one, odd = (1.0, 2 * k + 1) if kind == "v" else (2 * k + 1, 1.0)
    return xp.where(x > 0, one, sign * odd)


def _chebyshev_hyperbolic(kind, x, n):
    # |x| > 1, t = acosh|x|: T_n = cosh(n t), U_n = sinh((n+1) t) / sinh(t),
    # V_n = cosh((n+1/2) t) / cosh(t/2), W_n = sinh((n+1/2) t) / sinh(t/2) for x > 1; for
    # x < -1, T_n(x) = (-1)^n T_n(-x), U likewise, V_n(x) = (-1)^n W_n(-x) and back
    xp = NUMPY.xp
    t = xp.arccosh(xp.abs(x))
    k = n.astype(xp.float64)
    sign = xp.where((x < 0) & (n % 2 == 1), -1.0, 1.0)
    if kind == "t":
        return sign * xp.cosh(k * t)
    if kind == "u":
        return sign * xp.sinh((k + 1) * t) / xp.sinh(t)
    v = xp.cosh((k + 0.5) * t) / xp.cosh(t / 2)
    w = xp.sinh((k + 0.5) * t) / xp.sinh(t / 2)
    first = v if kind == "v" else w
    second = w if kind == "v" else v
    return sign * xp.where(x > 0, first, second)


_HERMITE_LIMIT = {"float32": 128, "float64": 512}


def _hermite_kernel(scipy_name):
    xp = NUMPY.xp

    def kernel(x, n):
        dtype = _float_dtype(x)
        n = _np_degree(n)
        limit = _HERMITE_LIMIT.get(str(dtype), 1024)  # torch's getHermitianLimit<T>()
        m = xp.where((n < 0) | (n > limit), 0, n)
        with xp.errstate(all="ignore"):
            out = getattr(_scipy_special(), scipy_name)(m, xp.asarray(x, dtype=xp.float64))
        out = xp.where(n < 0, 0.0, xp.where(n > limit, math.nan, out))
        return _as_result(out, dtype)

    kernel.__name__ = scipy_name
    return kernel


def _laguerre_kernel(x, n):
    xp = NUMPY.xp
    dtype = _float_dtype(x)
    n = _np_degree(n)
    x = xp.asarray(x, dtype=xp.float64)
    with xp.errstate(all="ignore"):
        out = _scipy_special().eval_laguerre(xp.where(n < 0, 0, n), x)
    # torch: L_n(0) = 1 exactly, 0 for n < 0
    return _as_result(xp.where(n < 0, 0.0, xp.where(x == 0, 1.0, out)), dtype)


def _legendre_kernel(x, n):
    xp = NUMPY.xp
    dtype = _float_dtype(x)
    n = _np_degree(n)
    x = xp.asarray(x, dtype=xp.float64)
    edge = xp.abs(x) == 1  # P_n(+-1) = (+-1)^n, in O(1) as torch (SciPy would take n steps)
    with xp.errstate(all="ignore"):
        out = _scipy_special().eval_legendre(xp.where((n < 0) | edge, 0, n), x)
    ends = xp.where((x > 0) | (n % 2 == 0), 1.0, -1.0)
    return _as_result(xp.where(n < 0, 0.0, xp.where(edge, ends, out)), dtype)


def _alpha_kernel(scipy_name):
    """Gegenbauer C_n^(alpha)(x) or generalized Laguerre L_n^(alpha)(x) (SciPy's), 0 for
    n < 0; the building blocks of the polynomials' derivatives."""
    xp = NUMPY.xp

    def kernel(x, n, alpha):
        dtype = _float_dtype(x)
        n = _np_degree(n)
        with xp.errstate(all="ignore"):
            out = getattr(_scipy_special(), scipy_name)(
                xp.where(n < 0, 0, n), float(alpha), xp.asarray(x, dtype=xp.float64))
        return _as_result(xp.where(n < 0, 0.0, out), dtype)

    kernel.__name__ = scipy_name
    return kernel


# Airy Ai: SciPy's airy is NaN for |x| > 2^20; there Ai (and Ai') underflow to 0 for x > 0
# (as torch's), and for x < 0 the first two terms of the asymptotic expansion (DLMF 9.7.9,
# 9.7.10; the next terms are below 1e-18 relative) stand in.
_AIRY_FAR = 2.0 ** 20
_AIRY_U1, _AIRY_V1 = 5 / 72, -7 / 72


def _airy_pair(x):
    xp = NUMPY.xp
    x = xp.asarray(x, dtype=xp.float64)
    with xp.errstate(all="ignore"):
        ai, aip, _, _ = _scipy_special().airy(x)
        ai, aip = xp.array(ai), xp.array(aip)
        far = xp.isfinite(x) & (xp.abs(x) > _AIRY_FAR)
        if far.any():
            xf = x[far]
            z = xp.abs(xf)
            zeta = 2.0 / 3.0 * z * xp.sqrt(z)
            ph = zeta - math.pi / 4
            c, s = xp.cos(ph), xp.sin(ph)
            q = z ** 0.25
            neg_ai = (c + s * _AIRY_U1 / zeta) / (_SQRT_PI * q)
            neg_aip = q / _SQRT_PI * (s - c * _AIRY_V1 / zeta)
            ai[far] = xp.where(xf > 0, 0.0, neg_ai)
            aip[far] = xp.where(xf > 0, -0.0, neg_aip)
    return ai, aip


def _airy_ai_kernel(x):
    return _as_result(_airy_pair(x)[0], _float_dtype(x))


def _airy_ai_prime_kernel(x):
    return _as_result(_airy_pair(x)[1], _float_dtype(x))


def _bessel_k_kernel(scipy_name):
    def kernel(x):
        with NUMPY.xp.errstate(all="ignore"):
            out = getattr(_scipy_special(), scipy_name)(NUMPY.xp.asarray(x, NUMPY.xp.float64))
        return _as_result(out, _float_dtype(x))

    kernel.__name__ = scipy_name
    return kernel


_K0, _K1, _K0E, _K1E = (_bessel_k_kernel(n) for n in ("k0", "k1", "k0e", "k1e"))
_AIRY_AI = _airy_ai_kernel
_AIRY_AI.__name__ = "airy_ai"
_AIRY_AI_PRIME = _airy_ai_prime_kernel
_AIRY_AI_PRIME.__name__ = "airy_ai_prime"


def _numpy_only(name, kernel, diff):
    declare_rule_name(name, kernel, diff, None)


_numpy_only("k0", _K0, lambda x: k0(x))
_numpy_only("k1", _K1, lambda x: k1(x))
_numpy_only("k0e", _K0E, lambda x: k0e(x))
_numpy_only("k1e", _K1E, lambda x: k1e(x))
_numpy_only("airy_ai", _AIRY_AI, lambda x: airy_ai(x))
_numpy_only("airy_ai_prime", _AIRY_AI_PRIME, lambda x: _airy_ai_prime(x))

_BESSEL_K = (f"{_DLMF} eqs. 10.29.2-10.29.3 (K_0' = -K_1, K_1' = -K_0 - K_1 / x); product "
             "rule on the scaled k0e = exp(x) K_0, k1e = exp(x) K_1")
K0 = elementwise("k0", _K0, lambda F, self: -F.k1(self), math="-k1(x)", source=_BESSEL_K)
K1 = elementwise("k1", _K1, lambda F, self, out: -F.k0(self) - out / self,
                 math="-k0(x) - k1(x) / x", source=_BESSEL_K)
K0E = elementwise("k0e", _K0E, lambda F, self, out: out - F.k1e(self),
                  math="k0e(x) - k1e(x)", source=_BESSEL_K)
K1E = elementwise("k1e", _K1E, lambda F, self, out: out * (1 - 1 / self) - F.k0e(self),
                  math="k1e(x) (1 - 1 / x) - k0e(x)", source=_BESSEL_K)
AIRY_AI = elementwise("airy_ai", _AIRY_AI, lambda F, self: F.airy_ai_prime(self),
                      math="airy_ai_prime(x) (Ai')",
                      source=f"{_DLMF} eq. 9.2.1 (Ai'' = x Ai); Ai' is SciPy's airy")
AIRY_AI_PRIME = elementwise("airy_ai_prime", _AIRY_AI_PRIME,
                            lambda F, self: self * F.airy_ai(self), math="x airy_ai(x)",
                            source=f"{_DLMF} eq. 9.2.1 (Airy's equation Ai''(x) = x Ai(x))")

k0 = _unary(K0, "Elementwise modified Bessel function of the second kind, order 0 (x > 0).")
k1 = _unary(K1, "Elementwise modified Bessel function of the second kind, order 1 (x > 0).")
k0e = _unary(K0E, "Elementwise exponentially scaled k0: exp(x) k0(x) (x > 0).")
k1e = _unary(K1E, "Elementwise exponentially scaled k1: exp(x) k1(x) (x > 0).")
airy_ai = _unary(AIRY_AI, "Elementwise Airy function Ai(x) (SciPy's airy; 0 for x > 2^20, "
                          "where it underflows, as torch's; NaN at +-inf, as torch's).")
_airy_ai_prime = _unary(AIRY_AI_PRIME, "Elementwise derivative Ai'(x) of the Airy function.")


# --- the polynomials: ops of (x, n), differentiable in x; n is an integer degree -------------


def _poly_op(name, kernel, deriv, math_text, source, attrs=()):
    """An op of ``self`` (x) and ``n`` (the degree, not differentiable: no gradient flows to
    it, as PyTorch's output records no graph at all)."""
    def rule(F, g, self, n, *a):
        return g * deriv(F, self, n, *a)

    params = ("self", "n") + tuple(attrs)
    rules = {"self": Rule(rule, params), "n": lambda F, g: None}
    jvps = {"self": Rule(rule, params), "n": lambda F, t: None}
    return defop(name, kernel, ("self", "n"), rules, jvp=jvps, attrs=attrs, promote=False,
                 math={"self": f"grad_x = grad * ({math_text})",
                       "n": "not differentiable (an integer degree): no gradient",
                       "out": f"dy = ({math_text}) dx"},
                 source=source)


_GEGENBAUER = f"{_DLMF} eq. 18.9.19 (d/dx C_n^(a) = 2a C_(n-1)^(a+1))"
_CHEB = (f"{_DLMF} eqs. 18.9.21 (T_n' = n U_(n-1)) and 18.7.4 (U_n = C_n^(1), so U_n' = "
         "2 C_(n-1)^(2), eq. 18.9.19); V_n = U_n - U_(n-1), W_n = U_n + U_(n-1) (Mason & "
         "Handscomb (2003), eq. 1.17)")


def _gegenbauer_deriv(F, self, n, alpha):
    return (2 * alpha) * F.gegenbauer(self, n - 1, alpha + 1)


def _genlaguerre_deriv(F, self, n, alpha):
    return -F.genlaguerre(self, n - 1, alpha + 1)


_GEGENBAUER_KERNEL = _alpha_kernel("eval_gegenbauer")
_GENLAGUERRE_KERNEL = _alpha_kernel("eval_genlaguerre")
GEGENBAUER = _poly_op("gegenbauer", _GEGENBAUER_KERNEL, _gegenbauer_deriv,
                      "2 alpha gegenbauer(x, n - 1, alpha + 1)", _GEGENBAUER, attrs=("alpha",))
GENLAGUERRE = _poly_op("genlaguerre", _GENLAGUERRE_KERNEL, _genlaguerre_deriv,
                       "-genlaguerre(x, n - 1, alpha + 1)",
                       f"{_DLMF} eq. 18.9.23 (d/dx L_n^(a) = -L_(n-1)^(a+1))", attrs=("alpha",))
declare_rule_name("gegenbauer", _GEGENBAUER_KERNEL, lambda x, n, a: gegenbauer(x, n, a), None)
declare_rule_name("genlaguerre", _GENLAGUERRE_KERNEL, lambda x, n, a: genlaguerre(x, n, a),
                  None)


def _u_prime(F, x, n):
    return 2 * F.gegenbauer(x, n - 1, 2.0)


def _cheb_deriv(kind, shifted):
    def deriv(F, self, n):
        x = 2 * self - 1 if shifted else self
        if kind == "t":
            d = n * F.gegenbauer(x, n - 1, 1.0)
        elif kind == "u":
            d = _u_prime(F, x, n)
        elif kind == "v":
            d = _u_prime(F, x, n) - _u_prime(F, x, n - 1)
        else:
            d = _u_prime(F, x, n) + _u_prime(F, x, n - 1)
        return 2 * d if shifted else d
    return deriv


_CHEB_MATH = {"t": "n U_(n-1)(x) = n gegenbauer(x, n - 1, 1)",
              "u": "2 gegenbauer(x, n - 1, 2)",
              "v": "2 gegenbauer(x, n - 1, 2) - 2 gegenbauer(x, n - 2, 2)",
              "w": "2 gegenbauer(x, n - 1, 2) + 2 gegenbauer(x, n - 2, 2)"}
CHEBYSHEV = {}
for _shifted in (False, True):
    for _kind in "tuvw":
        _n = ("shifted_" if _shifted else "") + f"chebyshev_polynomial_{_kind}"
        _text = _CHEB_MATH[_kind]
        if _shifted:
            _text = "2 (" + _text.replace("(x", "(2x - 1").replace("x,", "2x - 1,") + ")"
        CHEBYSHEV[_n] = _poly_op(_n, _chebyshev_kernel(_kind, _shifted),
                                 _cheb_deriv(_kind, _shifted), _text,
                                 _CHEB + ("; chain rule on x -> 2x - 1" if _shifted else ""))
HERMITE_H = _poly_op("hermite_polynomial_h", _hermite_kernel("eval_hermite"),
                     lambda F, self, n: (2 * n) * F.hermite_polynomial_h(self, n - 1),
                     "2 n hermite_polynomial_h(x, n - 1)",
                     f"{_DLMF} eq. 18.9.25 (H_n' = 2n H_(n-1))")
HERMITE_HE = _poly_op("hermite_polynomial_he", _hermite_kernel("eval_hermitenorm"),
                      lambda F, self, n: n * F.hermite_polynomial_he(self, n - 1),
                      "n hermite_polynomial_he(x, n - 1)",
                      f"{_DLMF} eq. 18.9.26 (He_n' = n He_(n-1))")
LAGUERRE = _poly_op("laguerre_polynomial_l", _laguerre_kernel,
                    lambda F, self, n: -F.genlaguerre(self, n - 1, 1.0),
                    "-genlaguerre(x, n - 1, 1)  (-L_(n-1)^(1)(x))",
                    f"{_DLMF} eq. 18.9.23 (d/dx L_n^(a) = -L_(n-1)^(a+1))")
LEGENDRE = _poly_op("legendre_polynomial_p", _legendre_kernel,
                    lambda F, self, n: F.gegenbauer(self, n - 1, 1.5),
                    "gegenbauer(x, n - 1, 3/2)  (C_(n-1)^(3/2)(x))",
                    f"{_DLMF} eqs. 18.7.9 (P_n = C_n^(1/2)) and 18.9.19")


def _poly_args(name, input, n):
    """``(x, n)`` for a polynomial op: x a tensor of PyTorch's result dtype of (input, n)
    (an integer or bool result is the default float dtype), n the int64 degree (truncated
    toward zero; NaN and beyond int64: -1), detached: n is not differentiable."""
    for v in (input, n):
        if isinstance(v, complex) or (isinstance(v, Tensor) and dtype_kind(v.dtype) == "c"):
            raise TypeError(f"{name}: complex inputs are not supported (as in PyTorch)")
    arrays = [v._data for v in (input, n) if isinstance(v, Tensor)]
    want = _result_dtype(arrays) if arrays else None
    if want is None or dtype_kind(want) in "biu":
        want = NUMPY.xp.dtype(DEFAULT_FLOAT[0])
    x = input if isinstance(input, Tensor) else as_tensor(input, dtype=want)
    if x.dtype != want:
        x = x.to(want)
    if isinstance(n, Tensor):
        n = n.detach()
        if dtype_kind(n.dtype) == "f":
            n = where(n.abs() < 2.0 ** 63, n, -1.0)  # NaN and beyond int64: -1
        if n.dtype != NUMPY.xp.int64:
            n = n.to(NUMPY.xp.int64)
    elif isinstance(n, numbers.Real):
        n = int(_np_degree(n))
    else:
        raise TypeError(f"{name}: n must be a Tensor or a number, got {type(n).__name__}")
    return x, n


_POLY_NOTE = """

    ``n`` (a number, or an integer or float tensor broadcast with ``input``) is truncated
    toward zero, as PyTorch's ``int64_t(n)``; n < 0 (and a NaN or infinite n) gives 0.
    Differentiable in ``input`` to every order (PyTorch's records no gradient at all);
    ``n`` gets none. Values are SciPy's, computed in float64 and rounded to the result
    dtype (PyTorch's recurrences run in float32 for float32 inputs), with PyTorch's
    definitions where they differ from SciPy's (the truncated and negative n above{extra}).
    Where a value overflows it is +-inf or NaN as SciPy's recurrence gives it (PyTorch's
    gives NaN from inf - inf); at a NaN x the value is NaN (PyTorch's U, W and their
    shifted forms give 0 or an uninitialized value there)."""


def _poly_function(op, summary, extra=""):
    def fn(input, n):
        x, n = _poly_args(op.name, input, n)
        return apply(op, (x, n))

    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = summary + _POLY_NOTE.format(extra=extra)
    return name_errors(documented(op)(fn))


_TRIG = {"t": "; for |x| < 1 and n > 6 PyTorch's cos(n acos x)",
         "u": "; for |x| < 1 and n > 8 PyTorch's sin((n+1) theta) / sin(theta), "
              "theta = acos x",
         "v": "; for |x| < 1 and n > 8 PyTorch's cos((n+1/2) theta) / cos(theta/2), "
              "theta = acos x",
         "w": "; for |x| < 1 and n > 8 PyTorch's sin((n+1/2) theta) / sin(theta/2), "
              "theta = acos x"}
_KIND = {"t": "first", "u": "second", "v": "third", "w": "fourth"}

chebyshev_polynomial_t, chebyshev_polynomial_u, chebyshev_polynomial_v, \
    chebyshev_polynomial_w, shifted_chebyshev_polynomial_t, shifted_chebyshev_polynomial_u, \
    shifted_chebyshev_polynomial_v, shifted_chebyshev_polynomial_w = (
        _poly_function(
            CHEBYSHEV[("shifted_" if sh else "") + f"chebyshev_polynomial_{k}"],
            f"The {'shifted ' if sh else ''}Chebyshev polynomial of the {_KIND[k]} kind "
            f"{k.upper()}{'*' if sh else ''}_n(input)"
            f"{' = ' + k.upper() + '_n(2 input - 1)' if sh else ''} (torch.special's).",
            _TRIG[k] + (" (of 2x - 1)" if sh else ""))
        for sh in (False, True) for k in "tuvw")
hermite_polynomial_h = _poly_function(
    HERMITE_H, "The physicists' Hermite polynomial H_n(input) (torch.special's).",
    "; NaN for n above PyTorch's limit, 128 in float32 and 512 in float64")
hermite_polynomial_he = _poly_function(
    HERMITE_HE, "The probabilists' Hermite polynomial He_n(input) (torch.special's).",
    "; NaN for n above PyTorch's limit, 128 in float32 and 512 in float64")
laguerre_polynomial_l = _poly_function(
    LAGUERRE, "The Laguerre polynomial L_n(input) (torch.special's).")
legendre_polynomial_p = _poly_function(
    LEGENDRE, "The Legendre polynomial P_n(input) (torch.special's).")
declare_rule_name("hermite_polynomial_h", HERMITE_H.forward,
                  lambda x, n: hermite_polynomial_h(x, n), None)
declare_rule_name("hermite_polynomial_he", HERMITE_HE.forward,
                  lambda x, n: hermite_polynomial_he(x, n), None)


@name_errors
@documented(GEGENBAUER)
def gegenbauer(input, n, alpha):
    """The Gegenbauer polynomial C_n^(alpha)(input) (SciPy's eval_gegenbauer; 0 for n < 0),
    differentiable in ``input``; used by the Chebyshev and Legendre derivatives."""
    x, n = _poly_args("gegenbauer", input, n)
    return apply(GEGENBAUER, (x, n), (float(alpha),))


@name_errors
@documented(GENLAGUERRE)
def genlaguerre(input, n, alpha):
    """The generalized Laguerre polynomial L_n^(alpha)(input) (SciPy's eval_genlaguerre; 0
    for n < 0), differentiable in ``input``; used by the Laguerre derivative."""
    x, n = _poly_args("genlaguerre", input, n)
    return apply(GENLAGUERRE, (x, n), (float(alpha),))


del _shifted, _kind, _n, _text
