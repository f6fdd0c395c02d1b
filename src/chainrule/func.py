"""Function transforms, named and signed as ``torch.func``: grad, grad_and_value, vjp, jvp,
jacrev, jacfwd, hessian, hvp.

Inputs and outputs may be pytrees (tuples, lists, dicts) of tensors. The transforms are
functional: they do not touch ``.grad``, and they compose (``hessian`` is forward-over-
reverse; ``grad`` of ``grad`` works).

``jacrev`` gets every row of the Jacobian from ONE backward pass with a batch of cotangents
(the rules run on a leading batch dimension), ``jacfwd`` every column from ONE forward pass
with a batch of tangents; neither rebuilds the forward graph per row or column.
"""

from __future__ import annotations

import numpy as np

from . import _dual, _state
from ._pytree import tree_flatten, tree_unflatten
from ._state import STATE
from ._tensor import Tensor, wrap
from .autograd import forward_ad as fwAD
from .autograd import grad as _autograd_grad

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "hvp"]


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
    leaf = wrap(x._data, requires_grad=True)
    t = _dual.tangent_of(x)
    if t is not None:
        _dual.set_tangent(leaf, t)
        return leaf, True
    return leaf, False


def _argnums(argnums, n):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for a in nums:
        if not -n <= a < n:
            raise ValueError(f"argnums {a} is out of range for a function of {n} arguments")
    return tuple(a % n for a in nums)


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
            grads = _autograd_grad(out, inputs, create_graph=record, allow_unused=True,
                                   materialize_grads=True) if out.requires_grad else \
                [wrap(np.zeros_like(v._data)) for v in inputs]
        grads = [_result(g, record) for g in grads]
        per_arg, k = [], 0
        for vs in flat:
            per_arg.append(grads[k:k + len(vs)])
            k += len(vs)
        value = _result(out, record)
        g = _pack(per_arg, argnums, specs)
        return (g, (value, _detach_tree(aux, record))) if has_aux else (g, value)

    return wrapper


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


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` returns one VJP per primal
    (``u^T J``: the shape of that primal), for cotangents shaped like the output pytree.
    With ``has_aux``: ``(output, vjp_fn, aux)``."""
    with _state.enable_grad():
        args, _, flat, specs, record = _prepare(primals, tuple(range(len(primals))))
        out = func(*args)
        aux = None
        if has_aux:
            out, aux = _split_aux(out, "vjp(f, *primals)")
    outs, out_spec = tree_flatten(out)
    inputs = [v for vs in flat for v in vs]

    def vjp_fn(cotangents):
        cots, spec = tree_flatten(cotangents)
        if len(cots) != len(outs):
            raise ValueError(f"vjp_fn: got {len(cots)} cotangents for {len(outs)} outputs")
        pairs = [(o, c) for o, c in zip(outs, cots) if o.requires_grad]
        if not pairs:
            grads = [wrap(np.zeros_like(v._data)) for v in inputs]
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
    return (value, vjp_fn, _detach_tree(aux, record)) if has_aux else (value, vjp_fn)


def jvp(func, primals, tangents, *, has_aux=False):
    """``(func(*primals), J tangents)``: the Jacobian-vector product by forward mode (dual
    numbers). ``primals`` and ``tangents`` are tuples of matching pytrees."""
    _check_tuple(primals, "primals", "jvp(f, primals, tangents)")
    _check_tuple(tangents, "tangents", "jvp(f, primals, tangents)")
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have "
                           f"the same length, got {len(primals)} primals and {len(tangents)} "
                           "tangents")
    if STATE.dual_level:
        raise NotImplementedError(
            "jvp inside another forward-mode transform (jvp, jacfwd, hessian's outer pass) is "
            "not supported: tangents have one level. Differentiate the outer function by "
            "reverse mode instead (forward-over-reverse: jacfwd(jacrev(f)), hvp)."
        )
    if any(isinstance(x, Tensor) and x.requires_grad
           for p in primals for x in tree_flatten(p)[0]):
        raise NotImplementedError(
            "jvp inside a reverse-mode transform (grad, vjp, jacrev) is not supported: the "
            "tangents are not recorded, so their derivative would be lost. Use "
            "forward-over-reverse instead (hvp, jacfwd(jacrev(f)))."
        )
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
        pairs = [fwAD.unpack_dual(o) for o in outs]
        primal_out = tree_unflatten([_result(p, record) for p, _ in pairs], spec)
        tangent_out = tree_unflatten(
            [wrap(np.zeros(p.shape, p.dtype)) if t is None else t for p, t in pairs], spec)
    return (primal_out, tangent_out, aux) if has_aux else (primal_out, tangent_out)


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


def jacrev(func, argnums=0, *, has_aux=False):
    """``f -> J f`` by reverse mode. For an output leaf of shape ``O`` and an input leaf of
    shape ``I`` the Jacobian block has shape ``O + I``; the result has the output's pytree
    structure (with a tuple per leaf when ``argnums`` is a tuple).

    All rows come from one backward pass with a batch of one-hot cotangents.
    """
    from .autograd.batched import vjp_rows

    def wrapper(*args, **kwargs):
        with _state.enable_grad():
            args, nums, flat, specs, record = _prepare(args, argnums)
            out = func(*args, **kwargs)
            aux = None
            if has_aux:
                out, aux = _split_aux(out, "jacrev(f)(*args)")
        outs, out_spec = tree_flatten(out)
        outs = [_as_tensor(o) for o in outs]
        inputs = [v for vs in flat for v in vs]
        cots, sizes = _one_hot_batches([o.shape for o in outs], [o.dtype for o in outs])
        if record:  # an outer transform differentiates this Jacobian: one recorded row each
            rows = _recorded_rows(outs, inputs, cots)
        else:
            live = [i for i, o in enumerate(outs) if o.requires_grad]
            rows = vjp_rows([outs[i] for i in live], inputs, [cots[i] for i in live]) \
                if live else [np.zeros((sum(sizes),) + v.shape) for v in inputs]
            rows = [wrap(np.asarray(r)) for r in rows]
        blocks = []
        start = 0
        for o, size in zip(outs, sizes):
            per_input = [r[start:start + size].reshape(o.shape + v.shape)
                         for r, v in zip(rows, inputs)]
            start += size
            per_arg, k = [], 0
            for vs, s in zip(flat, specs):
                per_arg.append(tree_unflatten(per_input[k:k + len(vs)], s))
                k += len(vs)
            blocks.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
        jac = tree_unflatten(blocks, out_spec)
        return (jac, _detach_tree(aux, record)) if has_aux else jac

    return wrapper


def _recorded_rows(outs, inputs, cots):
    """Jacobian rows one backward pass each, recorded (create_graph) so that an outer
    transform can differentiate them."""
    from .ops import stack

    cots = [np.asarray(c) for c in cots]  # row by row: the materialized seeds
    total = cots[0].shape[0] if cots else 0
    rows = [[] for _ in inputs]
    with _state.enable_grad():
        for r in range(total):
            pairs = [(o, wrap(c[r])) for o, c in zip(outs, cots) if o.requires_grad]
            grads = _autograd_grad([o for o, _ in pairs], inputs, [c for _, c in pairs],
                                   retain_graph=True, create_graph=True, allow_unused=True,
                                   materialize_grads=True)
            for acc, g in zip(rows, grads):
                acc.append(g)
        return [stack(acc) for acc in rows]


def jacfwd(func, argnums=0, *, has_aux=False):
    """``f -> J f`` by forward mode, with the same layout as :func:`jacrev`. All columns
    come from one forward pass with a batch of one-hot tangents."""
    from .autograd.batched import jvp_columns

    def wrapper(*args, **kwargs):
        args = list(args)
        nums = _argnums(argnums, len(args))
        flat, specs = [], []
        for a in nums:
            leaves, spec = tree_flatten(args[a])
            flat.append([_as_tensor(x) for x in leaves])
            specs.append(spec)
        inputs = [v for vs in flat for v in vs]
        tans, sizes = _one_hot_batches([v.shape for v in inputs], [v.dtype for v in inputs])

        seen = {}  # what flat_func learns on its call: the output's structure and aux

        def flat_func(*xs):
            call_args = list(args)
            k = 0
            for a, vs, s in zip(nums, flat, specs):
                call_args[a] = tree_unflatten(list(xs[k:k + len(vs)]), s)
                k += len(vs)
            result = func(*call_args, **kwargs)
            if has_aux:
                result, seen["aux"] = _split_aux(result, "jacfwd(f)(*args)")
            leaves, seen["spec"] = tree_flatten(result)
            return leaves

        outs, out_tans = jvp_columns(flat_func, inputs, tans)
        outs = [_as_tensor(o) for o in outs]
        out_spec, aux = seen["spec"], seen.get("aux")
        blocks = []
        for o, ot in zip(outs, out_tans):
            per_input, start = [], 0
            for v, size in zip(inputs, sizes):
                cols = ot[start:start + size]  # (size, *O)
                start += size
                block = np.moveaxis(cols.reshape((size,) + tuple(o.shape)), 0, -1)
                per_input.append(wrap(np.ascontiguousarray(block.reshape(
                    tuple(o.shape) + tuple(v.shape)))))
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
