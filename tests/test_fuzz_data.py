"""Regression tests for mismatches between chainrule.utils.data and torch.utils.data found by
differential testing: collation, __getitems__, Subset/StackDataset batching, random_split,
DataLoader argument checks, samplers, emulated workers, DistributedSampler. Expected values
are written out; PyTorch is compared as well when it is installed."""

from __future__ import annotations

import warnings
from collections import OrderedDict, defaultdict, namedtuple

import numpy as np
import pytest

import chainrule as cr
from chainrule.utils import data as D

try:
    import torch
    import torch.utils.data as TD
except ImportError:
    torch = TD = None

Pt = namedtuple("Pt", "x y")


def _plain(x):
    """Tensors as ("T", dtype name, values); containers kept by type name."""
    if isinstance(x, cr.Tensor) or (torch is not None and isinstance(x, torch.Tensor)):
        return ("T", str(x.dtype).replace("torch.", ""), x.tolist())
    if isinstance(x, dict):
        return (type(x).__name__, [(k, _plain(v)) for k, v in x.items()])
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, [_plain(v) for v in x])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [_plain(v) for v in x])
    return x


def _sq(M, n):
    class Sq(M.Dataset):
        def __len__(self):
            return n

        def __getitem__(self, i):
            return i * i
    return Sq()


def _libs():
    out = [(cr, D)]
    if torch is not None:
        out.append((torch, TD))
    return out


# --- batches that bypassed the dataset --------------------------------------------------

def test_tensordataset_subclass_getitem_is_used_by_loader():
    for lib, M in _libs():
        class Scaled(M.TensorDataset):
            def __getitem__(self, i):
                return (self.tensors[0][i] * 10,)
        batches = [_plain(b) for b in M.DataLoader(Scaled(lib.arange(4)), batch_size=3)]
        assert batches == [("list", [("T", "int64", [0, 10, 20])]),
                           ("list", [("T", "int64", [30])])]


def test_loader_uses_getitems():
    for _lib, M in _libs():
        class G(M.Dataset):
            def __len__(self):
                return 4

            def __getitem__(self, i):
                return i

            def __getitems__(self, idx):
                return [100 + i for i in idx]
        assert [b.tolist() for b in M.DataLoader(G(), batch_size=3)] == [[100, 101, 102], [103]]
        assert [int(b) for b in M.DataLoader(G(), batch_size=None)] == [0, 1, 2, 3]


def test_subset_and_stack_getitems_and_list_index():
    for lib, M in _libs():
        base = M.TensorDataset(lib.arange(10))
        sub = M.Subset(base, [3, 1, 4])
        assert _plain(sub[[0, 2]]) == ("tuple", [("T", "int64", [3, 4])])
        assert M.Subset(_sq(M, 10), [3, 1, 4]).__getitems__([0, 2]) == [9, 16]
        assert type(M.Subset(base, range(3)).indices) is range
        assert M.StackDataset(_sq(M, 5), _sq(M, 5)).__getitems__([1, 2]) == [(1, 1), (4, 4)]
        assert M.StackDataset(a=_sq(M, 5)).__getitems__([1, 2]) == [{"a": 1}, {"a": 4}]
        # a batch of a Subset of a TensorDataset is a list of tensors, as the dataset's own
        assert [_plain(b) for b in M.DataLoader(sub, batch_size=2)] == \
            [("list", [("T", "int64", [3, 1])]), ("list", [("T", "int64", [4])])]

        class Bad(M.Subset):
            def __getitem__(self, i):
                return 0
        with pytest.raises(NotImplementedError, match="overrides __getitem__ but not"):
            Bad(base, [0])


# --- default_collate / default_convert ---------------------------------------------------

def test_default_collate_types_as_pytorch():
    cases = [
        ([1.5, 2.0], ("T", "float64", [1.5, 2.0])),
        ([1, 2], ("T", "int64", [1, 2])),
        ([True, False], ("T", "bool", [True, False])),
        ([np.float32(1), np.float32(2)], ("T", "float32", [1.0, 2.0])),
        ([np.int32(1), np.int32(2)], ("T", "int32", [1, 2])),
        ([np.bool_(True), np.bool_(False)], ("T", "bool", [True, False])),
        ([(1, 2.0), (3, 4.0)], ("list", [("T", "int64", [1, 3]), ("T", "float64", [2.0, 4.0])])),
        ([[1, "a"], [2, "b"]], ("list", [("T", "int64", [1, 2]), ("tuple", ["a", "b"])])),
        ([OrderedDict(a=1), OrderedDict(a=2)], ("OrderedDict", [("a", ("T", "int64", [1, 2]))])),
        ([defaultdict(int, a=1), defaultdict(int, a=2)],
         ("defaultdict", [("a", ("T", "int64", [1, 2]))])),
        ([Pt(1, "s"), Pt(2, "t")], ("Pt", [("T", "int64", [1, 2]), ("tuple", ["s", "t"])])),
        ([range(2), range(2)], ("list", [("T", "int64", [0, 0]), ("T", "int64", [1, 1])])),
        (["a", "b"], ("list", ["a", "b"])),
    ]
    for batch, want in cases:
        assert _plain(D.default_collate(batch)) == want, batch
        if TD is not None:
            assert _plain(TD.default_collate(batch)) == want, batch


def test_default_collate_errors():
    bad = [([None, None], TypeError, "batch must contain tensors"),
           ([1 + 2j, 3j], TypeError, "batch must contain tensors"),
           ([np.array(["a"]), np.array(["b"])], TypeError, "found <U1"),
           ([np.array([1], dtype=object)] * 2, TypeError, "found object"),
           ([[1, 2], [3]], RuntimeError, "each element in list of batch should be of equal"),
           ([(1, 2), (3,)], RuntimeError, "each element in list of batch should be of equal")]
    for _lib, M in _libs():
        for batch, exc, msg in bad:
            with pytest.raises(exc, match=msg):
                M.default_collate(batch)


def test_default_convert_sequences_and_mappings():
    for _lib, M in _libs():
        assert M.default_convert(range(3)) == [0, 1, 2]
        out = M.default_convert(defaultdict(int, a=np.int64(1)))
        assert type(out) is defaultdict and _plain(out["a"]) == ("T", "int64", 1)
        assert _plain(M.default_convert((np.arange(2), "s"))) == \
            ("list", [("T", "int64", [0, 1]), "s"])


# --- random_split ------------------------------------------------------------------------

def test_random_split_as_pytorch():
    for _lib, M in _libs():
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            parts = M.random_split(range(5), [0.7, 0.2, 0.1])
        assert [len(p) for p in parts] == [4, 1, 0]
        assert any("Length of split at index 2 is 0" in str(x.message) for x in w)
        assert sorted(i for p in parts for i in p) == list(range(5))
        assert [len(p) for p in M.random_split(range(11), [0.5, 0.5])] == [6, 5]
        assert [len(p) for p in M.random_split(range(7), [0.25] * 4)] == [2, 2, 2, 1]
        with pytest.raises(ValueError, match="^Fraction at index 0 is not between 0 and 1"):
            M.random_split(range(10), [1.5, -0.5])
        with pytest.raises(ValueError, match="^Sum of input lengths does not equal"):
            M.random_split(range(10), [3, 6])
        with pytest.raises(ValueError, match="^Sum of input lengths does not equal"):
            M.random_split(range(5), [0.2, 0.8000000000000002])  # sums to just above 1


# --- DataLoader arguments ----------------------------------------------------------------

@pytest.mark.parametrize("kwargs, exc, msg", [
    (dict(num_workers=-1), ValueError, "num_workers option should be non-negative"),
    (dict(timeout=-1), ValueError, "timeout option should be non-negative"),
    (dict(prefetch_factor=2), ValueError, "prefetch_factor option could only be specified"),
    (dict(num_workers=2, prefetch_factor=-1), ValueError, "prefetch_factor option should be"),
    (dict(persistent_workers=True), ValueError, "persistent_workers option needs num_workers"),
    (dict(multiprocessing_context="spawn"), ValueError, "multiprocessing_context can only"),
    (dict(bogus=1), TypeError, "unexpected keyword argument 'bogus'"),
    (dict(batch_size=0), ValueError, "^batch_size should be a positive integer value"),
    (dict(batch_size="2"), ValueError, "^batch_size should be a positive integer value"),
])
def test_dataloader_argument_errors(kwargs, exc, msg):
    for _lib, M in _libs():
        with pytest.raises(exc, match=msg):
            M.DataLoader(_sq(M, 3), **kwargs)


def test_dataloader_iterable_batch_size_checked_and_attributes():
    for _lib, M in _libs():
        class S(M.IterableDataset):
            def __iter__(self):
                return iter(range(5))
        with pytest.raises(ValueError, match="^batch_size should be a positive integer"):
            M.DataLoader(S(), batch_size=2.5)
        dl = M.DataLoader(S(), batch_size=2)
        assert type(dl.batch_sampler).__name__ == "BatchSampler"
        dl = M.DataLoader(_sq(M, 5), batch_size=2)
        assert (dl.pin_memory, dl.timeout, dl.worker_init_fn, dl.prefetch_factor,
                dl.persistent_workers) == (False, 0, None, None, False)
        assert M.DataLoader(_sq(M, 5), num_workers=2).prefetch_factor == 2
        assert len(iter(dl)) == 3
        with pytest.raises(ValueError, match="batch_size attribute should not be set after"):
            dl.batch_size = 4
        with pytest.raises(AssertionError, match="requires timeout == 0"):
            iter(M.DataLoader(_sq(M, 3), timeout=5))


def test_dataset_base_classes_as_pytorch():
    for _lib, M in _libs():
        assert not hasattr(M.Dataset(), "__len__")
        with pytest.raises(TypeError):
            M.IterableDataset()
        with pytest.raises(AssertionError, match="Size mismatch between tensors"):
            M.TensorDataset(cr.zeros(3) if M is D else torch.zeros(3),
                            cr.zeros(4) if M is D else torch.zeros(4))
    with pytest.raises(ValueError):  # chainrule's error is a ValueError as well
        D.TensorDataset(cr.zeros(3), cr.zeros(4))


# --- samplers ----------------------------------------------------------------------------

def test_sampler_count_types_as_pytorch():
    for _lib, M in _libs():
        assert len(list(M.RandomSampler(range(5), num_samples=True))) == 1
        with pytest.raises(ValueError, match="num_samples should be a positive integer"):
            M.RandomSampler(range(5), num_samples=np.int64(3))
        with pytest.raises(ValueError, match="num_samples should be a positive integer"):
            M.WeightedRandomSampler([1, 2], np.int64(2))
        with pytest.raises(ValueError, match="batch_size should be a positive integer"):
            M.BatchSampler(range(5), np.int64(2), False)


def test_weighted_sampler_zero_weights_without_replacement():
    for _lib, M in _libs():
        for w in ([1, 0, 3], [0, 1, 1]):
            draw = list(M.WeightedRandomSampler(w, 3, replacement=False))
            assert sorted(draw) == [0, 1, 2]
            positive = [i for i, x in enumerate(w) if x > 0]
            assert sorted(draw[:len(positive)]) == positive  # the zero weight comes last
    for w, msg in [([-1, 2], r"encountering probability entry < 0"),
                   ([float("nan"), 1], r"encountering probability entry < 0"),
                   ([float("inf"), 1], r"encountering probability entry = infinity or NaN"),
                   ([0, 0], r"sum of probabilities <= 0")]:
        for _lib, M in _libs():
            with pytest.raises(RuntimeError, match=msg):
                list(M.WeightedRandomSampler(w, 3))


def test_distributed_sampler():
    def shares(M, n, replicas, drop_last, shuffle=False):
        return [list(M.DistributedSampler(range(n), num_replicas=replicas, rank=r,
                                          shuffle=shuffle, drop_last=drop_last))
                for r in range(replicas)]
    for _lib, M in _libs():
        assert shares(M, 10, 3, False) == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]
        assert shares(M, 10, 3, True) == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
        assert shares(M, 2, 5, False) == [[0], [1], [0], [1], [0]]
        parts = shares(M, 10, 3, True, shuffle=True)
        flat = [i for p in parts for i in p]
        assert [len(p) for p in parts] == [3, 3, 3] and len(set(flat)) == 9
        with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval"):
            M.DistributedSampler(range(3), num_replicas=2, rank=2)
    s = D.DistributedSampler(range(8), num_replicas=2, rank=0)
    first = list(s)
    assert first == list(s)
    s.set_epoch(1)
    assert s.epoch == 1 and sorted(first + list(D.DistributedSampler(
        range(8), num_replicas=2, rank=1))) == list(range(8))


# --- workers (emulated in chainrule, real processes in PyTorch) ---------------------------

def _sharded(M, n):
    class Sharded(M.IterableDataset):
        def __iter__(self):
            info = M.get_worker_info()
            if info is None:
                return iter(range(n))
            return iter(range(info.id, n, info.num_workers))
    return Sharded()


def test_workers_iterable_sharding_and_interleaving():
    for _lib, M in _libs():
        dl = M.DataLoader(_sharded(M, 7), batch_size=2, num_workers=2)
        want = [[0, 2], [1, 3], [4, 6], [5]]
        assert [b.tolist() for b in dl] == want
        assert [b.tolist() for b in dl] == want  # twice

        class Plain(M.IterableDataset):
            def __iter__(self):
                return iter(range(3))
        got = [b.tolist() for b in M.DataLoader(Plain(), batch_size=2, num_workers=2)]
        assert got == [[0, 1], [0, 1], [2], [2]]  # every worker reads it all
        assert M.get_worker_info() is None


def test_workers_worker_init_fn_and_info():
    for _lib, M in _libs():
        class Range(M.IterableDataset):
            def __init__(self):
                self.start, self.end = 0, 8

            def __iter__(self):
                return iter(range(self.start, self.end))

        def init(worker_id, M=M):
            ds = M.get_worker_info().dataset  # this worker's copy
            ds.start, ds.end = worker_id * 4, worker_id * 4 + 4
        ds = Range()
        dl = M.DataLoader(ds, batch_size=3, num_workers=2, worker_init_fn=init)
        assert [b.tolist() for b in dl] == [[0, 1, 2], [4, 5, 6], [3], [7]]
        assert (ds.start, ds.end) == (0, 8)

        class Where(M.Dataset):
            def __len__(self):
                return 4

            def __getitem__(self, i, M=M):
                info = M.get_worker_info()
                return (i, info.id, info.num_workers)
        batches = [[t.tolist() for t in b] for b in M.DataLoader(Where(), batch_size=2,
                                                                   num_workers=2)]
        assert batches == [[[0, 1], [0, 0], [2, 2]], [[2, 3], [1, 1], [2, 2]]]
    seen = []
    info = {}

    def record(worker_id):
        seen.append(worker_id)
        info[worker_id] = D.get_worker_info()
    dl = D.DataLoader(_sq(D, 3), num_workers=2, worker_init_fn=record,
                      persistent_workers=True)
    list(dl)
    list(dl)
    assert seen == [0, 1]  # persistent: initialised once
    assert info[1].seed == info[0].seed + 1 and info[1].num_workers == 2
    with pytest.raises(RuntimeError, match="Cannot assign attributes to WorkerInfo"):
        info[0].id = 3


def test_torch_utils_data_submodules_import():
    # from torch.utils.data.dataset import random_split (the text-classification tutorial)
    from chainrule.utils.data.dataloader import DataLoader as DL
    from chainrule.utils.data.dataset import random_split as rs
    from chainrule.utils.data.sampler import RandomSampler as RS

    from chainrule.utils import data

    assert rs is data.random_split and DL is data.DataLoader and RS is data.RandomSampler
    a, b = rs(range(10), [7, 3])
    assert sorted(list(a) + list(b)) == list(range(10))
