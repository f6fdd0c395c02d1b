"""The derivative table: every primitive is declared here once, through :func:`defop`.

A declaration carries the forward kernel (NumPy arrays in, arrays out), one VJP rule per
input, optionally one JVP rule per input, the formula as text and its source. Rules are
plain functions ``rule(F, g, *names)``:

- ``F`` is the array namespace the rule computes with: NumPy-backed for a first-order
  backward (:data:`chainrule._ns.RAW`), the differentiable op set when the backward pass
  is itself recorded, so one formula serves every order.
- ``g`` is the cotangent of the output (VJP) or the tangent of that input (JVP); for an op
  with several outputs ``g`` is a tuple with ``None`` for a zero cotangent.
- the remaining parameter *names* say what the rule needs: an input's name (its primal),
  ``out`` (the result), an attribute's name (a non-tensor argument such as ``dim``), or
  ``<input>_shape``. Only what the rules of the inputs that need a gradient name is saved,
  so nothing else is kept alive. This is read once, when the op is declared.

Returning ``None`` from a rule means a zero cotangent. Broadcasting is undone by the engine,
which sums each VJP back to its input's shape, so rules may return a broadcast result.
"""

from __future__ import annotations

import dis
import inspect
from operator import itemgetter

from . import _ns
from .backend import NUMPY, kernel_for

TABLE: dict[str, "Op"] = {}


class _Dispatcher:
    """Filled by the dispatcher (``chainrule._dispatch``, the layer above): ``make_call(op)``
    builds the function that runs an op and records its node."""

    make_call = None


DISPATCHER = _Dispatcher()


class Rule:
    """A rule with explicit parameter names, for rules built by a factory (elementwise ops)."""

    __slots__ = ("fn", "params")

    def __init__(self, fn, params):
        self.fn = fn
        self.params = tuple(params)


def _params(rule, op_name, key):
    if isinstance(rule, Rule):
        return rule.fn, rule.params
    names = list(inspect.signature(rule).parameters)
    if names[:1] != ["F"] or len(names) < 2 or names[1] not in ("g", "t", "ts"):
        raise TypeError(f"defop({op_name!r}): rule for {key!r} must start with (F, g) "
                        "(VJP) or (F, t) (JVP; (F, ts) for a variadic op)")
    return rule, tuple(names[2:])


def _getter(indices):
    """A function of the saved tuple returning the rule's arguments as a tuple."""
    if not indices:
        return lambda saved: ()
    if len(indices) == 1:
        (k,) = indices
        return lambda saved: (saved[k],)
    return itemgetter(*indices)


def _pool_expr(op, slot):
    """Where pool slot ``slot`` lives among ``keep``'s arguments (d, o, a, s)."""
    n = 1 if op.variadic else len(op.inputs)
    n_attrs = len(op.attrs)
    if slot < n:
        return "d" if op.variadic else f"d[{slot}]"
    if slot == n:
        return "o"
    if slot <= n + n_attrs:
        return f"a[{slot - n - 1}]"
    return "s" if op.variadic else f"s[{slot - n - 1 - n_attrs}]"


def _compile(source, env):
    # The plan's two functions are generated once per (op, mask) from the rules' parameter
    # names, so the hot path runs one flat lambda with no lookups or *args packing.
    return eval(source, env)  # noqa: S307 - our own generated lambda, no user input


class Plan:
    """What one op saves, and how its VJP runs, for one requires-grad mask.

    ``keep(datas, out, attrs, shapes)`` builds the saved tuple (``None``: nothing to save);
    ``vjp(F, g, saved)`` returns one cotangent per input (``None`` where no grad is needed);
    ``checks`` lists ``(saved index, input index or -1 for out)`` of saved tensors, whose
    versions are checked before use.
    """

    __slots__ = ("op", "variadic", "keep", "vjp", "rules", "checks", "names", "source",
                 "slots", "all_shapes", "frees")

    def __init__(self, op, mask):
        self.op = op
        self.variadic = op.variadic
        pool = op.pool
        wanted = []
        per_input = []
        for i, name in enumerate(op.inputs):
            if op.variadic or mask >> i & 1:
                fn, params = op.vjp_rules[name]
                per_input.append((fn, params))
                wanted.extend(p for p in params if p not in wanted)
            else:
                per_input.append(None)
        wanted.sort(key=pool.index)
        self.names = tuple(wanted)
        slots = [pool.index(w) for w in wanted]
        self.slots = tuple(slots)  # pool slot of each saved value (inputs, out, attrs, shapes)
        # A rule may name the shape of an input that needs no grad (whose shape the
        # dispatcher otherwise does not record).
        self.all_shapes = any(
            w.endswith("_shape") and not (op.variadic or mask >> op.inputs.index(w[:-6]) & 1)
            for w in wanted)
        self.rules = tuple(
            None if r is None else (r[0], _getter([wanted.index(p) for p in r[1]]))
            for r in per_input
        )
        env = {}
        calls = []
        for i, r in enumerate(per_input):
            if r is None:
                calls.append("None")
                continue
            fn, params = r
            args = "".join(f", s[{wanted.index(p)}]" for p in params)
            deriv = getattr(fn, "deriv", None)
            if deriv is not None:  # elementwise: inline grad * f'(x)
                env[f"d{i}"] = deriv
                calls.append(f"g * d{i}(F{args})")
            else:
                env[f"f{i}"] = fn
                calls.append(f"f{i}(F, g{args})")
        self.source = f"lambda F, g, s: ({', '.join(calls)},)"
        self.vjp = _compile(self.source, env)
        if not slots:
            self.keep = None
        elif not op.variadic and slots == list(range(len(op.inputs))):
            self.keep = lambda d, o, a, s: tuple(d)
        else:
            exprs = ", ".join(_pool_expr(op, k) for k in slots)
            self.keep = _compile(f"lambda d, o, a, s: ({exprs},)", {})
        n = 1 if op.variadic else len(op.inputs)
        # a variadic op's inputs are one saved list: its input index stays 0 ("every input");
        # the outputs of an op with several are checked one by one (-1 - j: output j), those
        # its rules read: max(dim)'s values may change in place, its indices may not
        checks = []
        for k, s in enumerate(slots):
            if s < n:
                checks.append((k, s))
            elif s == n:
                read = range(1) if op.nout == 1 else _outputs_read(
                    [r[0] for r in per_input if r is not None and "out" in r[1]], op.nout)
                checks += [(k, -1 - j) for j in read]
        self.checks = tuple(checks)
        # whether the saved values include arrays (inputs or out), which a backward without
        # retain_graph frees; attrs and shapes alone are kept, so a second backward through
        # such a node works (as PyTorch's, which frees only saved tensors)
        self.frees = bool(self.checks)


_SUBSCRIPTS = {"BINARY_SUBSCR"}


def _outputs_read(rules, nout):
    """The outputs (indices) that VJP ``rules`` read from their parameter ``out``, the
    tuple of an op's outputs: those of each ``out[k]`` with a constant ``k`` in their
    bytecode; every output when ``out`` is used any other way (unpacked, passed on whole,
    captured by a nested function), so that no output a rule reads goes unchecked."""
    read = set()
    for fn in rules:
        code = getattr(fn, "__code__", None)
        if code is None or "out" in code.co_cellvars:
            return range(nout)
        ins = list(dis.get_instructions(code))
        for i, x in enumerate(ins):
            if x.opname in _LOADS and x.argval == "out":
                if i + 2 < len(ins) and ins[i + 1].opname == "LOAD_CONST" \
                        and isinstance(ins[i + 1].argval, int) \
                        and (ins[i + 2].opname in _SUBSCRIPTS
                             or ins[i + 2].opname == "BINARY_OP" and ins[i + 2].argrepr == "[]"):
                    read.add(ins[i + 1].argval % nout)
                else:
                    return range(nout)
    return sorted(read)


class Op:
    """One primitive of the derivative table. Created by :func:`defop`; see its docstring."""

    __slots__ = (
        "name", "node_name", "forward", "inputs", "attrs", "vjp_rules", "jvp_rules",
        "math", "source", "nout", "out_diff", "view", "variadic", "pool", "plans", "doc",
        "arity", "call", "kernel", "promote", "singular", "pointwise", "floating",
    )

    def plan(self, mask):
        """The Plan for a requires-grad ``mask`` (bit i: input i), made on first use."""
        plan = self.plans[mask]
        if plan is None:
            plan = self.plans[mask] = Plan(self, mask)
        return plan

    def __repr__(self):
        return f"<op {self.name}({', '.join(self.inputs + self.attrs)})>"


def _camel(name):
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


_LOADS = {"LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_FAST_CHECK", "LOAD_FAST_BORROW"}
_ATTRS = {"LOAD_ATTR", "LOAD_METHOD"}


def namespace_uses(fn, _seen=None, _globals=None):
    """The names a rule reads from its namespace argument ``F`` (``F.exp`` -> "exp"),
    found in its bytecode, in the functions and lambdas nested in it, and in the module's
    helper functions it calls whose first parameter is also ``F``."""
    seen = set() if _seen is None else _seen
    code = getattr(fn, "__code__", fn)
    if code in seen:
        return set()
    seen.add(code)
    names = set()
    helpers = getattr(fn, "__globals__", _globals or {})
    previous = None
    for ins in dis.get_instructions(code):
        if ins.opname in _ATTRS and previous is not None and previous.opname in _LOADS \
                and previous.argval == "F":
            names.add(ins.argval)
        elif ins.opname == "LOAD_GLOBAL":
            helper = helpers.get(ins.argval)
            if inspect.isfunction(helper) and helper.__code__.co_varnames[:1] == ("F",):
                names |= namespace_uses(helper, seen)
        previous = ins
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= namespace_uses(const, seen, helpers)
    return names


def defop(
    name, forward, inputs, vjp, *, attrs=(), jvp=None, math, source,
    nout=1, out_diff=None, view=False, variadic=False, node_name=None, doc=None,
    promote=True, singular=None, pointwise=False, floating=False,
):
    """Declare a primitive: its forward kernel, VJP (and JVP) rules, formula and source.

    Parameters
    ----------
    name : str
        The op's name in the table (``"mm"``); its graph node is ``MmBackward0``.
    forward : str or callable
        The forward kernel: the name of an Array API function (``"exp"``, computed by every
        backend's namespace), an :func:`chainrule.backend.xp_kernel`
        ``fn(xp, *input_arrays, *attrs)``, or a plain ``fn(*input_arrays, *attrs)`` that
        computes with NumPy only (the op then raises NotImplementedError on other backends).
        Returns an array (a tuple when ``nout > 1``).
    inputs : tuple of str
        Names of the differentiable inputs, PyTorch's where it has the op (``self``, ``other``).
    vjp : dict
        ``{input_name: rule(F, g, *needs)}`` returning that input's cotangent.
    attrs : tuple of str
        Names of non-tensor arguments (``dim``, ``keepdim``), passed after the inputs.
    jvp : dict, optional
        ``{input_name: rule(F, t, *needs)}`` returning the output tangent contributed by
        that input's tangent ``t`` (a tuple, one per output, for ops with several outputs;
        for a variadic op, ``t`` is the list of tangents, ``None`` for zero).
    math : dict
        Formula text per input (``"grad_A = grad @ B^T"``) and ``"out"`` for the JVP.
    source : str
        Where the formula comes from (paper, equation, textbook section).
    nout, out_diff : int, tuple of int
        Number of outputs and which of them are differentiable (default: all).
    view : bool or str
        True when the output shares memory with the first input (it then shares its
        version counter, so in-place changes through either are seen by saved-value checks);
        ``"unless it copies"`` for an op that is a view only when its kernel did not have to
        copy (reshape): each result is then checked.
    variadic : bool
        True for ops over a sequence of tensors (``cat``, ``einsum``): one input name,
        whose VJP rule returns a list of cotangents.
    promote : bool
        True (arithmetic) when a 0-d operand beside a dimensioned one takes its dtype, as
        PyTorch's type promotion; False for an op with an index input (``cross_entropy``'s
        class target), which must keep its integer dtype.
    floating : bool
        True for a one-input float function (exp, log, sin, ...): an integer or bool input
        is computed in the default float dtype, as PyTorch's (NumPy gives float16 for
        int8, uint8 and bool).
    pointwise : bool
        True for a one-input op whose kernel maps each entry on its own (attrs are
        scalars): it then runs on any array shape, so ``vmap`` runs its NumPy kernel on
        the stacked batch as it is.
    singular : dict, optional
        ``{input_name: Singular(...)}``: where the derivative with respect to that input is
        infinite or undefined (sqrt at 0, log at 0, norm at 0, ...), the test that finds
        those entries from the saved values, and the standard fix. ``detect_anomaly`` reads
        it to explain a NaN gradient.
    """
    if name in TABLE:
        raise ValueError(f"defop: {name!r} is already in the derivative table")
    op = Op()
    op.name = name
    op.node_name = node_name or f"{_camel(name)}Backward0"
    op.kernel = forward  # as declared: an Array API name, an xp kernel, or NumPy-only
    op.forward = kernel_for(forward, NUMPY, name)  # bound to NumPy: the fast path's kernel
    op.inputs = tuple(inputs)
    op.arity = 0 if variadic else len(op.inputs)
    op.attrs = tuple(attrs)
    op.nout = nout
    op.out_diff = tuple(range(nout)) if out_diff is None else tuple(out_diff)
    op.view = view
    op.variadic = variadic
    op.promote = promote
    if pointwise and (variadic or len(op.inputs) != 1 or nout != 1):
        raise ValueError(f"defop({name!r}): pointwise is for one-input, one-output ops")
    op.pointwise = pointwise
    op.floating = floating
    op.math = dict(math)
    op.source = source
    op.doc = doc
    op.pool = op.inputs + ("out",) + op.attrs + tuple(f"{n}_shape" for n in op.inputs)
    op.singular = {} if singular is None else dict(singular)
    for key, sing in op.singular.items():
        if key not in op.inputs:
            raise ValueError(f"defop({name!r}): singular entry for unknown input {key!r}")
        unknown = [p for p in sing.params if p not in op.pool]
        if unknown:
            raise ValueError(f"defop({name!r}): the singular test for {key!r} names {unknown}, "
                             f"which are not in the op's pool {op.pool}")
    op.vjp_rules = {}
    op.jvp_rules = {}
    for table, rules in ((op.vjp_rules, vjp), (op.jvp_rules, jvp or {})):
        for key, rule in rules.items():
            if key not in op.inputs:
                raise ValueError(f"defop({name!r}): rule for unknown input {key!r}")
            fn, params = _params(rule, name, key)
            if variadic and table is op.vjp_rules:  # VJPs get `needs` (inputs needing grad)
                if params[:1] != ("needs",):
                    raise TypeError(f"defop({name!r}): a variadic rule starts (F, g, needs, ...)")
                params = params[1:]
            unknown = [p for p in params if p not in op.pool]
            if unknown:
                raise ValueError(
                    f"defop({name!r}): rule for {key!r} names {unknown}, which are not "
                    f"among the op's inputs, 'out', attrs or '<input>_shape' {op.pool}"
                )
            undeclared = sorted(namespace_uses(fn) - set(_ns.names()))
            if undeclared:
                raise ValueError(
                    f"defop({name!r}): the rule for {key!r} uses F.{', F.'.join(undeclared)}, "
                    "which the rule namespace does not declare (declare it in chainrule._ns "
                    "or register it with _ns.register before the op)")
            table[key] = (fn, params)
    missing = [n for n in op.inputs if n not in op.vjp_rules]
    if missing:
        raise ValueError(f"defop({name!r}): no VJP rule for inputs {missing}")
    # Plans by mask; a variadic op has one plan (its rule computes every cotangent).
    op.plans = [None] * (2 if variadic else 2 ** len(op.inputs))
    op.call = DISPATCHER.make_call(op)
    TABLE[name] = op
    return op


class Singular:
    """Where an op's derivative is infinite or undefined, as its table entry states it.

    ``where`` is the text ("x = 0"), ``kind`` "infinite" or "undefined", ``test`` a
    function of saved values named like a rule's parameters (``lambda self: self == 0``)
    giving a boolean mask of those entries (NumPy arrays in, evaluated only to explain a
    NaN), and ``fix`` the standard way around it, written with ``m`` for the mask and ``x``
    for the input (``where(m, sqrt(where(m, x, 1.0)), 0.0)``)."""

    __slots__ = ("where", "kind", "test", "params", "fix")

    def __init__(self, where, kind, test, fix):
        self.where, self.kind, self.test, self.fix = where, kind, test, fix
        self.params = tuple(inspect.signature(test).parameters)

    def __repr__(self):
        return f"<derivative {self.kind} where {self.where}>"


def elementwise(name, forward, deriv, *, math, source, node_name=None, singular=None,
                floating=True):
    """Declare a unary elementwise op from its derivative ``deriv(F, *needs) = f'(x)``.

    VJP: ``grad_x = grad * f'(x)``; JVP: ``t_out = t * f'(x)`` (the Jacobian is diagonal,
    so both are the same product).
    """
    params = tuple(inspect.signature(deriv).parameters)[1:]

    def rule(F, g, *a):
        return g * deriv(F, *a)

    rule.deriv = deriv  # lets the plan inline grad * f'(x) in its generated VJP
    rule = Rule(rule, params)
    # a smooth function's values are floats (floating=True), abs's are not
    return defop(
        name, forward, ("self",), {"self": rule}, jvp={"self": rule},
        math={"self": f"grad_x = grad * ({math})", "out": f"dy = dx * ({math})"},
        source=source, node_name=node_name, pointwise=True, floating=floating,
        singular=None if singular is None else {"self": singular},
    )


def documented(*ops):
    """Decorator: append the ops' formulas and sources to a public function's docstring."""

    def deco(fn):
        lines = ["", "", "    Notes", "    -----"]
        for op in ops:
            lines.append(f"    Derivative rule of ``{op.name}`` (graph node ``{op.node_name}``):")
            for key, text in op.math.items():
                lines.append(f"        {key}: {text}")
            lines.append(f"    Source: {op.source}")
        fn.__doc__ = (fn.__doc__ or fn.__name__).rstrip() + "\n".join(lines) + "\n"
        fn.ops = ops
        return fn

    return deco
