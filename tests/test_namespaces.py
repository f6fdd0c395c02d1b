"""One source for the rule namespaces: every name a rule may use is declared once (as a
function of a backend's array namespace), the namespaces of NumPy, of the other backends
and the differentiable one are generated from it, and a rule that uses an undeclared name
fails when its op is declared."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule  # noqa: F401  (fills the table and the declarations)
from chainrule import _ns
from chainrule._table import TABLE, defop, namespace_uses
from chainrule.backend import backend_of


def _helper(F, x):
    return F.exp(x) + F.sin(x)


def test_namespace_uses_reads_helpers_and_nested_functions():
    def rule(F, g, self):
        inner = lambda y: F.cos(y)  # noqa: E731
        return _helper(F, g) * inner(self) * F.matmul(g, self)

    assert namespace_uses(rule) == {"exp", "sin", "cos", "matmul"}


def test_a_rule_using_an_undeclared_name_fails_at_declaration():
    with pytest.raises(ValueError, match=r"F\.no_such_thing"):
        defop("bogus_op", "exp", ("self",),
              vjp={"self": lambda F, g, self: g * F.no_such_thing(self)},
              math={"self": "-"}, source="-")
    assert "bogus_op" not in TABLE


def test_every_rule_in_the_table_uses_declared_names_only():
    declared = set(_ns.names())
    for op in TABLE.values():
        for fn, _ in list(op.vjp_rules.values()) + list(op.jvp_rules.values()):
            assert namespace_uses(fn) <= declared, op.name


def test_the_namespaces_are_generated_from_the_declarations():
    declared = set(_ns.names())
    assert set(vars(_ns.RAW)) == declared
    assert set(vars(_ns.differentiable())) == declared
    da = pytest.importorskip("dask.array")
    dask_ns = _ns.raw_for(backend_of(da.ones(2)))
    assert set(vars(dask_ns)) == declared
    # the same declaration gives NumPy's and Dask's version of a name
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(_ns.RAW.prod_others(x, (1,)),
                                  dask_ns.prod_others(da.from_array(x), (1,)).compute())


def test_constructors_follow_the_device_of_the_arrays():
    xps = pytest.importorskip("array_api_strict")
    dev = xps.Device("device1")
    a = xps.asarray([1.0, 2.0], device=dev)
    ns = _ns.raw_for(backend_of(a), dev)
    assert ns.zeros((2,), xps.float64).device == dev
    assert ns.eye(2, dtype=xps.float64).device == dev


def test_the_batched_namespace_has_every_declared_name_as_declared():
    # every name has a batched version (the batching layer's own, or one made from the
    # name's registration: broadcasting over leading dims, else once per row)
    batched = _ns.batched()
    assert set(_ns.names()) <= set(vars(batched))
    from chainrule._batched import Batched

    A = np.stack([np.eye(3) * (b + 2.0) for b in range(4)])  # a batch of 4 matrices
    out = batched.inv(Batched(A))
    np.testing.assert_allclose(out.data, np.linalg.inv(A))
    assert _ns.BATCH_RULES["inv"] == "leading"  # declared beside inv, in linalg.inverse
    assert _ns.BATCH_RULES["cross"] == ("leading", (2, "dim"))
