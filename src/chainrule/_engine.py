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

import threading
import weakref

import numpy as np

from . import _node
from ._node import AccumulateGrad, MultiOpNode, OpNode, Scattered
from ._ns import BATCHING, PER_DEVICE, RAW, NotBatchable, differentiable, raw_for
from ._state import STATE, enable_grad
from ._tensor import Tensor, wrap
from .backend import backend_of

_ndarray = np.ndarray


class _Hooks:
    """Filled by higher layers (autograd.anomaly): ``check_node(node, input_grads,
    grad_output)`` runs after each node's VJP in anomaly mode (before its saved values are
    freed); ``in_backward()`` is a context manager around a
    backward pass in anomaly mode."""

    check_node = None
    in_backward = None


HOOKS = _Hooks()

#: Set once a tensor in a graph was moved to another device (``Tensor.to`` of a tensor that
#: requires grad, recorded by chainrule.autograd.function): from then on a backward pass
#: runs each node's rule with the namespace of its cotangent's backend and device (one
#: graph may then hold nodes on the CPU and on a GPU). Until then the walk keeps the one
#: namespace it was given, at no cost per node.
CROSS_DEVICE = [False]


def _namespace_of(g, graph, F):
    """The rule namespace for a node whose cotangent is ``g``: that of ``g``'s backend and
    device (``F`` itself inside vmap, for lazy data, or when ``g`` is no array)."""
    d = g._data if graph else g
    if d.__class__ is np.ndarray:  # the common case: NumPy's
        return differentiable() if graph else RAW
    try:
        b = backend_of(d)
    except TypeError:
        return F
    if b.lazy or b.name == "vmap":
        return F
    dev = getattr(d, "device", None)
    return differentiable(b, dev) if graph else raw_for(b, dev)


def sum_to(g, shape, F=RAW):
    """Sum ``g`` over the axes that broadcasting added or stretched, giving ``shape``.

    The result is a fresh array (never a view of ``g``) unless no sum was needed. With the
    differentiable namespace ``F`` the sums are recorded (``create_graph=True``).
    """
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    if lead < 0:  # the input had extra leading 1s (a value written with x[:1] = v, v (1, 1))
        g = F.reshape(g, (1,) * -lead + tuple(g.shape))
    elif lead:
        g = F.sum(g, tuple(range(lead)), False)
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return F.sum(g, stretched, True) if stretched else g


_node.ENGINE.sum_to = sum_to  # Node.__call__ (grad_fn(g)) sums back to input shapes too


def _dependencies(roots):
    """For each node reachable from ``roots``: the number of edges pointing at it."""
    deps = {}
    get = deps.get
    root_set = set(roots)
    stack = list(roots)
    push, pop = stack.append, stack.pop
    while stack:
        for child, _ in pop().next_functions:
            if child is not None:
                count = get(child)
                if count is None:
                    deps[child] = 1
                    if child not in root_set:  # roots are already on the stack
                        push(child)
                else:
                    deps[child] = count + 1
    return deps


def _sinks_targeted(deps, roots, targets):
    """Whether every sink (a node with no input to pass cotangents to, such as a leaf's
    AccumulateGrad) is in ``targets``: then every node reachable leads to a target."""
    for node in (*roots, *deps):
        if node not in targets and all(c is None for c, _ in node.next_functions):
            return False
    return True


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


def run_backward(roots, seeds, F, *, retain_graph=False, accumulate=True, capture=None,
                 only=None, create_graph=False, batched=False, owned=None):
    """Backpropagate ``seeds`` (arrays; Tensors with create_graph) from ``roots`` (pairs
    ``(node, output_nr)``), running the rules with namespace ``F``.

    F : the namespace the rules compute with, chosen by the caller (the engine never picks
        one): ``chainrule._ns.RAW`` for a first-order pass, ``_ns.differentiable()`` with
        create_graph, ``_ns.batched()`` for a batch of cotangents.
    accumulate : add into leaves' ``.grad`` (restricted to the AccumulateGrad nodes in
        ``only`` when given).
    capture : dict ``{(node, output_nr): slot}``; the full cotangent arriving there is stored
        in the returned list at ``slot``. With ``accumulate=False`` only the nodes between
        the roots and the captured ones run.
    owned : a set the walk fills with the slots of captured cotangents that are arrays its
        rules made (no seed, saved value or view of one, and no other slot's array), which
        the caller may hand out without copying.

    create_graph : run the rules on Tensors (``F`` is the differentiable namespace) with
        grad mode on, so the cotangents (and ``.grad``) carry a graph that can be
        differentiated again.

    batched : the seeds are batches of cotangents along a leading axis (``F`` is the
        batched namespace) and captured cotangents are batched too: all rows of a Jacobian
        in one pass. Only with ``capture`` and ``accumulate=False``, without create_graph.
        A custom Function or a hook in the way raises NotImplementedError saying so.

    A node's buffer is its cotangent (single-output nodes) or a list of them, ``None`` for
    a zero that never arrived.
    """
    if batched:
        if create_graph or accumulate:
            raise ValueError("run_backward(batched=True) needs accumulate=False (use capture) "
                             "and create_graph=False")
        return _walk(roots, seeds, retain_graph, False, capture, only, F, "batched")
    if STATE.anomaly:  # ops that run now belong to a backward pass (for the messages)
        with HOOKS.in_backward():
            return _run(roots, seeds, F, retain_graph, accumulate, capture, only, create_graph,
                        owned)
    return _run(roots, seeds, F, retain_graph, accumulate, capture, only, create_graph, owned)


def _run(roots, seeds, F, retain_graph, accumulate, capture, only, create_graph, owned):
    if not create_graph:
        return _walk(roots, seeds, retain_graph, accumulate, capture, only, F, "plain", owned)
    with enable_grad():
        return _walk(roots, seeds, retain_graph, accumulate, capture, only, F, "graph")


def _made_here(ig, g):
    """Whether the cotangent ``ig`` that a rule returned is an array the rule made: not the
    cotangent ``g`` it was given and not a view (of a seed or a saved value). A batch of
    cotangents (``chainrule._batched.Batched``) is judged by its stacked data."""
    if ig.__class__ is _ndarray or getattr(ig, "numpy_like", False):
        return ig is not g and ig.base is None
    d = getattr(ig, "data", None)
    return d.__class__ is _ndarray and d.base is None and d is not getattr(g, "data", None)


def _walk(roots, seeds, retain_graph, accumulate, capture, only, F, kind, owned=None):
    """run_backward's loop. ``kind``: "plain" (cotangents are arrays), "graph" (Tensors,
    recorded) or "batched" (a batch of cotangents)."""
    graph = kind == "graph"
    plain = kind == "plain"  # cotangents are arrays
    batched_ns = F if kind == "batched" else None
    # a graph across devices: each node's namespace from its cotangent (see CROSS_DEVICE)
    per_node = CROSS_DEVICE[0] and id(F) in PER_DEVICE
    F0 = F
    check_node = HOOKS.check_node if STATE.anomaly else None  # detect_anomaly()
    root_nodes = list(dict.fromkeys(node for node, _ in roots))
    capture_nodes = {node for node, _ in capture} if capture else ()
    deps = _dependencies(root_nodes)
    buffers = {}
    for (node, nr), seed in zip(roots, seeds):
        _add(buffers, node, nr, seed)
    captured = [None] * (max(capture.values()) + 1 if capture else 0)
    # Only the nodes on a path to a captured one (or to a leaf of backward(inputs=)) run:
    # others' hooks do not fire nor their saved values get checked (none to prune when
    # every sink is a target)
    targets = capture_nodes if capture and not accumulate else only
    needed = _needed(root_nodes, targets) if targets \
        and not _sinks_targeted(deps, root_nodes, targets) else None
    # autograd.grad: a captured node runs its backward only when it leads on to another
    # target (PyTorch's exec_info ``needed_``); else its hooks run, its cotangent is
    # captured, and it stops there (its saved values stay, its register_hook hooks do not
    # fire)
    stop = _capture_only(capture_nodes, needed) if capture and not accumulate else ()
    ready = [n for n in root_nodes if deps.get(n, 0) == 0]
    pop = buffers.pop
    # Leaves whose buffered cotangent is a fresh array made by this walk (a rule's result
    # or a sum): it can become .grad without a copy. Anything else may alias a buffer the
    # user or another leaf holds, and is copied.
    fresh = set()
    taken = set()  # ids of fresh arrays already made some leaf's .grad
    take = ready.pop
    make_ready = ready.append
    get = buffers.get
    # node -> the array this walk made for that node's buffer (adding into it in place is
    # safe until the node runs); weak, so a consumed buffer is not kept alive
    mine = None
    post = None  # a node's register_hook hooks, set and consumed within its iteration
    this_pass = None  # made for the first tensor hook that runs (see current_pass)
    while ready:
        node = take()
        g = pop(node, None)
        if g.__class__ is Scattered:  # a slice's cotangent that nothing was added to
            g = g.materialize()
            fresh.add(node)
        if needed is not None and node not in needed:
            continue  # on no path to a captured node: it does not run, nor do its hooks
        if per_node and g is not None:
            first = g if not isinstance(g, (tuple, list)) else \
                next((x for x in g if x is not None), None)
            F = F0 if first is None or first.__class__ is Scattered else \
                _namespace_of(first, graph, F0)
        if node.pre_hooks or node in capture_nodes:
            if node.pre_hooks and batched_ns is not None:
                raise Unbatchable(_unbatchable(node, "has a hook"))
            post = node.pre_hooks.get("post") if node.pre_hooks else None
            before = g
            if node.pre_hooks:  # tensor hooks may ask which pass runs them
                if this_pass is None:
                    this_pass = BackwardPass(deps, needed, root_nodes)
                outer_pass = getattr(_PASS, "current", None)
                _PASS.current = this_pass
                try:
                    g = _hooks_and_capture(node, g, capture_nodes, capture, captured, stop)
                finally:
                    _PASS.current = outer_pass
            else:
                g = _hooks_and_capture(node, g, capture_nodes, capture, captured, stop)
            if g is not before or node.pre_hooks:  # a hook may hold the array it was
                fresh.discard(node)  # given: it must not become a .grad added into later
            elif owned is not None and node in fresh and id(g) not in taken \
                    and node in stop:  # captured after its hooks, and not used on
                taken.add(id(g))  # the caller may hand this capture out without a copy
                owned.update(slot for (n, _), slot in capture.items() if n is node)
            if node in stop:
                continue
        if type(node) is OpNode:  # the common case, kept short
            saved = node.saved
            if g is None:
                input_grads = None
            elif graph:
                input_grads = node._vjp(g, F, True)
            elif saved is not None and not node.plan.variadic:  # OpNode._vjp, inlined
                checks = node.checks
                if checks is not None:
                    for check in checks:
                        if check[1][0] != check[2]:  # a saved value changed in place
                            node._check_versions()  # raises, naming it
                try:
                    input_grads = node.plan.vjp(F, g, saved)
                except NotBatchable:  # inside vmap: a rule without a batched version
                    input_grads = BATCHING.per_sample(node.plan.vjp, g, saved)
            else:
                input_grads = node._vjp(g, F)
            if post:
                input_grads = _run_post_hooks(node, post, input_grads, g, F, needed)
                post = None
            if check_node is not None and input_grads is not None:
                check_node(node, input_grads, g)  # before the saved values are freed
            if saved and not retain_graph and node.plan.frees:
                node.saved = None
            is_op = True
        elif type(node) is AccumulateGrad:
            if accumulate and g is not None and (only is None or node in only) \
                    and node.variable._requires_grad:  # not a leaf detach_()ed since
                if graph:
                    # a new tensor (with g's history): .grad never aliases a seed, a hook's
                    # result or another leaf's gradient
                    var = node.variable
                    var._grad = g.clone() if var._grad is None else var._grad + g
                else:
                    owned = node in fresh and id(g) not in taken
                    if owned:
                        taken.add(id(g))
                    _accumulate(node.variable, g, owned)
                var = node.variable
                if var._extra is not None and var._extra.get("post_accumulate_hooks"):
                    for hook in list(var._extra["post_accumulate_hooks"]):
                        hook(var)  # register_post_accumulate_grad_hook: after .grad is set
            if post:
                if g is not None:
                    _run_post_hooks(node, post, (), g)
                post = None
            continue
        else:  # several outputs, or a custom Function
            if g is None or (node.nout != 1 and all(x is None for x in g)):
                input_grads = None
            else:
                if batched_ns is not None and type(node) is not MultiOpNode \
                        and not node.batches_cotangents:
                    raise Unbatchable(_unbatchable(node, None))
                input_grads = node._vjp(g, F, graph)
            if input_grads is not None and (post or check_node is not None):
                input_grads = [x.materialize() if x.__class__ is Scattered else x
                               for x in input_grads]
            if post:
                input_grads = _run_post_hooks(node, post, input_grads, g, F, needed)
                post = None
            if check_node is not None and input_grads is not None:
                check_node(node, input_grads, g)
            if not retain_graph:
                node._release()
            is_op = type(node) is MultiOpNode
        shapes = node.shapes
        i = -1
        for child, nr in node.next_functions:
            i += 1
            if child is None:
                continue
            if input_grads is not None:
                ig = input_grads[i]
                if ig is not None:
                    if ig.shape != shapes[i]:
                        ig = sum_to(ig, shapes[i], F)
                    if child.nout == 1:
                        old = get(child)
                        if old is None:
                            buffers[child] = ig
                            if type(child) is AccumulateGrad and is_op and plain \
                                    and _made_here(ig, g):
                                fresh.add(child)
                        elif ig.__class__ is Scattered or old.__class__ is Scattered:
                            if mine is None:
                                mine = weakref.WeakValueDictionary()
                            buffers[child] = _add_scattered(old, ig, mine, child)
                            fresh.add(child)
                        else:
                            buffers[child] = old + ig
                            fresh.add(child)
                    else:
                        if ig.__class__ is Scattered:
                            ig = ig.materialize()
                        _add(buffers, child, nr, ig)
            count = deps[child] - 1
            deps[child] = count
            if count == 0:
                make_ready(child)
    return captured


def _add_scattered(old, ig, mine, node):
    """``old + ig`` for ``node``'s buffer, where one is a :class:`Scattered`: added in place
    into the array this walk made for that buffer (``mine[node]``), else into a fresh one,
    so slices of one tensor accumulate in O(slice) each."""
    if old.__class__ is Scattered:
        old, ig = ig, old
        if old.__class__ is Scattered:
            old = mine[node] = old.materialize()
    if mine.get(node) is not old:
        old = mine[node] = np.array(old)  # not ours to write into: a copy is
    if ig.__class__ is Scattered:
        if np.result_type(old.dtype, ig.g.dtype) != old.dtype:
            out = mine[node] = old + np.asarray(ig)
            return out
        old[ig.index] += ig.g
        return old
    if np.result_type(old, ig) != old.dtype or ig.shape != old.shape:
        out = mine[node] = old + ig
        return out
    old += ig
    return old


class Unbatchable(NotImplementedError):
    """A batched backward (or forward) pass met a node that takes one cotangent (tangent)
    at a time: a custom Function or a hook. The message names it."""


def _unbatchable(node, why):
    """The NotImplementedError message of run_backward(batched=True) at ``node``."""
    fn = getattr(node, "fn", None)  # a custom Function's node knows its class
    if why is None:
        why = "is a custom Function" if fn is not None else "is not a primitive of the table"
    name = getattr(fn, "__name__", None) or node.name()
    return (f"a batched backward (a batch of cotangents, as jacrev uses) cannot run through "
            f"{name}: it {why}, whose backward takes one cotangent at a time; compute the "
            "rows one backward pass each")


def _add(buffers, node, nr, g):
    if node.nout == 1:
        old = buffers.get(node)
        buffers[node] = g if old is None else old + g
        return
    buf = buffers.get(node)
    if buf is None:
        buf = buffers[node] = [None] * node.nout
    buf[nr] = g if buf[nr] is None else buf[nr] + g


def _capture_only(capture_nodes, needed):
    """The captured nodes that lead to no other target (``needed`` None: every node
    does): they stop the walk once their cotangent is captured."""
    stop = set()
    for node in capture_nodes:
        for c, _ in node.next_functions:  # (none for a leaf's AccumulateGrad)
            if c is not None and (needed is None or c in needed):
                break
        else:
            stop.add(node)
    return stop


class BackwardPass:
    """The backward pass whose tensor hooks are running (:func:`current_pass`): which nodes
    it runs (PyTorch's ``_will_engine_execute_node``); the object itself tells passes apart
    (``_current_graph_task_id``)."""

    __slots__ = ("deps", "needed", "roots", "__weakref__")

    def __init__(self, deps, needed, roots):
        self.deps, self.needed, self.roots = deps, needed, roots

    def will_execute(self, node):
        """Whether this pass runs ``node``: it reaches it, and (``autograd.grad``,
        ``backward(inputs=)``) it is on a path to a target."""
        if node is None:
            return False
        reached = node in self.deps or node in self.roots
        return reached and (self.needed is None or node in self.needed)


_PASS = threading.local()


def current_pass():
    """The :class:`BackwardPass` whose tensor hooks are running on this thread (None
    outside them)."""
    return getattr(_PASS, "current", None)


def _hooks_and_capture(node, g, capture_nodes, capture, captured, stop=()):
    """Run ``node``'s pre-hooks and capture its cotangent. As in PyTorch's engine, a
    captured node that runs on (it leads to another target) is captured before its hooks
    (they change only what flows on); one that stops there is captured after the hooks of
    the tensors it made (register_hook, retain_grad), and its own register_prehook hooks do
    not run (it does not run)."""
    if node.nout != 1 and g is None:
        g = [None] * node.nout
    if node in stop:
        if node.pre_hooks:
            g = _run_pre_hooks(node, g, False)
        _capture(node, g, capture, captured)
        return g
    if node in capture_nodes:
        _capture(node, g, capture, captured)
    if node.pre_hooks:
        g = _run_pre_hooks(node, g)
    return g


def _capture(node, g, capture, captured):
    grads = [g] if node.nout == 1 else g
    for nr, value in enumerate(grads):
        slot = capture.get((node, nr))
        if slot is not None and value is not None:
            captured[slot] = value


def _as_tensors(values):
    return tuple(None if v is None else v if isinstance(v, Tensor) else wrap(v)
                 for v in values)


def _from_hook(result, values, hook, node, what):
    """A node hook's returned tuple, checked against ``values`` (same length, shapes and
    dtypes) and in the engine's form (arrays, copied, unless the pass records a graph)."""
    result = tuple(result)
    if len(result) != len(values):
        raise RuntimeError(f"hook '{getattr(hook, '__name__', 'hook')}' of {node.name()} "
                           f"returned {len(result)} values for {what}, expected "
                           f"{len(values)}")
    out = []
    for v, r in zip(values, result):
        if r is None or v is None:
            out.append(None if v is None or r is None else r)
            continue
        _check_hook_result(hook, node, v, r)
        if isinstance(v, Tensor):
            out.append(r if isinstance(r, Tensor) else wrap(r))
        else:
            out.append(np.array(r._data if isinstance(r, Tensor) else r))
    return out


def _run_post_hooks(node, hooks, input_grads, g, F=None, needed=None):
    """``register_hook`` hooks of a node: ``hook(grad_inputs, grad_outputs)`` (not called
    when the node did not run: no cotangent reached it). ``grad_inputs`` are summed back
    to the inputs' shapes first (PyTorch's hooks see them so, and may return such); for a
    primitive, an entry whose edge leads to no node that runs (``needed``: autograd.grad,
    backward(inputs=)) is None, as PyTorch computes none there."""
    if input_grads is None:
        return None
    grads_out = _as_tensors([g] if node.nout == 1 else g)
    values = list(input_grads)
    if not isinstance(node, OpNode):  # a custom Function's own results are shown as given
        needed = None
    for i, ((child, _), v, shape) in enumerate(zip(node.next_functions, values, node.shapes)):
        if v is None:
            continue
        if needed is not None and child not in needed:
            values[i] = None
        elif v.__class__ is not Scattered and tuple(v.shape) != tuple(shape):
            values[i] = sum_to(v, tuple(shape), F if F is not None else RAW)
    given = list(values)
    for hook in list(hooks):
        result = hook(_as_tensors(values), grads_out)
        if result is not None:
            values = _from_hook(result, values, hook, node, "grad_inputs")
    # an array a hook was given may be held by it: what flows on (and may become a leaf's
    # .grad, added into in place later) is a copy
    return [np.array(v) if v.__class__ is _ndarray and any(v is w for w in given) else v
            for v in values]


def _run_pre_hooks(node, g, node_hooks=True):
    """The hooks of the tensors ``node`` made, then (``node_hooks``) its own
    register_prehook hooks."""
    grads = [g] if node.nout == 1 else list(g)
    for nr, hooks in node.pre_hooks.items():
        if nr.__class__ is not int:  # the node's own hooks (register_prehook/register_hook)
            continue
        # retain_grad's hook runs last, so .grad shows what the other hooks made of it
        want = node.pre_hooks.get(("dtype", nr))
        if want is not None and grads[nr] is not None and grads[nr].dtype != want:
            value = grads[nr]  # cast to the tensor's dtype, as PyTorch's engine does
            grads[nr] = value.to(want) if isinstance(value, Tensor) else value.astype(want)
        for hook in sorted(hooks, key=lambda h: getattr(h, "retains_grad", False)):
            if grads[nr] is None:
                continue
            value = grads[nr]
            tensor_in = isinstance(value, Tensor)
            result = hook(value if tensor_in else wrap(value))
            if result is not None:
                _check_hook_result(hook, node, value, result)
                if tensor_in:  # create_graph: keep the hook's tensor (and its history)
                    grads[nr] = result if isinstance(result, Tensor) else wrap(result)
                else:
                    # a copy: the hook's tensor is the user's and must not become .grad
                    grads[nr] = np.array(result._data if isinstance(result, Tensor)
                                         else result)
    for hook in list(node.pre_hooks.get("node", ()) if node_hooks else ()):  # after the
        # tensors' hooks
        result = hook(_as_tensors(grads))
        if result is not None:
            grads = _from_hook(result, grads, hook, node, "grad_outputs")
    return grads[0] if node.nout == 1 else grads


def _check_hook_result(hook, node, value, result):
    """A hook may replace a gradient only by one of the same shape and dtype (PyTorch)."""
    name = getattr(hook, "__name__", type(hook).__name__)
    shape, dtype = tuple(value.shape), value.dtype
    new_shape = tuple(np.shape(result._data if isinstance(result, Tensor) else result))
    new_dtype = (result.dtype if isinstance(result, Tensor) else np.asarray(result).dtype)
    where = ("a leaf's gradient" if type(node) is AccumulateGrad
             else f"the gradient of an output of {node.name()}")
    if new_shape != shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value: it was given "
                           f"{where} of shape {shape} and returned shape {new_shape}")
    if new_dtype != dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {dtype} got "
                           f"{new_dtype}) for {where} of shape {shape}")


def _accumulate(var, g, fresh=False):
    if g.__class__ is not _ndarray and not isinstance(g, np.generic):
        return _accumulate_other(var, g)
    if var._grad is None:
        # .grad must be a writable array of the leaf's dtype that nothing else holds.
        if fresh and g.dtype == var._data.dtype and g.flags.writeable:
            var._grad = wrap(g)
        else:
            var._grad = wrap(np.array(g, dtype=var._data.dtype))
    else:
        gd = var._grad._data
        if isinstance(gd, np.ndarray) and gd.flags.writeable and gd.shape == np.shape(g):
            np.add(gd, g, out=gd, casting="same_kind")
        else:
            var._grad = wrap(np.asarray(gd + g, dtype=var._data.dtype))


def _accumulate_other(var, g):
    """``.grad`` of a leaf on another backend (Dask: lazily; CuPy, Array API: a copy, so
    that ``.grad`` never aliases a seed or another leaf's gradient)."""
    b = backend_of(g)
    data = var._data
    if g.dtype != data.dtype:
        g = b.xp.astype(g, data.dtype)
    if var._grad is None:
        var._grad = wrap(g if b.lazy else b.xp.asarray(g, copy=True))
    else:
        var._grad = wrap(var._grad._data + g)
