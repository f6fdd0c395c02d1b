"""tools/coverage.py: its classification without torch, and a few real entries checked
against torch where torch (and its test database's expecttest) are installed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

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


def test_entries_checked_against_torch():
    pytest.importorskip("torch")
    pytest.importorskip("expecttest")
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
