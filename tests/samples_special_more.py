"""Samples for torch.special's orthogonal polynomials, Airy Ai and the modified Bessel
functions of the second kind (``chainrule.ops.special_fns``; see tests/samples.py).

The degree n is a Python int captured by the sample (it is not differentiable); x is drawn
inside (-1, 1) and outside it, away from the domain edges (x > 0 for the K functions).
"""

from __future__ import annotations

import numpy as np

import chainrule as cr
from chainrule.ops import special_fns as sf
from samples import Sample

RNG = np.random.default_rng(9753)
S = Sample
sp = cr.special


def uniform(lo, hi, *shape):
    return RNG.uniform(lo, hi, shape)


def _poly(name, n, lo, hi, label=""):
    fn = getattr(sp, name)
    return S(name, lambda x: fn(x, n), [uniform(lo, hi, 3, 4)], label)


SAMPLES = []
for _kind in "tuvw":
    SAMPLES += [
        _poly(f"chebyshev_polynomial_{_kind}", 4, -0.95, 0.95),
        _poly(f"chebyshev_polynomial_{_kind}", 11, -0.95, 0.95, "trig"),  # torch's trig form
        _poly(f"chebyshev_polynomial_{_kind}", 3, 1.1, 2.0, "outside"),
        _poly(f"shifted_chebyshev_polynomial_{_kind}", 5, 0.05, 0.95),
        _poly(f"shifted_chebyshev_polynomial_{_kind}", 2, -1.0, -0.1, "outside"),
    ]
SAMPLES += [
    _poly("hermite_polynomial_h", 5, -2.0, 2.0),
    _poly("hermite_polynomial_h", 1, -2.0, 2.0, "degree1"),
    _poly("hermite_polynomial_he", 6, -2.0, 2.0),
    _poly("laguerre_polynomial_l", 4, -1.0, 5.0),
    _poly("legendre_polynomial_p", 5, -0.95, 0.95),
    _poly("legendre_polynomial_p", 3, 1.1, 2.0, "outside"),
    S("gegenbauer", lambda x: sf.gegenbauer(x, 4, 1.5), [uniform(-0.95, 0.95, 3, 4)]),
    S("genlaguerre", lambda x: sf.genlaguerre(x, 3, 2.0), [uniform(-1.0, 4.0, 3, 4)]),
    S("airy_ai", lambda x: sp.airy_ai(x), [uniform(-4.0, 3.0, 3, 4)]),
    S("airy_ai_prime", lambda x: sf._airy_ai_prime(x), [uniform(-4.0, 3.0, 3, 4)]),
    S("k0", lambda x: sp.modified_bessel_k0(x), [uniform(0.3, 4.0, 3, 4)]),
    S("k1", lambda x: sp.modified_bessel_k1(x), [uniform(0.3, 4.0, 3, 4)]),
    S("k0e", lambda x: sp.scaled_modified_bessel_k0(x), [uniform(0.3, 4.0, 3, 4)]),
    S("k1e", lambda x: sp.scaled_modified_bessel_k1(x), [uniform(0.3, 4.0, 3, 4)]),
]
