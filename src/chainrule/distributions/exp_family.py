"""``ExponentialFamily``: the base of exponential-family distributions, as
``torch.distributions.exp_family``.

A family with density ``p_F(x; theta) = exp(<t(x), theta> - F(theta) + k(x))`` defines
``_natural_params`` (the tuple ``theta``), ``_log_normalizer(*theta)`` (``F``) and
``_mean_carrier_measure`` (``E[k(x)]``); ``entropy`` is then ``F(theta) - <theta,
grad F(theta)> - E[k(x)]``, and ``kl_divergence`` of two members of one family is the
Bregman divergence of ``F`` (registered in ``kl.py``). ``grad F`` comes from
``chainrule.autograd.grad`` with ``create_graph=True``, so both are differentiable.
"""

from __future__ import annotations

from .. import autograd as _autograd
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


def _grad_ready(params):
    """The natural parameters as Tensors to differentiate with respect to: those already
    requiring grad are kept (so results stay differentiable in the distribution's
    parameters; PyTorch detaches them), others are detached copies that require grad."""
    return [p if p.requires_grad else p.detach().requires_grad_() for p in params]


def _log_normalizer_grads(dist, params):
    """``F(theta)`` and ``grad F(theta)`` (one Tensor per natural parameter)."""
    lg_normal = dist._log_normalizer(*params)
    grads = _autograd.grad(lg_normal.sum(), params, create_graph=True)
    return lg_normal, grads


class ExponentialFamily(Distribution):
    """The base class of exponential-family distributions (see the module docstring).

    Subclasses provide ``_natural_params``, ``_log_normalizer`` and
    ``_mean_carrier_measure``; each raises NotImplementedError here."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """``F(theta) - <theta, grad F(theta)> - E[k(x)]`` (the Bregman form)."""
        nparams = _grad_ready(self._natural_params)
        lg_normal, grads = _log_normalizer_grads(self, nparams)
        result = lg_normal - self._mean_carrier_measure
        batch = tuple(self._batch_shape)
        for p, g in zip(nparams, grads):
            result = result - (p * g).reshape(batch + (-1,)).sum(-1)
        return result
