"""Optimizers, as ``torch.optim``: SGD, Adam, AdamW, RMSprop, Adagrad and LBFGS.

An optimizer takes an iterable of parameters (``model.parameters()``, a generator, or a list
of tensors) or a list of parameter groups (dicts with ``"params"`` and per-group options
such as ``"lr"``). ``step()`` updates each parameter ``p`` in place under ``no_grad`` (the
data changes, the tensor stays a leaf, its version counter is bumped), with the update
rules of PyTorch's implementations (the formulas of the ``torch.optim`` documentation, in
the same order of floating-point operations). They compute with the parameters' own backend
(NumPy, CuPy, Dask); on Dask, ``step()`` is where the work happens: the new parameters and
the optimizer's state are computed in one shared ``dask.persist``.

``chainrule.optim.lr_scheduler`` has StepLR, ExponentialLR, CosineAnnealingLR and
ReduceLROnPlateau.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from .._state import enable_grad
from .._tensor import Tensor
from ..backend import backend_of

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "LBFGS", "lr_scheduler"]


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


class Optimizer:
    """Base class: holds ``param_groups`` (list of dicts) and ``state`` (``{param: dict}``).

    Parameters
    ----------
    params : iterable of Tensor, or iterable of dict
        Leaf tensors with ``requires_grad=True`` (e.g. ``model.parameters()``), or parameter
        groups ``{"params": [...], "lr": ..., ...}`` whose missing options take ``defaults``.
    defaults : dict
        The default options.

    Raises
    ------
    ValueError
        An empty parameter list, a parameter that is not a leaf requiring grad, or a
        parameter in more than one group.
    TypeError
        ``params`` is a single Tensor (pass an iterable).
    """

    def __init__(self, params, defaults):
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {type(params).__name__}")
        self.defaults = defaults
        self.state = {}
        self.param_groups = []
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__}: optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    @property
    def params(self):
        """All parameters, group after group (a list)."""
        return [p for g in self.param_groups for p in g["params"]]

    def add_param_group(self, param_group):
        """Add a group ``{"params": ..., option: value}``; options it lacks take the
        optimizer's defaults.

        Raises ValueError for a parameter already in another group, a non-leaf or a tensor
        that does not require grad, or a missing required option."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        group = dict(param_group)
        ps = group["params"]
        group["params"] = [ps] if isinstance(ps, Tensor) else list(ps)
        for i, p in enumerate(group["params"]):
            if not isinstance(p, Tensor):
                raise TypeError(f"{type(self).__name__} can only optimize Tensors, but one of "
                                f"the params is {type(p).__name__}")
            if not p.requires_grad or not p.is_leaf:
                raise ValueError(f"{type(self).__name__}: optimizer parameter {i} must be a "
                                 "leaf Tensor with requires_grad=True (can't optimize a "
                                 "non-leaf Tensor)")
        for k, v in self.defaults.items():
            if v is required and k not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {k}")
            group.setdefault(k, v)
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if existing & {id(p) for p in group["params"]}:
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        """Clear the gradients: set them to None (default) or to zeros."""
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad._data = p.grad._data * 0

    # --- state dict ----------------------------------------------------------------------
    def state_dict(self):
        """``{"state": {index: {name: value}}, "param_groups": [{..., "params": [index]}]}``
        with parameters numbered across groups, as PyTorch."""
        index = {}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            ids = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        state = {index[id(p)]: v for p, v in self._state_items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def _state_items(self):
        for g in self.param_groups:
            for p in g["params"]:
                if p in self.state:
                    yield p, self.state[p]

    def load_state_dict(self, state_dict):
        """Load a :meth:`state_dict` (copied) into an optimizer over parameters of the same
        shapes and grouping.

        Raises ValueError when the number of groups or of parameters per group differs."""
        state_dict = copy.deepcopy(state_dict)
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, theirs in zip(self.param_groups, groups):
            if len(mine["params"]) != len(theirs["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 "match the size of optimizer's group")
        self.state = {}
        for mine, theirs in zip(self.param_groups, groups):
            for p, i in zip(mine["params"], theirs["params"]):
                if i in state_dict["state"]:
                    self.state[p] = state_dict["state"][i]
            for k, v in theirs.items():
                if k != "params":
                    mine[k] = v

    def __repr__(self):
        s = type(self).__name__ + " ("
        for i, g in enumerate(self.param_groups):
            s += f"\nParameter Group {i}"
            for k in sorted(g):
                if k != "params":
                    s += f"\n    {k}: {g[k]}"
        return s + "\n)"

    # --- helpers -------------------------------------------------------------------------
    def _grads(self, group):
        """``(p, gradient array)`` for the group's parameters that have a gradient
        (negated under ``maximize``)."""
        for p in group["params"]:
            if p.grad is None:
                continue
            g = p.grad._data
            if group.get("maximize", False):
                g = -g
            yield p, g

    def _set(self, p, new):
        """Write ``new`` (an array) into ``p``'s data in place."""
        if p._data.__class__ is np.ndarray:
            p._data[...] = new
        else:
            p._data = new
        p._vc[0] += 1

    def _update(self, p, step):
        if p._data.__class__ is np.ndarray:
            p._data -= step
        else:
            p._data = p._data - step
        p._vc[0] += 1

    def _persist(self):
        """Compute the lazy (Dask) parameters and state in one shared persist."""
        lazy = [p for p in self.params if p._data.__class__ is not np.ndarray
                and backend_of(p._data).lazy]
        if not lazy:
            return
        import dask

        slots = [(p, k) for p in lazy if p in self.state for k, v in self.state[p].items()
                 if not isinstance(v, (int, float, list, np.ndarray)) and v is not None]
        flat = [p._data for p in lazy] + [self.state[p][k] for p, k in slots]
        done = dask.persist(*flat)
        for p, d in zip(lazy, done):
            p._data = d
        for (p, k), d in zip(slots, done[len(lazy):]):
            self.state[p][k] = d


def _check(name, value, what, low=0.0):
    if not value >= low:
        raise ValueError(f"{name}: Invalid {what}: {value}")


class SGD(Optimizer):
    """Stochastic gradient descent (PyTorch's formulation):
    ``g = grad + wd p``; with momentum ``b = momentum b + (1 - dampening) g`` (``b = g`` at
    the first step) and ``g = g + momentum b`` (nesterov) or ``g = b``; ``p -= lr g``.

    Raises ValueError for a negative lr, momentum or weight decay, or nesterov without
    momentum > 0 and dampening 0."""

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, *, maximize=False):
        _check("SGD", lr, "learning rate")
        _check("SGD", momentum, "momentum value")
        _check("SGD", weight_decay, "weight_decay value")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def step(self, closure=None):
        """One update; ``closure`` (re-evaluates and returns the loss) is called first when
        given, and its loss returned."""
        loss = _call(closure)
        for group in self.param_groups:
            lr, mu, wd = group["lr"], group["momentum"], group["weight_decay"]
            for p, g in self._grads(group):
                if wd:
                    g = g + wd * p._data
                if mu:
                    st = self.state.setdefault(p, {})
                    buf = st.get("momentum_buffer")
                    if buf is None:
                        buf = backend_of(g).xp.asarray(g, copy=True)
                    else:
                        buf = mu * buf + (1 - group["dampening"]) * g
                    st["momentum_buffer"] = buf
                    g = g + mu * buf if group["nesterov"] else buf
                self._update(p, lr * g)
        self._persist()
        return loss


def _call(closure):
    if closure is None:
        return None
    with enable_grad():
        return closure()


class Adam(Optimizer):
    """Adam (Kingma and Ba, 2015) as ``torch.optim.Adam``: with ``g = grad + wd p``,
    ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2`` (``v_max = max(v_max, v)``
    with ``amsgrad``), ``p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)``;
    ``t`` counts each parameter's steps.

    Raises ValueError for a negative lr, eps or weight decay, or betas outside [0, 1)."""

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, *, maximize=False):
        name = type(self).__name__
        _check(name, lr, "learning rate")
        _check(name, eps, "epsilon value")
        _check(name, weight_decay, "weight_decay value")
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"{name}: Invalid beta parameter at index {i}: {b}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    def step(self, closure=None):
        """One update (``closure`` as :meth:`SGD.step`)."""
        loss = _call(closure)
        for group in self.param_groups:
            lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], \
                group["weight_decay"]
            for p, g in self._grads(group):
                xp = backend_of(p._data).xp
                if wd:
                    if self._decoupled:
                        self._set(p, p._data * (1 - lr * wd))
                    else:
                        g = g + wd * p._data
                st = self.state.setdefault(p, {})
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = xp.zeros_like(p._data)
                    st["exp_avg_sq"] = xp.zeros_like(p._data)
                    if group["amsgrad"]:
                        st["max_exp_avg_sq"] = xp.zeros_like(p._data)
                st["step"] += 1
                t = st["step"]
                m = st["exp_avg"] + (g - st["exp_avg"]) * (1 - b1)  # torch's lerp_
                v = st["exp_avg_sq"] * b2 + (1 - b2) * g * g
                st["exp_avg"], st["exp_avg_sq"] = m, v
                c1 = 1 - b1 ** t
                c2_sqrt = math.sqrt(1 - b2 ** t)
                if group["amsgrad"]:
                    st["max_exp_avg_sq"] = xp.maximum(st["max_exp_avg_sq"], v)
                    denom = xp.sqrt(st["max_exp_avg_sq"]) / c2_sqrt + eps
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
                 amsgrad=False, *, maximize=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)


class RMSprop(Optimizer):
    """RMSprop as ``torch.optim.RMSprop``: ``g = grad + wd p``,
    ``v = alpha v + (1 - alpha) g^2``; ``centered``: ``a = alpha a + (1 - alpha) g`` and
    ``avg = sqrt(v - a^2) + eps``, else ``avg = sqrt(v) + eps``; with momentum
    ``b = momentum b + g / avg``, ``p -= lr b``, else ``p -= lr g / avg``.

    Raises ValueError for negative lr, eps, momentum, weight decay or alpha."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                 centered=False, *, maximize=False):
        for v, what in ((lr, "learning rate"), (eps, "epsilon value"),
                        (momentum, "momentum value"), (weight_decay, "weight_decay value"),
                        (alpha, "alpha value")):
            _check("RMSprop", v, what)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize))

    def step(self, closure=None):
        """One update (``closure`` as :meth:`SGD.step`)."""
        loss = _call(closure)
        for group in self.param_groups:
            lr, alpha, eps, wd, mu = (group[k] for k in ("lr", "alpha", "eps", "weight_decay",
                                                         "momentum"))
            for p, g in self._grads(group):
                xp = backend_of(p._data).xp
                if wd:
                    g = g + wd * p._data
                st = self.state.setdefault(p, {})
                if not st:
                    st["step"] = 0
                    st["square_avg"] = xp.zeros_like(p._data)
                    if mu > 0:
                        st["momentum_buffer"] = xp.zeros_like(p._data)
                    if group["centered"]:
                        st["grad_avg"] = xp.zeros_like(p._data)
                st["step"] += 1
                v = st["square_avg"] * alpha + (1 - alpha) * g * g
                st["square_avg"] = v
                if group["centered"]:
                    a = st["grad_avg"] + (g - st["grad_avg"]) * (1 - alpha)
                    st["grad_avg"] = a
                    avg = xp.sqrt(v - a * a) + eps
                else:
                    avg = xp.sqrt(v) + eps
                if mu > 0:
                    buf = st["momentum_buffer"] * mu + g / avg
                    st["momentum_buffer"] = buf
                    self._update(p, lr * buf)
                else:
                    self._update(p, lr * (g / avg))
        self._persist()
        return loss


class Adagrad(Optimizer):
    """Adagrad as ``torch.optim.Adagrad``: ``g = grad + wd p``,
    ``clr = lr / (1 + (t - 1) lr_decay)``, ``s = s + g^2``, ``p -= clr g / (sqrt(s) + eps)``.

    Raises ValueError for negative lr, lr_decay, weight decay, initial accumulator or eps."""

    def __init__(self, params, lr=1e-2, lr_decay=0.0, weight_decay=0.0,
                 initial_accumulator_value=0.0, eps=1e-10, *, maximize=False):
        for v, what in ((lr, "learning rate"), (lr_decay, "lr_decay value"),
                        (weight_decay, "weight_decay value"),
                        (initial_accumulator_value, "initial_accumulator_value"),
                        (eps, "epsilon value")):
            _check("Adagrad", v, what)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, maximize=maximize))
        for group in self.param_groups:
            for p in group["params"]:
                xp = backend_of(p._data).xp
                self.state[p] = {"step": 0, "sum": xp.full_like(
                    p._data, group["initial_accumulator_value"])}

    def step(self, closure=None):
        """One update (``closure`` as :meth:`SGD.step`)."""
        loss = _call(closure)
        for group in self.param_groups:
            lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
            for p, g in self._grads(group):
                xp = backend_of(p._data).xp
                st = self.state.setdefault(p, {"step": 0, "sum": xp.full_like(
                    p._data, group["initial_accumulator_value"])})
                st["step"] += 1
                if wd:
                    g = g + wd * p._data
                clr = lr / (1 + (st["step"] - 1) * group["lr_decay"])
                st["sum"] = st["sum"] + g * g
                self._update(p, clr * (g / (xp.sqrt(st["sum"]) + eps)))
        self._persist()
        return loss


class LBFGS(Optimizer):
    """L-BFGS as ``torch.optim.LBFGS`` (one parameter group; a fixed step ``lr`` along the
    two-loop-recursion direction, the first step scaled by ``min(1, 1 / |g|_1)``).

    ``step(closure)`` runs up to ``max_iter`` iterations, calling ``closure`` (which zeroes
    the gradients, computes the loss, calls ``backward`` and returns the loss) to
    re-evaluate; it returns the first loss.

    Raises
    ------
    ValueError
        More than one parameter group, or an unknown ``line_search_fn``.
    NotImplementedError
        ``line_search_fn="strong_wolfe"`` (not implemented in chainrule).
    """

    def __init__(self, params, lr=1.0, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        _check("LBFGS", lr, "learning rate")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: only 'strong_wolfe' is supported, got {line_search_fn!r}")
        if line_search_fn == "strong_wolfe":
            raise NotImplementedError("LBFGS: line_search_fn='strong_wolfe' is not implemented "
                                      "in chainrule; use line_search_fn=None")
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

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

    def step(self, closure):
        """Run the L-BFGS iterations; returns the loss of the first ``closure()`` call.

        Raises TypeError without a closure."""
        if closure is None:
            raise TypeError("LBFGS.step requires a closure that reevaluates the model and "
                            "returns the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
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

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag = state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
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
                al = [None] * num_old
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
            self._add_grad(t, d)
            ls_func_evals = 0
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
        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss


from . import lr_scheduler  # noqa: E402
