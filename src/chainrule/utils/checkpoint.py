"""Activation checkpointing with ``torch.utils.checkpoint``'s interface: ``checkpoint`` and
``checkpoint_sequential``.

PyTorch's checkpoint frees a segment's activations after the forward pass and recomputes
them in the backward pass; the values and gradients are those of calling the segment
directly. Here the segment is called directly (nothing is freed or recomputed, so no
memory is saved), which gives the same values and gradients, including under
``chainrule.func`` transforms. As PyTorch's reentrant variant (``use_reentrant=True``,
the default when it is not given), a segment none of whose tensor inputs requires grad
runs without recording a graph (its parameters get no gradient) and warns.
"""

from __future__ import annotations

import warnings

from .._state import is_grad_enabled, no_grad
from .._tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential"]

_REENTRANT_WARNING = ("torch.utils.checkpoint: the use_reentrant parameter should be passed "
                      "explicitly. use_reentrant=False is recommended, but if you need to "
                      "preserve the current default behavior, you can pass "
                      "use_reentrant=True. Refer to docs for more details on the differences "
                      "between the two variants.")


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check=None,
               debug=False, early_stop=True, **kwargs):
    """``function(*args, **kwargs)``, as ``torch.utils.checkpoint.checkpoint`` (see the
    module docstring: same values and gradients, no memory saved).
    ``preserve_rng_state`` is accepted (the function runs once, so its random draws are
    the forward's).

    Raises ValueError for keyword arguments other than ``preserve_rng_state`` with the
    reentrant variant, or ``context_fn``/``debug`` with it (as PyTorch). Warns
    (UserWarning) when ``use_reentrant`` is not given."""
    if use_reentrant is None:
        warnings.warn(_REENTRANT_WARNING, UserWarning, stacklevel=2)
        use_reentrant = True
    kwargs.pop("preserve_rng_state", True)
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if context_fn is not None or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        if is_grad_enabled() and not any(isinstance(a, Tensor) and a.requires_grad
                                         for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be "
                          "None", UserWarning, stacklevel=2)
            with no_grad():
                return function(*args)
        return function(*args)
    if context_fn is not None:
        ctx_a, ctx_b = context_fn()
        with ctx_a:
            return function(*args, **kwargs)
    return function(*args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run ``functions`` (a list of callables or an ``nn.Sequential``) in order on
    ``input``, checkpointing all but the last of ``segments`` chunks, as
    ``torch.utils.checkpoint.checkpoint_sequential``.

    Raises ValueError for keyword arguments other than ``preserve_rng_state``."""
    if use_reentrant is None:
        warnings.warn(_REENTRANT_WARNING, UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))

    def run(start, end, fns):
        def forward(x):
            for j in range(start, end + 1):
                x = fns[j](x)
            return x
        return forward

    if hasattr(functions, "children") and callable(functions.children):
        functions = list(functions.children())
    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end, functions), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1, functions)(input)
