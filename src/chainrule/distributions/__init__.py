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

import sys as _sys

from . import (
    constraint_registry,
    constraints,
    exp_family,
    kl,
    kl_added,  # noqa: F401  (registers the KL pairs of the families added last)
    kl_cross,  # noqa: F401  (registers KL pairs across families)
    kl_more,  # noqa: F401  (registers more KL pairs)
    transforms,
    transforms_more,
    utils,
)
from .compound import MixtureSameFamily, TransformedDistribution
from .constraint_registry import biject_to, transform_to
from .continuous import Beta, Dirichlet, Exponential, Gamma, Laplace, LogNormal, Normal, Uniform
from .counts import Multinomial, NegativeBinomial
from .discrete import (
    Bernoulli,
    Binomial,
    Categorical,
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
    Poisson,
)
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .kl import kl_divergence, register_kl
from .matrix import LKJCholesky, LowRankMultivariateNormal, Wishart
from .more import Cauchy, Geometric, Gumbel, HalfCauchy, HalfNormal, StudentT
from .multivariate import Independent, MultivariateNormal
from .relaxed import LogisticNormal, RelaxedBernoulli, RelaxedOneHotCategorical
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
    identity_transform,
)
from .transforms_more import (
    CatTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    ReshapeTransform,
    SoftmaxTransform,
    StackTransform,
    StickBreakingTransform,
)
from .univariate import (
    Chi2,
    ContinuousBernoulli,
    FisherSnedecor,
    GeneralizedPareto,
    InverseGamma,
    Kumaraswamy,
    Pareto,
    VonMises,
    Weibull,
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
    "MixtureSameFamily", "ExponentialFamily", "Multinomial", "NegativeBinomial", "Chi2",
    "Pareto", "Weibull", "InverseGamma", "Kumaraswamy", "VonMises", "ContinuousBernoulli",
    "FisherSnedecor", "GeneralizedPareto", "RelaxedBernoulli", "RelaxedOneHotCategorical",
    "LogisticNormal", "OneHotCategoricalStraightThrough", "LowRankMultivariateNormal",
    "Wishart", "LKJCholesky", "CatTransform", "StackTransform", "ReshapeTransform",
    "SoftmaxTransform", "StickBreakingTransform", "LowerCholeskyTransform",
    "PositiveDefiniteTransform", "CorrCholeskyTransform", "CumulativeDistributionTransform",
    "identity_transform", "exp_family", "kl", "utils",
]

# torch.distributions is a package of one module per family (``from
# torch.distributions.normal import Normal``); here families share modules, so each of
# PyTorch's module names is an alias (attribute and sys.modules entry, as
# chainrule.utils.data's submodules) of the module its classes live in
_ALIASES = {
    "bernoulli": "discrete", "beta": "continuous", "binomial": "discrete",
    "categorical": "discrete", "cauchy": "more", "chi2": "univariate",
    "continuous_bernoulli": "univariate", "dirichlet": "continuous",
    "exponential": "continuous", "fishersnedecor": "univariate", "gamma": "continuous",
    "generalized_pareto": "univariate", "geometric": "more", "gumbel": "more",
    "half_cauchy": "more", "half_normal": "more", "independent": "multivariate",
    "inverse_gamma": "univariate", "kumaraswamy": "univariate", "laplace": "continuous",
    "lkj_cholesky": "matrix", "log_normal": "continuous", "logistic_normal": "relaxed",
    "lowrank_multivariate_normal": "matrix", "mixture_same_family": "compound",
    "multinomial": "counts", "multivariate_normal": "multivariate",
    "negative_binomial": "counts", "normal": "continuous",
    "one_hot_categorical": "discrete", "pareto": "univariate", "poisson": "discrete",
    "relaxed_bernoulli": "relaxed", "relaxed_categorical": "relaxed", "studentT": "more",
    "transformed_distribution": "compound", "uniform": "continuous",
    "von_mises": "univariate", "weibull": "univariate", "wishart": "matrix",
}
for _alias, _target in _ALIASES.items():
    _module = _sys.modules[f"{__name__}.{_target}"]
    globals()[_alias] = _module
    _sys.modules.setdefault(f"{__name__}.{_alias}", _module)
del _alias, _target, _module

# torch.distributions.transforms has the structured transforms too: they live in
# transforms_more (built on transforms.Transform), and are put in its namespace here
for _name in transforms_more.__all__:
    setattr(transforms, _name, getattr(transforms_more, _name))
transforms.__all__ = [*transforms.__all__, *transforms_more.__all__]
del _name
