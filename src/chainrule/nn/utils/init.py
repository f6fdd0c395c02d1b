"""``torch.nn.utils.skip_init`` (torch/nn/utils/init.py, PyTorch 2.13)."""

from __future__ import annotations

import inspect

from ...backend import backend_of
from .._module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` with its parameters and buffers left uninitialised
    (``empty``: arbitrary values, to be filled by the caller), as
    ``torch.nn.utils.skip_init``.

    PyTorch builds the module on the ``meta`` device and materialises it with
    ``to_empty``; chainrule has no ``meta`` device, so the module is built on ``device``
    (its initialisation runs, then is discarded) and every parameter and buffer is
    replaced by an ``empty_like`` array of the same shape, dtype and backend.

    Parameters
    ----------
    module_cls : type
        A :class:`~chainrule.nn.Module` subclass whose constructor takes ``device``.
    *args, **kwargs
        The constructor's arguments; ``device`` (default ``"cpu"``) is where the module
        is placed.

    Returns
    -------
    Module

    Raises
    ------
    RuntimeError
        ``module_cls`` is not a Module subclass, or its constructor has no ``device``
        argument (PyTorch's messages).
    """
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs["device"] = kwargs.pop("device", "cpu")
    module = module_cls(*args, **kwargs)
    for m in module.modules():
        for table in (m._parameters, m._buffers):
            for t in table.values():
                if t is not None:
                    t._data = backend_of(t._data).xp.empty_like(t._data)
                    t._vc[0] += 1
    return module
