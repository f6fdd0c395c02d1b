"""Pictures of the graph behind a tensor, drawn with Graphviz (in the manner of torchviz).

:func:`make_dot` returns a :class:`graphviz.Digraph`; rendering it to SVG or PNG needs
Graphviz's ``dot`` program (Debian/Ubuntu: ``apt-get install graphviz``), building it does not.

How the picture reads, top to bottom in the direction the values flowed:

- light blue boxes: leaves (the tensors ``backward`` accumulates ``.grad`` into), labelled by
  their name in ``params`` and their shape and dtype;
- grey boxes: graph nodes (``MmBackward0``, ``ReluBackward0``, a custom Function's
  ``<Name>Backward``), with the shape and dtype of what the op produced;
- green boxes: the output tensor(s) passed to :func:`make_dot`;
- orange boxes (``show_saved=True``): what each node saved for backward, joined to it by a
  dotted line.
"""

from __future__ import annotations

import html
from collections.abc import Mapping

import numpy as np

from ._node import AccumulateGrad, OpNode
from ._tensor import Tensor
from .autograd.function import FunctionNode

__all__ = ["make_dot"]

LEAF_COLOR = "lightblue"
OUTPUT_COLOR = "darkolivegreen1"
SAVED_COLOR = "orange"
NODE_COLOR = "lightgrey"
# Saved values that are not arrays (attributes such as ``dim``) are shown by their repr, cut
# to this many characters.
_MAX_REPR = 40
# Only the first few arrays of a saved list (``cat``/``einsum`` operands) are listed.
_MAX_LIST = 6


def make_dot(tensor, params=None, show_saved=False, show_rules=False):
    """Draw the autograd graph behind ``tensor`` as a Graphviz digraph.

    Parameters
    ----------
    tensor : Tensor or tuple/list of Tensor
        The output(s) whose history is drawn (for example a loss). Each becomes a green box
        at the bottom; outputs sharing history share its nodes.
    params : dict of str to Tensor, optional
        Names for tensors, as in torchviz (``dict(W1=W1, b1=b1)``, or a list of
        ``(name, tensor)`` pairs). Leaves found in the graph are labelled by their name; an
        output that is in ``params`` is too. Leaves without a name show their shape and dtype
        only.
    show_saved : bool
        Also draw what each node saved for backward (``node.plan.names`` of a primitive,
        ``ctx.saved_tensors`` and ``ctx`` attributes of a custom Function): arrays by shape
        and dtype, other values (``dim``, ``keepdim``, ...) by their value, in one orange
        table beside the node. When ``backward()`` already freed them, a note under the
        graph says so.
    show_rules : bool
        Print each primitive's VJP formulas (its table entry's math text, one line per
        input, e.g. ``self: grad_A = grad @ B^T``) in its box.

    Returns
    -------
    graphviz.Digraph
        One box per graph node, named by its op (``MmBackward0``) with the shape and dtype
        it produced, and one arrow per edge, from the producing node to the node that used
        it, labelled with the name of the input it feeds (``self``, ``mat2``); a node with
        several outputs adds the output index (``[1] self``).
        Render it with ``.render(filename, format="png")`` or ``.pipe(format="svg")`` (these
        need Graphviz's ``dot``), or show it in a notebook.

    Raises
    ------
    ImportError
        When the ``graphviz`` Python package is not installed (``pip install graphviz``).
    TypeError
        When ``tensor`` (or an entry of it) or a value of ``params`` is not a Tensor.

    Notes
    -----
    The graph is walked iteratively, each node once, so graphs thousands of ops deep are
    drawn (Graphviz itself is slow to lay out very large graphs). Shapes come from the
    input shapes each node recorded for its edges; dtypes from the saved values, the leaves,
    the outputs and a custom Function's metadata, and otherwise from NumPy's type promotion
    of a node's inputs. A dtype that cannot be known that way is left out.

    Examples
    --------
    >>> import chainrule as cr
    >>> from chainrule.viz import make_dot
    >>> x = cr.randn(8, 4)
    >>> W = cr.randn(4, 3, requires_grad=True)
    >>> b = cr.zeros(3, requires_grad=True)
    >>> loss = (x @ W + b).relu().sum()
    >>> dot = make_dot(loss, params={"W": W, "b": b})
    >>> type(dot).__name__
    'Digraph'
    >>> all(op in dot.source for op in ("MmBackward0", "AddBackward0", "ReluBackward0"))
    True
    >>> dot.render("graph", format="png")  # needs Graphviz's dot  # doctest: +SKIP
    'graph.png'

    With ``show_saved=True`` the ``MmBackward0`` box gets an orange table beside it with
    ``self  (8, 4) float64``: the only value its rule needs, as ``x`` needs no gradient.

    >>> "(8, 4) float64" in make_dot(loss, show_saved=True).source
    True
    """
    try:
        import graphviz
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "chainrule.viz.make_dot needs the graphviz Python package: pip install graphviz "
            "(it comes with chainrule[demo] and chainrule[test]); rendering to PNG or SVG "
            "also needs Graphviz's dot program (apt-get install graphviz)"
        ) from e

    outputs = _as_outputs(tensor)
    names = _param_names(params)
    nodes = _walk([t._grad_fn for t in outputs if t._grad_fn is not None])
    meta = _output_meta(nodes, outputs)

    dot = graphviz.Digraph(
        graph_attr={"rankdir": "TB", "nodesep": "0.25", "ranksep": "0.35",
                    "fontname": "Helvetica"},
        node_attr={"shape": "box", "style": "filled,rounded", "fillcolor": NODE_COLOR,
                   "fontname": "Helvetica", "fontsize": "12", "margin": "0.12,0.05",
                   "height": "0.3", "penwidth": "0.8"},
        edge_attr={"arrowsize": "0.7", "color": "gray35", "fontname": "Helvetica",
                   "fontsize": "9"},
    )
    ids = {id(node): f"n{i}" for i, node in enumerate(nodes)}
    freed = 0
    for node in nodes:
        nid = ids[id(node)]
        if type(node) is AccumulateGrad:
            var = node.variable
            dot.node(nid, _label(names.get(id(var)), [_describe(var.shape, var.dtype)]),
                     fillcolor=LEAF_COLOR, style="filled")
            continue
        nout = getattr(node, "nout", 1)
        used = [nr for nr in range(nout) if meta.get((id(node), nr), (None,))[0] is not None]
        if nout == 1:
            lines = [_describe(*meta[(id(node), 0)])] if used else []
        else:
            lines = [f"[{nr}] {_describe(*meta[(id(node), nr)])}" for nr in used]
        attrs = {}
        tooltip = _tooltip(node)
        if tooltip:
            attrs["tooltip"] = tooltip
        if show_rules:
            lines += _rule_lines(node)
        dot.node(nid, _label(node.name(), lines), **attrs)
        inputs = _input_names(node)
        for k, (nxt, nr) in enumerate(node.next_functions):
            if nxt is None:
                continue
            text = " ".join(([f"[{nr}]"] if getattr(nxt, "nout", 1) > 1 else [])
                            + ([inputs[k]] if k < len(inputs) else []))
            dot.edge(ids[id(nxt)], nid, **({"label": text} if text else {}))
        if show_saved and not _add_saved(dot, nid, node):
            freed += 1

    many = len(outputs) > 1
    for j, t in enumerate(outputs):
        oid = f"out{j}"
        title = names.get(id(t)) or ("output" + (f" {j}" if many else ""))
        lines = [_describe(t.shape, t.dtype)]
        if t._grad_fn is None:
            lines.append("leaf" if t._requires_grad else "no graph: requires_grad=False")
        dot.node(oid, _label(title, lines), fillcolor=OUTPUT_COLOR, style="filled")
        if t._grad_fn is not None:
            src = t._grad_fn
            label = {"label": f"[{t._output_nr}]"} if getattr(src, "nout", 1) > 1 else {}
            dot.edge(ids[id(src)], oid, **label)
    if freed:
        dot.attr(label=f"saved values of {freed} node{'s' if freed > 1 else ''} were freed by "
                       "backward(); pass retain_graph=True to keep them",
                 labelloc="b", fontsize="10", fontcolor="darkorange3")
    return dot


def _input_names(node):
    """The names of a node's inputs, one per edge: the op's (``self``, ``mat2``), a
    variadic op's ``tensors[i]``, or ``input i`` for a custom Function."""
    op = getattr(node, "op", None) if hasattr(node, "plan") else None
    n = len(node.next_functions)
    if op is None:
        return [f"input {i}" for i in range(n)] if n > 1 else [""] * n
    if op.variadic:
        return [f"{op.inputs[0]}[{i}]" for i in range(n)]
    return list(op.inputs)


def _rule_lines(node):
    """Each input's VJP formula (the table's math text) for a primitive's box."""
    op = getattr(node, "op", None) if hasattr(node, "plan") else None
    if op is None:
        return []
    return [f"{name}: {op.math[name]}" for name in op.inputs if name in op.math]


# --- walking the graph ----------------------------------------------------------------------

def _as_outputs(tensor):
    """The output tensors, in order: ``tensor`` itself, or the entries of (nested) tuples and
    lists of them (an op's several outputs, such as ``x.max(0)``, come as a tuple)."""
    outputs = []
    stack = [tensor]
    while stack:
        t = stack.pop()
        if isinstance(t, (tuple, list)):
            stack.extend(reversed(t))
        elif isinstance(t, Tensor):
            outputs.append(t)
        else:
            raise TypeError(f"make_dot draws the graph of a Tensor (or a tuple or list of "
                            f"Tensors); got a {type(t).__name__}")
    if not outputs:
        raise ValueError("make_dot needs at least one output tensor")
    return outputs


def _param_names(params):
    if params is None:
        return {}
    items = params.items() if isinstance(params, Mapping) else params
    names = {}
    for name, t in items:
        if not isinstance(t, Tensor):
            raise TypeError(f"params must map names to Tensors; {name!r} is a "
                            f"{type(t).__name__}")
        names.setdefault(id(t), str(name))
    return names


def _walk(roots):
    """Every node reachable from ``roots``, once each, inputs before the nodes that use them.

    Iterative depth-first search (a deep graph would overflow Python's recursion limit).
    """
    order = []
    seen = set()
    stack = [(root, False) for root in reversed(roots)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for nxt, _ in reversed(node.next_functions):
            if nxt is not None and id(nxt) not in seen:
                stack.append((nxt, False))
    return order


def _output_meta(nodes, outputs):
    """``{(id(node), output_nr): [shape, dtype]}`` for every output of a node that is used.

    Shapes: the input shapes each consumer recorded per edge (``node.shapes``). Dtypes: exact
    where a value is at hand (saved arrays, leaves, outputs, Function metadata), else NumPy's
    promotion of the node's input dtypes (ops compute in their inputs' dtype).
    """
    meta = {}

    def note(node, nr, shape=None, dtype=None):
        entry = meta.setdefault((id(node), nr), [None, None])
        if shape is not None and entry[0] is None:
            entry[0] = tuple(shape)
        if dtype is not None and entry[1] is None:
            entry[1] = np.dtype(dtype)

    for t in outputs:
        if t._grad_fn is not None:
            note(t._grad_fn, t._output_nr, t.shape, t.dtype)
    for node in nodes:
        if type(node) is AccumulateGrad:
            note(node, 0, node.variable.shape, node.variable.dtype)
            continue
        shapes = node.shapes or ()
        for i, (nxt, nr) in enumerate(node.next_functions):
            if nxt is not None:
                note(nxt, nr, shapes[i] if i < len(shapes) else None)
        if isinstance(node, FunctionNode):
            for nr, m in enumerate(node.output_meta):
                if m is not None:
                    note(node, nr, *m)
            for (nxt, nr), m in zip(node.next_functions, node.input_meta):
                if nxt is not None and m is not None:
                    note(nxt, nr, None, m[1])
        elif isinstance(node, OpNode) and node.saved:
            _note_saved_dtypes(node, note)
    # Dtypes not seen: promote the inputs' dtypes, inputs first (``nodes`` is in that order).
    for node in nodes:
        if not isinstance(node, OpNode):
            continue
        nout = getattr(node, "nout", 1)
        missing = [nr for nr in range(nout)
                   if (id(node), nr) in meta and meta[(id(node), nr)][1] is None]
        if not missing or node.plan.op.name == "_to_copy":
            continue
        dtypes = [meta.get((id(nxt), nr), (None, None))[1]
                  for nxt, nr in node.next_functions if nxt is not None]
        if dtypes and all(d is not None for d in dtypes):
            for nr in missing:
                meta[(id(node), nr)][1] = np.result_type(*dtypes)
    return meta


def _note_saved_dtypes(node, note):
    plan = node.plan
    op = plan.op
    for name, value in zip(plan.names, node.saved):
        if name == "out":
            outs = value if getattr(node, "nout", 1) > 1 else (value,)
            for nr, o in enumerate(outs):
                if isinstance(o, np.ndarray):
                    note(node, nr, None, o.dtype)
        elif op.name == "_to_copy" and name in ("dtype", "src_dtype"):
            if name == "dtype":
                note(node, 0, None, value)
            elif node.next_functions[0][0] is not None:
                note(*node.next_functions[0], None, value)
        elif name in op.inputs:
            if op.variadic:
                pairs = zip(node.next_functions, value)
            else:
                pairs = [(node.next_functions[op.inputs.index(name)], value)]
            for (nxt, nr), v in pairs:
                if nxt is not None and isinstance(v, np.ndarray):
                    note(nxt, nr, None, v.dtype)


# --- labels -----------------------------------------------------------------------------------

def _describe(shape, dtype=None):
    text = "(?)" if shape is None else str(tuple(shape))
    return text if dtype is None else f"{text} {np.dtype(dtype)}"


def _label(title, lines):
    """An HTML-like Graphviz label: a bold title over smaller grey lines."""
    parts = []
    if title:
        parts.append(f"<B>{html.escape(str(title))}</B>")
    parts.extend(f'<FONT POINT-SIZE="10" COLOR="gray20">{html.escape(line)}</FONT>'
                 for line in lines)
    return "<" + "<BR/>".join(parts or [" "]) + ">"


def _short(value):
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return str(np.dtype(value))
    text = repr(value)
    return text if len(text) <= _MAX_REPR else text[:_MAX_REPR - 3] + "..."


def _saved_lines(value):
    """Lines describing one saved value: arrays by shape and dtype, others by value."""
    if isinstance(value, (np.ndarray, Tensor)):
        return [_describe(value.shape, value.dtype)]
    if isinstance(value, (list, tuple)) and value and all(
            isinstance(v, (np.ndarray, Tensor)) or v is None for v in value):
        lines = [f"[{i}] " + ("None" if v is None else _describe(v.shape, v.dtype))
                 for i, v in enumerate(value[:_MAX_LIST])]
        if len(value) > _MAX_LIST:
            lines.append(f"... {len(value) - _MAX_LIST} more")
        return lines
    return [f"= {_short(value)}"]


def _saved_items(node):
    """``(name, value)`` of what ``node`` saved, or None when backward freed it."""
    if isinstance(node, OpNode):
        if node.saved is None:
            return None
        return list(zip(node.plan.names, node.saved))
    if isinstance(node, FunctionNode):
        ctx = node.ctx
        if ctx._freed:
            return None
        items = [(f"saved_tensors[{i}]", t) for i, t in enumerate(ctx._saved)]
        items += [(k, v) for k, v in vars(ctx).items()
                  if not k.startswith("_") and k not in ("needs_input_grad", "materialize_grads")]
        return items
    return []


def _add_saved(dot, nid, node):
    """One orange table of what ``node`` saved, beside it, joined by a dotted line.

    Returns False when backward already freed the node's saved values (nothing is drawn).
    """
    items = _saved_items(node)
    if items is None:
        return False
    rows = []
    for name, value in items:
        lines = _saved_lines(value)
        rows.append((name, lines[0]))
        rows.extend(("", line) for line in lines[1:])
    if not rows:
        return True
    cells = "".join(
        f'<TR><TD ALIGN="LEFT">{f"<B>{html.escape(name)}</B>" if name else ""}</TD>'
        f'<TD ALIGN="LEFT">{html.escape(text)}</TD></TR>' for name, text in rows)
    label = (f'<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">{cells}'
             "</TABLE>>")
    sid = f"{nid}_saved"
    dot.node(sid, label, fillcolor=SAVED_COLOR, style="filled", fontsize="10",
             margin="0.05,0.02", height="0.2", tooltip=f"saved by {node.name()}")
    # The same rank puts the table beside its node; the invisible cluster around the two
    # keeps other nodes from coming between them in a crowded rank. (Written as DOT text:
    # Digraph.subgraph() is slow for thousands of nodes; the ids need no quoting.)
    dot.body.append(f"\tsubgraph cluster_{sid} {{ peripheries=0 margin=0 "
                    f"{{ rank=same {nid} {sid} }} }}\n")
    dot.edge(nid, sid, style="dotted", dir="none", color="darkorange3")
    return True


def _tooltip(node):
    """The op's formulas from the derivative table (shown on hover in SVG)."""
    if not isinstance(node, OpNode):
        return None
    math = node.plan.op.math
    return "\n".join(f"{k}: {v}" for k, v in math.items())
