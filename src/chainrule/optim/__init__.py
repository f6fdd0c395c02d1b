"""Optimizers, as ``torch.optim``: SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax,
NAdam, RAdam, Rprop, ASGD, LBFGS, Adafactor and Muon.

An optimizer takes an iterable of parameters (``model.parameters()``, a generator, or a list
of tensors) or a list of parameter groups (dicts with ``"params"`` and per-group options
such as ``"lr"``). ``step()`` updates each parameter ``p`` in place under ``no_grad`` (the
data changes, the tensor stays a leaf, its version counter is bumped), with the update
rules of PyTorch's implementations (the formulas of the ``torch.optim`` documentation, in
the same order of floating-point operations). They compute with the parameters' own backend
(NumPy, CuPy, Dask); on Dask, ``step()`` is where the work happens: the new parameters and
the optimizer's state are computed in one shared ``dask.persist``.

As in PyTorch, ``optimizer.state[p]`` holds chainrule Tensors: the buffers
(``momentum_buffer``, ``exp_avg``, ``exp_avg_sq``, ...) have the parameter's shape, dtype and
backend, and ``state[p]["step"]`` (and NAdam's ``mu_product``, ASGD's ``eta`` and ``mu``) is
a 0-d NumPy-backed tensor of the default float dtype (float64 unless
``chainrule.set_default_dtype`` changes it; PyTorch's is float32 unless its default is
float64). A step replaces the data of these tensors (the same Tensor objects stay in the
state), so a reference taken from ``optimizer.state`` or ``state_dict()`` follows the updates.

``chainrule.optim.swa_utils`` has AveragedModel (SWA / EMA of weights), SWALR and update_bn.

``chainrule.optim.lr_scheduler`` has PyTorch's schedulers: LambdaLR, MultiplicativeLR,
StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR, PolynomialLR, CosineAnnealingLR,
CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR, SequentialLR, ChainedScheduler and
ReduceLROnPlateau.
"""

from __future__ import annotations

import math

import numpy as np

from .._tensor import Tensor, wrap
from ..backend import backend_of
from . import lr_scheduler, swa_utils
from ._factored import Adafactor, Muon
from ._line_search import strong_wolfe
from ._more import ASGD, Adadelta, Adamax, NAdam, RAdam, Rprop, _impl
from .optimizer import Optimizer, _call, _check, _lerp, _num, _scalar, _sub_square, _tick, _zeros

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "NAdam", "RAdam", "Rprop", "ASGD", "LBFGS", "Adafactor", "Muon", "lr_scheduler",
           "swa_utils"]


class SGD(Optimizer):
    """Stochastic gradient descent (PyTorch's formulation):
    ``g = grad + wd p``; with momentum ``b = momentum b + (1 - dampening) g`` (``b = g`` at
    the first step) and ``g = g + momentum b`` (nesterov) or ``g = b``; ``p -= lr g``.

    ``foreach`` and ``fused`` are accepted and recorded in the parameter groups (they
    choose an implementation in PyTorch, not a result).

    Raises ValueError for a negative lr, momentum or weight decay, or nesterov without
    momentum > 0 and dampening 0; NotImplementedError for ``differentiable=True``."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        _check("SGD", lr, "learning rate")
        _check("SGD", momentum, "momentum value")
        _check("SGD", weight_decay, "weight_decay value")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, _impl(dict(lr=lr, momentum=momentum, dampening=dampening,
                                            weight_decay=weight_decay, nesterov=nesterov,
                                            maximize=maximize), foreach, None,
                                       differentiable, fused=fused))

    def step(self, closure=None):
        """One update; ``closure`` (re-evaluates and returns the loss) is called first when
        given, and its loss returned."""
        loss = _call(closure)
        for group in self.param_groups:
            lr, mu, wd = _num(group["lr"]), group["momentum"], group["weight_decay"]
            for p, g in self._grads(group):
                if wd:
                    g = g + wd * p._data
                if mu:
                    st = self.state.setdefault(p, {})
                    buf_t = st.get("momentum_buffer")
                    if buf_t is None:
                        buf = backend_of(g).xp.asarray(g, copy=True)
                        st["momentum_buffer"] = wrap(buf)
                    else:
                        buf = mu * buf_t._data + (1 - group["dampening"]) * g
                        buf_t._data = buf
                    g = g + mu * buf if group["nesterov"] else buf
                self._update(p, lr * g)
        self._persist()
        return loss


class Adam(Optimizer):
    """Adam (Kingma and Ba, 2015) as ``torch.optim.Adam``: with ``g = grad + wd p``,
    ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2`` (``v_max = max(v_max, v)``
    with ``amsgrad``), ``p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)``;
    ``t`` counts each parameter's steps. ``decoupled_weight_decay=True`` decays
    ``p *= 1 - lr wd`` before the step instead of adding ``wd p`` to the gradient (AdamW).
    ``foreach``, ``capturable`` and ``fused`` are accepted and recorded in the parameter
    groups (they choose an implementation in PyTorch, not a result).

    ``lr`` (and both ``betas``) may be one-element Tensors, read as numbers at each step.

    Raises ValueError for a negative lr, eps or weight decay, betas outside [0, 1), betas
    mixing floats and Tensors (an int beta such as ``0`` included, as PyTorch), a Tensor
    lr or beta with more than one element or with ``foreach=True`` and
    ``capturable=False``; RuntimeError for ``fused=True`` with ``foreach=True``;
    NotImplementedError for ``differentiable=True``."""

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        name = type(self).__name__
        if isinstance(lr, Tensor) and foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and "
                             "foreach=True")
        _check(name, lr, "learning rate")
        _check(name, eps, "epsilon value")
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
        _check(name, weight_decay, "weight_decay value")
        if not (all(isinstance(b, float) for b in betas)
                or all(isinstance(b, Tensor) for b in betas)):
            raise ValueError("betas must be either both floats or both Tensors")
        for i, b in enumerate(betas):
            if isinstance(b, Tensor):
                if foreach and not capturable:
                    raise ValueError(f"betas[{i}] as a Tensor is not supported for "
                                     "capturable=False and foreach=True")
                if b.numel() != 1:
                    raise ValueError(f"Tensor betas[{i}] must be 1-element")
        defaults = _impl(dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                              amsgrad=amsgrad, maximize=maximize), foreach, capturable,
                         differentiable, fused=fused)
        defaults["decoupled_weight_decay"] = bool(decoupled_weight_decay or self._decoupled)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update (``closure`` as :meth:`SGD.step`)."""
        loss = _call(closure)
        for group in self.param_groups:
            lr, (b1, b2), eps, wd = _num(group["lr"]), _num(group["betas"]), group["eps"], \
                group["weight_decay"]
            for p, g in self._grads(group):
                xp = backend_of(p._data).xp
                if wd:
                    if group.get("decoupled_weight_decay", self._decoupled):
                        self._set(p, p._data * (1 - lr * wd))
                    else:
                        g = g + wd * p._data
                st = self.state.setdefault(p, {})
                if not st:
                    st["step"] = _scalar(0.0, group.get("fused"))
                    st["exp_avg"] = _zeros(p)
                    st["exp_avg_sq"] = _zeros(p)
                    if group["amsgrad"]:
                        st["max_exp_avg_sq"] = _zeros(p)
                t = _tick(st["step"])
                m_t, v_t = st["exp_avg"], st["exp_avg_sq"]
                m = _lerp(m_t._data, g, 1 - b1)
                v = v_t._data * b2 + (1 - b2) * g * g
                m_t._data, v_t._data = m, v
                c1 = 1 - b1 ** t
                c2_sqrt = math.sqrt(1 - b2 ** t)
                if group["amsgrad"]:
                    vmax_t = st["max_exp_avg_sq"]
                    vmax_t._data = xp.maximum(vmax_t._data, v)
                    denom = xp.sqrt(vmax_t._data) / c2_sqrt + eps
                else:
                    denom = xp.sqrt(v) / c2_sqrt + eps
                self._update(p, (lr / c1) * (m / denom))
        self._persist()
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov and Hutter, 2019), as
    ``torch.optim.AdamW``: ``p *= 1 - lr wd`` before the Adam step (default
    ``weight_decay=1e-2``)."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         foreach=foreach, capturable=capturable,
                         differentiable=differentiable, fused=fused)


class RMSprop(Optimizer):
    """RMSprop as ``torch.optim.RMSprop``: ``g = grad + wd p``,
    ``v = alpha v + (1 - alpha) g^2``; ``centered``: ``a = alpha a + (1 - alpha) g`` and
    ``avg = sqrt(v - a^2) + eps``, else ``avg = sqrt(v) + eps``; with momentum
    ``b = momentum b + g / avg``, ``p -= lr b``, else ``p -= lr g / avg``.

    ``capturable`` and ``foreach`` are accepted and recorded in the parameter groups.

    Raises ValueError for negative lr, eps, momentum, weight decay or alpha;
    NotImplementedError for ``differentiable=True``."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        for v, what in ((lr, "learning rate"), (eps, "epsilon value"),
                        (momentum, "momentum value"), (weight_decay, "weight_decay value"),
                        (alpha, "alpha value")):
            _check("RMSprop", v, what)
        super().__init__(params, _impl(dict(lr=lr, alpha=alpha, eps=eps,
                                            weight_decay=weight_decay, momentum=momentum,
                                            centered=centered, maximize=maximize),
                                       foreach, capturable, differentiable))

    def step(self, closure=None):
        """One update (``closure`` as :meth:`SGD.step`)."""
        loss = _call(closure)
        for group in self.param_groups:
            lr, alpha, eps, wd, mu = (_num(group[k]) for k in ("lr", "alpha", "eps",
                                                               "weight_decay", "momentum"))
            for p, g in self._grads(group):
                xp = backend_of(p._data).xp
                if wd:
                    g = g + wd * p._data
                st = self.state.setdefault(p, {})
                if not st:
                    st["step"] = _scalar(0.0)
                    st["square_avg"] = _zeros(p)
                    if mu > 0:
                        st["momentum_buffer"] = _zeros(p)
                    if group["centered"]:
                        st["grad_avg"] = _zeros(p)
                _tick(st["step"])
                v_t = st["square_avg"]
                v = v_t._data * alpha + (1 - alpha) * g * g
                v_t._data = v
                if group["centered"]:
                    a_t = st["grad_avg"]
                    a = _lerp(a_t._data, g, 1 - alpha)
                    a_t._data = a
                    avg = xp.sqrt(_sub_square(v, a)) + eps
                else:
                    avg = xp.sqrt(v) + eps
                if mu > 0:
                    buf_t = st["momentum_buffer"]
                    buf = buf_t._data * mu + g / avg
                    buf_t._data = buf
                    self._update(p, lr * buf)
                else:
                    self._update(p, lr * (g / avg))
        self._persist()
        return loss


class Adagrad(Optimizer):
    """Adagrad as ``torch.optim.Adagrad``: ``g = grad + wd p``,
    ``clr = lr / (1 + (t - 1) lr_decay)``, ``s = s + g^2``, ``p -= clr g / (sqrt(s) + eps)``.

    ``foreach`` and ``fused`` are accepted and recorded in the parameter groups. As in
    PyTorch, the accumulators ``s`` of the parameters given to the constructor start at its
    ``initial_accumulator_value`` (a group's own ``initial_accumulator_value`` is recorded
    but does not change them).

    Raises ValueError for negative lr, lr_decay, weight decay, initial accumulator or eps;
    NotImplementedError for ``differentiable=True``."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0,
                 initial_accumulator_value=0, eps=1e-10, foreach=None, *, maximize=False,
                 differentiable=False, fused=None):
        for v, what in ((lr, "learning rate"), (lr_decay, "lr_decay value"),
                        (weight_decay, "weight_decay value"),
                        (initial_accumulator_value, "initial_accumulator_value"),
                        (eps, "epsilon value")):
            _check("Adagrad", v, what)
        super().__init__(params, _impl(dict(lr=lr, lr_decay=lr_decay,
                                            weight_decay=weight_decay,
                                            initial_accumulator_value=initial_accumulator_value,
                                            eps=eps, maximize=maximize), foreach, None,
                                       differentiable, fused=fused))
        for group in self.param_groups:  # as PyTorch: every group's accumulators start
            for p in group["params"]:    # at the constructor's initial_accumulator_value
                self.state[p] = self._fresh(p, group, initial_accumulator_value)

    @staticmethod
    def _fresh(p, group, init=None):
        """The state of a parameter: ``step`` 0 and ``sum`` filled with ``init`` (for a
        parameter of a group added later, that group's ``initial_accumulator_value``)."""
        xp = backend_of(p._data).xp
        if init is None:
            init = group["initial_accumulator_value"]
        return {"step": _scalar(0.0, group.get("fused")),
                "sum": wrap(xp.full_like(p._data, init))}

    def step(self, closure=None):
        """One update (``closure`` as :meth:`SGD.step`)."""
        loss = _call(closure)
        for group in self.param_groups:
            lr, wd, eps = _num(group["lr"]), group["weight_decay"], group["eps"]
            for p, g in self._grads(group):
                xp = backend_of(p._data).xp
                st = self.state.get(p)
                if st is None:
                    st = self.state[p] = self._fresh(p, group)
                t = _tick(st["step"])
                if wd:
                    g = g + wd * p._data
                clr = lr / (1 + (t - 1) * group["lr_decay"])
                s_t = st["sum"]
                s_t._data = s_t._data + g * g
                self._update(p, clr * (g / (xp.sqrt(s_t._data) + eps)))
        self._persist()
        return loss


class LBFGS(Optimizer):
    """L-BFGS as ``torch.optim.LBFGS`` (one parameter group): a step along the
    two-loop-recursion direction, of fixed length ``lr`` (the first one scaled by
    ``min(1, 1 / |g|_1)``) or, with ``line_search_fn="strong_wolfe"``, found by PyTorch's
    strong-Wolfe line search from that initial guess.

    ``step(closure)`` runs up to ``max_iter`` iterations, calling ``closure`` (which zeroes
    the gradients, computes the loss, calls ``backward`` and returns the loss) to
    re-evaluate; it returns the first loss.

    Raises
    ------
    ValueError
        More than one parameter group, or an unknown ``line_search_fn``.
    """

    def __init__(self, params, lr=1.0, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        _check("LBFGS", lr, "learning rate")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        if line_search_fn not in (None, "strong_wolfe"):
            raise RuntimeError(f"LBFGS: only 'strong_wolfe' is supported, got {line_search_fn!r}")
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    _scalar_keys = ()

    def _as_tensors(self, p, st):
        return st  # step() reads Tensors and arrays alike

    def _gather_flat_grad(self):
        return np.concatenate([
            np.zeros(p.numel(), dtype=p.dtype) if p.grad is None
            else np.asarray(p.grad._data).reshape(-1) for p in self._params])

    def _add_grad(self, step_size, update):
        offset = 0
        for p in self._params:
            n = p.numel()
            self._set(p, p._data + step_size * update[offset:offset + n].reshape(p.shape))
            offset += n

    def _directional_evaluate(self, closure, x, t, d):
        """``(loss, flat gradient)`` at ``x + t d``; the parameters are put back to ``x``."""
        self._add_grad(t, d)
        loss = float(_call(closure))
        flat_grad = self._gather_flat_grad()
        for p, v in zip(self._params, x):
            self._set(p, v)
        return loss, flat_grad

    def step(self, closure):
        """Run the L-BFGS iterations; returns the loss of the first ``closure()`` call.

        Raises TypeError without a closure."""
        if closure is None:
            raise TypeError("LBFGS.step requires a closure that reevaluates the model and "
                            "returns the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = _num(group["lr"]), group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]
        state = self.state.setdefault(self._params[0], {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = _call(closure)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if np.abs(flat_grad).max() <= tol_grad:
            return orig_loss

        d, t = _unwrap(state.get("d")), state.get("t")
        old_dirs, old_stps, ro = (_unwrap(state.get(k)) for k in ("old_dirs", "old_stps", "ro"))
        H_diag = _unwrap(state.get("H_diag"))
        prev_flat_grad = _unwrap(state.get("prev_flat_grad"))
        prev_loss = state.get("prev_loss")
        opt_cond = False
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)
                num_old = len(old_dirs)
                al = _unwrap(state.get("al")) or [None] * history_size  # kept, as PyTorch's
                q = -flat_grad
                for i in range(num_old - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q = q - al[i] * old_dirs[i]
                d = r = q * H_diag
                for i in range(num_old):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r = r + (al[i] - be_i) * old_stps[i]
                d = r
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d)
            if gtd > -tol_change:
                break
            ls_func_evals = 0
            if group["line_search_fn"] is not None:
                x_init = [p._data.copy() for p in self._params]
                loss, flat_grad, t, ls_func_evals = strong_wolfe(
                    lambda x, t, d: self._directional_evaluate(closure, x, t, d),
                    x_init, t, d, loss, flat_grad, float(gtd),
                    max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = np.abs(flat_grad).max() <= tol_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:
                    loss = float(_call(closure))
                    flat_grad = self._gather_flat_grad()
                    opt_cond = np.abs(flat_grad).max() <= tol_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if np.abs(d * t).max() <= tol_change:
                break
            if abs(loss - prev_loss) < tol_change:
                break
        state.update(d=_wrap(d), t=t, old_dirs=_wrap(old_dirs), old_stps=_wrap(old_stps),
                     ro=_wrap(ro), H_diag=_wrap(H_diag), prev_flat_grad=_wrap(prev_flat_grad),
                     prev_loss=prev_loss)
        if state["n_iter"] > 1:
            state["al"] = _wrap(al)
        return orig_loss


def _unwrap(v):
    """Arrays from (lists of) state Tensors."""
    if isinstance(v, list):
        return [_unwrap(x) for x in v]
    return v._data if isinstance(v, Tensor) else v


def _wrap(v):
    """(Lists of) arrays as state Tensors, as PyTorch keeps them; numbers stay numbers."""
    if isinstance(v, list):
        return [_wrap(x) for x in v]
    return wrap(v) if isinstance(v, (np.ndarray, np.generic)) else v


