"""The lint of ``validate``: five silent mistakes in custom Functions, each its own check.

``ctx-tensors``
    A Tensor computed from an input that requires grad, stored as a ``ctx`` attribute in
    ``forward`` (``ctx.y = x.exp()``) and read in ``backward``, instead of
    ``ctx.save_for_backward``: it carries no graph, so double backward through it is silently
    wrong, and an in-place change to it before backward goes unnoticed.
``none-grad``
    ``backward`` returns ``None`` for an input that requires grad although finite
    differences show the outputs depend on it: its gradient is silently zero.
``linearity``
    ``backward(a g + b h)`` must equal ``a backward(g) + b backward(h)``: a VJP is linear in
    ``grad_output``.
``grad-in-place``
    ``backward`` writes into its ``grad_output`` (another node may share it).
``output-views``
    ``forward`` returns an input itself or a view of it without ``ctx.mark_dirty`` (or
    ``ctx.mark_non_differentiable``).

The checks run ``forward`` and ``backward`` directly, as ``Function.apply`` and the engine
do, with a ``ctx`` that records which attributes ``forward`` sets (and where) and which
``backward`` reads, under ``sys.settrace`` to find the lines responsible.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import sys
from pathlib import Path

import numpy as np

from .. import _state
from .._tensor import Tensor, wrap
from ..backend import dtype_kind
from ._validate_numerics import _as_tuple
from ._validate_report import LINT_CHECKS, Check
from .function import FunctionCtx, _run_forward, _user_backward

#: Code in these folders is the library's (chainrule, NumPy, the standard library), not the
#: user's: lines are never blamed there.
_LIBRARY = tuple(str(Path(p).resolve()) + os.sep for p in (
    Path(__file__).resolve().parents[1], Path(np.__file__).parent, Path(os.__file__).parent))
_USER = {}


def _is_user(filename):
    user = _USER.get(filename)
    if user is None:
        path = os.path.realpath(filename)
        user = not filename.startswith("<") and (
            not path.startswith(_LIBRARY) or (
                not path.startswith(_LIBRARY[:2])
                and ("site-packages" in path or "dist-packages" in path)))
        _USER[filename] = user
    return user


def _where(filename, line):
    """``file:line: source text`` (the path relative to the working directory when inside
    it)."""
    text = linecache.getline(filename, line).strip()
    try:
        shown = os.path.relpath(filename)
        if shown.startswith(".."):
            shown = filename
    except ValueError:
        shown = filename
    return f"{shown}:{line}: {text}" if text else f"{shown}:{line}"


# --- a ctx that records ---------------------------------------------------------------------

_OWN = frozenset(vars(FunctionCtx(())))  # the attributes FunctionCtx sets itself


class _LintCtx(FunctionCtx):
    """A FunctionCtx that records each attribute set while ``_lint_record`` is on (name ->
    (file, line) of the last assignment) and each of those read while ``_lint_reads`` is a
    dict (name -> (file, line) of the first read)."""

    def __init__(self, needs, name):
        object.__setattr__(self, "_lint_sets", {})
        object.__setattr__(self, "_lint_reads", None)
        object.__setattr__(self, "_lint_record", False)
        super().__init__(needs)
        self._name = name

    def __setattr__(self, name, value):
        if self._lint_record and not name.startswith("_") and name not in _OWN:
            frame = sys._getframe(1)
            self._lint_sets[name] = (frame.f_code.co_filename, frame.f_lineno)
        object.__setattr__(self, name, value)

    def __getattribute__(self, name):
        if name[:1] != "_":
            d = object.__getattribute__(self, "__dict__")
            reads = d["_lint_reads"]
            if reads is not None and name in d["_lint_sets"] and name not in reads:
                frame = sys._getframe(1)
                reads[name] = (frame.f_code.co_filename, frame.f_lineno)
        return object.__getattribute__(self, name)


# --- tracing the user's lines ---------------------------------------------------------------


class _Tracer:
    """``sys.settrace`` over the user's frames: ``on_event(frame, event, previous)`` at each
    line and return event, ``previous`` being ``(file, line)`` of the line that ran just
    before in that frame (for a frame's first line, the calling line when the caller is the
    user's)."""

    def __init__(self, on_event):
        self.on_event = on_event
        self.prev = {}

    def __enter__(self):
        self.old = sys.gettrace()
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc):
        sys.settrace(self.old)
        self.prev.clear()

    def _global(self, frame, event, arg):
        if event == "call" and _is_user(frame.f_code.co_filename):
            return self._local
        return None

    def _local(self, frame, event, arg):
        file = frame.f_code.co_filename
        if event == "line":
            prev = self.prev.get(frame)
            if prev is None:
                caller = frame.f_back
                if caller is not None and _is_user(caller.f_code.co_filename):
                    prev = (caller.f_code.co_filename, caller.f_lineno)
            self.on_event(frame, event, prev)
            self.prev[frame] = (file, frame.f_lineno)
        elif event == "return":
            self.on_event(frame, event, (file, frame.f_lineno))
            self.prev.pop(frame, None)
        return self._local


class _GradWatch:
    """Which grad_outputs change (version counter or values) and on which user line."""

    def __init__(self, grads):
        self.grads = [(k, g, np.array(g._data), g._vc[0]) for k, g in enumerate(grads)
                      if isinstance(g, Tensor)]
        self.found = {}  # k -> (file, line) or None

    def on_event(self, frame, event, prev):
        self.check(prev)

    def check(self, where=None):
        for k, g, data, version in self.grads:
            if k in self.found:
                continue
            if g._vc[0] != version or not np.array_equal(np.asarray(g._data), data,
                                                         equal_nan=True):
                self.found[k] = where


class _ReturnLine:
    """The line of the return of the outermost call of ``code`` (forward's return)."""

    def __init__(self, code):
        self.code = code
        self.where = None

    def on_event(self, frame, event, prev):
        if event == "return" and frame.f_code is self.code:
            self.where = prev


# --- running forward and backward -----------------------------------------------------------


def _forward(cls, xs, trace=False):
    """``(ctx, outputs, where forward returned)``: forward as ``apply`` runs it (no grad),
    with a recording ctx."""
    needs = tuple(isinstance(a, Tensor) and a._requires_grad for a in xs)
    ctx = _LintCtx(needs, cls.__name__)
    code = getattr(cls.forward, "__code__", None)
    ret = _ReturnLine(code)
    object.__setattr__(ctx, "_lint_record", True)
    try:
        with _state.no_grad(), (_Tracer(ret.on_event) if trace and code is not None
                                else contextlib.nullcontext()):
            out = _run_forward(cls, ctx, xs, {})
    finally:
        object.__setattr__(ctx, "_lint_record", False)
    return ctx, _as_tuple(out), ret.where


def _backward(cls, ctx, grads, watch=None):
    with _state.no_grad(), (_Tracer(watch.on_event) if watch is not None
                            else contextlib.nullcontext()):
        result = _user_backward(cls)(ctx, *grads)
    if watch is not None:
        watch.check()
    return _as_tuple(result)


def _float_tensor(t):
    return isinstance(t, Tensor) and dtype_kind(t.dtype) == "f"


def _tensors(value, depth=0):
    """The float Tensors in ``value``: itself, or inside a list, tuple, set or dict."""
    if _float_tensor(value):
        return [value]
    if depth < 3 and isinstance(value, (list, tuple, set, frozenset)):
        return [t for v in value for t in _tensors(v, depth + 1)]
    if depth < 3 and isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v, depth + 1)]
    return []


def _shares(a, b):
    if a is b:
        return True
    try:
        return bool(np.shares_memory(a, b, max_work=10**6))
    except Exception:  # too hard to decide exactly, or another backend's arrays
        try:
            return bool(np.may_share_memory(a, b))
        except Exception:
            return False


def _snapshot(tensors):
    return [(t, np.array(t._data), t._vc[0]) for t in tensors]


def _moved(snapshot):
    return any(t._vc[0] != v or not np.array_equal(np.asarray(t._data), d, equal_nan=True)
               for t, d, v in snapshot)


def _array(v, shape):
    if isinstance(v, Tensor):
        return np.asarray(v._data, dtype=np.float64)
    return np.zeros(shape)


def _param_names(fn, n):
    """backward's parameter names after ctx (``grad_output k`` where unknown)."""
    import inspect

    try:
        params = list(inspect.signature(fn).parameters.values())[1:]
    except (TypeError, ValueError):
        params = []
    names = []
    for k in range(n):
        p = params[k] if k < len(params) else None
        ok = p is not None and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        names.append(f"grad_output {p.name}" if ok else f"grad_output {k}")
    return names


# --- the checks -----------------------------------------------------------------------------


def _check_views(ctx, xs, outs, names, where):
    dirty = getattr(ctx, "_dirty", ())
    found = []
    for j, o in enumerate(outs):
        if not isinstance(o, Tensor) or any(o is d for d in dirty) \
                or id(o) in ctx._non_differentiable:
            continue
        for i, x in enumerate(xs):
            if not isinstance(x, Tensor):
                continue
            if o is x:
                found.append((j, i, "the input {name} itself"))
                break
            if _shares(o._data, x._data):
                found.append((j, i, "a view of the input {name} (it shares {name}'s memory)"))
                break
    if not found:
        return Check("output-views", "pass", "",
                     "no output is an input or a view of one (or it is declared with "
                     "ctx.mark_dirty / ctx.mark_non_differentiable)")
    lines = []
    for j, i, what in found:
        what = what.format(name=names[i])
        lines.append(f"forward returns {what} as output {j}, without ctx.mark_dirty: output "
                     "and input share their memory, so an in-place change to either silently "
                     "changes the other behind autograd's back (PyTorch raises on such a change "
                     f"or computes wrong gradients). Return a new tensor ({names[i]}.clone()), "
                     f"or, if forward changed {names[i]} in place on purpose, declare it with "
                     f"ctx.mark_dirty({names[i]}).")
    if where is not None:
        lines.append("returned at " + _where(*where))
    j, i, what = found[0]
    short = f"output {j} is {names[i]}" if "itself" in what else f"output {j} views {names[i]}"
    return Check("output-views", "fail", short, "\n".join(lines))


def _check_grad_in_place(watch, gnames):
    if not watch.found:
        return Check("grad-in-place", "pass", "", "backward leaves its grad_output unchanged")
    lines = []
    for k, where in watch.found.items():
        at = f" at {_where(*where)}" if where is not None else ""
        lines.append(f"backward modifies its {gnames[k]} in place{at}")
    lines.append("grad_output belongs to the engine (another node may hold the same tensor, "
                 "and a second backward reuses it): compute a new tensor (g * 2, not g *= 2 or "
                 "g.mul_(2)).")
    k, where = next(iter(watch.found.items()))
    short = f"{gnames[k].split()[-1]} changed" + ("" if where is None else
                                                  f" at line {where[1]}")
    return Check("grad-in-place", "fail", short, "\n".join(lines))


def _check_none(cls, make, diff, names, returned, js, jacobians, eps, atol, rng):
    bad = []
    for i in diff:
        if i < len(returned) and returned[i] is not None:
            continue
        blocks = [jacobians[(j, i)] for j in js if (j, i) in jacobians]
        try:
            size = max((float(np.abs(b).max()) for b in blocks if b.size), default=0.0) \
                if blocks else _directional(cls, make, i, js, eps, rng)
        except Exception:  # forward fails at the perturbed point: nothing to say
            continue
        if size > atol:
            bad.append((i, size))
    if not bad:
        return Check("none-grad", "pass", "",
                     "backward returns a gradient for every input that requires grad and "
                     "that the outputs depend on")
    lines = [f"backward returned None for {names[i]}, which requires grad, but the outputs "
             f"depend on {names[i]} (finite differences: |d output / d {names[i]}| up to "
             f"{size:.3g}): its gradient is silently taken as zero. Return grad_output^T J "
             f"for {names[i]}, or None only when ctx.needs_input_grad[{i}] is False."
             for i, size in bad]
    return Check("none-grad", "fail", f"None for {names[bad[0][0]]}", "\n".join(lines))


def _directional(cls, make, i, js, eps, rng):
    """``max |(f(x + eps v) - f(x - eps v)) / (2 eps)|`` over the outputs ``js`` for a random
    direction ``v`` of input ``i`` (when the Jacobians are too large to form)."""
    xs = make(False)
    base = np.asarray(xs[i]._data, dtype=np.float64)
    v = rng.standard_normal(base.shape)
    vals = []
    for step in (eps, -eps):
        args = list(xs)
        args[i] = wrap((base + step * v).astype(xs[i]._data.dtype))
        with _state.no_grad():
            vals.append(_as_tuple(cls.apply(*args)))
    plus, minus = vals
    sizes = [float(np.abs(np.asarray(plus[j]._data, dtype=np.float64)
                          - np.asarray(minus[j]._data, dtype=np.float64)).max()) / (2 * eps)
             for j in js if np.size(plus[j]._data)]
    return max(sizes, default=0.0)


def _check_linear(cls, ctx, xs, outs, js, names, rng, atol, rtol):
    def cotangent():
        return {j: rng.standard_normal(np.shape(outs[j]._data)) for j in js}

    def call(c):
        grads = [None if not isinstance(o, Tensor) else
                 wrap(np.array(c[j], dtype=o._data.dtype) if j in c
                      else np.zeros(np.shape(o._data), dtype=o._data.dtype))
                 for j, o in enumerate(outs)]
        result = _backward(cls, ctx, grads)
        return [_array(result[i] if i < len(result) else None, np.shape(x._data))
                for i, x in enumerate(xs) if isinstance(x, Tensor)]

    tensor_inputs = [i for i, x in enumerate(xs) if isinstance(x, Tensor)]
    worst = (0.0, None, None, None)
    for a_range, b_range in (((1.5, 2.5), (0.5, 1.5)), ((0.5, 1.5), (-2.5, -1.5))):
        a, b = rng.uniform(*a_range), rng.uniform(*b_range)
        g, h = cotangent(), cotangent()
        rg, rh = call(g), call(h)
        rc = call({j: a * g[j] + b * h[j] for j in js})
        for k, i in enumerate(tensor_inputs):
            expect = a * rg[k] + b * rh[k]
            if not expect.size:
                continue
            err = float(np.abs(rc[k] - expect).max())
            scale = float(max(np.abs(rc[k]).max(), np.abs(a * rg[k]).max()
                              + np.abs(b * rh[k]).max()))
            # a linear backward agrees to rounding: far tighter than gradcheck's tolerances
            if err > 1e-3 * (atol + rtol * scale) and err > worst[0]:
                worst = (err, i, a, b)
    err, i, a, b = worst
    if i is None:
        return Check("linearity", "pass", "",
                     "backward(a g + b h) = a backward(g) + b backward(h) for random "
                     "grad_outputs g, h and numbers a, b")
    msg = ("backward is not linear in grad_output (e.g. it squares it, adds a constant, or "
           f"uses it in a branch): for the gradient of {names[i]}, backward(a g + b h) differs "
           f"from a backward(g) + b backward(h) by up to {err:.3g} (random g, h; a = {a:.3g}, "
           f"b = {b:.3g}). A vector-Jacobian product grad_output^T J is linear in "
           "grad_output: J may depend on the inputs, never on grad_output.")
    return Check("linearity", "fail", "not linear in grad_output", msg)


def _check_ctx_tensors(cls, make, diff, names, ctx, xs, reads, values):
    """Attributes set in forward, read in backward, holding float tensors derived from an
    input that requires grad (it is one, shares its memory, or changes when it changes)."""
    sets = ctx._lint_sets
    candidates = [n for n in sets if n in reads and values.get(n)]
    flagged = []
    if candidates:
        rerun = {}

        def attrs(inputs):
            c, _, _ = _forward(cls, inputs)
            return {n: [np.array(t._data) for t in _tensors(vars(c).get(n))] for n in candidates}

        def differs(n, other):
            a = values[n]
            b = other.get(n, [])
            return len(a) != len(b) or any(
                x.shape != y.shape or not np.array_equal(x, y, equal_nan=True)
                for x, y in zip(a, b))

        try:
            again = attrs(make())  # a forward that draws random numbers: not attributable
        except Exception:
            again = None
        for n in candidates:
            tensors = _tensors(vars(ctx).get(n))
            source = None
            for i in diff:
                if any(t is xs[i] or _shares(t._data, xs[i]._data) for t in tensors):
                    source = (i, "the input {name} itself" if any(t is xs[i] for t in tensors)
                              else "a view of the input {name}")
                    break
            if source is None and again is not None and not differs(n, again):
                for i in diff:
                    if i not in rerun:
                        perturbed = list(make())
                        base = np.asarray(perturbed[i]._data, dtype=np.float64)
                        noise = np.random.default_rng(i).standard_normal(base.shape)
                        t = wrap((base + 1e-3 * (1 + np.abs(base)) * noise).astype(
                            perturbed[i]._data.dtype))
                        t.requires_grad_(True)
                        perturbed[i] = t
                        try:
                            rerun[i] = attrs(tuple(perturbed))
                        except Exception:
                            rerun[i] = None
                    if rerun[i] is not None and differs(n, rerun[i]):
                        source = (i, "a Tensor computed from {name}")
                        break
            if source is not None:
                flagged.append((n, source))
    if not flagged:
        return Check("ctx-tensors", "pass", "",
                     "backward reads no tensor computed from the inputs through a ctx attribute "
                     "(tensors it needs come from ctx.saved_tensors)")
    once = getattr(_user_backward(cls), "_once_differentiable", False)
    why = ("an in-place change to it before backward is not caught (backward is "
           "@once_differentiable, so double backward is refused anyway)" if once else
           "it carries no graph, so double backward through it is silently wrong, and an "
           "in-place change to it before backward is not caught")
    lines = []
    for n, (i, what) in flagged:
        what = what.format(name=names[i])
        lines.append(f"ctx.{n} holds {what} (which requires grad), set in forward and read in "
                     f"backward: save it with ctx.save_for_backward(...) and read it from "
                     f"ctx.saved_tensors. Kept as a ctx attribute, {why}.")
        lines.append(f"  set at {_where(*sets[n])}")
        lines.append(f"  read at {_where(*reads[n])}")
    return Check("ctx-tensors", "fail", f"ctx.{flagged[0][0]}: use save_for_backward",
                 "\n".join(lines))


def lint_checks(cls, make, diff, names, rng, result, backward_ok=True, why=""):
    """The five lint checks, in the order of :data:`LINT_CHECKS`.

    ``backward_ok`` False (backward raised, or returns the wrong count/shapes: see the
    ``outputs`` check) runs only ``output-views``, which needs forward alone; the others
    are skipped with ``why``.
    """
    eps, atol, rtol = result.tolerances
    xs = make()
    try:
        ctx, outs, returned_at = _forward(cls, xs, trace=True)
    except Exception:
        return [Check(n, "skip", "", "skipped: forward raised") for n in LINT_CHECKS]
    views = _check_views(ctx, xs, outs, names, returned_at)
    js = [j for j, o in enumerate(outs) if _float_tensor(o)
          and id(o) not in ctx._non_differentiable]
    if not backward_ok or not js:
        why = why or "skipped: no differentiable output"
        skipped = {n: Check(n, "skip", "", why) for n in LINT_CHECKS}
        skipped["output-views"] = views
        return [skipped[n] for n in LINT_CHECKS]

    values = {n: [np.array(t._data) for t in _tensors(v)] for n, v in vars(ctx).items()
              if n in ctx._lint_sets}
    watched = _snapshot([t for t in ctx._saved if isinstance(t, Tensor)]
                        + [t for v in vars(ctx).values() for t in _tensors(v)]
                        + [x for x in xs if isinstance(x, Tensor)])
    grads = [None if not isinstance(o, Tensor) else
             wrap(rng.standard_normal(np.shape(o._data)).astype(o._data.dtype) if j in js
                  else np.zeros(np.shape(o._data), dtype=o._data.dtype))
             for j, o in enumerate(outs)]
    watch = _GradWatch(grads)
    object.__setattr__(ctx, "_lint_reads", {})
    try:
        returned = _backward(cls, ctx, grads, watch)
    except Exception:
        return [views if n == "output-views" else
                Check(n, "skip", "", "skipped: backward raised (see outputs)")
                for n in LINT_CHECKS]
    finally:
        reads = ctx._lint_reads
        object.__setattr__(ctx, "_lint_reads", None)
    gnames = _param_names(_user_backward(cls), len(outs))
    checks = {
        "ctx-tensors": _check_ctx_tensors(cls, make, diff, names, ctx, xs, reads, values),
        "none-grad": _check_none(cls, make, diff, names, returned, js, result.jacobians, eps,
                                 atol, rng),
        "grad-in-place": _check_grad_in_place(watch, gnames),
        "output-views": views,
    }
    if _moved(watched):
        checks["linearity"] = Check("linearity", "skip", "",
                                    "skipped: backward changes its saved tensors or inputs in "
                                    "place (see in-place), so calls cannot be compared")
    else:
        try:
            checks["linearity"] = _check_linear(cls, ctx, xs, outs, js, names, rng, atol, rtol)
        except Exception as err:
            checks["linearity"] = Check("linearity", "skip", "",
                                        f"skipped: backward raised {type(err).__name__}: {err} "
                                        "when called again")
    return [checks[n] for n in LINT_CHECKS]
