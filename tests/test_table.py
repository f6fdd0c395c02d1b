"""The table-driven test: every primitive is gradchecked against central differences."""

from __future__ import annotations

import pytest

import chainrule as cr
from chainrule._ns import RAW, differentiable
from chainrule.autograd import gradcheck, gradgradcheck
from samples import SAMPLES


def _ops_in_graph(outputs):
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    seen, stack, names = set(), [o.grad_fn for o in outputs if o.grad_fn], set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if hasattr(node, "op"):
            names.add(node.op.name)
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return names


def test_every_primitive_has_a_sample():
    missing = sorted(set(cr.TABLE) - {s.op for s in SAMPLES})
    assert not missing, f"primitives without a sample in tests/samples.py: {missing}"


def test_every_primitive_has_formula_and_source():
    for op in cr.TABLE.values():
        assert op.source, op.name
        for name in op.inputs:
            assert name in op.math, f"{op.name}: no formula text for input {name!r}"


def test_rule_namespaces_define_the_same_names():
    assert set(vars(RAW)) == set(vars(differentiable()))


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
def test_gradcheck(sample):
    inputs = sample.tensors()
    assert sample.op in _ops_in_graph(sample.fn(*inputs)), (
        f"sample {sample.id} does not record the op {sample.op!r}")
    assert gradcheck(sample.fn, inputs)


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
def test_gradgradcheck(sample):
    """Second order: the VJP rules, run on the differentiable namespace, are themselves
    differentiated correctly (create_graph=True)."""
    assert gradgradcheck(sample.fn, sample.tensors())
