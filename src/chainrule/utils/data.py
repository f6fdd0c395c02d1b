"""Datasets and batch loaders with ``torch.utils.data``'s names, for ported training loops:
``TensorDataset``, ``DataLoader`` (batching, shuffling from chainrule's generator,
``drop_last``, a ``collate_fn``), ``random_split``, ``Subset``. Single process: no workers.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _creation
from .._tensor import Tensor, wrap

__all__ = ["Dataset", "TensorDataset", "Subset", "DataLoader", "random_split",
           "default_collate"]


class Dataset:
    """A map-style dataset: ``__getitem__(i)`` and ``__len__``."""

    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class TensorDataset(Dataset):
    """Samples are the ``i``-th entries (along dim 0) of each tensor; all tensors must have
    the same size in dim 0 (ValueError otherwise)."""

    def __init__(self, *tensors):
        sizes = {t.shape[0] for t in tensors}
        if len(sizes) > 1:
            raise ValueError(f"TensorDataset: Size mismatch between tensors (dim 0 sizes "
                             f"{[t.shape[0] for t in tensors]})")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The entries ``indices`` of ``dataset``."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, index):
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split into non-overlapping random subsets of the given lengths (or fractions summing
    to 1), from chainrule's generator (``manual_seed``) or ``generator``."""
    n = len(dataset)
    lengths = list(lengths)
    if lengths and all(0 <= x <= 1 for x in lengths) and math.isclose(sum(lengths), 1.0) \
            and sum(lengths) != n:
        counts = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError("random_split: Sum of input lengths does not equal the length of the "
                         "input dataset!")
    rng = generator or _creation.default_generator
    perm = rng.permutation(n)
    out, start = [], 0
    for k in lengths:
        out.append(Subset(dataset, perm[start:start + k].tolist()))
        start += k
    return out


def default_collate(batch):
    """Stack a list of samples: tensors along a new dim 0, numbers into a tensor, tuples
    and dicts entry by entry."""
    from ..ops import stack

    first = batch[0]
    if isinstance(first, Tensor):
        return stack(list(batch), 0)
    if isinstance(first, (int, float, np.number, bool)):
        return wrap(np.asarray(batch))
    if isinstance(first, np.ndarray):
        return wrap(np.stack(batch))
    if isinstance(first, dict):
        return {k: default_collate([b[k] for b in batch]) for k in first}
    if isinstance(first, (tuple, list)):
        return type(first)(default_collate(list(col)) for col in zip(*batch)) \
            if not hasattr(first, "_fields") else \
            type(first)(*[default_collate(list(col)) for col in zip(*batch)])
    return batch


class DataLoader:
    """Batches of a dataset, as ``torch.utils.data.DataLoader`` (``num_workers`` is
    accepted and ignored: one process). ``shuffle`` draws a new order each epoch from
    chainrule's generator (``manual_seed``) or ``generator``. A ``TensorDataset`` is sliced
    directly (one indexing per batch) rather than sample by sample."""

    def __init__(self, dataset, batch_size=1, shuffle=False, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 generator=None, **kwargs):
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"DataLoader: batch_size should be a positive integer value, but "
                             f"got batch_size={batch_size}")
        self.dataset, self.batch_size, self.shuffle = dataset, batch_size, shuffle
        self.sampler, self.drop_last, self.generator = sampler, drop_last, generator
        self.collate_fn = collate_fn or default_collate

    def _order(self):
        n = len(self.dataset)
        if self.sampler is not None:
            return list(self.sampler)
        if self.shuffle:
            return (self.generator or _creation.default_generator).permutation(n).tolist()
        return list(range(n))

    def __iter__(self):
        order = self._order()
        if self.batch_size is None:  # no batching: one sample at a time
            for i in order:
                yield self.dataset[i]
            return
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            if self.drop_last and len(idx) < self.batch_size:
                return
            if isinstance(self.dataset, TensorDataset) and self.collate_fn is default_collate:
                yield [t[np.asarray(idx)] for t in self.dataset.tensors]
            else:
                yield self.collate_fn([self.dataset[i] for i in idx])

    def __len__(self):
        n = len(self.dataset) if self.sampler is None else len(list(self.sampler))
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
