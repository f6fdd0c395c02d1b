"""``nn.utils.prune``: masks derived by hand (the k smallest |w| zeroed, the channels of
smallest norm, global pruning over several tensors), the reparametrisation (``_orig``
parameter, ``_mask`` buffer, forward pre-hook, gradients masked), iterative pruning through
a PruningContainer, ``remove``, the argument checks; and, where PyTorch is importable,
PyTorch's masks (random and tied values: PyTorch's CPU topk picks among ties as libstdc++'s
partial_sort / nth_element do), keys, gradients and error messages."""

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn
from chainrule.nn.utils import prune
from chainrule.nn.utils.prune import _torch_topk_positions

try:
    import torch
    import torch.nn.utils.prune as tprune
except ImportError:
    torch = None


def _linear(w, b=None):
    w = np.asarray(w, dtype=np.float64)
    m = nn.Linear(w.shape[1], w.shape[0], bias=b is not None)
    with cr.no_grad():
        m.weight.copy_(cr.tensor(w))
        if b is not None:
            m.bias.copy_(cr.tensor(np.asarray(b, dtype=np.float64)))
    return m


def _smallest_mask(w, k):
    """Ones, with the k entries of smallest |w| zeroed (|w| distinct)."""
    mask = np.ones(w.size)
    mask[np.argsort(np.abs(w).ravel(), kind="stable")[:k]] = 0
    return mask.reshape(w.shape)


# --- by hand ---------------------------------------------------------------------------


def test_l1_unstructured_reparametrises_and_zeroes_the_smallest():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 5))
    m = _linear(w, np.zeros(4))
    out = prune.l1_unstructured(m, "weight", amount=6)
    assert out is m
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    assert [n for n, _ in m.named_buffers()] == ["weight_mask"]
    assert "weight" not in m._parameters
    expected = _smallest_mask(w, 6)
    assert np.array_equal(m.weight_mask.numpy(), expected)
    assert np.array_equal(m.weight.detach().numpy(), w * expected)
    assert np.array_equal(m.weight_orig.detach().numpy(), w)
    assert prune.is_pruned(m) and prune.is_pruned(nn.Sequential(m))
    assert not prune.is_pruned(nn.Linear(2, 2))


def test_float_amount_rounds_half_to_even():
    w = np.arange(1.0, 11.0).reshape(2, 5)
    m = prune.l1_unstructured(_linear(w), "weight", amount=0.25)  # round(2.5) == 2
    assert m.weight_mask.numpy().sum() == 8
    m = prune.l1_unstructured(_linear(w), "weight", amount=0.35)  # round(3.5) == 4
    assert m.weight_mask.numpy().sum() == 6
    m = prune.l1_unstructured(_linear(w), "weight", amount=0.0)
    assert m.weight_mask.numpy().sum() == 10
    m = prune.l1_unstructured(_linear(w), "weight", amount=1.0)
    assert m.weight_mask.numpy().sum() == 0


def test_gradient_of_orig_is_the_masked_upstream_gradient():
    rng = np.random.default_rng(1)
    w, x = rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
    m = prune.l1_unstructured(_linear(w, np.zeros(3)), "weight", amount=5)
    mask = m.weight_mask.numpy()
    y = m(cr.tensor(x))
    assert np.allclose(y.detach().numpy(), x @ (w * mask).T, atol=1e-14)
    g = rng.standard_normal((5, 3))
    y.backward(cr.tensor(g))
    assert np.allclose(m.weight_orig.grad.numpy(), mask * (g.T @ x), atol=1e-13)
    assert m.weight_mask.grad is None


def test_the_hook_recomputes_the_weight_before_each_call():
    m = prune.l1_unstructured(_linear([[1.0, -2.0], [3.0, 0.5]]), "weight", amount=1)
    with cr.no_grad():
        m.weight_orig.mul_(2.0)
    m(cr.ones(1, 2))
    assert np.array_equal(m.weight.detach().numpy(), [[2.0, -4.0], [6.0, 0.0]])


def test_iterative_pruning_combines_masks_in_a_container():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((6, 5))
    m = _linear(w)
    prune.l1_unstructured(m, "weight", amount=4)
    prune.l1_unstructured(m, "weight", amount=0.5)  # half of the 26 left: 13 more
    mask = m.weight_mask.numpy()
    assert mask.sum() == 30 - 4 - 13
    assert np.array_equal(mask, _smallest_mask(w, 17))
    hooks = list(m._forward_pre_hooks.values())
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer)
    assert [type(h).__name__ for h in hooks[0]] == ["L1Unstructured", "L1Unstructured"]
    assert len(hooks[0]) == 2 and hooks[0][1].amount == 0.5
    assert list(m.state_dict()) == ["weight_orig", "weight_mask"]


def test_ln_structured_zeroes_the_channels_of_smallest_norm():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((5, 3, 2, 2))
    conv = nn.Conv2d(3, 5, 2)
    with cr.no_grad():
        conv.weight.copy_(cr.tensor(w))
    prune.ln_structured(conv, "weight", amount=2, n=2, dim=0)
    norms = np.sqrt((w ** 2).sum(axis=(1, 2, 3)))
    gone = np.argsort(norms)[:2]
    expected = np.ones_like(w)
    expected[gone] = 0
    assert np.array_equal(conv.weight_mask.numpy(), expected)
    # again along dim 1 with the 1-norm, among all input channels
    prune.ln_structured(conv, "weight", amount=1, n=1, dim=1)
    norms1 = np.abs(w * expected).sum(axis=(0, 2, 3))
    expected[:, np.argmin(norms1)] = 0
    assert np.array_equal(conv.weight_mask.numpy(), expected)


def test_ln_structured_keeps_the_pruned_channels_out_of_the_next_choice():
    w = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0]]).T  # column norms 1..4
    m = _linear(w)
    prune.ln_structured(m, "weight", amount=1, n=1, dim=1)
    prune.ln_structured(m, "weight", amount=2, n=1, dim=1)  # 2 of the 3 columns left
    assert np.array_equal(m.weight_mask.numpy()[0], [0.0, 0.0, 0.0, 1.0])


def test_remove_makes_the_pruning_permanent_on_the_same_parameter():
    w = np.array([[0.1, -3.0, 2.0], [-0.2, 1.0, 0.05]])
    m = _linear(w, [1.0, 2.0])
    prune.l1_unstructured(m, "weight", amount=3)
    orig = m.weight_orig
    assert prune.remove(m, "weight") is m
    assert m.weight is orig and isinstance(m.weight, nn.Parameter)
    assert np.array_equal(m.weight.detach().numpy(), [[0.0, -3.0, 2.0], [0.0, 1.0, 0.0]])
    assert list(m.state_dict()) == ["bias", "weight"]
    assert not m._forward_pre_hooks and not prune.is_pruned(m)
    with pytest.raises(ValueError, match="Parameter 'weight' of module Linear.* has to be "
                                         "pruned before pruning can be removed"):
        prune.remove(m, "weight")


def test_global_unstructured_prunes_the_smallest_across_tensors():
    rng = np.random.default_rng(4)
    a, b = _linear(rng.standard_normal((3, 4))), _linear(rng.standard_normal((2, 3)), [5, 6])
    wa, wb, bb = a.weight.detach().numpy(), b.weight.detach().numpy(), np.array([5.0, 6.0])
    params = [(a, "weight"), (b, "weight"), (b, "bias")]
    prune.global_unstructured(params, pruning_method=prune.L1Unstructured, amount=7)
    flat = np.concatenate([wa.ravel(), wb.ravel(), bb])
    mask = _smallest_mask(flat, 7)
    got = np.concatenate([a.weight_mask.numpy().ravel(), b.weight_mask.numpy().ravel(),
                          b.bias_mask.numpy()])
    assert np.array_equal(got, mask)
    # again: 30% of the 13 entries left (4), among the unpruned ones only
    prune.global_unstructured(params, pruning_method=prune.L1Unstructured, amount=0.3)
    got = np.concatenate([a.weight_mask.numpy().ravel(), b.weight_mask.numpy().ravel(),
                          b.bias_mask.numpy()])
    assert np.array_equal(got, _smallest_mask(flat, 11))
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE supported'):
        prune.global_unstructured(params, prune.LnStructured, amount=1, n=2)
    with pytest.raises(TypeError, match="importance_scores must be of type dict"):
        prune.global_unstructured(params, prune.L1Unstructured, importance_scores=[1],
                                  amount=1)
    with pytest.raises(TypeError, match="parameters is not an Iterable"):
        prune.global_unstructured(3, prune.L1Unstructured, amount=1)


def test_importance_scores_decide_the_mask():
    m = _linear(np.ones((2, 3)))
    scores = cr.tensor([[3.0, 1.0, 2.0], [-0.5, 5.0, 4.0]])
    prune.l1_unstructured(m, "weight", amount=2, importance_scores=scores)
    assert np.array_equal(m.weight_mask.numpy(), [[1, 0, 1], [0, 1, 1]])
    with pytest.raises(AssertionError, match="importance_scores should have the same shape"):
        prune.l1_unstructured(_linear(np.ones((2, 3))), "weight", 1,
                              importance_scores=cr.ones(3))
    t = cr.tensor([1.0, -2.0, 3.0])
    pruned = prune.L1Unstructured(amount=1).prune(t, importance_scores=cr.tensor([5.0, 0, 1]))
    assert np.array_equal(pruned.numpy(), [1.0, 0.0, 3.0])


def test_custom_mask_identity_and_random_methods():
    m = prune.custom_from_mask(_linear(np.ones((3, 2)), [1, 2, 3]), "bias",
                               mask=cr.tensor([0, 1, 0]))
    assert np.array_equal(m.bias_mask.numpy(), [0.0, 1.0, 0.0])
    assert m.bias_mask.dtype == cr.float64
    assert np.array_equal(m.bias.detach().numpy(), [0.0, 2.0, 0.0])
    m = prune.identity(_linear(np.ones((3, 2))), "weight")
    assert np.array_equal(m.weight_mask.numpy(), np.ones((3, 2)))
    cr.manual_seed(0)
    m = prune.random_unstructured(_linear(np.ones((4, 5))), "weight", amount=0.3)
    assert m.weight_mask.numpy().sum() == 14
    prune.random_unstructured(m, "weight", amount=4)  # among the 14 left
    assert m.weight_mask.numpy().sum() == 10
    m = prune.random_structured(_linear(np.ones((4, 5))), "weight", amount=2, dim=1)
    cols = m.weight_mask.numpy().sum(axis=0)
    assert sorted(cols.tolist()) == [0, 0, 4, 4, 4]
    prune.random_structured(m, "weight", amount=1, dim=0)
    assert (m.weight_mask.numpy().sum(axis=1) == 0).sum() == 1


def test_argument_checks():
    with pytest.raises(ValueError, match=r"amount=-1 should either be a float in the range "
                                         r"\[0, 1\] or a non-negative integer"):
        prune.L1Unstructured(-1)
    with pytest.raises(ValueError, match="amount=1.5 should either"):
        prune.RandomUnstructured(1.5)
    with pytest.raises(TypeError, match="Invalid type for amount: a. Must be int or float."):
        prune.LnStructured("a", n=2)
    m = _linear(np.ones((2, 3)), [0, 0])
    with pytest.raises(ValueError, match="amount=7 should be smaller than the number of "
                                         "parameters to prune=6"):
        prune.l1_unstructured(m, "weight", 7)
    # a failed pruning leaves the parameter a parameter (moved to the end, as PyTorch)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight"]
    assert not m._forward_pre_hooks
    with pytest.raises(ValueError, match="Structured pruning can only be applied to "
                                         "multidimensional tensors"):
        prune.ln_structured(m, "bias", 1, n=2, dim=0)
    with pytest.raises(IndexError, match="Invalid index 2 for tensor of size"):
        prune.random_structured(m, "weight", 1, dim=2)
    a, b = prune.L1Unstructured(1), prune.L1Unstructured(1)
    a._tensor_name, b._tensor_name = "weight", "bias"
    with pytest.raises(TypeError, match="is not a BasePruningMethod subclass"):
        prune.PruningContainer(a).add_pruning_method(3)
    with pytest.raises(ValueError, match="Can only add pruning methods acting on the "
                                         "parameter named 'weight'"):
        prune.PruningContainer(a).add_pruning_method(b)
    with pytest.raises(TypeError):
        prune.BasePruningMethod()  # abstract compute_mask


def test_a_custom_structured_method_needs_dim_in_a_container():
    class Odd(prune.BasePruningMethod):
        PRUNING_TYPE = "structured"

        def compute_mask(self, t, default_mask):
            return default_mask

    m = prune.identity(_linear(np.ones((2, 2))), "weight")
    with pytest.raises(AttributeError, match="need to have the attribute `dim` defined"):
        Odd.apply(m, "weight")


# --- PyTorch's choice among ties --------------------------------------------------------


def _assert_valid_topk(v, k, largest, pos):
    """``pos`` holds k distinct positions whose values are the k largest (smallest) of
    ``v``, NaN counting as larger than every number (as PyTorch's topk orders it)."""
    assert len(set(pos.tolist())) == k == len(pos)
    key = np.where(np.isnan(v), np.inf, v)
    chosen, rest = key[pos], np.delete(key, pos)
    if largest:
        assert rest.size == 0 or chosen.min() >= rest.max()
    else:
        assert rest.size == 0 or chosen.max() <= rest.min()


def test_topk_positions_on_ties_are_a_valid_selection():
    rng = np.random.default_rng(5)
    for n in (4, 10, 70, 300):
        v = rng.integers(0, 3, size=n).astype(float)
        for k in (1, n // 3, n // 2, n - 1):
            for largest in (False, True):
                _assert_valid_topk(v, k, largest, _torch_topk_positions(v, k, largest))
    # distinct values: the positions of the k largest / smallest by sorting
    v = rng.permutation(50).astype(float)
    for k in (1, 7, 49):
        assert np.array_equal(_torch_topk_positions(v, k, True), np.sort(np.argsort(v)[-k:]))
        assert np.array_equal(_torch_topk_positions(v, k, False), np.sort(np.argsort(v)[:k]))


def test_topk_positions_on_ties_and_nan_and_against_torch():
    rng = np.random.default_rng(6)
    count = 0
    for n in (3, 5, 8, 20, 64, 65, 130, 700, 3000):
        for trial in range(6):
            v = rng.integers(0, 4, size=n).astype(float)
            if trial % 2:
                v[rng.random(n) < 0.2] = np.nan
            if trial == 5:
                v = np.sort(v)[::-1].copy()
            for k in {1, max(1, n // 64), n // 64 + 1, n // 3, n - 1}:
                for largest in (False, True):
                    got = _torch_topk_positions(v, k, largest)
                    _assert_valid_topk(v, k, largest, got)  # without torch
                    if torch is not None:  # which of the tied entries PyTorch picks
                        want = torch.topk(torch.tensor(v), k, largest=largest).indices.numpy()
                        assert np.array_equal(np.sort(want), got), (n, k, largest)
                    count += 1
    assert count > 300


# --- sequences of pruning steps, by hand and against PyTorch --------------------------------


def _pair(tmod, cmod):
    cmod.load_state_dict({k: cr.tensor(v.detach().numpy()) for k, v in
                          tmod.state_dict().items()})
    return tmod, cmod


def _count(amount, n):
    """How many of n candidates an amount prunes: an int as is, a fraction rounded (half
    to even)."""
    return amount if isinstance(amount, int) else round(amount * n)


def _check_unstructured(before, after, importance, amount):
    """An unstructured step: among the entries still in (``before`` 1), the given number
    left out, none of larger |importance| than an entry kept."""
    assert ((after == 0) | (after == 1)).all() and (after <= before).all()
    gone = (before == 1) & (after == 0)
    assert gone.sum() == _count(amount, int(before.sum()))
    kept = after == 1
    if gone.any() and kept.any():
        assert np.abs(importance[gone]).max() <= np.abs(importance[kept]).min()


def _check_structured(before, after, importance, amount, n, dim):
    """A structured step along ``dim``: among the channels not yet all pruned, the given
    number zeroed as a whole (the rest of ``before`` kept), none of larger Ln norm of
    ``importance`` (over the other dims) than a channel kept."""
    dim = dim % before.ndim
    other = tuple(i for i in range(before.ndim) if i != dim)
    alive = before.sum(axis=other) != 0
    gone = alive & (after.sum(axis=other) == 0)
    assert gone.sum() == _count(amount, int(alive.sum()))
    expected = np.moveaxis(before.copy(), dim, 0)
    expected[gone] = 0
    assert np.array_equal(after, np.moveaxis(expected, 0, dim))
    a = np.abs(importance)
    if n == float("inf"):
        norms = a.max(axis=other)
    elif n == float("-inf"):
        norms = a.min(axis=other)
    else:
        norms = (a ** n).sum(axis=other) ** (1 / n)
    kept = alive & ~gone
    if gone.any() and kept.any():
        assert norms[gone].max() <= norms[kept].min()


CONV_STEPS = [  # (method, tensor, kwargs)
    ("l1_unstructured", "weight", dict(amount=0.3)),
    ("ln_structured", "weight", dict(amount=2, n=2, dim=0)),
    ("l1_unstructured", "weight", dict(amount=7)),
    ("ln_structured", "weight", dict(amount=0.5, n=float("-inf"), dim=1)),
    ("ln_structured", "weight", dict(amount=1, n=1, dim=-1)),
    ("l1_unstructured", "bias", dict(amount=2)),
    ("custom_from_mask", "bias", dict(mask=[1, 0, 1, 1, 0, 1])),
]


def _np_conv_and_grads(x, w, b):
    """A valid 3x3 convolution by sliding windows, and the gradients of sum(y^2) with
    respect to w and b: 2 y correlated with the windows, and 2 y summed."""
    win = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))
    y = np.einsum("ncijab,ocab->noij", win, w) + b[:, None, None]
    return y, np.einsum("noij,ncijab->ocab", 2 * y, win), 2 * y.sum((0, 2, 3))


@pytest.mark.parametrize("tied", [False, True])
def test_masks_values_and_gradients_by_hand_and_torch(tied):
    rng = np.random.default_rng(7 + tied)
    cm = nn.Conv2d(4, 6, 3)
    tm = None if torch is None else torch.nn.Conv2d(4, 6, 3, dtype=torch.float64)
    if tied:  # few distinct magnitudes: the choice among equal values decides the mask
        w = rng.integers(-2, 3, size=(6, 4, 3, 3)) * 0.5
        with cr.no_grad():
            cm.weight.copy_(cr.tensor(w))
            cm.bias.zero_()
        if tm is not None:
            with torch.no_grad():
                tm.weight.copy_(torch.tensor(w))
                tm.bias.zero_()
    if tm is not None:
        _pair(tm, cm)
    orig = {k: getattr(cm, k).detach().numpy().copy() for k in ("weight", "bias")}
    # without torch: each step a valid choice, the parameter its orig times its mask
    for method, name, kw in CONV_STEPS:
        pruned = hasattr(cm, name + "_mask")
        before = getattr(cm, name + "_mask").numpy().copy() if pruned else \
            np.ones_like(orig[name])
        importance = orig[name] * before
        ckw = {**kw, "mask": cr.tensor(kw["mask"])} if "mask" in kw else kw
        getattr(prune, method)(cm, name, **ckw)
        after = getattr(cm, name + "_mask").numpy()
        if method == "l1_unstructured":
            _check_unstructured(before, after, importance, kw["amount"])
        elif method == "ln_structured":
            _check_structured(before, after, importance, **kw)
        else:
            assert np.array_equal(after, before * np.array(kw["mask"]))
        assert np.array_equal(getattr(cm, name).detach().numpy(), orig[name] * after)
        if tm is not None:
            tkw = {**kw, "mask": torch.tensor(kw["mask"])} if "mask" in kw else kw
            getattr(tprune, method)(tm, name, **tkw)
    # each pruned parameter leaves its place and comes back at the end as <name>_orig
    assert list(cm.state_dict()) == ["weight_orig", "bias_orig", "weight_mask", "bias_mask"]
    wm, bm = cm.weight_mask.numpy(), cm.bias_mask.numpy()
    x = rng.standard_normal((2, 4, 5, 5))
    yc = cm(cr.tensor(x))
    want, gw, gb = _np_conv_and_grads(x, orig["weight"] * wm, orig["bias"] * bm)
    np.testing.assert_allclose(yc.detach().numpy(), want, rtol=1e-12, atol=1e-12)
    yc.square().sum().backward()
    np.testing.assert_allclose(cm.weight_orig.grad.numpy(), wm * gw, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cm.bias_orig.grad.numpy(), bm * gb, rtol=1e-12, atol=1e-12)
    # a pruned state dict loads into a pruned module
    fresh = prune.identity(prune.identity(nn.Conv2d(4, 6, 3), "weight"), "bias")
    fresh.load_state_dict(cm.state_dict())
    np.testing.assert_allclose(fresh(cr.tensor(x)).detach().numpy(), want, rtol=1e-12,
                               atol=1e-12)
    if tm is not None:
        assert list(tm.state_dict()) == list(cm.state_dict())
        assert [n for n, _ in tm.named_buffers()] == [n for n, _ in cm.named_buffers()]
        for name in ("weight_mask", "bias_mask"):
            assert np.array_equal(getattr(tm, name).numpy(), getattr(cm, name).numpy()), name
        yt = tm(torch.tensor(x))
        np.testing.assert_allclose(yc.detach().numpy(), yt.detach().numpy(), atol=1e-10)
        yt.square().sum().backward()
        for name in ("weight_orig", "bias_orig"):
            np.testing.assert_allclose(getattr(cm, name).grad.numpy(),
                                       getattr(tm, name).grad.numpy(), atol=1e-10)
        # a pruned PyTorch state dict loads into a pruned chainrule module
        fresh.load_state_dict({k: cr.tensor(v.numpy()) for k, v in tm.state_dict().items()})
        np.testing.assert_allclose(fresh(cr.tensor(x)).detach().numpy(), yt.detach().numpy(),
                                   atol=1e-10)
        tprune.remove(tm, "weight")
        tprune.remove(tm, "bias")
    prune.remove(cm, "weight")
    prune.remove(cm, "bias")
    assert list(cm.state_dict()) == ["weight", "bias"]
    assert np.array_equal(cm.weight.detach().numpy(), orig["weight"] * wm)
    if tm is not None:
        assert list(tm.state_dict()) == list(cm.state_dict())
        assert np.array_equal(tm.weight.detach().numpy(), cm.weight.detach().numpy())


@pytest.mark.parametrize("tied", [False, True])
def test_global_unstructured_by_hand_and_torch(tied):
    rng = np.random.default_rng(9 + tied)
    cnet = nn.Sequential(nn.Linear(6, 5), nn.Linear(5, 3))
    tnet = None
    if torch is not None:
        tnet = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Linear(5, 3)).double()
    if tied:
        for k, p in cnet.named_parameters():
            v = rng.integers(-1, 2, size=tuple(p.shape)) * 1.0
            with cr.no_grad():
                p.copy_(cr.tensor(v))
            if tnet is not None:
                with torch.no_grad():
                    tnet.get_parameter(k).copy_(torch.tensor(v))
    if tnet is not None:
        _pair(tnet, cnet)
    targets = [(0, "weight"), (1, "weight"), (1, "bias")]
    orig = [getattr(cnet[i], name).detach().numpy().copy() for i, name in targets]

    def masks():
        return [getattr(cnet[i], name + "_mask").numpy().copy()
                if hasattr(cnet[i], name + "_mask") else np.ones_like(o)
                for (i, name), o in zip(targets, orig)]

    def flat(arrays):
        return np.concatenate([a.ravel() for a in arrays])

    # without torch: each step a valid choice, over one tensor and then over all three
    before = masks()
    prune.l1_unstructured(cnet[0], "weight", 4)
    _check_unstructured(before[0], masks()[0], orig[0], 4)
    for amount in (0.4, 3):
        before = masks()
        prune.global_unstructured([(cnet[i], name) for i, name in targets],
                                  pruning_method=prune.L1Unstructured, amount=amount)
        after = masks()
        _check_unstructured(flat(before), flat(after), flat(orig) * flat(before), amount)
        for (i, name), o, m in zip(targets, orig, after):
            assert np.array_equal(getattr(cnet[i], name).detach().numpy(), o * m)
    if tnet is None:
        return
    tprune.l1_unstructured(tnet[0], "weight", 4)
    params = [(tnet[0], "weight"), (tnet[1], "weight"), (tnet[1], "bias")]
    tprune.global_unstructured(params, pruning_method=tprune.L1Unstructured, amount=0.4)
    tprune.global_unstructured(params, pruning_method=tprune.L1Unstructured, amount=3)
    tsd, csd = tnet.state_dict(), cnet.state_dict()
    assert list(tsd) == list(csd)
    for k in tsd:
        assert np.array_equal(tsd[k].numpy(), csd[k].numpy()), k


def test_random_pruning_sizes_and_keys_as_torch():
    libs = ((prune, cr),) + (((tprune, torch),) if torch is not None else ())
    for mod, lib in libs:
        lib.manual_seed(0)
        m = lib.nn.Linear(10, 8)
        mod.random_unstructured(m, "weight", amount=0.35)
        first = m.weight_mask.numpy().copy()
        assert (first == 0).sum() == 28  # round(0.35 * 80)
        mod.random_structured(m, "weight", amount=3, dim=0)
        mask = m.weight_mask.numpy()
        assert list(m.state_dict()) == ["bias", "weight_orig", "weight_mask"]
        # three more of the rows not yet all pruned zeroed, the others as they were
        alive = first.sum(axis=1) != 0
        gone = alive & (mask.sum(axis=1) == 0)
        assert gone.sum() == 3
        assert np.array_equal(mask[~gone], first[~gone])
        assert (mask.sum(axis=1) == 0).sum() >= 3
        assert (mask == 0).sum() >= 28
