"""Spectral normalisation as a forward pre-hook (``torch.nn.utils.spectral_norm``, PyTorch's
older API; Miyato et al., 2018, "Spectral Normalization for Generative Adversarial
Networks", arXiv:1802.05957). Follows torch/nn/utils/spectral_norm.py (PyTorch 2.13)."""

from __future__ import annotations

from ..._state import no_grad
from .. import functional as F
from .._module import Parameter
from .weight_norm import remove_norm_hook

__all__ = ["SpectralNorm", "SpectralNormLoadStateDictPreHook", "SpectralNormStateDictHook",
           "spectral_norm", "remove_spectral_norm"]


class SpectralNorm:
    """The forward pre-hook :func:`spectral_norm` registers: before each call it sets
    ``module.<name> = <name>_orig / sigma``, ``sigma = u . (W v)`` with ``W`` the weight as
    a matrix (``dim`` first, the other dims flattened) and ``u``, ``v`` the buffers
    ``<name>_u`` (shape ``(h,)``) and ``<name>_v`` (shape ``(w,)``), refined in place by
    ``n_power_iterations`` steps ``v = normalize(W^T u)``, ``u = normalize(W v)`` in
    training mode.

    Raises ValueError when ``n_power_iterations`` is not positive."""

    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        """``weight`` with ``dim`` moved first and the rest flattened: shape ``(h, w)``."""
        mat = weight
        if self.dim != 0:
            mat = mat.permute(self.dim, *[d for d in range(mat.dim()) if d != self.dim])
        return mat.reshape(mat.shape[0], -1)

    def compute_weight(self, module, do_power_iteration):
        """``<name>_orig / sigma`` (differentiable in ``<name>_orig``; ``u`` and ``v`` are
        constants), after the power iterations when ``do_power_iteration``."""
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                w = mat.detach()
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(w.t().mv(u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(w.mv(v), dim=0, eps=self.eps))
                u = u.clone()
                v = v.clone()
        sigma = u.dot(mat.mv(v))
        return weight / sigma

    def remove(self, module):
        """Replace the hook's attributes by a parameter ``<name>`` holding the current
        normalised weight (without a power iteration)."""
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name,
                self.compute_weight(module, do_power_iteration=module.training))

    def _solve_v_and_rescale(self, weight_mat, u, target_sigma):
        # v with u = W v / sigma (least squares) rescaled to u . W v = target_sigma
        v = (weight_mat.t().mm(weight_mat).pinverse().mm(weight_mat.t())
             .mm(u.unsqueeze(1))).squeeze(1)
        return v * (target_sigma / u.dot(weight_mat.mv(v)))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        """Register the hook on ``module`` (see :func:`spectral_norm`)."""
        for hook in module._hooks("_forward_pre_hooks").values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError("Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]  # KeyError for a name that is not a parameter
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            mat = fn.reshape_weight_to_matrix(weight)
            h, w = mat.shape
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        # a plain attribute until the first forward recomputes it, as in PyTorch
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        module._register_state_dict_hook(SpectralNormStateDictHook(fn))
        module._register_load_state_dict_pre_hook(SpectralNormLoadStateDictPreHook(fn))
        return fn


class SpectralNormLoadStateDictPreHook:
    """Converts a state dict saved before version 1 (holding ``<name>`` and ``<name>_orig``
    and ``<name>_u`` but no ``<name>_v``) by solving for ``v``, as PyTorch's."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, state_dict, prefix, local_metadata, strict, missing_keys,
                 unexpected_keys, error_msgs):
        fn = self.fn
        version = local_metadata.get("spectral_norm", {}).get(fn.name + ".version", None)
        if version is None or version < 1:
            weight_key = prefix + fn.name
            if (version is None and all(weight_key + s in state_dict
                                        for s in ("_orig", "_u", "_v"))
                    and weight_key not in state_dict):
                return
            has_missing_keys = False
            for suffix in ("_orig", "", "_u"):
                key = weight_key + suffix
                if key not in state_dict:
                    has_missing_keys = True
                    if strict:
                        missing_keys.append(key)
            if has_missing_keys:
                return
            with no_grad():
                weight_orig = state_dict[weight_key + "_orig"]
                weight = state_dict.pop(weight_key)
                sigma = (weight_orig / weight).mean()
                weight_mat = fn.reshape_weight_to_matrix(weight_orig)
                u = state_dict[weight_key + "_u"]
                state_dict[weight_key + "_v"] = fn._solve_v_and_rescale(weight_mat, u, sigma)


class SpectralNormStateDictHook:
    """Records ``spectral_norm`` version 1 in the state dict's metadata, as PyTorch's."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata):
        meta = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in meta:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        meta[key] = self.fn._version


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its spectral norm before every forward, as
    ``torch.nn.utils.spectral_norm`` (the forward pre-hook API; see also
    :func:`chainrule.nn.utils.parametrizations.spectral_norm`):
    ``W_SN = W / sigma(W)``, ``sigma(W) = u . (W v)`` estimated by power iteration.

    The parameter ``<name>`` is replaced by ``<name>_orig`` (same shape) and the buffers
    ``<name>_u`` (shape ``(h,)``, ``h = W.shape[dim]``) and ``<name>_v`` (shape ``(w,)``,
    the product of the other dims), started from normalised ``randn`` vectors of
    chainrule's generator (not PyTorch's draws: load a state dict to reproduce a PyTorch
    model). In training mode each forward first runs ``n_power_iterations`` steps
    ``v = normalize(W^T u, eps)``, ``u = normalize(W v, eps)`` (in place, without
    gradient); in eval mode ``u`` and ``v`` stay. Gradients reach ``<name>_orig`` through
    ``sigma`` with ``u``, ``v`` held constant.

    Source: torch/nn/utils/spectral_norm.py (PyTorch 2.13).

    Parameters
    ----------
    module : Module
        The module holding the parameter.
    name : str
        The parameter (2 or more dims). Default ``"weight"``.
    n_power_iterations : int
        Power iterations per training forward (positive). Default 1.
    eps : float
        The ``eps`` of the normalisations. Default ``1e-12``.
    dim : int or None
        The output dim; default 1 for ``ConvTranspose1d/2d/3d``, else 0.

    Returns
    -------
    Module
        ``module``.

    Raises
    ------
    ValueError
        ``n_power_iterations`` is not positive; the parameter is None.
    KeyError
        ``name`` is not a parameter of ``module``.
    RuntimeError
        ``name`` already has spectral norm.
    """
    if dim is None:
        dim = 1 if type(module).__name__ in ("ConvTranspose1d", "ConvTranspose2d",
                                             "ConvTranspose3d") else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undo :func:`spectral_norm`: ``<name>`` becomes a parameter holding the current
    normalised weight (``<name>_orig / sigma`` with the stored ``u``, ``v``), as
    ``torch.nn.utils.remove_spectral_norm``. Returns ``module``.

    Raises ValueError when ``module`` has no spectral norm on ``name``."""
    remove_norm_hook(module, SpectralNorm, name, "spectral_norm")
    for table in ("_state_dict_hooks", "_load_state_dict_pre_hooks"):
        entries = module._hooks(table)
        for k, (hook, _) in list(entries.items()):
            if getattr(hook, "fn", None) is not None and isinstance(
                    hook, (SpectralNormStateDictHook, SpectralNormLoadStateDictPreHook)) \
                    and hook.fn.name == name:
                del entries[k]
                break
    return module

