"""``chainrule.special``: PyTorch's ``torch.special`` names (and SciPy's spellings
``gammaln``, ``psi``, ``betaln``) over the derivative table's primitives.

Primitives with their own derivative rules: erf, erfc, erfcx, erfinv, lgamma (gammaln),
digamma (psi), polygamma, zeta (differentiable in ``q`` only, as in PyTorch), ndtri,
log_ndtr, i0, i0e, i1, i1e, entr, xlogy, xlog1py, sinc, expit (sigmoid), exp2, expm1, log1p,
round; SciPy's gamma, rgamma, gammasgn (zero gradient), beta, the Bessel functions j0, j1,
jn, y0, y1, yn, iv, ive (differentiable in x, not in the order), and gammainc, gammaincc,
betainc (differentiable in x only, as PyTorch's gammainc); torch.special's orthogonal
polynomials (chebyshev_polynomial_t/u/v/w and their shifted forms, hermite_polynomial_h/he,
laguerre_polynomial_l, legendre_polynomial_p: differentiable in x to every order, not in
the degree n), airy_ai and the modified Bessel functions k0, k1, k0e, k1e
(modified_bessel_k0/k1, scaled_modified_bessel_k0/k1), whose PyTorch versions record no
gradient. Compositions of those: ndtr,
logit, multigammaln, betaln, erfcinv, and logsumexp, softmax, log_softmax (the reductions
of ``chainrule``).
"""

from __future__ import annotations

import math as _math

from . import ops as _ops
from ._creation import as_tensor as _as_tensor
from ._tensor import Tensor as _Tensor
from .ops.elementwise import erf, expm1, log1p
from .ops.elementwise import sigmoid as expit
from .ops.elementwise_more import exp2, round, sinc, xlogy  # noqa: A004
from .ops.special_fns import (
    airy_ai,
    beta,
    betainc,
    betaln,
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    digamma,
    entr,
    erfc,
    erfcinv,
    erfcx,
    erfinv,
    gamma,
    gammainc,
    gammaincc,
    gammasgn,
    hermite_polynomial_h,
    hermite_polynomial_he,
    i0,
    i0e,
    i1,
    i1e,
    iv,
    ive,
    j0,
    j1,
    jn,
    k0,
    k0e,
    k1,
    k1e,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    log_ndtr,
    logit,
    ndtr,
    ndtri,
    polygamma,
    rgamma,
    shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
    xlog1py,
    y0,
    y1,
    yn,
    zeta,
)
from .ops.special_fns import lgamma as gammaln
from .ops.special_fns import mvlgamma as multigammaln

__all__ = [
    "expit", "logit", "erf", "erfc", "erfcx", "erfinv", "gammaln", "digamma", "psi",
    "polygamma", "multigammaln", "log_ndtr", "ndtr", "ndtri", "i0", "i0e", "i1", "i1e",
    "xlogy", "xlog1py", "entr", "sinc", "logsumexp", "softmax", "log_softmax", "zeta",
    "betaln", "exp2", "expm1", "log1p", "round",
    # SciPy's names (issue 12): gamma family, Bessel functions, incomplete gamma and beta
    "gamma", "rgamma", "gammasgn", "beta", "erfcinv", "j0", "j1", "jn", "y0", "y1", "yn",
    "iv", "ive", "gammainc", "gammaincc", "betainc",
    # PyTorch's names of the Bessel functions above
    "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
    "modified_bessel_i1", "spherical_bessel_j0",
    # torch.special's orthogonal polynomials, Airy Ai and modified Bessel K (SciPy's k0, k1,
    # k0e, k1e too)
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p", "airy_ai", "k0", "k1", "k0e", "k1e",
    "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
]

psi = digamma
logsumexp = _ops.logsumexp  # chainrule.logsumexp (its errors name the op)


def softmax(input, dim, *, dtype=None):
    """``softmax(input, dim)``, after converting ``input`` to ``dtype`` when given."""
    return _ops.softmax(input if dtype is None else input.to(dtype), dim)


def log_softmax(input, dim, *, dtype=None):
    """``log_softmax(input, dim)``, after converting ``input`` to ``dtype`` when given."""
    return _ops.log_softmax(input if dtype is None else input.to(dtype), dim)


bessel_j0, bessel_j1, bessel_y0, bessel_y1 = j0, j1, y0, y1  # torch.special's names
modified_bessel_i0, modified_bessel_i1 = i0, i1
modified_bessel_k0, modified_bessel_k1 = k0, k1
scaled_modified_bessel_k0, scaled_modified_bessel_k1 = k0e, k1e


# sin(x) / x = sum_k (-1)^k x^(2k) / (2k+1)!, x^0 .. x^16: below 1e-22 for |x| < 0.5
_SIN_X_OVER_X = [(-1) ** k / _math.factorial(2 * k + 1) for k in range(9)]


def spherical_bessel_j0(input):
    """``sin(x) / x`` (1 at 0, 0 at +-inf), as ``torch.special.spherical_bessel_j0``: its
    power series for ``|x| < 0.5`` (so its derivatives of every order are right at and near
    0, where ``cos(x) / x - sin(x) / x^2`` cancels), ``sin(x) / x`` elsewhere (not
    ``sinc(x / pi)``, whose rounded ``x / pi`` loses the argument: 23% off at float32's
    largest value). Differentiable everywhere (PyTorch's is not)."""
    x = input if isinstance(input, _Tensor) else _as_tensor(input)
    if not x.is_floating_point():  # an integer tensor gives the default float dtype
        x = x * 1.0
    small = _ops.abs(x) < 0.5
    inf = _ops.isinf(x)
    safe = _ops.where(small | inf, 1.0, x)  # each branch sees a harmless value where unused
    x2 = _ops.where(small, x, 0.0) ** 2
    series = _SIN_X_OVER_X[-1]
    for c in reversed(_SIN_X_OVER_X[:-1]):
        series = c + x2 * series
    out = _ops.where(small, series, _ops.sin(safe) / safe)
    return _ops.where(inf, 0.0, out)
