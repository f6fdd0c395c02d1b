"""``chainrule.distributions``: a subset of ``torch.distributions`` built from chainrule ops.

Every density, moment, entropy, KL divergence and reparameterised draw is a composition of
public differentiable chainrule operations (``log``, ``lgamma``, ``digamma``, ``xlogy``,
``softplus``, ``logsumexp``, ``take_along_dim``, ``linalg.cholesky``,
``linalg.solve_triangular``, ...), so there are no derivative rules here: gradients with
respect to the parameters are those of the ops. Draws come from chainrule's default generator
(``chainrule.manual_seed`` makes them reproducible); they are not PyTorch's draws.

>>> import chainrule as cr
>>> from chainrule.distributions import Normal, kl_divergence
>>> p = Normal(cr.tensor(0.0), cr.tensor(1.0))
>>> float(p.log_prob(cr.tensor(0.0)))  # -log(sqrt(2 pi))
-0.9189385332046727
"""

from . import (
    constraint_registry,
    constraints,
    kl_cross,  # noqa: F401  (registers KL pairs across families)
    kl_more,  # noqa: F401  (registers more KL pairs)
    transforms,
)
from .compound import MixtureSameFamily, TransformedDistribution
from .constraint_registry import biject_to, transform_to
from .continuous import Beta, Dirichlet, Exponential, Gamma, Laplace, LogNormal, Normal, Uniform
from .discrete import Bernoulli, Binomial, Categorical, OneHotCategorical, Poisson
from .distribution import Distribution
from .kl import kl_divergence, register_kl
from .more import Cauchy, Geometric, Gumbel, HalfCauchy, HalfNormal, StudentT
from .multivariate import Independent, MultivariateNormal
from .transforms import (
    AbsTransform,
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    IndependentTransform,
    PowerTransform,
    SigmoidTransform,
    SoftplusTransform,
    TanhTransform,
    Transform,
)

__all__ = [
    "Distribution", "Normal", "Uniform", "Bernoulli", "Categorical", "OneHotCategorical",
    "Beta", "Gamma", "Exponential", "Laplace", "LogNormal", "Poisson", "Binomial",
    "MultivariateNormal", "Independent", "Dirichlet", "kl_divergence", "register_kl",
    "StudentT", "Cauchy", "HalfNormal", "HalfCauchy", "Gumbel", "Geometric",
    "constraints", "constraint_registry", "transforms", "biject_to", "transform_to",
    "Transform", "ExpTransform", "AffineTransform",
    "SigmoidTransform", "TanhTransform", "SoftplusTransform", "PowerTransform",
    "AbsTransform", "ComposeTransform", "IndependentTransform", "TransformedDistribution",
    "MixtureSameFamily",
]
