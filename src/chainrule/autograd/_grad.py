"""``backward`` and ``grad``: the reverse walk from outputs to inputs, as PyTorch's
``torch.autograd.backward``/``grad`` (see the package docstring)."""

from __future__ import annotations

import numpy as np

from .._dispatch import edge, refresh_view
from .._engine import run_backward
from .._ns import RAW, differentiable, raw_for
from .._tensor import Tensor, wrap
from ..backend import backend_of, dtype_kind
from .graph import GradientEdge


class _Batched:
    """Filled by ``chainrule.autograd.batched``: ``grad(outputs, inputs, grads,
    create_graph, allow_unused, materialize_grads)`` for ``is_grads_batched=True``."""

    grad = None


BATCHED = _Batched()


def _as_tuple(x):
    if x is None:
        return ()
    if x.__class__ is GradientEdge:  # a tuple, but one input
        return (x,)
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _namespace(create_graph, outputs=()):
    """The namespace the engine runs the rules with: recorded ops for create_graph, else
    the raw namespace of the outputs' backend."""
    for out in outputs:
        d = getattr(out, "_data", None)
        if d is not None and d.__class__ is not np.ndarray:
            b = backend_of(d)
            # constructors in the rules make arrays on the outputs' device
            dev = None if b.lazy else getattr(d, "device", None)
            return differentiable(b, dev) if create_graph else raw_for(b, dev)
    return differentiable() if create_graph else RAW


def _host(g, like, owned=False):
    """A fresh array of ``like``'s dtype holding ``g`` (on ``like``'s backend; a batch of
    gradients inside vmap stays a batch). ``owned``: ``g`` is an array nothing else holds
    (see ``run_backward(owned=)``), returned as it is when its dtype is right."""
    if owned and g.dtype == like.dtype:
        return g
    numpy = like.__class__ is np.ndarray or getattr(like, "numpy_like", False)
    if numpy and (g.__class__ is np.ndarray or isinstance(g, (np.generic, float, int))):
        return np.array(g, dtype=like.dtype)
    if numpy and getattr(g, "numpy_like", False):  # chainrule.compile's traced arrays
        return g.astype(like.dtype)  # (a copy)
    b = backend_of(g if numpy else like)
    g = g if g.dtype == like.dtype else b.xp.astype(g, like.dtype)
    return g if b.lazy else b.xp.asarray(g, copy=True)


def _complex(g):
    """The dtype of a complex cotangent ``g`` (a tensor, array or number), else None."""
    d = g._data if isinstance(g, Tensor) else g
    dtype = getattr(d, "dtype", None)
    if dtype is None:
        return np.dtype(complex) if isinstance(d, complex) else None
    return dtype if dtype_kind(dtype) == "c" else None


def _roots(outputs, grad_outputs, create_graph):
    roots, seeds = [], []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(out, Tensor):
            raise TypeError(f"output {i} is a {type(out).__name__}, not a Tensor")
        if out._extra is not None:
            refresh_view(out)
        if not out._requires_grad:
            kind = "" if dtype_kind(out.dtype) == "f" else (
                f" (its dtype {out.dtype} is not a float dtype, so it has no gradient)")
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
                f"{kind}. Make sure an input has requires_grad=True and that no_grad() is not "
                "active."
            )
        if g is None:
            if out._data.size != 1:
                raise RuntimeError(
                    "grad can be implicitly created only for scalar outputs; "
                    f"output {i} has shape {tuple(out.shape)}. Pass gradient= (a cotangent of "
                    "that shape): backward computes the vector-Jacobian product u^T J."
                )
            seed = (np.ones_like(out._data) if out._data.__class__ is np.ndarray
                    else backend_of(out._data).xp.ones_like(out._data))
        elif _complex(g):  # casting it to the output's real dtype would drop its imaginary part
            raise RuntimeError(
                "For complex Tensors, both grad_output and output are required to have the "
                f"same dtype. Mismatch in dtype: grad_output[{i}] has a dtype of "
                f"{_complex(g)} and output[{i}] has a dtype of {out.dtype}.")
        elif out._data.__class__ is not np.ndarray:
            seed = g._data if isinstance(g, Tensor) else g
            seed = _host(seed, out._data) if hasattr(seed, "dtype") else \
                backend_of(out._data).xp.full_like(out._data, seed)
        else:
            seed = np.asarray(g._data if isinstance(g, Tensor) else g, dtype=out.dtype)
            if seed.shape != out.shape:
                hint = ""
                if seed.shape[1:] == tuple(out.shape) and seed.ndim == out.ndim + 1:
                    hint = (" It looks like a batch of cotangents (one per row): backward "
                            "takes one cotangent u and returns u^T J. For the whole Jacobian "
                            "use chainrule.func.jacrev, or autograd.grad(..., grad_outputs=rows, "
                            "is_grads_batched=True).")
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {tuple(seed.shape)} "
                    f"and output[{i}] has a shape of {tuple(out.shape)}.{hint}"
                )
        if create_graph:  # the seed is part of the recorded graph (it may require grad)
            seed = g if isinstance(g, Tensor) else wrap(seed)
        roots.append(edge(out))
        seeds.append(seed)
    return roots, seeds


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the VJPs of ``tensors`` into the ``.grad`` of the leaves they depend on.

    Parameters
    ----------
    tensors : Tensor or sequence of Tensor
        Outputs to differentiate.
    grad_tensors : Tensor, array or sequence, optional
        Cotangents, one per output, of the output's shape. May be omitted for scalar
        outputs (RuntimeError ``grad can be implicitly created only for scalar outputs``
        otherwise).
    retain_graph : bool
        Keep saved values so the graph can be walked again (default: ``create_graph``).
    inputs : sequence of Tensor, optional
        Accumulate only into these leaves.
    """
    tensors = _as_tuple(tensors)
    grads = _as_tuple(grad_tensors) or (None,) * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"backward: got {len(tensors)} tensors and {len(grads)} gradients")
    roots, seeds = _roots(tensors, grads, create_graph)
    only = None
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        only = set()
        for i, t in enumerate(inputs):
            if isinstance(t, GradientEdge):  # its node runs; nothing to accumulate into
                only.add(t.node)
                continue
            if not isinstance(t, Tensor):
                raise TypeError(f"backward: inputs[{i}] is a {type(t).__name__}, not a "
                                "Tensor")
            # as PyTorch: each input retains its gradient (a non-leaf's .grad is kept, now
            # and after), which raises for a tensor that does not require grad
            if not t._requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has "
                                   "requires_grad=False")
            node = edge(t)[0]
            if t._grad_fn is not None:
                t.retain_grad()  # its gradient reaches .grad through its retain_grad hook
            only.add(node)
    # retain_graph defaults to create_graph; an explicit False frees the graph even then
    retain = bool(create_graph if retain_graph is None else retain_graph)
    run_backward(roots, seeds, _namespace(create_graph, tensors), retain_graph=retain,
                 only=only, create_graph=create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False,
         materialize_grads=False):
    """Return the VJPs of ``outputs`` with respect to ``inputs``, without touching ``.grad``.

    Returns a tuple with one Tensor per input, of that input's shape (``None`` for an
    input the outputs do not depend on, when ``allow_unused=True``; zeros with
    ``materialize_grads=True``).

    With ``is_grads_batched=True`` each ``grad_outputs`` entry has a leading batch dim
    ``B``: row ``b`` is one cotangent, and each result has shape ``(B, *input.shape)``, the
    rows ``u_b^T J`` computed in one batched backward pass (``B`` one-hot rows give the
    Jacobian, as ``func.jacrev`` does). Not with ``create_graph``.

    ``only_inputs`` is accepted and ignored, as in PyTorch (deprecated there: ``False``
    warns with a FutureWarning, PyTorch's text).

    Raises
    ------
    RuntimeError
        An input does not require grad; an input is unused and ``allow_unused`` is False;
        a non-scalar output without ``grad_outputs``.
    """
    if not only_inputs:
        import warnings

        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to "
                      "True). To accumulate gradient for other parts of the graph, please use "
                      "chainrule.autograd.backward.", FutureWarning, stacklevel=2)
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    allow_unused = bool(allow_unused or materialize_grads)
    outputs = _as_tuple(outputs)
    inputs_t = _as_tuple(inputs)
    grads = _as_tuple(grad_outputs) or (None,) * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"grad: got {len(outputs)} tensors and {len(grads)} gradients "
                           "(grad_outputs must have one entry per output, None allowed)")
    if is_grads_batched:  # registered by chainrule.autograd.batched
        return BATCHED.grad(outputs, inputs_t, grads, create_graph, allow_unused,
                            materialize_grads)
    roots, seeds = _roots(outputs, grads, create_graph)
    capture = {}
    for i, t in enumerate(inputs_t):
        if t.__class__ is GradientEdge:
            if materialize_grads:
                raise RuntimeError("materialize_grads cannot be used when the given input "
                                   "is a GradientEdge")
            capture.setdefault((t.node, t.output_nr), i)
            continue
        if not isinstance(t, Tensor) or not t._requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not "
                               "require grad")
        capture.setdefault(edge(t), i)
    owned = set()
    captured = run_backward(roots, seeds, _namespace(create_graph, outputs),
                            retain_graph=bool(create_graph if retain_graph is None
                                              else retain_graph),
                            accumulate=False, capture=capture, create_graph=create_graph,
                            owned=owned)
    result = []
    for i, t in enumerate(inputs_t):
        if t.__class__ is GradientEdge:
            g = captured[capture[(t.node, t.output_nr)]]
            if g is None and not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used "
                    "in the graph. Set allow_unused=True if this is the desired behavior.")
            result.append(None if g is None else g if create_graph
                          else wrap(np.array(g)))
            continue
        slot = capture[edge(t)]
        g = captured[slot]
        if g is None:
            if materialize_grads:
                result.append(wrap(np.zeros_like(t._data) if t._data.__class__ is np.ndarray
                                   else backend_of(t._data).xp.zeros_like(t._data)))
                continue
            if not allow_unused:
                raise RuntimeError(
                    f"One of the differentiated Tensors (input {i}, shape {tuple(t.shape)}) "
                    "appears to not have been used in the graph. Set allow_unused=True if this "
                    "is the desired behavior."
                )
            result.append(None)
        elif create_graph:
            result.append(g if g.dtype == t.dtype else g.to(t.dtype))
        else:
            result.append(wrap(_host(g, t._data, slot in owned)))
            owned.discard(slot)  # an input listed twice gets its own copy the second time
    return tuple(result)


def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(self)/d(leaf) into each leaf's ``.grad``.

    For a non-scalar ``self``, ``gradient`` (same shape as ``self``) is the cotangent
    ``u`` and each leaf receives the vector-Jacobian product ``u^T J`` (not the Jacobian).
    See :func:`chainrule.autograd.backward`.
    """
    backward(self, gradient, retain_graph, create_graph, inputs=inputs)


_tensor_backward.__name__ = _tensor_backward.__qualname__ = "backward"
Tensor.backward = _tensor_backward  # the tensor layer does not import autograd
