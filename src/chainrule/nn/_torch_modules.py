"""``torch.nn.modules``'s submodules, for code ported from PyTorch that imports from them
(``from torch.nn.modules.loss import _Loss``, ``from torch.nn.modules.utils import
_pair``, ``from torch.nn.modules.batchnorm import _BatchNorm``).

chainrule's layers live in other files (``chainrule.nn.modules`` is one file), so each
submodule is a namespace of PyTorch's names for chainrule's classes, registered as
``chainrule.nn.modules.<name>`` (importable, and an attribute of ``chainrule.nn.modules``);
``module`` is :mod:`chainrule.nn._module` and ``lazy`` :mod:`chainrule.nn.lazy` themselves.
Also here: the helpers of ``torch.nn.modules.utils``, ``_BatchNorm`` (the base class
PyTorch's batch norms share), and two names PyTorch keeps for old code: ``Container`` and
``NLLLoss2d``.
"""

from __future__ import annotations

import collections.abc
import sys
import types
import warnings
from itertools import repeat

from . import _module, lazy
from . import conv as _conv
from . import conv_more as _conv_more
from . import modules as _modules
from . import modules_more as _modules_more
from . import transformer as _transformer
from ._module import Module

__all__ = ["Container", "NLLLoss2d", "consume_prefix_in_state_dict_if_present"]


def _deprecated(message):
    """PyTorch's ``@deprecated(message, category=FutureWarning)`` on a class: making an
    instance (of it or a subclass) warns, pointing at the caller."""

    def decorate(cls):
        def __new__(klass, *args, **kwargs):
            warnings.warn(message, FutureWarning, stacklevel=2)
            return super(cls, klass).__new__(klass)

        cls.__new__ = __new__
        cls.__deprecated__ = message
        return cls

    return decorate


@_deprecated("`nn.Container` is deprecated. All of its functionality is now implemented in "
             "`nn.Module`. Subclass that instead.")
class Container(Module):
    """PyTorch's old container: a :class:`Module` whose keyword arguments become its
    children (``Container(fc=nn.Linear(2, 3))``); it has no ``forward``. Making one gives
    PyTorch's FutureWarning."""

    def __init__(self, **kwargs):
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)


@_deprecated("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in "
             "replacement and see https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for "
             "more details.")
class NLLLoss2d(_modules.NLLLoss):
    """PyTorch's old name of :class:`~chainrule.nn.NLLLoss` for (N, C, H, W) inputs (NLLLoss
    takes them): the same loss and arguments. Making one gives PyTorch's FutureWarning."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


# --- torch.nn.modules.utils -----------------------------------------------------------------

def _ntuple(n, name="parse"):
    """A parser that repeats a non-iterable ``n`` times and makes an iterable a tuple."""

    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    """``t`` reversed, each entry repeated ``n`` times (a padding for ``F.pad``)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults):
    """``out_size`` with its None entries taken from the end of ``defaults``. Raises
    ValueError when ``defaults`` is not longer than ``out_size``."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):])]


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Strip ``prefix`` from the keys of ``state_dict`` (and of its ``_metadata``) in
    place: a ``DataParallel`` model's state dict loads into the bare model."""
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            if len(key) == 0:
                continue
            if key == prefix.replace(".", "") or key.startswith(prefix):
                metadata[key[len(prefix):]] = metadata.pop(key)


# --- torch.nn.modules.batchnorm._BatchNorm ------------------------------------------------

class _BatchNormMeta(type):
    # chainrule's batch norms derive from BatchNorm1d: each of them (BatchNorm1d/2d/3d,
    # SyncBatchNorm, the lazy ones) counts as a ``_BatchNorm``, as in PyTorch
    def __instancecheck__(cls, instance):
        if cls is _BatchNorm:
            return isinstance(instance, _modules.BatchNorm1d)
        return super().__instancecheck__(instance)

    def __subclasscheck__(cls, subclass):
        if cls is _BatchNorm:
            return issubclass(subclass, _modules.BatchNorm1d)
        return super().__subclasscheck__(subclass)


class _BatchNorm(_modules.BatchNorm1d, metaclass=_BatchNormMeta):
    """PyTorch's base of the batch norms: ``isinstance(m, _BatchNorm)`` holds for every
    batch norm; a subclass defines ``_check_input_dim`` (it raises NotImplementedError
    here)."""

    def _check_input_dim(self, input):
        raise NotImplementedError


# --- the submodules -------------------------------------------------------------------------

def _names(*sources):
    out = {}
    for source, names in sources:
        out.update((name, getattr(source, name)) for name in names.split())
    return out


def _build():
    """``{submodule name: {attribute: value}}`` (PyTorch's public names of each, and the
    private ones ported code subclasses or tests against)."""
    nn = sys.modules[__package__]  # (the package: its public names are all defined by now)

    def public(names):
        return _names((nn, names))

    return {
        "activation": public(
            "Threshold ReLU RReLU Hardtanh ReLU6 Sigmoid Hardsigmoid Tanh SiLU Mish Hardswish "
            "ELU CELU SELU GLU GELU Hardshrink LeakyReLU LogSigmoid Softplus Softshrink "
            "MultiheadAttention PReLU Softsign Tanhshrink Softmin Softmax Softmax2d "
            "LogSoftmax"),
        "adaptive": public("AdaptiveLogSoftmaxWithLoss"),
        "batchnorm": {**public("BatchNorm1d BatchNorm2d BatchNorm3d SyncBatchNorm "
                               "LazyBatchNorm1d LazyBatchNorm2d LazyBatchNorm3d"),
                      "_NormBase": _modules._NormBase, "_BatchNorm": _BatchNorm,
                      "_LazyNormBase": lazy._LazyNormBase},
        "channelshuffle": public("ChannelShuffle"),
        "container": public("Container Sequential ModuleList ModuleDict ParameterList "
                            "ParameterDict"),
        "conv": {**public("Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d "
                          "ConvTranspose3d LazyConv1d LazyConv2d LazyConv3d "
                          "LazyConvTranspose1d LazyConvTranspose2d LazyConvTranspose3d"),
                 "_ConvNd": _conv._ConvNd, "_ConvTransposeNd": _conv_more._ConvTransposeNd,
                 "_LazyConvXdMixin": lazy._LazyConvXdMixin},
        "distance": public("PairwiseDistance CosineSimilarity"),
        "dropout": {**public("Dropout Dropout1d Dropout2d Dropout3d AlphaDropout "
                             "FeatureAlphaDropout"), "_DropoutNd": _modules._DropoutNd},
        "flatten": public("Flatten Unflatten"),
        "fold": public("Fold Unfold"),
        "instancenorm": {**public("InstanceNorm1d InstanceNorm2d InstanceNorm3d "
                                  "LazyInstanceNorm1d LazyInstanceNorm2d LazyInstanceNorm3d"),
                         "_InstanceNorm": _conv_more._InstanceNorm},
        "linear": {**public("Bilinear Identity Linear LazyLinear"),
                   "NonDynamicallyQuantizableLinear": _transformer.NonDynamicallyQuantizableLinear},
        "loss": {**public(
            "L1Loss NLLLoss NLLLoss2d PoissonNLLLoss GaussianNLLLoss KLDivLoss MSELoss "
            "BCELoss BCEWithLogitsLoss HingeEmbeddingLoss MultiLabelMarginLoss SmoothL1Loss "
            "HuberLoss SoftMarginLoss CrossEntropyLoss MultiLabelSoftMarginLoss "
            "CosineEmbeddingLoss MarginRankingLoss MultiMarginLoss TripletMarginLoss "
            "TripletMarginWithDistanceLoss CTCLoss"),
            "_Loss": _modules._Loss, "_WeightedLoss": _modules._WeightedLoss},
        "normalization": public("LocalResponseNorm CrossMapLRN2d LayerNorm GroupNorm RMSNorm"),
        "padding": {**public(
            "CircularPad1d CircularPad2d CircularPad3d ConstantPad1d ConstantPad2d "
            "ConstantPad3d ReflectionPad1d ReflectionPad2d ReflectionPad3d ReplicationPad1d "
            "ReplicationPad2d ReplicationPad3d ZeroPad1d ZeroPad2d ZeroPad3d"),
            "_ConstantPadNd": _modules_more._ConstantPadNd},
        "pixelshuffle": public("PixelShuffle PixelUnshuffle"),
        "pooling": {**public(
            "MaxPool1d MaxPool2d MaxPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d AvgPool1d "
            "AvgPool2d AvgPool3d FractionalMaxPool2d FractionalMaxPool3d LPPool1d LPPool2d "
            "LPPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d "
            "AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d"),
            "_MaxPoolNd": _conv._MaxPoolNd, "_MaxUnpoolNd": _conv._MaxUnpoolNd,
            "_AvgPoolNd": _conv._AvgPoolNd, "_LPPoolNd": _conv._LPPoolNd,
            "_AdaptiveMaxPoolNd": _conv._AdaptiveMaxPoolNd},
        "rnn": public("RNNBase RNN LSTM GRU RNNCellBase RNNCell LSTMCell GRUCell"),
        "sparse": public("Embedding EmbeddingBag"),
        "transformer": public("TransformerEncoder TransformerDecoder "
                              "TransformerEncoderLayer TransformerDecoderLayer Transformer"),
        "upsampling": public("Upsample UpsamplingNearest2d UpsamplingBilinear2d"),
        "utils": {"_ntuple": _ntuple, "_single": _single, "_pair": _pair, "_triple": _triple,
                  "_quadruple": _quadruple, "_reverse_repeat_tuple": _reverse_repeat_tuple,
                  "_list_with_default": _list_with_default,
                  "consume_prefix_in_state_dict_if_present":
                      consume_prefix_in_state_dict_if_present},
    }


def install():
    """Register the submodules under ``chainrule.nn.modules`` (called once by
    ``chainrule.nn``, after its names are defined)."""
    parent = _modules.__name__
    for name, attrs in _build().items():
        module = types.ModuleType(f"{parent}.{name}",
                                  f"``torch.nn.modules.{name}``'s names in chainrule.")
        module.__dict__.update(attrs)
        module.__all__ = [k for k in attrs if not k.startswith("_")]
        sys.modules[module.__name__] = module
        setattr(_modules, name, module)
    for name, module in (("module", _module), ("lazy", lazy)):
        sys.modules[f"{parent}.{name}"] = module
        setattr(_modules, name, module)
