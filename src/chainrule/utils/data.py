"""Datasets and batch loaders with ``torch.utils.data``'s names, for ported training loops:
``Dataset``, ``IterableDataset``, ``TensorDataset``, ``ConcatDataset``, ``ChainDataset``,
``Subset``, ``random_split``; the samplers ``SequentialSampler``, ``RandomSampler``,
``SubsetRandomSampler``, ``WeightedRandomSampler``, ``BatchSampler``; ``DataLoader``
(batching, shuffling from chainrule's generator, ``sampler=``, ``batch_sampler=``,
``drop_last``, a ``collate_fn``, iterable datasets). Single process: no workers.
"""

from __future__ import annotations

import bisect
import itertools
import math

import numpy as np

from .. import _creation
from .._tensor import Tensor, wrap

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset",
           "Subset", "DataLoader", "random_split", "default_collate", "Sampler",
           "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "StackDataset", "default_convert",
           "get_worker_info"]


class Dataset:
    """A map-style dataset: ``__getitem__(i)`` and ``__len__``; ``a + b`` is
    ``ConcatDataset([a, b])``.

    Raises NotImplementedError from ``__getitem__`` and TypeError from ``len()`` unless a
    subclass defines them (``len()`` of a PyTorch dataset without ``__len__`` is a
    TypeError too)."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __len__(self):
        raise TypeError(f"object of type '{type(self).__name__}' has no len()")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: subclasses define ``__iter__`` (and may define
    ``__len__``); ``DataLoader`` batches what it yields, in order. ``a + b`` is
    ``ChainDataset([a, b])``."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class ConcatDataset(Dataset):
    """Map-style datasets one after the other: index ``i`` of the whole is index
    ``i - cumulative_sizes[k-1]`` of dataset ``k``; negative indices count from the end.

    Raises AssertionError for no datasets or an :class:`IterableDataset` among them,
    ValueError for a negative index beyond the length."""

    @staticmethod
    def cumsum(sequence):
        """The running totals of the datasets' lengths."""
        return list(itertools.accumulate(len(e) for e in sequence))

    def __init__(self, datasets):
        self.datasets = list(datasets)
        assert len(self.datasets) > 0, "datasets should not be an empty iterable"
        for d in self.datasets:
            assert not isinstance(d, IterableDataset), \
                "ConcatDataset does not support IterableDataset"
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        k = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if k == 0 else idx - self.cumulative_sizes[k - 1]
        return self.datasets[k][sample_idx]


class ChainDataset(IterableDataset):
    """Iterable datasets chained: iterating it iterates each in turn; its length is the sum
    of theirs.

    Raises AssertionError (when iterated or measured) for a dataset that is not an
    :class:`IterableDataset`."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            assert isinstance(d, IterableDataset), "ChainDataset only supports IterableDataset"
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            assert isinstance(d, IterableDataset), "ChainDataset only supports IterableDataset"
            total += len(d)
        return total


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


class StackDataset(Dataset):
    """Datasets of one length side by side, as ``torch.utils.data.StackDataset``: item
    ``i`` is the tuple of their items ``i`` (``StackDataset(a, b)``) or a dict
    (``StackDataset(x=a, y=b)``).

    Raises ValueError for no datasets, both positional and keyword ones, or datasets of
    different lengths."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        datasets = list(args) if args else list(kwargs.values())
        self._length = len(datasets[0])
        if any(self._length != len(d) for d in datasets):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self):
        return self._length


def get_worker_info():
    """Information about the current DataLoader worker process: None, as in PyTorch's main
    process (chainrule's DataLoader loads in the calling process), so an
    ``IterableDataset`` that shards by worker reads everything."""
    return None


def default_convert(data):
    """What ``DataLoader`` applies to each sample when it does not batch
    (``batch_size=None``), as ``torch.utils.data.default_convert``: NumPy arrays (not of
    strings) and NumPy scalars become tensors, recursively inside dicts, named tuples
    (kept), tuples (which become lists, as PyTorch's) and lists; anything else is
    returned as it is."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if data.dtype.kind in "USO" else wrap(np.array(data))
    if isinstance(data, (np.number, np.bool_)):
        return wrap(np.asarray(data))
    if isinstance(data, dict):
        try:
            return type(data)({k: default_convert(v) for k, v in data.items()})
        except TypeError:
            return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, list):
        return [default_convert(d) for d in data]
    return data


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


# --- samplers ----------------------------------------------------------------------------

def _rng(generator):
    return _creation.default_generator if generator is None else generator


def _check_num_samples(num_samples):
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) \
            or num_samples <= 0:
        raise ValueError(f"num_samples should be a positive integer value, but got "
                         f"num_samples={num_samples}")


class Sampler:
    """The base of samplers: an iterable of dataset indices (or, for :class:`BatchSampler`,
    of lists of indices). Subclasses define ``__iter__`` and usually ``__len__``."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """The indices ``0, 1, ..., len(data_source) - 1`` in order."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """Random indices of ``data_source``, drawn when iterated from ``generator`` (default:
    chainrule's generator, so ``manual_seed`` makes them reproducible).

    Without ``replacement``: a permutation (``num_samples`` more than the length: whole
    permutations one after the other, the last one cut). With ``replacement``:
    ``num_samples`` independent uniform draws. ``num_samples`` defaults to the length.

    Raises TypeError for a non-bool ``replacement``, ValueError for a ``num_samples`` that
    is not a positive int."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source, self.replacement = data_source, replacement
        self._num_samples, self.generator = num_samples, generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={replacement}")
        _check_num_samples(self.num_samples)

    @property
    def num_samples(self):
        """How many indices one pass yields."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, k, rng = len(self.data_source), self.num_samples, _rng(self.generator)
        if self.replacement:
            yield from rng.integers(0, n, size=k).tolist()
            return
        for _ in range(k // n):
            yield from rng.permutation(n).tolist()
        if k % n:
            yield from rng.permutation(n)[:k % n].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order (a new one each pass, from ``generator`` or
    chainrule's generator)."""

    def __init__(self, indices, generator=None):
        self.indices, self.generator = indices, generator

    def __iter__(self):
        for i in _rng(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices in ``[0, len(weights))``, index ``i`` drawn with probability
    proportional to ``weights[i]`` (a 1-D sequence or tensor of non-negative numbers), with
    ``replacement`` or without; from ``generator`` or chainrule's generator.

    Raises ValueError for a ``num_samples`` that is not a positive int, a non-bool
    ``replacement`` or weights that are not 1-D; RuntimeError, when iterated, for more
    samples than weights without replacement or invalid weights."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        _check_num_samples(num_samples)
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        w = np.asarray(weights.detach().numpy() if isinstance(weights, Tensor) else weights,
                       dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(w.shape)}")
        self.weights = wrap(w)
        self.num_samples, self.replacement, self.generator = num_samples, replacement, generator

    def __iter__(self):
        w = self.weights.numpy()
        if not self.replacement and self.num_samples > w.size:
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                               "replacement")
        if np.any(w < 0) or not np.all(np.isfinite(w)) or w.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (weights must be finite, "
                               "non-negative and not all zero)")
        if not self.replacement and np.count_nonzero(w) < self.num_samples:
            raise RuntimeError("invalid multinomial distribution (with replacement=False, not "
                               "enough non-negative category to sample)")
        draw = _rng(self.generator).choice(w.size, size=self.num_samples,
                                           replace=self.replacement, p=w / w.sum())
        yield from draw.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` consecutive indices of ``sampler`` (the last one shorter
    unless ``drop_last``), e.g. ``list(BatchSampler(SequentialSampler(range(5)), 2,
    False))`` is ``[[0, 1], [2, 3], [4]]``.

    Raises ValueError for a ``batch_size`` that is not a positive int or a non-bool
    ``drop_last``."""

    def __init__(self, sampler, batch_size, drop_last):
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got "
                             f"drop_last={drop_last}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        it = iter(self.sampler)
        while True:
            batch = list(itertools.islice(it, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


# --- the loader --------------------------------------------------------------------------

class DataLoader:
    """Batches of a dataset, as ``torch.utils.data.DataLoader`` (``num_workers`` and the
    other process options are accepted and ignored: one process).

    Map-style datasets: indices come from ``sampler`` (default: :class:`RandomSampler`
    with ``generator`` when ``shuffle``, else :class:`SequentialSampler`), grouped by a
    :class:`BatchSampler` of ``batch_size`` and ``drop_last``, or from ``batch_sampler``
    (lists of indices) when given; ``batch_size=None`` yields single samples, uncollated.
    An :class:`IterableDataset` is read in its own order and its items grouped into
    batches. Batches go through ``collate_fn`` (default :func:`default_collate`; without
    batching each sample goes through it, default :func:`default_convert`); a
    ``TensorDataset`` with the default collate is sliced directly (one indexing per batch,
    a list of tensors).

    Raises ValueError for a non-positive ``batch_size``; ``sampler`` together with
    ``shuffle``; ``batch_sampler`` together with ``batch_size`` (other than 1),
    ``shuffle``, ``sampler`` or ``drop_last``; ``batch_size=None`` with ``drop_last``; and,
    for an ``IterableDataset``, any of ``shuffle``, ``sampler`` or ``batch_sampler``.
    ``len()`` of a loader over an iterable dataset without ``__len__`` raises TypeError.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 timeout=0, worker_init_fn=None, multiprocessing_context=None, generator=None,
                 **kwargs):
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"DataLoader: batch_size should be a positive integer value, but "
                             f"got batch_size={batch_size}")
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            for arg, value in (("shuffle", shuffle), ("sampler", sampler),
                               ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                     f"{arg} option, but got {arg}={value}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None and not iterable:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_size is not None and batch_sampler is None and not iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.sampler, self.batch_sampler, self.generator = sampler, batch_sampler, generator
        self.num_workers = num_workers
        # PyTorch's default: collate batches, convert single samples (batch_size=None)
        batching = self.batch_sampler is not None or (iterable and batch_size is not None)
        self.collate_fn = collate_fn or (default_collate if batching else default_convert)

    def _iter_iterable(self):
        it = iter(self.dataset)
        if self.batch_size is None:
            for item in it:
                yield self.collate_fn(item)
            return
        while True:
            batch = list(itertools.islice(it, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield self.collate_fn(batch)

    def __iter__(self):
        if isinstance(self.dataset, IterableDataset):
            yield from self._iter_iterable()
            return
        if self.batch_sampler is None:  # no batching: one sample at a time, converted
            for i in self.sampler:
                yield self.collate_fn(self.dataset[i])
            return
        for idx in self.batch_sampler:
            if isinstance(self.dataset, TensorDataset) and self.collate_fn is default_collate:
                yield [t[np.asarray(idx)] for t in self.dataset.tensors]
            else:
                yield self.collate_fn([self.dataset[i] for i in idx])

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)
