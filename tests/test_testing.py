"""``chainrule.testing``: assert_close's verdicts and messages (PyTorch's words and default
tolerances per dtype), make_tensor's ranges. Compared with torch.testing where installed."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
from chainrule.testing import assert_close, make_tensor

try:
    import torch
except ImportError:  # the comparisons with torch are skipped; the rest runs
    torch = None


def _cases(m):
    f32 = m.float32
    return [
        ("close", m.tensor([1.0, 2.0], dtype=f32), m.tensor([1.0, 2.0 + 1e-6], dtype=f32)),
        ("far", m.tensor([1.0, 2.0, 3.0], dtype=f32), m.tensor([1.0, 2.0, 3.1], dtype=f32)),
        ("shape", m.tensor([1.0, 2.0]), m.tensor([1.0, 2.0, 3.0])),
        ("dtype", m.tensor([1.0], dtype=f32), m.tensor([1.0], dtype=m.float64)),
        ("ints", m.tensor([1, 2]), m.tensor([1, 3])),
        ("scalars", 1.0, 1.0 + 1e-8), ("scalars_far", 1.0, 1.1),
        ("list", [m.tensor([1.0]), m.tensor([2.0])], [m.tensor([1.0]), m.tensor([2.5])]),
        ("dict", {"a": m.tensor([1.0])}, {"a": m.tensor([1.0])}),
        ("nan", m.tensor([float("nan")]), m.tensor([float("nan")])),
    ]


def _verdicts(m, check):
    out = {}
    for name, a, e in _cases(m):
        try:
            check(a, e)
            out[name] = "ok"
        except AssertionError as err:
            out[name] = str(err).splitlines()[0]
    return out


def test_verdicts_and_messages():
    v = _verdicts(cr, assert_close)
    assert v["close"] == "ok" and v["scalars"] == "ok" and v["dict"] == "ok"
    assert v["far"] == "Tensor-likes are not close!"
    assert v["ints"] == "Tensor-likes are not equal!"
    assert v["scalars_far"] == "Scalars are not close!"
    assert v["nan"] == "Tensor-likes are not close!"
    assert v["list"] == "Tensor-likes are not close!"  # item [1]: 2.0 vs 2.5
    assert v["shape"].startswith("The values for attribute 'shape' do not match")
    assert v["dtype"].startswith("The values for attribute 'dtype' do not match")
    with pytest.raises(AssertionError, match=r"Mismatched elements: 1 / 3 \(33.3%\)\n"
                                             r"Greatest absolute difference: .* at index \(2,\)"):
        assert_close(cr.tensor([1.0, 2.0, 3.0]), cr.tensor([1.0, 2.0, 3.5]))
    with pytest.raises(AssertionError, match=r"failure occurred for item \[1\]"):
        assert_close([cr.tensor(1.0), cr.tensor(1.0)], [cr.tensor(1.0), cr.tensor(2.0)])
    assert_close(cr.tensor([float("nan"), 1.0]), cr.tensor([float("nan"), 1.0]), equal_nan=True)
    assert_close(cr.tensor([1.0]), cr.tensor([1.5]), rtol=0, atol=0.5)
    with pytest.raises(AssertionError, match="^custom$"):
        assert_close(cr.tensor([1.0]), cr.tensor([2.0]), msg="custom")
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol'"):
        assert_close(cr.tensor([1.0]), cr.tensor([1.0]), rtol=1e-3)
    # float64's default is 1e-7 relative and absolute: 1e-6 apart fails, 1e-8 passes
    assert_close(cr.tensor([1.0]), cr.tensor([1.0 + 1e-8]))
    with pytest.raises(AssertionError):
        assert_close(cr.tensor([1.0]), cr.tensor([1.0 + 1e-6]))
    if torch is not None:
        theirs = _verdicts(torch, torch.testing.assert_close)

        def words(text):  # the names of the library's types differ: compare up to the colon
            return text.split(":")[0]

        assert {k: words(w) for k, w in v.items()} == {k: words(w) for k, w in theirs.items()}


def test_make_tensor():
    cr.manual_seed(0)
    t = make_tensor(200, dtype=cr.float32, low=-1, high=1, requires_grad=True)
    assert t.dtype == np.float32 and t.requires_grad and t.shape == (200,)
    assert -1 <= float(t.min()) and float(t.max()) < 1
    i = make_tensor((3, 4), dtype=cr.int64, exclude_zero=True)
    assert i.dtype == np.int64 and not bool((i == 0).any())
    assert -9 <= int(i.min()) and int(i.max()) < 10
    with pytest.raises(ValueError, match="low"):
        make_tensor(2, dtype=cr.float64, low=1, high=0)
