"""Convolution and pooling (``torch.nn``'s names and arguments), composed of chainrule's
differentiable ops.

One N-d implementation serves the 1d, 2d and 3d names. The sliding windows of the (padded)
input are gathered with one advanced-indexing op whose integer index arrays are built with
NumPy from the shapes alone, so the backward pass is that op's scatter-add; convolution is
then a ``matmul`` with the weight, max pooling a ``max`` along the window (its gradient goes
to the window's first maximal entry, as PyTorch's argmax) and average pooling a ``sum``
divided by a count built from the shapes. No op here has a derivative rule of its own:
gradients of every order and forward mode come from the ops used.

Shapes: inputs (N, C, \\*spatial) or unbatched (C, \\*spatial), with one spatial dim for the
``1d`` names, two for the ``2d`` ones and three for the ``3d`` ones; outputs keep the
input's batching and dtype.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import _creation
from .. import ops as _ops
from .._dispatch import name_errors
from ..backend import numpy_dtype
from . import functional as F
from ._module import Module
from .functional import _size, _t
from .modules import BatchNorm1d, _empty, reset_weight_and_bias, weight_and_bias

__all__ = ["Conv1d", "Conv2d", "Conv3d", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d",
           "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
           "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
           "BatchNorm2d", "BatchNorm3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
           "LPPool1d", "LPPool2d", "LPPool3d", "SyncBatchNorm", "ChannelShuffle"]
FUNCTIONAL = ["conv1d", "conv2d", "conv3d", "max_pool1d", "max_pool2d", "max_pool3d",
              "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
              "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
              "adaptive_max_pool2d", "adaptive_max_pool3d", "max_unpool1d", "max_unpool2d",
              "max_unpool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_pool1d_with_indices",
              "max_pool2d_with_indices", "max_pool3d_with_indices",
              "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
              "adaptive_max_pool3d_with_indices", "channel_shuffle"]


# --- helpers -----------------------------------------------------------------------------

def _tup(v, n, name, fname):
    """``v`` (an int, or a sequence of 1 or ``n`` ints) as a tuple of ``n`` ints."""
    if isinstance(v, (tuple, list)):
        v = tuple(int(a) for a in v)
        if len(v) == 1:
            v = v * n
        if len(v) != n:
            raise ValueError(f"{fname}: {name} must be an int or a tuple of {n} ints, got {v}")
        return v
    return (int(v),) * n


def _batched(input, n, fname):
    """``input`` as (N, C, \\*spatial), and whether a batch dim of 1 was added."""
    x = _t(input)
    if x.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{fname}: expected input with {n + 1} or {n + 2} dimensions (got "
                           f"{x.ndim}-D input of shape {_size(x.shape)})")
    return (x, False) if x.ndim == n + 2 else (_ops.unsqueeze(x, 0), True)


def _steps(pos):
    """The stride of each spatial dim's windows when every ``pos[i]`` is ``start_j +
    s_i * arange(O_i)`` per tap ``j`` (regular windows), else None."""
    steps = []
    for p in pos:
        if p.shape[0] == 1:
            steps.append(1)
            continue
        d = np.diff(p, axis=0)
        if d.min() != d.max() or d.min() <= 0:
            return None
        steps.append(int(d.min()))
    return steps


def _windows(x, pos, chan=None):
    """Gather windows of ``x`` (B, C, \\*S). ``pos[i]`` (O_i, K_i): positions along spatial
    dim i. Without ``chan``: (B, C, \\*O, \\*K). With ``chan`` (G, Cg) channel numbers:
    (B, G, \\*O, Cg, \\*K).

    Regular windows (convolution, pooling) are strided slices, one per kernel tap, stacked:
    their backward adds each tap's cotangent into the input in place. Irregular ones
    (adaptive pooling) are one advanced-indexing op."""
    steps = _steps(pos)
    if steps is not None:
        return _sliced_windows(x, pos, steps, chan)
    n = len(pos)
    lead = 0 if chan is None else 1
    ndim = 2 * n + 2 * lead
    index = [slice(None)] * (1 if chan is not None else 2)
    if chan is not None:
        shape = [1] * ndim
        shape[0], shape[n + 1] = chan.shape
        index.append(chan.reshape(shape))
    for i, p in enumerate(pos):
        shape = [1] * ndim
        shape[lead + i], shape[2 * lead + n + i] = p.shape
        index.append(p.reshape(shape))
    return x[tuple(index)]


def _sliced_windows(x, pos, steps, chan):
    """:func:`_windows` for regular windows: a strided slice of ``x`` per kernel tap."""
    taps = []
    for js in itertools.product(*(range(p.shape[1]) for p in pos)):
        taps.append(x[(slice(None), slice(None)) + tuple(
            slice(int(p[0, j]), int(p[0, j]) + (p.shape[0] - 1) * st + 1, st)
            for p, j, st in zip(pos, js, steps))])
    b, c = x.shape[:2]
    outs, ks = tuple(p.shape[0] for p in pos), tuple(p.shape[1] for p in pos)
    w = _ops.stack(taps, -1).reshape(b, c, *outs, *ks)  # (B, C, *O, *K)
    if chan is None:
        return w
    n, (g, cg) = len(pos), chan.shape
    w = w.reshape(b, g, cg, *outs, *ks)
    return w.permute(0, 1, *range(3, 3 + n), 2, *range(3 + n, 3 + 2 * n))


def _unbatch(out, unbatched):
    return out[0] if unbatched else out


def _pool_args(fname, n, kernel_size, stride, padding, dilation=1):
    k = _tup(kernel_size, n, "kernel_size", fname)
    s = k if stride is None or stride == () or stride == [] else _tup(stride, n, "stride",
                                                                       fname)
    p, d = _tup(padding, n, "padding", fname), _tup(dilation, n, "dilation", fname)
    for name, v in (("kernel_size", k), ("stride", s), ("dilation", d)):
        if min(v) <= 0:
            raise RuntimeError(f"{fname}: {name} should be greater than zero, but got {name}"
                               f"={v}")
    if min(p) < 0:
        raise RuntimeError(f"{fname}: pad should be non-negative, but got padding={p}")
    for ki, pi, di in zip(k, p, d):
        if pi > ((ki - 1) * di + 1) // 2:
            raise RuntimeError(f"{fname}: pad should be at most half of effective kernel size, "
                               f"but got pad={pi}, kernel_size={ki} and dilation={di}")
    return k, s, p, d


def _pool_geometry(x, k, s, p, d, ceil_mode, fname):
    """PyTorch's pooling output sizes; per spatial dim the window positions (O, K) in the
    padded input and the (left, right) padding (right grows where ceil_mode windows run
    past the padding)."""
    shape = tuple(x.shape[2:])
    pos, pads, outs = [], [], []
    for L, ki, si, pi, di in zip(shape, k, s, p, d):
        o = (L + 2 * pi - di * (ki - 1) - 1 + (si - 1 if ceil_mode else 0)) // si + 1
        if ceil_mode and (o - 1) * si >= L + pi:  # the last window must start in the input
            o -= 1
        outs.append(o)
        pos.append(np.arange(max(o, 0))[:, None] * si + np.arange(ki)[None, :] * di)
        pads.append((pi, max(pi, (o - 1) * si + (ki - 1) * di + 1 - L - pi)))
    if min(outs) < 1:
        raise RuntimeError(f"{fname}: Given input size: ({'x'.join(map(str, x.shape[1:]))}). "
                           f"Calculated output size: ({x.shape[1]}x"
                           f"{'x'.join(map(str, outs))}). Output size is too small")
    return pos, pads, outs


def _pad(x, pads, value):
    if not any(a or b for a, b in pads):
        return x
    return F.pad(x, [v for ab in reversed(pads) for v in ab], value=value)


def _max_select(x, plane, pos, offsets, return_indices):
    """Max over windows of ``x`` (B, C, \\*S: an input of spatial shape ``plane`` padded by
    ``offsets`` on the left of each dim); the gradient goes to the first maximal entry of
    each window. Returns values (B, C, \\*O) and, when asked, the flat int64 indices of the
    maxima in the unpadded input plane."""
    w = _windows(x, pos)
    b, c = w.shape[:2]
    outs = tuple(p.shape[0] for p in pos)
    values, idx = _ops.max(w.reshape(b, c, *outs, -1), -1)
    if not return_indices:
        return values
    flat = 0
    strides = np.cumprod((1,) + tuple(reversed(plane[1:])))[::-1]
    n = len(pos)
    for i, (p, off) in enumerate(zip(pos, offsets)):
        shape = [1] * (2 * n)
        shape[i], shape[n + i] = p.shape
        flat = flat + ((p - off) * strides[i]).reshape(shape)
    flat = np.broadcast_to(flat, outs + tuple(p.shape[1] for p in pos)).reshape(
        (1, 1) + outs + (-1,)).astype(np.int64)
    indices = _ops.take_along_dim(F._beside(idx, np.ascontiguousarray(flat)),
                                  _ops.unsqueeze(idx, -1), -1)
    return values, indices[..., 0]


# --- convolution -------------------------------------------------------------------------

def _conv(input, weight, bias, stride, padding, dilation, groups, n, fname):
    x, unbatched = _batched(input, n, fname)
    w = _t(weight)
    if w.ndim != n + 2:
        if weight is None:  # (a module's, through functional_call)
            raise F._not_a_tensor(f"conv{n}d", "weight", 2, weight)
        raise RuntimeError(f"{fname}: expected weight with {n + 2} dimensions (C_out, C_in/"
                           f"groups, *kernel), got weight of shape {_size(w.shape)}")
    s, d = _tup(stride, n, "stride", fname), _tup(dilation, n, "dilation", fname)
    if min(s) <= 0 or min(d) <= 0:
        raise RuntimeError(f"{fname}: stride and dilation should be positive, got stride={s} "
                           f"and dilation={d}")
    c_out, cg, *k = w.shape
    groups = int(groups)
    if groups <= 0 or c_out % groups:
        raise RuntimeError(f"{fname}: groups={groups} must be positive and divide the weight's "
                           f"C_out={c_out} (weight of shape {_size(w.shape)})")
    if x.shape[1] != cg * groups:
        raise RuntimeError(f"{fname}: expected input[{x.shape[0]}, {x.shape[1]}, ...] to have "
                           f"C_in={cg * groups} channels for weight of shape {_size(w.shape)} "
                           f"and groups={groups}")
    if bias is not None and tuple(_t(bias).shape) != (c_out,):
        raise RuntimeError(f"{fname}: expected bias of shape [{c_out}] for weight of shape "
                           f"{_size(w.shape)}, got bias of shape {_size(_t(bias).shape)}")
    if isinstance(padding, str):
        if padding not in ("valid", "same"):
            raise ValueError(f"{fname}: Invalid padding string {padding!r}, should be one of "
                             "('valid', 'same')")
        if padding == "same" and max(s) != 1:
            raise ValueError(f"{fname}: padding='same' is not supported for strided "
                             f"convolutions (stride={s})")
        total = [di * (ki - 1) if padding == "same" else 0 for ki, di in zip(k, d)]
        pads = [(t // 2, t - t // 2) for t in total]  # the odd one on the right, as PyTorch
    else:
        pads = [(p, p) for p in _tup(padding, n, "padding", fname)]
        if min(min(pads)) < 0:
            raise RuntimeError(f"{fname}: negative padding is not supported, got {padding}")
    full = [L + a + b for L, (a, b) in zip(x.shape[2:], pads)]
    outs = [(L - di * (ki - 1) - 1) // si + 1 for L, ki, si, di in zip(full, k, s, d)]
    if min(outs) < 1:
        raise RuntimeError(f"{fname}: Calculated padded input size per channel: "
                           f"({' x '.join(map(str, full))}). Kernel size: "
                           f"({' x '.join(map(str, k))}) with dilation {d}. Kernel size can't "
                           "be greater than actual input size")
    pos = [np.arange(o)[:, None] * si + np.arange(ki)[None, :] * di
           for o, ki, si, di in zip(outs, k, s, d)]
    chan = np.arange(groups * cg).reshape(groups, cg)
    win = _windows(_pad(x, pads, 0.0), pos, chan)  # (B, G, *O, Cg, *K)
    b, span = x.shape[0], cg * math.prod(k)
    if groups == 1:  # one GEMM: (B * O, span) @ (span, C_out), forward and backward
        out = _ops.matmul(win.reshape(b * math.prod(outs), span),
                          w.reshape(c_out, span).transpose(0, 1))
        out = _ops.movedim(out.reshape(b, *outs, c_out), -1, 1)
    else:
        win = win.reshape(b, groups, math.prod(outs), span)
        wm = w.reshape(groups, c_out // groups, span).transpose(-1, -2)
        out = _ops.matmul(win, wm).transpose(-1, -2).reshape(b, c_out, *outs)
    if bias is not None:
        out = out + _t(bias).reshape(c_out, *(1,) * n)
    return _unbatch(out.contiguous(), unbatched)  # row-major, as PyTorch's (x.view works)


_CONV_DOC = """Convolution (cross-correlation, as PyTorch) over {n} spatial dim(s).

    Shapes: ``input`` (N, C_in, {sp}) or unbatched (C_in, {sp}); ``weight`` (C_out,
    C_in / groups, {ks}); ``bias`` (C_out,) or None; output (N, C_out, {osp}) (unbatched:
    without N), each output size ``floor((L + 2 padding - dilation (k - 1) - 1) / stride) + 1``.
    ``stride``, ``padding``, ``dilation``: an int or a tuple per spatial dim; ``padding``
    may be ``'valid'`` (none) or ``'same'`` (output size = input size, stride 1 only; an odd
    total padding puts the extra zero on the right). ``groups`` splits the channels into
    that many independent convolutions. Dtype: that of ``input`` and ``weight``.

    Raises
    ------
    RuntimeError
        An input that is not {n1}-D or {n2}-D, a weight that is not {n2}-D, input channels
        that are not ``weight.shape[1] * groups``, ``groups`` not dividing C_out, a bias of
        the wrong shape, non-positive stride or dilation, negative padding, or a kernel
        larger than the padded input.
    ValueError
        An unknown padding string, or ``'same'`` with a stride other than 1.
    """


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


conv1d.__doc__ = _CONV_DOC.format(n=1, sp="L", ks="k", osp="L_out", n1=2, n2=3)
conv2d.__doc__ = _CONV_DOC.format(n=2, sp="H, W", ks="kH, kW", osp="H_out, W_out", n1=3, n2=4)
conv3d.__doc__ = _CONV_DOC.format(n=3, sp="D, H, W", ks="kD, kH, kW",
                                  osp="D_out, H_out, W_out", n1=4, n2=5)


# --- pooling -----------------------------------------------------------------------------

def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, n,
              fname):
    x, unbatched = _batched(input, n, fname)
    k, s, p, d = _pool_args(fname, n, kernel_size, stride, padding, dilation)
    pos, pads, _ = _pool_geometry(x, k, s, p, d, ceil_mode, fname)
    out = _max_select(_pad(x, pads, -math.inf), tuple(x.shape[2:]), pos, p, return_indices)
    if return_indices:
        return _unbatch(out[0].contiguous(), unbatched), _unbatch(out[1], unbatched)
    return _unbatch(out.contiguous(), unbatched)


_MAX_DOC = """Max pooling over {n} spatial dim(s): input (N, C, {sp}) or (C, {sp}) ->
    (N, C, {osp}) (or without N), in the input's dtype.

    ``stride=None`` means ``kernel_size``; ``padding`` (at most half the effective kernel
    ``dilation (k - 1) + 1``) adds ``-inf``; with ``ceil_mode`` the output size rounds up,
    as PyTorch, except that the last window must start inside the input or the left
    padding. The gradient of each window goes to its first maximal entry (row-major), as
    PyTorch. ``return_indices=True`` also returns int64 flat indices of the maxima in the
    unpadded input plane ({plane}).

    Raises
    ------
    RuntimeError
        An input that is not {n1}-D or {n2}-D, a non-positive kernel size, stride or
        dilation, padding larger than half the effective kernel, or an empty output.
    """


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices, 1, "max_pool1d")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices, 2, "max_pool2d")


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices, 3, "max_pool3d")


max_pool1d.__doc__ = _MAX_DOC.format(n=1, sp="L", osp="L_out", plane="``l``", n1=2, n2=3)
max_pool2d.__doc__ = _MAX_DOC.format(n=2, sp="H, W", osp="H_out, W_out",
                                     plane="``h * W + w``", n1=3, n2=4)
max_pool3d.__doc__ = _MAX_DOC.format(n=3, sp="D, H, W", osp="D_out, H_out, W_out",
                                     plane="``(d * H + h) * W + w``", n1=4, n2=5)


def _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override, n, fname):
    x, unbatched = _batched(input, n, fname)
    k, s, p, _ = _pool_args(fname, n, kernel_size, stride, padding)
    pos, pads, outs = _pool_geometry(x, k, s, p, (1,) * n, ceil_mode, fname)
    w = _windows(_pad(x, pads, 0.0), pos)
    total = w.sum(dim=tuple(range(2 + n, 2 + 2 * n)))
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError(f"{fname}: divisor must be not zero")
        return _unbatch(total / divisor_override, unbatched)
    count = np.ones(())
    for L, o, ki, si, pi in zip(x.shape[2:], outs, k, s, p):  # PyTorch's window sizes
        start = np.arange(o) * si - pi
        end = np.minimum(start + ki, L + pi)
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, L)
        count = np.multiply.outer(count, end - start)
    return _unbatch(total / F._beside(total, count.astype(numpy_dtype(total.dtype))),
                    unbatched)


_AVG_DOC = """Average pooling over {n} spatial dim(s): input (N, C, {sp}) or (C, {sp}) ->
    (N, C, {osp}) (or without N), in the input's (float) dtype.

    ``stride=None`` means ``kernel_size``; ``padding`` (at most half the kernel) adds
    zeros; ``ceil_mode`` as in :func:`max_pool{n}d`. Each window's sum is divided by
    {div}the number of its entries inside the padded input (``count_include_pad=True``)
    or inside the input proper (``False``); entries past the padding that ``ceil_mode``
    adds never count.

    Raises
    ------
    RuntimeError
        An input that is not {n1}-D or {n2}-D, a non-positive kernel size or stride,
        padding larger than half the kernel, or an empty output.
    """


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None,
                     1, "avg_pool1d")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, 2, "avg_pool2d")


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, 3, "avg_pool3d")


avg_pool1d.__doc__ = _AVG_DOC.format(n=1, sp="L", osp="L_out", div="", n1=2, n2=3)
avg_pool2d.__doc__ = _AVG_DOC.format(n=2, sp="H, W", osp="H_out, W_out", n1=3, n2=4,
                                     div="``divisor_override`` when given, else ")
avg_pool3d.__doc__ = _AVG_DOC.format(n=3, sp="D, H, W", osp="D_out, H_out, W_out", n1=4,
                                     n2=5, div="``divisor_override`` when given, else ")


def _adaptive_bounds(input, output_size, n, fname):
    x, unbatched = _batched(input, n, fname)
    if isinstance(output_size, (tuple, list)) and len(output_size) == n:
        sizes = tuple(L if o is None else int(o) for L, o in zip(x.shape[2:], output_size))
    else:
        sizes = _tup(output_size, n, "output_size", fname)
    if min(sizes) < 0:
        raise RuntimeError(f"{fname}: elements of output_size must be greater than or equal "
                           f"to 0 but received {sizes}")
    if min(x.shape[2:]) < 1:
        given = tuple(x.shape[1:] if unbatched else x.shape)
        raise RuntimeError(f"{fname}: Expected input to have non-zero size for non-batch "
                           f"dimensions, but input has sizes {_size(given)} with dimension "
                           f"{given.index(0, len(given) - n)} being empty")
    bounds = []
    for L, o in zip(x.shape[2:], sizes):  # PyTorch's windows: [floor(i L / o), ceil((i+1) L / o))
        i = np.arange(o)
        bounds.append((i * L // o, -(-(i + 1) * L // o)))
    return x, unbatched, bounds


def _adaptive_avg(input, output_size, n, fname):
    x, unbatched, bounds = _adaptive_bounds(input, output_size, n, fname)
    out = x
    for i, (L, (start, end)) in enumerate(zip(x.shape[2:], bounds)):
        cols = np.arange(L)
        avg = ((cols >= start[:, None]) & (cols < end[:, None])) / (end - start)[:, None]
        dim = 2 + i - (n + 2)  # the averaging matrix (O, L) applied to spatial dim i
        avg_t = F._beside(x, avg.T.astype(numpy_dtype(x.dtype)))
        out = _ops.matmul(out.transpose(dim, -1), avg_t).transpose(dim, -1)
    return _unbatch(out.contiguous(), unbatched)


def _adaptive_max(input, output_size, return_indices, n, fname):
    x, unbatched, bounds = _adaptive_bounds(input, output_size, n, fname)
    if any(len(start) == 0 for start, _ in bounds):  # an output size 0: an empty result
        shape = tuple(x.shape[:2]) + tuple(len(start) for start, _ in bounds)
        out = x.reshape(-1)[:0].reshape(shape)  # (still of x's graph: a zero gradient)
        if return_indices:
            idx = _creation.zeros(shape, dtype=np.int64, device=x.device)
            return _unbatch(out, unbatched), _unbatch(idx, unbatched)
        return _unbatch(out, unbatched)
    pos = []
    for start, end in bounds:  # windows padded to the longest by repeating their last entry
        taps = np.arange((end - start).max())
        pos.append(start[:, None] + np.minimum(taps[None, :], (end - start - 1)[:, None]))
    out = _max_select(x, tuple(x.shape[2:]), pos, (0,) * n, return_indices)
    if return_indices:
        return _unbatch(out[0].contiguous(), unbatched), _unbatch(out[1], unbatched)
    return _unbatch(out.contiguous(), unbatched)


_ADAPTIVE_DOC = """Adaptive {kind} pooling over {n} spatial dim(s) to ``output_size`` (an
    int or a tuple{tuple_note}): input (N, C, {sp}) or (C, {sp}) -> (N, C, {osp}) (or
    without N). Output entry ``i`` of a dim of size ``L`` pools the input range
    ``[floor(i L / O), ceil((i + 1) L / O))``, as PyTorch.{extra}

    Raises
    ------
    RuntimeError
        An input that is not {n1}-D or {n2}-D, or a non-positive output size.
    """
_MAX_EXTRA = (" The gradient goes to each window's first maximal entry; "
              "``return_indices=True`` also returns int64 flat indices into the input plane.")


def adaptive_avg_pool1d(input, output_size):
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size):
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, return_indices, 1, "adaptive_max_pool1d")


def _top_adaptive_max_pool1d(input, output_size):
    """``torch.adaptive_max_pool1d``: always ``(values, indices)`` (the top-level spelling
    has no ``return_indices``; ``nn.functional``'s returns the values alone)."""
    return adaptive_max_pool1d(input, output_size, return_indices=True)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, return_indices, 2, "adaptive_max_pool2d")


def adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg(input, output_size, 3, "adaptive_avg_pool3d")


def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, return_indices, 3, "adaptive_max_pool3d")


_SPATIAL = {1: ("L", "O"), 2: ("H, W", "O_H, O_W"), 3: ("D, H, W", "O_D, O_H, O_W")}
for _fn, _kind, _n in ((adaptive_avg_pool1d, "average", 1), (adaptive_avg_pool2d, "average", 2),
                       (adaptive_avg_pool3d, "average", 3), (adaptive_max_pool1d, "max", 1),
                       (adaptive_max_pool2d, "max", 2), (adaptive_max_pool3d, "max", 3)):
    _fn.__doc__ = _ADAPTIVE_DOC.format(
        kind=_kind, n=_n, sp=_SPATIAL[_n][0], osp=_SPATIAL[_n][1],
        tuple_note="" if _n == 1 else "; None keeps that dim's input size", n1=_n + 1,
        n2=_n + 2, extra=_MAX_EXTRA if _kind == "max" else "")


# --- unpooling and power-average pooling ---------------------------------------------------

def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    """PyTorch's default unpooled size ``(L - 1) stride + k - 2 padding`` per spatial dim,
    or the given ``output_size`` (the spatial sizes, or with N and C first), which must lie
    strictly within ``stride`` of it."""
    n = len(kernel_size)
    shape = tuple(input.shape)
    default = [(shape[-n + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d]
               for d in range(n)]
    if output_size is None:
        for d, v in enumerate(default):
            if v < 0:
                raise ValueError("max_unpooling: output_size must contain non-negative spatial "
                                 f"dimensions, but got output_size[{d}]={v}")
        return default
    output_size = [int(v) for v in output_size]
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} "
                         f"elements, but it has a length of '{len(output_size)}'")
    for d in range(n):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between '
                             f"{lo} and {hi})")
    return output_size


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, n, fname):
    x, unbatched = _batched(input, n, fname)
    idx = _t(indices)
    if unbatched:
        idx = _ops.unsqueeze(idx, 0)
    k = _tup(kernel_size, n, "kernel_size", fname)
    s = k if stride is None else _tup(stride, n, "stride", fname)
    p = _tup(padding, n, "padding", fname)
    out_size = _unpool_output_size(x, k, s, p, output_size)
    if tuple(idx.shape) != tuple(x.shape):
        raise RuntimeError(f"{fname}: Expected shape of indices to be same as that of the "
                           f"input tensor ({_size(x.shape)}) but got indices tensor with "
                           f"shape: {_size(idx.shape)}")
    b, c = x.shape[:2]
    plane = math.prod(out_size)
    if plane == 0:  # an empty output (PyTorch's, whatever the indices)
        return _unbatch(x.reshape(-1)[:0].reshape(b, c, *out_size), unbatched)
    flat_idx = idx.reshape(b, c, -1)
    iv = np.asarray(flat_idx.numpy())
    if iv.size and (iv.min() < 0 or iv.max() >= plane):
        raise RuntimeError(f"{fname}: Found an invalid max index: {int(iv.max())} (output "
                           f"volumes are of size {' x '.join(map(str, out_size))})")
    zeros = _creation.zeros((b, c, plane), dtype=x.dtype, device=x.device)
    src = x.reshape(b, c, -1)
    out = _ops.scatter(zeros, 2, flat_idx, src.detach())
    # the gradient is PyTorch's: every input entry gets the output gradient at its index,
    # also when (overlapping pooling windows) an index appears twice; the added term is 0
    added = _ops.scatter_add(zeros, 2, flat_idx, src)
    out = out + (added - added.detach())
    return _unbatch(out.reshape(b, c, *out_size), unbatched)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of :func:`max_pool1d`: ``input`` (N, C, L) or (C, L) placed at
    the flat positions ``indices`` (from ``max_pool1d(..., return_indices=True)``) of a
    zero output of length ``(L - 1) stride + kernel_size - 2 padding`` (or
    ``output_size``); gradients flow to ``input``, as ``torch.nn.functional.max_unpool1d``.

    Raises ValueError for an ``output_size`` out of range, RuntimeError for indices of
    another shape or out of range."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1,
                       "max_unpool1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of :func:`max_pool2d` (see :func:`max_unpool1d`): input
    (N, C, H, W) or (C, H, W); output spatial sizes ``(H - 1) stride + k - 2 padding`` (or
    ``output_size``), as ``torch.nn.functional.max_unpool2d``.

    Raises ValueError for an ``output_size`` out of range, RuntimeError for indices of
    another shape or out of range."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2,
                       "max_unpool2d")


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of :func:`max_pool3d` (see :func:`max_unpool1d`): input
    (N, C, D, H, W) or (C, D, H, W), as ``torch.nn.functional.max_unpool3d``."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3,
                       "max_unpool3d")


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, n):
    """``(sum_window x^p)^(1/p)``: ``avg_pool`` of ``x^p`` times the window size, as
    PyTorch's; ``p = inf`` is max pooling of ``|x|`` and ``p = -inf`` the minimum of
    ``|x|`` (as PyTorch)."""
    x = _t(input)
    if isinstance(norm_type, (int, float)) and math.isinf(norm_type):
        sign = 1 if norm_type > 0 else -1
        return sign * globals()[f"max_pool{n}d"](sign * _ops.abs(x), kernel_size, stride, 0,
                                                 1, ceil_mode)
    out = globals()[f"avg_pool{n}d"](x ** norm_type, kernel_size, stride, 0, ceil_mode)
    k = math.prod(_tup(kernel_size, n, "kernel_size", f"lp_pool{n}d"))
    return ((_ops.sign(out) * F.relu(_ops.abs(out))) * k) ** (1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling ``(sum_window x^p)^(1/p)`` (N, C, L) -> (N, C, L_out), as
    ``torch.nn.functional.lp_pool1d`` (``avg_pool1d`` of ``x^p`` times the window size;
    ``norm_type=inf``: max pooling of ``|x|``)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling ``(sum_window x^p)^(1/p)`` (N, C, H, W) -> (N, C, H_out,
    W_out), as ``torch.nn.functional.lp_pool2d``."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling ``(sum_window x^p)^(1/p)`` (N, C, D, H, W) -> (N, C, D_out,
    H_out, W_out), as ``torch.nn.functional.lp_pool3d``."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """:func:`max_pool1d` returning ``(values, indices)`` (PyTorch's name)."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """:func:`max_pool2d` returning ``(values, indices)`` (PyTorch's name)."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """:func:`max_pool3d` returning ``(values, indices)`` (PyTorch's name)."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    """:func:`adaptive_max_pool1d` returning ``(values, indices)`` (PyTorch's name)."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    """:func:`adaptive_max_pool2d` returning ``(values, indices)`` (PyTorch's name)."""
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    """:func:`adaptive_max_pool3d` returning ``(values, indices)`` (PyTorch's name)."""
    return adaptive_max_pool3d(input, output_size, True)


def channel_shuffle(input, groups):
    """Interleave the channels of ``input`` (N, C, ...) in ``groups`` groups (ShuffleNet):
    channel ``g * (C / groups) + k`` goes to position ``k * groups + g``, as
    ``torch.nn.functional.channel_shuffle``.

    Raises RuntimeError for fewer than 3 dims, ``groups <= 0`` or C not divisible by
    ``groups``."""
    x = _t(input)
    if x.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with sizes {list(x.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value "
                           f"of groups:{groups}")
    n, c = x.shape[:2]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    rest = tuple(x.shape[2:])
    return x.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


for _name in FUNCTIONAL:  # an error preparing the arguments names the function; None for
    # a Tensor parameter is PyTorch's TypeError naming the argument
    _names = ("input", "weight") if _name.startswith("conv") else \
        ("input", "indices") if _name.startswith("max_unpool") else ("input",)
    globals()[_name] = F._tensor_args(*_names, fname=_name)(name_errors(globals()[_name]))
del _name, _names


# --- modules -----------------------------------------------------------------------------

class _ConvNd(Module):
    _n = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None, *, output_padding=None):
        super().__init__()
        n, name = self._n, type(self).__name__
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        modes = ("zeros", "reflect", "replicate", "circular")
        if padding_mode not in modes:
            raise ValueError(f"padding_mode must be one of {modes}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _tup(kernel_size, n, "kernel_size", name)
        self.stride = _tup(stride, n, "stride", name)
        self.dilation = _tup(dilation, n, "dilation", name)
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 "{'valid', 'same'}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = _tup(padding, n, "padding", name)
        if isinstance(self.padding, str):  # F.pad's (left, right) pairs, last dim first
            total = [d * (k - 1) if self.padding == "same" else 0
                     for d, k in zip(reversed(self.dilation), reversed(self.kernel_size))]
            self._reversed_padding_repeated_twice = [v for t in total for v in (t // 2,
                                                                               t - t // 2)]
        else:
            self._reversed_padding_repeated_twice = [v for p in reversed(self.padding)
                                                     for v in (p, p)]
        self.padding_mode, self.transposed = padding_mode, self._transposed
        self.output_padding = (0,) * n if output_padding is None else output_padding
        if self._transposed:  # (in, out / groups, *k), a bias per output channel
            self.weight = _empty((in_channels, out_channels // groups, *self.kernel_size),
                                 dtype)
            if bias:
                self.bias = _empty((out_channels,), dtype)
            else:
                self.register_parameter("bias", None)
            self.reset_parameters()
        else:
            weight_and_bias(self, (out_channels, in_channels // groups, *self.kernel_size),
                            bias, dtype)

    def reset_parameters(self):
        reset_weight_and_bias(self)

    def forward(self, input):
        padding = self.padding
        if self.padding_mode != "zeros":  # as PyTorch: pad first, then a convolution without
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            padding = 0
        return _conv(input, self.weight, self.bias, self.stride, padding, self.dilation,
                     self.groups, self._n, type(self).__name__)

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * self._n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """1-d convolution, :func:`~chainrule.nn.functional.conv1d`: (N, C_in, L) or (C_in, L)
    -> (N, C_out, L_out).

    ``weight`` (out_channels, in_channels / groups, k) from ``kaiming_uniform_(a=sqrt(5))``
    and ``bias`` (out_channels,) from U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
    ``fan_in = in_channels / groups * k``, as PyTorch; ``dtype=None``: the default float
    dtype.

    ``padding_mode``: ``'zeros'`` (the convolution's own padding) or ``'reflect'``,
    ``'replicate'``, ``'circular'``: the input is first padded by
    :func:`~chainrule.nn.functional.pad` in that mode (``padding`` on both sides, or
    ``'same'``'s split), then convolved without padding, as PyTorch.

    Raises ValueError for ``groups`` not dividing both channel counts, an unknown padding
    string or ``padding_mode``, ``'same'`` with a stride other than 1; RuntimeError (from
    ``pad``) for reflect/circular padding as large as the input.
    """
    _n = 1


class Conv2d(_ConvNd):
    """2-d convolution, :func:`~chainrule.nn.functional.conv2d`: (N, C_in, H, W) or
    (C_in, H, W) -> (N, C_out, H_out, W_out).

    ``weight`` (out_channels, in_channels / groups, kH, kW) from
    ``kaiming_uniform_(a=sqrt(5))`` and ``bias`` (out_channels,) from
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)), ``fan_in = in_channels / groups * kH * kW``, as
    PyTorch; ``dtype=None``: the default float dtype.

    ``padding_mode``: ``'zeros'`` (the convolution's own padding) or ``'reflect'``,
    ``'replicate'``, ``'circular'``: the input is first padded by
    :func:`~chainrule.nn.functional.pad` in that mode (``padding`` on both sides, or
    ``'same'``'s split), then convolved without padding, as PyTorch.

    Raises ValueError for ``groups`` not dividing both channel counts, an unknown padding
    string or ``padding_mode``, ``'same'`` with a stride other than 1; RuntimeError (from
    ``pad``) for reflect/circular padding as large as the input.
    """
    _n = 2


class Conv3d(_ConvNd):
    """3-d convolution, :func:`~chainrule.nn.functional.conv3d`: (N, C_in, D, H, W) or
    (C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out); parameters (``weight`` of shape
    (out_channels, in_channels / groups, kD, kH, kW)), their initialisation,
    ``padding_mode`` and errors as :class:`Conv2d`'s.
    """
    _n = 3


class _MaxPoolNd(Module):
    _fn = staticmethod(max_pool2d)

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return self._fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                        ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
                f", dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """:func:`~chainrule.nn.functional.max_pool1d` with the constructor's arguments."""
    _fn = staticmethod(max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """:func:`~chainrule.nn.functional.max_pool2d` with the constructor's arguments."""


class MaxPool3d(_MaxPoolNd):
    """:func:`~chainrule.nn.functional.max_pool3d` with the constructor's arguments."""
    _fn = staticmethod(max_pool3d)


class _AvgPoolNd(Module):
    """What the average-pooling modules share: the arguments as given (``stride=None``:
    the kernel size), ``forward`` and the repr."""
    _fn = staticmethod(avg_pool2d)

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return self._fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                        self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """:func:`~chainrule.nn.functional.avg_pool1d` with the constructor's arguments (kept
    as 1-tuples, as PyTorch)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__(_tup(kernel_size, 1, "kernel_size", "AvgPool1d"),
                         _tup(kernel_size if stride is None else stride, 1, "stride",
                              "AvgPool1d"),
                         _tup(padding, 1, "padding", "AvgPool1d"), ceil_mode,
                         count_include_pad)
        del self.divisor_override  # (PyTorch's AvgPool1d has none)

    def forward(self, input):
        return avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                          self.count_include_pad)


class AvgPool2d(_AvgPoolNd):
    """:func:`~chainrule.nn.functional.avg_pool2d` with the constructor's arguments."""


class AvgPool3d(_AvgPoolNd):
    """:func:`~chainrule.nn.functional.avg_pool3d` with the constructor's arguments."""
    _fn = staticmethod(avg_pool3d)


class _AdaptivePool(Module):
    _fn = staticmethod(adaptive_avg_pool2d)

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return self._fn(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    """:func:`~chainrule.nn.functional.adaptive_avg_pool1d` to ``output_size``."""
    _fn = staticmethod(adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptivePool):
    """:func:`~chainrule.nn.functional.adaptive_avg_pool2d` to ``output_size``."""


class AdaptiveAvgPool3d(_AdaptivePool):
    """:func:`~chainrule.nn.functional.adaptive_avg_pool3d` to ``output_size``."""
    _fn = staticmethod(adaptive_avg_pool3d)


class _AdaptiveMaxPoolNd(_AdaptivePool):
    _fn = staticmethod(adaptive_max_pool2d)

    def __init__(self, output_size, return_indices=False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return self._fn(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """:func:`~chainrule.nn.functional.adaptive_max_pool1d` to ``output_size``."""
    _fn = staticmethod(adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """:func:`~chainrule.nn.functional.adaptive_max_pool2d` to ``output_size``."""


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """:func:`~chainrule.nn.functional.adaptive_max_pool3d` to ``output_size``."""
    _fn = staticmethod(adaptive_max_pool3d)


class _BatchNormNd(BatchNorm1d):
    """:class:`~chainrule.nn.BatchNorm1d` for inputs of exactly ``_ndim`` dims."""
    _ndim = 4

    def _check_input_dim(self, input):
        if input.ndim != self._ndim:
            raise ValueError(f"{type(self).__name__}: expected {self._ndim}D input (got "
                             f"{input.ndim}D input of shape {list(input.shape)})")


class BatchNorm2d(_BatchNormNd):
    """Batch normalisation of (N, C, H, W) inputs, per channel C: as
    :class:`~chainrule.nn.BatchNorm1d` (parameters, buffers, running statistics, train and
    eval modes).

    Raises ValueError for an input that is not 4-D.
    """


class BatchNorm3d(_BatchNormNd):
    """Batch normalisation of (N, C, D, H, W) inputs, per channel C, as
    :class:`BatchNorm2d`.

    Raises ValueError for an input that is not 5-D.
    """
    _ndim = 5


class _MaxUnpoolNd(Module):
    _n = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        n = self._n
        self.kernel_size = _tup(kernel_size, n, "kernel_size", type(self).__name__)
        self.stride = _tup(stride if stride is not None else kernel_size, n, "stride",
                           type(self).__name__)
        self.padding = _tup(padding, n, "padding", type(self).__name__)

    def forward(self, input, indices, output_size=None):
        return globals()[f"max_unpool{self._n}d"](input, indices, self.kernel_size,
                                                  self.stride, self.padding, output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """:func:`~chainrule.nn.functional.max_unpool1d` with the constructor's arguments;
    ``forward(input, indices, output_size=None)``."""
    _n = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """:func:`~chainrule.nn.functional.max_unpool2d` with the constructor's arguments;
    ``forward(input, indices, output_size=None)``."""
    _n = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """:func:`~chainrule.nn.functional.max_unpool3d` with the constructor's arguments;
    ``forward(input, indices, output_size=None)``."""
    _n = 3


class _LPPoolNd(Module):
    _n = 2

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input):
        return globals()[f"lp_pool{self._n}d"](input, self.norm_type, self.kernel_size,
                                               self.stride, self.ceil_mode)

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """:func:`~chainrule.nn.functional.lp_pool1d` with the constructor's arguments."""
    _n = 1


class LPPool2d(_LPPoolNd):
    """:func:`~chainrule.nn.functional.lp_pool2d` with the constructor's arguments."""


class LPPool3d(_LPPoolNd):
    """:func:`~chainrule.nn.functional.lp_pool3d` with the constructor's arguments."""
    _n = 3


class SyncBatchNorm(BatchNorm1d):
    """Batch normalisation over every dim but the channel one of (N, C, ...) inputs, as
    ``torch.nn.SyncBatchNorm`` in a single process (chainrule has no process groups: the
    statistics are the batch's, as BatchNorm's). ``process_group`` is accepted and
    ignored.

    Raises ValueError for an input of fewer than 2 dims."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None, *,
                 bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every batch-norm layer replaced by a SyncBatchNorm sharing its
        parameters and running statistics (recursively), as PyTorch's."""
        out = module
        if isinstance(module, BatchNorm1d) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group, bias=module.bias is not None)
            if module.affine:
                out.weight = module.weight
                out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


class ChannelShuffle(Module):
    """:func:`~chainrule.nn.functional.channel_shuffle` with ``groups``."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
