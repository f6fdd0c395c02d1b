"""chainrule.multiprocessing (torch.multiprocessing): tensors in shared memory, sent between
processes over the same memory, Hogwild updates seen by every process, spawn's errors."""

import pickle

import numpy as np
import pytest

import chainrule as cr
import chainrule.multiprocessing as mp
from chainrule import nn

try:
    import torch
except ImportError:  # CI: the semantics are checked on chainrule alone
    torch = None


def test_share_memory_keeps_values_and_a_sent_tensor_is_the_same_memory():
    t = cr.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert not t.is_shared()
    assert t.share_memory_() is t and t.is_shared()
    np.testing.assert_array_equal(t.detach().numpy(), [1.0, 2.0, 3.0])
    # what a Queue or a spawned Process's arguments do: ForkingPickler's bytes
    u = pickle.loads(mp.ForkingPickler.dumps(t))
    assert u.is_shared() and u.requires_grad and u.grad_fn is None
    with cr.no_grad():
        u[1] = 20.0  # an in-place write through the received tensor ...
    np.testing.assert_array_equal(t.detach().numpy(), [1.0, 20.0, 3.0])  # ... is t's too
    view = pickle.loads(mp.ForkingPickler.dumps(t.detach()[::2]))  # a strided view
    np.testing.assert_array_equal(view.numpy(), [1.0, 3.0])
    p = pickle.loads(mp.ForkingPickler.dumps(nn.Parameter(cr.ones(2))))
    assert isinstance(p, nn.Parameter) and p.is_shared()
    y = t * 2
    with pytest.raises(RuntimeError, match="non-leaf tensor which requires_grad"):
        mp.ForkingPickler.dumps(y)
    plain = pickle.loads(pickle.dumps(t))  # ordinary pickling copies, as PyTorch's
    assert not plain.is_shared()
    if torch is not None:
        tt = torch.ones(3)
        assert tt.share_memory_() is tt and tt.is_shared()


def _add_rank(rank, t):
    with cr.no_grad():
        t[rank] += 10.0 * (rank + 1)


def _sgd_steps(model, x, y, lr):
    opt = cr.optim.SGD(model.parameters(), lr=lr)
    opt.zero_grad()
    ((model(x) - y) ** 2).sum().backward()
    opt.step()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_processes_update_shared_tensors(method):
    t = cr.zeros(2).share_memory_()
    mp.spawn(_add_rank, args=(t,), nprocs=2, start_method=method)
    np.testing.assert_array_equal(t.numpy(), [10.0, 20.0])  # each process's write, seen here


def test_hogwild_training_updates_the_parents_model():
    # two processes, one after the other, each one SGD step on its own sample of a shared
    # nn.Linear(1, 1): w' = w - lr * 2 (w x + b - y) x, b' = b - lr * 2 (w x + b - y)
    model = nn.Linear(1, 1)
    with cr.no_grad():
        model.weight.fill_(0.5)
        model.bias.fill_(0.0)
    model.share_memory()
    ctx = mp.get_context("fork")
    w, b, lr = 0.5, 0.0, 0.1
    for xv, yv in ((1.0, 2.0), (2.0, 0.0)):
        p = ctx.Process(target=_sgd_steps, args=(model, cr.tensor([[xv]]), cr.tensor([[yv]]), lr))
        p.start()
        p.join()
        assert p.exitcode == 0
        r = w * xv + b - yv
        w, b = w - lr * 2 * r * xv, b - lr * 2 * r
    np.testing.assert_allclose(model.weight.detach().numpy(), [[w]], rtol=1e-12)
    np.testing.assert_allclose(model.bias.detach().numpy(), [b], rtol=1e-12)
    assert model.weight.grad is None  # gradients are each process's own


def _fail(rank):
    raise ValueError(f"bad rank {rank}")


def test_spawn_raises_the_childs_error_and_strategies():
    with pytest.raises(mp.ProcessRaisedException, match="ValueError: bad rank 0"):
        mp.spawn(_fail, nprocs=1, start_method="fork")
    assert mp.get_sharing_strategy() in mp.get_all_sharing_strategies()
    with pytest.raises(ValueError, match="unknown strategy"):
        mp.set_sharing_strategy("carrier_pigeon")
    assert mp.cpu_count() >= 1 and mp.Queue is not None  # Python's multiprocessing names
