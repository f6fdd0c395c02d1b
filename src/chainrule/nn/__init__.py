"""``chainrule.nn``: modules, parameters, losses and initialisers, as ``torch.nn``.

>>> import chainrule as cr
>>> from chainrule import nn
>>> model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
>>> loss = nn.CrossEntropyLoss()(model(cr.randn(5, 4)), cr.tensor([0, 2, 1, 1, 0]))
>>> loss.backward()          # every parameter's .grad is set

Everything is composed of chainrule's differentiable ops (no new derivative rules), so
gradients of any order, ``chainrule.func`` transforms and ``gradcheck`` work through it.
"""

from . import _module, _torch_modules, functional, init, parallel, parameter, utils
from . import conv as _conv
from . import conv_more as _conv_more
from . import fractional as _fractional
from . import modules as _modules_file
from ._functional_call import functional_call
from ._module import (
    Buffer,
    Module,
    ModuleDict,
    ModuleList,
    Parameter,
    ParameterDict,
    ParameterList,
    Sequential,
)
from ._torch_modules import Container, NLLLoss2d
from .conv import *  # noqa: F401,F403
from .conv import __all__ as _conv_all
from .conv_more import *  # noqa: F401,F403
from .conv_more import __all__ as _conv_more_all
from .fractional import *  # noqa: F401,F403
from .fractional import __all__ as _fractional_all
from .lazy import *  # noqa: F401,F403
from .lazy import __all__ as _lazy_all
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .modules_extra import *  # noqa: F401,F403
from .modules_extra import __all__ as _modules_extra_all
from .modules_more import *  # noqa: F401,F403
from .modules_more import __all__ as _modules_more_all
from .parallel import DataParallel
from .parameter import UninitializedBuffer, UninitializedParameter
from .rnn import *  # noqa: F401,F403
from .rnn import __all__ as _rnn_all
from .transformer import *  # noqa: F401,F403
from .transformer import __all__ as _transformer_all
from .transformer import multi_head_attention_forward

# torch.nn.modules.module: Module and the global hooks (register_module_forward_hook, ...)
_modules_file.module = _module

# transformer.py builds on functional.py, so the functional form is registered from here
functional.multi_head_attention_forward = multi_head_attention_forward
functional.__all__.append("multi_head_attention_forward")
for _name in _conv.FUNCTIONAL:  # conv1d, max_pool2d, ...: conv.py builds on functional.py
    setattr(functional, _name, getattr(_conv, _name))
    functional.__all__.append(_name)
for _name in _conv_more.FUNCTIONAL:  # conv_transpose2d, interpolate, ...: likewise
    setattr(functional, _name, getattr(_conv_more, _name))
    functional.__all__.append(_name)
for _name in _fractional.FUNCTIONAL:  # fractional_max_pool2d, ...: likewise
    setattr(functional, _name, getattr(_fractional, _name))
    functional.__all__.append(_name)

__all__ = ["functional", "init", "parallel", "utils", "parameter", "functional_call",
           "Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "Module",
           "DataParallel", "Container", "Sequential", "ModuleList", "ModuleDict",
           "ParameterList", "ParameterDict", "NLLLoss2d",
           *_modules_all, *_modules_more_all, *_modules_extra_all, *_conv_all, *_conv_more_all,
           *_fractional_all, *[n for n in _lazy_all if n != "LazyModuleMixin"], *_rnn_all,
           *_transformer_all]

# torch.nn.modules.<submodule> (loss, conv, batchnorm, utils, lazy, ...), importable
_torch_modules.install()
