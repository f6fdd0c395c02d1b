"""``torch.nn``'s ``AdaptiveLogSoftmaxWithLoss`` (the efficient softmax approximation of
Grave et al.) and ``CrossMapLRN2d`` (the legacy Lua-torch local response normalisation
across channels).

Both are compositions of differentiable ops, with PyTorch's submodule and attribute
names (so a PyTorch ``state_dict`` loads), arguments, checks and reprs.
"""

from __future__ import annotations

import itertools
from collections import namedtuple

import numpy as np

from .. import ops as _ops
from .._tensor import wrap
from ..backend import beside, numpy_dtype
from . import functional as F
from ._module import Module, ModuleList, Sequential
from .modules import Linear

__all__ = ["AdaptiveLogSoftmaxWithLoss", "CrossMapLRN2d"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax, as ``torch.nn.AdaptiveLogSoftmaxWithLoss``: the classes below
    ``cutoffs[0]`` and one entry per cluster form the ``head`` (a ``Linear``,
    ``in_features -> cutoffs[0] + n_clusters``); cluster ``i`` (classes
    ``cutoffs[i]..cutoffs[i+1]``) is predicted by ``tail[i]``, a ``Sequential`` of two
    bias-free ``Linear`` layers through ``in_features // div_value ** (i + 1)`` features.
    A class's log-probability is its head log-probability, or its cluster's head
    log-probability plus its log-probability within the cluster.

    ``forward(input, target)`` returns ``_ASMoutput(output, loss)``: ``output`` the
    target's log-probability per row, ``loss`` the mean of ``-output``; ``log_prob(input)``
    all ``n_classes`` log-probabilities, ``predict(input)`` the most probable class.

    Raises ValueError for bad ``cutoffs``; ``forward`` raises RuntimeError for mismatched
    shapes or a target out of ``[0, n_classes - 1]``."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0
                or max(cutoffs) > (n_classes - 1) or len(set(cutoffs)) != len(cutoffs)
                or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers "
                             "sorted in an increasing order, where each value is between 1 "
                             "and n_classes-1")
        factory = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(self.in_features, self.head_size, bias=self.head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(self.in_features // (self.div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(self.in_features, hsz, bias=False, **factory),
                                        Linear(hsz, osz, bias=False, **factory)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        targ_dim = target_.dim()
        if targ_dim == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {input_.size()}")
        elif targ_dim == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        is_batched = targ_dim > 0
        input = input_ if is_batched else input_.unsqueeze(0)
        target = target_ if is_batched else target_.unsqueeze(0)

        used_rows = 0
        batch_size = target.size(0)
        output = input.new_zeros(batch_size)
        gather_inds = target.new_empty(batch_size)
        cutoff_values = [0] + self.cutoffs
        for i in range(len(cutoff_values) - 1):
            low_idx, high_idx = cutoff_values[i], cutoff_values[i + 1]
            target_mask = (target >= low_idx) & (target < high_idx)
            row_indices = target_mask.nonzero().squeeze()
            if row_indices.numel() == 0:
                continue
            if i == 0:
                gather_inds.index_copy_(0, row_indices, target[target_mask])
            else:
                relative_target = target[target_mask] - low_idx
                input_subset = input.index_select(0, row_indices)
                cluster_output = self.tail[i - 1](input_subset)
                cluster_index = self.shortlist_size + i - 1
                gather_inds.index_fill_(0, row_indices, cluster_index)
                cluster_logprob = F.log_softmax(cluster_output, dim=1)
                local_logprob = cluster_logprob.gather(1, relative_target.unsqueeze(1))
                output.index_copy_(0, row_indices, local_logprob.squeeze(1))
            used_rows += row_indices.numel()
        if used_rows != batch_size:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{target.min().item()}, "
                               f"{target.max().item()}] were found. ")
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(1, gather_inds.unsqueeze(1)).squeeze()
        loss = (-output).mean()
        if not is_batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i, _ in enumerate(itertools.pairwise(self.cutoffs)):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob
                         + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return _ops.cat(parts, 1)

    def log_prob(self, input):
        """The log-probabilities of all ``n_classes`` classes: input (N, in_features),
        output (N, n_classes)."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most probable class of each row (``log_prob(input).argmax(1)``, computing
        the tails only for the rows whose head prediction is a cluster)."""
        head_output = self.head(input)
        output = _ops.argmax(head_output, dim=1)
        not_in_shortlist = output >= self.shortlist_size
        if not not_in_shortlist.any():
            return output
        if not_in_shortlist.all():
            return _ops.argmax(self._get_full_log_prob(input, head_output), dim=1)
        log_prob = self._get_full_log_prob(input[not_in_shortlist],
                                           head_output[not_in_shortlist])
        output[not_in_shortlist] = _ops.argmax(log_prob, dim=1)
        return output


def _cross_map_windows(channels, size):
    """The (channels, channels) 0/1 matrix whose row ``c`` marks the channels summed into
    ``c``'s scale, as PyTorch's running sum computes it: a window of ``size`` channels
    shifted by one (channel ``c`` sums ``c - pre_pad + 1 .. c + pre_pad - 1`` with
    ``pre_pad = (size - 1) // 2 + 1``), and channel 0, which the running sum never drops."""
    pre_pad = int((size - 1) / 2 + 1)
    windows = np.zeros((channels, channels))
    windows[0, :min(pre_pad, channels)] = 1
    for c in range(1, channels):
        windows[c] = windows[c - 1]
        if c < channels - pre_pad + 1:
            windows[c, c + pre_pad - 1] += 1
        if c > pre_pad:
            windows[c, c - pre_pad] -= 1
    return windows


class CrossMapLRN2d(Module):
    """Local response normalisation across channels of a 4-d input (N, C, H, W), as
    ``torch.nn.CrossMapLRN2d`` (the Lua-torch port): ``x / (k + alpha / size *
    sum x_j^2) ** beta``, the sum over the window of channels PyTorch's loop takes (see
    :func:`_cross_map_windows`; it differs from :class:`LocalResponseNorm`'s centred
    window). PyTorch's hand-written backward is not the derivative of that forward
    (``gradcheck`` fails on it for more than one channel); chainrule's gradient is.

    Raises ValueError for an input that is not 4-d."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             "instead.")
        n, c, h, w = input.shape
        windows = _cross_map_windows(c, self.size).astype(numpy_dtype(input._data.dtype))
        windows = wrap(beside(windows, input._data))
        sums = _ops.matmul(windows, (input * input).reshape(n, c, h * w)).reshape(n, c, h, w)
        scale = sums * (self.alpha / self.size) + self.k
        return scale.pow(-self.beta) * input

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
