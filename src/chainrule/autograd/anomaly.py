"""``detect_anomaly``: find where a NaN or Inf is born, in the forward or the backward pass.

Inside ``with detect_anomaly():``

- forward (``check_forward=True``): the first op whose output contains NaN or Inf raises
  :class:`AnomalyError` naming the op, the shapes and dtypes of its inputs, which output,
  and the line of user code that called it;
- backward: every node remembers the user's source line that created it (captured only in
  this mode), and the first node whose VJP gives an input cotangent with NaN or Inf raises,
  naming the node, which input, the shapes and dtypes, and that forward line.

Checking costs a pass over every array, so it is for debugging, not for production runs.
"""

from __future__ import annotations

import ast
import os
import re
import threading
import traceback
import weakref

import numpy as np

from .. import _dispatch, _engine
from .._node import PackedValue
from .._state import STATE

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "set_anomaly_enabled", "AnomalyError"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# > 0 while the engine walks a graph in anomaly mode: an op then runs inside a backward pass
# (a custom Function's backward, or a create_graph rule)
IN_BACKWARD = [0]
# node -> (the user's source line that created it, its inputs' shapes and dtypes); filled
# only in anomaly mode
CREATED_AT = weakref.WeakKeyDictionary()


class AnomalyError(RuntimeError):
    """A NaN or Inf appeared. Attributes: ``op`` (node or op name), ``phase`` ("forward" or
    "backward"), ``where`` (the user's source line, as "file:line: code")."""


def is_anomaly_enabled():
    """Whether anomaly mode (``detect_anomaly``) is on in this thread."""
    return bool(STATE.anomaly)


def is_anomaly_check_nan_enabled():
    """Whether anomaly mode checks for NaN (``torch.is_anomaly_check_nan_enabled``): False
    only while it runs with ``check_nan=False``; True when it is off, as in PyTorch."""
    return STATE.anomaly != "record"


def set_anomaly_enabled(enabled, check_nan=True):
    """Turn anomaly mode on or off in this thread (``torch.set_anomaly_enabled``), with
    NaN checks when ``check_nan``. Raises TypeError for arguments that are not bools (as
    PyTorch), changing nothing."""
    for name, value in (("enabled", enabled), ("check_nan", check_nan)):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"set_anomaly_enabled: argument '{name}' must be bool, not "
                            f"{type(value).__name__}")
    STATE.set_modes(anomaly=("forward" if check_nan else "record") if enabled else False)


# whether the errors explain why (detect_anomaly(explain=...)); per thread like the mode
_EXPLAIN = threading.local()


def _explaining():
    return getattr(_EXPLAIN, "on", True)


class detect_anomaly:
    """Context manager (and decorator) that turns on NaN/Inf provenance checks
    (``check_nan=False``, as in PyTorch: only remember where each node was made).

    ``explain=True`` (the default): a NaN or Inf found in the backward pass is explained
    from the op's table entry: where its local derivative is infinite or undefined, at
    which entries, whether the cotangent arriving there is 0 (and which ``where``, created
    on which line, masked it: 0 * inf = NaN), and the standard fix for that op."""

    def __init__(self, check_nan=True, *, check_forward=True, explain=True):
        self.check_nan = check_nan  # PyTorch's flag: False records lines, raises nothing
        self.check_forward = check_forward
        self.explain = explain

    def __enter__(self):
        self.prev = STATE.anomaly
        self.prev_explain = _explaining()
        _EXPLAIN.on = self.explain
        mode = "forward" if self.check_forward else "backward"
        STATE.set_modes(anomaly=mode if self.check_nan else "record")
        return self

    def __exit__(self, *exc):
        STATE.set_modes(anomaly=self.prev)
        _EXPLAIN.on = self.prev_explain
        return False

    def __call__(self, fn):
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan, check_forward=self.check_forward,
                                explain=self.explain):
                return fn(*args, **kwargs)

        wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
        return wrapper


class set_detect_anomaly(detect_anomaly):
    """``set_detect_anomaly(mode, check_nan=True)``: turns anomaly mode on or off at once,
    as PyTorch's (``set_detect_anomaly(True)`` alone switches it on for what follows); as a
    ``with`` block it restores the previous mode at the end."""

    def __init__(self, mode, check_nan=True, *, check_forward=True, explain=True):
        super().__init__(check_nan, check_forward=check_forward, explain=explain)
        self.mode = mode
        self.prev = STATE.anomaly
        self.prev_explain = _explaining()
        if mode:
            _EXPLAIN.on = self.explain
            STATE.set_modes(anomaly=("forward" if check_forward else "backward")
                            if check_nan else "record")
        else:
            STATE.set_modes(anomaly=False)

    def __enter__(self):
        return self

    def __call__(self, fn):
        # as a decorator: the mode applies inside ``fn`` only, not where it is defined
        STATE.set_modes(anomaly=self.prev)
        _EXPLAIN.on = self.prev_explain
        if not self.mode:
            def wrapper(*args, **kwargs):
                with set_detect_anomaly(False):
                    return fn(*args, **kwargs)

            wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
            return wrapper
        return super().__call__(fn)


def user_frame():
    """The innermost stack frame outside chainrule, as "file:line: code"."""
    for frame in reversed(traceback.extract_stack()):
        if not os.path.abspath(frame.filename).startswith(_PACKAGE):
            code = (frame.line or "").strip()
            return f"{frame.filename}:{frame.lineno}: {code}"
    return "<unknown>"


def _bad(value):
    a = np.asarray(value)
    return a.dtype.kind in "fc" and a.size and not np.isfinite(a).all()


def _describe(values, names):
    parts = []
    for name, v in zip(names, values):
        if hasattr(v, "dtype"):
            parts.append(f"{name}: shape {np.shape(v)} {np.asarray(v).dtype}")
        else:
            parts.append(f"{name}: {type(v).__name__} {v!r}")
    return ", ".join(parts)


def _what(value):
    a = np.asarray(value)
    n_nan, n_inf = int(np.isnan(a).sum()), int(np.isinf(a).sum())
    return f"{n_nan} NaN and {n_inf} Inf of {a.size} entries"


def _after_op(op, inputs, datas, attrs, out, result):
    """The dispatcher's hook: in anomaly mode, check each op's outputs."""
    if STATE.anomaly:
        first = result if op.nout == 1 else result[0]
        check_forward(op, datas, out, first._grad_fn)


def check_forward(op, datas, out, node):
    """Called after every op in anomaly mode."""
    where = user_frame()
    names = [f"{op.inputs[0]}[{k}]" for k in range(len(datas[0]))] if op.variadic \
        else op.inputs
    inputs = datas[0] if op.variadic else datas
    if node is not None:
        CREATED_AT[node] = (where, _describe(inputs, names))
    if STATE.anomaly != "forward":
        return
    outs = (out,) if op.nout == 1 else out
    phase = "backward" if IN_BACKWARD[0] else "forward"
    during = ("while computing the backward pass (in a custom Function's backward or a "
              "recorded derivative rule)" if IN_BACKWARD[0] else "in the forward pass")
    for i, o in enumerate(outs):
        if _bad(o):
            fixes = [f"{key}: {sing.fix}" for key, sing in op.singular.items()]
            masked = ("\nIf a `where` masks these entries out later, their gradient is NaN "
                      "all the same (0 * NaN = NaN); give the op a safe input there: "
                      + "; ".join(fixes)) if fixes and _explaining() else ""
            error = AnomalyError(
                f"{op.name} produced {_what(o)} in output {i} (shape {np.shape(o)}) "
                f"{during}.\n  inputs: {_describe(inputs, names)}\n  at {where}\n"
                "Hint: look at this op's inputs; e.g. log or sqrt of negative numbers, 0/0, "
                "exp overflow." + masked
            )
            error.op, error.phase, error.where = op.name, phase, where
            raise error


def record_function_node(node, args):
    """A custom Function's node made in anomaly mode: remember the user's line (the
    ``apply`` call) and its inputs, for the backward message."""
    tensors = [(f"input {i}", a._data) for i, a in enumerate(args) if hasattr(a, "_data")]
    CREATED_AT[node] = (user_frame(), _describe([t for _, t in tensors],
                                                [n for n, _ in tensors]))


def check_backward(node, input_grads, grad_output=None):
    """Called by the engine after every node's VJP in anomaly mode (``grad_output``: the
    cotangent the node received)."""
    if STATE.anomaly == "record":  # detect_anomaly(check_nan=False): lines only
        return
    names = _input_names(node)
    for i, g in enumerate(input_grads or ()):
        if g is not None and _bad(getattr(g, "_data", g)):
            where, inputs = CREATED_AT.get(node, (
                "<not recorded: the node was created outside detect_anomaly()>",
                ", ".join(f"{n}: shape {s}" for n, s in zip(names, node.shapes))))
            why = _explain(node, i, np.asarray(getattr(g, "_data", g)), grad_output) \
                if _explaining() else ""
            error = AnomalyError(
                f"{node.name()} returned {_what(getattr(g, '_data', g))} in the cotangent of "
                f"its input {i} ({names[i]}) in the backward pass.\n  inputs: {inputs}\n"
                f"  the node was created at {where}\n"
                + (why or "Hint: the forward values were finite, so the derivative is "
                   "infinite here; e.g. sqrt or log at 0, abs/norm at 0, division by a value "
                   "that is 0.")
            )
            error.op, error.phase, error.where = node.name(), "backward", where
            raise error


def _explain(node, i, bad_grad, grad_output):
    """Why input ``i``'s cotangent of ``node`` has NaN/Inf: from the op's table entry (where
    its derivative is infinite), the cotangent that arrived (0 there: masked downstream, by
    which ``where``), and the standard fix. "" when the node is not a table op."""
    plan = getattr(node, "plan", None)
    if plan is None or plan.op.variadic:
        return ""
    op = plan.op
    name = op.inputs[i]
    sing = op.singular.get(name)
    bad = ~np.isfinite(bad_grad)
    lines = []
    at = None
    if sing is not None:
        saved = {n: v for n, v in zip(plan.names, node.saved or ())
                 if v.__class__ is not PackedValue}  # packed ones are not unpacked here
        if all(p in saved for p in sing.params):
            with np.errstate(all="ignore"):
                mask = np.asarray(sing.test(**{p: _array(saved[p]) for p in sing.params}))
            try:
                at = np.broadcast_to(mask, bad.shape) & bad
            except ValueError:
                at = None
        rule = op.math.get(name, "")
        here = (f"; here at {int(at.sum())} of the {int(bad.sum())} entries with NaN/Inf, "
                f"e.g. index {_first(at)}") if at is not None and at.any() else ""
        lines.append(f"Why: the derivative of {op.name} with respect to {name} ({rule}) is "
                     f"{sing.kind} where {sing.where} (its table entry){here}.")
    else:
        lines.append(f"Why: {op.name}'s local derivative with respect to {name} is not finite "
                     "at these entries (its table entry names no singular points: look for "
                     "NaN or Inf in its saved inputs).")
    entries = at if at is not None and at.any() else bad
    go = _cotangent(grad_output, op)
    if go is not None:
        try:
            arriving = np.broadcast_to(go, entries.shape)[entries]
        except ValueError:
            arriving = None
        if arriving is not None and arriving.size and (arriving == 0).all():
            masker = _masking_where(node)
            by = (f": they were masked out downstream by the `where` created at {masker}"
                  if masker else " (they were masked out downstream)")
            lines.append(f"The cotangent arriving at those entries is 0{by}. The chain rule "
                         "still multiplies it by the infinite local derivative: 0 * inf = "
                         "NaN. A masked-out branch's derivative is computed all the same.")
        elif arriving is not None and arriving.size:
            lines.append("The cotangent arriving there is not 0: the loss depends on these "
                         "entries, where the derivative does not exist (move the input away "
                         "from the singular point or smooth it).")
    if sing is not None:
        lines.append(f"Fix: {sing.fix}" + ("   (m: the where's condition, x: this op's "
                                           "input)" if "where(m" in sing.fix else ""))
        masker = _masking_where(node)
        rewritten = _rewrite(masker, op.name, sing.fix) if masker else None
        if rewritten:
            lines.append(f"Here: {rewritten}")
    return "\n".join(lines)


def _rewrite(where_line, op_name, fix):
    """The user's line with the masked op's input made safe (the double-``where`` fix), or
    None when the line cannot be rewritten (not one statement, no ``where(c, op(x), ...)``
    in it, or a fix that is not of the double-where kind)."""
    found = re.search(r"where\(m, x, ([^)]+)\)", fix)
    if not found:
        return None
    safe = ast.literal_eval(found.group(1))
    code = where_line.split(": ", 1)[-1].strip() if ": " in where_line else where_line
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None

    def name_of(call):
        f = call.func
        return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")

    changed = []

    class _Safe(ast.NodeTransformer):
        def visit_Call(self, node):
            self.generic_visit(node)
            if name_of(node) != "where" or len(node.args) != 3 or changed:
                return node
            cond = node.args[0]
            for k in (1, 2):
                for sub in ast.walk(node.args[k]):
                    if not isinstance(sub, ast.Call) or name_of(sub) != op_name:
                        continue
                    method = isinstance(sub.func, ast.Attribute) and not sub.args
                    arg = sub.func.value if method else (sub.args[0] if sub.args else None)
                    if arg is None:
                        continue
                    parts = [cond, arg, ast.Constant(safe)] if k == 1 else \
                        [cond, ast.Constant(safe), arg]
                    guarded = ast.Call(func=node.func, args=parts, keywords=[])
                    if method:
                        sub.func.value = guarded
                    else:
                        sub.args[0] = guarded
                    changed.append(sub)
                    return node
            return node

    tree = _Safe().visit(tree)
    return ast.unparse(tree) if changed else None


def _array(x):
    return np.asarray(getattr(x, "_data", x)) if not isinstance(x, (int, float)) else x


def _first(mask):
    idx = np.argwhere(mask)
    return tuple(int(v) for v in idx[0]) if idx.size else ()


def _cotangent(grad_output, op):
    """The cotangent of the op's first differentiable output, as an array (or None)."""
    if grad_output is None:
        return None
    g = grad_output
    if isinstance(g, (tuple, list)):
        g = next((x for x in g if x is not None), None)
        if g is None:
            return None
    return np.asarray(getattr(g, "_data", g))


def _masking_where(node, depth=6):
    """The source line of a ``where`` downstream of ``node`` (a consumer of its output, up to
    ``depth`` ops away) among the nodes made in anomaly mode, or None."""
    consumers = {}
    for cand in list(CREATED_AT.keys()):
        for child, _ in getattr(cand, "next_functions", ()):
            if child is not None:
                consumers.setdefault(id(child), []).append(cand)
    frontier, seen = [node], {id(node)}
    for _ in range(depth):
        nxt = []
        for n in frontier:
            for c in consumers.get(id(n), ()):
                plan = getattr(c, "plan", None)
                if plan is not None and plan.op.name == "where":
                    return CREATED_AT[c][0]
                if id(c) not in seen:
                    seen.add(id(c))
                    nxt.append(c)
        frontier = nxt
    return None


def _input_names(node):
    plan = getattr(node, "plan", None)
    if plan is None:
        return [f"input {i}" for i in range(len(node.next_functions))]
    op = plan.op
    if op.variadic:
        return [f"{op.inputs[0]}[{i}]" for i in range(len(node.next_functions))]
    return list(op.inputs)


class _InBackward:
    """The engine's hook around a backward pass: ops that run inside it belong to the
    backward pass (for the messages)."""

    def __enter__(self):
        IN_BACKWARD[0] += 1

    def __exit__(self, *exc):
        IN_BACKWARD[0] -= 1
        return False


_dispatch.AFTER_OP.append(_after_op)
_engine.HOOKS.check_node = check_backward
_engine.HOOKS.in_backward = _InBackward
