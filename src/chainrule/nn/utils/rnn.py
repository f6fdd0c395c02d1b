"""Variable-length sequences, as ``torch.nn.utils.rnn``: :func:`pad_sequence`,
:class:`PackedSequence`, :func:`pack_padded_sequence`, :func:`pad_packed_sequence`,
:func:`pack_sequence`, :func:`unpad_sequence` and :func:`unpack_sequence`.

Reachable as ``chainrule.nn.utils.rnn`` (``chainrule.nn.utils`` is a module, so
``chainrule.nn`` registers this one under that name). Everything is indexing, ``cat`` and
``stack`` of chainrule tensors, so gradients flow from a packed or padded result back to
the sequences it was made from.

PyTorch's data layout: a ``PackedSequence``'s ``data`` (sum of the lengths, \\*) holds time
step 0 of every sequence, then step 1 of those that are long enough, and so on, the
sequences sorted by decreasing length; ``batch_sizes`` (int64, one entry per time step)
counts the sequences at each step; ``sorted_indices`` (None when the input was already
sorted) maps sorted position to original batch position and ``unsorted_indices`` is its
inverse.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ... import _creation
from ... import ops as _ops
from ..._tensor import Tensor, wrap
from .. import functional as F

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "pack_sequence", "unpad_sequence", "unpack_sequence", "invert_permutation"]


def _ints(x):
    """A NumPy int64 array of a tensor, list or array (no graph)."""
    if isinstance(x, Tensor):
        x = x.detach().numpy()
    return np.asarray(x, dtype=np.int64)


def invert_permutation(permutation):
    """The inverse of a permutation (an int64 tensor), or None for None."""
    if permutation is None:
        return None
    p = _ints(permutation)
    out = np.empty_like(p)
    out[p] = np.arange(p.size, dtype=np.int64)
    return F._beside(permutation, out) if isinstance(permutation, Tensor) else wrap(out)


_PackedSequenceBase = namedtuple("PackedSequence_",
                                 ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


class PackedSequence(_PackedSequenceBase):
    """A batch of variable-length sequences in PyTorch's packed layout (a named tuple
    ``(data, batch_sizes, sorted_indices, unsorted_indices)``); build it with
    :func:`pack_padded_sequence` or :func:`pack_sequence` rather than by hand.

    ``data`` is (sum of lengths, \\*); ``batch_sizes`` an int64 tensor (T,), non-increasing;
    ``unsorted_indices`` defaults to the inverse of ``sorted_indices``. Recurrent layers
    (``nn.RNN``, ``nn.LSTM``, ``nn.GRU``) accept one and return one.
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None and not isinstance(batch_sizes, Tensor):
            batch_sizes = wrap(_ints(batch_sizes))
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """The same sequence with ``data`` converted by ``Tensor.to`` (dtype or device)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self

        def move(t):  # the permutations follow the data's device (batch_sizes stays on
            return t if t is None or t.device == data.device else t.to(data.device)  # CPU)

        return type(self)(data, self.batch_sizes, move(self.sorted_indices),
                          move(self.unsorted_indices))

    def cpu(self):
        """The sequence on the CPU (itself when it is there)."""
        return self.to("cpu")

    def double(self):
        """``data`` as float64."""
        return self.to(np.float64)

    def float(self):
        """``data`` as float32."""
        return self.to(np.float32)

    @property
    def is_cuda(self):
        """Whether ``data`` is on a GPU."""
        return self.data.is_cuda

    def is_pinned(self):
        """False."""
        return False


def _check_lengths(lengths, batch, total):
    lengths = _ints(lengths)
    if lengths.ndim != 1:
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                           f"{lengths.ndim}D tensor")
    if lengths.size != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{lengths.size} (batch_size={batch})")
    if lengths.size and lengths.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if lengths.size and lengths.max() > total:
        raise RuntimeError(f"pack_padded_sequence: a length ({int(lengths.max())}) exceeds the "
                           f"input's sequence dim ({total})")
    return lengths


_UNSORTED = ("`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
             "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
             "pack_sequence to sidestep this requirement if you do not need ONNX "
             "exportability.")


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch: ``input`` (T, B, \\*) (``batch_first``: (B, T, \\*)) whose
    sequence ``b`` has ``lengths[b]`` valid steps -> a :class:`PackedSequence`.

    With ``enforce_sorted`` the lengths must be non-increasing (``sorted_indices`` None);
    otherwise the batch is sorted by decreasing length (stably) and the permutation kept.

    Raises RuntimeError for lengths that are not 1-D, not B of them, not positive, longer
    than T, or (with ``enforce_sorted``) not sorted in decreasing order.
    """
    x = F._t(input)
    if batch_first:
        x = _ops.transpose(x, 0, 1)
    lengths = _check_lengths(lengths, x.shape[1], x.shape[0])
    if enforce_sorted:
        if np.any(np.diff(lengths) > 0):
            raise RuntimeError(_UNSORTED)
        sorted_indices = None
    else:
        order = np.argsort(-lengths, kind="stable")
        sorted_indices = F._beside(x, order.astype(np.int64))
        lengths = lengths[order]
        x = _ops.index_select(x, 1, sorted_indices)
    steps = int(lengths[0]) if lengths.size else 0
    batch_sizes = np.array([(lengths > t).sum() for t in range(steps)], dtype=np.int64)
    data = _ops.cat([x[t, :int(b)] for t, b in enumerate(batch_sizes)], 0)
    return PackedSequence(data, wrap(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of :func:`pack_padded_sequence`: returns ``(padded, lengths)``, padded
    (T, B, \\*) (``batch_first``: (B, T, \\*)) in the original batch order, filled with
    ``padding_value`` past each sequence's end (T = ``total_length`` when given, else the
    longest length), and ``lengths`` an int64 tensor (B,).

    Raises ValueError when ``total_length`` is shorter than the longest sequence.
    """
    data, batch_sizes = sequence.data, _ints(sequence.batch_sizes)
    steps = batch_sizes.size
    if total_length is not None and total_length < steps:
        raise ValueError(f"Expected total_length to be at least the length of the longest "
                         f"sequence in input, but got total_length={total_length} and max "
                         f"sequence length being {steps}")
    batch = int(batch_sizes[0]) if steps else 0
    rest = tuple(data.shape[1:])
    rows, offset = [], 0
    for b in batch_sizes.tolist():
        piece = data[offset:offset + b]
        if b < batch:
            fill = _creation.full((batch - b,) + rest, padding_value, dtype=data.dtype,
                                  device=data.device)
            piece = _ops.cat([piece, fill], 0)
        rows.append(piece)
        offset += b
    if total_length is not None and total_length > steps:
        rows += [_creation.full((batch,) + rest, padding_value, dtype=data.dtype,
                                 device=data.device)] * (
            total_length - steps)
    padded = _ops.stack(rows, 0)
    lengths = (batch_sizes[None, :] > np.arange(batch)[:, None]).sum(1).astype(np.int64)
    if sequence.unsorted_indices is not None:
        unsorted = _ints(sequence.unsorted_indices)
        padded = _ops.index_select(padded, 1, wrap(unsorted))
        lengths = lengths[unsorted]
    if batch_first:
        padded = _ops.transpose(padded, 0, 1)
    return padded, wrap(lengths)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of shapes (L_i, \\*) into (max L_i, B, \\*) (``batch_first``:
    (B, max L_i, \\*)), each padded with ``padding_value`` after its end
    (``padding_side='right'``) or before its start (``'left'``). ``sequences`` is a list of
    tensors or a tensor (its dim 0 is the batch).

    Raises RuntimeError for an empty list, a ``padding_side`` other than 'left' or 'right',
    or sequences whose trailing dims differ.
    """
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    sequences = [F._t(s) for s in (_ops.unbind(sequences, 0) if isinstance(sequences, Tensor)
                                   else sequences)]
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    rest = tuple(sequences[0].shape[1:])
    for s in sequences[1:]:
        if tuple(s.shape[1:]) != rest:
            raise RuntimeError(f"pad_sequence: every sequence must have the same trailing "
                               f"dims, got {rest} and {tuple(s.shape[1:])}")
    longest = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        n = longest - s.shape[0]
        if n:
            fill = _creation.full((n,) + rest, padding_value, dtype=s.dtype, device=s.device)
            s = _ops.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        rows.append(s)
    return _ops.stack(rows, 0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of tensors (L_i, \\*) into a :class:`PackedSequence`: the same as
    ``pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=...)``.

    Raises RuntimeError (with ``enforce_sorted``) when the lengths are not non-increasing.
    """
    lengths = [F._t(s).shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences ``padded[:lengths[b], b]`` (``batch_first``:
    ``padded[b, :lengths[b]]``) of a padded batch: the inverse of :func:`pad_sequence`."""
    x = F._t(padded_sequences)
    if not batch_first:
        x = _ops.transpose(x, 0, 1)
    return [x[b, :int(n)] for b, n in enumerate(_ints(lengths).tolist())]


def unpack_sequence(packed_sequences):
    """The list of sequences of a :class:`PackedSequence`, in the original batch order: the
    inverse of :func:`pack_sequence`."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
