"""Lazy modules (``torch.nn.modules.lazy``): layers whose input size (``in_features``,
``in_channels``, ``num_features``) is read from their first input.

A lazy module is built with :class:`~chainrule.nn.parameter.UninitializedParameter`\\ s
(and :class:`~chainrule.nn.parameter.UninitializedBuffer`\\ s); its first call runs
``initialize_parameters(input)`` from a forward pre-hook: the size is inferred, the
parameters are materialized in place (an optimizer built before holds them) and initialised
by the eager module's ``reset_parameters`` (so with the same seed they equal the eager
module's), and the module's class becomes the eager one (``cls_to_become``: a
``LazyLinear`` is then a ``Linear``). As PyTorch's:

- ``state_dict()`` of an uninitialized module holds the uninitialized tensors themselves;
- ``load_state_dict`` of initialized tensors materializes the parameters with the loaded
  shapes (the module stays lazy until its first call, which then initialises nothing);
- using an uninitialized parameter raises ValueError, reading its ``shape`` RuntimeError.
"""

from __future__ import annotations

import itertools

import numpy as np

from .. import _creation
from .._state import no_grad
from . import conv as _conv
from . import conv_more as _conv_more
from . import modules as _modules
from .parameter import UninitializedBuffer, UninitializedParameter, is_lazy

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d",
           "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    """The mixin of lazy modules, as ``torch.nn.modules.lazy.LazyModuleMixin``: put it
    first among the bases (``class LazyMine(LazyModuleMixin, Mine)``), define
    ``initialize_parameters(*args, **kwargs)`` (materialize the uninitialized parameters
    from the first call's arguments) and optionally ``cls_to_become``, the class the module
    takes once initialised."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        # uninitialized tensors go in as they are (they have nothing to detach)
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if is_lazy(param) or keep_vars \
                    else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if is_lazy(buf) or keep_vars \
                    else buf.detach()

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs):
        """Before loading: an uninitialized parameter or buffer whose entry is initialized
        is materialized with the entry's shape (the load then copies the values)."""
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None and is_lazy(param):
                value = state_dict[key]
                if not is_lazy(value):
                    with no_grad():
                        param.materialize(tuple(value.shape))

    def initialize_parameters(self, *args, **kwargs):
        """Materialize and initialise the parameters from the first call's arguments.
        Raises NotImplementedError here (each lazy module defines it)."""
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self):
        """Whether a parameter or buffer of this module (not its children) is still
        uninitialized."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(),
                                                       self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None):
        """The forward pre-hook of the first call: initialise, check, remove the hooks and
        become ``cls_to_become``. Raises RuntimeError when a parameter is left
        uninitialized."""
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with "
                           "`DataParallel`. Run a dummy forward pass to correctly initialize "
                           "the modules")


class LazyLinear(LazyModuleMixin, _modules.Linear):
    """:class:`~chainrule.nn.Linear` whose ``in_features`` is the first input's last dim
    (``in_features=0`` until then); ``weight`` and ``bias`` are then initialised as
    Linear's, and the module becomes a Linear."""

    cls_to_become = _modules.Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvXdMixin(LazyModuleMixin):
    """Lazy convolutions: ``in_channels`` from the input's dim 1 (dim 0 unbatched)."""

    def __init__(self, *args, bias=True, device=None, dtype=None, out_channels=None):
        # (the eager constructor runs with 0 channels and no bias, as PyTorch's)
        super().__init__(*args, device=device, dtype=dtype)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if not isinstance(self.weight, UninitializedParameter):
                raise AssertionError("self.weight must be an UninitializedParameter")
            with no_grad():
                if self.transposed:
                    self.weight.materialize((self.in_channels, self.out_channels // self.groups,
                                             *self.kernel_size))
                else:
                    self.weight.materialize((self.out_channels, self.in_channels // self.groups,
                                             *self.kernel_size))
                if self.bias is not None:
                    if not isinstance(self.bias, UninitializedParameter):
                        raise AssertionError("self.bias must be an UninitializedParameter")
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()

    def _get_in_channels(self, input):
        n = self._get_num_spatial_dims()
        if input.dim() not in (n + 1, n + 2):
            raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: "
                               f"{input.shape}")
        return input.shape[1] if input.dim() == n + 2 else input.shape[0]

    def _get_num_spatial_dims(self):
        return self._n


def _lazy_conv(eager):
    """``LazyConv{n}d``: ``(out_channels, kernel_size, stride=1, padding=0, dilation=1,
    groups=1, bias=True, padding_mode='zeros', device=None, dtype=None)``."""

    class LazyConv(_LazyConvXdMixin, eager):
        cls_to_become = eager

        def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                     groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
            super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                             padding_mode, bias=bias, device=device, dtype=dtype,
                             out_channels=out_channels)

    return _named(LazyConv, eager, "in_channels", "input.size(1)")


def _lazy_conv_transpose(eager):
    """``LazyConvTranspose{n}d``: ``(out_channels, kernel_size, stride=1, padding=0,
    output_padding=0, groups=1, bias=True, dilation=1, padding_mode='zeros', device=None,
    dtype=None)``."""

    class LazyConvTranspose(_LazyConvXdMixin, eager):
        cls_to_become = eager

        def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                     groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                     dtype=None):
            super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups,
                             False, dilation, padding_mode, bias=bias, device=device,
                             dtype=dtype, out_channels=out_channels)

    return _named(LazyConvTranspose, eager, "in_channels", "input.size(1)")


class _LazyNormBase(LazyModuleMixin):
    """Lazy batch and instance norms: ``num_features`` from the input's dim 1."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        # (the eager constructor runs with 0 features, no affine parameters and no
        # running statistics, as PyTorch's)
        super().__init__(0, eps, momentum, False, False, device=device, dtype=dtype,
                         bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = _creation.tensor(0, dtype=np.int64, device=device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            with no_grad():
                if self.affine:
                    if not isinstance(self.weight, UninitializedParameter):
                        raise AssertionError("self.weight must be an UninitializedParameter")
                    self.weight.materialize((self.num_features,))
                    if self.bias is not None:
                        if not isinstance(self.bias, UninitializedParameter):
                            raise AssertionError("self.bias must be an UninitializedParameter")
                        self.bias.materialize((self.num_features,))
                if self.track_running_stats:
                    self.running_mean.materialize((self.num_features,))
                    self.running_var.materialize((self.num_features,))
                self.reset_parameters()


def _lazy_norm(eager):
    """``Lazy{BatchNorm,InstanceNorm}{n}d``: ``(eps=1e-5, momentum=0.1, affine=True,
    track_running_stats=True, device=None, dtype=None, *, bias=True)`` (PyTorch's defaults,
    the instance norms' too)."""

    class LazyNorm(_LazyNormBase, eager):
        cls_to_become = eager

    return _named(LazyNorm, eager, "num_features", "input.size(1)")


def _named(cls, eager, argument, source):
    name = "Lazy" + eager.__name__
    cls.__name__ = cls.__qualname__ = name
    cls.__module__ = __name__
    cls.__doc__ = (f"A :class:`~chainrule.nn.{eager.__name__}` whose ``{argument}`` is "
                   f"inferred from the first input's ``{source}`` ({argument}=0 until "
                   "then); its parameters are then initialised as the eager module's and it "
                   f"becomes a {eager.__name__} (see :mod:`chainrule.nn.lazy`).")
    return cls


LazyConv1d = _lazy_conv(_conv.Conv1d)
LazyConv2d = _lazy_conv(_conv.Conv2d)
LazyConv3d = _lazy_conv(_conv.Conv3d)
LazyConvTranspose1d = _lazy_conv_transpose(_conv_more.ConvTranspose1d)
LazyConvTranspose2d = _lazy_conv_transpose(_conv_more.ConvTranspose2d)
LazyConvTranspose3d = _lazy_conv_transpose(_conv_more.ConvTranspose3d)
LazyBatchNorm1d = _lazy_norm(_modules.BatchNorm1d)
LazyBatchNorm2d = _lazy_norm(_conv.BatchNorm2d)
LazyBatchNorm3d = _lazy_norm(_conv.BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm(_conv_more.InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm(_conv_more.InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm(_conv_more.InstanceNorm3d)
