"""Copies, pickling, hooks and ``.grad``: nothing a user holds is aliased by autograd, and
nothing autograd holds leaks to the user. PyTorch's behaviour is the spec; where torch is
installed the error texts are compared with its."""

import copy
import pickle

import numpy as np
import pytest

import chainrule as cr
from functions import Exp

try:
    import torch
except ImportError:  # the comparisons with torch are skipped; the rest runs
    torch = None


def _leaf(values=(1.0, 2.0, 3.0), dtype=cr.float64):
    return cr.tensor(list(values), dtype=dtype, requires_grad=True)


def test_copy_of_leaf_is_an_independent_leaf_while_graph_alive():
    x = _leaf()
    y = (x * 2).sum()                 # a graph through x is alive
    c = copy.copy(x)
    (c * 3).sum().backward()
    np.testing.assert_array_equal(np.asarray(c.grad), [3.0, 3.0, 3.0])
    assert x.grad is None             # the copy's gradient did not go into x
    y.backward()
    np.testing.assert_array_equal(np.asarray(x.grad), [2.0, 2.0, 2.0])
    assert c.is_leaf and c.requires_grad


def test_deepcopy_of_leaf_copies_data_and_grad():
    x = _leaf()
    x.grad = cr.tensor([1.0, 1.0, 1.0])
    d = copy.deepcopy(x)
    assert d.requires_grad and d.is_leaf and d.grad is not x.grad
    np.testing.assert_array_equal(np.asarray(d.grad), [1.0, 1.0, 1.0])
    with cr.no_grad():
        d.mul_(5)
    np.testing.assert_array_equal(np.asarray(x.detach()), [1.0, 2.0, 3.0])
    (d * 2).sum().backward()
    np.testing.assert_array_equal(np.asarray(x.grad), [1.0, 1.0, 1.0])


def test_deepcopy_of_nonleaf_raises_clearly():
    x = _leaf()
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user "
                                           r"\(graph leaves\) support the deepcopy protocol"):
        copy.deepcopy(x * 2)
    # a container with a leaf deep-copies (the memo keeps shared tensors shared)
    box = copy.deepcopy({"a": x, "b": [x]})
    assert box["a"] is box["b"][0] and box["a"] is not x


def test_pickle_leaf_used_in_graph_and_nonleaf():
    x = _leaf()
    y = (x * 2).sum()
    x.register_hook(lambda g: g * 1)
    back = pickle.loads(pickle.dumps(x))
    assert back.requires_grad and back.is_leaf and back.grad is None
    np.testing.assert_array_equal(np.asarray(back.detach()), [1.0, 2.0, 3.0])
    z = pickle.loads(pickle.dumps(y))     # data and requires_grad, never the graph
    assert z.is_leaf and z.requires_grad and float(z.detach()) == 12.0
    f = pickle.loads(pickle.dumps(cr.tensor([1, 2], dtype=cr.int64)))
    assert f.dtype == np.int64 and not f.requires_grad


@pytest.mark.parametrize("leaf", [True, False], ids=["leaf", "nonleaf"])
def test_hook_changing_shape_raises(leaf):
    x = _leaf()
    t = x if leaf else x * 1
    t.register_hook(lambda g: g[:2])
    with pytest.raises(RuntimeError, match=r"has changed the size of value.*\(3,\).*\(2,\)"):
        (t * 2).sum().backward()
    assert x.grad is None


@pytest.mark.parametrize("leaf", [True, False], ids=["leaf", "nonleaf"])
def test_hook_changing_dtype_raises(leaf):
    x = _leaf()
    t = x if leaf else x * 1
    t.register_hook(lambda g: g.float())
    with pytest.raises(RuntimeError, match="has changed the type of value"):
        (t * 2).sum().backward()


def test_leaf_hook_result_is_copied_into_grad():
    x = _leaf()
    kept = []

    def hook(g):
        r = g * 10
        kept.append(r)
        return r

    x.register_hook(hook)
    (x * 2).sum().backward()
    np.testing.assert_array_equal(np.asarray(x.grad), [20.0, 20.0, 20.0])
    with cr.no_grad():
        kept[0].mul_(0)               # the hook's tensor is the user's
    np.testing.assert_array_equal(np.asarray(x.grad), [20.0, 20.0, 20.0])


@pytest.mark.parametrize("create_graph", [False, True])
def test_grad_never_aliases_gradient_argument_or_other_leaves(create_graph):
    a, b = _leaf(), _leaf((4.0, 5.0, 6.0))
    u = cr.tensor([1.0, 2.0, 3.0])
    (a + b).backward(u, create_graph=create_graph)   # both receive u unchanged
    np.testing.assert_array_equal(np.asarray(a.grad.detach()), [1.0, 2.0, 3.0])
    with cr.no_grad():
        a.grad.mul_(10)
    np.testing.assert_array_equal(np.asarray(b.grad.detach()), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(u), [1.0, 2.0, 3.0])
    with cr.no_grad():
        u.mul_(7)
    np.testing.assert_array_equal(np.asarray(b.grad.detach()), [1.0, 2.0, 3.0])
    x = _leaf()
    g = cr.tensor([1.0, 1.0, 1.0])
    x.backward(g, create_graph=create_graph)         # the output is the leaf itself
    with cr.no_grad():
        g.mul_(3)
    np.testing.assert_array_equal(np.asarray(x.grad.detach()), [1.0, 1.0, 1.0])


def test_grad_assignment_checks():
    x = _leaf()
    with pytest.raises(RuntimeError, match=r"size '\[2\]' to a tensor of size '\[3\]'"):
        x.grad = cr.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="dtype"):
        x.grad = cr.tensor([1.0, 2.0, 3.0], dtype=cr.float32)
    with pytest.raises(TypeError, match="expected to be a Tensor or None"):
        x.grad = [1.0, 2.0, 3.0]
    assert x.grad is None


def test_grad_and_backward_length_mismatch():
    x = _leaf()
    with pytest.raises(RuntimeError, match="got 2 tensors and 1 gradients"):
        cr.autograd.grad([x.sum(), (x * 2).sum()], x, grad_outputs=[cr.tensor(1.0)])
    with pytest.raises(RuntimeError, match="got 2 tensors and 1 gradients"):
        cr.autograd.backward([x.sum(), (x * 2).sum()], grad_tensors=[cr.tensor(1.0)])
    assert x.grad is None


def test_calling_grad_fn_checks_shape():
    x = _leaf()
    y = x.sin()
    with pytest.raises(RuntimeError, match=r"SinBackward0: grad_outputs\[0\] has shape "
                                           r"\(2,\) but output 0 of this node has shape \(3,\)"):
        y.grad_fn(cr.ones(2))
    (gx,) = y.grad_fn(cr.ones(3))
    np.testing.assert_allclose(np.asarray(gx), np.cos([1.0, 2.0, 3.0]))
    assert x.grad is None


def test_saved_input_unpacks_as_the_leaf_and_result_with_history():
    x = _leaf()
    y = x.sin()
    assert y.grad_fn._saved_self is x
    e = x.exp()
    r = e.grad_fn._saved_result
    assert r.grad_fn is e.grad_fn
    np.testing.assert_allclose(np.asarray(r.detach()), np.exp([1.0, 2.0, 3.0]))
    a = x * 2
    s = a.sin().grad_fn._saved_self     # a non-leaf input: a tensor with its history
    assert s.grad_fn is a.grad_fn


def test_function_saving_its_output_is_differentiable_twice():
    x = cr.tensor([0.5, -1.0, 2.0], requires_grad=True)
    assert cr.autograd.gradcheck(Exp.apply, (x,))
    assert cr.autograd.gradgradcheck(Exp.apply, (x,))
    (g,) = cr.autograd.grad(Exp.apply(x).sum(), x, create_graph=True)
    (h,) = cr.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(np.asarray(h), np.exp([0.5, -1.0, 2.0]))   # d2/dx2 e^x = e^x


def test_error_texts_match_torch():
    # deepcopy of a non-leaf refuses with PyTorch's text (its spec: only graph leaves
    # support the deepcopy protocol); grad with fewer grad_outputs than outputs names both
    # counts
    x = _leaf()
    with pytest.raises(RuntimeError, match=r"^Only Tensors created explicitly by the user "
                                           r"\(graph leaves\) support the deepcopy protocol"
                       ) as got:
        copy.deepcopy(x * 2)
    with pytest.raises(RuntimeError, match="got 2 tensors and 1 gradients"):
        cr.autograd.grad([x.sum(), x.sum()], x, grad_outputs=[cr.tensor(1.0)])
    assert copy.deepcopy(x).is_leaf          # a leaf is copied
    if torch is not None:
        tx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with pytest.raises(RuntimeError) as want:
            copy.deepcopy(tx * 2)
        assert str(got.value)[:80] == str(want.value)[:80]
        with pytest.raises(RuntimeError) as want:
            torch.autograd.grad([tx.sum(), tx.sum()], tx, grad_outputs=[torch.tensor(1.0)])
        assert "got 2 tensors and 1 gradients" in str(want.value)


def test_autograd_grad_results_own_their_memory():
    """``autograd.grad`` hands out a rule's fresh result without a copy, and copies anything
    that may alias a seed, a saved value or another result."""
    a, b = _leaf(), _leaf((4.0, 5.0, 6.0))
    u = cr.tensor([1.0, 2.0, 3.0])
    ga, gb = cr.autograd.grad(a + b, (a, b), grad_outputs=u)   # both receive u itself
    assert not np.shares_memory(ga._data, u._data) and not np.shares_memory(gb._data, u._data)
    assert not np.shares_memory(ga._data, gb._data)
    ga._data *= 10                                            # results are writable
    np.testing.assert_array_equal(np.asarray(gb), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(u), [1.0, 2.0, 3.0])
    # the same input twice: two tensors, not two names for one array
    g1, g2 = cr.autograd.grad((a * b).sum(), (a, a))
    assert g1 is not g2 and not np.shares_memory(g1._data, g2._data)
    np.testing.assert_array_equal(np.asarray(g2), [4.0, 5.0, 6.0])
    # a view of the seed (sum's VJP broadcasts it) is copied, and stays writable
    (gs,) = cr.autograd.grad((a + 1.0).sum(), a)
    assert gs._data.flags.writeable and gs._data.base is None
    gs._data += 1
    np.testing.assert_array_equal(np.asarray(gs), [2.0, 2.0, 2.0])
    # a saved input is never handed out: the gradient of w * x with respect to w is x
    x = cr.tensor([7.0, 8.0, 9.0])
    (gw,) = cr.autograd.grad((a * x).sum(), a)
    assert not np.shares_memory(gw._data, x._data)


def test_per_sample_gradients_own_their_memory():
    from chainrule import func

    w = cr.tensor([1.0, 2.0])
    X = cr.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    plus = func.vmap(func.grad(lambda w, x: (w + x).sum()), in_dims=(None, 0))(w, X)
    times = func.vmap(func.grad(lambda w, x: (w * x).sum()), in_dims=(None, 0))(w, X)
    np.testing.assert_array_equal(np.asarray(plus), np.ones((3, 2)))
    np.testing.assert_array_equal(np.asarray(times), np.asarray(X))
    for r in (plus, times):
        assert r._data.flags.writeable and not np.shares_memory(r._data, X._data)
    times._data[...] = 0
    np.testing.assert_array_equal(np.asarray(X), [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])


COPYING = {  # ops whose result is a new tensor in PyTorch (never a view of the input)
    "flip": lambda m, t: t.flip(0), "fliplr": lambda m, t: t.fliplr(),
    "flipud": lambda m, t: t.flipud(), "rot90_0": lambda m, t: t.rot90(0),
    "rot90_1": lambda m, t: t.rot90(1), "rot90_2": lambda m, t: t.rot90(2),
    "diag": lambda m, t: t.diag(), "roll_whole_turn": lambda m, t: t.roll(2, 0),
    "repeat_once": lambda m, t: t.repeat(1, 1), "tile_once": lambda m, t: t.tile((1, 1)),
    "pad_zero": lambda m, t: m.nn.functional.pad(t, (0, 0)),
    "einsum_relabel": lambda m, t: m.einsum("ij->ji", t),
    "einsum_diagonal": lambda m, t: m.einsum("ii->i", t),
}


@pytest.mark.parametrize("name", sorted(COPYING))
def test_ops_that_copy_leave_their_input_alone_when_the_result_is_changed(name):
    # writing into the result must not change the input: its values stay and its gradient
    # is that of (x * 1).sum(), ones (was: the result shared the input's memory)
    for m in [cr] + ([torch] if torch is not None and not name.startswith("einsum") else []):
        x = m.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=m.float64, requires_grad=True)
        a = x * 1
        out = COPYING[name](m, a)
        assert out is not a
        out.mul_(10)
        np.testing.assert_array_equal(a.detach().numpy(), [[1.0, 2.0], [3.0, 4.0]])
        (a * 1).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 2)))


def test_einsum_checks_the_versions_of_the_operands_it_saved():
    x = cr.tensor([1.0, 2.0, 3.0], dtype=cr.float64, requires_grad=True)
    t = x * 1
    s = cr.einsum("i,i->", t, t)   # saves t (twice) for its VJP 2 t
    t.mul_(10)
    with pytest.raises(RuntimeError, match=r"saved by EinsumBackward0 as 'operands\[0\]'"):
        s.backward()
    y = x * 1
    cr.einsum("i,i->", y, y).backward()   # unchanged operands: d/dx sum(x^2) = 2 x
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 6.0])
