"""Function transforms, named and signed as ``torch.func``: grad, grad_and_value, vjp, jvp,
jacrev, jacfwd, hessian, hvp.

Inputs and outputs may be pytrees (tuples, lists, dicts) of tensors. The transforms are
functional: they do not touch ``.grad``, and they compose in any order (``hessian`` is
forward-over-reverse; ``grad`` of ``grad`` works; a ``jvp`` or ``jacfwd`` inside another
transform is computed by reverse mode, the double-backward trick, so ``jacfwd(jacfwd(f))``
and ``jvp`` of ``jvp`` are exact). ``vmap`` maps a function over a batch dimension.

``jacrev`` gets every row of the Jacobian from ONE backward pass with a batch of cotangents
(the rules run on a leading batch dimension), ``jacfwd`` every column from ONE forward pass
with a batch of tangents; neither rebuilds the forward graph per row or column. Those
one-pass batches are NumPy arrays; for inputs on another backend (a GPU's CuPy arrays) the
Jacobian is ``vmap`` of ``vjp``/``jvp`` over the one-hot rows, as torch.func builds it,
which runs on every backend.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from . import _creation, _dual, _state, _trace
from ._batched import (
    Batched,
    NotBatchable,
    WriteJournal,
    in_vmap_evaluation,
    set_write_journal,
    user_vmap,
    vmap_evaluation,
)
from ._node import AccumulateGrad
from ._pytree import tree_flatten, tree_unflatten
from ._state import STATE
from ._tensor import Tensor, wrap
from .autograd import forward_ad as fwAD
from .autograd import grad as _autograd_grad
from .backend import NUMPY, backend_of, dtype_kind


class _NNHelpers:
    """Filled by ``chainrule.nn`` (a higher layer): functional_call, stack_module_state,
    replace_all_batch_norm_modules_."""

    functional_call = stack_module_state = replace_all_batch_norm_modules_ = None


NN_HELPERS = _NNHelpers()

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "hvp", "vmap",
           "linearize", "functional_call", "stack_module_state", "replace_all_batch_norm_modules_",
           "functionalize", "debug_unwrap", "rearrange"]


def _zeros_as(t):
    """Zeros of ``t``'s shape and dtype on its device (a tensor without history)."""
    return _creation.zeros(tuple(t.shape), dtype=t.dtype, device=t.device)


def _as_tensor(x):
    if isinstance(x, Tensor):
        return x
    x = np.asarray(x)
    return wrap(x if x.dtype.kind == "f" else x.astype(np.float64))


def _variable(x):
    """A tensor to differentiate with respect to, and whether the backward must be recorded.

    A fresh leaf normally; when ``x`` already requires grad (an outer transform is
    differentiating too), a view of ``x`` that keeps the outer graph; a tangent on ``x``
    (an outer jvp/jacfwd) is carried over, and then the backward is recorded so that the
    tangent flows through it (forward-over-reverse).
    """
    x = _as_tensor(x)
    if x.requires_grad:
        return x.view(x.shape), True
    kind = getattr(x.dtype, "kind", None) or dtype_kind(x.dtype)
    if kind != "f":  # complex too: chainrule is real-valued (a complex leaf got 0s)
        raise RuntimeError(f"only Tensors of floating point dtype can require gradients; an "
                           f"input to differentiate has dtype {x.dtype}" + (
                               ". chainrule is real-valued: pass the real and imaginary "
                               "parts as two real inputs" if kind == "c" else ""))
    leaf = wrap(x._data, requires_grad=True)
    t = _dual.tangent_of(x)
    if t is not None:
        _dual.set_tangent(leaf, t)
        return leaf, True
    return leaf, False


def _argnums(argnums, n):
    """``argnums`` as a tuple of non-negative ints; RuntimeError as torch.func for anything
    but an int or a non-empty tuple of distinct ints in range."""
    if isinstance(argnums, int):
        nums = (argnums,)
    elif isinstance(argnums, tuple) and all(isinstance(a, int) for a in argnums):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        nums = argnums
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    for a in nums:
        if not -n <= a < n:
            raise RuntimeError(f"Got argnum={a}, but only {n} positional inputs (argnums {a} "
                               f"is out of range for a function of {n} arguments)")
    nums = tuple(a % n for a in nums)
    if len(nums) > 1 and len(set(nums)) != len(nums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return nums


def _prepare(args, argnums):
    """Replace args[argnums] by variables; returns (args, flat variables, specs, record)."""
    args = list(args)
    nums = _argnums(argnums, len(args))
    flat, specs, record = [], [], False
    for a in nums:
        leaves, spec = tree_flatten(args[a])
        made = [_variable(x) for x in leaves]
        record = record or any(r for _, r in made)
        variables = [v for v, _ in made]
        flat.append(variables)
        specs.append(spec)
        args[a] = tree_unflatten(variables, spec)
    return args, nums, flat, specs, record


def _pack(per_arg, argnums, specs):
    trees = [tree_unflatten(g, s) for g, s in zip(per_arg, specs)]
    return trees[0] if isinstance(argnums, int) else tuple(trees)


def _result(t, record):
    return t if record else t.detach()


# The leaves transforms made (their variables, the seeds of a double backward) once the
# transform has returned: nothing differentiates with respect to them any more, so a graph
# reaching them is no sign of an outer differentiation
_FINISHED = {}  # id -> weak reference (tensors compare elementwise: no WeakSet)


def _finish(tensors):
    for t in tensors:
        if t._grad_fn is None and id(t) not in _FINISHED:
            key = id(t)
            _FINISHED[key] = weakref.ref(t, lambda _, key=key: _FINISHED.pop(key, None))


def _finished(t):
    ref = _FINISHED.get(id(t))
    return ref is not None and ref() is t


def _outer(outs, inputs):
    """Whether an outer differentiation may see through this transform: a forward level is
    active (an outer jvp/jacfwd's tangents may sit on tensors ``func`` closed over), or
    the graph of ``outs`` reaches a tensor that requires grad other than this transform's
    own ``inputs`` (a closed-over tensor, or another argument, that an outer grad or plain
    autograd differentiates). Then the backward is recorded and the results keep their
    graph, so the outer derivative is right rather than zero."""
    return bool(STATE.dual_level) or _outer_graph(outs, inputs)


def _outer_graph(outs, inputs):
    """Whether the graph of ``outs`` reaches a tensor requiring grad other than ``inputs``
    and the finished transforms' leaves (see :func:`_outer`)."""
    ours = {id(v) for v in inputs}
    stack = []
    for o in outs:
        if isinstance(o, Tensor) and o._requires_grad:
            if o._grad_fn is None:
                if id(o) not in ours:
                    return True
            else:
                stack.append(o._grad_fn)
    seen = set(stack)
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is None or child in seen:
                continue
            if type(child) is AccumulateGrad:
                if id(child.variable) not in ours and not _finished(child.variable):
                    return True
                continue
            seen.add(child)
            stack.append(child)
    return False


def _no_outer_grad():
    """Whether the transform is called with grad mode off and no forward level: then, as
    torch.func, it computes its derivatives as usual but its results are not connected to
    an outer graph (the inputs and closed-over tensors that require grad are constants)."""
    return not STATE.enabled and not STATE.dual_level


def _detached(args):
    """``args`` with every tensor leaf detached (see :func:`_no_outer_grad`)."""
    leaves, spec = tree_flatten(tuple(args))
    if not any(isinstance(x, Tensor) and x.requires_grad for x in leaves):
        return args
    return tree_unflatten([x.detach() if isinstance(x, Tensor) else x for x in leaves], spec)


def _split_aux(result, where):
    """``(output, aux)`` from a function called with ``has_aux=True`` (PyTorch's error
    otherwise)."""
    if not isinstance(result, tuple) or len(result) != 2:
        got = (f"a tuple of {len(result)}" if isinstance(result, tuple)
               else type(result).__name__)
        raise RuntimeError(f"{where}: output of function f should be a tuple: (output, aux) "
                           f"if has_aux is True; got {got}")
    return result


def _check_tuple(value, what, where):
    if not isinstance(value, (tuple, list)):
        raise RuntimeError(
            f"{where}: Expected {what} to be a tuple. E.g. it should be valid to call "
            f"f(*{what}); got {type(value).__name__}"
            + (f" of shape {tuple(value.shape)}" if isinstance(value, Tensor) else "")
            + f". Pass ({what[:-1] if what.endswith('s') else what},) for one argument.")


def grad_and_value(func, argnums=0, has_aux=False):
    """``f -> (grad f, f)``: the gradient of a scalar ``func`` with respect to its
    ``argnums`` argument(s) (pytrees allowed), and the value. With ``has_aux`` ``func``
    returns ``(output, aux)`` and the value is ``(output, aux)``.

    Raises RuntimeError when ``func``'s output is not a scalar tensor.
    """

    def wrapper(*args, **kwargs):
        off = _no_outer_grad()
        if off:
            args = _detached(args)
        with _state.enable_grad():
            args, nums, flat, specs, record = _prepare(args, argnums)
            out = func(*args, **kwargs)
            aux = None
            if has_aux:
                out, aux = _split_aux(out, "grad_and_value(f)(*args)")
            if not isinstance(out, Tensor) or out.numel() != 1:
                raise RuntimeError(
                    "grad: func must return a scalar tensor (one element); got "
                    f"{type(out).__name__} {getattr(out, 'shape', '')}. Use vjp or jacrev for "
                    "non-scalar outputs."
                )
            inputs = [v for vs in flat for v in vs]
            record = record or (not off and _outer((out,), inputs))
            grads = _autograd_grad(out, inputs, create_graph=record, allow_unused=True,
                                   materialize_grads=True) if out.requires_grad else \
                [_zeros_as(v) for v in inputs]
            _finish(inputs)
        grads = [_result(g, record) for g in grads]
        per_arg, k = [], 0
        for vs in flat:
            per_arg.append(grads[k:k + len(vs)])
            k += len(vs)
        value = _result(out, record)
        g = _pack(per_arg, argnums, specs)
        return (g, (value, _aux(aux, record, off, inputs))) if has_aux else (g, value)

    return wrapper


def _aux(aux, record, off, inputs):
    """A transform's aux output: without the graph of the transform's inner work, unless
    the transform records (an outer one differentiates it) or the aux reaches a tensor an
    outer differentiation sees (a closed-over parameter: its graph is kept, as torch.func)."""
    if record or (not off and _outer_graph(_tensor_leaves(aux), inputs)):
        return aux
    return _detach_tree(aux, False)


def _tensor_leaves(tree):
    """The Tensor leaves of a pytree (none for None)."""
    if tree is None:
        return []
    return [x for x in tree_flatten(tree)[0] if isinstance(x, Tensor)]


def _detach_tree(tree, record):
    """Aux outputs come back without this transform's internal graph (as in torch.func)."""
    if record:
        return tree
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([x.detach() if isinstance(x, Tensor) else x for x in leaves], spec)


def grad(func, argnums=0, has_aux=False):
    """``f -> grad f`` for a scalar ``func`` (see :func:`grad_and_value`); with ``has_aux``
    returns ``(grad, aux)``."""
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


_VJP, _JVP = "vjp(f, *primals)", "jvp(f, primals, tangents)"


def _tensor_outputs(outs, where):
    """torch.func's rule: every output leaf is a Tensor (None, a number, a string raise)."""
    for o in outs:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{where}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(o)}")


def _float_outputs(outs):
    """torch.func's rules for vjp and jacrev: every output is a Tensor, and an integer or
    bool one has no cotangent."""
    _tensor_outputs(outs, _VJP)
    for o in outs:
        if dtype_kind(o.dtype) not in "fc":
            raise RuntimeError("vjp(f, ...): All outputs of f must be floating-point or complex "
                               f"Tensors, got Tensor with dtype {o.dtype}")


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` returns one VJP per primal
    (``u^T J``: the shape of that primal), for cotangents shaped like the output pytree.
    With ``has_aux``: ``(output, vjp_fn, aux)``."""
    off = _no_outer_grad()
    if off:
        primals = _detached(primals)
    with _state.enable_grad():
        args, _, flat, specs, record = _prepare(primals, tuple(range(len(primals))))
        out = func(*args)
        aux = None
        if has_aux:
            out, aux = _split_aux(out, "vjp(f, *primals)")
    outs, out_spec = tree_flatten(out)
    _float_outputs(outs)
    inputs = [v for vs in flat for v in vs]
    record = record or (not off and _outer(outs, inputs))
    _finish(inputs)

    def vjp_fn(cotangents):
        cots, spec = tree_flatten(cotangents)
        if len(cots) != len(outs):  # (a list for a tuple of outputs is taken, unlike torch)
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               "pytree structure of outputs to the function: got "
                               f"{len(cots)} cotangents for {len(outs)} outputs")
        pairs = [(o, c) for o, c in zip(outs, cots) if o.requires_grad]
        if not pairs:
            grads = [_zeros_as(v) for v in inputs]
        else:
            with _state.enable_grad():
                grads = _autograd_grad([o for o, _ in pairs], inputs, [c for _, c in pairs],
                                       retain_graph=True, create_graph=record,
                                       allow_unused=True, materialize_grads=True)
        per_arg, k = [], 0
        for vs, s in zip(flat, specs):
            per_arg.append(tree_unflatten([_result(g, record) for g in grads[k:k + len(vs)]],
                                          s))
            k += len(vs)
        return tuple(per_arg)

    value = tree_unflatten([_result(o, record) for o in outs], out_spec)
    return (value, vjp_fn, _aux(aux, record, off, inputs)) if has_aux else (value, vjp_fn)


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J tangents)``: the Jacobian-vector product by forward mode (dual
    numbers). ``primals`` and ``tangents`` are tuples of matching pytrees. ``strict=True``
    raises when an output does not depend on the inputs (its tangent would be zero)."""
    _check_tuple(primals, "primals", "jvp(f, primals, tangents)")
    _check_tuple(tangents, "tangents", "jvp(f, primals, tangents)")
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents) or any(
            len(tree_flatten(p)[0]) != len(tree_flatten(t)[0]) for p, t in zip(primals, tangents)):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           "the same python structure: got primals "
                           f"{_describe(primals)} ({len(tree_flatten(primals)[0])} tensors) and "
                           f"tangents {_describe(tangents)} "
                           f"({len(tree_flatten(tangents)[0])} tensors)")
    if _no_outer_grad():  # the results are constants for an outer graph
        result = _jvp(func, _detached(primals), tangents, strict, has_aux)
        return tuple(_detach_tree(r, False) for r in result)
    return _jvp(func, primals, tangents, strict, has_aux)


def _jvp(func, primals, tangents, strict, has_aux):
    if _nested(primals):
        return _jvp_by_reverse(func, primals, tangents, strict, has_aux)
    with fwAD.dual_level():
        duals, record = [], False
        for p, t in zip(primals, tangents):
            ps, spec = tree_flatten(p)
            ts, _ = tree_flatten(t)
            ps = [_as_tensor(a) for a in ps]
            duals.append(tree_unflatten([fwAD.make_dual(a, _as_tensor(b))
                                         for a, b in zip(ps, ts)], spec))
        out = func(*duals)
        aux = None
        if has_aux:
            out, aux = _split_aux(out, "jvp(f, primals, tangents)")
        outs, spec = tree_flatten(out)
        _tensor_outputs(outs, _JVP)
        if _outer_graph(outs + _tensor_leaves(aux), ()):
            # func closed over a tensor that an outer grad (or plain autograd) differentiates:
            # the tangents (and aux) must carry that graph too, so again by reverse mode
            return _jvp_by_reverse(func, primals, tangents, strict, has_aux)
        aux = _detach_tree(aux, False)  # no graph of this transform's inner work
        pairs = [fwAD.unpack_dual(o) for o in outs]
        if strict:
            for k, (_, t) in enumerate(pairs):
                if t is None:
                    raise RuntimeError(f"jvp(f, primals, tangents, strict=True): output {k} "
                                       "of f does not depend on the primals")
        primal_out = tree_unflatten([_result(p, record) for p, _ in pairs], spec)
        tangent_out = tree_unflatten(
            [_zeros_as(p) if t is None else t for p, t in pairs], spec)
    return (primal_out, tangent_out, aux) if has_aux else (primal_out, tangent_out)


def _nested(trees):
    """Whether a forward transform runs inside another transform: an outer forward level
    is active, or an input requires grad (an outer reverse transform). Tangents have one
    level, so the inner one is then computed by reverse mode, through which both the outer
    tangents and the outer graph flow (forward-over-reverse, reverse-over-reverse)."""
    return bool(STATE.dual_level) or any(
        isinstance(x, Tensor) and x.requires_grad for p in trees for x in tree_flatten(p)[0])


def _jvp_by_reverse(func, primals, tangents, strict, has_aux):
    """``J t`` by reverse mode, the double-backward trick: ``g(u) = J^T u`` is linear in
    ``u``, so the VJP of ``g`` in the direction ``t`` is ``J t``. Recorded, so an outer
    transform differentiates the result."""
    with _state.enable_grad():
        args, _, flat, specs, _ = _prepare(primals, tuple(range(len(primals))))
        out = func(*args)
        aux = None
        if has_aux:
            out, aux = _split_aux(out, "jvp(f, primals, tangents)")
        outs, spec = tree_flatten(out)
        _tensor_outputs(outs, _JVP)
        inputs = [v for vs in flat for v in vs]
        ts = [_as_tensor(t) for tr in tangents for t in tree_flatten(tr)[0]]
        live = [o for o in outs if o.requires_grad]
        # g(u) is linear, so its derivative is J^T at any u: at u = 1 rather than 0, as a
        # rule that works in log space (logcumsumexp's, log |u|) is smooth there but not at 0
        us = [_creation.ones(tuple(o.shape), dtype=o.dtype, device=o.device, requires_grad=True)
              for o in live]
        gs = _autograd_grad(live, inputs, us, create_graph=True, allow_unused=True) \
            if live else [None] * len(inputs)
        pairs = [(g, t) for g, t in zip(gs, ts) if g is not None and g.requires_grad]
        jt = _autograd_grad([g for g, _ in pairs], us, [t for _, t in pairs],
                            create_graph=True, allow_unused=True) if pairs and us else []
    _finish(inputs + us)
    by_output = dict(zip(map(id, live), jt))
    tangent_out = []
    for k, o in enumerate(outs):
        t = by_output.get(id(o))
        if t is None:
            if strict:
                raise RuntimeError(f"jvp(f, primals, tangents, strict=True): output {k} of "
                                   "f does not depend on the primals")
            t = _zeros_as(o)
        tangent_out.append(t)
    result = (tree_unflatten(outs, spec), tree_unflatten(tangent_out, spec))
    return result + (aux,) if has_aux else result


def _on_device(trees):
    """Whether a leaf of ``trees`` holds data of a backend other than NumPy (and other than
    vmap's batched values): a GPU's CuPy arrays, an Array API library's."""
    for tree in trees:
        for x in tree_flatten(tree)[0]:
            d = x._data if isinstance(x, Tensor) else x
            if d.__class__ is np.ndarray or isinstance(d, (np.generic, int, float, complex)):
                continue
            try:
                b = backend_of(d)
            except TypeError:  # not an array: the transform's own checks say so
                continue
            if b is not NUMPY and b.name != "vmap":
                return True
    return False


def _one_hot_rows(tensors):
    """Per tensor a batch ``(N, *shape)`` (N the total size) holding the identity on that
    tensor's block of rows: chainrule tensors on the tensors' device, in their dtypes."""
    sizes = [v.numel() for v in tensors]
    total = sum(sizes)
    eye = _creation.eye(total, dtype=tensors[0].dtype, device=tensors[0].device)
    rows, start = [], 0
    for v, size in zip(tensors, sizes):
        rows.append(eye[:, start:start + size].reshape((total,) + tuple(v.shape)).to(v.dtype))
        start += size
    return rows, sizes


def _flat_function(func, args, kwargs, nums, has_aux, where):
    """``func`` as a function of the flattened leaves of ``args[nums]``: returns
    ``(inputs, flat, specs, flat_func, seen)``; ``flat_func(*leaves)`` returns the output's
    leaves and records the output's pytree spec and the first call's aux in ``seen``."""
    flat, specs = [], []
    for a in nums:
        leaves, spec = tree_flatten(args[a])
        flat.append([_as_tensor(x) for x in leaves])
        specs.append(spec)
    seen = {}

    def flat_func(*xs):
        call_args, k = list(args), 0
        for a, vs, spec in zip(nums, flat, specs):
            call_args[a] = tree_unflatten(list(xs[k:k + len(vs)]), spec)
            k += len(vs)
        result = func(*call_args, **kwargs)
        if has_aux:
            result, aux = _split_aux(result, where)
            seen.setdefault("aux", aux)  # the first call's (outside any vmap)
        leaves, seen["spec"] = tree_flatten(result)
        return leaves

    return [v for vs in flat for v in vs], flat, specs, flat_func, seen


def _jacobian_by_vmap(func, argnums, has_aux, args, kwargs, forward, where,
                      randomness="error"):
    """jacrev (``forward=False``: ``vmap`` of the VJP over one-hot cotangents) or jacfwd
    (``vmap`` of the JVP over one-hot tangents), composed from transforms that every backend
    runs; the result laid out as :func:`jacrev`'s."""
    from .ops import movedim

    nums = _argnums(argnums, len(args))
    inputs, flat, specs, leaves_of, seen = _flat_function(func, args, kwargs, nums, has_aux,
                                                          where)

    def flat_func(*xs):
        return tuple(_as_tensor(x) for x in leaves_of(*xs))

    if forward:
        outs = flat_func(*inputs)
        tans, in_sizes = _one_hot_rows(inputs)
        cols = vmap(lambda *ts: jvp(flat_func, tuple(inputs), ts)[1],
                    randomness=randomness)(*tans) if sum(in_sizes) else None

        def block(i, o, k, v):  # columns (size_v, *o.shape) -> o.shape + v.shape
            start = sum(in_sizes[:k])
            part = cols[i][start:start + in_sizes[k]]
            return movedim(part, 0, -1).reshape(tuple(o.shape) + tuple(v.shape))
    else:
        outs, vjp_fn = vjp(flat_func, *inputs)
        cots, out_sizes = _one_hot_rows(list(outs)) if outs else ([], [])
        rows = vmap(vjp_fn)(tuple(cots)) if sum(out_sizes) else None

        def block(i, o, k, v):  # rows (size_o, *v.shape) -> o.shape + v.shape
            start = sum(out_sizes[:i])
            return rows[k][start:start + out_sizes[i]].reshape(tuple(o.shape) + tuple(v.shape))
    blocks = []
    for i, o in enumerate(outs):
        per_input = [block(i, o, k, v) if o.numel() and v.numel() else
                     _creation.zeros(tuple(o.shape) + tuple(v.shape), dtype=o.dtype,
                                     device=o.device) for k, v in enumerate(inputs)]
        per_arg, k = [], 0
        for vs, spec in zip(flat, specs):
            per_arg.append(tree_unflatten(per_input[k:k + len(vs)], spec))
            k += len(vs)
        blocks.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
    jac = tree_unflatten(blocks, seen["spec"])
    return (jac, _detach_tree(seen.get("aux"), False)) if has_aux else jac


def _one_hot_batches(shapes, dtypes):
    """For leaves of ``shapes``: per leaf a batch (N, *shape), N = total size, holding the
    identity on that leaf's block of rows and zeros elsewhere. A single vector leaf gets the
    structured identity (``DiagBatched``), which rules can carry without forming it."""
    from ._batched import DiagBatched

    sizes = [int(np.prod(s)) for s in shapes]
    total = sum(sizes)
    if len(shapes) == 1 and len(shapes[0]) == 1:
        return [DiagBatched(np.ones(total, dtype=dtypes[0]))], sizes
    eye = np.eye(total)
    batches, start = [], 0
    for shape, size, dtype in zip(shapes, sizes, dtypes):
        batches.append(eye[:, start:start + size].astype(dtype).reshape((total,) + tuple(shape)))
        start += size
    return batches, sizes


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """``f -> J f`` by reverse mode. For an output leaf of shape ``O`` and an input leaf of
    shape ``I`` the Jacobian block has shape ``O + I``; the result has the output's pytree
    structure (with a tuple per leaf when ``argnums`` is a tuple).

    All rows come from one backward pass with a batch of one-hot cotangents; with
    ``chunk_size``, from one pass per chunk of that many rows (less memory).
    """
    from .autograd.batched import vjp_rows

    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"jacrev: chunk_size should be None or a positive int, got "
                         f"{chunk_size!r}")

    def wrapper(*args, **kwargs):
        if _on_device([args[a] for a in _argnums(argnums, len(args))]):
            return _jacobian_by_vmap(func, argnums, has_aux, args, kwargs, False,
                                     "jacrev(f)(*args)")
        off = _no_outer_grad()
        if off:
            args = _detached(args)
        with _state.enable_grad():
            args, nums, flat, specs, record = _prepare(args, argnums)
            out = func(*args, **kwargs)
            aux = None
            if has_aux:
                out, aux = _split_aux(out, "jacrev(f)(*args)")
        outs, out_spec = tree_flatten(out)
        _float_outputs(outs)
        inputs = [v for vs in flat for v in vs]
        record = record or (not off and _outer(outs, inputs))
        _finish(inputs)
        cots, sizes = _one_hot_batches([o.shape for o in outs], [o.dtype for o in outs])
        if record:  # an outer transform differentiates this Jacobian: one recorded row each
            rows = _recorded_rows(outs, inputs, cots)
        else:
            live = [i for i, o in enumerate(outs) if o.requires_grad]
            if not live:
                rows = [np.zeros((sum(sizes),) + v.shape, v.dtype) for v in inputs]
            elif chunk_size is None or chunk_size >= sum(sizes):
                rows = vjp_rows([outs[i] for i in live], inputs, [cots[i] for i in live])
            else:
                dense = [np.asarray(cots[i]) for i in live]
                parts = [vjp_rows([outs[i] for i in live], inputs,
                                  [c[s:s + chunk_size] for c in dense])
                         for s in range(0, sum(sizes), chunk_size)]
                rows = [np.concatenate([np.asarray(p[k]) for p in parts])
                        for k in range(len(inputs))]
            rows = [wrap(np.asarray(r)) for r in rows]
        blocks = []
        start = 0
        for o, size in zip(outs, sizes):
            per_input = [(_stack_rows(r[start:start + size], v) if record else
                          r[start:start + size]).reshape(o.shape + v.shape)
                         for r, v in zip(rows, inputs)]
            start += size
            per_arg, k = [], 0
            for vs, s in zip(flat, specs):
                per_arg.append(tree_unflatten(per_input[k:k + len(vs)], s))
                k += len(vs)
            blocks.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
        jac = tree_unflatten(blocks, out_spec)
        return (jac, _aux(aux, record, off, inputs)) if has_aux else jac

    return wrapper


def _stack_rows(rows, v):
    """One output's recorded rows for input ``v`` as a tensor (stacked per output, so that
    a block no row of which depends on the inputs has no graph either)."""
    from .ops import stack

    return stack(rows) if rows else _creation.zeros((0,) + tuple(v.shape), dtype=v.dtype,
                                                    device=v.device)


def _recorded_rows(outs, inputs, cots):
    """Jacobian rows one backward pass each, recorded (create_graph) so that an outer
    transform can differentiate them: per input, the list of its rows. Row ``r`` belongs to
    one output (the one-hot seeds are zero on the others), so only that output is
    differentiated: a block of an output that does not depend on an input gets zeros
    without a graph."""
    cots = [np.asarray(c) for c in cots]  # row by row: the materialized seeds
    rows = [[] for _ in inputs]
    start = 0
    with _state.enable_grad():
        for o, c in zip(outs, cots):
            size = int(np.prod(o.shape))
            for r in range(start, start + size):
                if o.requires_grad:
                    grads = _autograd_grad([o], inputs, [wrap(c[r])], retain_graph=True,
                                           create_graph=True, allow_unused=True,
                                           materialize_grads=True)
                else:
                    grads = [_zeros_as(v) for v in inputs]
                for acc, g in zip(rows, grads):
                    acc.append(g)
            start += size
        return rows


def jacfwd(func, argnums=0, *, has_aux=False, randomness="error"):
    """``f -> J f`` by forward mode, with the same layout as :func:`jacrev`. All columns
    come from one forward pass with a batch of one-hot tangents. ``randomness`` as in
    :func:`vmap` ("error", "different", "same"): the columns share one evaluation of
    ``func``, so its random draws are the same for every column whatever the choice."""
    from .autograd.batched import jvp_columns

    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"jacfwd: Only allowed values for randomness are 'error', "
                           f"'different', or 'same'. Got {randomness}")

    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args))
        if _no_outer_grad():
            args = _detached(args)
        if _nested([args[a] for a in nums]):  # inside another transform: by reverse mode
            return jacrev(func, argnums, has_aux=has_aux)(*args, **kwargs)
        if _on_device([args[a] for a in nums]):
            return _jacobian_by_vmap(func, argnums, has_aux, args, kwargs, True,
                                     "jacfwd(f)(*args)", randomness)
        inputs, flat, specs, flat_func, seen = _flat_function(func, list(args), kwargs, nums,
                                                              has_aux, "jacfwd(f)(*args)")
        tans, sizes = _one_hot_batches([v.shape for v in inputs], [v.dtype for v in inputs])

        outs, out_tans = jvp_columns(flat_func, inputs, tans)
        _tensor_outputs(outs, _JVP)
        if _outer_graph(outs + _tensor_leaves(seen.get("aux")), inputs):
            # func closed over a tensor that an outer grad (or plain autograd)
            # differentiates: the columns (and aux) must carry that graph, so again by
            # reverse mode
            return jacrev(func, argnums, has_aux=has_aux)(*args, **kwargs)
        # the aux without the graph of this transform's inner work (as torch.func)
        out_spec, aux = seen["spec"], _detach_tree(seen.get("aux"), False)
        blocks = []
        for o, ot in zip(outs, out_tans):
            per_input, start = [], 0
            for v, size in zip(inputs, sizes):
                cols = ot[start:start + size]  # (size, *O)
                start += size
                block = np.moveaxis(cols.reshape((size,) + tuple(o.shape)), 0, -1)
                # a C-ordered copy (np.ascontiguousarray would make a 0-d block 1-d)
                per_input.append(wrap(block.reshape(tuple(o.shape) + tuple(v.shape))
                                      .copy(order="C")))
            per_arg, k = [], 0
            for vs, s in zip(flat, specs):
                per_arg.append(tree_unflatten(per_input[k:k + len(vs)], s))
                k += len(vs)
            blocks.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
        jac = tree_unflatten(blocks, out_spec)
        return (jac, aux) if has_aux else jac

    return wrapper


def hessian(func, argnums=0):
    """``f -> H f = jacfwd(jacrev(f))`` (forward-over-reverse). For a scalar ``func`` of an
    input of shape ``I`` the Hessian has shape ``I + I``."""
    return jacfwd(jacrev(func, argnums), argnums)


def hvp(func, primals, tangents):
    """``(grad func(primals), H tangents)``: a Hessian-vector product of a scalar ``func``
    by forward-over-reverse (one gradient computation carrying tangents), never forming H.
    """
    return jvp(grad(func, argnums=tuple(range(len(primals)))), tuple(primals),
               tuple(tangents))


# --- vmap and linearize ------------------------------------------------------------------


def _dims_for(dims, tree, what):
    """The mapped dim of each leaf of ``tree``: ``dims`` is an int or None for all of them,
    or a structure matching ``tree`` (a prefix of it, as torch.func's in_dims)."""
    if dims is None or isinstance(dims, int):
        return [dims] * len(tree_flatten(tree)[0])
    if isinstance(dims, (tuple, list)) and isinstance(tree, (tuple, list)) \
            and len(dims) == len(tree):
        out = []
        for sub_d, sub_t in zip(dims, tree):
            if isinstance(sub_t, Tensor) and (sub_d is None or sub_d.__class__ is int):
                out.append(sub_d)  # the common case: one tensor, one dim
            else:
                out += _dims_for(sub_d, sub_t, what)
        return out
    if isinstance(dims, dict) and isinstance(tree, dict) and set(dims) == set(tree):
        return [d for k in tree for d in _dims_for(dims[k], tree[k], what)]
    raise ValueError(f"vmap: {what}={dims!r} does not match the structure of the "
                     f"{'inputs' if what == 'in_dims' else 'outputs'} ({_describe(tree)})")


def _describe(tree):
    if isinstance(tree, (tuple, list)):
        return f"{type(tree).__name__} of {len(tree)}"
    if isinstance(tree, dict):
        return f"dict with keys {list(tree)}"
    return type(tree).__name__


class _GuardedGenerator:
    """Stands for the random generator while some thread runs a vmap with
    randomness="error": in that thread a random op raises; any other thread draws from the
    real generator as usual (the generator is one module global for all threads)."""

    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        tracer = _trace.LOCAL.tracer
        if tracer is not None:  # chainrule.compile is tracing this thread's function
            tracer.refuse("a random number was drawn (a replay would repeat it)")
        if _RANDOM.error:
            raise RuntimeError("vmap: called random operation while in randomness error "
                               "mode. Please either use the 'same' or 'different' randomness "
                               "flags on vmap or perform the randomness operation out of "
                               "vmap")
        return getattr(self._real, name)


class _RandomMode(threading.local):
    error = 0  # how deep this thread is in randomness="error" vmaps


_RANDOM = _RandomMode()
_GUARD = [0, None]  # the threads' vmaps in randomness="error" mode, the real generator
_GUARD_LOCK = threading.Lock()


class _NoRandomness:
    """A context manager: random ops in this thread raise (vmap's randomness="error"). The
    guard is installed by the first such vmap of any thread and the real generator put back
    by the last one, so concurrent vmaps never leave the guard in place. With
    ``error=False`` it only watches: chainrule.compile's trace hears of each draw."""

    __slots__ = ("error",)

    def __init__(self, error=True):
        self.error = error

    def __enter__(self):
        with _GUARD_LOCK:
            if not _GUARD[0]:
                _GUARD[1] = _creation.default_generator
                _creation.default_generator = _GuardedGenerator(_GUARD[1])
            _GUARD[0] += 1
        _RANDOM.error += self.error

    def __exit__(self, *exc):
        _RANDOM.error -= self.error
        with _GUARD_LOCK:
            _GUARD[0] -= 1
            if not _GUARD[0]:
                if isinstance(_creation.default_generator, _GuardedGenerator):
                    _creation.default_generator = _GUARD[1]
                _GUARD[1] = None
        return False


def watch_randomness():
    """A context manager under which a draw from chainrule's default generator in this
    thread is reported to the trace of ``chainrule.compile``."""
    return _NoRandomness(error=False)


def _real_generator():
    g = _creation.default_generator
    return g._real if isinstance(g, _GuardedGenerator) else g


class _NoGuard:
    __slots__ = ()

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


_NO_GUARD = _NoGuard()


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over a batch dimension of its inputs, as ``torch.func.vmap``.

    ``in_dims`` (an int, None for an unmapped input, or a structure of them matching the
    positional arguments) says which dim of each input is the batch; ``out_dims`` where the
    batch goes in each output. Negative dims count from the end. Inputs and outputs may be
    pytrees of tensors. ``randomness``: ``"error"`` (random ops inside raise),
    ``"different"`` (each sample draws its own) or ``"same"`` (every sample draws the same
    values). ``chunk_size`` maps that many samples at a time (less memory), the outputs
    concatenated.

    It composes with every transform in any order and depth (``vmap(grad(f))`` gives
    per-sample gradients, ``vmap(vmap(f))``, ``jacrev(vmap(f))``, ...), and gradients flow
    through it. ``func`` is evaluated once on the whole batch (tensors whose data is the
    batch, :mod:`chainrule._vmap_backend`: kernels and derivative rules run on it) when no
    mapped input requires grad, no forward level is active and ``randomness="error"``;
    a kernel or derivative rule without a batched version then runs once per sample inside
    that evaluation (PyTorch's per-op fallback). Where the batch cannot be evaluated at
    once (a host copy of a batched value, results whose shapes differ by sample), or
    otherwise, ``func`` is evaluated once per sample (slices in, a stack out), which every
    op supports; an in-place update of a tensor from outside ``func`` would then repeat
    per sample (PyTorch's vmap updates it once), so vmap puts it back and raises
    RuntimeError (:class:`chainrule._batched.WriteJournal`). A custom
    ``autograd.Function`` needs a vmap rule (its ``vmap`` staticmethod, or
    ``generate_vmap_rule = True``), as in PyTorch.

    Raises
    ------
    RuntimeError
        A custom Function without a vmap rule is called inside (naming it),
        ``randomness`` is not one of the three values (as PyTorch), or ``func`` updates a
        tensor from outside it in place where it is evaluated once per sample.
    ValueError
        No input is mapped, mapped inputs disagree on the batch size, an in_dim is out of
        range, or ``in_dims`` / ``out_dims`` do not match the structure.
    IndexError
        An out_dim is out of range (as PyTorch).
    """

    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"vmap: Only allowed values for randomness are 'error', "
                           f"'different', or 'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size should be None or a positive int, got "
                         f"{chunk_size!r}")

    def wrapped_one(*args, **kwargs):  # one chunk: the whole batch given
        return vmap(func, in_dims, out_dims, randomness)(*args, **kwargs)

    def wrapped(*args, **kwargs):
        with user_vmap():
            return mapped(*args, **kwargs)

    def mapped(*args, **kwargs):
        dims_spec = in_dims if isinstance(in_dims, (tuple, list, dict)) else (in_dims,) * len(args)
        if isinstance(in_dims, (tuple, list)) and len(in_dims) != len(args):
            raise ValueError(f"vmap: in_dims has {len(in_dims)} entries but func got "
                             f"{len(args)} positional arguments")
        leaves, spec = tree_flatten(tuple(args))
        dims = _dims_for(tuple(dims_spec), tuple(args), "in_dims")
        sizes = []
        for k, (x, d) in enumerate(zip(leaves, dims)):
            if d is None:
                continue
            if not isinstance(x, Tensor):
                raise ValueError(f"vmap: in_dims maps argument leaf {k}, a "
                                 f"{type(x).__name__}; only Tensors can be mapped (use None)")
            if not -x.ndim <= d < x.ndim:
                raise ValueError(f"vmap: in_dim {d} is out of range for input leaf {k} of "
                                 f"shape {tuple(x.shape)}")
            sizes.append(x.shape[d])
        if not sizes:
            raise ValueError("vmap: at least one input must be mapped over (in_dims are all "
                             "None)")
        if len(set(sizes)) != 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sizes} for the mapped dimension")
        B = sizes[0]
        if chunk_size is not None and B > chunk_size:  # chunk by chunk, then concatenated
            return _vmap_chunks(wrapped_one, leaves, dims, spec, B, chunk_size, kwargs,
                                out_dims)
        if randomness == "error" and not STATE.dual_level and not in_vmap_evaluation() \
                and all(d is None or ((x._data.__class__ is np.ndarray or
                                       getattr(x._data, "numpy_like", False))
                                      and not x.requires_grad)
                        for x, d in zip(leaves, dims)):
            done = _vmap_batched(func, leaves, dims, spec, B, kwargs, out_dims)
            if done is not None:
                return done
        if B == 0:  # no sample to evaluate: the whole (empty) batch at once, as PyTorch
            empty = _vmap_batched(func, [x.detach() if isinstance(x, Tensor) else x
                                         for x in leaves], dims, spec, B, kwargs, out_dims)
            return empty if empty is not None else _vmap_empty(
                func, leaves, dims, spec, kwargs, out_dims, randomness)
        real = _real_generator() if randomness == "same" else None
        state = real.bit_generator.state if randomness == "same" else None
        results = []
        journal = WriteJournal()
        before = set_write_journal(journal)
        try:
            with _NoRandomness() if randomness == "error" else _NO_GUARD:
                for b in range(B):
                    if state is not None:
                        real.bit_generator.state = state
                    sample = [x if d is None else x[(slice(None),) * (d % x.ndim) + (b,)]
                              for x, d in zip(leaves, dims)]
                    results.append(func(*tree_unflatten(sample, spec), **kwargs))
        finally:
            set_write_journal(before)
        stacked = _stack_samples(results, out_dims)
        del results, sample
        journal.refuse(_why_per_sample(leaves, dims, randomness), by_memory=False,
                       own=[x for x, d in zip(leaves, dims) if d is not None] +
                       [o for o in tree_flatten(stacked)[0] if isinstance(o, Tensor)])
        return stacked

    return wrapped


def _vmap_empty(func, leaves, dims, spec, kwargs, out_dims, randomness):
    """vmap over an empty batch that cannot run as a whole (an op met has no batched
    version): ``func`` once on a stand-in sample (zeros of one sample's shape and dtype),
    for its outputs' shapes, and those outputs with an empty batch dim (PyTorch's shapes)."""
    stand_in = [x if d is None else _creation.zeros(
        tuple(n for i, n in enumerate(x.shape) if i != d % x.ndim), dtype=x.dtype,
        device=x.device) for x, d in zip(leaves, dims)]
    try:
        with _NoRandomness() if randomness == "error" else _NO_GUARD:
            one = func(*tree_unflatten(stand_in, spec), **kwargs)
    except Exception as e:
        raise RuntimeError("vmap: the batch is empty (size 0) and func cannot be evaluated "
                           "on it as a whole (an op met has no batched version); evaluated "
                           "on a stand-in sample of zeros for its output shapes, it raised "
                           f"{type(e).__name__}: {e}") from e
    stacked = _stack_samples([one], out_dims)
    outs, out_spec = tree_flatten(stacked)
    odims = _dims_for(out_dims, one, "out_dims")
    return tree_unflatten([o if d is None else o.narrow(d % o.ndim, 0, 0)
                           for o, d in zip(outs, odims)], out_spec)


def _why_per_sample(leaves, dims, randomness):
    if randomness != "error":
        return f"randomness={randomness!r}"
    if STATE.dual_level:
        return "inside forward-mode AD"
    if in_vmap_evaluation():
        return "a vmap inside another vmap's batched evaluation"
    if any(d is not None and x.requires_grad for x, d in zip(leaves, dims)):
        return "a mapped input requires grad"
    if any(d is not None and x._data.__class__ is not np.ndarray for x, d in zip(leaves, dims)):
        return "a mapped input is not a NumPy array"
    return "an op met could not be evaluated on the whole batch"


def _stack_samples(results, out_dims):
    """The per-sample results of vmap's one-evaluation-per-sample path, stacked along
    ``out_dims``."""
    from .ops import stack

    outs, out_spec = tree_flatten(results[0])
    per_sample = [tree_flatten(r)[0] for r in results]
    odims = _dims_for(out_dims, results[0], "out_dims")
    stacked = []
    for k, (o, d) in enumerate(zip(outs, odims)):
        if not isinstance(o, Tensor):
            raise ValueError(f"vmap: func must only return Tensors, got a "
                             f"{type(o).__name__} as output leaf {k}")
        if d is None:
            stacked.append(o)
            continue
        if not -(o.ndim + 1) <= d <= o.ndim:
            raise IndexError(f"vmap: Dimension out of range (expected to be in range of "
                             f"[{-(o.ndim + 1)}, {o.ndim}], but got {d}) for out_dims of "
                             f"output leaf {k}")
        stacked.append(stack([p[k] for p in per_sample], d % (o.ndim + 1)))
    return tree_unflatten(stacked, out_spec)


def _vmap_chunks(vmapped, leaves, dims, spec, B, chunk_size, kwargs, out_dims):
    """``vmap(..., chunk_size=)``: the batch in chunks of ``chunk_size`` samples (less memory
    at once), each mapped as a whole, the outputs concatenated along their batch dims."""
    from .ops import cat

    parts = []
    for start in range(0, B, chunk_size):
        part = slice(start, min(start + chunk_size, B))
        chunk = [x if d is None else x[(slice(None),) * (d % x.ndim) + (part,)]
                 for x, d in zip(leaves, dims)]
        parts.append(tree_flatten(vmapped(*tree_unflatten(chunk, spec), **kwargs)))
    (first, out_spec), rows = parts[0], [p[0] for p in parts]
    result = []
    for k, (o, d) in enumerate(zip(first, _dims_for(out_dims, tree_unflatten(first, out_spec),
                                                      "out_dims"))):
        result.append(o if d is None else cat([r[k] for r in rows], d % o.ndim))
    return tree_unflatten(result, out_spec)


def _vmap_batched(func, leaves, dims, spec, B, kwargs, out_dims):
    """``func`` evaluated once on the whole batch (tensors whose data is a batch, see
    :mod:`chainrule._vmap_backend`); None when some op met has no batched version (then
    vmap evaluates once per sample; see :class:`chainrule._batched.WriteJournal` for
    in-place updates the attempt made)."""
    journal = WriteJournal()
    before = set_write_journal(journal)
    try:
        done = _vmap_batched_once(func, leaves, dims, spec, B, kwargs, out_dims)
    except NotBatchable as error:
        reason, done = str(error), None
    else:
        reason = "an output needs a graph of its own per sample"
    finally:
        set_write_journal(before)
    if done is None:  # what the attempt wrote is put back (the mapped inputs' rows are
        # written again, once, per sample); a tensor from outside: RuntimeError
        journal.refuse(reason, own=[x._data for x, d in zip(leaves, dims) if d is not None])
    return done


def _vmap_batched_once(func, leaves, dims, spec, B, kwargs, out_dims):
    from ._vmap_backend import VBatched

    args = [x if d is None else wrap(VBatched(x._data if d % x.ndim == 0 else
                                              np.moveaxis(x._data, d % x.ndim, 0)))
            for x, d in zip(leaves, dims)]
    guard = _NoRandomness()
    guard.__enter__()
    try:
        with vmap_evaluation():
            result = func(*tree_unflatten(args, spec), **kwargs)
        outs, out_spec = tree_flatten(result)
        odims = _dims_for(out_dims, result, "out_dims")
        stacked = []
        for k, (o, d) in enumerate(zip(outs, odims)):
            if not isinstance(o, Tensor):
                raise ValueError(f"vmap: func must only return Tensors, got a "
                                 f"{type(o).__name__} as output leaf {k}")
            if o.requires_grad:  # made a graph of its own inside: per sample, to keep it
                return None
            data = o._data
            if d is None:
                if isinstance(data, Batched):
                    raise ValueError(f"vmap: out_dims is None for output leaf {k}, but it "
                                     "depends on the mapped inputs")
                stacked.append(o)
                continue
            rows = data.data if isinstance(data, Batched) else \
                np.broadcast_to(np.asarray(data), (B,) + tuple(o.shape))
            if not -(o.ndim + 1) <= d <= o.ndim:
                raise IndexError(f"vmap: Dimension out of range (expected to be in range of "
                                 f"[{-(o.ndim + 1)}, {o.ndim}], but got {d}) for out_dims of "
                                 f"output leaf {k}")
            d %= o.ndim + 1
            out = rows if d == 0 else np.moveaxis(rows, 0, d)
            # the batch as it is (any strides, as torch.func's results); a read-only one (a
            # broadcast of an output that does not depend on the batch) is copied
            stacked.append(wrap(out if out.flags.writeable else np.array(out)))
        return tree_unflatten(stacked, out_spec)
    finally:
        guard.__exit__()


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``, as ``torch.func.linearize``: ``jvp_fn(*tangents)``
    returns the Jacobian-vector product at ``primals`` (by forward mode, one evaluation of
    ``func`` per call)."""
    out = func(*primals)

    def jvp_fn(*tangents):
        if len(tangents) != len(primals):
            raise RuntimeError(f"linearize: jvp_fn expected {len(primals)} tangents (one per "
                               f"primal), got {len(tangents)}")
        flat_p, flat_t = tree_flatten(primals)[0], tree_flatten(tangents)[0]
        for i, (p, t) in enumerate(zip(flat_p, flat_t)):  # torch.func.linearize's checks
            if isinstance(p, Tensor) and isinstance(t, Tensor):
                for what, a, b in (("shape", tuple(t.shape), tuple(p.shape)),
                                   ("dtype", t.dtype, p.dtype)):
                    if a != b:
                        raise RuntimeError(f"tangent:{i} with {what} {a} in flattened pytree "
                                           f"doesn't match the {what} {b} of the "
                                           "corresponding primal.")
        return jvp(func, primals, tangents)[1]

    return out, jvp_fn  # with its graph when primals (or tensors func closed over) have one


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with parameters and buffers swapped for the given tensors
    (``torch.func.functional_call``); see :func:`chainrule.nn.functional_call`."""
    return NN_HELPERS.functional_call(module, parameter_and_buffer_dicts, args, kwargs,
                            tie_weights=tie_weights, strict=strict)


def stack_module_state(models):
    """``(params, buffers)``: the parameters and buffers of ``models`` (modules of one class,
    in one training mode) stacked along a new leading dim, keyed by dotted name, for
    ``vmap`` over ``functional_call`` (model ensembling; ``torch.func.stack_module_state``).
    The stacked parameters are new leaves that require grad when the models' do.

    Raises RuntimeError for no models, mixed classes or modes, or a parameter that requires
    grad in some models only."""
    return NN_HELPERS.stack_module_state(models)


def replace_all_batch_norm_modules_(root):
    """Batch-norm modules of ``root`` without running statistics, for ``vmap``
    (``torch.func.replace_all_batch_norm_modules_``)."""
    return NN_HELPERS.replace_all_batch_norm_modules_(root)


def functionalize(func, *, remove="mutations"):
    """``func`` itself: ``torch.func.functionalize`` removes in-place updates for its
    compilers, and chainrule's transforms already run functions that update tensors in
    place (their views and saved values are tracked), with the same results.

    Raises ValueError for a ``remove`` other than "mutations" or
    "mutations_and_views".
    """
    if remove not in ("mutations", "mutations_and_views"):
        raise ValueError(f"functionalize: remove must be 'mutations' or "
                         f"'mutations_and_views', got {remove!r}")
    return func


def debug_unwrap(tensor, *, recurse=True):
    """``tensor`` itself: chainrule's transforms do not wrap tensors in levels of wrapper
    tensors (``torch.func.debug_unwrap`` undoes those). Inside ``vmap`` a tensor shows one
    sample's shape either way."""
    return tensor


def rearrange(tensor, pattern, **axes_lengths):
    """``einops.rearrange`` (``torch.func.rearrange``): ``pattern`` ``"left -> right"`` names
    the input's dims on the left and the output's on the right; parentheses group axes into
    one dim (``"b h w c -> b (h w) c"``) or split a dim (``"(h1 h) w -> h1 h w"``, with the
    lengths of all but one axis of the group given as keywords), ``...`` stands for the dims
    not named, ``1`` and ``()`` for a dim of size 1. A sequence of tensors is stacked first
    (a leading dim). Built of ``reshape`` and ``permute``, so it is differentiable and runs
    under every transform.

    Raises ValueError for a pattern that does not match the tensor (a wrong number of
    dims, an axis on one side only, a group whose lengths are not determined)."""
    from . import ops

    if isinstance(tensor, (list, tuple)):
        tensor = ops.stack(list(tensor))
    left, arrow, right = pattern.partition("->")
    if not arrow:
        raise ValueError(f"rearrange: pattern {pattern!r} has no '->'")
    lhs, rhs = _einops_side(left, pattern), _einops_side(right, pattern)
    shape = tuple(tensor.shape)
    n_named = sum(1 for g in lhs if g != "...")
    if ("..." in lhs and len(shape) < n_named) or ("..." not in lhs and len(shape) != n_named):
        raise ValueError(f"rearrange: pattern {pattern!r} names {n_named} dims but the tensor "
                         f"has shape {shape}")
    lengths, axes = dict(axes_lengths), []  # the elementary axes, in the input's order
    dims = iter(shape)
    for group in lhs:
        if group == "...":
            k = len(shape) - n_named
            names = [f"...{i}" for i in range(k)]
            lengths.update(zip(names, (next(dims) for _ in range(k))))
            axes += names
            continue
        size, names = next(dims), [a for a in group if a != "1"]
        unknown = [a for a in names if a not in lengths]
        known = int(np.prod([lengths[a] for a in names if a in lengths]))
        if len(unknown) > 1:
            raise ValueError(f"rearrange: cannot split a dim of size {size} into {group}: "
                             f"give the lengths of all but one of {unknown}")
        if unknown:
            if known == 0 or size % known:
                given = {a: lengths[a] for a in names if a in lengths}
                raise ValueError(f"rearrange: a dim of size {size} cannot be split into "
                                 f"{group} with {given}")
            lengths[unknown[0]] = size // known
        elif known != size:
            raise ValueError(f"rearrange: {group} has length {known}, but the dim has size "
                             f"{size}")
        axes += names
    right_axes = [a for g in rhs for a in ([f"...{i}" for i in range(len(shape) - n_named)]
                                           if g == "..." else g) if a != "1"]
    if sorted(right_axes) != sorted(axes) or len(set(axes)) != len(axes):
        raise ValueError(f"rearrange: pattern {pattern!r} must name each axis once on each "
                         f"side (left {axes}, right {right_axes})")
    x = ops.reshape(tensor, tuple(lengths[a] for a in axes))
    x = ops.permute(x, tuple(axes.index(a) for a in right_axes))
    out_shape = []
    for g in rhs:
        if g == "...":
            out_shape += [lengths[f"...{i}"] for i in range(len(shape) - n_named)]
        else:
            out_shape.append(int(np.prod([lengths[a] for a in g if a != "1"])))
    return ops.reshape(x, tuple(out_shape))


def _einops_side(text, pattern):
    """One side of an einops pattern: a list of groups (each a list of axis names, "1" for a
    unit axis) and "..." for the ellipsis."""
    groups, current = [], None
    for token in text.replace("(", " ( ").replace(")", " ) ").split():
        if token == "(":
            if current is not None:
                raise ValueError(f"rearrange: nested parentheses in {pattern!r}")
            current = []
        elif token == ")":
            if current is None:
                raise ValueError(f"rearrange: unbalanced parentheses in {pattern!r}")
            groups.append(current)
            current = None
        elif token == "...":
            if current is not None or "..." in groups:
                raise ValueError(f"rearrange: '...' may stand once, outside parentheses, in "
                                 f"{pattern!r}")
            groups.append("...")
        elif token == "1" or token.isidentifier():
            (current if current is not None else groups).append(
                token if current is not None else [token])
        else:
            raise ValueError(f"rearrange: {token!r} is not an axis name in {pattern!r}")
    if current is not None:
        raise ValueError(f"rearrange: unbalanced parentheses in {pattern!r}")
    return groups
