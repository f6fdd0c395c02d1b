"""The table-driven test: every primitive is gradchecked against central differences."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.autograd.forward_ad as fwAD
from chainrule._ns import RAW, differentiable
from chainrule.autograd import grad, gradcheck, gradgradcheck
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


def test_every_primitive_has_a_jvp_rule_for_every_input():
    missing = [f"{op.name}.{name}" for op in cr.TABLE.values() for name in op.inputs
               if name not in op.jvp_rules]
    assert not missing, f"primitives without a JVP rule (forward mode): {missing}"


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


def _outputs(result):
    return [o for o in (result if isinstance(result, tuple) else (result,))
            if o.dtype.kind == "f"]


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
def test_jvp_matches_central_differences_and_the_vjp(sample):
    """Forward mode: J v from the JVP rules equals central differences of the function
    along v, and <u, J v> = <J^T u, v> (the JVP and VJP rules are adjoint)."""
    inputs = sample.tensors()
    rng = np.random.default_rng(7)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, cr.Tensor) and x.requires_grad]
    v = {i: rng.standard_normal(inputs[i].shape) for i in diff}
    with fwAD.dual_level():
        duals = [fwAD.make_dual(x.detach(), v[i]) if i in diff else x
                 for i, x in enumerate(inputs)]
        jv = [fwAD.unpack_dual(o).tangent for o in _outputs(sample.fn(*duals))]

    def shifted(eps):
        with cr.no_grad():
            xs = [cr.tensor(x.detach().numpy() + eps * v[i]) if i in diff else x
                  for i, x in enumerate(inputs)]
            return [o.numpy() for o in _outputs(sample.fn(*xs))]

    eps = 1e-6
    for t, plus, minus in zip(jv, shifted(eps), shifted(-eps)):
        numerical = (plus - minus) / (2 * eps)
        analytic = np.zeros_like(numerical) if t is None else t.numpy()
        assert np.allclose(analytic, numerical, rtol=1e-4, atol=1e-6), sample.id

    all_outs = _outputs(sample.fn(*inputs))
    live = [k for k, o in enumerate(all_outs) if o.requires_grad]  # e.g. not slogdet's sign
    u = {k: rng.standard_normal(all_outs[k].shape) for k in live}
    vjps = grad([all_outs[k] for k in live], [inputs[i] for i in diff], [u[k] for k in live],
                allow_unused=True)
    lhs = sum(np.sum(u[k] * (0 if jv[k] is None else jv[k].numpy())) for k in live)
    rhs = sum(np.sum((0 if g is None else g.numpy()) * v[i]) for g, i in zip(vjps, diff))
    assert np.isclose(lhs, rhs, rtol=1e-8, atol=1e-10), (lhs, rhs)


def _raw_cotangents(outputs, inputs, cotangents, create_graph=False):
    """The cotangents the engine delivers at ``inputs``, before ``autograd.grad`` casts
    them to the inputs' dtypes: a rule that computes in float64 shows up here."""
    from chainrule._dispatch import edge
    from chainrule._engine import run_backward

    roots = [edge(o) for o in outputs]
    seeds = [c if create_graph else c._data for c in cotangents]
    capture = {}
    for i, x in enumerate(inputs):
        capture.setdefault(edge(x), i)
    F = differentiable() if create_graph else RAW
    got = run_backward(roots, seeds, F, retain_graph=True, accumulate=False, capture=capture,
                       create_graph=create_graph)
    return [got[capture[edge(x)]] if len(got) > capture[edge(x)] else None for x in inputs]


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
def test_float32_is_kept_by_forward_vjp_and_jvp(sample):
    """In float32 the result, the cotangents (first and second order) and the tangents
    stay float32: no rule may compute in float64."""
    f32 = np.float32
    inputs = [cr.tensor(x.astype(f32), requires_grad=True) if isinstance(x, np.ndarray) else x
              for x in sample.inputs]
    diff = [x for x in inputs if isinstance(x, cr.Tensor) and x.requires_grad]
    outs = _outputs(sample.fn(*inputs))
    want = np.float64 if sample.op == "_to_copy" else f32  # the sample converts to float64
    assert [o.dtype for o in outs] == [want] * len(outs), sample.id
    live = [o for o in outs if o.requires_grad]
    rng = np.random.default_rng(3)
    u = [cr.tensor(rng.standard_normal(o.shape).astype(o.dtype)) for o in live]
    for g in _raw_cotangents(live, diff, u):
        assert g is None or g.dtype == f32, (sample.id, "first-order VJP", g.dtype)
    grads = _raw_cotangents(live, diff, u, create_graph=True)
    for g in grads:
        assert g is None or g.dtype == f32, (sample.id, "create_graph VJP", g.dtype)
    used = [(g, rng.standard_normal(g.shape).astype(g.dtype)) for g in grads
            if g is not None and g.requires_grad]
    if used:
        second = sum((g * cr.tensor(w)).sum() for g, w in used)
        for h in _raw_cotangents([second], diff, [cr.tensor(np.ones((), f32))]):
            assert h is None or h.dtype == f32, (sample.id, "second-order VJP", h.dtype)
    with fwAD.dual_level():
        duals = [fwAD.make_dual(x.detach(), rng.standard_normal(x.shape).astype(f32))
                 if isinstance(x, cr.Tensor) and x.requires_grad else x for x in inputs]
        for o in _outputs(sample.fn(*duals)):
            t = fwAD.unpack_dual(o).tangent
            assert t is None or t.dtype == want, (sample.id, "JVP", t.dtype)
