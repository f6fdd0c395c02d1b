"""The numerics of gradcheck: directions (standard basis, random, structured), central
differences with a step sweep, the analytic Jacobian from one VJP per row, and a progress
line for long checks. Arrays in, arrays out; no reports."""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np

from .. import _state
from .._tensor import Tensor, wrap
from ..backend import beside, dtype_kind, numpy_dtype

STRUCTURES = ("symmetric", "spd", "lower", "upper", "diagonal", "orthogonal")


#: The step sizes tried when a check fails, to tell a real bug from finite-difference error.
EPS_SWEEP = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)


#: Show a progress bar when the numerical Jacobian is estimated to take longer (seconds).
PROGRESS_AFTER_S = 2.0


def _tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _outputs(fn, inputs):
    return tuple(o for o in _tuple(fn(*inputs)))




def _expm_skew(W):
    """``expm(W)`` of a real skew-symmetric matrix, through the Hermitian ``iW``."""
    w, V = np.linalg.eigh(1j * W)
    return ((V * np.exp(-1j * w)) @ V.conj().T).real


def _label(batch, text):
    return f"[{', '.join(str(int(b)) for b in batch)}] {text}" if batch else text


class _Directions:
    """How input ``i`` is perturbed: its coordinates, or the basis of a structure.

    ``size`` directions; ``column(k, eps)`` gives the two points and the denominator of the
    central difference along direction ``k``; ``project(J)`` maps the analytic Jacobian
    (columns: input entries) onto the directions (``J @ basis``).
    """

    def __init__(self, x, structure=None, index=0, eps=1e-6):
        self.structure, self.index, self.eps = structure, index, eps
        self.base = np.array(x._host(), dtype=numpy_dtype(x.dtype))  # (a host copy)
        self.shape, self.dtype = self.base.shape, self.base.dtype
        self.labels = self.basis = None
        self.size = self.base.size
        if structure is None:
            return
        if structure not in STRUCTURES:
            raise ValueError(f"gradcheck: unknown structure {structure!r} for input {index}; "
                             f"expected one of {', '.join(STRUCTURES)}")
        if self.base.ndim < 2:
            raise ValueError(f"gradcheck: structure={{{index}: {structure!r}}} needs a matrix "
                             f"(or a batch of matrices), but input {index} has shape "
                             f"{tuple(self.shape)}")
        m, n = self.shape[-2:]
        square = structure in ("symmetric", "spd")
        if (square and m != n) or (structure == "orthogonal" and m < n):
            need = "square" if square else "tall (rows >= columns)"
            raise ValueError(f"gradcheck: structure {structure!r} needs {need} matrices, but "
                             f"input {index} has shape {tuple(self.shape)}")
        self.items, labels, dirs = [], [], []
        self.Q = {}
        for b in np.ndindex(*self.shape[:-2]):
            for text, mat in self._basis(structure, b):
                self.items.append((b, mat))
                labels.append(_label(b, text))
                full = np.zeros(self.shape)
                full[b] = mat if structure != "orthogonal" else (self.Q[b] @ mat)[:, :n]
                dirs.append(full.reshape(-1))
        self.labels = labels
        self.size = len(dirs)
        self.basis = np.stack(dirs, axis=1) if dirs else np.zeros((self.base.size, 0))

    def _basis(self, structure, b):
        A = np.asarray(self.base[b], dtype=np.float64)
        m, n = A.shape
        fin = np.finfo(self.dtype).eps
        if structure == "spd":
            self._check_spd(A, b, fin)
        if structure == "orthogonal":
            err = float(np.max(np.abs(A.T @ A - np.eye(n))))
            if err > 1e3 * fin * m:
                raise ValueError(f"gradcheck: structure={{{self.index}: 'orthogonal'}} needs "
                                 f"orthonormal columns, but input {self.index}"
                                 f"{_label(b, '')} has max |X^T X - I| = {err:.3g}")
            Qc = np.linalg.qr(A, mode="complete")[0]
            self.Q[b] = np.concatenate([A, Qc[:, n:]], axis=1)
            for a in range(n):
                for c in range(a + 1, m):
                    W = np.zeros((m, m))
                    W[a, c], W[c, a] = 1.0, -1.0
                    yield f"rot({a}, {c})", W
            return
        for r in range(m):
            for c in range(n):
                E = np.zeros((m, n))
                if structure in ("symmetric", "spd") and r <= c:
                    E[r, c] = E[c, r] = 1.0
                    yield (f"({r}, {r})" if r == c else f"sym({r}, {c})"), E
                elif ((structure == "lower" and r >= c) or (structure == "upper" and r <= c)
                      or (structure == "diagonal" and r == c)):
                    E[r, c] = 1.0
                    yield f"({r}, {c})", E

    def _check_spd(self, A, b, fin):
        where = f"input {self.index}{_label(b, '')}"
        scale = max(1.0, float(np.max(np.abs(A))))
        asym = float(np.max(np.abs(A - A.T)))
        if asym > 100 * fin * scale:
            raise ValueError(f"gradcheck: structure 'spd' needs a symmetric matrix, but {where} "
                             f"has max |A - A^T| = {asym:.3g}")
        lam = float(np.linalg.eigvalsh((A + A.T) / 2)[0])
        if lam <= 0:
            raise ValueError(f"gradcheck: structure 'spd' needs a positive-definite matrix, but "
                             f"{where} has smallest eigenvalue {lam:.3g}")
        if self.eps >= lam / 2:  # keep A +- eps D positive definite (|D|_2 <= 1)
            warnings.warn(f"gradcheck: eps={self.eps:g} is too large to stay positive definite "
                          f"around {where} (smallest eigenvalue {lam:.3g}); using "
                          f"{lam / 4:.3g}", stacklevel=4)
            self.eps = lam / 4

    def step(self, eps):
        """The step actually used for ``eps`` (an spd input caps it)."""
        return min(eps, self.eps) if self.structure == "spd" else eps

    def column(self, k, eps):
        eps = self.step(eps)
        if self.structure is None:
            flat = self.base.reshape(-1)
            plus, minus = flat.copy(), flat.copy()
            plus[k] += eps
            minus[k] -= eps
            denom = float(plus[k]) - float(minus[k])  # the step actually taken
            return (plus.reshape(self.shape), minus.reshape(self.shape),
                    denom if denom > 0 else 2 * eps)
        b, mat = self.items[k]
        return self._move(((b, mat),), eps) + (2 * eps,)

    def _move(self, parts, eps):
        """``base`` moved by ``+-eps`` along ``sum(parts)`` (per batch entry)."""
        points = []
        for t in (eps, -eps):
            x = np.array(self.base, dtype=np.float64)
            if self.structure == "orthogonal":
                n = self.shape[-1]
                for b in {b for b, _ in parts}:
                    W = sum(mat for bb, mat in parts if bb == b)
                    x[b] = (self.Q[b] @ _expm_skew(t * W))[:, :n]
            else:
                for b, mat in parts:
                    x[b] += t * mat
            points.append(x.astype(self.dtype))
        return tuple(points)

    def along(self, coeffs, eps):
        """The two points ``base +- eps v`` of the direction with these coordinates."""
        eps = self.step(eps)
        if self.structure is None:
            v = coeffs.reshape(self.shape)
            base = np.asarray(self.base, dtype=np.float64)
            return ((base + eps * v).astype(self.dtype), (base - eps * v).astype(self.dtype),
                    2 * eps)
        return self._move([(b, c * mat) for c, (b, mat) in zip(coeffs, self.items)], eps) + (
            2 * eps,)

    def vector(self, coeffs):
        """The direction (flat, in input coordinates) with these coordinates."""
        return coeffs if self.basis is None else self.basis @ coeffs

    def project(self, jac):
        return jac if self.basis is None else jac @ self.basis


def _directions(inputs, diff, structure, eps):
    structure = dict(structure or {})
    unknown = [k for k in structure if k not in diff]
    if unknown:
        raise ValueError(f"gradcheck: structure names input(s) {unknown}, which are not inputs "
                         f"that require grad (those are {diff})")
    return {i: _Directions(inputs[i], structure.get(i), i, eps) for i in diff}




class _Progress:
    """A tqdm bar on stderr, shown when the estimate from the first column is long (or
    always with ``mode=True``, never with ``mode=False``)."""

    def __init__(self, total, mode, desc):
        self.total, self.mode, self.desc = total, mode, desc
        self.done, self.bar, self.decided = 0, None, mode is False
        self.t0 = time.perf_counter()

    def tick(self, n):
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
        elif not self.decided:
            self.decided = True
            estimate = (time.perf_counter() - self.t0) / self.done * self.total
            if self.mode or estimate > PROGRESS_AFTER_S:
                try:
                    from tqdm import tqdm
                except ImportError:  # pragma: no cover - tqdm is a dependency
                    if self.mode:
                        warnings.warn("gradcheck: progress=True needs tqdm", stacklevel=3)
                    return
                self.bar = tqdm(total=self.total, initial=self.done, desc=self.desc,
                                unit="eval", file=sys.stderr, leave=False)

    def close(self):
        if self.bar is not None:
            self.bar.close()




def _evaluate(fn, inputs, i, point):
    args = list(inputs)
    args[i] = wrap(beside(point, inputs[i]._data))  # perturbed on the host, evaluated beside
    return [_host64(o).reshape(-1) if isinstance(o, Tensor) else None
            for o in _outputs(fn, args)]


def _host64(t):
    """A tensor's values as a float64 NumPy array (an explicit copy off a device)."""
    return np.asarray(t._host(), dtype=np.float64)


def _numerical(fn, inputs, i, dirs, eps, progress=None):
    columns = None
    with _state.no_grad():
        for k in range(dirs.size):
            plus, minus, denom = dirs.column(k, eps)
            vals = (_evaluate(fn, inputs, i, plus), _evaluate(fn, inputs, i, minus))
            if columns is None:
                columns = [None if v is None else np.zeros((v.size, dirs.size))
                           for v in vals[0]]
            for j, (p, m) in enumerate(zip(*vals)):
                if p is not None:
                    columns[j][:, k] = (p - m) / denom
            if progress is not None:
                progress.tick(2)
    if columns is None:  # an empty input: no directions
        columns = [None if not isinstance(o, Tensor) else np.zeros((o._data.size, 0))
                   for o in _outputs(fn, inputs)]
    return columns


def numerical_jacobian(fn, inputs, i, eps):
    """Central-difference Jacobians of every output with respect to input ``i``.

    Parameters
    ----------
    fn : callable
    inputs : tuple
    i : int
        The input perturbed.
    eps : float
        The step.

    Returns
    -------
    list
        Per output, an array of shape (output size, input size) (None for an output that
        is not a Tensor). The user's arrays are never modified: each evaluation gets a
        perturbed copy.
    """
    inputs = _tuple(inputs)
    return _numerical(fn, inputs, i, _Directions(inputs[i]), eps)


def analytic_jacobian(outputs, inputs, diff_inputs):
    """Jacobians from VJPs: one backward pass per output entry.

    Parameters
    ----------
    outputs : tuple of Tensor
    inputs : tuple
    diff_inputs : list of int
        The inputs differentiated.

    Returns
    -------
    dict
        ``{(output, input): array of shape (output size, input size)}`` for the outputs
        that require grad.
    """
    from ._grad import grad

    result = {}
    for j, y in enumerate(outputs):
        if not isinstance(y, Tensor) or not y._requires_grad:
            continue
        rows = {i: np.zeros((y._data.size, inputs[i]._data.size)) for i in diff_inputs}
        for r in range(y._data.size):
            seed = np.zeros(y._data.size, dtype=numpy_dtype(y.dtype))
            seed[r] = 1
            grads = grad(y, [inputs[i] for i in diff_inputs],
                         wrap(beside(seed.reshape(y.shape), y._data)),
                         retain_graph=True, allow_unused=True)
            for i, g in zip(diff_inputs, grads):
                if g is not None:
                    rows[i][r] = _host64(g).reshape(-1)
        for i in diff_inputs:
            result[(j, i)] = rows[i]
    return result


def _as_float64(x):
    if not isinstance(x, Tensor) or dtype_kind(x.dtype) != "f" \
            or numpy_dtype(x.dtype) == np.float64:
        return x
    return wrap(beside(_host64(x), x._data), requires_grad=x._requires_grad)


def forward_jacobian(fn, inputs, diff_inputs):
    """Jacobians from JVPs (forward mode): one forward pass per input entry, its tangent a
    one-hot direction.

    Returns
    -------
    dict
        ``{(output, input): array of shape (output size, input size)}`` for the float
        outputs.
    """
    from . import forward_ad as fwAD

    result = {}
    for i in diff_inputs:
        x = inputs[i]
        n = x._data.size
        for k in range(n):
            seed = np.zeros(n, dtype=numpy_dtype(x.dtype))
            seed[k] = 1
            with fwAD.dual_level():
                args = list(inputs)
                args[i] = fwAD.make_dual(x.detach(), wrap(beside(seed.reshape(x.shape),
                                                                 x._data)))
                outs = fn(*args)
                outs = outs if isinstance(outs, tuple) else (outs,)
                for j, y in enumerate(outs):
                    if not isinstance(y, Tensor) or dtype_kind(y.dtype) != "f":
                        continue
                    col = result.setdefault((j, i), np.zeros((y._data.size, n)))
                    t = fwAD.unpack_dual(y).tangent
                    if t is not None:
                        col[:, k] = _host64(t).reshape(-1)
    return result
