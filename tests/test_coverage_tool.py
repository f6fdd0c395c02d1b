"""tools/coverage.py: its classification without torch, and a few real entries checked
against torch where torch (and its test database's expecttest) are installed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

import chainrule as cr
from chainrule.autograd import gradcheck

try:  # the comparisons with torch need its test database, which needs expecttest
    import expecttest  # noqa: F401
    import torch
except ImportError:
    torch = None

# loaded from its path under its own name: "coverage" is also coverage.py's package name
_SPEC = importlib.util.spec_from_file_location(
    "chainrule_coverage_tool", Path(__file__).resolve().parent.parent / "tools" / "coverage.py")
C = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = C  # dataclasses look their module up here
_SPEC.loader.exec_module(C)


def test_missing_ops_get_their_reason():
    assert C.reason_for("fft.rfft").startswith("out of scope: FFTs")
    assert "complex" in C.reason_for("view_as_complex")
    assert "strides" in C.reason_for("as_strided")
    assert C.reason_for("something_new") == "not yet"


def test_hips_names_map_to_chainrule_names():
    assert C.hips_status("numpy.sin") == ("present", "")
    assert C.hips_status("numpy.linalg.det") == ("present", "")
    assert C.hips_status("scipy.special.gammaln") == ("present", "")
    status, why = C.hips_status("numpy.fft.fft")
    assert status == "missing" and "FFT" in why
    assert C.hips_status("numpy.angle") == ("present", "")  # real input: 0 or pi
    status, why = C.hips_status("scipy.stats.norm.logpdf")
    assert status == "missing" and "scipy.stats" in why


def test_report_counts_and_lists(tmp_path):
    entries = [C.Entry("torch.a", "function", None, None, "agree", ""),
               C.Entry("torch.b", "function", None, None, "differ", "output 0: values differ"),
               C.Entry("torch.c", "function", None, None, "missing", "not yet"),
               C.Entry("torch.d", "function", None, None, "deliberate", "a reason")]
    hips = {"numpy.sin": ("present", ""), "numpy.fft.fft": ("missing", "out of scope")}
    path = tmp_path / "coverage.md"
    text, groups, present = C.report(entries, hips, path)
    assert path.read_text() == text
    assert "present and agreeing with torch in value and gradient on its sample inputs: **1**" \
        in text
    assert "- `torch.b`: output 0: values differ" in text
    assert "- not yet (1): `torch.c`" in text
    assert "- `torch.d`: a reason" in text
    assert present == ["numpy.sin"]


def test_entries_resolve_and_are_judged(capsys):
    # without torch: the parts of check() that need none. An entry's chainrule callable is
    # found by name (kron's values are np.kron's, its gradient central differences'), a
    # missing name gets its reason, a deliberate difference its text, and _close tells
    # equal outputs from different ones
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    fn = C.chainrule_callable(C.Entry("torch.kron", "function", None, None))
    method = C.chainrule_callable(C.Entry("Tensor.kron", "method", None, None))
    assert fn is cr.kron
    for ours in (fn, method):
        np.testing.assert_allclose(ours(cr.tensor(a), cr.tensor(b)).numpy(), np.kron(a, b))
        assert gradcheck(ours, (cr.tensor(a, requires_grad=True),
                                cr.tensor(b, requires_grad=True)))
    assert C.chainrule_callable(C.Entry("torch.fft.fft", "function", None, None)) is None
    assert C.reason_for("fft.fft").startswith("out of scope: FFTs")
    solve = C.chainrule_callable(C.Entry("torch.cholesky_solve", "function", None, None))
    assert solve is cr.cholesky_solve and "triangle" in C.DELIBERATE["cholesky_solve"]
    want = np.kron(a, b)
    assert C._close(want.copy(), want, "output 0") is None
    assert "output 0: values differ" in C._close(want * 2, want, "output 0")
    assert "shape (2,) (chainrule) vs (3,) (torch)" in C._close(np.ones(2), np.ones(3), "out")
    if torch is None:
        # the command says what it needs instead of failing
        assert C.main(["--only", "kron"]) == 2
        assert "needs torch and expecttest installed" in capsys.readouterr().out
        return
    entries = {e.name: e for e in C.torch_entries(["kron", "cholesky_solve", "fft.fft"])}
    assert C.check(entries["torch.kron"]).status == "agree"
    assert C.check(entries["Tensor.kron"]).status == "agree"
    solve = C.check(entries["torch.cholesky_solve"], 8)
    assert solve.status == "deliberate" and "triangle" in solve.detail
    assert C.check(entries["torch.fft.fft"]).status == "missing"
    # and an entry that disagrees is reported with the difference
    broken = entries["torch.kron"]
    broken.status = ""
    original = C.chainrule_callable
    try:
        C.chainrule_callable = lambda entry: (lambda a, b: original(entry)(a, b) * 2)
        assert C.check(broken).status == "differ"
        assert "values differ" in broken.detail
    finally:
        C.chainrule_callable = original
