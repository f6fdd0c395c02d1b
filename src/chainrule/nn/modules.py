"""Layers, activations and losses as modules (``torch.nn``'s names and arguments).

Each module's ``forward`` calls :mod:`chainrule.nn.functional`; shapes, dtypes and errors
are those of the functional it calls. ``dtype=None`` means chainrule's default float dtype
(``chainrule.get_default_dtype()``, float64 unless changed).
"""

from __future__ import annotations

import inspect
import math

import numpy as np

from .. import _creation
from .. import ops as _ops
from .._state import no_grad
from .._tensor import wrap
from ..backend import numpy_dtype
from . import functional as F
from . import init
from ._module import Module, Parameter

__all__ = [
    "Identity", "Linear", "Bilinear", "Flatten", "Unflatten", "Dropout", "LayerNorm",
    "GroupNorm", "RMSNorm", "BatchNorm1d", "Embedding", "EmbeddingBag", "PReLU",
    "ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Softplus",
    "Softsign", "Hardtanh", "Hardswish", "Hardsigmoid", "LogSigmoid", "Tanhshrink", "Tanh",
    "Sigmoid", "Softmax", "LogSoftmax", "Softmin",
    "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "NLLLoss", "CrossEntropyLoss", "BCELoss",
    "BCEWithLogitsLoss", "KLDivLoss", "PoissonNLLLoss", "GaussianNLLLoss", "MarginRankingLoss",
    "HingeEmbeddingLoss", "TripletMarginLoss", "CosineEmbeddingLoss", "CosineSimilarity",
    "PairwiseDistance",
]


def _dtype(dtype):
    return numpy_dtype(_creation.get_default_dtype() if dtype is None else dtype)


def _empty(shape, dtype):
    return Parameter(np.empty(shape, dtype=_dtype(dtype)))


def weight_and_bias(module, weight_shape, bias, dtype):
    """Give ``module`` a ``weight`` of ``weight_shape`` and, with ``bias``, a ``bias`` of
    ``weight_shape[0]`` (else a None ``bias``), initialised by ``reset_parameters``."""
    module.weight = _empty(weight_shape, dtype)
    if bias:
        module.bias = _empty((weight_shape[0],), dtype)
    else:
        module.register_parameter("bias", None)
    module.reset_parameters()


def reset_weight_and_bias(module):
    """PyTorch's init of Linear and convolutions: ``kaiming_uniform_(a=sqrt(5))`` for the
    weight, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the bias (fan_in: the product of the
    weight's dims after the first)."""
    init.kaiming_uniform_(module.weight, a=math.sqrt(5))
    if module.bias is not None:
        fan_in = math.prod(module.weight.shape[1:])
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(module.bias, -bound, bound)


# --- layers ------------------------------------------------------------------------------

class Identity(Module):
    """Returns its input (any arguments to the constructor are ignored)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x W^T + b``: input (\\*, in_features) -> output (\\*, out_features).

    ``weight`` (out_features, in_features) is initialised with
    ``kaiming_uniform_(a=sqrt(5))`` (U(-1/sqrt(in), 1/sqrt(in))) and ``bias``
    (out_features,) with U(-1/sqrt(in), 1/sqrt(in)), as PyTorch.

    Raises RuntimeError (``mat1 and mat2 shapes cannot be multiplied``) when the input's
    last dim is not ``in_features``.
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        weight_and_bias(self, (out_features, in_features), bias, dtype)

    def reset_parameters(self):
        reset_weight_and_bias(self)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """``y = x1^T A x2 + b``: inputs (\\*, in1) and (\\*, in2) -> (\\*, out); weight
    (out, in1, in2) and bias (out,) from U(-1/sqrt(in1), 1/sqrt(in1))."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = _empty((out_features, in1_features, in2_features), dtype)
        if bias:
            self.bias = _empty((out_features,), dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Flatten(Module):
    """Flatten dims ``start_dim`` to ``end_dim`` (default: all but the batch dim)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return _ops.flatten(input, self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size``."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        return _ops.unflatten(input, self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class _DropoutNd(Module):
    """What the dropout modules share: ``p`` (checked), ``inplace``, and a forward calling
    the class's functional form ``fn(input, p, training, inplace)``."""

    fn = None

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return type(self).fn(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """:func:`~chainrule.nn.functional.dropout` in training mode, identity in eval mode.

    Raises ValueError for ``p`` outside [0, 1]."""

    fn = staticmethod(F.dropout)


def _affine_reset(module):
    """A normalisation's ``weight`` back to ones and ``bias`` to zeros (those it has)."""
    if getattr(module, "weight", None) is not None:
        init.ones_(module.weight)
    if getattr(module, "bias", None) is not None:
        init.zeros_(module.bias)


class _TrailingNorm(Module):
    """What LayerNorm and RMSNorm share: ``normalized_shape`` (the trailing dims), ``eps``,
    and the affine ``weight`` (ones) and, where the layer has one, ``bias`` (zeros)."""

    def __init__(self, normalized_shape, eps, elementwise_affine, bias, dtype):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        shape, dt = self.normalized_shape, _dtype(dtype)
        self.register_parameter(
            "weight", Parameter(np.ones(shape, dtype=dt)) if elementwise_affine else None)
        if bias is not None:  # bias=None: the layer has no bias slot (RMSNorm)
            self.register_parameter(
                "bias", Parameter(np.zeros(shape, dtype=dt)) if elementwise_affine and bias
                else None)

    def reset_parameters(self):
        _affine_reset(self)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class LayerNorm(_TrailingNorm):
    """Layer normalisation over the trailing ``normalized_shape``; ``weight`` ones and
    ``bias`` zeros of that shape when ``elementwise_affine``."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__(normalized_shape, eps, elementwise_affine, bool(bias), dtype)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)


class RMSNorm(_TrailingNorm):
    """Root-mean-square normalisation over the trailing ``normalized_shape`` (``eps=None``:
    the dtype's machine epsilon); ``weight`` ones of that shape when
    ``elementwise_affine``."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__(normalized_shape, eps, elementwise_affine, None, dtype)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)


class GroupNorm(Module):
    """Group normalisation of (N, C, \\*) inputs; per-channel ``weight``/``bias``.

    Raises ValueError when ``num_channels`` is not divisible by ``num_groups``."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        if affine:
            self.weight = Parameter(np.ones(num_channels, dtype=_dtype(dtype)))
        else:
            self.register_parameter("weight", None)
        if affine and bias:
            self.bias = Parameter(np.zeros(num_channels, dtype=_dtype(dtype)))
        else:
            self.register_parameter("bias", None)

    def reset_parameters(self):
        _affine_reset(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _NormBase(Module):
    """What the batch and instance norms share: the options, the affine ``weight`` (ones)
    and ``bias`` (zeros; none with ``bias=False``) when ``affine``, the running statistics
    (``running_mean`` zeros, ``running_var`` ones, ``num_batches_tracked``) when
    ``track_running_stats``, and resetting them."""

    _version = 2  # (PyTorch's: version 2 added num_batches_tracked)

    def __init__(self, num_features, eps, momentum, affine, track_running_stats, dtype,
                 bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        dt = _dtype(dtype)
        if affine:
            self.weight = Parameter(np.ones(num_features, dtype=dt))
        else:
            self.register_parameter("weight", None)
        if affine and bias:
            self.bias = Parameter(np.zeros(num_features, dtype=dt))
        else:
            self.register_parameter("bias", None)
        track = track_running_stats
        self.register_buffer("running_mean", wrap(np.zeros(num_features, dtype=dt)) if track
                             else None)
        self.register_buffer("running_var", wrap(np.ones(num_features, dtype=dt)) if track
                             else None)
        self.register_buffer("num_batches_tracked", wrap(np.array(0, dtype=np.int64))
                             if track else None)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        # a checkpoint from before version 2 (or without metadata) may lack
        # num_batches_tracked: it loads as the current value (0 when there is none)
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = self.num_batches_tracked \
                    if self.num_batches_tracked is not None \
                    else wrap(np.array(0, dtype=np.int64))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean._data[...] = 0
            self.running_var._data[...] = 1
            self.num_batches_tracked._data[...] = 0

    def reset_parameters(self):
        self.reset_running_stats()
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)


class BatchNorm1d(_NormBase):
    """Batch normalisation of (N, C) or (N, C, L) inputs.

    Training mode normalises with the batch statistics and updates the buffers
    ``running_mean`` (zeros), ``running_var`` (ones; with the unbiased batch variance) and
    ``num_batches_tracked``; ``momentum=None`` uses the cumulative average. Eval mode
    normalises with the running statistics.

    Raises ValueError for an input that is not 2-D or 3-D.
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype,
                         bias)

    def _check_input_dim(self, input):
        if input.ndim not in (2, 3):
            raise ValueError(f"BatchNorm1d: expected 2D or 3D input (got {input.ndim}D input "
                             f"of shape {list(input.shape)})")

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked._data[...] += 1
            self.num_batches_tracked._vc[0] += 1
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None,
                            self.running_var if track else None, self.weight, self.bias,
                            bn_training, factor, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


def _lookup_table(module, padding_idx, dtype, weight, freeze, word):
    """Embedding's and EmbeddingBag's ``weight`` (num_embeddings, embedding_dim): from
    N(0, 1) with the ``padding_idx`` row zeroed, or the given ``weight`` (frozen with
    ``freeze``). Returns ``padding_idx`` made non-negative; AssertionError, as PyTorch's
    (``word`` its spelling there), when it is out of range."""
    n = module.num_embeddings
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise AssertionError(f"{word} must be within num_embeddings")
        padding_idx %= n
    if weight is None:
        module.weight = _empty((n, module.embedding_dim), dtype)
        _reset_lookup_table(module.weight, padding_idx)
    else:
        module.weight = Parameter(weight, requires_grad=not freeze)
    return padding_idx


def _reset_lookup_table(weight, padding_idx):
    """N(0, 1) entries, the ``padding_idx`` row zeroed (Embedding.reset_parameters)."""
    init.normal_(weight)
    if padding_idx is not None:
        with no_grad():
            weight[padding_idx] = 0.0


class Embedding(Module):
    """A lookup table: integer input (\\*) -> (\\*, embedding_dim); ``weight`` from N(0, 1),
    its ``padding_idx`` row zeroed (and never updated by the gradient)."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 _freeze=False, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = _lookup_table(self, padding_idx, dtype, _weight, _freeze,
                                         "Padding_idx")
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None,
                        norm_type=2.0, scale_grad_by_freq=False, sparse=False):
        """An Embedding holding ``embeddings`` (2-D), frozen unless ``freeze=False``."""
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)

    def reset_parameters(self):
        _reset_lookup_table(self.weight, self.padding_idx)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        return s


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings (``F.embedding_bag``), as
    ``torch.nn.EmbeddingBag``: ``forward(input, offsets=None, per_sample_weights=None)``
    with 2-D ``input`` (B, N) or 1-D ``input`` and ``offsets``; output (B, embedding_dim).
    ``weight`` from N(0, 1), its ``padding_idx`` row zeroed. Raises ValueError for an unknown
    ``mode`` (and as ``F.embedding_bag``)."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, device=None, dtype=None):
        super().__init__()
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, sparse
        self.include_last_offset = include_last_offset
        self.padding_idx = _lookup_table(self, padding_idx, dtype, _weight, False,
                                         "padding_idx")

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, mode="mean", sparse=False,
                        include_last_offset=False, padding_idx=None):
        """An EmbeddingBag holding ``embeddings`` (2-D), frozen unless ``freeze=False``."""
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                  _weight=embeddings, include_last_offset=include_last_offset,
                  padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag

    def reset_parameters(self):
        _reset_lookup_table(self.weight, self.padding_idx)

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset,
                               self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s


# --- activations -------------------------------------------------------------------------

class PReLU(Module):
    """``max(0, x) + a * min(0, x)`` with a learnable slope ``weight`` (``num_parameters``
    entries: one, or one per channel, dim 1 of the input), initialised to ``init``."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(np.full(num_parameters, init, dtype=_dtype(dtype)))

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


def _activation(name, fn, doc, params=(), repr_fmt=None):
    """A module class that calls ``fn(input, *params)``; ``params`` are ``(name, default)``
    constructor arguments."""
    names = [p for p, _ in params]

    def __init__(self, *args, **kwargs):
        Module.__init__(self)
        values = dict(params)
        for k, v in zip(names + ["inplace"], args):
            values[k] = v
        for k, v in kwargs.items():
            if k not in values and k != "inplace":
                raise TypeError(f"{name}.__init__() got an unexpected keyword argument '{k}'")
            values[k] = v
        for k in names:
            object.__setattr__(self, k, values[k])
        object.__setattr__(self, "inplace", values.get("inplace", False))

    takes_inplace = "inplace" in inspect.signature(fn).parameters

    def forward(self, input):
        if takes_inplace and self.inplace:  # the input updated in place, as PyTorch's
            return fn(input, *(getattr(self, k) for k in names), inplace=True)
        return fn(input, *(getattr(self, k) for k in names))

    def extra_repr(self):
        if repr_fmt is None:
            parts = [f"{k}={getattr(self, k)}" for k in names]
            return ", ".join(parts + (["inplace=True"] if self.inplace else []))
        return repr_fmt(self)

    return type(name, (Module,), {"__init__": __init__, "forward": forward,
                                  "extra_repr": extra_repr, "__doc__": doc,
                                  "__module__": __name__})


ReLU = _activation("ReLU", F.relu, "``max(x, 0)`` elementwise.")
ReLU6 = _activation("ReLU6", F.relu6, "``min(max(x, 0), 6)`` elementwise.")
LeakyReLU = _activation("LeakyReLU", F.leaky_relu, "``x`` or ``negative_slope * x``.",
                        (("negative_slope", 0.01),))
ELU = _activation("ELU", F.elu, "``x`` or ``alpha (exp(x) - 1)``.", (("alpha", 1.0),))
SELU = _activation("SELU", F.selu, "Scaled ELU with PyTorch's constants.")
CELU = _activation("CELU", F.celu, "``max(0, x) + min(0, alpha (exp(x / alpha) - 1))``.",
                   (("alpha", 1.0),))
GELU = _activation("GELU", F.gelu, "``x Phi(x)``, exactly (erf) or with the tanh formula.",
                   (("approximate", "none"),),
                   lambda self: f"approximate={self.approximate!r}")
SiLU = _activation("SiLU", F.silu, "``x sigmoid(x)``.")
Mish = _activation("Mish", F.mish, "``x tanh(softplus(x))``.")
Softplus = _activation("Softplus", F.softplus, "``log(1 + exp(beta x)) / beta``.",
                       (("beta", 1.0), ("threshold", 20.0)))
Softsign = _activation("Softsign", F.softsign, "``x / (1 + |x|)``.")
Hardtanh = _activation("Hardtanh", F.hardtanh, "``x`` clamped to [min_val, max_val].",
                       (("min_val", -1.0), ("max_val", 1.0)))
Hardswish = _activation("Hardswish", F.hardswish, "``x relu6(x + 3) / 6``.")
Hardsigmoid = _activation("Hardsigmoid", F.hardsigmoid, "``relu6(x + 3) / 6``.")
LogSigmoid = _activation("LogSigmoid", F.logsigmoid, "``log(sigmoid(x))``, stably.")
Tanhshrink = _activation("Tanhshrink", F.tanhshrink, "``x - tanh(x)``.")
Tanh = _activation("Tanh", F.tanh, "``tanh(x)``.")
Sigmoid = _activation("Sigmoid", F.sigmoid, "``1 / (1 + exp(-x))``.")
Softmax = _activation("Softmax", F.softmax, "Softmax along ``dim``.", (("dim", None),))
LogSoftmax = _activation("LogSoftmax", F.log_softmax, "Log-softmax along ``dim``.",
                         (("dim", None),))
Softmin = _activation("Softmin", F.softmin, "Softmin along ``dim``.", (("dim", None),))

class CosineSimilarity(Module):
    """:func:`~chainrule.nn.functional.cosine_similarity` of two inputs along ``dim``."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """:func:`~chainrule.nn.functional.pairwise_distance` of two inputs."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


# --- losses ------------------------------------------------------------------------------

class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = F._legacy_reduction(size_average, reduce, reduction)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight if weight is None or hasattr(weight, "_data")
                             else wrap(np.asarray(weight)))


class MSELoss(_Loss):
    """Mean squared error, :func:`~chainrule.nn.functional.mse_loss`."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error, :func:`~chainrule.nn.functional.l1_loss`."""

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """:func:`~chainrule.nn.functional.smooth_l1_loss` with ``beta``."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """:func:`~chainrule.nn.functional.huber_loss` with ``delta``."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_WeightedLoss):
    """:func:`~chainrule.nn.functional.nll_loss` (``weight``, ``ignore_index``)."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """:func:`~chainrule.nn.functional.cross_entropy` (``weight``, ``ignore_index``,
    ``label_smoothing``; class-index or probability targets)."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """:func:`~chainrule.nn.functional.binary_cross_entropy` of probabilities."""

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """:func:`~chainrule.nn.functional.binary_cross_entropy_with_logits` (``weight``,
    ``pos_weight``)."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    """:func:`~chainrule.nn.functional.kl_div` (``log_target``; ``reduction='batchmean'``
    for the KL divergence proper)."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class PoissonNLLLoss(_Loss):
    """:func:`~chainrule.nn.functional.poisson_nll_loss`."""

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, self.log_input, self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """:func:`~chainrule.nn.functional.gaussian_nll_loss`."""

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


class MarginRankingLoss(_Loss):
    """:func:`~chainrule.nn.functional.margin_ranking_loss`."""

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, self.margin,
                                     reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """:func:`~chainrule.nn.functional.hinge_embedding_loss`."""

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, self.margin, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """:func:`~chainrule.nn.functional.triplet_margin_loss`."""

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None,
                 reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, self.margin, self.p, self.eps,
                                     self.swap, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """:func:`~chainrule.nn.functional.cosine_embedding_loss`."""

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, self.margin,
                                       reduction=self.reduction)
