"""Transposed convolution, resampling, instance normalisation and im2col/col2im
(``torch.nn``'s names and arguments), composed of chainrule's differentiable ops.

- ``conv_transpose1d/2d/3d``: one GEMM (input x weight: every input position's contribution
  to its output window) and a col2im, the adjoint of :mod:`.conv`'s window gather: one
  accumulating ``index_put`` per kernel tap into a strided slice of the output. It is the
  VJP of convolution with respect to its input, as PyTorch's.
- ``unfold`` (im2col) gathers the windows as convolution does; ``fold`` (col2im) is the
  same scatter-add as the transposed convolution.
- ``interpolate``: nearest modes are an index gather along each spatial dim, linear modes
  two gathers weighted by NumPy-built coefficients (separable, as PyTorch's kernels), and
  ``'area'`` is adaptive average pooling. Source indices follow PyTorch's CPU kernels
  (float32 scale for the nearest modes), so the picks agree exactly.
- ``instance_norm``: per-sample, per-channel statistics over the spatial dims.

No op here has a derivative rule of its own: gradients of every order and forward mode come
from the ops used.
"""

from __future__ import annotations

import itertools
import math
import numbers
import warnings

import numpy as np

from .. import ops as _ops
from .._dispatch import name_errors
from .._state import no_grad
from ..backend import dtype_kind, numpy_dtype
from . import conv as _cv
from ._module import Module
from .conv import _batched, _pad, _tup, _unbatch, _windows
from .functional import (
    _beside,
    _not_a_tensor,
    _refuse_running_stats_under_vmap,
    _size,
    _t,
    _tensor_args,
)
from .modules import _NormBase

__all__ = ["ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "Upsample",
           "UpsamplingNearest2d", "UpsamplingBilinear2d", "InstanceNorm1d", "InstanceNorm2d",
           "InstanceNorm3d", "Unfold", "Fold"]
FUNCTIONAL = ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "interpolate",
              "upsample",
              "upsample_nearest", "upsample_bilinear", "instance_norm", "unfold", "fold",
              "affine_grid", "grid_sample"]


# --- col2im ------------------------------------------------------------------------------

def _col2im(cols, full, stride, dilation):
    """Sum the windows ``cols`` (B, C, \\*O, \\*K) into a (B, C, \\*full) tensor: tap ``j``
    of window ``o`` along dim ``i`` lands at ``o * stride[i] + j * dilation[i]``. One
    accumulating ``index_put`` per tap into a strided slice (the adjoint of the gather in
    :func:`chainrule.nn.conv._windows`)."""
    n = len(full)
    b, c = cols.shape[:2]
    outs, ks = tuple(cols.shape[2:2 + n]), tuple(cols.shape[2 + n:])
    out = cols.new_zeros((b, c, *full))
    if 0 in outs:
        return out
    for js in itertools.product(*(range(k) for k in ks)):
        at = (slice(None), slice(None)) + tuple(
            slice(j * d, j * d + (o - 1) * s + 1, s)
            for j, o, s, d in zip(js, outs, stride, dilation))
        out = _ops.index_put(out, at, cols[(slice(None),) * (2 + n) + js], accumulate=True)
    return out


def _crop(x, pads):
    """``x`` (B, C, \\*S) without ``pads[i]`` entries on both sides of spatial dim i."""
    if not any(pads):
        return x
    return x[(slice(None), slice(None)) + tuple(slice(p, L - p)
                                                for p, L in zip(pads, x.shape[2:]))]


# --- transposed convolution --------------------------------------------------------------

def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation,
                    n, fname):
    x, unbatched = _batched(input, n, fname)
    w = _t(weight)
    if w.ndim != n + 2:
        if weight is None:  # (a module's, through functional_call)
            raise _not_a_tensor(f"conv_transpose{n}d", "weight", 2, weight)
        raise RuntimeError(f"{fname}: expected weight with {n + 2} dimensions (C_in, C_out/"
                           f"groups, *kernel), got weight of shape {_size(w.shape)}")
    if isinstance(padding, str):
        raise TypeError(f"{fname}: argument 'padding' must be an int or a tuple of ints, not "
                        f"str ({padding!r})")
    s, d = _tup(stride, n, "stride", fname), _tup(dilation, n, "dilation", fname)
    p = _tup(padding, n, "padding", fname)
    op = _tup(output_padding, n, "output_padding", fname)
    if min(s) <= 0:
        raise RuntimeError(f"{fname}: non-positive stride is not supported (stride={s})")
    if min(d) <= 0:
        raise RuntimeError(f"{fname}: dilation should be greater than zero (dilation={d})")
    if min(p) < 0:
        raise RuntimeError(f"{fname}: negative padding is not supported (padding={p})")
    if min(op) < 0 or any(o >= max(si, di) for o, si, di in zip(op, s, d)):
        raise RuntimeError(f"{fname}: output padding must be smaller than either stride or "
                           f"dilation, but got output_padding={op}, stride={s} and "
                           f"dilation={d}")
    c_in, cg_out, *k = w.shape
    groups = int(groups)
    if groups <= 0 or c_in % groups:
        raise RuntimeError(f"{fname}: groups={groups} must be positive and divide the weight's "
                           f"C_in={c_in} (weight of shape {_size(w.shape)})")
    if x.shape[1] != c_in:
        raise RuntimeError(f"{fname}: Given transposed=1, weight of size {_size(w.shape)}, "
                           f"expected input{_size(x.shape)} to have {c_in} channels, but got "
                           f"{x.shape[1]} channels instead")
    c_out = cg_out * groups
    if bias is not None and tuple(_t(bias).shape) != (c_out,):
        raise RuntimeError(f"{fname}: Given transposed=1, weight of size {_size(w.shape)}, "
                           f"expected bias to be 1-dimensional with {c_out} elements, but got "
                           f"bias of size {_size(_t(bias).shape)} instead")
    ins = tuple(x.shape[2:])
    full = [(L - 1) * si + di * (ki - 1) + 1 + oi for L, si, di, ki, oi in zip(ins, s, d, k, op)]
    outs = [f - 2 * pi for f, pi in zip(full, p)]
    if min(outs) < 1:
        raise RuntimeError(f"{fname}: Given input size per channel: "
                           f"({' x '.join(map(str, ins))}). Calculated output size per "
                           f"channel: ({' x '.join(map(str, outs))}). Output size is too small")
    b, cg_in, taps, at = x.shape[0], c_in // groups, math.prod(k), math.prod(ins)
    if groups == 1:  # one GEMM: (B * L, C_in) @ (C_in, C_out * K)
        cols = _ops.matmul(_ops.movedim(x, 1, -1).reshape(b * at, c_in),
                           w.reshape(c_in, c_out * taps))
        cols = _ops.movedim(cols.reshape(b, *ins, c_out, *k), 1 + n, 1)
    else:
        xg = x.reshape(b, groups, cg_in, at).transpose(-1, -2)  # (B, G, L, Cg_in)
        cols = _ops.matmul(xg, w.reshape(groups, cg_in, cg_out * taps))
        cols = _ops.movedim(cols.reshape(b, groups, *ins, cg_out, *k), 2 + n, 2)
        cols = cols.reshape(b, c_out, *ins, *k)
    out = _crop(_col2im(cols, full, s, d), p)  # (B, C_out, *outs)
    if bias is not None:
        out = out + _t(bias).reshape(c_out, *(1,) * n)
    return _unbatch(out, unbatched)


_CONVT_DOC = """Transposed convolution over {n} spatial dim(s): the gradient of
    :func:`conv{n}d` with respect to its input (a "deconvolution"), as PyTorch's.

    Shapes: ``input`` (N, C_in, {sp}) or unbatched (C_in, {sp}); ``weight`` (C_in,
    C_out / groups, {ks}); ``bias`` (C_out,) or None; output (N, C_out, {osp}) (unbatched:
    without N), each output size ``(L - 1) stride - 2 padding + dilation (k - 1) +
    output_padding + 1``. ``stride``, ``padding`` (removed from both ends of the output),
    ``output_padding`` (added at the end; smaller than stride or dilation) and ``dilation``:
    an int or a tuple per spatial dim. ``groups`` splits the channels into that many
    independent transposed convolutions. Dtype: that of ``input`` and ``weight``.

    Raises
    ------
    RuntimeError
        An input that is not {n1}-D or {n2}-D, a weight that is not {n2}-D, input channels
        other than ``weight.shape[0]``, ``groups`` not dividing them, a bias of the wrong
        shape, non-positive stride or dilation, negative padding, an output padding not
        smaller than stride or dilation, or an empty output.
    TypeError
        A padding string (transposed convolutions take numbers only).
    """


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 1, "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 2, "conv_transpose2d")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 3, "conv_transpose3d")


conv_transpose1d.__doc__ = _CONVT_DOC.format(n=1, sp="L", ks="k", osp="L_out", n1=2, n2=3)
conv_transpose2d.__doc__ = _CONVT_DOC.format(n=2, sp="H, W", ks="kH, kW", osp="H_out, W_out",
                                             n1=3, n2=4)
conv_transpose3d.__doc__ = _CONVT_DOC.format(n=3, sp="D, H, W", ks="kD, kH, kW",
                                             osp="D_out, H_out, W_out", n1=4, n2=5)


# --- unfold / fold -----------------------------------------------------------------------

def _fold_args(fname, kernel_size, dilation, padding, stride):
    k = _tup(kernel_size, 2, "kernel_size", fname)
    d, p = _tup(dilation, 2, "dilation", fname), _tup(padding, 2, "padding", fname)
    s = _tup(stride, 2, "stride", fname)
    for name, v in (("kernel size", k), ("stride", s), ("dilation", d)):
        if min(v) <= 0:
            raise RuntimeError(f"{fname}: {name} should be greater than zero, but got "
                               f"{name.replace(' ', '_')}={v}")
    if min(p) < 0:
        raise RuntimeError(f"{fname}: padding should be non-negative, but got padding={p}")
    return k, d, p, s


def _blocks(size, k, d, p, s):
    return tuple((L + 2 * pi - di * (ki - 1) - 1) // si + 1
                 for L, ki, di, pi, si in zip(size, k, d, p, s))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding local blocks (im2col): input (N, C, H, W) or unbatched (C, H, W) ->
    (N, C kH kW, L) (or without N), ``L = H_out W_out`` blocks in row-major order, each
    column ordered channel first, then kernel row, then kernel column, as PyTorch.
    ``kernel_size``, ``dilation``, ``padding`` (zeros) and ``stride``: an int or a pair.

    Raises
    ------
    RuntimeError
        An input that is not 3-D or 4-D, a non-positive kernel size, stride or dilation,
        negative padding, or no complete block.
    """
    x, unbatched = _batched(input, 2, "unfold")
    k, d, p, s = _fold_args("unfold", kernel_size, dilation, padding, stride)
    blocks = _blocks(x.shape[2:], k, d, p, s)
    if min(blocks) < 1:
        raise RuntimeError(f"unfold: Given input with spatial size {tuple(x.shape[2:])}, "
                           f"kernel_size={k}, dilation={d}, padding={p}, calculated shape of "
                           f"the array of sliding blocks as {blocks}, but its components must "
                           "be at least one.")
    pos = [np.arange(o)[:, None] * si + np.arange(ki)[None, :] * di
           for o, ki, si, di in zip(blocks, k, s, d)]
    win = _windows(_pad(x, [(pi, pi) for pi in p], 0.0), pos)  # (B, C, oH, oW, kH, kW)
    b, c = x.shape[:2]
    out = win.permute(0, 1, 4, 5, 2, 3).reshape(b, c * k[0] * k[1], blocks[0] * blocks[1])
    return _unbatch(out, unbatched)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Combine sliding local blocks into a tensor (col2im, the adjoint of :func:`unfold`;
    overlapping entries add up): input (N, C kH kW, L) or unbatched (C kH kW, L) ->
    (N, C, H, W) (or without N), ``(H, W) = output_size``; ``L`` must be the number of
    blocks :func:`unfold` takes from an (H, W) plane with the same arguments.

    Raises
    ------
    RuntimeError
        An input that is not 2-D or 3-D, a channel dim not divisible by ``kH kW``, a block
        count other than the blocks of ``output_size``, a non-positive kernel size, stride
        or dilation, or negative padding.
    """
    x = _t(input)
    if x.ndim not in (2, 3) or 0 in x.shape[-2:]:
        raise RuntimeError(f"fold: Expected 2D or 3D (batch mode) tensor for input with "
                           f"possibly 0 batch size and non-zero dimensions for input, but got: "
                           f"{_size(x.shape)}")
    unbatched = x.ndim == 2
    if unbatched:
        x = _ops.unsqueeze(x, 0)
    size = _tup(output_size, 2, "output_size", "fold")
    k, d, p, s = _fold_args("fold", kernel_size, dilation, padding, stride)
    kk = k[0] * k[1]
    if x.shape[1] % kk:
        raise RuntimeError(f"fold: Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={x.shape[1]} and "
                           f"kernel_size={k}.")
    blocks = _blocks(size, k, d, p, s)
    if min(blocks) < 1:
        raise RuntimeError(f"fold: Given output_size={size}, kernel_size={k}, dilation={d}, "
                           f"padding={p}, stride={s}, calculated shape of the array of sliding "
                           f"blocks as {blocks}, but its components must be at least one.")
    if x.shape[2] != blocks[0] * blocks[1]:
        raise RuntimeError(f"fold: Given output_size={size}, kernel_size={k}, dilation={d}, "
                           f"padding={p}, stride={s}, expected size of input's dimension 2 to "
                           f"match the calculated number of sliding blocks {blocks[0]} * "
                           f"{blocks[1]} = {blocks[0] * blocks[1]}, but got "
                           f"input.size(2)={x.shape[2]}.")
    b, c = x.shape[0], x.shape[1] // kk
    cols = x.reshape(b, c, *k, *blocks).permute(0, 1, 4, 5, 2, 3)  # (B, C, oH, oW, kH, kW)
    full = [L + 2 * pi for L, pi in zip(size, p)]
    return _unbatch(_crop(_col2im(cols, full, s, d), p), unbatched)


# --- interpolate -------------------------------------------------------------------------

_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "lanczos", "area",
          "nearest-exact")
_LINEAR = {"linear": 3, "bilinear": 4, "trilinear": 5}


def _is_int(v):
    return isinstance(v, numbers.Integral) or (hasattr(v, "ndim") and v.ndim == 0 and
                                               dtype_kind(v.dtype) in "iu")


def _nearest_index(L, o, scale, exact, ft, legacy):
    """PyTorch's nearest source index per output entry, as its CPU forward kernels compute
    it. ``s = 1 / scale_factor`` or ``L / o``; the floor is taken after rounding to float32
    (``floorf``); indices are clamped to ``L - 1``.

    - 1-d and 3-d (``legacy=False``), in the input's float type ``ft``: ``floor(i s)``
      (``'nearest'``) or ``floor(max((i + 1/2) s - 1/2, 0) + 1/2)`` (``'nearest-exact'``).
    - 2-d (``legacy=True``, ``nearest_idx``): ``s`` in float32; ``'nearest'`` copies when
      ``o == L``, takes ``i // 2`` when ``o == 2 L``, else ``floor(i s)``;
      ``'nearest-exact'`` is ``floor((i + 1/2) s)``.
    """
    i = np.arange(o)
    if legacy:
        sc = np.float32(1.0 / scale) if scale is not None and scale > 0 else \
            np.float32(L) / np.float32(o)
        if exact:
            src = (i + 0.5) * np.float64(sc)
        elif o == L:
            return i
        elif o == 2 * L:
            return i >> 1
        else:
            src = i.astype(np.float32) * sc
    else:
        i = i.astype(ft)
        sc = ft(1.0 / scale) if scale is not None and scale > 0 else ft(L) / ft(o)
        if exact:
            src = np.maximum(sc * (i + ft(0.5)) - ft(0.5), ft(0)) + ft(0.5)
        else:
            src = sc * i
    return np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), L - 1)


def _linear_weights(L, o, scale, align_corners):
    """PyTorch's linear source indices ``i0, i1`` and weights ``l0, l1`` per output entry
    (``compute_source_index_and_lambda``, in float64; an output as long as the input is a
    copy, whatever the scale factor)."""
    i = np.arange(o)
    if o == L:
        return i, i, np.ones(o), np.zeros(o)
    if align_corners:
        ratio = (L - 1) / (o - 1) if o > 1 else 0.0
        src = ratio * i
    else:
        ratio = 1.0 / scale if scale is not None and scale > 0 else L / o
        src = np.maximum(ratio * (i + 0.5) - 0.5, 0.0)
    i0 = np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), L - 1)
    lam = np.clip(src - i0, 0.0, 1.0)
    i1 = i0 + (i0 < L - 1)
    return i0, i1, 1.0 - lam, lam


def _cubic_weights(L, o, scale, align_corners, A=-0.75):
    """PyTorch's bicubic source taps (four index arrays, clamped into ``[0, L - 1]``) and
    their weights (Keys' cubic convolution with ``A = -0.75``) per output entry; the source
    position is not clamped at 0, as PyTorch's ``area_pixel_compute_source_index`` for
    cubic."""
    i = np.arange(o)
    if o == L:
        eye = [np.zeros(o), np.ones(o), np.zeros(o), np.zeros(o)]
        return [i, i, i, i], eye
    if align_corners:
        src = ((L - 1) / (o - 1) if o > 1 else 0.0) * i
    else:
        ratio = 1.0 / scale if scale is not None and scale > 0 else L / o
        src = ratio * (i + 0.5) - 0.5
    i0 = np.floor(src).astype(np.int64)
    t = src - i0

    def near(x):  # |x| <= 1
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A

    weights = [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]
    taps = [np.clip(i0 - 1 + k, 0, L - 1) for k in range(4)]
    return taps, weights


def _along(x, dim, idx):
    """``x`` indexed with the int array ``idx`` along ``dim`` (a gather; its gradient is a
    scatter-add)."""
    return x[(slice(None),) * dim + (idx,)]


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Down/up-sample ``input`` (N, C, L), (N, C, H, W) or (N, C, D, H, W) to ``size`` or by
    ``scale_factor`` (a number, or one per spatial dim; output size
    ``floor(L scale_factor)``), as ``torch.nn.functional.interpolate``.

    Modes: ``'nearest'`` (PyTorch's legacy rule: source ``floor(i scale)``),
    ``'nearest-exact'`` (``floor((i + 0.5) scale)``), ``'linear'`` (3-D input),
    ``'bilinear'`` and ``'bicubic'`` (4-D input; Keys' cubic convolution, ``A = -0.75``,
    taps clamped at the border, no clamping of the result), ``'trilinear'`` (5-D input),
    all with ``align_corners``
    (default False: pixel centres; True: corner pixels aligned, the scale factor unused),
    and ``'area'`` (adaptive average pooling). The scale used for source positions is
    ``1 / scale_factor`` when a scale factor is given (unless
    ``recompute_scale_factor=True``), else ``in / out``, as PyTorch. The output keeps the
    input's dtype; gradients flow to ``input``.

    Raises
    ------
    ValueError
        Both or neither of ``size`` and ``scale_factor``, a ``size``/``scale_factor``
        sequence of the wrong length, ``align_corners`` with a nearest or area mode,
        ``recompute_scale_factor=True`` with ``size``, or ``antialias`` outside bilinear.
    TypeError
        A non-integer ``size``.
    RuntimeError
        An output size below 1.
    NotImplementedError
        An unknown mode or an input that is not 3-D, 4-D or 5-D (PyTorch's message); a
        linear mode on an input of the wrong rank (PyTorch's message); bicubic on an input
        that is not 4-D (PyTorch's message); ``'lanczos'`` (which chainrule lacks) or
        ``antialias=True``, each naming what is missing.
    """
    x = _t(input)
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("interpolate: align_corners option can only be set with the "
                             "interpolating modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = x.ndim - 2
    spatial = list(x.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("interpolate: only one of size or scale_factor should be defined")
    if size is not None:
        scales = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "interpolate: Input and output must have the same number of spatial "
                    f"dimensions, but got input with spatial dimensions of {spatial} and "
                    f"output size of {size}. Please provide input tensor in (N, C, d1, d2, "
                    "...,dK) format and output size in (o1, o2, ...,oK) format.")
            if not all(_is_int(v) for v in size):
                raise TypeError("interpolate: expected size to be one of int or Tuple[int] or "
                                "Tuple[int, int] or Tuple[int, int, int], but got size with "
                                f"types {[type(v) for v in size]}")
            out_size = [int(v) for v in size]
        else:
            if not _is_int(size):
                raise TypeError("interpolate: expected size to be one of int or Tuple[int] "
                                f"or Tuple[int, int] or Tuple[int, int, int], but got size of "
                                f"type {type(size)}")
            out_size = [int(size)] * dim
    elif scale_factor is not None:
        out_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "interpolate: Input and scale_factor must have the same number of spatial "
                    f"dimensions, but got input with spatial dimensions of {spatial} and "
                    f"scale_factor of shape {scale_factor}. Please provide input tensor in "
                    "(N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) "
                    "format.")
            scales = [float(v) for v in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
    else:
        raise ValueError("interpolate: either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("interpolate: recompute_scale_factor is not meaningful with an "
                         "explicit size.")
    if mode == "area" and out_size is None:
        recompute_scale_factor = True
    if out_size is None:
        out_size = [int(L * sc) for L, sc in zip(spatial, scales)]
        if recompute_scale_factor:
            scales = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and x.ndim == 4):
        raise ValueError("interpolate: Anti-alias option is restricted to bilinear, bicubic, "
                         "and lanczos modes and requires a 4-D tensor as input")
    if mode in _LINEAR and x.ndim in (3, 4, 5) and x.ndim != _LINEAR[mode]:
        need = {3: "linear", 4: "bilinear", 5: "trilinear"}
        raise NotImplementedError(f"interpolate: Got {x.ndim}D input, but {mode} mode needs "
                                  f"{_LINEAR[mode]}D input (use mode={need[x.ndim]!r})")
    if mode not in _MODES or x.ndim not in (3, 4, 5) or (mode == "bicubic" and x.ndim != 4):
        raise NotImplementedError(
            f"interpolate: Input Error: Only 3D, 4D and 5D input Tensors supported (got "
            f"{x.ndim}D) for the modes: nearest | linear | bilinear | bicubic | trilinear | "
            f"lanczos | area | nearest-exact (got {mode})")
    if mode == "lanczos":
        raise NotImplementedError(f"interpolate: mode={mode!r} is not implemented in chainrule "
                                  "(supported: 'nearest', 'nearest-exact', 'linear', "
                                  "'bilinear', 'bicubic', 'trilinear', 'area')")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not implemented in "
                                  "chainrule")
    if min(out_size) <= 0 or min(spatial) <= 0:
        names = ("D", "H", "W")[3 - dim:]
        raise RuntimeError(
            "interpolate: Input and output sizes should be greater than 0, but got input ("
            + ", ".join(f"{a}: {v}" for a, v in zip(names, spatial)) + ") and output ("
            + ", ".join(f"{a}: {v}" for a, v in zip(names, out_size)) + ")")
    if mode == "area":
        return getattr(_cv, f"adaptive_avg_pool{dim}d")(x, tuple(out_size))
    scales = [None] * dim if scales is None else scales
    ft = np.float64 if numpy_dtype(x.dtype) == np.float64 else np.float32  # PyTorch's opmath
    out, dt = x, numpy_dtype(x.dtype)
    for i in reversed(range(dim)):  # the last dim first, as PyTorch's separable kernels
        L, o, sc = spatial[i], out_size[i], scales[i]
        if mode in ("nearest", "nearest-exact"):
            pick = _nearest_index(L, o, sc, mode == "nearest-exact", ft, dim == 2)
            out = _along(out, 2 + i, pick)
            continue
        shape = (o,) + (1,) * (dim - 1 - i)
        if mode == "bicubic":
            taps, weights = _cubic_weights(L, o, sc, align_corners)
            terms = [_along(out, 2 + i, idx) * _beside(x, w.reshape(shape).astype(dt))
                     for idx, w in zip(taps, weights)]
            out = terms[0] + terms[1] + terms[2] + terms[3]
            continue
        i0, i1, l0, l1 = _linear_weights(L, o, sc, align_corners)
        w0 = _beside(x, l0.reshape(shape).astype(dt))
        w1 = _beside(x, l1.reshape(shape).astype(dt))
        out = _along(out, 2 + i, i0) * w0 + _along(out, 2 + i, i1) * w1
    return out.contiguous()  # row-major, as PyTorch's


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of :func:`interpolate` (warns, as PyTorch)."""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: :func:`interpolate` with ``mode='nearest'`` (warns, as PyTorch)."""
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use "
                  "nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: :func:`interpolate` with ``mode='bilinear', align_corners=True`` (warns,
    as PyTorch)."""
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use "
                  "nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# --- instance norm -----------------------------------------------------------------------

def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Instance normalisation of (N, C, \\*spatial) inputs: each sample's channel is
    normalised by its own mean and biased variance over the spatial dims
    (``use_input_stats=True``), then scaled by ``weight`` and shifted by ``bias`` (C,).

    With ``use_input_stats`` and running statistics (C,), these are updated in place
    without gradient: ``running = (1 - momentum) running + momentum stat``, ``stat`` the
    batch average of the per-instance means and unbiased variances, as PyTorch. With
    ``use_input_stats=False`` the running statistics normalise.

    Raises
    ------
    ValueError
        ``use_input_stats`` with a single spatial entry (or none); one of ``running_mean``
        and ``running_var`` given without the other.
    RuntimeError
        An input with fewer than 2 dims, statistics, weight or bias with other than C
        entries, or ``use_input_stats=False`` without running statistics.
    """
    x = _t(input)
    s = tuple(x.shape)
    if use_input_stats and math.prod(s[2:]) == 1:
        raise ValueError(f"instance_norm: Expected more than 1 spatial element when training, "
                         f"got input size {_size(s)}")
    if use_input_stats and (running_mean is None) != (running_var is None):
        raise ValueError("instance_norm: running_mean and running_var must either both be None "
                         "or neither be None")
    if len(s) < 2:
        raise RuntimeError(f"instance_norm: expected an input with 2 or more dimensions (N, C, "
                           f"*), got {_size(s)}")
    n, c = s[:2]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and math.prod(_t(t).shape) != c:
            raise RuntimeError(f"instance_norm: {name} should contain {n * c} elements not "
                               f"{n * math.prod(_t(t).shape)}")
    dims = tuple(range(2, len(s)))
    bshape = (c,) + (1,) * len(dims)
    if use_input_stats:
        mean = x.mean(dim=dims, keepdim=True)
        centered = x - mean
        var = (centered * centered).mean(dim=dims, keepdim=True)
        count = math.prod(s[2:])
        if running_mean is not None:  # under vmap: unbatched stats refused, as batch_norm's
            _refuse_running_stats_under_vmap(x, running_mean, running_var)
        with no_grad():
            if running_mean is not None:
                new = (1 - momentum) * running_mean.detach() + \
                    momentum * mean.detach().reshape(n, c).mean(0)
                running_mean.copy_(new.to(running_mean.dtype))
            if running_var is not None:
                unbiased = var.detach().reshape(n, c) * (count / (count - 1))
                new = (1 - momentum) * running_var.detach() + momentum * unbiased.mean(0)
                running_var.copy_(new.to(running_var.dtype))
        out = centered / _ops.sqrt(var + eps)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("instance_norm: Expected running_mean and running_var to be "
                               "defined when use_input_stats is false")
        out = (x - _t(running_mean).reshape(bshape)) / _ops.sqrt(
            _t(running_var).reshape(bshape) + eps)
    if weight is not None:
        out = out * _t(weight).reshape(bshape)
    if bias is not None:
        out = out + _t(bias).reshape(bshape)
    return out


# --- spatial transformers ----------------------------------------------------------------

def affine_grid(theta, size, align_corners=None):
    """The sampling grid of a batch of 2-d or 3-d affine maps, as
    ``torch.nn.functional.affine_grid``: ``theta`` (N, 2, 3) and ``size`` ``(N, C, H, W)``
    give a grid (N, H, W, 2) whose ``[n, i, j]`` is ``theta[n] @ (x_j, y_i, 1)``, with
    ``x_j``, ``y_i`` the pixel positions normalised to [-1, 1] (corner pixel centres at
    -1 and 1 with ``align_corners=True``; else the pixel edges, default False); ``theta``
    (N, 3, 4) and ``size`` ``(N, C, D, H, W)`` likewise give (N, D, H, W, 3), whose
    ``[n, k, i, j]`` is ``theta[n] @ (x_j, y_i, z_k, 1)``. Differentiable in ``theta``.

    Raises
    ------
    ValueError
        ``theta`` not of shape (N, 2, 3) for a 4-element ``size`` (or (N, 3, 4) for a
        5-element one), or a non-positive size.
    NotImplementedError
        A ``size`` of other than 4 or 5 elements (PyTorch's message).
    """
    theta = _t(theta)
    if align_corners is None:
        align_corners = False
    size = tuple(int(v) for v in size)
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    n, N, spatial = len(size) - 2, size[0], size[2:]
    if tuple(theta.shape) != (N, n, n + 1) or not dtype_kind(theta.dtype) == "f":
        raise ValueError(f"Expected a batch of {n}D affine matrices of shape Nx{n}x{n + 1} for "
                         f"size {size}. Got {tuple(theta.shape)}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")

    dt = numpy_dtype(theta.dtype)

    def lin(n):  # PyTorch's linspace(-1, 1, n) in theta's dtype (each entry rounded once,
        #         as its fused multiply-add), then (n - 1) / n
        if n <= 1:
            return np.zeros(max(n, 0), dt)
        wide = np.float64 if dt == np.float32 else np.longdouble
        step = wide(dt.type(2.0) / dt.type(n - 1))
        i = np.arange(n)
        v = np.where(i < n // 2, -1 + step * i.astype(wide),
                     1 - step * (n - 1 - i).astype(wide)).astype(dt)
        return v if align_corners else v * dt.type(n - 1) / dt.type(n)

    axes = np.meshgrid(*(lin(L) for L in spatial), indexing="ij")  # (*spatial) each
    base = np.stack([*reversed(axes), np.ones_like(axes[0])], -1)  # (x, y[, z], 1)
    base = _beside(theta, base.reshape(1, math.prod(spatial), n + 1).astype(dt))
    grid = _ops.matmul(base, _ops.transpose(theta, 1, 2))  # (N, prod(spatial), n)
    return grid.reshape(N, *spatial, n)


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, twice_low, twice_high):
    """PyTorch's ``reflect_coordinates``: ``coord`` folded into [low, high] by reflection."""
    if twice_low == twice_high:
        return coord * 0
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    c = _ops.abs(coord - lo)
    flips = np.floor(np.asarray(c.detach().numpy()) / span)
    extra = c - _beside(c, (flips * span).astype(numpy_dtype(c.dtype)))
    even = _beside(c, flips % 2 == 0)
    return _ops.where(even, extra + lo, span - extra + lo)


def _source_coord(coord, size, padding_mode, align_corners):
    c = _unnormalize(coord, size, align_corners)
    if padding_mode == "border":
        c = _ops.clamp(c, 0, size - 1)
    elif padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else \
            _reflect(c, -1, 2 * size - 1)
        c = _ops.clamp(c, 0, size - 1)
    return c


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` (N, C, H, W) at the normalised positions ``grid`` (N, Ho, Wo, 2),
    ``grid[..., 0]`` the x (width) and ``grid[..., 1]`` the y (height) coordinate in
    [-1, 1], as ``torch.nn.functional.grid_sample``; output (N, C, Ho, Wo). A volumetric
    ``input`` (N, C, D, H, W) takes a grid (N, Do, Ho, Wo, 3) whose ``[..., 2]`` is the z
    (depth) coordinate; output (N, C, Do, Ho, Wo).

    ``mode``: ``'bilinear'`` (trilinear for 5-d inputs; differentiable in ``input`` and
    ``grid``) or ``'nearest'`` (round half to even; no gradient to ``grid``).
    ``padding_mode``: ``'zeros'`` (samples outside read 0), ``'border'`` (coordinates
    clamped to the edge, no gradient to a clamped coordinate) or ``'reflection'``
    (reflected at the border). ``align_corners`` as :func:`affine_grid` (default False).

    Raises
    ------
    ValueError
        An unknown ``mode`` or ``padding_mode``.
    RuntimeError
        Inputs of the wrong rank, batch sizes / the grid's last dim that do not match, or
        ``mode='bicubic'`` with a 5-d input (PyTorch's messages).
    NotImplementedError
        ``mode='bicubic'`` (4-d input).
    """
    x, g = _t(input), _t(grid)
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if x.ndim not in (4, 5) or g.ndim != x.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(x.shape)} and grid "
                           f"with sizes {list(g.shape)}")
    n = x.ndim - 2
    if mode == "bicubic":
        if n == 3:
            raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
        raise NotImplementedError("grid_sample: mode='bicubic' is not implemented in chainrule")
    N, C, *sizes = x.shape
    if g.shape[0] != N or g.shape[-1] != n:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {n} in last dimension "
                           f"and the same batch size as input, but got grid with sizes "
                           f"{list(g.shape)} and input with sizes {list(x.shape)}")
    if align_corners is None:
        align_corners = False
    outs = tuple(g.shape[1:-1])
    # spatial dim i (D, H, W order) is read from the grid's coordinate n - 1 - i (x: W)
    coords = [_source_coord(g[..., n - 1 - i], L, padding_mode, align_corners)
              for i, L in enumerate(sizes)]  # (N, *outs) each
    flat = x.reshape(N, C, math.prod(sizes))
    P, dt = math.prod(outs), numpy_dtype(x.dtype)

    def pick(idx):
        """input at the integer positions ``idx`` (one array (N, *outs) per spatial dim),
        0 outside."""
        inside, index = True, 0
        for a, L in zip(idx, sizes):
            inside = inside & (a >= 0) & (a < L)
            index = index * L + np.clip(a, 0, L - 1)
        index = np.broadcast_to(index.astype(np.int64).reshape(N, 1, P), (N, C, P))
        vals = _ops.gather(flat, 2, _beside(x, np.ascontiguousarray(index)))
        mask = _beside(x, inside.reshape(N, 1, P).astype(dt))
        return (vals * mask).reshape(N, C, *outs)

    vs = [np.asarray(c.detach().numpy()) for c in coords]
    if mode == "nearest":
        # the grid gets a zero gradient (not none), as PyTorch's
        finite = _beside(x, np.logical_and.reduce([np.isfinite(v) for v in vs]))
        zero = _ops.where(finite, sum(c * 0 for c in reversed(coords)), 0.0)
        with np.errstate(invalid="ignore"):
            near = [np.rint(v) for v in vs]
        near = [np.where(np.isfinite(r), r, -1).astype(np.int64) for r in near]
        return pick(near) + _ops.unsqueeze(zero, 1)
    lows = [np.floor(v) for v in vs]
    ups = [c - _beside(x, lo.astype(dt)) for c, lo in zip(coords, lows)]  # upper weights
    weights = [(1 - u, u) for u in ups]
    lows = [lo.astype(np.int64) for lo in lows]
    out = 0
    for corner in itertools.product((0, 1), repeat=n):  # (the last dim varies fastest)
        w = math.prod(weights[i][corner[i]] for i in reversed(range(n)))
        out = out + pick([lo + c for lo, c in zip(lows, corner)]) * _ops.unsqueeze(w, 1)
    return out


for _name in FUNCTIONAL:  # an error preparing the arguments names the function; None for
    # a Tensor parameter is PyTorch's TypeError naming the argument
    _names = {"affine_grid": ("theta",), "grid_sample": ("input", "grid")}.get(
        _name, ("input", "weight") if _name.startswith("conv_transpose") else ("input",))
    globals()[_name] = _tensor_args(*_names, fname=_name)(name_errors(globals()[_name]))
del _name, _names


# --- modules -----------------------------------------------------------------------------

class _ConvTransposeNd(_cv._ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        name = type(self).__name__
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {name}')
        if isinstance(padding, str):
            raise ValueError(f"{name}: padding must be an int or a tuple of ints, got "
                             f"{padding!r} (no padding strings for transposed convolutions)")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype,
                         output_padding=_tup(output_padding, self._n, "output_padding", name))

    def _output_padding(self, input, output_size):
        """``output_padding``, or the one that gives ``output_size`` (PyTorch's rule)."""
        if output_size is None:
            return self.output_padding
        n, name = self._n, type(self).__name__
        output_size = [int(v) for v in output_size]
        lead = 2 if input.ndim == n + 2 else 1
        if len(output_size) == lead + n:
            output_size = output_size[lead:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.ndim}D input, output_size must "
                             f"have {n} or {lead + n} elements (got {len(output_size)})")
        lo = [(input.shape[lead + i] - 1) * self.stride[i] - 2 * self.padding[i]
              + self.dilation[i] * (self.kernel_size[i] - 1) + 1 for i in range(n)]
        hi = [v + s - 1 for v, s in zip(lo, self.stride)]
        for size, a, b in zip(output_size, lo, hi):
            if size < a or size > b:
                raise ValueError(f"{name}: requested an output size of {output_size}, but "
                                 f"valid sizes range from {lo} to {hi} (for an input of "
                                 f"{_size(input.shape[lead:])})")
        return tuple(v - a for v, a in zip(output_size, lo))

    def forward(self, input, output_size=None):
        x = _t(input)
        op = self._output_padding(x, output_size)
        return _conv_transpose(x, self.weight, self.bias, self.stride, self.padding, op,
                               self.groups, self.dilation, self._n, type(self).__name__)


class ConvTranspose1d(_ConvTransposeNd):
    """1-d transposed convolution, :func:`~chainrule.nn.functional.conv_transpose1d`:
    (N, C_in, L) or (C_in, L) -> (N, C_out, L_out).

    ``weight`` (in_channels, out_channels / groups, k) from ``kaiming_uniform_(a=sqrt(5))``
    and ``bias`` (out_channels,) from U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
    ``fan_in = out_channels / groups * k`` (PyTorch's fan of the transposed weight).
    ``forward(input, output_size=None)``: an ``output_size`` (spatial, or with the batch and
    channel dims) picks the output padding, as PyTorch.

    Raises ValueError for ``groups`` not dividing both channel counts, a ``padding_mode``
    other than ``'zeros'``, a padding string, or an ``output_size`` out of reach.
    """
    _n = 1


class ConvTranspose2d(_ConvTransposeNd):
    """2-d transposed convolution, :func:`~chainrule.nn.functional.conv_transpose2d`:
    (N, C_in, H, W) or (C_in, H, W) -> (N, C_out, H_out, W_out).

    ``weight`` (in_channels, out_channels / groups, kH, kW) from
    ``kaiming_uniform_(a=sqrt(5))`` and ``bias`` (out_channels,) from
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)), ``fan_in = out_channels / groups * kH * kW``, as
    PyTorch. ``forward(input, output_size=None)`` as :class:`ConvTranspose1d`.

    Raises ValueError for ``groups`` not dividing both channel counts, a ``padding_mode``
    other than ``'zeros'``, a padding string, or an ``output_size`` out of reach.
    """
    _n = 2


class ConvTranspose3d(_ConvTransposeNd):
    """3-d transposed convolution, :func:`~chainrule.nn.functional.conv_transpose3d`:
    (N, C_in, D, H, W) or (C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out); ``weight``
    (in_channels, out_channels / groups, kD, kH, kW), its initialisation, ``forward`` and
    errors as :class:`ConvTranspose2d`'s.
    """
    _n = 3


class Upsample(Module):
    """:func:`~chainrule.nn.functional.interpolate` with the constructor's ``size`` or
    ``scale_factor`` (kept as floats), ``mode``, ``align_corners`` and
    ``recompute_scale_factor``; errors are those of ``interpolate``."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                           recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        return info + ", mode=" + repr(self.mode)


class UpsamplingNearest2d(Upsample):
    """:class:`Upsample` with ``mode='nearest'`` (4-D inputs)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """:class:`Upsample` with ``mode='bilinear', align_corners=True`` (4-D inputs)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class _InstanceNorm(_NormBase):
    _no_batch_dim = 2
    _dims = (2, 3)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype,
                         bias)

    def forward(self, input):
        name = type(self).__name__
        if input.ndim not in self._dims:
            raise ValueError(f"{name}: expected {self._dims[0]}D or {self._dims[1]}D input "
                             f"(got {input.ndim}D input)")
        feature_dim = input.ndim - self._no_batch_dim
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"{name}: expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You "
                          "can silence this warning by not passing in num_features, which is "
                          "not used because affine=False", stacklevel=2)
        unbatched = input.ndim == self._no_batch_dim
        x = _ops.unsqueeze(input, 0) if unbatched else input
        out = instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            self.training or not self.track_running_stats,
                            self.momentum if self.momentum is not None else 0.0, self.eps)
        return out[0] if unbatched else out

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or unbatched (C, L) inputs,
    :func:`~chainrule.nn.functional.instance_norm`: each sample's channel by its own
    statistics over L.

    ``affine=True``: per-channel ``weight`` (ones) and ``bias`` (zeros; none with the
    keyword ``bias=False``). ``track_running_stats=True``: buffers ``running_mean``,
    ``running_var`` (updated in training mode; ``momentum=None`` counts as 0, as PyTorch)
    and ``num_batches_tracked`` (left at 0, as PyTorch); eval mode then normalises with
    them. Defaults: ``affine=False``, ``track_running_stats=False``.

    Raises ValueError for an input that is not 2-D or 3-D, for a channel count other than
    ``num_features`` when ``affine`` (a UserWarning otherwise), and from
    ``instance_norm`` for a single position per channel in training.
    """


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or unbatched (C, H, W) inputs, as
    :class:`InstanceNorm1d` over H and W.

    Raises ValueError for an input that is not 3-D or 4-D, for a channel count other than
    ``num_features`` when ``affine`` (a UserWarning otherwise).
    """
    _no_batch_dim = 3
    _dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) or unbatched (C, D, H, W) inputs, as
    :class:`InstanceNorm1d` over D, H and W.

    Raises ValueError for an input that is not 4-D or 5-D, for a channel count other than
    ``num_features`` when ``affine`` (a UserWarning otherwise).
    """
    _no_batch_dim = 4
    _dims = (4, 5)


class Unfold(Module):
    """:func:`~chainrule.nn.functional.unfold` (im2col) with the constructor's arguments:
    (N, C, H, W) -> (N, C kH kW, L)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input):
        return unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """:func:`~chainrule.nn.functional.fold` (col2im) with the constructor's arguments:
    (N, C kH kW, L) -> (N, C, H, W), ``(H, W) = output_size``."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                    self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")
