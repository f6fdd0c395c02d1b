"""chainrule.viz.make_dot: the Graphviz picture of a graph (built without Graphviz's ``dot``;
rendered with it where it is installed)."""

import html
import re
import shutil
from collections import Counter

import numpy as np
import pytest

import chainrule as cr

pytest.importorskip(
    "graphviz", reason="the graphviz Python package is not installed (pip install graphviz, "
    "or the chainrule[test] extra)")

from chainrule.viz import LEAF_COLOR, OUTPUT_COLOR, SAVED_COLOR, make_dot  # noqa: E402

needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None,
    reason="Graphviz's dot executable is not on PATH (apt-get install graphviz; `make test` "
    "installs it where it can)")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# --- reading a Digraph back -------------------------------------------------------------------

def _html_label(attrs):
    """The HTML-like label of a node statement (balanced <...> after ``label=``)."""
    start = attrs.index("label=<") + len("label=")
    depth = 0
    for j in range(start, len(attrs)):
        depth += {"<": 1, ">": -1}.get(attrs[j], 0)
        if depth == 0:
            return attrs[start + 1:j]
    raise AssertionError(f"unbalanced label in {attrs!r}")


def _text(label):
    """The text lines of an HTML label (tags dropped, table rows joined by single spaces)."""
    label = re.sub(r"</TD>\s*<TD[^>]*>", " ", label)
    parts = re.split(r"<BR/>|</TR>", label)
    lines = [html.unescape(re.sub(r"<[^>]+>", "", p)).strip() for p in parts]
    return [line for line in lines if line]


def _fill(attrs):
    m = re.search(r"\bfillcolor=(\w+)", attrs)
    return m[1] if m else "lightgrey"


class Picture:
    """The nodes (id -> (text lines, fill colour)) and edges of a Digraph."""

    def __init__(self, dot):
        self.nodes, self.edges = {}, []
        for entry in dot.body:
            m = re.match(r"\s*(\w+) -> (\w+)(?: \[(.*)\])?\s*$", entry, re.S)
            if m:
                self.edges.append((m[1], m[2], m[3] or ""))
                continue
            m = re.match(r"\s*(\w+) \[(.*)\]\s*$", entry, re.S)
            if m:
                self.nodes[m[1]] = (_text(_html_label(m[2])), _fill(m[2]))

    def of_color(self, color):
        return {k: lines for k, (lines, fill) in self.nodes.items() if fill == color}

    def ops(self):
        return Counter(lines[0] for lines in self.of_color("lightgrey").values())

    def graph_edges(self):
        """Edges between graph nodes and to outputs (not the dotted saved-value links)."""
        return [e for e in self.edges if "dotted" not in e[2]]

    def saved(self):
        """{op node id: {saved name: description}} from the orange tables."""
        tables = self.of_color(SAVED_COLOR)
        out = {}
        for tail, head, _ in self.edges:
            if head in tables:
                rows = {}
                for line in tables[head]:
                    name, _, desc = line.partition(" ")
                    rows[name] = desc.strip()
                out[tail] = rows
        return out


# --- graphs -----------------------------------------------------------------------------------

def mlp(dtype=cr.float32):
    """A 4-8-3 MLP's loss (2 layers, relu, cross_entropy) and its named parameters."""
    rng = np.random.default_rng(0)
    x = cr.tensor(rng.standard_normal((5, 4)), dtype=dtype)
    y = cr.tensor(np.array([0, 2, 1, 1, 0]))
    params = {
        "W1": cr.tensor(rng.standard_normal((4, 8)), dtype=dtype, requires_grad=True),
        "b1": cr.zeros(8, dtype=dtype, requires_grad=True),
        "W2": cr.tensor(rng.standard_normal((8, 3)), dtype=dtype, requires_grad=True),
        "b2": cr.zeros(3, dtype=dtype, requires_grad=True),
    }
    p = params
    logits = cr.relu(x @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]
    return cr.cross_entropy(logits, y), params


class MatVec(cr.autograd.Function):
    @staticmethod
    def forward(ctx, A, x):
        ctx.save_for_backward(A, x)
        ctx.note = "A @ x"
        return A @ x

    @staticmethod
    def backward(ctx, g):
        A, x = ctx.saved_tensors
        return cr.outer(g, x), A.t() @ g


# --- tests ------------------------------------------------------------------------------------

def test_mlp_graph_nodes_leaves_and_edges():
    loss, params = mlp()
    pic = Picture(make_dot(loss, params=params))
    assert pic.ops() == {"MmBackward0": 2, "AddBackward0": 2, "ReluBackward0": 1,
                         "CrossEntropyBackward0": 1}
    leaves = sorted(pic.of_color(LEAF_COLOR).values())
    assert leaves == [["W1", "(4, 8) float32"], ["W2", "(8, 3) float32"],
                      ["b1", "(8,) float32"], ["b2", "(3,) float32"]]
    assert list(pic.of_color(OUTPUT_COLOR).values()) == [["output", "() float32"]]
    # What each node produced: shape and dtype under its name.
    produced = sorted(lines for lines in pic.of_color("lightgrey").values())
    assert produced == [["AddBackward0", "(5, 3) float32"], ["AddBackward0", "(5, 8) float32"],
                        ["CrossEntropyBackward0", "() float32"],
                        ["MmBackward0", "(5, 3) float32"], ["MmBackward0", "(5, 8) float32"],
                        ["ReluBackward0", "(5, 8) float32"]]
    # W1->mm, mm->add, b1->add, add->relu, relu->mm, W2->mm, mm->add, b2->add, add->ce,
    # ce->output; x and y need no grad and are not drawn.
    assert len(pic.graph_edges()) == 10
    assert len(pic.nodes) == 11
    assert not pic.of_color(SAVED_COLOR)


def test_edges_follow_the_graph():
    loss, params = mlp()
    pic = Picture(make_dot(loss, params=params))
    title = {k: lines[0] for k, (lines, _) in pic.nodes.items()}
    pairs = Counter((title[a], title[b]) for a, b, _ in pic.graph_edges())
    assert pairs == {("W1", "MmBackward0"): 1, ("MmBackward0", "AddBackward0"): 2,
                     ("b1", "AddBackward0"): 1, ("AddBackward0", "ReluBackward0"): 1,
                     ("ReluBackward0", "MmBackward0"): 1, ("W2", "MmBackward0"): 1,
                     ("b2", "AddBackward0"): 1, ("AddBackward0", "CrossEntropyBackward0"): 1,
                     ("CrossEntropyBackward0", "output"): 1}


def test_unnamed_leaves_show_shape_and_dtype():
    loss, params = mlp(cr.float64)
    pic = Picture(make_dot(loss))
    assert sorted(pic.of_color(LEAF_COLOR).values()) == [
        ["(3,) float64"], ["(4, 8) float64"], ["(8, 3) float64"], ["(8,) float64"]]


def test_show_saved_lists_each_nodes_saved_values():
    loss, params = mlp()
    pic = Picture(make_dot(loss, params=params, show_saved=True))
    title = {k: lines[0] for k, (lines, _) in pic.nodes.items()}
    saved = {}
    for node, rows in pic.saved().items():
        saved.setdefault(title[node], []).append(rows)
    # x @ W1 needs only x for W1's gradient; h @ W2 saves both operands.
    assert sorted(saved["MmBackward0"], key=len) == [
        {"self": "(5, 4) float32"},
        {"self": "(5, 8) float32", "mat2": "(8, 3) float32"}]
    assert saved["ReluBackward0"] == [{"out": "(5, 8) float32"}]
    assert saved["CrossEntropyBackward0"] == [
        {"self": "(5, 3) float32", "target": "(5,) int64", "reduction": "= 'mean'",
         "cdim": "= 1"}]
    assert "AddBackward0" not in saved  # its rules need nothing
    # The names are exactly the plan's, node by node.
    expected, stack, seen = Counter(), [loss.grad_fn], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if hasattr(node, "plan") and node.plan.names:
            expected[(node.name(), node.plan.names)] += 1
        stack.extend(n for n, _ in node.next_functions if n is not None)
    got = Counter((title[k], tuple(rows)) for k, rows in pic.saved().items())
    assert got == expected
    # Saved tables do not change the graph itself.
    assert len(pic.graph_edges()) == 10


def test_show_saved_after_backward_says_freed():
    loss, params = mlp()
    loss.backward(retain_graph=True)
    assert len(Picture(make_dot(loss, show_saved=True)).saved()) == 4
    loss.backward()
    dot = make_dot(loss, params=params, show_saved=True)
    assert not Picture(dot).saved()
    assert "freed by backward()" in dot.source and "retain_graph=True" in dot.source
    assert Picture(dot).ops()["MmBackward0"] == 2  # the graph itself is still drawn


def test_deep_chain_builds_without_recursion():
    x = cr.randn(3, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 1.001
    dot = make_dot(y.sum(), params={"x": x}, show_saved=True)
    pic = Picture(dot)
    assert pic.ops() == {"MulBackward0": 5000, "SumBackward0": 1}
    assert len(pic.graph_edges()) == 5002  # x -> mul -> ... -> mul -> sum -> output
    assert len(pic.of_color(SAVED_COLOR)) == 5001
    assert pic.of_color(LEAF_COLOR) == {"n0": ["x", "(3,) float64"]}


def test_multiple_outputs_share_their_history():
    a = cr.randn(3, 3, requires_grad=True)
    h = a.tanh()
    out1, out2 = h.sum(), (h * h).mean()
    pic = Picture(make_dot((out1, out2), params={"a": a, "total": out1}))
    assert pic.ops() == {"TanhBackward0": 1, "SumBackward0": 1, "MulBackward0": 1,
                         "MeanBackward0": 1}
    assert sorted(pic.of_color(OUTPUT_COLOR).values()) == [
        ["output 1", "() float64"], ["total", "() float64"]]
    assert len(pic.of_color(LEAF_COLOR)) == 1
    # a->tanh, tanh->sum, tanh->mul (twice: h * h), mul->mean, sum->out, mean->out
    assert len(pic.graph_edges()) == 7
    # A list works too, and so does an op's several outputs (edges say which one).
    pic = Picture(make_dot([out1, a.max(0)]))
    labels = [attrs for _, _, attrs in pic.graph_edges() if "label" in attrs]
    # the output index of the values of max; every other edge names the input it feeds
    assert [a for a in labels if "[" in a] == ['label="[0]"']
    assert {a for a in labels if "[" not in a} == {"label=self"}
    outs = sorted(pic.of_color(OUTPUT_COLOR).values())
    assert outs[-1] == ["output 2", "(3,) int64", "no graph: requires_grad=False"]
    assert any(lines[0] == "MaxBackward0" and "[0] (3,) float64" in lines
               for lines in pic.of_color("lightgrey").values())


def test_custom_function_node():
    A = cr.randn(4, 3, requires_grad=True)
    x = cr.randn(3, requires_grad=True)
    loss = MatVec.apply(A, x.float().double()).sum()
    pic = Picture(make_dot(loss, params={"A": A, "x": x}, show_saved=True))
    nodes = {lines[0]: lines for lines in pic.of_color("lightgrey").values()}
    assert nodes["MatVecBackward"] == ["MatVecBackward", "(4,) float64"]
    # x.float() then .double(): the dtypes come from the saved src_dtype and the Function.
    casts = sorted(lines for lines in pic.of_color("lightgrey").values()
                   if lines[0] == "ToCopyBackward0")
    assert casts == [["ToCopyBackward0", "(3,) float32"], ["ToCopyBackward0", "(3,) float64"]]
    title = {k: lines[0] for k, (lines, _) in pic.nodes.items()}
    saved = {title[k]: rows for k, rows in pic.saved().items()}
    assert saved["MatVecBackward"] == {"saved_tensors[0]": "(4, 3) float64",
                                       "saved_tensors[1]": "(3,) float64",
                                       "note": "= 'A @ x'"}


def test_bad_arguments():
    x = cr.randn(2, requires_grad=True)
    with pytest.raises(TypeError, match="graph of a Tensor"):
        make_dot(np.ones(2))
    with pytest.raises(TypeError, match="graph of a Tensor"):
        make_dot((x.sum(), 3.0))
    with pytest.raises(TypeError, match="'w' is a ndarray"):
        make_dot(x.sum(), params={"w": np.ones(2)})
    with pytest.raises(ValueError, match="at least one"):
        make_dot(())


@needs_dot
def test_render_png_and_svg(tmp_path):
    loss, params = mlp()
    path = make_dot(loss, params=params, show_saved=True).render(
        tmp_path / "mlp", format="png", cleanup=True)
    data = open(path, "rb").read()
    assert path.endswith(".png") and data[:8] == PNG_MAGIC and len(data) > 1000
    svg = make_dot(loss, params=params).pipe(format="svg").decode()
    assert "<svg" in svg and "MmBackward0" in svg and "W1" in svg
