"""Module hooks: forward pre-hooks and hooks, full backward pre-hooks and hooks, as
``torch.nn.Module``'s. Expected gradients are derived by hand (a Linear layer's
``grad_input = grad_output @ W``); where torch is installed the same programs run on it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn

try:
    import torch
except ImportError:
    torch = None


def _linear(m, w, b):
    layer = m.nn.Linear(2, 3).double()
    with m.no_grad():
        layer.weight.copy_(m.tensor(w))
        layer.bias.copy_(m.tensor(b))
    return layer


W = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
B = np.array([0.5, -0.5, 1.0])
X = np.array([[1.0, -1.0], [2.0, 0.5]])


def _forward_hooks_program(m):
    layer = _linear(m, W, B)
    seen = []
    layer.register_forward_pre_hook(lambda mod, args: seen.append("pre") or (args[0] * 2,))
    h = layer.register_forward_hook(lambda mod, args, out: out + 1)
    layer.register_forward_hook(lambda mod, args, out: seen.append("first"), prepend=True)
    layer.register_forward_pre_hook(
        lambda mod, args, kwargs: seen.append(sorted(kwargs)), with_kwargs=True)
    y1 = layer(m.tensor(X))
    h.remove()
    y2 = layer(m.tensor(X))
    return seen, np.asarray(y1.detach()), np.asarray(y2.detach())


def test_forward_hooks_change_inputs_and_outputs_in_order():
    seen, y1, y2 = _forward_hooks_program(cr)
    assert seen == ["pre", [], "first", "pre", [], "first"]
    np.testing.assert_allclose(y1, 2 * X @ W.T + B + 1)
    np.testing.assert_allclose(y2, 2 * X @ W.T + B)     # the removed hook no longer runs
    if torch is not None:  # the same program on torch
        t_seen, t_y1, t_y2 = _forward_hooks_program(torch)
        assert seen == t_seen
        np.testing.assert_allclose(y1, t_y1)
        np.testing.assert_allclose(y2, t_y2)


def _backward_hooks_program(m):
    layer = _linear(m, W, B)
    got = []

    def record(mod, grad_input, grad_output):
        got.append((tuple(None if g is None else np.asarray(g) for g in grad_input),
                    tuple(np.asarray(g) for g in grad_output)))

    layer.register_full_backward_hook(record)
    x = m.tensor(X, requires_grad=True)
    u = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 1.0]])
    (layer(x) * m.tensor(u)).sum().backward()
    first = (got[0], np.asarray(x.grad))
    # a pre-hook doubling grad_output, and a hook zeroing grad_input
    layer.register_full_backward_pre_hook(lambda mod, go: (go[0] * 2,))
    layer.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0,))
    x2 = m.tensor(X, requires_grad=True)
    layer.weight.grad = None
    (layer(x2) * m.tensor(u)).sum().backward()
    return first, got[1], np.asarray(x2.grad), np.asarray(layer.weight.grad), u


def test_full_backward_hooks_see_and_replace_gradients():
    (got, xgrad), second, x2grad, wgrad, u = _backward_hooks_program(cr)
    (grad_input,), (grad_output,) = got
    np.testing.assert_allclose(grad_output, u)
    np.testing.assert_allclose(grad_input, u @ W)            # grad_input = grad_output W
    np.testing.assert_allclose(xgrad, u @ W)
    np.testing.assert_allclose(second[1][0], 2 * u)          # after the pre-hook
    np.testing.assert_allclose(second[0][0], 2 * u @ W)
    np.testing.assert_allclose(x2grad, np.zeros_like(X))     # the last hook's grad_input
    np.testing.assert_allclose(wgrad, 2 * u.T @ X)           # parameters see 2 grad_output
    if torch is not None:  # the same program on torch
        (t_got, t_xgrad), t_second, t_x2grad, t_wgrad, _ = _backward_hooks_program(torch)
        np.testing.assert_allclose(grad_input, t_got[0][0])
        np.testing.assert_allclose(grad_output, t_got[1][0])
        np.testing.assert_allclose(xgrad, t_xgrad)
        np.testing.assert_allclose(second[0][0], t_second[0][0])
        np.testing.assert_allclose(second[1][0], t_second[1][0])
        np.testing.assert_allclose(x2grad, t_x2grad)
        np.testing.assert_allclose(wgrad, t_wgrad)


class _Two(nn.Module):
    def forward(self, a, k, b):
        return (a * b).sum() * k, a * 2


def _positions_program(m, module):
    got = []
    module.register_full_backward_hook(lambda mod, gi, go: got.append((gi, go)))
    a = m.tensor([1.0, 1.0], requires_grad=True)
    b = m.tensor([3.0, 3.0])
    o1, _ = module(a, 5.0, b)
    o1.backward()
    (gi, go), = got
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got.clear()
        o1, _ = module(m.tensor([1.0, 1.0]), 5.0, m.tensor([3.0, 3.0], requires_grad=False) * 1)
        nothing = len(got), o1.requires_grad
    return gi, go, nothing, caught


def test_grad_input_has_one_entry_per_argument():
    gi, go, nothing, _ = _positions_program(cr, _Two())
    np.testing.assert_allclose(np.asarray(gi[0]), [15.0, 15.0])
    assert gi[1] is None                                      # not a tensor
    np.testing.assert_allclose(np.asarray(gi[2]), [0.0, 0.0])  # a tensor without grad
    assert float(go[0]) == 1.0 and go[1] is None              # the unused output
    assert nothing == (0, False)                              # nothing requires grad
    if torch is not None:  # the same program on torch

        class TwoT(torch.nn.Module):
            def forward(self, a, k, b):
                return (a * b).sum() * k, a * 2

        t_gi, t_go, t_nothing, _ = _positions_program(torch, TwoT())
        assert [g is None for g in gi] == [g is None for g in t_gi]
        assert [g is None for g in go] == [g is None for g in t_go] and nothing == t_nothing
        np.testing.assert_allclose(np.asarray(gi[2]), t_gi[2].numpy())


def test_hooks_when_no_input_requires_grad():
    layer = nn.Linear(2, 1)
    got = []
    layer.register_full_backward_hook(lambda mod, gi, go: got.append((gi, tuple(go[0].shape))))
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        layer(cr.ones(3, 2)).sum().backward()
    assert got == [((None,), (3, 1))]
    layer.register_full_backward_hook(lambda mod, gi, go: (cr.ones(3, 2),))
    with pytest.raises(RuntimeError, match="no input requires gradient should always return "
                                           "None"), pytest.warns(UserWarning):
        layer(cr.ones(3, 2)).sum().backward()
    bad = nn.Linear(2, 1)
    bad.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_input, got 2, but "
                                           "expected 1"):
        bad(cr.ones(3, 2, requires_grad=True)).sum().backward()


def test_handles_remove_and_work_as_context_managers():
    layer = nn.Linear(2, 2)
    calls = []
    with layer.register_forward_hook(lambda *a: calls.append(1)):
        layer(cr.ones(1, 2))
    layer(cr.ones(1, 2))
    assert calls == [1]


def test_hook_tables_hold_the_hooks_as_pytorch():
    # torch's pruning tutorial reads module._forward_pre_hooks.values() as hooks; the flags
    # live in PyTorch's side tables, and a handle's remove() clears them too
    for m in (cr,) + ((torch,) if torch is not None else ()):
        lin = m.nn.Linear(2, 2)
        pre = lambda mod, args: None  # noqa: E731
        post = lambda mod, args, kwargs, out: None  # noqa: E731
        h1 = lin.register_forward_pre_hook(pre, with_kwargs=False)
        h2 = lin.register_forward_hook(post, with_kwargs=True, always_call=True)
        assert list(lin._forward_pre_hooks.values()) == [pre]
        assert list(lin._forward_hooks.values()) == [post]
        assert h2.id in lin._forward_hooks_with_kwargs
        assert h2.id in lin._forward_hooks_always_called
        assert h1.id not in lin._forward_pre_hooks_with_kwargs
        lin(m.ones(2))
        h2.remove()
        h1.remove()
        assert not lin._forward_hooks and not lin._forward_hooks_with_kwargs
        assert not lin._forward_hooks_always_called and not lin._forward_pre_hooks
