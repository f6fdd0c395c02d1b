"""NumPy's names (chainrule.ops.numpy_names) and SciPy's special functions added for
issue 12: values against NumPy and SciPy, gradients by gradcheck (float64), and against
HIPS autograd's gradients where it is installed."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as ss

import chainrule as cr
from chainrule.autograd import gradcheck, gradgradcheck

try:
    import torch
except ImportError:
    torch = None

try:  # HIPS autograd: its gradients are compared where it is installed
    import autograd
    import autograd.numpy as anp
    import autograd.scipy.special as asp
except ImportError:
    autograd = anp = asp = None

RNG = np.random.default_rng(1212)
sp = cr.special


def t(a, requires_grad=True):
    return cr.tensor(np.asarray(a, dtype=float), requires_grad=requires_grad)


def close(got, want, rtol=1e-12, atol=1e-12):
    got = got.detach().numpy() if isinstance(got, cr.Tensor) else np.asarray(got)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    assert np.shape(got) == np.shape(want)


def flat(parts):
    """A tensor function of tuple/list results: their entries concatenated (for gradcheck)."""
    if isinstance(parts, cr.Tensor):
        return parts.reshape(-1)
    return cr.cat([p.reshape(-1) for p in parts])


def chainrule_grad(fn, x, w):
    """d/dx sum(w * fn(x)) in chainrule."""
    xt = t(x)
    (flat(fn(xt)) * cr.tensor(w.reshape(-1))).sum().backward()
    return xt.grad.numpy()


def hips_grad(fn, x, w):
    """d/dx sum(w * fn(x)) in HIPS autograd."""
    def total(v):
        out = fn(v)
        if isinstance(out, (list, tuple)) or type(out).__name__ == "SequenceBox":
            parts = [out[i] for i in range(len(out))]  # HIPS boxes a list of arrays
        else:
            parts = [out]
        return anp.sum(anp.concatenate([anp.reshape(p, -1) for p in parts]) * w.reshape(-1))

    return autograd.grad(total)(x)


def moved_grad(np_fn, shape, w):
    """d/dx sum(w * fn(x)) for a function that only moves, copies or drops entries (or pads
    with zeros): NumPy's function applied to the entries' numbers 1, 2, ... says which input
    entry each output entry is (0: a padded constant), so each weight lands there."""
    idx = np.arange(1, np.prod(shape) + 1).reshape(shape)
    out = np_fn(idx)
    parts = out if isinstance(out, (list, tuple)) else [out]
    order = np.concatenate([np.reshape(p, -1) for p in parts])
    want = np.zeros(np.prod(shape) + 1)
    np.add.at(want, order, w.reshape(-1))
    return want[1:].reshape(shape)


# --- elementwise aliases ----------------------------------------------------------------------

def test_angle_conversions_match_numpy_and_torch():
    x = RNG.uniform(-400, 400, (3, 4))
    close(cr.deg2rad(t(x)), np.deg2rad(x))
    close(cr.radians(t(x)), np.radians(x))
    close(cr.rad2deg(t(x)), np.rad2deg(x))
    close(cr.degrees(t(x)), np.degrees(x))
    ints = cr.tensor(np.array([0, 90, 180]))
    close(cr.deg2rad(ints), np.deg2rad(np.array([0, 90, 180])))  # integers give floats
    assert cr.deg2rad(ints).dtype == np.float64
    y = t(x)
    close(y.deg2rad(), np.deg2rad(x))
    close(y.rad2deg(), np.rad2deg(x))
    z = t(x, requires_grad=False)
    z.deg2rad_()
    close(z, np.deg2rad(x))
    for fn in (cr.deg2rad, cr.rad2deg, cr.degrees, cr.radians):
        assert gradcheck(fn, [t(x)])


def test_fabs_and_mod_match_numpy():
    x = RNG.uniform(0.3, 2, (3, 4)) * RNG.choice([-1.0, 1.0], (3, 4))
    close(cr.fabs(t(x)), np.fabs(x))
    assert gradcheck(cr.fabs, [t(x)])
    a = np.array([-3.3, -1.2, 0.4, 2.6, 5.3])
    b = np.array([1.3, -0.7, -2.1, 0.9, 1.7])
    close(cr.mod(t(a), t(b)), np.mod(a, b))  # the sign of the divisor, as Python's %
    close(cr.mod(t(a), 1.3), np.mod(a, 1.3))
    assert gradcheck(cr.mod, [t(a), t(b)])


def test_elementwise_aliases_against_hips():
    x = RNG.uniform(0.3, 2, (3, 4)) * RNG.choice([-1.0, 1.0], (3, 4))
    w = RNG.standard_normal((3, 4))
    # without autograd: the gradients are the constant factors (and sign for fabs)
    np.testing.assert_allclose(chainrule_grad(cr.deg2rad, x, w), w * math.pi / 180)
    np.testing.assert_allclose(chainrule_grad(cr.fabs, x, w), w * np.sign(x))
    np.testing.assert_allclose(chainrule_grad(cr.radians, x, w), w * math.pi / 180)
    np.testing.assert_allclose(chainrule_grad(cr.rad2deg, x, w), w * 180 / math.pi)
    np.testing.assert_allclose(chainrule_grad(cr.degrees, x, w), w * 180 / math.pi)
    # mod(x, c) = x - c floor(x / c): slope 1 between its jumps
    np.testing.assert_allclose(chainrule_grad(lambda v: cr.mod(v, 0.7), x, w), w)
    if anp is None:
        return
    for ours, theirs in ((cr.deg2rad, anp.deg2rad), (cr.rad2deg, anp.rad2deg),
                         (cr.radians, anp.radians), (cr.degrees, anp.degrees),
                         (cr.fabs, anp.fabs), (lambda v: cr.mod(v, 0.7),
                                               lambda v: anp.mod(v, 0.7))):
        np.testing.assert_allclose(chainrule_grad(ours, x, w), hips_grad(theirs, x, w),
                                   rtol=1e-12)


# --- shapes -----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (2, 3, 4), (1, 2, 3, 2)])
def test_atleast_nd_match_numpy(shape):
    x = RNG.standard_normal(shape)
    for ours, theirs in ((cr.atleast_1d, np.atleast_1d), (cr.atleast_2d, np.atleast_2d),
                         (cr.atleast_3d, np.atleast_3d)):
        close(ours(t(x)), theirs(x))
        assert gradcheck(ours, [t(x)])


def test_atleast_nd_with_several_inputs_and_numbers():
    a, b = RNG.standard_normal(3), RNG.standard_normal((2, 2))
    got = cr.atleast_3d(t(a), t(b))
    want = np.atleast_3d(a, b)
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(got, want):
        close(g, w)
    listed = cr.atleast_2d([t(a), t(b)])  # PyTorch's sequence form
    assert isinstance(listed, tuple) and [x.shape for x in listed] == [(1, 3), (2, 2)]
    close(cr.atleast_1d(2.5), np.atleast_1d(2.5))
    close(cr.atleast_2d([1.0, 2.0]), np.atleast_2d([1.0, 2.0]))  # a list is array data


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3, (0, 2), (1, -1), (0, 1, 4)])
def test_expand_dims_matches_numpy(axis):
    x = RNG.standard_normal((2, 3))
    close(cr.expand_dims(t(x), axis), np.expand_dims(x, axis))
    assert gradcheck(lambda v: cr.expand_dims(v, axis), [t(x)])


def test_expand_dims_errors():
    x = t(np.ones((2, 3)))
    with pytest.raises(ValueError, match="repeated axis"):
        cr.expand_dims(x, (1, 1))
    with pytest.raises(IndexError):
        cr.expand_dims(x, 3)


def test_permute_dims_and_ravel_match_numpy():
    x = RNG.standard_normal((2, 3, 4))
    close(cr.permute_dims(t(x)), np.permute_dims(x))
    close(cr.permute_dims(t(x), (1, 2, 0)), np.permute_dims(x, (1, 2, 0)))
    assert gradcheck(lambda v: cr.permute_dims(v, (2, 0, 1)), [t(x)])
    close(cr.ravel(t(x)), np.ravel(x))
    close(cr.ravel(t(x), order="F"), np.ravel(x, order="F"))
    close(t(x).ravel(), np.ravel(x))
    assert gradcheck(lambda v: cr.ravel(v, order="F"), [t(x)])
    with pytest.raises(ValueError, match="order"):
        cr.ravel(t(x), order="Q")


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -4])
@pytest.mark.parametrize("start", [0, 1, 2, 3, 4, -1, -4])
def test_rollaxis_matches_numpy(axis, start):
    x = RNG.standard_normal((2, 3, 4, 5))
    close(cr.rollaxis(t(x), axis, start), np.rollaxis(x, axis, start))


def test_rollaxis_gradient_and_errors():
    x = RNG.standard_normal((2, 3, 4))
    assert gradcheck(lambda v: cr.rollaxis(v, 2, 0), [t(x)])
    with pytest.raises(np.exceptions.AxisError):
        cr.rollaxis(t(x), 0, 5)


def test_shape_functions_against_hips():
    x = RNG.standard_normal((2, 3, 4))
    w = RNG.standard_normal(24)
    # without autograd: moving entries moves the cotangent back (a permutation of w)
    g = chainrule_grad(lambda v: cr.rollaxis(v, 2, 0), x, w)
    np.testing.assert_allclose(np.rollaxis(g, 2, 0).reshape(-1), w)
    for name, ours, np_fn in (
            ("rollaxis_2_0", lambda v: cr.rollaxis(v, 2, 0), lambda v: np.rollaxis(v, 2, 0)),
            ("rollaxis_0_3", lambda v: cr.rollaxis(v, 0, 3), lambda v: np.rollaxis(v, 0, 3)),
            ("expand_dims", lambda v: cr.expand_dims(v, (0, 2)),
             lambda v: np.expand_dims(v, (0, 2))),
            ("permute_dims", lambda v: cr.permute_dims(v, (1, 2, 0)),
             lambda v: np.permute_dims(v, (1, 2, 0))),
            ("ravel", cr.ravel, np.ravel), ("atleast_3d", cr.atleast_3d, np.atleast_3d)):
        g = chainrule_grad(ours, x, w)
        np.testing.assert_allclose(g, moved_grad(np_fn, x.shape, w), err_msg=name)
        if anp is not None:
            theirs = {"rollaxis_2_0": lambda v: anp.rollaxis(v, 2, 0),
                      "rollaxis_0_3": lambda v: anp.rollaxis(v, 0, 3),
                      "expand_dims": lambda v: anp.expand_dims(v, (0, 2)),
                      "permute_dims": lambda v: anp.permute_dims(v, (1, 2, 0)),
                      "ravel": anp.ravel, "atleast_3d": anp.atleast_3d}[name]
            np.testing.assert_allclose(g, hips_grad(theirs, x, w), err_msg=name)


# --- splits -----------------------------------------------------------------------------------

@pytest.mark.parametrize("sections", [1, 2, 3, 5, 8, [1, 4], [2, 2, 6], [0, 10]])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_array_split_matches_numpy(sections, axis):
    x = RNG.standard_normal((7, 5))
    got = cr.array_split(t(x), sections, axis)
    want = np.array_split(x, sections, axis)
    assert isinstance(got, list) and len(got) == len(want)
    for g, w in zip(got, want):
        close(g, w)
    assert gradcheck(lambda v: flat(cr.array_split(v, sections, axis)), [t(x)])


@pytest.mark.parametrize("ours,theirs,shape,arg", [
    (cr.hsplit, np.hsplit, (6,), 3), (cr.hsplit, np.hsplit, (2, 6, 2), [1, 4]),
    (cr.hsplit, np.hsplit, (3, 4), 2), (cr.vsplit, np.vsplit, (4, 3), 2),
    (cr.vsplit, np.vsplit, (5, 2, 2), [2]), (cr.dsplit, np.dsplit, (2, 2, 6), 3),
    (cr.dsplit, np.dsplit, (1, 2, 5), [1, 3]),
])
def test_hsplit_vsplit_dsplit_match_numpy(ours, theirs, shape, arg):
    x = RNG.standard_normal(shape)
    got, want = ours(t(x), arg), theirs(x, arg)
    assert isinstance(got, tuple) and len(got) == len(want)  # PyTorch's tuple
    for g, w in zip(got, want):
        close(g, w)
    method = getattr(t(x), ours.__name__)(arg)
    assert len(method) == len(want)
    assert gradcheck(lambda v: flat(ours(v, arg)), [t(x)])


def test_split_errors_as_numpy():
    with pytest.raises(ValueError, match="equal division"):
        cr.hsplit(t(np.ones((2, 5))), 2)
    with pytest.raises(ValueError, match="hsplit only works on arrays of 1 or more"):
        cr.hsplit(t(1.0), 1)
    with pytest.raises(ValueError, match="vsplit only works on arrays of 2 or more"):
        cr.vsplit(t(np.ones(4)), 2)
    with pytest.raises(ValueError, match="dsplit only works on arrays of 3 or more"):
        cr.dsplit(t(np.ones((2, 4))), 2)


def test_splits_against_hips():
    x = RNG.standard_normal((4, 6, 2))
    w = RNG.standard_normal(48)
    # without autograd: the pieces together are the input, so the gradient is w
    np.testing.assert_allclose(chainrule_grad(lambda v: cr.hsplit(v, 3), x, w).reshape(-1),
                               _unsplit(w, (4, 6, 2), 1, 3))
    # and each split's pieces together are the input, in their order
    for split in (lambda m, v: m.array_split(v, 4, 1), lambda m, v: m.hsplit(v, [1, 4]),
                  lambda m, v: m.vsplit(v, 2), lambda m, v: m.dsplit(v, 2)):
        g = chainrule_grad(lambda v, split=split: split(cr, v), x, w)
        np.testing.assert_allclose(g, moved_grad(lambda v, split=split: split(np, v),
                                                 x.shape, w))
        if anp is not None:
            np.testing.assert_allclose(g, hips_grad(lambda v, split=split: split(anp, v), x, w))


def _unsplit(w, shape, axis, sections):
    """The gradient of sum(w * concat(split(x))) for pieces taken in order along ``axis``:
    w, reshaped piece by piece back into ``shape``."""
    pieces = np.split(np.arange(np.prod(shape)).reshape(shape), sections, axis)
    order = np.concatenate([p.reshape(-1) for p in pieces])
    out = np.empty(np.prod(shape))
    out[order] = w
    return out


# --- pad --------------------------------------------------------------------------------------

MODES = ["constant", "edge", "reflect", "symmetric", "wrap"]
WIDTHS = [1, (2, 3), ((1, 0), (3, 2)), ((0, 0), (7, 9)), ((5, 4), (0, 1))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("width", WIDTHS, ids=str)
def test_pad_matches_numpy(mode, width):
    x = RNG.standard_normal((3, 4))
    close(cr.pad(t(x), width, mode=mode), np.pad(x, width, mode=mode))
    assert gradcheck(lambda v: cr.pad(v, width, mode=mode), [t(x)])


@pytest.mark.parametrize("mode", MODES)
def test_pad_one_entry_and_three_dims(mode):
    one = np.array([2.5])
    close(cr.pad(t(one), (3, 2), mode=mode), np.pad(one, (3, 2), mode=mode))
    x = RNG.standard_normal((2, 3, 2))
    width = ((1, 2), (4, 0), (2, 3))
    close(cr.pad(t(x), width, mode=mode), np.pad(x, width, mode=mode))


def test_pad_constant_values_per_dim_and_default_mode():
    x = RNG.standard_normal((2, 3))
    close(cr.pad(t(x), 2), np.pad(x, 2))
    values = ((1.5, -2.0), (3.0, 4.0))
    close(cr.pad(t(x), ((1, 2), (2, 1)), constant_values=values),
          np.pad(x, ((1, 2), (2, 1)), constant_values=values))
    close(cr.pad(t(x), 1, constant_values=7.0), np.pad(x, 1, constant_values=7.0))


def test_pad_errors():
    x = t(np.ones((2, 3)))
    with pytest.raises(ValueError, match="mode 'linear_ramp' is not supported"):
        cr.pad(x, 1, mode="linear_ramp")
    with pytest.raises(ValueError, match="negative"):
        cr.pad(x, -1)
    with pytest.raises(ValueError, match="cannot be broadcast"):
        cr.pad(x, ((1, 2, 3),))
    with pytest.raises(ValueError, match="empty axis"):
        cr.pad(t(np.ones((0, 2))), 1, mode="wrap")


def test_pad_against_hips():
    x = RNG.standard_normal((3, 4))
    width = ((2, 1), (1, 3))
    w = RNG.standard_normal((6, 8))
    # without autograd: in wrap mode each entry's gradient is the sum of the weights of its
    # copies
    g = chainrule_grad(lambda v: cr.pad(v, width, mode="wrap"), x, w)
    rows, cols = np.arange(-2, 4) % 3, np.arange(-1, 7) % 4
    want = np.zeros((3, 4))
    np.add.at(want, (rows[:, None], cols[None, :]), w)
    np.testing.assert_allclose(g, want)
    np.testing.assert_allclose(g, moved_grad(lambda v: np.pad(v, width, "wrap"), x.shape, w))
    # in constant mode each entry appears once, past the padding: the weights there
    g = chainrule_grad(lambda v: cr.pad(v, width), x, w)
    np.testing.assert_allclose(g, w[2:5, 1:5])
    if anp is not None:
        # HIPS autograd differentiates the constant mode only (its VJP needs the mode given)
        np.testing.assert_allclose(g, hips_grad(lambda v: anp.pad(v, width, "constant"), x, w))


# --- partition --------------------------------------------------------------------------------

@pytest.mark.parametrize("kth", [0, 2, -1, [1, 3]])
@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_partition_meets_numpys_contract(kth, axis):
    x = RNG.standard_normal((5, 4))
    got = cr.partition(t(x), kth, axis=axis).detach().numpy()
    want = np.partition(x, kth, axis=axis)
    assert got.shape == want.shape
    ax = 0 if axis is None else axis
    for k in np.atleast_1d(kth):
        # the kth entries are NumPy's, smaller before, larger after
        np.testing.assert_array_equal(np.take(got, k, ax), np.take(want, k, ax))
        kk = k % got.shape[ax]
        before = np.take(got, range(kk), ax)
        after = np.take(got, range(kk + 1, got.shape[ax]), ax)
        pivot = np.expand_dims(np.take(got, kk, ax), ax)
        assert np.all(before <= pivot) and np.all(after >= pivot)
    # chainrule's is the full sort
    np.testing.assert_array_equal(got, np.sort(x, axis=axis))
    assert gradcheck(lambda v: cr.partition(v, kth, axis=axis), [t(x)])


def test_partition_errors():
    with pytest.raises(ValueError, match="out of bounds"):
        cr.partition(t(np.ones(3)), 3)
    with pytest.raises(TypeError, match="kth"):
        cr.partition(t(np.ones(3)), 1.5)


def test_partition_against_hips():
    x = RNG.standard_normal(7)

    def kth_entry(p):
        return p[3] * 2.5  # the kth entry: the same in any valid partition

    g = chainrule_grad(lambda v: kth_entry(cr.partition(v, 3)), x, np.ones(1))
    # without autograd: the weight lands on the median (4th smallest)
    want = np.zeros_like(x)
    want[np.argsort(x)[3]] = 2.5
    np.testing.assert_allclose(g, want)
    # and a symmetric function of all entries has the gradient of the unpartitioned one
    np.testing.assert_allclose(chainrule_grad(lambda v: (cr.partition(v, 3) ** 2).sum(), x,
                                              np.ones(1)), 2 * x)
    if anp is None:
        return
    # HIPS autograd differentiates partition of 1-D arrays only
    np.testing.assert_allclose(
        g, hips_grad(lambda v: kth_entry(anp.partition(v, 3)), x, np.ones(1)))
    np.testing.assert_allclose(
        chainrule_grad(lambda v: (cr.partition(v, 3) ** 2).sum() * 0.5, x, np.ones(1)),
        hips_grad(lambda v: anp.sum(anp.partition(v, 3) ** 2) * 0.5, x, np.ones(1)))


# --- gradient ---------------------------------------------------------------------------------

@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize("call", [
    ((), {}), ((0.5,), {}), ((0.5, 2.0), {}), ((), {"axis": 0}), ((3.0,), {"axis": -1}),
    ((0.5, 2.0), {"axis": (1, 0)}), ((), {"axis": (0,)}),
], ids=str)
def test_gradient_matches_numpy(call, edge_order):
    args, kwargs = call
    f = RNG.standard_normal((4, 5))
    got = cr.gradient(t(f), *args, edge_order=edge_order, **kwargs)
    want = np.gradient(f, *args, edge_order=edge_order, **kwargs)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            close(g, w)
    else:
        close(got, want)
    assert gradcheck(lambda v: flat(cr.gradient(v, *args, edge_order=edge_order, **kwargs)),
                     [t(f)])


def test_gradient_of_1d_and_integers():
    # torch.gradient's call returns a tuple also for one axis (ported code indexes [0]);
    # NumPy's spelling (axis=, or a positional spacing) of one axis gives the tensor
    f = np.array([1, 4, 9, 16, 25])
    got = cr.gradient(cr.tensor(f))
    assert isinstance(got, tuple) and len(got) == 1
    close(got[0], np.gradient(f))  # (4 - 1, (9 - 1) / 2, ...) = [3, 4, 6, 8, 9]
    assert cr.gradient(cr.tensor(f))[0].tolist() == [3.0, 4.0, 6.0, 8.0, 9.0]
    close(cr.gradient(t(f[:2]), axis=0), np.gradient(f[:2].astype(float)))
    close(cr.gradient(t(f), 2.0), np.gradient(f, 2.0))
    if torch is not None:
        assert torch.gradient(torch.tensor(f, dtype=torch.float64))[0].tolist() == \
            [3.0, 4.0, 6.0, 8.0, 9.0]


def test_gradient_torch_keywords_return_a_tuple():
    f = RNG.standard_normal((3, 4))
    got = cr.gradient(t(f), spacing=2.0, dim=1)
    assert isinstance(got, tuple) and len(got) == 1
    close(got[0], np.gradient(f, 2.0, axis=1))
    both = cr.gradient(t(f), spacing=[1.0, 0.5])
    for g, w in zip(both, np.gradient(f, 1.0, 0.5)):
        close(g, w)


def test_gradient_errors():
    with pytest.raises(ValueError, match="at least"):
        cr.gradient(t(np.ones(2)), edge_order=2)
    with pytest.raises(ValueError, match="edge_order"):
        cr.gradient(t(np.ones(5)), edge_order=3)
    with pytest.raises(ValueError, match="coordinates, their length 4 must match"):
        cr.gradient(t(np.ones(5)), np.arange(4.0))
    with pytest.raises(TypeError, match="number of arguments"):
        cr.gradient(t(np.ones((3, 3))), 1.0, 2.0, 3.0)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_on_coordinates_is_numpys(edge_order):
    f = RNG.standard_normal((4, 5))
    x, y = np.array([0.0, 0.5, 1.7, 2.0]), np.array([1.0, 2.0, 4.0, 4.5, 7.0])
    ours = cr.gradient(t(f), x, y, edge_order=edge_order)
    for a, b in zip(ours, np.gradient(f, x, y, edge_order=edge_order)):
        np.testing.assert_allclose(a.detach().numpy(), b, atol=1e-13)
    assert gradcheck(lambda v: cr.gradient(v, x, axis=0, edge_order=edge_order), (t(f),))


def test_gradient_against_hips():
    f = RNG.standard_normal((4, 5))
    w = RNG.standard_normal(40)
    # without autograd: gradient is linear, so its VJP is the transpose of its matrix
    eye = np.eye(20).reshape(20, 4, 5)

    def vjp(np_fn, w):  # row k of the matrix: the function of the k-th unit input
        rows = []
        for e in eye:
            out = np_fn(e)
            rows.append(np.concatenate([np.reshape(p, -1) for p in
                                        (out if isinstance(out, (list, tuple)) else [out])]))
        return (np.stack(rows) @ w).reshape(4, 5)

    g = chainrule_grad(lambda v: cr.gradient(v, 0.5), f, w)
    np.testing.assert_allclose(g, vjp(lambda v: np.gradient(v, 0.5), w))
    unit = chainrule_grad(cr.gradient, f, w)
    np.testing.assert_allclose(unit, vjp(np.gradient, w))
    rows = chainrule_grad(lambda v: cr.gradient(v, axis=1), f, w[:20])
    np.testing.assert_allclose(rows, vjp(lambda v: np.gradient(v, axis=1), w[:20]))
    if anp is not None:
        # HIPS autograd's gradient takes no spacing (nor edge_order): unit spacing
        np.testing.assert_allclose(unit, hips_grad(anp.gradient, f, w))
        np.testing.assert_allclose(rows, hips_grad(lambda v: anp.gradient(v, axis=1), f, w[:20]))


# --- SciPy's special functions ----------------------------------------------------------------

POS = RNG.uniform(0.3, 4.0, (3, 4))
SPECIAL = [  # (name, chainrule function, SciPy function, sample points)
    ("gamma", sp.gamma, ss.gamma, np.array([-2.5, -1.3, -0.6, 0.4, 1.0, 3.3, 7.2])),
    ("rgamma", sp.rgamma, ss.rgamma, np.array([-2.5, -0.6, 0.4, 1.0, 3.3, 7.2])),
    ("gammasgn", sp.gammasgn, ss.gammasgn, np.array([-2.5, -1.3, -0.6, 0.4, 3.3])),
    ("erfcinv", sp.erfcinv, ss.erfcinv, np.array([0.01, 0.3, 0.9, 1.0, 1.4, 1.99])),
    ("j0", sp.j0, ss.j0, np.array([-7.1, -2.2, 0.3, 1.5, 4.0, 12.0])),
    ("j1", sp.j1, ss.j1, np.array([-7.1, -2.2, 0.3, 1.5, 4.0, 12.0])),
    ("y0", sp.y0, ss.y0, POS),
    ("y1", sp.y1, ss.y1, POS),
    ("jn3", lambda x: sp.jn(3, x), lambda x: ss.jn(3, x), np.array([-4.2, 0.5, 2.0, 9.5])),
    ("jn_half", lambda x: sp.jn(2.5, x), lambda x: ss.jv(2.5, x), POS),
    ("yn2", lambda x: sp.yn(2, x), lambda x: ss.yn(2, x), POS),
    ("iv", lambda x: sp.iv(1.5, x), lambda x: ss.iv(1.5, x), POS),
    ("iv_int", lambda x: sp.iv(2, x), lambda x: ss.iv(2, x), np.array([-2.0, -0.5, 0.7, 3.0])),
    ("ive", lambda x: sp.ive(0.5, x), lambda x: ss.ive(0.5, x), POS),
    ("ive_int", lambda x: sp.ive(3, x), lambda x: ss.ive(3, x), np.array([-2.0, -0.5, 0.7])),
    ("gammainc", lambda x: sp.gammainc(1.7, x), lambda x: ss.gammainc(1.7, x), POS),
    ("gammaincc", lambda x: sp.gammaincc(0.6, x), lambda x: ss.gammaincc(0.6, x), POS),
    ("betainc", lambda x: sp.betainc(2.5, 0.7, x), lambda x: ss.betainc(2.5, 0.7, x),
     np.array([0.05, 0.3, 0.6, 0.95])),
    ("beta", lambda x: sp.beta(x, 1.3), lambda x: ss.beta(x, 1.3), POS),
]


@pytest.mark.parametrize("name,ours,theirs,x", SPECIAL, ids=[s[0] for s in SPECIAL])
def test_special_values_and_gradients(name, ours, theirs, x):
    close(ours(t(x)), theirs(x), rtol=1e-13, atol=1e-15)
    assert gradcheck(ours, [t(x)])
    assert gradgradcheck(ours, [t(x)])


def test_special_names_are_scipys():
    for name in ("gamma", "rgamma", "gammasgn", "beta", "erfcinv", "j0", "j1", "jn", "y0",
                 "y1", "yn", "iv", "ive", "gammainc", "gammaincc", "betainc"):
        assert name in sp.__all__ and callable(getattr(sp, name))


def test_special_derivatives_at_known_points():
    # J1'(0) = 1/2 (the limit of J0 - J1 / x); J0' = -J1; gammasgn' = 0
    x = t(np.array([0.0, 1.3]))
    sp.j1(x).sum().backward()
    close(x.grad, np.array([0.5, ss.j0(1.3) - ss.j1(1.3) / 1.3]))
    x = t(np.array([0.7, 2.9]))
    sp.j0(x).sum().backward()
    close(x.grad, -ss.j1(np.array([0.7, 2.9])))
    x = t(np.array([-0.5, 1.5]))
    sp.gammasgn(x).sum().backward()
    close(x.grad, np.zeros(2))
    # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a); at x = 0 with a = 1 it is 1 (xlogy(0, 0) = 0)
    x = t(np.array([0.0, 0.8]))
    sp.gammainc(1.0, x).sum().backward()
    close(x.grad, np.exp(-np.array([0.0, 0.8])))
    # beta's partials: B (psi(a) - psi(a + b))
    a, b = t(1.7), t(2.2)
    sp.beta(a, b).backward()
    close(a.grad, ss.beta(1.7, 2.2) * (ss.digamma(1.7) - ss.digamma(3.9)))
    close(b.grad, ss.beta(1.7, 2.2) * (ss.digamma(2.2) - ss.digamma(3.9)))


def test_special_shape_parameters_are_not_differentiable():
    a, x = t(np.array([1.5, 2.0])), t(np.array([0.5, 1.0]))
    with pytest.raises(NotImplementedError, match="gammainc: the derivative with respect to a"):
        sp.gammainc(a, x).sum().backward()
    with pytest.raises(NotImplementedError, match="gammaincc"):
        sp.gammaincc(a, x).sum().backward()
    with pytest.raises(NotImplementedError, match="betainc: the derivative with respect to b"):
        sp.betainc(1.5, t(np.array([2.0, 3.0])), x * 0.5).sum().backward()
    # the order of a Bessel function is a number, not a tensor to differentiate
    with pytest.raises(TypeError, match="yn: the order n must be an int"):
        sp.yn(1.5, x)
    with pytest.raises(TypeError, match="iv: the order v must be a real number"):
        sp.iv("1", x)


def test_special_keep_float32():
    x = cr.tensor(np.array([0.4, 0.9], dtype=np.float32), requires_grad=True)
    for fn in (sp.gamma, sp.j1, lambda v: sp.yn(2, v), lambda v: sp.gammainc(1.5, v),
               lambda v: sp.betainc(2.0, 3.0, v), lambda v: sp.beta(v, 2.0)):
        assert fn(x).dtype == np.float32


@pytest.mark.parametrize("name,ours,theirs,x", SPECIAL, ids=[s[0] for s in SPECIAL])
def test_special_gradients_against_hips(name, ours, theirs, x):
    w = RNG.standard_normal(x.shape)
    g = chainrule_grad(ours, x, w)
    # without autograd: central differences of SciPy's function
    h = 1e-6
    numeric = (theirs(x + h) - theirs(x - h)) / (2 * h) * w
    np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-7)
    if asp is None:
        return
    hips = {
        "gamma": asp.gamma, "rgamma": asp.rgamma, "gammasgn": asp.gammasgn,
        "erfcinv": asp.erfcinv, "j0": asp.j0, "j1": asp.j1, "y0": asp.y0, "y1": asp.y1,
        "jn3": lambda v: asp.jn(3, v), "yn2": lambda v: asp.yn(2, v),
        "iv": lambda v: asp.iv(1.5, v), "iv_int": lambda v: asp.iv(2, v),
        "ive": lambda v: asp.ive(0.5, v), "ive_int": lambda v: asp.ive(3, v),
        "gammainc": lambda v: asp.gammainc(1.7, v),
        "gammaincc": lambda v: asp.gammaincc(0.6, v),
        "betainc": lambda v: asp.betainc(2.5, 0.7, v),
        "beta": lambda v: asp.beta(v, 1.3),
    }
    if name not in hips:  # jn of a non-integer order: HIPS's jn is SciPy's integer jn
        return
    np.testing.assert_allclose(g, hips_grad(hips[name], x, w), rtol=1e-10, atol=1e-14)
