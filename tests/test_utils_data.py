"""chainrule.utils.data: TensorDataset, DataLoader, random_split, as torch.utils.data."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
from chainrule.utils.data import DataLoader, Subset, TensorDataset, random_split


def test_loader_batches_every_sample_once_and_shuffles_reproducibly():
    X = cr.tensor(np.arange(20.0).reshape(10, 2))
    y = cr.tensor(np.arange(10))
    loader = DataLoader(TensorDataset(X, y), batch_size=4, shuffle=True)
    assert len(loader) == 3
    cr.manual_seed(1)
    first = [b[1].numpy().tolist() for b in loader]
    cr.manual_seed(1)
    again = [b[1].numpy().tolist() for b in loader]
    assert first == again and sorted(sum(first, [])) == list(range(10))
    assert [len(b) for b in first] == [4, 4, 2]
    for xb, yb in loader:  # rows stay with their labels
        np.testing.assert_array_equal(xb.numpy()[:, 0], 2 * yb.numpy())
    dropped = DataLoader(TensorDataset(X, y), batch_size=4, drop_last=True)
    assert len(dropped) == 2 and [b[0].shape for b in dropped] == [(4, 2), (4, 2)]


def test_random_split_subset_and_collate():
    ds = TensorDataset(cr.tensor(np.arange(10.0)), cr.tensor(np.arange(10)))
    a, b = random_split(ds, [0.7, 0.3])
    assert (len(a), len(b)) == (7, 3)
    assert sorted(a.indices + b.indices) == list(range(10))
    batch = next(iter(DataLoader(Subset(ds, [3, 1]), batch_size=2)))
    np.testing.assert_array_equal(batch[0].numpy(), [3.0, 1.0])
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(ds, [3, 3])
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(cr.zeros(3), cr.zeros(4))


def test_a_training_loop_written_for_pytorch():
    cr.manual_seed(0)
    X = cr.randn(64, 5)
    w = cr.tensor(np.array([1.0, -2.0, 0.5, 0.0, 3.0]))
    y = X @ w
    model = cr.nn.Linear(5, 1)
    opt = cr.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(30):
        for xb, yb in DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True):
            opt.zero_grad()
            loss = cr.nn.functional.mse_loss(model(xb).squeeze(-1), yb)
            loss.backward()
            opt.step()
    np.testing.assert_allclose(model.weight.detach().numpy().ravel(), w.numpy(), atol=1e-3)
