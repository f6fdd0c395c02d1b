"""histogram, histogramdd, histc's edges, frombuffer: values worked out by hand, and the
same calls compared with PyTorch when it is installed."""

import array
import warnings
from fractions import Fraction

import numpy as np
import pytest

import chainrule as cr
from chainrule import _creation
from chainrule.ops.searching import _torch_linspace

try:
    import torch
except ImportError:
    torch = None


def test_histogram_counts_and_edges():
    hist, edges = cr.histogram(cr.tensor([1.0, 2.0, 1.0]), bins=4, range=(0.0, 3.0))
    assert hist.tolist() == [0.0, 2.0, 1.0, 0.0]
    assert edges.tolist() == [0.0, 0.75, 1.5, 2.25, 3.0]
    r = cr.tensor([1.0, 2.0, 1.0]).histogram(2)  # the data's range; 2.0 in the last bin
    assert r.hist.tolist() == [2.0, 1.0] and r.bin_edges.tolist() == [1.0, 1.5, 2.0]
    assert type(r).__name__ == "histogram" and r._fields == ("hist", "bin_edges")


def test_histogram_weight_density_and_tensor_bins():
    x = cr.tensor([1.0, 2.0, 1.0, 2.5])
    h = cr.histogram(x, bins=cr.tensor([0.0, 1.0, 2.0, 3.0]), weight=cr.tensor([1.0, 2, 4, 8]))
    assert h.hist.tolist() == [0.0, 5.0, 10.0]
    d = cr.histogram(x, bins=cr.tensor([0.0, 1.0, 2.5, 3.0]), density=True).hist
    np.testing.assert_allclose(d.numpy(), [0.0, 3 / 4 / 1.5, 1 / 4 / 0.5])


def test_histogram_edge_cases():
    assert cr.histogram(cr.tensor([1.0, 1.0]), bins=2).bin_edges.tolist() == [0.5, 1.0, 1.5]
    assert cr.histogram(cr.tensor([], dtype=cr.float32), bins=2).bin_edges.tolist() == \
        [0.0, 0.5, 1.0]
    # decreasing or NaN edges count nothing, as PyTorch
    assert cr.histogram(cr.tensor([1.0, 2.0]), bins=cr.tensor([2.0, 1.0])).hist.tolist() == [0]
    with pytest.raises(RuntimeError, match="range \\[1, inf\\] is not finite"):
        cr.histogram(cr.tensor([1.0, float("inf")]), bins=2)
    with pytest.raises(RuntimeError, match="bins must be > 0, but got 0"):
        cr.histogram(cr.tensor([1.0]), bins=0)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        cr.histogram(cr.tensor([1, 2]), bins=2)
    with pytest.raises(RuntimeError, match="min should not exceed max"):
        cr.histogram(cr.tensor([1.0]), bins=2, range=(3.0, 1.0))


def test_histogram_has_no_derivative():
    w = cr.tensor([1.0, 2.0], requires_grad=True)
    r = cr.histogram(cr.tensor([1.0, 2.0]), bins=2, weight=w)
    assert r.hist.requires_grad and r.bin_edges.requires_grad
    with pytest.raises(RuntimeError, match="derivative for aten::histogram is not implemented"):
        r.hist.sum().backward()
    assert not cr.histogram(cr.tensor([1.0, 2.0]), bins=2).hist.requires_grad
    assert not cr.histc(cr.tensor([1.0, 2.0], requires_grad=True), bins=2).requires_grad


def test_histogramdd():
    x = cr.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 0.5], [0.5, 2.0]])
    r = cr.histogramdd(x, bins=[2, 3], range=[0.0, 2.0, 0.0, 3.0])
    assert r.hist.tolist() == [[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]]
    assert [e.tolist() for e in r.bin_edges] == [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0, 3.0]]
    w = cr.histogramdd(x, bins=2, weight=cr.tensor([1.0, 2, 3, 4]), density=True).hist
    np.testing.assert_allclose(w.numpy(), [[0.1, 0.4], [0.3, 0.2]])
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        cr.histogramdd(cr.tensor([1.0, 2.0]), bins=2)
    with pytest.raises(RuntimeError, match="range should have 4 elements, but got 2"):
        cr.histogramdd(x, bins=2, range=[0.0, 1.0])


def test_histc_edges():
    x = cr.tensor([0.0, 1.0, 2.0, 3.0, -1.0, 4.0, float("nan")])
    assert cr.histc(x, bins=3, min=0, max=3).tolist() == [1.0, 1.0, 2.0]  # 3 in the last
    assert cr.histc(cr.tensor([2.0, 2.0]), bins=4).tolist() == [0.0, 0.0, 2.0, 0.0]
    assert cr.histc(cr.tensor([1.0, 2, 3]), bins=4, min=5, max=5).tolist() == [1, 0, 1, 1]
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        cr.histc(cr.tensor([1.0]), bins=2, min=3, max=1)
    with pytest.raises(NotImplementedError, match="'Long'"):
        cr.histc(cr.tensor([1, 2]), bins=2)


def test_torch_linspace_halves():
    e = _torch_linspace(0.0, 1.0, 11, np.float64)
    assert e[0] == 0.0 and e[-1] == 1.0 and e[5] == 0.1 * 5 and e.dtype == np.float64


def _rounded_once(exact, dtype):
    """The ``dtype`` number nearest the rational ``exact`` (ties to even): one rounding,
    as a fused multiply-add gives."""
    if dtype == np.float64:
        return np.float64(float(exact))  # int / int division in Python rounds once
    c = np.float32(float(exact))  # within one float32 step of the nearest
    cands = [np.nextafter(c, np.float32(-np.inf)), c, np.nextafter(c, np.float32(np.inf))]
    dist = [abs(Fraction(float(x)) - exact) for x in cands]
    best = min(dist)
    ties = [x for x, d in zip(cands, dist) if d == best]
    return min(ties, key=lambda x: int(np.array(x).view(np.uint32)) & 1)


def _linspace_reference(lo, hi, n, dtype):
    """PyTorch's CPU linspace, worked out exactly: the step ``(end - start) / (n - 1)`` in
    ``dtype`` arithmetic, then ``start + step * i`` for the first ``n // 2`` entries and
    ``end - step * (n - 1 - i)`` for the others, each product-and-sum rounded once."""
    f = np.dtype(dtype).type
    start, end = f(lo), f(hi)
    step = (end - start) / f(n - 1)
    s, e, st = Fraction(float(start)), Fraction(float(end)), Fraction(float(step))
    return np.array([_rounded_once(s + st * i if i < n // 2 else e - st * (n - 1 - i), dtype)
                     for i in range(n)], dtype=dtype)


def _histogram_reference(vals, edges):
    """Counts of ``[e_i, e_i+1)`` (the last bin closed), by comparison with the edges."""
    nb = len(edges) - 1
    counts = np.zeros(nb, vals.dtype)
    for v in vals:
        if edges[0] <= v <= edges[-1]:
            counts[min(int(np.searchsorted(edges, v, side="right")) - 1, nb - 1)] += 1
    return counts


def _histc_reference(vals, nb, lo, hi):
    """PyTorch's histc: the bin ``(x - min) * bins / (max - min)``, truncated, in the
    input's dtype (no comparison with the edges); ``max`` itself in the last bin."""
    f = vals.dtype.type
    left, right = f(lo), f(hi)
    counts = np.zeros(nb, vals.dtype)
    for v in vals:
        if left <= v <= right:
            counts[min(int((v - left) * f(nb) / (right - left)), nb - 1)] += 1
    return counts


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histograms_on_edges(dtype):
    """Entries on the bin edges and one step either side: the edges are PyTorch's linspace
    (worked out exactly above), and each entry counts in the bin that PyTorch's rules give
    (histogram: the comparison with the edges; histc: the division alone)."""
    rng = np.random.default_rng(0)
    dt = np.dtype(dtype)
    for _ in range(40):
        nb = int(rng.integers(1, 30))
        lo = float(rng.normal())
        hi = lo + float(rng.exponential()) * 3
        e = _linspace_reference(lo, hi, nb + 1, dt)
        assert e[0] == dt.type(lo) and e[-1] == dt.type(hi) and np.all(np.diff(e) >= 0)
        np.testing.assert_array_equal(_torch_linspace(lo, hi, nb + 1, dt), e)
        vals = np.concatenate([e, np.nextafter(e, e + 1), np.nextafter(e, e - 1)])
        c = cr.from_numpy(vals)
        np.testing.assert_array_equal(cr.histc(c, bins=nb, min=lo, max=hi).numpy(),
                                      _histc_reference(vals, nb, lo, hi))
        got = cr.histogram(c, bins=nb, range=(lo, hi))
        np.testing.assert_array_equal(got.bin_edges.numpy(), e)
        np.testing.assert_array_equal(got.hist.numpy(), _histogram_reference(vals, e))
        got = cr.histogram(c, bins=nb)  # the data's range
        e2 = _linspace_reference(float(vals.min()), float(vals.max()), nb + 1, dt)
        np.testing.assert_array_equal(got.bin_edges.numpy(), e2)
        np.testing.assert_array_equal(got.hist.numpy(), _histogram_reference(vals, e2))
        gotdd = cr.histogramdd(c.reshape(-1, 1), bins=[nb], range=[lo, hi])
        np.testing.assert_array_equal(gotdd.hist.numpy(), _histogram_reference(vals, e))
        if torch is None:
            continue
        te = torch.linspace(lo, hi, nb + 1, dtype=getattr(torch, dtype))
        tvals = torch.cat([te, torch.nextafter(te, te + 1), torch.nextafter(te, te - 1)])
        np.testing.assert_array_equal(te.numpy(), e)
        np.testing.assert_array_equal(tvals.numpy(), vals)
        t = torch.from_numpy(vals)
        np.testing.assert_array_equal(cr.histc(c, bins=nb, min=lo, max=hi).numpy(),
                                      torch.histc(t, bins=nb, min=lo, max=hi).numpy())
        for kw in ({"bins": nb, "range": (lo, hi)}, {"bins": nb}):
            got, want = cr.histogram(c, **kw), torch.histogram(t, **kw)
            np.testing.assert_array_equal(got.hist.numpy(), want.hist.numpy())
            np.testing.assert_array_equal(got.bin_edges.numpy(), want.bin_edges.numpy())
        got = cr.histogramdd(c.reshape(-1, 1), bins=[nb], range=[lo, hi])
        want = torch.histogramdd(t.reshape(-1, 1), bins=[nb], range=[lo, hi])
        np.testing.assert_array_equal(got.hist.numpy(), want.hist.numpy())


def test_frombuffer_shares_memory():
    b = bytearray(b"\x01\x00\x00\x00\x02\x00\x00\x00")
    t = cr.frombuffer(b, dtype=cr.int32)
    b[0] = 5
    assert t.tolist() == [5, 2]
    t[1] = 9
    assert b[4] == 9
    assert cr.frombuffer(b, dtype=cr.int32, count=1, offset=4).tolist() == [9]
    assert cr.frombuffer(b, dtype=cr.int16, offset=2).tolist() == [0, 9, 0]
    a = array.array("d", [1.5, 2.5])
    t = cr.frombuffer(a, dtype=cr.float64, requires_grad=True)
    a[0] = 9.0
    assert t.tolist() == [9.0, 2.5] and t.requires_grad and t.is_leaf


@pytest.mark.parametrize("kw, message", [
    ({"offset": 8}, r"offset \(8 bytes\) must be non-negative and no greater than buffer "
                    r"length \(8 bytes\) minus 1"),
    ({"count": 3}, r"requested buffer length \(3 \* 4 bytes\) after offset \(0 bytes\)"),
    ({"count": 0}, r"both buffer length \(8\) and count \(0\) must not be 0"),
    ({"offset": 1}, r"buffer length \(7 bytes\) after offset \(1 bytes\) must be a multiple "
                    r"of element size \(4\)"),
])
def test_frombuffer_errors(kw, message):
    with pytest.raises(ValueError, match=message):
        cr.frombuffer(bytearray(8), dtype=cr.int32, **kw)
    if torch is not None:
        with pytest.raises(ValueError, match=message):
            torch.frombuffer(bytearray(8), dtype=torch.int32, **kw)


def test_frombuffer_not_a_buffer_and_readonly_warning(monkeypatch):
    with pytest.raises(ValueError, match="does not implement Python buffer protocol"):
        cr.frombuffer([1, 2], dtype=cr.int32)
    monkeypatch.setattr(_creation, "_READONLY_WARNED", [False])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cr.frombuffer(b"\x01\x00", dtype=cr.int16).tolist() == [1]
        cr.frombuffer(b"\x01\x00", dtype=cr.int16)
    assert len(caught) == 1 and "not writable" in str(caught[0].message)
