"""Distributions built from others: TransformedDistribution and MixtureSameFamily, as
``torch.distributions`` (transformed_distribution.py, mixture_same_family.py)."""

from __future__ import annotations

from .. import ops as _ops
from .._state import no_grad
from .._tensor import Size
from . import constraints
from .discrete import Categorical
from .distribution import Distribution, as_shape, sum_rightmost
from .multivariate import Independent
from .transforms import ComposeTransform, Transform

__all__ = ["TransformedDistribution", "MixtureSameFamily"]


class TransformedDistribution(Distribution):
    """The distribution of ``y = t_n(... t_1(x))`` for ``x ~ base_distribution``, as
    ``torch.distributions.TransformedDistribution``.

    ``transforms`` is a Transform or a list of them (see ``distributions.transforms``).
    ``rsample`` pushes a base draw through the transforms; ``log_prob(y)`` pulls ``y`` back
    through the inverses and subtracts each ``log |det J|`` (change of variables), summed over
    the event dims. When a transform's event dim exceeds the base's event dims, the base is
    wrapped in :class:`Independent`. ``cdf``/``icdf`` compose the base's with monotone
    transforms (elementwise ``sign``, so Tensor-valued signs work). Shapes: ``batch_shape +
    event_shape`` is the base's shape broadcast with the transforms' parameters
    (``forward_shape``; the base is expanded to match), and the support is the last
    transform's codomain over the event dims, checked by ``log_prob`` when validating.

    Raises ValueError when ``transforms`` is neither a Transform nor a list of Transforms, or
    the base has fewer dims than a transform's event dim.
    """

    arg_constraints: dict = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        domain_dim = transform.domain.event_dim
        if len(shape) < domain_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least "
                             f"{domain_dim}, but got {Size(shape)}.")
        # transforms with parameters of a larger shape broadcast the base up to it
        forward_shape = tuple(transform.forward_shape(shape))
        expanded = tuple(transform.inverse_shape(forward_shape))
        if expanded != shape:
            base_distribution = base_distribution.expand(
                expanded[:len(expanded) - base_event_dim])
        if domain_dim > base_event_dim:
            base_distribution = Independent(base_distribution, domain_dim - base_event_dim)
        self.base_dist = base_distribution
        change = transform.codomain.event_dim - domain_dim
        event_dim = max(transform.codomain.event_dim, base_event_dim + change)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:],
                         validate_args=validate_args)

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def support(self):
        """The last transform's codomain, reinterpreted over the event dims it does not cover
        (the base's support when there are no transforms), as PyTorch's."""
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self.event_shape) > support.event_dim:
            support = constraints.independent(support,
                                              len(self.event_shape) - support.event_dim)
        return support

    def sample(self, sample_shape=()):
        with no_grad():
            x = self.base_dist.sample(sample_shape)
            for t in self.transforms:
                x = t(x)
            return x

    def rsample(self, sample_shape=()):
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self.event_shape)
        log_prob = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            log_prob = log_prob - sum_rightmost(t.log_abs_det_jacobian(x, y),
                                                event_dim - t.domain.event_dim)
            y = x
        return log_prob + sum_rightmost(self.base_dist.log_prob(y),
                                        event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value):
        """``value`` for increasing transforms, ``1 - value`` where their combined sign is
        -1 (elementwise, for Tensor signs such as an AffineTransform's with a Tensor scale):
        ``sign (value - 1/2) + 1/2``, as PyTorch's. Raises NotImplementedError (from
        ``sign``) for a transform that is not monotone."""
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        """``base.cdf(t^-1(value))``, flipped for decreasing transforms; when validating,
        the pulled-back value is checked against the base's support (ValueError)."""
        for t in reversed(self.transforms):
            value = t.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        value = self.base_dist.cdf(value)
        return self._monotonize_cdf(value)

    def icdf(self, value):
        value = self._monotonize_cdf(value)
        value = self.base_dist.icdf(value)
        for t in self.transforms:
            value = t(value)
        return value

    def _expand_parts(self, new, batch_shape):
        shape = tuple(batch_shape) + tuple(self._event_shape)
        for t in reversed(self.transforms):
            shape = tuple(t.inverse_shape(shape))
        base = self.base_dist
        new.base_dist = base.expand(shape[:len(shape) - len(base.event_shape)])

    def __repr__(self):
        return f"TransformedDistribution({self.base_dist!r}, {self.transforms!r})"


class MixtureSameFamily(Distribution):
    """A mixture of ``K`` components of one family, as
    ``torch.distributions.MixtureSameFamily``: ``mixture_distribution`` is a Categorical
    over the ``K`` components (batch shape broadcastable to the mixture's), and
    ``component_distribution`` has batch shape ``batch_shape + (K,)``.

    ``log_prob(x) = logsumexp_k(log_softmax(mixture.logits)_k + log p_k(x))``; ``mean`` and
    ``variance`` (law of total variance) and ``cdf`` are the probability-weighted sums;
    ``sample`` picks a component per draw (no ``rsample``).

    Raises ValueError for a mixture that is not a Categorical, a component that is not a
    Distribution, or batch shapes / numbers of components that do not match.
    """

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError("The Mixture distribution needs to be an instance of "
                             "torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of "
                             "torch.distributions.Distribution")
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        mdbs = tuple(mixture_distribution.batch_shape)
        cdbs = tuple(component_distribution.batch_shape)[:-1]
        for s1, s2 in zip(reversed(mdbs), reversed(cdbs)):
            if s1 != 1 and s2 != 1 and s1 != s2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not "
                                 f"compatible with `component_distribution.batch_shape`"
                                 f"({cdbs})")
        km = mixture_distribution._num_events
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(cdbs, component_distribution.event_shape,
                         validate_args=validate_args)

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    @property
    def support(self):
        return self._component_distribution.support

    def _pad(self, x):
        return _ops.unsqueeze(x, -1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x):
        dist_batch_ndims = len(self.batch_shape)
        cat_batch_ndims = len(self._mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        xs = tuple(x.shape)
        return x.reshape(xs[:-1] + (1,) * pad_ndims + xs[-1:] + (1,) * self._event_ndims)

    @property
    def mean(self):
        probs = self._pad_mixture_dimensions(self._mixture_distribution.probs)
        return (probs * self._component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        probs = self._pad_mixture_dimensions(self._mixture_distribution.probs)
        comp = self._component_distribution
        dim = -1 - self._event_ndims
        mean_cond_var = (probs * comp.variance).sum(dim)
        var_cond_mean = (probs * (comp.mean - self._pad(self.mean)) ** 2).sum(dim)
        return mean_cond_var + var_cond_mean

    def cdf(self, x):
        cdf_x = self._component_distribution.cdf(self._pad(x))
        return (cdf_x * self._mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self._component_distribution.log_prob(self._pad(x))
        log_mix_prob = _ops.log_softmax(self._mixture_distribution.logits, -1)
        return _ops.logsumexp(log_prob_x + log_mix_prob, -1)

    def sample(self, sample_shape=()):
        with no_grad():
            sample_shape = as_shape(sample_shape)
            gather_dim = len(sample_shape) + len(self.batch_shape)
            es = tuple(self.event_shape)
            mix_sample = self._mixture_distribution.sample(sample_shape)
            mix_shape = tuple(mix_sample.shape)
            comp_samples = self._component_distribution.sample(sample_shape)
            index = mix_sample.reshape(mix_shape + (1,) * (len(es) + 1))
            index = index.repeat((1,) * len(mix_shape) + (1,) + es)
            return _ops.squeeze(_ops.gather(comp_samples, gather_dim, index), gather_dim)

    def _expand_parts(self, new, batch_shape):
        batch = tuple(batch_shape)
        new._component_distribution = self._component_distribution.expand(
            batch + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch)

    def __repr__(self):
        return (f"MixtureSameFamily(\n  {self._mixture_distribution!r},\n  "
                f"{self._component_distribution!r})")
