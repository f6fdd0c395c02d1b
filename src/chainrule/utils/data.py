"""Datasets and batch loaders with ``torch.utils.data``'s names, for ported training loops:
``Dataset``, ``IterableDataset``, ``TensorDataset``, ``ConcatDataset``, ``ChainDataset``,
``Subset``, ``StackDataset``, ``random_split``; the samplers ``SequentialSampler``,
``RandomSampler``, ``SubsetRandomSampler``, ``WeightedRandomSampler``, ``BatchSampler``,
``DistributedSampler``; ``DataLoader`` (batching, shuffling from chainrule's generator,
``sampler=``, ``batch_sampler=``, ``drop_last``, a ``collate_fn``, iterable datasets,
``__getitems__``); ``default_collate``, ``default_convert``, ``get_worker_info``.

Everything runs in the calling process: ``num_workers > 0`` is emulated there (each
"worker" has its own shallow copy of the dataset, ``get_worker_info()`` and
``worker_init_fn`` see it, batches are interleaved as PyTorch's workers deliver them).
"""

from __future__ import annotations

import bisect
import collections.abc
import copy
import itertools
import math
import re
import warnings

import numpy as np

from .. import _creation
from .._tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset",
           "Subset", "DataLoader", "random_split", "default_collate", "Sampler",
           "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "StackDataset", "default_convert",
           "get_worker_info", "DistributedSampler", "WorkerInfo"]


class Dataset:
    """A map-style dataset: ``__getitem__(i)`` and ``__len__``; ``a + b`` is
    ``ConcatDataset([a, b])``.

    Raises NotImplementedError from ``__getitem__`` unless a subclass defines it. Like
    PyTorch's, it has no ``__len__`` (``len()`` is Python's TypeError)."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset, collections.abc.Iterable):
    """A dataset that is a stream: subclasses define ``__iter__`` (and may define
    ``__len__``); ``DataLoader`` batches what it yields, in order. ``a + b`` is
    ``ChainDataset([a, b])``. Abstract, as PyTorch's: instantiating a class without
    ``__iter__`` is a TypeError."""

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


class _SizeMismatchError(AssertionError, ValueError):
    """TensorDataset's size check: PyTorch raises AssertionError; chainrule used to raise
    ValueError, so both catch it."""


class TensorDataset(Dataset):
    """Samples are the ``i``-th entries (along dim 0) of each tensor; all tensors must have
    the same size in dim 0 (otherwise an AssertionError, as PyTorch's, that is a ValueError
    too: "Size mismatch between tensors")."""

    def __init__(self, *tensors):
        if any(tensors[0].shape[0] != t.shape[0] for t in tensors):
            raise _SizeMismatchError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The entries ``indices`` of ``dataset`` (``indices`` kept as given: a list, a range,
    a tensor). ``subset[[i, j]]`` indexes ``dataset`` with the list of their indices, and
    ``__getitems__`` (what ``DataLoader`` calls for a batch) uses ``dataset``'s own
    ``__getitems__`` when it has one.

    Raises NotImplementedError for a subclass that overrides ``__getitem__`` but not
    ``__getitems__`` (as PyTorch's: ``DataLoader`` would bypass the override)."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices
        if type(self).__getitem__ is not Subset.__getitem__ \
                and type(self).__getitems__ is Subset.__getitems__:
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. "
                "When subclassing Subset and overriding __getitem__, you must also override "
                "__getitems__ to ensure DataLoader works correctly with your custom logic. "
                "A simple implementation:\n\n"
                "def __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[idx] for idx in indices])
        return [self.dataset[self.indices[idx]] for idx in indices]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split into non-overlapping random subsets of the given lengths, as
    ``torch.utils.data.random_split``, from chainrule's generator (``manual_seed``) or
    ``generator``.

    Fractions that sum to 1 (``math.isclose`` and not above 1) become
    ``floor(len(dataset) * f)`` each, the remainder added one by one round-robin from the
    first split (``[0.5, 0.5]`` of 11 items: 6 and 5); a split of length 0 warns.

    Raises ValueError for a fraction outside ``[0, 1]`` or lengths whose sum is not the
    dataset's length."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        subset_lengths = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(math.floor(len(dataset) * frac))
        remainder = len(dataset) - sum(subset_lengths)
        for i in range(remainder):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. "
                              f"This might result in an empty dataset.", stacklevel=2)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input "
                         "dataset!")
    total = sum(lengths)
    if isinstance(total, bool) or not isinstance(total, (int, np.integer)):
        raise TypeError(f"randperm(): argument 'n' must be int, not {type(total).__name__}")
    indices = _rng(generator).permutation(int(total)).tolist()
    out = []
    for offset, length in zip(itertools.accumulate(lengths), lengths):
        out.append(Subset(dataset, indices[offset - length:offset]))
    return out


class StackDataset(Dataset):
    """Datasets of one length side by side, as ``torch.utils.data.StackDataset``: item
    ``i`` is the tuple of their items ``i`` (``StackDataset(a, b)``) or a dict
    (``StackDataset(x=a, y=b)``); ``__getitems__`` builds a batch of them, through the
    datasets' own ``__getitems__`` where they have one.

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

    @staticmethod
    def _column(dataset, indices):
        if callable(getattr(dataset, "__getitems__", None)):
            items = dataset.__getitems__(indices)
            if len(items) != len(indices):
                raise ValueError(f"Nested dataset's output size mismatch. Expected "
                                 f"{len(indices)}, got {len(items)}")
            return items
        return [dataset[i] for i in indices]

    def __getitems__(self, indices):
        if isinstance(self.datasets, dict):
            batch = [{} for _ in indices]
            for k, d in self.datasets.items():
                for sample, item in zip(batch, self._column(d, indices)):
                    sample[k] = item
            return batch
        columns = [self._column(d, indices) for d in self.datasets]
        return [tuple(col[j] for col in columns) for j in range(len(indices))]

    def __len__(self):
        return self._length


# --- workers (emulated in this process) --------------------------------------------------

class WorkerInfo:
    """What :func:`get_worker_info` returns inside an (emulated) DataLoader worker: ``id``,
    ``num_workers``, ``seed`` and ``dataset`` (that worker's copy). Read-only, as
    PyTorch's (RuntimeError on assignment)."""

    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} "
                               f"objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        items = [f"{k}={getattr(self, k)}" for k in self.__keys]
        return f"{self.__class__.__name__}({', '.join(items)})"


_worker_info = None


def get_worker_info():
    """Information about the current DataLoader worker: None in the main process (and
    with ``num_workers=0``), so an ``IterableDataset`` that shards by worker reads
    everything; while an emulated worker (``num_workers > 0``) runs the dataset,
    ``worker_init_fn`` or ``__iter__``, a :class:`WorkerInfo`."""
    return _worker_info


class _Worker:
    """One emulated worker: its WorkerInfo (with a shallow copy of the dataset) and, for an
    iterable dataset, its iterator."""

    def __init__(self, loader, worker_id, base_seed):
        self.dataset = copy.copy(loader.dataset)
        self.info = WorkerInfo(id=worker_id, num_workers=loader.num_workers,
                               seed=base_seed + worker_id, dataset=self.dataset)
        self.iterator = None
        if loader.worker_init_fn is not None:
            self.run(loader.worker_init_fn, worker_id)

    def run(self, fn, *args):
        global _worker_info
        previous, _worker_info = _worker_info, self.info
        try:
            return fn(*args)
        finally:
            _worker_info = previous


# --- collation ---------------------------------------------------------------------------

_np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
    "found {}")


def default_convert(data):
    """What ``DataLoader`` applies to each sample when it does not batch
    (``batch_size=None``), as ``torch.utils.data.default_convert``: NumPy arrays (not of
    strings or objects) and NumPy scalars become tensors, recursively inside mappings
    (their type kept), named tuples (kept), tuples (which become lists, as PyTorch's) and
    other sequences (their type kept when it can be rebuilt, else lists); anything else is
    returned as it is."""
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" \
                and _np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return _creation.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate_tensor_fn(batch, *, collate_fn_map=None):
    """Tensors stacked along a new dim 0."""
    from ..ops import stack
    return stack(list(batch), 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    """NumPy arrays as tensors, stacked; TypeError for arrays of strings or objects."""
    elem = batch[0]
    if _np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([_creation.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    """NumPy scalars as one tensor of their dtype."""
    return _creation.as_tensor(list(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    """Python floats as a float64 tensor (as PyTorch's)."""
    return _creation.tensor(list(batch), dtype=np.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    """Python ints as an int64 tensor (bools as a bool tensor)."""
    return _creation.tensor(list(batch))


def collate_str_fn(batch, *, collate_fn_map=None):
    """Strings and bytes are left as they are."""
    return batch


default_collate_fn_map = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def collate(batch, *, collate_fn_map=None):
    """``torch.utils.data._utils.collate.collate``: collate ``batch`` by the type of its
    first element, looking it up in ``collate_fn_map`` (exact type, then the first key it
    is an instance of), else recursing into mappings, named tuples and sequences (equal
    lengths; tuples become lists).

    Raises RuntimeError for sequences of unequal lengths, TypeError for elements of any
    other type."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: collate([d[key] for d in batch],
                                           collate_fn_map=collate_fn_map) for key in elem})
                return clone
            return elem_type({key: collate([d[key] for d in batch],
                                           collate_fn_map=collate_fn_map) for key in elem})
        except TypeError:
            return {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                    for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map)
                           for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(samples, collate_fn_map=collate_fn_map)
                              for samples in transposed])
        except TypeError:
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def default_collate(batch):
    """Put a list of samples into batches, as ``torch.utils.data.default_collate``:
    tensors stacked along a new dim 0; NumPy arrays and scalars as tensors; Python floats
    a float64 tensor, ints int64, bools bool; strings and bytes left as lists; mappings
    and named tuples entry by entry (their type kept); other sequences entry by entry
    (tuples become lists).

    Raises TypeError for elements of another type (None, objects) or arrays of strings,
    RuntimeError for sequences of unequal lengths."""
    return collate(batch, collate_fn_map=default_collate_fn_map)


# --- samplers ----------------------------------------------------------------------------

def _rng(generator):
    return _creation.default_generator if generator is None else generator


def _is_int(value):
    """PyTorch's check for a count: a Python int (bools included: they are ints)."""
    return isinstance(value, int)


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
    is not a positive Python int (NumPy integers are refused, as by PyTorch)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source, self.replacement = data_source, replacement
        self._num_samples, self.generator = num_samples, generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={replacement}")
        if not _is_int(self.num_samples) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        """How many indices one pass yields."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, k, rng = len(self.data_source), self.num_samples, _rng(self.generator)
        if self.replacement:
            if n <= 0:
                raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                                   f"from=0 >= to={n}")
            # drawn lazily in chunks of 32, as PyTorch's: num_samples=int(1e10) (an
            # "infinite" loader) must not draw them all up front
            for start in range(0, k, 32):
                yield from rng.integers(0, n, size=min(32, k - start)).tolist()
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
    ``replacement`` or without; from ``generator`` or chainrule's generator. Without
    replacement, as ``torch.multinomial``: once the indices of positive weight are used up,
    those of weight 0 follow in a random order.

    Raises ValueError for a ``num_samples`` that is not a positive Python int, a non-bool
    ``replacement`` or weights that are not 1-D; RuntimeError, when iterated, for more
    samples than weights without replacement or invalid weights (PyTorch's messages)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not _is_int(num_samples) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        self.weights = _creation.as_tensor(weights, dtype=np.float64)
        if self.weights.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(self.weights.shape)}")
        self.num_samples, self.replacement, self.generator = num_samples, replacement, generator

    def __iter__(self):
        w = np.asarray(self.weights.detach().numpy(), dtype=np.float64)
        if not self.replacement and self.num_samples > w.size:
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                               "replacement")
        if not np.all(w >= 0):  # NaN too, as PyTorch's check
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry < 0)")
        if not np.all(np.isfinite(w)):
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry = infinity or NaN)")
        if not w.sum() > 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        rng = _rng(self.generator)
        if self.replacement:
            draw = rng.choice(w.size, size=self.num_samples, replace=True, p=w / w.sum())
        else:  # exponential keys (weighted sampling without replacement); zeros last
            with np.errstate(divide="ignore"):
                keys = np.log(w) - np.log(rng.exponential(size=w.size))
            order = np.lexsort((rng.random(w.size), -keys))
            draw = order[:self.num_samples]
        yield from draw.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` consecutive indices of ``sampler`` (the last one shorter
    unless ``drop_last``), e.g. ``list(BatchSampler(SequentialSampler(range(5)), 2,
    False))`` is ``[[0, 1], [2, 3], [4]]``.

    Raises ValueError for a ``batch_size`` that is not a positive Python int or a non-bool
    ``drop_last``."""

    def __init__(self, sampler, batch_size, drop_last):
        if not _is_int(batch_size) or isinstance(batch_size, bool) or batch_size <= 0:
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


class DistributedSampler(Sampler):
    """``torch.utils.data.DistributedSampler``: the share of ``dataset``'s indices that
    replica ``rank`` of ``num_replicas`` reads, every ``num_replicas``-th index from
    ``rank`` on; shuffled (when ``shuffle``) by one permutation of generator seed
    ``seed + epoch`` (the same on every replica; call ``set_epoch`` each epoch). Without
    ``drop_last`` the indices are padded by repeating them from the start to a multiple of
    ``num_replicas``; with it, the tail that does not divide evenly is dropped.

    chainrule has no process groups: ``num_replicas`` and ``rank`` must be given
    (RuntimeError otherwise). Raises ValueError for a ``rank`` outside
    ``[0, num_replicas - 1]``."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            raise RuntimeError("Requires distributed package to be available")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.drop_last = 0, drop_last
        if drop_last and len(dataset) % num_replicas != 0:
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle, self.seed = shuffle, seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = _creation.Generator().manual_seed(self.seed + self.epoch)
            indices = g.permutation(n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Set the epoch, which (with ``seed``) picks the shuffle."""
        self.epoch = epoch


class _InfiniteConstantSampler(Sampler):
    """What a DataLoader over an IterableDataset draws its (ignored) indices from."""

    def __iter__(self):
        while True:
            yield None


# --- the loader --------------------------------------------------------------------------

class DataLoader:
    """Batches of a dataset, as ``torch.utils.data.DataLoader``, loaded in this process.

    Map-style datasets: indices come from ``sampler`` (default: :class:`RandomSampler`
    with ``generator`` when ``shuffle``, else :class:`SequentialSampler`), grouped by a
    :class:`BatchSampler` of ``batch_size`` and ``drop_last``, or from ``batch_sampler``
    (lists of indices) when given; a batch is ``dataset.__getitems__(indices)`` when the
    dataset has that method, else its items one by one. ``batch_size=None`` yields single
    samples, uncollated. An :class:`IterableDataset` is read in its own order and its items
    grouped into batches. Batches go through ``collate_fn`` (default
    :func:`default_collate`; without batching each sample goes through it, default
    :func:`default_convert`).

    ``num_workers > 0`` is emulated in this process: each worker gets a shallow copy of
    the dataset and a :class:`WorkerInfo` (what :func:`get_worker_info` returns while it
    works), ``worker_init_fn(worker_id)`` runs once per worker (once in all with
    ``persistent_workers``), map-style batches go to the workers in turn (same batches as
    with no workers) and an iterable dataset is read by every worker, their batches
    interleaved in turn, as PyTorch's workers deliver them (shard it with
    ``get_worker_info()`` to avoid duplicates). ``pin_memory`` and ``prefetch_factor`` are
    accepted and have no effect.

    Raises ValueError for a negative ``num_workers`` or ``timeout``, ``prefetch_factor``
    without workers (or negative), ``persistent_workers`` or ``multiprocessing_context``
    without workers, a ``batch_size`` that is not a positive int; ``sampler`` together with
    ``shuffle``; ``batch_sampler`` together with ``batch_size`` (other than 1),
    ``shuffle``, ``sampler`` or ``drop_last``; ``batch_size=None`` with ``drop_last``; and,
    for an ``IterableDataset``, any of ``shuffle``, ``sampler`` or ``batch_sampler``. As
    PyTorch's, iterating with ``timeout > 0`` and no workers is an AssertionError, and
    ``batch_size``, ``batch_sampler``, ``sampler``, ``drop_last``, ``dataset`` and
    ``persistent_workers`` cannot be set after construction (ValueError). ``len()`` of a
    loader over an iterable dataset without ``__len__`` raises TypeError.
    """

    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 timeout=0, worker_init_fn=None, multiprocessing_context=None, generator=None,
                 *, prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 "
                             "to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset, self.num_workers = dataset, num_workers
        self.prefetch_factor, self.pin_memory = prefetch_factor, pin_memory
        self.pin_memory_device, self.timeout = pin_memory_device, timeout
        self.worker_init_fn, self.in_order = worker_init_fn, in_order
        if multiprocessing_context is not None:
            if num_workers == 0:
                raise ValueError(f"multiprocessing_context can only be used with "
                                 f"multi-process loading (num_workers > 0), but got "
                                 f"num_workers={num_workers}")
            if isinstance(multiprocessing_context, str):
                import multiprocessing
                valid = multiprocessing.get_all_start_methods()
                if multiprocessing_context not in valid:
                    raise ValueError(f"multiprocessing_context option should specify a valid "
                                     f"start method in {valid!r}, but got "
                                     f"multiprocessing_context={multiprocessing_context!r}")
        self.multiprocessing_context = multiprocessing_context

        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
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
        if sampler is None:
            if iterable:
                sampler = _InfiniteConstantSampler()
            else:
                sampler = (RandomSampler(dataset, generator=generator) if shuffle
                           else SequentialSampler(dataset))
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler, self.generator = sampler, batch_sampler, generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._workers = None  # the persistent workers, once started
        self.__initialized = True

    def __setattr__(self, attr, val):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler",
                                           "drop_last", "dataset", "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        if self.num_workers == 0 and self.timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        return _DataLoaderIter(self)

    def _start_workers(self):
        if self.num_workers == 0:
            return None
        if self.persistent_workers and self._workers is not None:
            return self._workers
        base_seed = int(_rng(self.generator).integers(0, 2 ** 62))
        workers = [_Worker(self, i, base_seed) for i in range(self.num_workers)]
        if self.persistent_workers:
            super().__setattr__("_workers", workers)
        return workers

    def _fetch(self, dataset, index):
        if not self._auto_collation:
            return self.collate_fn(dataset[index])
        getitems = getattr(dataset, "__getitems__", None)
        if callable(getitems):
            return self.collate_fn(getitems(index))
        if (self.collate_fn is default_collate and isinstance(dataset, TensorDataset)
                and type(dataset).__getitem__ is TensorDataset.__getitem__
                and all(isinstance(t, Tensor) for t in dataset.tensors)):
            rows = np.asarray(index)  # integer positions (not bools): one indexing per batch
            if rows.dtype.kind in "iu" and rows.ndim == 1 and not any(
                    i.__class__ is bool for i in index[:1]):
                return [t[rows] for t in dataset.tensors]
        return self.collate_fn([dataset[i] for i in index])

    def _stream(self, iterator):
        """Batches (or converted items) of one iterator over the iterable dataset."""
        if self.batch_size is None:
            for item in iterator:
                yield self.collate_fn(item)
            return
        while True:
            batch = list(itertools.islice(iterator, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield self.collate_fn(batch)

    def _batches(self):
        workers = self._start_workers()
        if isinstance(self.dataset, IterableDataset):
            if workers is None:
                yield from self._stream(iter(self.dataset))
                return
            active = [(w, self._stream(w.run(iter, w.dataset))) for w in workers]
            i = 0
            while active:
                worker, stream = active[i]
                try:
                    batch = worker.run(next, stream)
                except StopIteration:
                    active.pop(i)
                    i = i % len(active) if active else 0
                    continue
                yield batch
                i = (i + 1) % len(active)
            return
        for k, index in enumerate(self._index_sampler):
            if workers is None:
                yield self._fetch(self.dataset, index)
            else:
                worker = workers[k % len(workers)]
                yield worker.run(self._fetch, worker.dataset, index)

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self._index_sampler)


class _DataLoaderIter:
    """The iterator ``iter(loader)`` returns: its batches, and ``len()`` as the loader's."""

    def __init__(self, loader):
        self._loader = loader
        self._batches = loader._batches()

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._batches)

    def __len__(self):
        return len(self._loader)
