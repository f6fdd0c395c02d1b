"""Regressions found porting Andrej Karpathy's programs (nn-zero-to-hero's makemore lectures,
makemore.py, ng-video-lecture's bigram.py/gpt.py) to chainrule by changing the imports."""
import itertools

import numpy as np

import chainrule as cr
from chainrule.utils.data import DataLoader, RandomSampler, TensorDataset

try:
    import torch
except ImportError:
    torch = None


def test_random_sampler_with_replacement_draws_lazily():
    # makemore.py's InfiniteDataLoader: RandomSampler(dataset, replacement=True,
    # num_samples=int(1e10)). Drawing all num_samples indices up front needs 80 GB (here
    # 8e18 bytes): they must be drawn as they are consumed.
    n, k = 5, 10 ** 18
    sampler = RandomSampler(range(n), replacement=True, num_samples=k)
    assert len(sampler) == k
    first = list(itertools.islice(iter(sampler), 100))
    assert len(first) == 100 and all(isinstance(i, int) and 0 <= i < n for i in first)
    assert set(first) == set(range(n))          # 100 uniform draws out of 5 values

    # a finite num_samples still yields exactly num_samples indices (not a multiple of 32)
    assert len(list(RandomSampler(range(n), replacement=True, num_samples=70))) == 70
    cr.manual_seed(0)
    a = list(RandomSampler(range(n), replacement=True, num_samples=70))
    cr.manual_seed(0)
    assert list(RandomSampler(range(n), replacement=True, num_samples=70)) == a

    # the loader pattern of makemore.py: one batch out of an "infinite" sampler
    ds = TensorDataset(cr.arange(10.0).view(5, 2), cr.arange(5))
    loader = DataLoader(ds, sampler=RandomSampler(ds, replacement=True, num_samples=int(1e10)),
                        batch_size=4)
    X, Y = next(iter(loader))
    assert tuple(X.shape) == (4, 2) and tuple(Y.shape) == (4,)
    np.testing.assert_array_equal(X.numpy(), 2.0 * np.stack([Y.numpy(), Y.numpy()], 1)
                                  + np.array([0.0, 1.0]))
    if torch is not None:
        tds = torch.utils.data.TensorDataset(torch.arange(10.0).view(5, 2), torch.arange(5))
        tl = torch.utils.data.DataLoader(
            tds, sampler=torch.utils.data.RandomSampler(tds, replacement=True,
                                                        num_samples=int(1e10)), batch_size=4)
        tX, tY = next(iter(tl))
        assert tuple(tX.shape) == tuple(X.shape) and tuple(tY.shape) == tuple(Y.shape)
        assert len(tl.sampler) == len(loader.sampler)
