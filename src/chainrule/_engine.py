"""The reverse walk. Iterative (no recursion, so million-node chains are fine):

1. count, for every node reachable from the roots, how many edges point at it;
2. start from the roots with their seed cotangents; a node runs when every consumer of its
   outputs has handed it a cotangent (its count reaches zero);
3. a node's VJP gives one cotangent per input edge; each is summed back to the input's
   shape (the one place where broadcasting is undone) and added to the buffer of the node
   that made that input. Buffers are popped as soon as they are used.

Leaves are AccumulateGrad nodes: their cotangent is added into ``.grad`` (``backward``) or
captured (``autograd.grad``).
"""

from __future__ import annotations

import numpy as np

from ._node import AccumulateGrad
from ._ns import RAW
from ._tensor import wrap


def sum_to(g, shape):
    """Sum ``g`` over the axes that broadcasting added or stretched, giving ``shape``."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1
    )
    g = g.sum(axis=axes, keepdims=True) if axes else g
    return g.reshape(shape) if lead else g


def _dependencies(roots):
    deps = {}
    seen = set(roots)
    stack = list(roots)
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None:
                continue
            deps[child] = deps.get(child, 0) + 1
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return deps


def _needed(roots, targets):
    """Nodes on some path from a root to a target: only those run in ``autograd.grad``.

    An iterative post-order walk, so each node is decided after all of its children.
    """
    needed = set(targets)
    done = set()
    for root in roots:
        if root in done:
            continue
        stack = [(root, iter(root.next_functions))]
        done.add(root)
        while stack:
            node, children = stack[-1]
            for child, _ in children:
                if child is not None and child not in done:
                    done.add(child)
                    stack.append((child, iter(child.next_functions)))
                    break
            else:
                stack.pop()
                if node not in needed and any(c in needed for c, _ in node.next_functions):
                    needed.add(node)
    return needed


def run_backward(roots, seeds, *, retain_graph=False, accumulate=True, capture=None,
                 only=None):
    """Backpropagate ``seeds`` (arrays) from ``roots`` (pairs ``(node, output_nr)``).

    accumulate : add into leaves' ``.grad`` (restricted to the AccumulateGrad nodes in
        ``only`` when given).
    capture : dict ``{(node, output_nr): slot}``; the full cotangent arriving there is stored
        in the returned list at ``slot`` instead of (or before) going further.
    """
    F = RAW
    root_nodes = list(dict.fromkeys(node for node, _ in roots))
    deps = _dependencies(root_nodes)
    buffers = {}
    for (node, nr), seed in zip(roots, seeds):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node.nout
        buf[nr] = seed if buf[nr] is None else buf[nr] + seed
    captured = [None] * (max(capture.values()) + 1 if capture else 0)
    capture_nodes = {node for node, _ in capture} if capture else ()
    needed = _needed(root_nodes, capture_nodes) if capture is not None and not accumulate \
        else None
    ready = [n for n in root_nodes if deps.get(n, 0) == 0]
    while ready:
        node = ready.pop()
        grads = buffers.pop(node, None) or [None] * node.nout
        if node.pre_hooks:
            _run_pre_hooks(node, grads)
        if node in capture_nodes:
            for nr, g in enumerate(grads):
                slot = capture.get((node, nr))
                if slot is not None and g is not None:
                    captured[slot] = g
        if type(node) is AccumulateGrad:
            if accumulate and (only is None or node in only):
                _accumulate(node.variable, grads[0])
            continue
        if needed is not None and node not in needed:
            continue
        if any(g is not None for g in grads):
            input_grads = node._vjp(grads, F)
        else:
            input_grads = None
        if not retain_graph:
            node._release()
        edges = node.next_functions
        shapes = node.shapes
        for i, (child, nr) in enumerate(edges):
            if child is None:
                continue
            g = input_grads[i] if input_grads is not None else None
            if g is not None:
                if g.shape != shapes[i]:
                    g = sum_to(g, shapes[i])
                buf = buffers.get(child)
                if buf is None:
                    buf = buffers[child] = [None] * child.nout
                old = buf[nr]
                buf[nr] = g if old is None else old + g
            count = deps[child] - 1
            deps[child] = count
            if count == 0:
                ready.append(child)
    return captured


def _run_pre_hooks(node, grads):
    for nr, hooks in node.pre_hooks.items():
        for hook in list(hooks):
            if grads[nr] is None:
                continue
            result = hook(wrap(grads[nr]))
            if result is not None:
                grads[nr] = np.asarray(result._data if hasattr(result, "_data") else result)


def _accumulate(var, g):
    if g is None:
        return
    if var._grad is None:
        # A fresh, writable array of the leaf's dtype: never an alias of another buffer.
        var._grad = wrap(np.array(g, dtype=var._data.dtype))
    else:
        gd = var._grad._data
        if isinstance(gd, np.ndarray) and gd.flags.writeable and gd.shape == np.shape(g):
            np.add(gd, g, out=gd, casting="same_kind")
        else:
            var._grad = wrap(np.asarray(gd + g, dtype=var._data.dtype))
