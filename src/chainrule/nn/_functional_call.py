"""``functional_call``: run a module with some of its parameters and buffers swapped for
given tensors (``torch.func.functional_call``)."""

from __future__ import annotations

from .. import func as _func
from .._tensor import Tensor
from ..ops import stack


def _resolve(module, dotted):
    """(owning module, attribute name, store name) for a dotted parameter/buffer name."""
    path, _, name = dotted.rpartition(".")
    mod = module
    if path:
        for part in path.split("."):
            try:
                sub = getattr(mod, part)
            except AttributeError:
                raise AttributeError(f"{mod._get_name()} has no attribute `{part}`") from None
            if not hasattr(sub, "_parameters"):
                raise TypeError(f"submodule `{path}`: {sub} is not an instance of "
                                "torch.nn.Module")
            mod = sub
    if name in mod._parameters:
        return mod, name, "_parameters"
    if name in mod._buffers:
        return mod, name, "_buffers"
    return mod, name, None


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """Call ``module(*args, **kwargs)`` with its parameters and buffers replaced by the
    tensors of ``parameter_and_buffer_dicts`` (a dict ``{dotted name: Tensor}``, or a
    tuple of such dicts with distinct keys), and restore the originals afterwards, also
    when the call raises.

    The given tensors are used as they are (not copied), so gradients flow to them:
    ``chainrule.func.grad(lambda p: functional_call(model, p, (x,)).sum())(params)``.

    Parameters
    ----------
    module : chainrule.nn.Module
    parameter_and_buffer_dicts : dict or tuple of dict
    args : tuple or single value
        Positional arguments (a non-tuple is passed as the one argument).
    kwargs : dict, optional
    tie_weights : bool
        A parameter registered under several names (tied) is replaced under all of them
        when one name is given. With False, only the names given are replaced.
    strict : bool
        Require every parameter and buffer to be given, and no other key.

    Returns
    -------
    What ``module`` returns.

    Raises
    ------
    ValueError
        A key given twice (in several dicts); two different tensors given for tied names.
    RuntimeError
        With ``strict``, missing or unexpected keys (after tied names are filled in); it is
        a ValueError too.
    AttributeError
        A key naming no submodule.
    """
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, dict):
        merged = dict(dicts)
    elif isinstance(dicts, (list, tuple)) and all(isinstance(d, dict) for d in dicts):
        counts = {}
        for d in dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             "functional call is ambiguous")
        merged = {k: v for d in dicts for k, v in d.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple "
                         f"of dicts, but got {type(dicts)}")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    kwargs = {} if kwargs is None else kwargs

    all_named = dict(module.named_parameters(remove_duplicate=False))
    all_named.update(module.named_buffers(remove_duplicate=False))
    if tie_weights:
        # a value given under one name of a tied tensor is used under all its names
        by_id = {}
        for k, t in all_named.items():
            by_id.setdefault(id(t), []).append(k)
        untied = dict(merged)
        for names in by_id.values():
            given = [k for k in names if k in merged]
            if not given or len(names) < 2:
                continue
            if len({id(merged[k]) for k in given}) > 1:
                raise ValueError(f"functional_call got multiple values for keys "
                                 f"{sorted(names)}, which are tied. Consider using "
                                 "tie_weights=False")
            for k in names:
                untied[k] = merged[given[0]]
        merged = untied
    if strict:
        missing = sorted(set(all_named) - set(merged))
        unexpected = sorted(set(merged) - set(all_named))
        if missing or unexpected:
            # (PyTorch raises RuntimeError; chainrule's message and ValueError came first)
            raise _ReparametrizeError(
                f"functional_call: Error(s) in reparametrizing for {module._get_name()}: "
                f"missing key(s): {missing}; unexpected key(s): {unexpected}")

    saved = []
    try:
        for k, v in merged.items():
            mod, name, store = _resolve(module, k)
            if store is None:
                old = mod.__dict__.get(name, _MISSING)
                saved.append((mod, name, None, old))
                object.__setattr__(mod, name, v)
                continue
            table = getattr(mod, store)
            saved.append((mod, name, store, table[name]))
            if not isinstance(v, Tensor) and v is not None:
                raise TypeError(f"{v} is not an instance of torch.Tensor")
            table[name] = v
        return module(*args, **kwargs)
    finally:
        for mod, name, store, old in reversed(saved):
            if store is None:
                if old is _MISSING:
                    mod.__dict__.pop(name, None)
                else:
                    object.__setattr__(mod, name, old)
            else:
                getattr(mod, store)[name] = old


_MISSING = object()


class _ReparametrizeError(RuntimeError, ValueError):
    """``functional_call(strict=True)`` with missing or unexpected keys: a RuntimeError as
    PyTorch's, and a ValueError as chainrule's was."""


def stack_module_state(models):
    """``(params, buffers)``: the parameters and buffers of ``models`` (modules of one
    class, in one training mode) stacked along a new leading dim, in dicts keyed by their
    dotted names, for ``func.vmap`` over ``func.functional_call`` (model ensembling). The
    stacked parameters are new leaves that require grad (when the models' do), unrelated to
    the models' own, so an optimizer can take them (``torch.func.stack_module_state``).

    Raises RuntimeError for no models, mixed classes or mixed training modes, and for a
    parameter that requires grad in some models only.
    """
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if len({type(m) for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named):
        tables = [dict(named(m)) for m in models]
        out = {}
        for k in tables[0]:
            ts = [t[k] for t in tables]
            grads = {t.requires_grad for t in ts}
            if len(grads) != 1:
                raise RuntimeError(f"Expected {k} from each model to have the same "
                                   ".requires_grad")
            out[k] = stack([t.detach() for t in ts]).requires_grad_(grads.pop())
        return out

    return (stacked(lambda m: m.named_parameters()), stacked(lambda m: m.named_buffers()))


def replace_all_batch_norm_modules_(root):
    """Make every batch-norm module in ``root`` use batch statistics only (running mean
    and variance set to None, ``track_running_stats = False``), so that ``func.vmap``
    over it updates no shared buffer (``torch.func.replace_all_batch_norm_modules_``).
    Returns ``root``."""
    for mod in root.modules():
        if type(mod).__name__.startswith("BatchNorm") and hasattr(mod, "running_mean"):
            mod.running_mean = None
            mod.running_var = None
            mod.num_batches_tracked = None
            mod.track_running_stats = False
    return root


# torch.func's module helpers live in chainrule.func; the nn layer fills them in from above
_func.NN_HELPERS.functional_call = functional_call
_func.NN_HELPERS.stack_module_state = stack_module_state
_func.NN_HELPERS.replace_all_batch_norm_modules_ = replace_all_batch_norm_modules_
