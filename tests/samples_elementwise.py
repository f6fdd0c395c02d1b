"""Samples for the elementwise and special-function primitives of
``chainrule.ops.elementwise_more`` and ``chainrule.ops.special_fns`` (see tests/samples.py).

Points are drawn away from kinks, integer quotients (the rounding ops and fmod/remainder),
ties (fmax/fmin) and the edges of each domain, so central differences are meaningful.
A few compositions (addcmul, lerp, logit, ...) have samples too, under an op they record.
"""

from __future__ import annotations

import numpy as np

import chainrule as cr
from samples import Sample

RNG = np.random.default_rng(2468)
S = Sample
sp = cr.special


def randn(*shape):
    return RNG.standard_normal(shape)


def uniform(lo, hi, *shape):
    return RNG.uniform(lo, hi, shape)


def away_from_zero(*shape):
    return RNG.uniform(0.3, 1.5, shape) * RNG.choice([-1.0, 1.0], shape)


def between_integers(*shape):
    """Values whose fractional part is in [0.15, 0.35] or [0.65, 0.85] (never near an
    integer nor a half), of both signs."""
    whole = RNG.integers(-3, 4, shape).astype(float)
    part = RNG.uniform(0.15, 0.35, shape) + RNG.choice([0.0, 0.5], shape)
    return whole + part


def quotient_pair(*shape):
    """(a, b) with a / b between integers, b of both signs and away from zero."""
    b = away_from_zero(*shape) * 1.7
    return between_integers(*shape) * b, b


FMOD_A, FMOD_B = quotient_pair(3, 4)
MOD_A = between_integers(3, 4) * 0.7  # for a % 0.7
NEAR_TIES = np.array([-1.3, -0.4, 0.2, 0.9, 1.7, 2.6])



def _nan_to_num_of_log(a):
    with np.errstate(invalid="ignore"):  # log of the negative entries: NaN, on purpose
        return cr.nan_to_num(a.log(), nan=0.5, neginf=-3.0)


SAMPLES = [
    # inverse circular and hyperbolic functions
    S("acos", lambda a: a.acos(), [uniform(-0.9, 0.9, 3, 4)]),
    S("asin", lambda a: cr.asin(a), [uniform(-0.9, 0.9, 3, 4)]),
    S("atan", lambda a: cr.arctan(a), [randn(3, 4)]),
    S("sinh", lambda a: a.sinh(), [randn(3, 4)]),
    S("cosh", lambda a: cr.cosh(a), [randn(3, 4)]),
    S("asinh", lambda a: a.asinh(), [randn(3, 4)]),
    S("acosh", lambda a: a.acosh(), [uniform(1.2, 3.0, 3, 4)]),
    S("atanh", lambda a: a.atanh(), [uniform(-0.9, 0.9, 3, 4)]),
    S("atan2", lambda a, b: cr.atan2(a, b), [randn(3, 4), away_from_zero(4)]),
    S("hypot", lambda a, b: cr.hypot(a, b), [away_from_zero(3, 4), away_from_zero(3, 1)]),
    # logarithms and powers
    S("log2", lambda a: a.log2(), [uniform(0.3, 3.0, 3, 4)]),
    S("log10", lambda a: a.log10(), [uniform(0.3, 3.0, 3, 4)]),
    S("exp2", lambda a: a.exp2(), [randn(3, 4)]),
    S("rsqrt", lambda a: a.rsqrt(), [uniform(0.3, 3.0, 3, 4)]),
    S("logaddexp", lambda a, b: cr.logaddexp(a, b), [randn(3, 4), randn(4)]),
    S("logaddexp2", lambda a, b: cr.logaddexp2(a, b), [randn(3, 4), randn(3, 1)]),
    S("xlogy", lambda a, b: cr.xlogy(a, b), [randn(3, 4), uniform(0.3, 3.0, 4)]),
    S("xlog1py", lambda a, b: sp.xlog1py(a, b), [randn(3, 4), uniform(-0.7, 2.0, 3, 4)]),
    S("entr", lambda a: sp.entr(a), [uniform(0.2, 3.0, 3, 4)]),
    S("sinc", lambda a: a.sinc(), [away_from_zero(3, 4) * 1.3]),
    # rounding (zero gradient: each sample adds a term through which the gradient flows)
    S("floor", lambda a: cr.floor(a) * a, [between_integers(3, 4)]),
    S("ceil", lambda a: a.ceil() * a, [between_integers(3, 4)]),
    S("trunc", lambda a: cr.fix(a) * a, [between_integers(3, 4)]),
    S("round", lambda a: cr.round(a) * a, [between_integers(3, 4)]),
    S("round", lambda a: a.round(decimals=1) * a, [between_integers(3, 4) / 10], "decimals"),
    S("trunc", lambda a: cr.frac(a), [between_integers(3, 4)], "frac"),
    S("floor_divide", lambda a, b: cr.floor_divide(a, b) * a + b, [FMOD_A, FMOD_B]),
    S("trunc_divide", lambda a, b: cr.div(a, b, rounding_mode="trunc") * a + b,
      [FMOD_A, FMOD_B]),
    S("fmod", lambda a, b: cr.fmod(a, b), [FMOD_A, FMOD_B]),
    S("remainder", lambda a, b: cr.remainder(a, b), [FMOD_A, FMOD_B]),
    S("remainder", lambda a: a % 0.7, [MOD_A], "operator"),
    # sign and selection
    S("copysign", lambda a, b: cr.copysign(a, b), [away_from_zero(3, 4), away_from_zero(4)]),
    S("fmax", lambda a, b: cr.fmax(a, b), [NEAR_TIES, NEAR_TIES[::-1].copy()]),
    S("fmin", lambda a, b: cr.fmin(a, b), [NEAR_TIES, NEAR_TIES[::-1].copy()]),
    S("nan_to_num", lambda a: _nan_to_num_of_log(a),
      [np.array([[-1.0, 0.5, 2.0], [1.5, -0.3, 0.7]])]),
    # compositions, under an op they record
    S("mul", lambda a, b, c: cr.addcmul(a, b, c, value=0.5), [randn(3, 4), randn(4), randn(3, 1)],
      "addcmul"),
    S("div", lambda a, b, c: a.addcdiv(b, c, value=-2.0), [randn(3, 4), randn(4),
                                                           uniform(0.5, 2.0, 3, 1)], "addcdiv"),
    S("mul", lambda a, b, w: cr.lerp(a, b, w), [randn(3, 4), randn(4), uniform(0, 1, 3, 4)],
      "lerp"),
    S("mul", lambda a, b: a.lerp(b, 0.3), [randn(3, 4), randn(3, 4)], "lerp_number"),
    S("clamp", lambda a: a.clamp_min(0.1).clamp_max(0.8),
      [np.array([-1.3, -0.2, 0.3, 0.5, 0.9, 2.0])], "min_max"),
    # gamma family
    S("lgamma", lambda a: a.lgamma(), [uniform(0.3, 4.0, 3, 4)]),
    S("lgamma", lambda a: a.lgamma(), [np.array([-2.5, -1.3, -0.6])], "negative"),
    S("digamma", lambda a: a.digamma(), [uniform(0.3, 4.0, 3, 4)]),
    S("polygamma", lambda a: cr.polygamma(2, a), [uniform(0.5, 4.0, 3, 4)]),
    S("polygamma", lambda a: a.polygamma(1), [uniform(0.5, 4.0, 3, 4)], "method"),
    S("lgamma", lambda a: sp.multigammaln(a, 3), [uniform(1.5, 4.0, 3, 4)], "multigammaln"),
    S("zeta", lambda q: sp.zeta(3.0, q), [uniform(0.5, 3.0, 3, 4)]),
    # error function family
    S("erfc", lambda a: a.erfc(), [randn(3, 4)]),
    S("erfinv", lambda a: a.erfinv(), [uniform(-0.9, 0.9, 3, 4)]),
    S("erfcx", lambda a: sp.erfcx(a), [randn(3, 4)]),
    S("ndtri", lambda a: sp.ndtri(a), [uniform(0.05, 0.95, 3, 4)]),
    S("log_ndtr", lambda a: sp.log_ndtr(a),
      [np.array([[-9.0, -3.5, -1.2], [0.0, 0.8, 4.0]])]),
    S("erfc", lambda a: sp.ndtr(a), [randn(3, 4)], "ndtr"),
    S("log", lambda a: sp.logit(a, eps=0.2), [np.array([0.1, 0.3, 0.45, 0.7, 0.9])], "logit"),
    # modified Bessel functions
    S("i0", lambda a: a.i0(), [randn(3, 4)]),
    S("i0e", lambda a: sp.i0e(a), [away_from_zero(3, 4)]),
    S("i1", lambda a: sp.i1(a), [away_from_zero(3, 4)]),
    S("i1e", lambda a: sp.i1e(a), [away_from_zero(3, 4)]),
]

# SciPy's special functions (issue 12): gamma family, Bessel functions, incomplete gamma
# and beta, each at points away from poles, zeros of the argument and domain edges
SAMPLES += [
    S("gamma", lambda a: sp.gamma(a), [uniform(0.3, 4.0, 3, 4)]),
    S("gamma", lambda a: sp.gamma(a), [np.array([-2.5, -1.3, -0.6])], "negative"),
    S("rgamma", lambda a: sp.rgamma(a), [uniform(0.3, 4.0, 3, 4)]),
    S("gammasgn", lambda a: sp.gammasgn(a) * a, [np.array([-2.5, -1.3, -0.6, 0.7, 2.2])]),
    S("beta", lambda a, b: sp.beta(a, b), [uniform(0.5, 3.0, 3, 4), uniform(0.5, 3.0, 4)]),
    S("ndtri", lambda a: sp.erfcinv(a), [uniform(0.1, 1.9, 3, 4)], "erfcinv"),
    S("j0", lambda a: sp.j0(a), [randn(3, 4) * 3]),
    S("j1", lambda a: sp.j1(a), [away_from_zero(3, 4) * 3]),
    S("jn", lambda a: sp.jn(2, a), [randn(3, 4) * 3]),
    S("jn", lambda a: sp.jn(0, a), [randn(3, 4) * 3], "order0"),
    S("y0", lambda a: sp.y0(a), [uniform(0.5, 6.0, 3, 4)]),
    S("y1", lambda a: sp.y1(a), [uniform(0.5, 6.0, 3, 4)]),
    S("yn", lambda a: sp.yn(3, a), [uniform(1.0, 6.0, 3, 4)]),
    S("iv", lambda a: sp.iv(1.5, a), [uniform(0.3, 3.0, 3, 4)]),
    S("iv", lambda a: sp.iv(2, a), [randn(3, 4)], "integer_order"),
    S("ive", lambda a: sp.ive(0.5, a), [uniform(0.3, 3.0, 3, 4)]),
    S("ive", lambda a: sp.ive(1, a), [away_from_zero(3, 4)], "integer_order"),
    S("gammainc", lambda x: sp.gammainc(1.7, x), [uniform(0.3, 4.0, 3, 4)]),
    S("gammaincc", lambda x: sp.gammaincc(0.8, x), [uniform(0.3, 4.0, 3, 4)]),
    S("betainc", lambda x: sp.betainc(2.5, 1.5, x), [uniform(0.1, 0.9, 3, 4)]),
]
