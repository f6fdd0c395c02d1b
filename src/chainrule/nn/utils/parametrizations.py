"""``torch.nn.utils.parametrizations``: ``weight_norm`` and ``spectral_norm`` as
parametrisations (see :mod:`chainrule.nn.utils.parametrize`)."""

from __future__ import annotations

from ... import _creation
from ... import ops as _ops
from ..._state import no_grad
from ..._tensor import Tensor
from .. import functional as F
from .._module import Module
from . import parametrize
from .weight_norm import norm_except_dim

__all__ = ["weight_norm", "spectral_norm"]


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / norm_except_dim(weight_v, 2, self.dim))

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Reparameterise ``module.<name>`` as ``g * v / ||v||`` (norm over every dim but
    ``dim``; ``dim=None``: the whole tensor), as
    ``torch.nn.utils.parametrizations.weight_norm``: ``g`` and ``v`` are stored as
    ``parametrizations.<name>.original0`` and ``original1``. Returns ``module``.

    Raises ValueError when ``module`` has no tensor ``name``."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """``weight / sigma``, ``sigma`` the largest singular value of the weight (as a matrix
    with ``dim`` first), estimated by power iteration on the buffers ``_u`` and ``_v``
    (``n_power_iterations`` steps per call in training mode, none in eval mode)."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._reshape_weight_to_matrix(weight)
            h, w = mat.shape
            u = _creation.randn(h, dtype=weight.dtype, device=weight.device)
            v = _creation.randn(w, dtype=weight.dtype, device=weight.device)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=eps))
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, mat, n):
        with no_grad():
            mat = mat.detach()
            for _ in range(n):
                self._u.copy_(F.normalize(_ops.matmul(mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(_ops.matmul(mat.transpose(0, 1), self._u), dim=0,
                                          eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u * _ops.matmul(mat, v)).sum()
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its spectral norm, estimated by power iteration, as
    ``torch.nn.utils.parametrizations.spectral_norm`` (``dim`` defaults to 1 for transposed
    convolutions, else 0). The random start vectors come from chainrule's generator (not
    PyTorch's draws): load a state dict (``parametrizations.<name>.0._u`` and ``_v``) to
    reproduce a PyTorch model. Returns ``module``.

    Raises ValueError when ``module`` has no tensor ``name`` or ``n_power_iterations`` is
    not positive; IndexError for ``dim`` out of range."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    parametrize.register_parametrization(module, name,
                                         _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
