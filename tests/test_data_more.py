"""chainrule.utils.data: IterableDataset, ConcatDataset, ChainDataset, the samplers and
DataLoader's sampler= / batch_sampler= / iterable datasets; PyTorch comparisons (for the
deterministic parts) when torch is installed."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import chainrule as cr
from chainrule.utils import data as D

try:
    import torch
    import torch.utils.data as TD
except ImportError:
    torch = TD = None


class Stream(D.IterableDataset):
    def __init__(self, n, start=0, sized=False):
        self.n, self.start, self.sized = n, start, sized

    def __iter__(self):
        return iter(range(self.start, self.start + self.n))

    def __len__(self):
        if not self.sized:
            raise TypeError("no len")
        return self.n


class Squares(D.Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return i * i

    def __len__(self):
        return self.n


def _lists(batches):
    return [b.numpy().tolist() if hasattr(b, "numpy") else b for b in batches]


def test_concat_dataset_indexing():
    ds = D.ConcatDataset([Squares(3), Squares(2), Squares(4)])
    assert len(ds) == 9 and ds.cumulative_sizes == [3, 5, 9]
    assert [ds[i] for i in range(9)] == [0, 1, 4, 0, 1, 0, 1, 4, 9]
    assert ds[-1] == 9 and ds[-9] == 0
    with pytest.raises(ValueError, match="absolute value of index should not exceed"):
        ds[-10]
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        D.ConcatDataset([])
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        D.ConcatDataset([Stream(2)])
    both = Squares(2) + Squares(3)
    assert isinstance(both, D.ConcatDataset) and [both[i] for i in range(5)] == [0, 1, 0, 1, 4]
    if TD is not None:
        tds = TD.ConcatDataset([TD.TensorDataset(torch.arange(3)),
                                TD.TensorDataset(torch.arange(2))])
        cds = D.ConcatDataset([D.TensorDataset(cr.arange(3)), D.TensorDataset(cr.arange(2))])
        assert tds.cumulative_sizes == cds.cumulative_sizes
        assert [int(cds[i][0]) for i in range(5)] == [int(tds[i][0]) for i in range(5)]


def test_iterable_and_chain_datasets():
    chain = D.ChainDataset([Stream(2), Stream(3, start=10)])
    assert list(chain) == [0, 1, 10, 11, 12]
    assert list(Stream(2) + Stream(1, 5)) == [0, 1, 5]
    assert len(D.ChainDataset([Stream(2, sized=True), Stream(3, sized=True)])) == 5
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(D.ChainDataset([Squares(2)]))
    with pytest.raises(NotImplementedError, match="should implement __getitem__"):
        D.Dataset()[0]
    with pytest.raises(TypeError, match="has no len"):
        len(D.Dataset())


def test_dataloader_over_iterable_dataset():
    assert _lists(D.DataLoader(Stream(5), batch_size=2)) == [[0, 1], [2, 3], [4]]
    assert _lists(D.DataLoader(Stream(5), batch_size=2, drop_last=True)) == [[0, 1], [2, 3]]
    assert list(D.DataLoader(Stream(3), batch_size=None)) == [0, 1, 2]
    assert len(D.DataLoader(Stream(5, sized=True), batch_size=2)) == 3
    with pytest.raises(TypeError):
        len(D.DataLoader(Stream(5), batch_size=2))
    for kw, arg in (({"shuffle": True}, "shuffle"), ({"sampler": [0]}, "sampler"),
                    ({"batch_sampler": [[0]]}, "batch_sampler")):
        with pytest.raises(ValueError, match=f"expected unspecified {arg} option"):
            D.DataLoader(Stream(3), **kw)
    if TD is not None:
        class TStream(TD.IterableDataset):
            def __iter__(self):
                return iter(range(5))

        want = [b.tolist() for b in TD.DataLoader(TStream(), batch_size=2)]
        assert _lists(D.DataLoader(Stream(5), batch_size=2)) == want


def test_sequential_and_batch_samplers():
    assert list(D.SequentialSampler(range(4))) == [0, 1, 2, 3]
    bs = D.BatchSampler(D.SequentialSampler(range(5)), 2, False)
    assert list(bs) == [[0, 1], [2, 3], [4]] and len(bs) == 3
    bs = D.BatchSampler(range(5), 2, True)
    assert list(bs) == [[0, 1], [2, 3]] and len(bs) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but "
                                         "got batch_size=0"):
        D.BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got "
                                         "drop_last=1"):
        D.BatchSampler(range(3), 2, 1)
    assert isinstance(bs, D.Sampler)
    if TD is not None:
        for n, size, drop in ((7, 3, False), (7, 3, True), (4, 4, False)):
            assert (list(D.BatchSampler(D.SequentialSampler(range(n)), size, drop))
                    == list(TD.BatchSampler(TD.SequentialSampler(range(n)), size, drop)))


def test_random_sampler():
    s = D.RandomSampler(range(6))
    cr.manual_seed(4)
    first = list(s)
    cr.manual_seed(4)
    assert list(s) == first and sorted(first) == list(range(6)) and len(s) == 6
    g = cr.Generator().manual_seed(2)
    more = list(D.RandomSampler(range(3), num_samples=7, generator=g))
    # two whole permutations, then a part of a third
    assert len(more) == 7 and sorted(more[:3]) == sorted(more[3:6]) == [0, 1, 2]
    assert len(set(more[6:])) == 1
    rep = list(D.RandomSampler(range(3), replacement=True, num_samples=300))
    counts = Counter(rep)
    assert set(counts) == {0, 1, 2} and min(counts.values()) > 60
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got "
                                        "replacement=1"):
        D.RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, "
                                         "but got num_samples=0"):
        D.RandomSampler(range(3), num_samples=0)
    if TD is not None:
        assert len(TD.RandomSampler(range(3), num_samples=7)) == len(
            D.RandomSampler(range(3), num_samples=7))


def test_subset_and_weighted_samplers():
    s = D.SubsetRandomSampler([10, 20, 30, 40], generator=cr.Generator().manual_seed(0))
    assert sorted(s) == [10, 20, 30, 40] and len(s) == 4
    w = D.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 400,
                                generator=cr.Generator().manual_seed(0))
    counts = Counter(w)
    assert set(counts) == {1, 3} and 0.65 < counts[3] / 400 < 0.85 and len(w) == 400
    nr = list(D.WeightedRandomSampler(cr.tensor([1.0, 1.0, 5.0]), 3, replacement=False))
    assert sorted(nr) == [0, 1, 2]
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        list(D.WeightedRandomSampler([1.0, 1.0], 3, replacement=False))
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights "
                                         r"have shape \(1, 2\)"):
        D.WeightedRandomSampler([[1.0, 2.0]], 2)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        D.WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match="replacement should be a boolean value"):
        D.WeightedRandomSampler([1.0], 1, replacement=1)


def test_dataloader_sampler_and_batch_sampler():
    ds = D.TensorDataset(cr.tensor(np.arange(6.0)), cr.tensor(np.arange(6) * 10))
    loader = D.DataLoader(ds, batch_size=2, sampler=[5, 0, 3])
    assert [b[1].numpy().tolist() for b in loader] == [[50, 0], [30]] and len(loader) == 2
    loader = D.DataLoader(ds, batch_sampler=[[4, 1, 2], [0]])
    assert [b[0].numpy().tolist() for b in loader] == [[4.0, 1.0, 2.0], [0.0]]
    assert len(loader) == 2 and loader.batch_size is None
    squares = D.DataLoader(Squares(5), batch_sampler=D.BatchSampler(range(5), 2, False))
    assert _lists(squares) == [[0, 1], [4, 9], [16]]
    plain = D.DataLoader(Squares(3))
    assert isinstance(plain.sampler, D.SequentialSampler)
    assert isinstance(plain.batch_sampler, D.BatchSampler)
    assert isinstance(D.DataLoader(Squares(3), shuffle=True).sampler, D.RandomSampler)
    assert D.DataLoader(Squares(3), batch_size=None).batch_sampler is None
    assert list(D.DataLoader(Squares(3), batch_size=None)) == [0, 1, 4]
    w = D.WeightedRandomSampler([0.0, 0.0, 1.0], 4)
    assert _lists(D.DataLoader(Squares(3), batch_size=2, sampler=w)) == [[4, 4], [4, 4]]
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        D.DataLoader(ds, sampler=[0], shuffle=True)
    for kw in ({"batch_size": 2}, {"shuffle": True}, {"sampler": [0]}, {"drop_last": True}):
        with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
            D.DataLoader(ds, batch_sampler=[[0]], **kw)
    with pytest.raises(ValueError, match="batch_size=None option disables auto-batching"):
        D.DataLoader(ds, batch_size=None, drop_last=True)
    if TD is not None:
        tds = TD.TensorDataset(torch.arange(6.0), torch.arange(6) * 10)
        want = [b[1].tolist() for b in TD.DataLoader(tds, batch_sampler=[[4, 1, 2], [0]])]
        got = [b[1].numpy().tolist() for b in D.DataLoader(ds, batch_sampler=[[4, 1, 2], [0]])]
        assert got == want
