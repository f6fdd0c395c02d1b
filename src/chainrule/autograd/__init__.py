"""``chainrule.autograd``: backward, grad, Function, gradcheck, grad mode.

``backward`` and ``grad`` compute vector-Jacobian products: for outputs ``y`` and a
cotangent ``u`` of ``y``'s shape (``grad_outputs``/``gradient``), each input ``x`` receives
``u^T (dy/dx)``, an array of ``x``'s shape. For a scalar ``y`` and ``u = 1`` that is the
gradient. The full Jacobian is never formed.
"""

from __future__ import annotations

import sys as _sys
import threading as _threading
import types as _types

# torch.autograd's spellings: the modules grad_mode and anomaly_mode (and inference_mode,
# set by chainrule/__init__.py from chainrule._compat, a layer above this one)
from .._state import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from . import anomaly as anomaly_mode  # noqa: E402,F401
from . import batched, forward_ad, graph, profiler  # noqa: F401  (batched registers grad(is_grads_batched))
from ._grad import backward, grad
from .anomaly import AnomalyError, detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .function import Function, FunctionCtx, once_differentiable
from .gradcheck import GradcheckError, GradcheckReport, gradcheck, gradgradcheck
from .implicit import custom_root, fixed_point, root
from .pair import gradcheck_pair
from .validate import ValidationResult, validate
from .variable import Variable

_THREADS = _threading.local()


def is_multithreading_enabled():
    """Whether backward may use device worker threads (PyTorch's flag, thread-local; True
    by default). chainrule's backward always runs on the calling thread."""
    return getattr(_THREADS, "mode", True)


class set_multithreading_enabled:
    """PyTorch's switch for a backward on device worker threads, as a function or a context
    manager (the old mode is back after the ``with`` block). chainrule's backward always runs
    on the calling thread, so it records the mode for :func:`is_multithreading_enabled` and
    changes nothing else."""

    def __init__(self, mode):
        self.prev, self.mode = is_multithreading_enabled(), bool(mode)
        _THREADS.mode = self.mode

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _THREADS.mode = self.prev

    def clone(self):
        return type(self)(self.mode)


def is_view_replay_enabled():
    """PyTorch's view-replay flag: False (chainrule replays views when a base changes in
    place whatever this says)."""
    return False


grad_mode = _types.ModuleType(f"{__name__}.grad_mode", "``torch.autograd.grad_mode``: the "
                              "grad-mode context managers.")
grad_mode.__dict__.update(no_grad=no_grad, enable_grad=enable_grad,
                          set_grad_enabled=set_grad_enabled)
_sys.modules.setdefault(grad_mode.__name__, grad_mode)
_sys.modules.setdefault(f"{__name__}.anomaly_mode", anomaly_mode)

__all__ = [
    "backward", "grad", "forward_ad", "root", "custom_root", "fixed_point", "Function",
    "FunctionCtx", "once_differentiable", "gradcheck", "gradgradcheck", "GradcheckError",
    "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "detect_anomaly",
    "set_detect_anomaly", "is_anomaly_enabled", "AnomalyError", "validate", "ValidationResult",
    "GradcheckReport", "gradcheck_pair", "Variable", "graph", "profiler", "inference_mode",
    "grad_mode", "anomaly_mode", "set_multithreading_enabled", "is_multithreading_enabled",
    "is_view_replay_enabled",
]
