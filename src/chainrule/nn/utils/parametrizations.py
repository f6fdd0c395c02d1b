"""``torch.nn.utils.parametrizations``: ``orthogonal``, ``weight_norm`` and
``spectral_norm`` as parametrisations (see :mod:`chainrule.nn.utils.parametrize`)."""

from __future__ import annotations

import numpy as np

from ... import _creation
from ... import ops as _ops
from ..._state import no_grad
from ..._tensor import Tensor, wrap
from ...backend import backend_of, beside
from .. import functional as F
from .._module import Module
from . import parametrize
from .weight_norm import norm_except_dim

__all__ = ["orthogonal", "weight_norm", "spectral_norm"]


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


# --- orthogonal -------------------------------------------------------------------------
# After torch/nn/utils/parametrizations.py (PyTorch 2.13: _is_orthogonal, _make_orthogonal,
# _Orthogonal, orthogonal): the same maps, the same shapes and the same messages.

_ORTH_MAPS = ("matrix_exp", "cayley", "householder")


def _host(t):
    """A Tensor's data as a NumPy array (copied from a GPU)."""
    d = t._data
    return d if d.__class__ is np.ndarray else np.asarray(backend_of(d).to_numpy(d))


def _is_orthogonal(q):
    """``Q^H Q == I`` (``q`` a NumPy stack of tall or square matrices) to PyTorch's
    tolerance: ``allclose`` with ``rtol=1e-5`` and ``atol = 10 n eps(dtype)``."""
    n, k = q.shape[-2], q.shape[-1]
    eye = np.eye(k, dtype=q.dtype)
    atol = 10.0 * n * np.finfo(q.dtype).eps
    return bool(np.allclose(np.conj(np.swapaxes(q, -1, -2)) @ q, eye, rtol=1e-5, atol=atol))


def _sgn(x):
    """``torch.sgn``: ``x / |x|`` (the sign of a real ``x``), 0 at 0."""
    a = np.abs(x)
    return np.where(a == 0, 0, x / np.where(a == 0, 1, a)).astype(x.dtype)


def _make_orthogonal(a):
    """The Q factor of ``a = QR`` (``a`` a NumPy stack of tall matrices) normalised so that
    ``diag(R)`` is real and non-negative (PyTorch's ``_make_orthogonal``: ``geqrf`` then
    ``householder_product``, times the signs of ``diag(R)``)."""
    q, r = np.linalg.qr(a)
    return q * _sgn(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def _geqrf(a):
    """LAPACK ``?geqrf`` of a NumPy stack of matrices (as ``torch.geqrf``): the packed
    reflectors and R, and ``tau``."""
    from scipy.linalg import lapack

    (fn,) = lapack.get_lapack_funcs(("geqrf",), (a,))
    batch = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:])
    out = np.empty_like(flat)
    taus = np.empty((flat.shape[0], min(a.shape[-2:])), dtype=a.dtype)
    for i, m in enumerate(flat):
        qr, tau, _, info = fn(np.asfortranarray(m))
        out[i], taus[i] = qr, tau
    return out.reshape(a.shape), taus.reshape(batch + taus.shape[-1:])


class _Orthogonal(Module):
    """The parametrisation :func:`orthogonal` registers: ``forward(X)`` maps an
    unconstrained ``X`` of shape ``(..., n, k)`` to a matrix with orthonormal columns
    (``n >= k``) or rows (``n < k``); with ``use_trivialization`` the result is
    ``base @ Q`` (``base`` a buffer holding an ``n x n`` orthogonal matrix, set by
    ``right_inverse``)."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex "
                             "tensors.")
        if weight.is_complex():
            raise NotImplementedError("orthogonal: complex (unitary) weights are not "
                                      "supported: chainrule's conj and mH do not conjugate "
                                      "(its tensors are real-valued)")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def _trivial(self):
        return "base" in self._buffers

    def forward(self, X):
        from ... import linalg

        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            X = X.tril()
            if n != k:  # embed into a square matrix
                pad = _creation.zeros(*X.shape[:-2], n, n - k, dtype=X.dtype, device=X.device)
                X = _ops.cat([X, pad], dim=-1)
            A = X - X.mH  # skew-symmetric (skew-Hermitian)
            if self.orthogonal_map == "matrix_exp":
                Q = linalg.matrix_exp(A)
            else:  # the Cayley retraction (I + A/2)(I - A/2)^{-1}
                Id = _creation.eye(n, dtype=A.dtype, device=A.device)
                Q = linalg.solve(Id + A * -0.5, Id + A * 0.5)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = linalg.householder_product(A, tau)
            # the diagonal of X holds 1's and -1's, not differentiated (PyTorch's .int())
            Q = Q * X.detach().diagonal(dim1=-2, dim2=-1).trunc().unsqueeze(-2)
        if self._trivial():
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        """The original that gives ``Q`` (computed without gradient): with
        ``use_trivialization`` ``base`` becomes ``Q`` (orthogonalised by QR when it is not
        orthogonal, completed with random columns from chainrule's generator when it is not
        square) and the original is ``-I``; without it, only for ``"householder"``: the
        reflectors of ``Q``'s QR factorisation (LAPACK ``geqrf``), diagonal set to the signs
        of ``diag(R)``.

        Raises ValueError when ``Q`` does not have the weight's shape, NotImplementedError
        for ``"matrix_exp"`` and ``"cayley"`` without trivialisation."""
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q):
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        like = Q._data
        q = np.array(_host(Q))
        n, k = q.shape[-2], q.shape[-1]
        transpose = n < k
        if transpose:
            q = np.swapaxes(q, -1, -2)
            n, k = k, n
        if not self._trivial():
            if self.orthogonal_map in ("cayley", "matrix_exp"):
                raise NotImplementedError("It is not possible to assign to the matrix "
                                          "exponential or the Cayley parametrizations when "
                                          "use_trivialization=False.")
            a, tau = _geqrf(q)
            diag = np.sign(np.diagonal(a, axis1=-2, axis2=-1))
            diag = np.where(tau == 0.0, -diag, diag)  # LAPACK's tau = 0: no reflection
            idx = np.arange(k)
            a[..., idx, idx] = diag
            if transpose:
                a = np.swapaxes(a, -1, -2)
            return wrap(beside(np.ascontiguousarray(a), like))
        if n == k:
            q = q.copy() if _is_orthogonal(q) else _make_orthogonal(q)
        else:  # complete Q into a full n x n orthogonal matrix
            N = _creation.randn(*(q.shape[:-2] + (n, n - k)), dtype=Q.dtype)
            q = _make_orthogonal(np.concatenate([q, _host(N).astype(q.dtype)], axis=-1))
        self.base = wrap(beside(np.ascontiguousarray(q), like))
        # -I, so that householder(zeros) is eye(n, k)
        neg_id = np.zeros(self.shape, dtype=q.dtype)
        idx = np.arange(min(self.shape[-2:]))
        neg_id[..., idx, idx] = -1.0
        return wrap(beside(neg_id, like))


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Make ``module.<name>`` (a matrix or a batch of matrices, shape ``(..., m, n)``)
    orthogonal or unitary, as ``torch.nn.utils.parametrizations.orthogonal``:
    ``Q^H Q = I_n`` when ``m >= n``, ``Q Q^H = I_m`` otherwise.

    The unconstrained original ``X`` (``parametrizations.<name>.original``) is mapped, for
    a tall ``X`` (a wide one is transposed first and the result transposed back), by

    - ``"matrix_exp"``: ``Q = exp(A)[..., :n]``, ``A = L - L^H`` with ``L`` the lower
      triangle of ``X`` padded with zero columns to a square;
    - ``"cayley"``: ``Q = (I - A/2)^{-1} (I + A/2)`` with the same ``A``;
    - ``"householder"``: ``Q = H_1 ... H_n`` (``linalg.householder_product`` of the
      strictly lower triangle of ``X`` with ``tau = 2 / (1 + ||column||^2)``), times the
      signs on ``X``'s diagonal (not differentiated).

    With ``use_trivialization`` (the default) the result is ``base @ Q`` with ``base`` an
    orthogonal buffer (``parametrizations.<name>[0].base``) that assigning to
    ``module.<name>`` resets (the "dynamic trivialization" of Lezcano-Casado, 2019,
    arXiv:1909.09501). On registration the weight keeps its value if orthogonal, else it is
    orthogonalised by QR; a non-square one is completed with ``randn`` columns drawn from
    chainrule's generator (not PyTorch's: load ``base`` from a state dict to reproduce a
    PyTorch model). Gradients flow to the original through chainrule ops.

    Source: torch/nn/utils/parametrizations.py (PyTorch 2.13), whose math this follows.

    Parameters
    ----------
    module : Module
        The module holding the tensor.
    name : str
        The parameter or buffer, of shape ``(..., m, n)``, 2 or more dims. Default
        ``"weight"``.
    orthogonal_map : {"matrix_exp", "cayley", "householder"} or None
        Default: ``"matrix_exp"`` for a square or complex weight, else
        ``"householder"``.
    use_trivialization : bool
        Whether to keep the ``base`` buffer (keyword only).

    Returns
    -------
    Module
        ``module``, its class now ``Parametrized<Class>``.

    Raises
    ------
    ValueError
        ``module`` has no tensor ``name``; it has fewer than 2 dims; an unknown
        ``orthogonal_map``; ``"householder"`` with a complex weight.
    NotImplementedError
        A complex weight with ``"matrix_exp"`` or ``"cayley"`` (unitary weights are not
        supported: chainrule's tensors are real-valued, its ``conj`` is the identity).
        Assigning to ``module.<name>`` with ``"matrix_exp"`` or ``"cayley"`` and
        ``use_trivialization=False`` (as in PyTorch).
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.shape[-2] == weight.shape[-1]
                          or weight.is_complex() else "householder")
    if orthogonal_map not in _ORTH_MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
