"""``chainrule.nn``: modules, parameters, losses and initialisers, as ``torch.nn``.

>>> import chainrule as cr
>>> from chainrule import nn
>>> model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
>>> loss = nn.CrossEntropyLoss()(model(cr.randn(5, 4)), cr.tensor([0, 2, 1, 1, 0]))
>>> loss.backward()          # every parameter's .grad is set

Everything is composed of chainrule's differentiable ops (no new derivative rules), so
gradients of any order, ``chainrule.func`` transforms and ``gradcheck`` work through it.
"""

from . import functional, init, utils
from ._functional_call import functional_call
from ._module import Buffer, Module, ModuleDict, ModuleList, Parameter, Sequential
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all

__all__ = ["functional", "init", "utils", "functional_call", "Parameter", "Buffer", "Module",
           "Sequential", "ModuleList", "ModuleDict", *_modules_all]
