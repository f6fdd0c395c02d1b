"""More of ``torch.nn``'s modules: the activations, dropouts, losses and padding layers whose
functional forms are in :mod:`chainrule.nn.functional`, and ``PixelShuffle`` /
``PixelUnshuffle``.

Each module stores PyTorch's constructor arguments under PyTorch's attribute names, prints
PyTorch's ``extra_repr``, and calls its functional in ``forward``: shapes, dtypes, gradients
and most errors are those of the functional (a composition of differentiable ops).
"""

from __future__ import annotations

from . import functional as F
from ._module import Module
from .modules import PairwiseDistance, _DropoutNd, _Loss, _WeightedLoss

__all__ = [
    "LocalResponseNorm", "CTCLoss",
    "GLU", "Threshold", "Softshrink", "Hardshrink", "RReLU", "Softmax2d",
    "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
    "SoftMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "MultiLabelMarginLoss",
    "TripletMarginWithDistanceLoss",
    "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
    "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d",
    "PixelShuffle", "PixelUnshuffle",
]


# --- activations -------------------------------------------------------------------------

class GLU(Module):
    """The gated linear unit ``a * sigmoid(b)``, ``a`` and ``b`` the two halves of the input
    along ``dim``: (\\*, 2n, \\*) -> (\\*, n, \\*).

    Raises RuntimeError (``Halving dimension must be even``) when that dim's size is odd."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``; any shape, output of the input's
    shape; ``inplace=True`` updates the input in place."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"threshold={self.threshold}, value={self.value}{inplace_str}"


class Softshrink(Module):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 between; any shape."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.softshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Hardshrink(Module):
    """``x`` where ``|x| > lambd``, else 0; any shape."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class RReLU(Module):
    """The randomized leaky ReLU: in training mode each negative entry is multiplied by a
    slope drawn from U(lower, upper) (chainrule's generator, so ``manual_seed`` makes it
    reproducible); in eval mode by ``(lower + upper) / 2``. Any shape; ``inplace=True``
    updates the input in place."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"lower={self.lower}, upper={self.upper}{inplace_str}"


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of a (N, C, H, W) or (C, H, W) input.

    Raises ValueError for an input that is not 3-D or 4-D."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D "
                             "instead")
        return F.softmax(input, -3)


# --- dropouts ----------------------------------------------------------------------------

_DROPOUT_RAISES = """

    Raises ValueError for ``p`` outside [0, 1] (in the constructor)."""


class Dropout1d(_DropoutNd):
    """In training mode, zero whole channels of a (N, C, L) or (C, L) input with probability
    ``p`` and scale the rest by ``1 / (1 - p)``; the identity in eval mode. The forward
    raises RuntimeError for an input that is not 2-D or 3-D."""

    fn = staticmethod(F.dropout1d)
    __doc__ += _DROPOUT_RAISES


class Dropout2d(_DropoutNd):
    """In training mode, zero whole channels of a (N, C, H, W) or (C, H, W) input with
    probability ``p`` and scale the rest by ``1 / (1 - p)``; the identity in eval mode."""

    fn = staticmethod(F.dropout2d)
    __doc__ += _DROPOUT_RAISES


class Dropout3d(_DropoutNd):
    """:class:`Dropout2d` for (N, C, D, H, W) or (C, D, H, W) inputs."""

    fn = staticmethod(F.dropout3d)
    __doc__ += _DROPOUT_RAISES


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks (keeps zero mean and unit variance), in training mode;
    the identity in eval mode. Any shape."""

    fn = staticmethod(F.alpha_dropout)
    __doc__ += _DROPOUT_RAISES


class FeatureAlphaDropout(_DropoutNd):
    """:class:`AlphaDropout` dropping whole channels (dim 1 of a (N, C, \\*) input)."""

    fn = staticmethod(F.feature_alpha_dropout)
    __doc__ += _DROPOUT_RAISES


# --- losses ------------------------------------------------------------------------------

class SoftMarginLoss(_Loss):
    """:func:`~chainrule.nn.functional.soft_margin_loss`: ``log(1 + exp(-y x))``, input and
    target (\\*) of one shape, target entries +1 or -1."""

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """:func:`~chainrule.nn.functional.multilabel_soft_margin_loss`: input (N, C) logits,
    target (N, C) of 0/1 labels, ``weight`` (C,) per class; one loss per sample."""

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """:func:`~chainrule.nn.functional.multi_margin_loss`: the multi-class hinge loss of
    input (N, C) or (C,) and class-index target (N,) or ().

    Raises ValueError for ``p`` other than 1 or 2, or a ``weight`` that is not 1-D."""

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p != 1 and p != 2:
            raise ValueError("only p == 1 and p == 2 supported")
        if self.weight is not None and self.weight.ndim != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{self.weight.ndim}D instead")
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """:func:`~chainrule.nn.functional.multilabel_margin_loss`: input (N, C) or (C,),
    target of the same shape holding class indices, ended by the first -1."""

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """:func:`~chainrule.nn.functional.triplet_margin_with_distance_loss`:
    ``max(d(a, p) - d(a, n) + margin, 0)`` for anchor, positive and negative (N, D) or (D,),
    ``d`` = ``distance_function`` (default :class:`PairwiseDistance`, held as a submodule).

    Raises ValueError for ``margin <= 0``."""

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        self.distance_function = (distance_function if distance_function is not None
                                  else PairwiseDistance())
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


# --- padding -----------------------------------------------------------------------------

def _padding(padding, n):
    """An int becomes ``2 n`` copies (left/right for each of the last ``n`` dims, last dim
    first); a sequence is kept as a tuple."""
    return (padding,) * (2 * n) if isinstance(padding, int) else tuple(padding)


class _PadNd(Module):
    n = 1
    mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = _padding(padding, self.n)

    def _check_input_dim(self, input):
        ndim = input.ndim
        if self.mode == "circular" and ndim not in (self.n + 1, self.n + 2):
            raise ValueError(f"expected {self.n + 1}D or {self.n + 2}D input (got {ndim}D "
                             "input)")
        k = len(self.padding) // 2
        if k <= ndim and (len(self.padding) % 2 or k not in (1, 2, 3)
                          or ndim not in (k + 1, k + 2)):
            raise NotImplementedError(
                f"Padding size {len(self.padding)} is not supported for {ndim}D input tensor.\n"
                "Supported combinations for non-constant padding:\n"
                "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")

    def forward(self, input):
        self._check_input_dim(input)
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(Module):
    n = 1

    def __init__(self, padding, value):
        super().__init__()
        self.padding, self.value = _padding(padding, self.n), value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


_PAD_DOC = """

    ``padding``: an int (the same on every side) or a tuple of {size} ints
    ``(left, right{more})`` (the last dim's pair first).

    Shapes: {shapes}

    Raises ValueError (from :func:`~chainrule.nn.functional.pad`) for a padding longer than
    twice the input's dims.{raises}"""

_SHAPES = {1: "input (C, W) or (N, C, W) -> (\\*, W + left + right).",
           2: "input (C, H, W) or (N, C, H, W) -> (\\*, H + top + bottom, W + left +\n"
              "    right).",
           3: "input (C, D, H, W) or (N, C, D, H, W) -> (\\*, D + front + back, H + top +\n"
              "    bottom, W + left + right)."}
_MORE = {1: "", 2: ", top, bottom", 3: ", top, bottom, front, back"}
_NONCONSTANT_RAISES = {
    "reflect": " Raises RuntimeError when a pad is not smaller than its dim,\n"
               "    NotImplementedError for an input of another number of dims (PyTorch's\n"
               "    combinations).",
    "replicate": " Raises NotImplementedError for an input of another number of dims\n"
                 "    (PyTorch's combinations).",
    "circular": " Raises ValueError for an input of another number of dims,\n"
                "    RuntimeError when a pad is larger than its dim.",
}


def _pad_class(name, n, base, doc, mode=None):
    attrs = {"n": n, "__module__": __name__}
    raises = ""
    if mode is not None:
        attrs["mode"] = mode
        raises = _NONCONSTANT_RAISES[mode]
    attrs["__doc__"] = doc + _PAD_DOC.format(size=2 * n, more=_MORE[n], shapes=_SHAPES[n],
                                             raises=raises)
    return type(name, (base,), attrs)


ZeroPad1d, ZeroPad2d, ZeroPad3d = (
    _pad_class(f"ZeroPad{n}d", n, _ZeroPadNd, f"Pad the last {n} dim(s) with zeros.")
    for n in (1, 2, 3))
ConstantPad1d, ConstantPad2d, ConstantPad3d = (
    _pad_class(f"ConstantPad{n}d", n, _ConstantPadNd,
               f"Pad the last {n} dim(s) with ``value`` (``ConstantPad{n}d(padding, value)``).")
    for n in (1, 2, 3))
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = (
    _pad_class(f"ReflectionPad{n}d", n, _PadNd,
               f"Pad the last {n} dim(s) with their reflection (the edge not repeated).",
               "reflect") for n in (1, 2, 3))
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = (
    _pad_class(f"ReplicationPad{n}d", n, _PadNd,
               f"Pad the last {n} dim(s) by repeating the edge values.", "replicate")
    for n in (1, 2, 3))
CircularPad1d, CircularPad2d, CircularPad3d = (
    _pad_class(f"CircularPad{n}d", n, _PadNd,
               f"Pad the last {n} dim(s) by wrapping around (periodic padding).", "circular")
    for n in (1, 2, 3))


# --- pixel shuffle -----------------------------------------------------------------------

class PixelShuffle(Module):
    """(\\*, C r^2, H, W) -> (\\*, C, H r, W r), ``r = upscale_factor``
    (:func:`~chainrule.nn.functional.pixel_shuffle`, which raises RuntimeError for fewer
    than 3 dims or a channel count not divisible by ``r^2``)."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(\\*, C, H r, W r) -> (\\*, C r^2, H, W), ``r = downscale_factor``
    (:func:`~chainrule.nn.functional.pixel_unshuffle`, which raises RuntimeError for fewer
    than 3 dims or a height or width not divisible by ``r``)."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class LocalResponseNorm(Module):
    """Local response normalisation across channels (``F.local_response_norm``), as
    ``torch.nn.LocalResponseNorm``: input (N, C, ...), output of the same shape. Raises
    ValueError for input of fewer than 3 dims."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CTCLoss(_Loss):
    """:func:`~chainrule.nn.functional.ctc_loss` with the constructor's ``blank``,
    ``reduction`` and ``zero_infinity``; ``forward(log_probs, targets, input_lengths,
    target_lengths)``, log_probs (T, N, C)."""

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)
