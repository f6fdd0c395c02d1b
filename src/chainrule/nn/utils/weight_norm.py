"""Weight normalisation as a forward pre-hook (``torch.nn.utils.weight_norm``, PyTorch's
older API): ``weight = g * v / ||v||``, the norm over every dim but ``dim``, with ``g`` and
``v`` the module's parameters ``weight_g`` and ``weight_v`` (Salimans and Kingma, 2016,
"Weight Normalization")."""

from __future__ import annotations

import warnings

from ..._state import no_grad
from .._module import Parameter

__all__ = ["weight_norm", "remove_weight_norm", "norm_except_dim", "WeightNorm"]


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dim but ``dim``, shaped to broadcast against
    ``v`` (size 1 in the reduced dims), as ``torch.norm_except_dim``; ``dim=-1`` means the
    norm of the whole tensor (a 0-d tensor), as in PyTorch."""
    if dim == -1:
        return v.norm(pow)
    n = v.dim()
    if dim == 0:
        return v.reshape(v.shape[0], -1).norm(pow, dim=1).reshape((v.shape[0],) + (1,) * (n - 1))
    if dim == n - 1:
        return v.reshape(-1, v.shape[-1]).norm(pow, dim=0).reshape((1,) * (n - 1)
                                                                     + (v.shape[-1],))
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


class WeightNorm:
    """The forward pre-hook :func:`weight_norm` registers: recomputes ``module.<name>``
    from ``<name>_g`` and ``<name>_v`` before each call."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / norm_except_dim(v, 2, self.dim))

    @staticmethod
    def apply(module, name, dim):
        for hook in module._hooks("_forward_pre_hooks").values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        with no_grad():
            module.register_parameter(name + "_g",
                                      Parameter(norm_except_dim(weight, 2, fn.dim).detach()))
            module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Reparameterise ``module.<name>`` as ``g * v / ||v||`` (norm over every dim but
    ``dim``; ``dim=None``: the whole tensor, ``g`` a scalar), as
    ``torch.nn.utils.weight_norm``: the parameter is replaced by ``<name>_g`` (shape of the
    norm) and ``<name>_v`` (the weight), and recomputed before each forward. Returns the
    module. Warns FutureWarning (deprecated in PyTorch in favour of
    ``nn.utils.parametrizations.weight_norm``).

    Raises RuntimeError when ``name`` already has weight norm, KeyError when it is not a
    parameter of ``module``."""
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning,
                  stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_norm_hook(module, cls, name, what):
    """Remove the forward pre-hook of class ``cls`` on ``name`` (a legacy weight or
    spectral norm: its ``remove`` restores the parameter). Raises ValueError, naming
    ``what``, when there is none."""
    hooks = module._hooks("_forward_pre_hooks")
    for k, hook in list(hooks.items()):
        if isinstance(hook, cls) and hook.name == name:
            hook.remove(module)
            del hooks[k]
            return
    raise ValueError(f"{what} of '{name}' not found in {module}")


def remove_weight_norm(module, name="weight"):
    """Undo :func:`weight_norm`: ``<name>`` becomes a parameter again (its current value).
    Raises ValueError when ``module`` has no weight norm on ``name``."""
    remove_norm_hook(module, WeightNorm, name, "weight_norm")
    return module
