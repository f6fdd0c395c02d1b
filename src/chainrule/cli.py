"""Command-line interface: ``python -m chainrule <command>`` (also the ``chainrule`` script).

Commands
--------
demo
    Train an MLP on scikit-learn's digits, gradcheck it and run the custom-Function
    examples (see :mod:`chainrule.demo`).
check
    Validate the custom ``autograd.Function`` subclasses of a Python file (see
    :mod:`chainrule.autograd.validate`): one table row per Function, exit status 1 when
    any check fails, so it can run in CI.
explain
    Print an op's derivative rules from the derivative table (signature, forward, VJP and
    JVP formulas, source), or list the whole table with ``--all``.
derive
    Print the VJP formula of an expression as a SymPy matrix expression, built from the
    table's own rules (see :mod:`chainrule.symbolic`; needs SymPy).

Each command is a ``_cmd_<name>(args) -> int`` function registered in :func:`build_parser`.
Exit status: 0 success, 1 a check failed, 2 a usage error (bad arguments, missing file,
no Function found, unknown op).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import importlib.util
import inspect
import sys
import textwrap
import traceback
from pathlib import Path

from . import demo

#: Exit status of a usage error (as argparse uses).
USAGE = 2


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _cmd_demo(args):
    try:
        result = demo.run(epochs=args.epochs, quiet=args.quiet, examples=not args.no_examples)
    except ImportError as err:
        print(f"chainrule demo: {err}", file=sys.stderr)
        return 1
    if args.quiet:
        print(f"accuracy {result['accuracy']:.4f}, gradcheck "
              f"{'passed' if result['gradcheck'] else 'FAILED'}: "
              f"{'OK' if result['ok'] else 'FAILED'}")
    return 0 if result["ok"] else 1


# --- check ----------------------------------------------------------------------------------


def parse_shapes(text):
    """Parse ``--shapes``: comma-separated shapes, dimensions joined by ``x``.

    Parameters
    ----------
    text : str
        ``"3x5,5"``; ``()`` stands for a 0-d (scalar) tensor.

    Returns
    -------
    list of tuple of int
        ``[(3, 5), (5,)]``.

    Raises
    ------
    argparse.ArgumentTypeError
        For an empty shape, a dimension that is not a positive integer.
    """
    shapes = []
    for part in text.split(","):
        part = part.strip().lower()
        if part in ("()", "scalar"):
            shapes.append(())
            continue
        dims = part.split("x")
        if not part or not all(d.strip().isdigit() and int(d) > 0 for d in dims):
            raise argparse.ArgumentTypeError(
                f"bad shape {part!r} in {text!r}: use positive sizes joined by 'x', shapes "
                "separated by commas, e.g. 3x5,5 (and () for a scalar)")
        shapes.append(tuple(int(d) for d in dims))
    return shapes


def _shapes_option(text):
    """``3x5,5`` -> (None, shapes); ``affine=3x5,5`` -> ("affine", shapes)."""
    name, sep, rest = text.partition("=")
    if sep and name.strip().isidentifier():
        return name.strip(), parse_shapes(rest)
    return None, parse_shapes(text)


class _ShapesAction(argparse.Action):
    """``--shapes`` once for all (``args.shapes``), or per pair (``args.pair_shapes``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        name, shapes = values
        if name is None:
            namespace.shapes = shapes
        else:
            found = dict(getattr(namespace, "pair_shapes", None) or {})
            found[name] = shapes
            namespace.pair_shapes = found


class _UsageError(Exception):
    """A problem with what the user asked for: printed, exit status 2."""


def _split_target(target):
    """``path/to/file.py:Name`` -> (Path, "Name"); ``path/to/file.py`` -> (Path, None)."""
    path, sep, name = target.rpartition(":")
    if sep and name.isidentifier() and path:
        return Path(path), name
    return Path(target), None


def _load_module(path):
    """Import a Python file by path, as a module of its own."""
    path = path.resolve()
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:8]
    name = f"_chainrule_check_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise _UsageError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.parent))  # the user's file may import its neighbours
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        sys.modules.pop(name, None)
        tb = "".join(traceback.format_exception(type(err), err, err.__traceback__)[-3:])
        raise _UsageError(f"importing {path} raised {type(err).__name__}: {err}\n{tb}") from None
    finally:
        sys.path.remove(str(path.parent))
    return module


def find_functions(module):
    """Find the ``autograd.Function`` subclasses defined in ``module``.

    Parameters
    ----------
    module : module
        A loaded module (the user's file).

    Returns
    -------
    list of type
        The subclasses, in definition order. Classes imported into the module from
        elsewhere, and subclasses without a ``forward`` of their own (abstract bases), are
        left out.
    """
    from .autograd import Function

    found = []
    for value in vars(module).values():
        if (isinstance(value, type) and issubclass(value, Function) and value is not Function
                and value.__module__ == module.__name__
                and value.forward is not Function.forward):
            found.append(value)
    return found


def find_pairs(module):
    """Find NumPy forward/backward pairs defined in ``module``: functions named
    ``<name>_forward`` and ``<name>_backward`` (``forward(*x) -> (out, cache)``,
    ``backward(dout, cache) -> dx``, as in many course assignments).

    Returns
    -------
    list of (str, callable, callable)
        ``(name, forward, backward)`` in definition order.
    """
    values = vars(module)
    pairs = []
    for key, fwd in values.items():
        if not key.endswith("_forward") or not callable(fwd) or isinstance(fwd, type):
            continue
        if getattr(fwd, "__module__", None) != module.__name__:
            continue
        name = key[: -len("_forward")]
        bwd = values.get(name + "_backward")
        if callable(bwd):
            pairs.append((name, fwd, bwd))
    return pairs


NOTHING_TO_CHECK = (
    "no autograd.Function subclasses and no forward/backward pairs are defined in {path}. "
    "Write a Function (class MyOp(chainrule.autograd.Function) with static forward(ctx, ...) "
    "and backward(ctx, grad_output)), or name a NumPy pair <name>_forward(*x) -> (out, cache) "
    "and <name>_backward(dout, cache) -> dx and give its input shapes with --shapes.")


def _select(module, path, name):
    functions = find_functions(module)
    if name is None:
        if not functions:
            if find_pairs(module):
                return []
            raise _UsageError(NOTHING_TO_CHECK.format(path=path))
        return functions
    if any(p[0] == name for p in find_pairs(module)):
        return []
    from .autograd import Function

    value = getattr(module, name, None)
    if isinstance(value, type) and issubclass(value, Function) and value is not Function:
        return [value]
    names = [f.__name__ for f in functions]
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    what = "is not an autograd.Function subclass" if value is not None else "is not defined"
    message = f"{name} {what} in {path}."
    if close:
        message += f" Did you mean {', '.join(close)}?"
    message += (f" Functions in the file: {', '.join(names)}." if names else
                " The file defines no Function subclasses.")
    raise _UsageError(message)


def _example_inputs(fn, args):
    """The arguments to validate ``fn`` at: from --shapes, else ``fn.example_inputs()``."""
    import numpy as np

    import chainrule as cr

    dtype = np.dtype(args.dtype)
    if args.shapes is not None:
        rng = np.random.default_rng(args.seed)
        return tuple(cr.tensor(rng.standard_normal(s).astype(dtype)) for s in args.shapes)
    make = getattr(fn, "example_inputs", None)
    if make is None:
        raise _UsageError(
            f"{fn.__name__} has no example_inputs() and no --shapes was given: add a static "
            "method example_inputs() returning the tuple of arguments of apply, or pass "
            "--shapes (e.g. --shapes 3x5,5)")
    cr.manual_seed(args.seed)
    np.random.seed(args.seed)
    try:
        inputs = make()
    except Exception as err:
        raise _UsageError(f"{fn.__name__}.example_inputs() raised {type(err).__name__}: "
                          f"{err}") from None
    return tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)


def _plot_path(plot, fn, several):
    if plot is None:
        return None
    p = Path(plot)
    return str(p.with_name(f"{p.stem}_{fn.__name__}{p.suffix}")) if several else str(p)


def format_table(rows, headers):
    """Format rows as aligned, left-justified columns under a header and a rule.

    Parameters
    ----------
    rows : list of list of str
    headers : list of str

    Returns
    -------
    str
    """
    widths = [max(len(str(r[k])) for r in [headers] + rows) for k in range(len(headers))]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(headers, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)


def _row(fn, result):
    if result is None:
        return [fn.__name__, "ERROR", "-", "-", "validate raised (see above)"]
    worst = "-" if result.worst_error is None else f"{result.worst_error:.2e}"
    failed = [c for c in result.checks if not c.passed]
    diagnosis = ", ".join(result.diagnosis)
    if not diagnosis and failed:
        diagnosis = "; ".join(c.short or c.name for c in failed)
    return [fn.__name__, "pass" if result.ok else "FAIL", worst,
            ", ".join(c.name for c in failed) or "-", diagnosis or "-"]


def _cmd_check(args):
    from .autograd.validate import plot_supported, validate

    try:
        path, name = _split_target(args.target)
        if not path.is_file():
            raise _UsageError(f"no such file: {path}" if not path.exists()
                              else f"not a file: {path}")
        module = _load_module(path)
        functions = _select(module, path, name)
        inputs = {fn: _example_inputs(fn, args) for fn in functions}
        pairs = [p for p in find_pairs(module) if name is None or p[0] == name]
        pair_inputs = {p[0]: _pair_inputs(p[0], args) for p in pairs}
    except _UsageError as err:
        print(f"chainrule check: {err}", file=sys.stderr)
        return USAGE

    can_plot = plot_supported()
    if args.plot is not None and not can_plot:
        print("note: this version of gradcheck has no plot= option; --plot wrote nothing")
    rows, results = [], {}
    for fn in functions:
        plot = _plot_path(args.plot, fn, len(functions) > 1) if can_plot else None
        try:
            result = validate(fn, *inputs[fn], double=args.double, seed=args.seed,
                              dtype=args.dtype, plot=plot, teach=args.teach, verbose=False)
        except Exception:
            print(f"validate({fn.__name__}) raised:")
            traceback.print_exc(file=sys.stdout)
            result = None
        results[fn] = result
        rows.append(_row(fn, result))
        if plot is not None:
            print(f"{fn.__name__}: plot " + (f"written to {plot}" if Path(plot).exists()
                                             else f"not written ({plot}): gradcheck made none"))

    pair_failures = []
    for pair_name, fwd, bwd in pairs:
        row, ok = _check_pair(pair_name, fwd, bwd, pair_inputs[pair_name], args)
        rows.append(row)
        if not ok:
            pair_failures.append(pair_name)
    failures = [fn for fn, r in results.items() if r is None or not r.ok]
    for result in results.values():
        if result is not None and (args.verbose or args.teach or not result.ok):
            print(result.summary())
            print()
        if result is not None and result.teaching:
            print(result.teaching)
            print()
    print(format_table(rows, ["Function", "result", "worst error", "failed checks",
                              "diagnosis"]))
    checks = "outputs, gradcheck" + (", gradgradcheck" if args.double else "") + \
        ", adjoint, in-place, lint"
    n = len(functions)
    what = f"{n} Function{'s' if n != 1 else ''} checked ({checks})"
    if pairs:
        what += f", {len(pairs)} forward/backward pair{'s' if len(pairs) != 1 else ''} (gradcheck)"
    bad = len(failures) + len(pair_failures)
    print(f"\n{what}: {n + len(pairs) - bad} passed, {bad} failed")
    return 1 if bad else 0


def _pair_inputs(name, args):
    """Random inputs of a pair from ``--shapes NAME=3x5,5`` (or a plain ``--shapes``)."""
    import numpy as np

    shapes = (args.pair_shapes or {}).get(name, args.shapes)
    if shapes is None:
        raise _UsageError(
            f"the pair {name}_forward/{name}_backward needs input shapes: pass "
            f"--shapes {name}=3x5,5 (one shape per input of {name}_forward)")
    rng = np.random.default_rng(args.seed)
    return [rng.standard_normal(s).astype(args.dtype) for s in shapes]


def _check_pair(name, fwd, bwd, inputs, args):
    """One table row for a NumPy pair, checked by gradcheck_pair (float64)."""
    from .autograd import gradcheck_pair

    label = f"{name} (pair)"
    try:
        report = gradcheck_pair(fwd, bwd, inputs, raise_exception=False, return_report=True)
    except Exception as err:
        print(f"gradcheck_pair({name}_forward, {name}_backward) raised "
              f"{type(err).__name__}: {err}")
        return [label, "ERROR", "-", "-", "the pair raised (see above)"], False
    worst = max((p.max_error for p in report.pairs), default=0.0)
    if not report.passed or args.verbose:
        print(report)
        print()
    return [label, "pass" if report.passed else "FAIL", f"{worst:.2e}",
            "-" if report.passed else "gradcheck",
            ", ".join(report.patterns) or "-"], report.passed


# --- explain --------------------------------------------------------------------------------


def _public_functions():
    """``{op name: [public names]}`` from the ``.ops`` of documented public functions."""
    import chainrule as cr

    found = {}
    for prefix, namespace in (("chainrule", cr), ("chainrule.linalg", cr.linalg)):
        for attr in sorted(dir(namespace)):
            fn = getattr(namespace, attr, None)
            if attr.startswith("_") or not callable(fn) or not hasattr(fn, "ops"):
                continue
            if getattr(fn, "__name__", attr) != attr:  # an alias (concat = cat)
                continue
            for op in fn.ops:
                found.setdefault(op.name, []).append((f"{prefix}.{attr}", fn))
    return found


def _lookup(name):
    """The table ops ``name`` refers to: a table name, a node name or a public function."""
    from ._table import TABLE

    if name in TABLE:
        return [TABLE[name]]
    key = name.lower()
    for op in TABLE.values():
        node = op.node_name.lower()
        if key in (node, node.rstrip("0123456789"), op.name.lower()):
            return [op]
    import chainrule as cr

    for namespace in (cr, cr.linalg):
        fn = getattr(namespace, name, None)
        if callable(fn) and hasattr(fn, "ops"):
            return list(fn.ops)
    return []


def _candidates():
    from ._table import TABLE

    names = list(TABLE) + [op.node_name for op in TABLE.values()]
    return names + [n.split(".")[-1] for ps in _public_functions().values() for n, _ in ps]


def _signature(op):
    inputs = ", ".join(op.inputs)
    attrs = f", *, {', '.join(op.attrs)}" if op.attrs else ""
    return f"{op.name}({inputs}{attrs})"


def _where(op):
    """``file:line`` of the op's first VJP rule, relative to the package's parent."""
    fn = next(iter(op.vjp_rules.values()))[0]
    fn = getattr(fn, "deriv", fn)
    try:
        file = Path(inspect.getsourcefile(fn))
        line = inspect.getsourcelines(fn)[1]
    except (TypeError, OSError):
        return None
    root = Path(__file__).resolve().parents[1]
    try:
        file = file.resolve().relative_to(root)
    except ValueError:
        pass
    return f"{file}:{line}"


def _first_paragraph(doc):
    doc = inspect.cleandoc(doc or "").replace("``", "")
    return " ".join(doc.split("\n\n")[0].split()) if doc else ""


def _kernel(fn):
    """A name for an op's forward kernel: ``numpy.matmul``, or where a lambda is defined."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
    module = getattr(fn, "__module__", None) or "numpy"
    if "<lambda>" in name:
        try:
            path = Path(inspect.getsourcefile(fn)).resolve()
            path = path.relative_to(Path(__file__).resolve().parents[1])
            return f"NumPy kernel (lambda at {path}:{inspect.getsourcelines(fn)[1]})"
        except (TypeError, OSError, ValueError):
            return f"NumPy kernel (lambda in {module})"
    return f"{module}.{name}"


def explain_op(op, width=100):
    """The text ``python -m chainrule explain NAME`` prints for one op.

    Parameters
    ----------
    op : chainrule._table.Op
        An entry of :data:`chainrule.TABLE`.
    width : int
        Line width the formulas are wrapped at.

    Returns
    -------
    str
    """
    label = 12

    def field(key, text, indent=2):
        head = " " * indent + f"{key:<{label}}"
        return textwrap.fill(text, width, initial_indent=head,
                             subsequent_indent=" " * (indent + label + 2),
                             break_on_hyphens=False, break_long_words=False)

    public = _public_functions().get(op.name, [])
    public.sort(key=lambda p: p[0].split(".")[-1] != op.name)  # chainrule.mm first for mm
    kernel = _kernel(op.forward)
    lines = [f"{op.name}  (graph node {op.node_name})", field("signature", _signature(op))]
    kind = ("a sequence of tensors" if op.variadic else
            "a tensor" if len(op.inputs) == 1 else "tensors")
    lines.append(field("inputs", f"{', '.join(op.inputs)} ({kind}, differentiable)"))
    lines.append(field("attrs", ", ".join(op.attrs) + " (not differentiated)"
                       if op.attrs else "none"))
    if op.nout > 1:
        lines.append(field("outputs", f"{op.nout} (differentiable: "
                           f"{', '.join(map(str, op.out_diff))})"))
    doc = next((_first_paragraph(fn.__doc__) for _, fn in public if fn.__doc__), "")
    lines.append(field("forward", kernel + (f": {doc}" if doc else "")))
    lines.append("  VJP (reverse mode, backward: grad is the cotangent of the output, "
                 "one rule per input)")
    for key in op.inputs:
        lines.append(field(key, op.math.get(key, "(no formula text)"), indent=4))
    for key, text in op.math.items():
        if key not in op.inputs and key != "out":
            lines.append(field(key, text, indent=4))
    if op.jvp_rules:
        missing = [k for k in op.inputs if k not in op.jvp_rules]
        note = f" (no JVP rule for {', '.join(missing)})" if missing else ""
        lines.append("  JVP (forward mode: the output tangent from the input tangents)" + note)
        lines.append(field("out", op.math.get("out", "(no formula text)"), indent=4))
    else:
        lines.append(field("JVP", "none: forward-mode AD through this op is not supported"))
    lines.append(field("source", op.source))
    where = _where(op)
    if where:
        lines.append(field("rules in", where))
    if public:
        lines.append(field("public", ", ".join(n for n, _ in public)))
    return "\n".join(lines)


def explain_all(width=100):
    """List the derivative table, one line per op.

    Parameters
    ----------
    width : int
        Lines are cut (with ``...``) to this width.

    Returns
    -------
    str
        A header, then per op its name, inputs and VJP formulas (joined by ``;``), then the
        number of ops.
    """
    from ._table import TABLE

    rows = []
    for op in TABLE.values():
        vjp = "; ".join(op.math.get(k, "") for k in op.inputs if op.math.get(k))
        rows.append([op.name, ", ".join(op.inputs), vjp])
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    room = max(width - w0 - w1 - 4, 20)
    out = [f"{'op':<{w0}}  {'inputs':<{w1}}  VJP", f"{'-' * w0}  {'-' * w1}  {'-' * 3}"]
    for name, inputs, vjp in rows:
        vjp = " ".join(vjp.split())
        if len(vjp) > room:
            vjp = vjp[:room - 3].rstrip() + "..."
        out.append(f"{name:<{w0}}  {inputs:<{w1}}  {vjp}".rstrip())
    out.append(f"\n{len(rows)} ops. `python -m chainrule explain NAME` shows one in full.")
    return "\n".join(out)


def recorded_ops(fn):
    """The primitives a public function records, found by running it on small sample
    inputs (a vector, a matrix, pairs of them, a matrix and an int) and walking the graph
    of its result. Returns ``(op names in recording order, the inputs used)`` or None when
    no sample input suits it."""
    import numpy as np

    import chainrule as cr

    rng = np.random.default_rng(0)

    def vec():
        return cr.tensor(rng.standard_normal(3), requires_grad=True)

    def mat():
        return cr.tensor(rng.standard_normal((3, 3)) + 3 * np.eye(3), requires_grad=True)

    for make in ((vec,), (mat,), (vec, vec), (mat, mat), (mat, lambda: 2), (mat, vec)):
        args = [m() for m in make]
        try:
            out = fn(*args)
        except Exception:  # noqa: BLE001 - not this signature: try the next sample
            continue
        outs = [o for o in (out if isinstance(out, tuple) else (out,))
                if isinstance(o, cr.Tensor) and o.grad_fn is not None]
        if not outs:
            continue
        names, seen, stack = [], set(), [o.grad_fn for o in outs]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            op = getattr(node, "op", None)
            if op is not None and op.name not in names:
                names.append(op.name)
            stack.extend(n for n, _ in node.next_functions if n is not None)
        return names[::-1], args
    return None


def explain_composite(name):
    """``explain`` for a public function that is not a primitive: what it records, with
    those primitives' rules; None when ``name`` is no such function."""
    import chainrule as cr

    from ._table import TABLE

    fn = next((getattr(ns, name) for ns in (cr, cr.linalg, cr.func)
               if callable(getattr(ns, name, None))), None)
    if fn is None or isinstance(fn, type):
        return None
    traced = recorded_ops(fn)
    if traced is None:
        return (f"{name} is not a primitive of the derivative table; no sample input "
                "(vectors, matrices) runs it, so what it records is not shown")
    names, args = traced
    documented = [op.name for op in getattr(fn, "ops", ())]
    if documented and set(names) <= set(documented):
        return None  # a thin wrapper over its documented primitive(s): explain those
    shapes = ", ".join(str(tuple(a.shape)) if isinstance(a, cr.Tensor) else repr(a)
                       for a in args)
    head = (f"{name} is not a primitive: it records {_join(names)} (traced on inputs of "
            f"shapes {shapes}). A composite function appears in the graph as the primitives "
            "it calls, and its gradient is theirs by the chain rule:")
    return "\n\n".join([head] + [explain_op(TABLE[n]) for n in names])


def _is_primitive_name(name):
    from ._table import TABLE

    key = name.lower()
    return name in TABLE or any(key in (op.node_name.lower(), op.name.lower(),
                                        op.node_name.lower().rstrip("0123456789"))
                                for op in TABLE.values())


def _join(names):
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _cmd_explain(args):
    if args.all:
        print(explain_all())
        return 0
    if not args.name:
        print("chainrule explain: name an op (e.g. matmul, MmBackward0) or pass --all",
              file=sys.stderr)
        return USAGE
    traced = None if _is_primitive_name(args.name) else explain_composite(args.name)
    if traced is not None:
        print(traced)
        return 0
    ops = _lookup(args.name)
    if not ops:
        close = difflib.get_close_matches(args.name, sorted(set(_candidates())), n=5,
                                          cutoff=0.6)
        hint = f"; did you mean: {', '.join(close)}?" if close else ""
        print(f"chainrule explain: unknown op {args.name!r}{hint} "
              "(`python -m chainrule explain --all` lists the table)", file=sys.stderr)
        return USAGE
    print("\n\n".join(explain_op(op) for op in ops))
    return 0


# --- derive ---------------------------------------------------------------------------------


def _derive_shapes(text):
    """``X=3x3,A=nxn,x=n`` -> [("X", ("3", "3")), ...] (sizes: ints or symbol names)."""
    shapes = []
    for part in text.split(","):
        name, eq, dims = part.strip().partition("=")
        if not eq or not name.isidentifier():
            raise argparse.ArgumentTypeError(
                f"expected NAME=SHAPE (e.g. X=3x3,x=n), got {part.strip()!r}")
        dims = tuple(d for d in dims.strip().split("x") if d) if dims.strip() not in ("", "()") \
            else ()
        if not all(d.isdigit() or d.isidentifier() for d in dims):
            raise argparse.ArgumentTypeError(f"bad shape for {name}: {part.strip()!r}")
        shapes.append((name, dims))
    return shapes


def _derive_namespace():
    """The names an expression of ``derive`` may use: chainrule's functions (trace, det,
    logdet, exp, sum, norm, einsum, ...) and chainrule.linalg's (inv, solve, ...)."""
    import chainrule
    import chainrule.linalg

    namespace = {k: getattr(chainrule.linalg, k) for k in dir(chainrule.linalg)
                 if not k.startswith("_")}
    namespace.update({k: getattr(chainrule, k) for k in dir(chainrule) if not k.startswith("_")})
    namespace["linalg"] = chainrule.linalg
    return namespace


def _cmd_derive(args):
    try:
        from . import symbolic
    except ImportError as error:  # pragma: no cover - sympy is in the test extra
        print(f"chainrule derive: {error}", file=sys.stderr)
        return USAGE
    names = [name for name, _ in args.shapes]
    try:
        fn = eval(f"lambda {', '.join(names)}: ({args.expression})",  # noqa: S307 - the user's
                  _derive_namespace())                                  # own expression
        result = symbolic.derive(fn, *[dims for _, dims in args.shapes], wrt=args.wrt or None)
    except SyntaxError as error:
        print(f"chainrule derive: cannot parse {args.expression!r}: {error.msg}",
              file=sys.stderr)
        return USAGE
    except (NotImplementedError, ImportError) as error:
        print(f"chainrule derive: {error}", file=sys.stderr)
        return 1
    except (NameError, TypeError, ValueError) as error:
        print(f"chainrule derive: {type(error).__name__}: {error}", file=sys.stderr)
        return USAGE
    print(result)
    if args.latex:
        print(result.latex())
    if args.rules:
        print("rules: " + ", ".join(result.rules))
    if args.check:
        try:
            worst = result.check()
        except AssertionError as error:
            print(error, file=sys.stderr)
            return 1
        print(f"check: the formula matches chainrule's VJP and finite differences "
              f"(max difference {worst:.2g})")
    return 0


# --- parser ---------------------------------------------------------------------------------


def build_parser():
    """Build the argument parser with one subparser per command.

    Returns
    -------
    argparse.ArgumentParser
        Parsing sets ``args.func`` to the handler of the chosen command.
    """
    parser = argparse.ArgumentParser(
        prog="python -m chainrule",
        description="chainrule: tensor-level automatic differentiation on NumPy.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p_demo = sub.add_parser(
        "demo",
        help="train an MLP on the digits data set, gradcheck it, run the examples",
        description="Train a 64-128-10 MLP on scikit-learn's digits (needs scikit-learn: "
                    "pip install 'chainrule[demo]'), gradcheck its loss against its "
                    "parameters and run the custom autograd Function examples. Exits 1 "
                    "when the test accuracy is below 0.95 or a check fails.",
    )
    p_demo.add_argument("--epochs", type=_positive_int, default=demo.DEFAULT_EPOCHS,
                        help=f"training epochs (default: {demo.DEFAULT_EPOCHS})")
    p_demo.add_argument("--quiet", action="store_true",
                        help="print only a one-line result, no progress bar")
    p_demo.add_argument("--no-examples", action="store_true",
                        help="skip running the examples/ scripts")
    p_demo.set_defaults(func=_cmd_demo)

    p_check = sub.add_parser(
        "check",
        help="validate the custom autograd Functions and NumPy forward/backward pairs of a "
             "Python file",
        description="Load a Python file, find the chainrule.autograd.Function subclasses "
                    "and the NumPy pairs <name>_forward/<name>_backward defined in it (or "
                    "the one named after ':'; pairs are gradchecked with random cotangents, "
                    "inputs from --shapes name=...) and validate each Function: what "
                    "backward returns, gradcheck, the adjoint identity with jvp (when "
                    "defined), in-place changes and the lint (tensors kept on ctx, None "
                    "gradients, a backward not linear in grad_output or changing it, outputs "
                    "that are views of inputs); --double adds gradgradcheck. Inputs "
                    "come from a static example_inputs() on the Function, or from --shapes. "
                    "Prints one row per Function and exits 1 when any check fails, 0 when "
                    "all pass, 2 on a usage error.",
    )
    p_check.add_argument("target", metavar="FILE[:NAME]",
                         help="path to a .py file, optionally :FunctionName")
    p_check.add_argument("--double", action="store_true",
                         help="also gradgradcheck (second derivatives through backward)")
    p_check.add_argument("--plot", metavar="PNG",
                         help="pass plot= to gradcheck (with several Functions: "
                              "PNG_<Name>.png each)")
    p_check.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                         help="dtype of the float inputs (default: float64)")
    p_check.add_argument("--seed", type=int, default=0,
                         help="seed of example_inputs()/--shapes and of the random "
                              "cotangents (default: 0)")
    p_check.add_argument("--shapes", type=_shapes_option, metavar="[NAME=]SHAPES",
                         action=_ShapesAction, dest="shapes",
                         help="random normal inputs of these shapes instead of "
                              "example_inputs(), e.g. 3x5,5; for a NumPy pair "
                              "<name>_forward/<name>_backward: --shapes name=3x5,5 "
                              "(repeat the option for several pairs)")
    p_check.add_argument("--teach", action="store_true",
                         help="teaching mode: show each Function's Jacobian, the grad_output "
                              "backward receives and grad_output^T J next to its result")
    p_check.add_argument("-v", "--verbose", action="store_true",
                         help="print every Function's full report, not only failing ones")
    p_check.set_defaults(func=_cmd_check, pair_shapes=None)

    p_explain = sub.add_parser(
        "explain",
        help="show an op's derivative rules from the derivative table",
        description="Print an op's signature, forward, VJP and JVP formulas and source "
                    "from the derivative table. NAME is a table name (matmul, mm), a graph "
                    "node name (MmBackward0) or a public function. --all lists the table.",
    )
    p_explain.add_argument("name", nargs="?", metavar="NAME", help="op to explain")
    p_explain.add_argument("--all", action="store_true",
                           help="list every op: name, inputs, VJP formulas")
    p_explain.set_defaults(func=_cmd_explain)

    p_derive = sub.add_parser(
        "derive",
        help="print the formula of a gradient (VJP) from the derivative table's rules",
        description="Print the VJP formula of EXPRESSION (chainrule's functions by name: "
                    "trace, inv, det, logdet, exp, log, sum, norm, einsum, solve, ...) as a "
                    "SymPy matrix expression, built by chainrule.symbolic from the same "
                    "table rules that compute the numbers (needs SymPy: pip install "
                    "'chainrule[symbolic]'). A scalar expression gives the gradient; a "
                    "matrix one the VJP with cotangent G.",
    )
    p_derive.add_argument("expression", metavar="EXPRESSION",
                          help="e.g. 'trace(X.T @ A @ X)'")
    p_derive.add_argument("--shapes", type=_derive_shapes, required=True,
                          metavar="NAME=SHAPE,...",
                          help="the parameters, in order, with their shapes: X=3x3,A=nxn,x=n "
                               "(sizes are ints or symbol names)")
    p_derive.add_argument("--wrt", action="append", metavar="NAME",
                          help="differentiate with respect to NAME only (repeatable; "
                               "default: every parameter)")
    p_derive.add_argument("--latex", action="store_true", help="also print LaTeX")
    p_derive.add_argument("--rules", action="store_true",
                          help="also print the table ops whose rules were used")
    p_derive.add_argument("--check", action="store_true",
                          help="check the formula against chainrule's numeric VJP and finite "
                               "differences (exit 1 when they differ)")
    p_derive.set_defaults(func=_cmd_derive)
    return parser


def main(argv=None):
    """Run the command line ``argv`` (default: ``sys.argv[1:]``).

    Parameters
    ----------
    argv : list of str, optional

    Returns
    -------
    int
        The exit status: 0 on success, 1 when a check fails, 2 on a usage error.
    """
    args = build_parser().parse_args(argv)
    return args.func(args)
