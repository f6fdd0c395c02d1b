"""Learning-rate schedulers, as ``torch.optim.lr_scheduler`` (PyTorch 2's recursive
("chainable") formulas, with the closed forms for ``step(epoch)``): LambdaLR,
MultiplicativeLR, StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR, PolynomialLR,
CosineAnnealingLR, CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR, SequentialLR,
ChainedScheduler and ReduceLROnPlateau.

A scheduler sets ``group["lr"]`` of its optimizer's parameter groups (CyclicLR and
OneCycleLR also ``group["momentum"]`` or ``group["betas"][0]``); call ``step()`` after each
epoch's (or batch's) ``optimizer.step()`` (``ReduceLROnPlateau.step(metric)``), and read the
rates with ``get_last_lr()``. Construction takes the first step (``last_epoch`` becomes 0).
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from functools import partial, wraps
from weakref import ref

from .optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR",
           "ConstantLR", "LinearLR", "ExponentialLR", "SequentialLR", "CosineAnnealingLR",
           "ChainedScheduler", "ReduceLROnPlateau", "CyclicLR", "CosineAnnealingWarmRestarts",
           "OneCycleLR", "PolynomialLR"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being "
    "deprecated where possible. Please use `scheduler.step()` to step the "
    "scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. "
    "Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)


def _check_optimizer(optimizer):
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _format_param(name, optimizer, param):
    """One value per parameter group (a list of the right length, or one value repeated)."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. "
                f"{name} has {len(param)} values, param_groups has "
                f"{len(optimizer.param_groups)}.")
        return list(param)
    return [param] * len(optimizer.param_groups)


def _track_step_called(optimizer):
    """Make ``optimizer.step`` record that it was called (``optimizer._opt_called``), as
    PyTorch's schedulers do to warn about ``scheduler.step()`` before ``optimizer.step()``."""
    if hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        return
    opt_ref = ref(optimizer)
    func = optimizer.step.__func__

    @wraps(func)
    def wrapper(*args, **kwargs):
        opt = opt_ref()
        opt._opt_called = True
        return func.__get__(opt, type(opt))(*args, **kwargs)

    wrapper._wrapped_by_lr_sched = True
    optimizer.step = wrapper


def _lrs(optimizer):
    return [group["lr"] for group in optimizer.param_groups]


class LRScheduler:
    """Base class: records ``initial_lr`` in each group, ``base_lrs``, ``last_epoch``, and
    takes the first step (epoch 0) on construction.

    ``step()`` advances ``last_epoch`` by one and sets the rates from :meth:`get_lr` (the
    recursive form); ``step(epoch)`` (deprecated in PyTorch, with its warning) sets
    ``last_epoch = epoch`` and uses the closed form where the scheduler has one.

    Raises TypeError when ``optimizer`` is not a chainrule Optimizer, KeyError when resuming
    (``last_epoch != -1``) without ``initial_lr`` in the groups."""

    _is_initial = False

    def __init__(self, optimizer, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when "
                        "resuming scheduler with last_epoch >= 0.")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._get_lr_called_within_step = False  # PyTorch's flag (in its state dicts)
        _track_step_called(optimizer)
        self._initial_step()

    def _initial_step(self):
        """The step taken on construction (``get_lr`` sees ``_is_initial``)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self):
        """The rates for ``last_epoch`` from the current ones (the recursive form)."""
        raise NotImplementedError

    def get_last_lr(self):
        """The learning rates set by the last ``step()`` (one per group)."""
        return self._last_lr

    def step(self, epoch=None):
        """Advance one epoch (or go to ``epoch``) and set the groups' learning rates. The
        first call warns (UserWarning, as PyTorch) when ``optimizer.step()`` has not been
        called yet, or was replaced after the scheduler was made."""
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn("Seems like `optimizer.step()` has been overridden after learning "
                              "rate scheduler initialization. Please, make sure to call "
                              "`optimizer.step()` before `lr_scheduler.step()`.", UserWarning,
                              stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn("Detected call of `lr_scheduler.step()` before "
                              "`optimizer.step()`. In PyTorch 1.1.0 and later, you should call "
                              "them in the opposite order: `optimizer.step()` before "
                              "`lr_scheduler.step()`.  Failure to do this will result in "
                              "PyTorch skipping the first value of the learning rate "
                              "schedule.", UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._get_lr_called_within_step = True
        try:
            self._update_lr(epoch)
        finally:
            self._get_lr_called_within_step = False

    def _update_lr(self, epoch=None):
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            values = (self._get_closed_form_lr() if hasattr(self, "_get_closed_form_lr")
                      else self.get_lr())
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            group["lr"] = lr
        self._last_lr = _lrs(self.optimizer)

    def state_dict(self):
        """The scheduler's attributes, without the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        """Restore the attributes of a :meth:`state_dict`."""
        self.__dict__.update(state_dict)


_LRScheduler = LRScheduler


class _LambdaScheduler(LRScheduler):
    """LambdaLR and MultiplicativeLR: one function of the epoch per group; their state
    dicts keep the ``__dict__`` of callable objects, not functions (as PyTorch)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got "
                                 f"{len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self):
        """The attributes; each ``lr_lambda`` as None (a function) or its ``__dict__``."""
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        sd["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                            for fn in self.lr_lambdas]
        return sd

    def load_state_dict(self, state_dict):
        """Restore a :meth:`state_dict` (callable objects get their ``__dict__`` back)."""
        lr_lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        state_dict["lr_lambdas"] = lr_lambdas
        for fn, saved in zip(self.lr_lambdas, lr_lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class LambdaLR(_LambdaScheduler):
    """``lr = base_lr * lr_lambda(epoch)`` (one function, or one per group).

    Raises ValueError for a list of functions of the wrong length."""

    def get_lr(self):
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaScheduler):
    """``lr = lr * lr_lambda(epoch)`` at every step after the first.

    Raises ValueError for a list of the wrong length, TypeError for a non-callable."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        fns = lr_lambda if isinstance(lr_lambda, (list, tuple)) else [lr_lambda]
        if len(fns) == len(optimizer.param_groups) or not isinstance(lr_lambda, (list, tuple)):
            for fn in fns:
                if not callable(fn):
                    raise TypeError(
                        f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, lr_lambda, last_epoch)

    def get_lr(self):
        if self._is_initial:
            return _lrs(self.optimizer)
        return [g["lr"] * fn(self.last_epoch)
                for fn, g in zip(self.lr_lambdas, self.optimizer.param_groups)]


class StepLR(LRScheduler):
    """Multiply each group's lr by ``gamma`` every ``step_size`` epochs:
    ``lr = base_lr * gamma^(epoch // step_size)``."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [g["lr"] for g in self.optimizer.param_groups]
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base * self.gamma ** (self.last_epoch // self.step_size)
                for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply each group's lr by ``gamma`` every epoch: ``lr = base_lr * gamma^epoch``."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial:
            return _lrs(self.optimizer)
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the base lr to ``eta_min`` over ``T_max`` epochs
    (``eta_min + (base - eta_min)(1 + cos(pi t / T_max)) / 2``; Loshchilov and Hutter,
    2017, "SGDR: Stochastic Gradient Descent with Warm Restarts", without the restarts),
    with PyTorch's recursive update (which goes back up beyond ``T_max``)."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        e, T, lo = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return _lrs(self.optimizer)
        if self._step_count == 1 and e > 0:
            return [lo + (base - lo) * (1 + math.cos(e * math.pi / T)) / 2
                    for base in self.base_lrs]
        if (e - 1 - T) % (2 * T) == 0:
            return [g["lr"] + (base - lo) * (1 - math.cos(math.pi / T)) / 2
                    for base, g in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T))
                * (g["lr"] - lo) + lo for g in groups]

    def _get_closed_form_lr(self):
        return [self.eta_min + (base - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply each group's lr by ``gamma`` at each milestone epoch (by ``gamma^k`` for a
    milestone listed ``k`` times): ``lr = base_lr * gamma^(milestones passed)``."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch not in self.milestones:
            return _lrs(self.optimizer)
        return [g["lr"] * self.gamma ** self.milestones[self.last_epoch]
                for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        milestones = sorted(self.milestones.elements())
        return [base * self.gamma ** bisect_right(milestones, self.last_epoch)
                for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """``lr = base_lr * factor`` for the first ``total_iters`` epochs, then ``base_lr``.

    Raises ValueError for a factor outside [0, 1]."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in groups]
        if self.last_epoch != self.total_iters:
            return _lrs(self.optimizer)
        return [g["lr"] * (1.0 / self.factor) for g in groups]

    def _get_closed_form_lr(self):
        return [base * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the lr linearly from ``start_factor * base_lr`` to ``end_factor * base_lr`` over
    ``total_iters`` epochs, then keep it:
    ``lr = base_lr * (start + (end - start) * min(epoch, total_iters) / total_iters)``.

    Raises ValueError for a start factor outside (0, 1] or an end factor outside [0, 1]."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5,
                 last_epoch=-1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and "
                             "less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return _lrs(self.optimizer)
        d = self.end_factor - self.start_factor
        return [g["lr"] * (1.0 + d / (self.total_iters * self.start_factor
                                      + (self.last_epoch - 1) * d)) for g in groups]

    def _get_closed_form_lr(self):
        return [base * (self.start_factor + (self.end_factor - self.start_factor)
                        * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Polynomial decay to 0 over ``total_iters`` epochs:
    ``lr = base_lr * (1 - min(epoch, total_iters) / total_iters)^power``."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial or self.last_epoch > self.total_iters:
            return _lrs(self.optimizer)
        e, n = self.last_epoch, self.total_iters
        decay = ((1.0 - e / n) / (1.0 - (e - 1) / n)) ** self.power
        return [g["lr"] * decay for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters)
                ** self.power for base in self.base_lrs]


def _check_children(owner, optimizer, schedulers):
    name = type(owner).__name__
    for i, sched in enumerate(schedulers):
        if not hasattr(sched, "optimizer"):
            raise TypeError(f"{name} at index {i} should have `optimizer` as its attribute.")
        if isinstance(sched, ReduceLROnPlateau):
            raise ValueError(
                f"{name} does not support `ReduceLROnPlateau` scheduler as it requires "
                "additional kwargs to be specified when calling `step`, but got one at index "
                f"{i} in the given schedulers sequence.")
        if optimizer != sched.optimizer:
            raise ValueError(
                f"{name} expects all schedulers to belong to the same optimizer, but got "
                f"scheduler {type(sched).__name__} at index {i} has {sched.optimizer}, which "
                f"is different from {type(optimizer).__name__}.")


class _Composite(LRScheduler):
    def state_dict(self):
        """The attributes, with each child scheduler's own state dict."""
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        sd["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return sd

    def load_state_dict(self, state_dict):
        """Restore a :meth:`state_dict`, the children's included."""
        children = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        state_dict["_schedulers"] = children
        for sched, sd in zip(self._schedulers, children):
            sched.load_state_dict(sd)


class SequentialLR(_Composite):
    """Run ``schedulers[0]`` until ``milestones[0]``, then ``schedulers[1]`` (started afresh
    from the groups' ``initial_lr``, at its epoch 0) until ``milestones[1]``, and so on.

    Raises ValueError for no scheduler, a ReduceLROnPlateau, a scheduler of another
    optimizer, or ``len(milestones) != len(schedulers) - 1``."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler, but got no scheduler.")
        _check_children(self, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more "
                "than the number of milestone points, but got number of schedulers "
                f"{len(schedulers)} and the number of milestones to be equal to "
                f"{len(milestones)}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self.recursive_undo()
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = schedulers[idx].get_last_lr()

    def recursive_undo(self, sched=None):
        """Take back the construction step of the (nested) child schedulers."""
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for s in scheds._schedulers:
                self.recursive_undo(s)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self):
        """Advance one epoch with the scheduler of the current stage."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        sched = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            sched._update_lr(0)
        else:
            sched.step()
        self._last_lr = sched.get_last_lr()


class ChainedScheduler(_Composite):
    """Step every scheduler of the list at each ``step()`` (their multiplicative changes
    compose).

    Raises ValueError for no scheduler, a ReduceLROnPlateau, or schedulers of different
    optimizers."""

    def __init__(self, schedulers, optimizer=None):
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler to be "
                             "chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_children(self, optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _lrs(schedulers[-1].optimizer)

    def step(self):
        """Step each scheduler in turn."""
        for sched in self._schedulers:
            sched.step()
        self._last_lr = _lrs(self._schedulers[-1].optimizer)


def _set_momentum(group, use_beta1, momentum):
    if use_beta1:
        group["betas"] = (momentum, *group["betas"][1:])
    else:
        group["momentum"] = momentum


class CyclicLR(LRScheduler):
    """Cyclical learning rates (Smith, 2017, "Cyclical Learning Rates for Training Neural
    Networks"), as ``torch.optim.lr_scheduler.CyclicLR``; step it after every batch. With
    ``cycle = floor(1 + t / (up + down))``, ``x = 1 + t / (up + down) - cycle``, the height
    ``h = x / r`` while ``x <= r = up / (up + down)``, else ``(x - 1) / (r - 1)``:
    ``lr = base_lr + (max_lr - base_lr) h scale``, where ``scale`` is 1 (``"triangular"``),
    ``1 / 2^(cycle - 1)`` (``"triangular2"``), ``gamma^t`` (``"exp_range"``) or
    ``scale_fn(cycle or t)``. With ``cycle_momentum`` the momentum (or ``betas[0]``) moves
    inversely: ``max_momentum - (max_momentum - base_momentum) h scale``.

    Raises ValueError for an unknown mode without ``scale_fn``, or ``cycle_momentum`` with
    an optimizer without ``momentum`` or ``betas``."""

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None,
                 mode="triangular", gamma=1.0, scale_fn=None, scale_mode="cycle",
                 cycle_momentum=True, base_momentum=0.8, max_momentum=0.9, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = _format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups, strict=True):
                group["lr"] = lr
        self.max_lrs = _format_param("max_lr", optimizer, max_lr)
        step_size_up = float(step_size_up)
        step_size_down = float(step_size_down) if step_size_down is not None else step_size_up
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with "
                                 "`cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _format_param("base_momentum", optimizer, base_momentum)
            self.max_momentums = _format_param("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for hi, lo, group in zip(self.max_momentums, self.base_momentums,
                                         optimizer.param_groups, strict=True):
                    _set_momentum(group, self.use_beta1, hi)
                    group["max_momentum"] = hi
                    group["base_momentum"] = lo
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self):
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref = self._triangular_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref = self._triangular2_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self._scale_fn_ref = partial(self._exp_range_scale_fn, self.gamma)
            self.scale_mode = "iterations"

    def scale_fn(self, x):
        """The amplitude scale at cycle (or iteration) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    @staticmethod
    def _triangular_scale_fn(x):
        return 1.0

    @staticmethod
    def _triangular2_scale_fn(x):
        return 1 / (2.0 ** (x - 1))

    @staticmethod
    def _exp_range_scale_fn(gamma, x):
        return gamma ** x

    def get_lr(self):
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = [base + (hi - base) * scale_factor * self.scale_fn(at)
               for base, hi in zip(self.base_lrs, self.max_lrs, strict=True)]
        if self.cycle_momentum:
            for lo, hi, group in zip(self.base_momentums, self.max_momentums,
                                     self.optimizer.param_groups, strict=True):
                _set_momentum(group, self.use_beta1,
                              hi - (hi - lo) * scale_factor * self.scale_fn(at))
        return lrs

    def state_dict(self):
        """The attributes, without the scale function (a custom callable object's
        ``__dict__`` is kept, as PyTorch)."""
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict):
        """Restore a :meth:`state_dict`."""
        fn = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR (Loshchilov and Hutter, 2017, "SGDR: Stochastic Gradient Descent with Warm
    Restarts"): ``lr = eta_min + (base_lr - eta_min)(1 + cos(pi T_cur / T_i)) / 2``, where
    ``T_cur`` counts the epochs since the last restart and the period ``T_i`` starts at
    ``T_0`` and is multiplied by ``T_mult`` at each restart. ``step(epoch)`` takes a
    fractional epoch (e.g. ``epoch + i / iters`` per batch).

    Raises ValueError for a T_0 that is not a positive int, a T_mult that is not an int
    >= 1, a non-number eta_min, or a negative epoch."""

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type "
                             f"{type(eta_min)}")
        self.T_0 = self.T_i = T_0
        self.T_mult, self.eta_min = T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [self.eta_min + (base - self.eta_min)
                * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base in self.base_lrs]

    def step(self, epoch=None):
        """Advance one epoch, or go to ``epoch`` (a float is allowed)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        for group, lr in zip(self.optimizer.param_groups, self.get_lr(), strict=True):
            group["lr"] = lr
        self._last_lr = _lrs(self.optimizer)


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith and Topin, 2018, "Super-Convergence: Very Fast Training of
    Neural Networks Using Large Learning Rates"), as
    ``torch.optim.lr_scheduler.OneCycleLR``; step it after every batch. The lr goes from
    ``max_lr / div_factor`` up to ``max_lr`` over the first ``pct_start * total_steps - 1``
    steps, then down to ``initial_lr / final_div_factor`` at step ``total_steps - 1``
    (``three_phase``: back to the initial lr at ``2 pct_start total_steps - 2``, then down to
    the minimum), annealing each phase by ``end + (start - end)(1 + cos(pi pct)) / 2``
    (``"cos"``) or ``start + (end - start) pct`` (``"linear"``). With ``cycle_momentum``
    the momentum (or ``betas[0]``) moves the other way between ``max_momentum`` and
    ``base_momentum``.

    Raises ValueError for a bad total_steps, epochs, steps_per_epoch, pct_start or
    anneal_strategy, for ``cycle_momentum`` with an optimizer without ``momentum`` or
    ``betas``, and when stepped beyond ``total_steps``."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True,
                 base_momentum=0.85, max_momentum=0.95, div_factor=25.0, final_div_factor=1e4,
                 three_phase=False, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError("Expected positive integer steps_per_epoch, but got "
                                 f"{steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND "
                             "steps_per_epoch)")
        n = self.total_steps
        up = float(pct_start * n) - 1
        if three_phase:
            self._schedule_phases = [
                dict(end_step=up, start_lr="initial_lr", end_lr="max_lr",
                     start_momentum="max_momentum", end_momentum="base_momentum"),
                dict(end_step=float(2 * pct_start * n) - 2, start_lr="max_lr",
                     end_lr="initial_lr", start_momentum="base_momentum",
                     end_momentum="max_momentum"),
                dict(end_step=n - 1, start_lr="initial_lr", end_lr="min_lr",
                     start_momentum="max_momentum", end_momentum="max_momentum")]
        else:
            self._schedule_phases = [
                dict(end_step=up, start_lr="initial_lr", end_lr="max_lr",
                     start_momentum="max_momentum", end_momentum="base_momentum"),
                dict(end_step=n - 1, start_lr="max_lr", end_lr="min_lr",
                     start_momentum="base_momentum", end_momentum="max_momentum")]
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _format_param("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for hi, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = hi / div_factor
                group["max_lr"] = hi
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with "
                                 "`cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            max_momentums = _format_param("max_momentum", optimizer, max_momentum)
            base_momentums = _format_param("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for hi, lo, group in zip(max_momentums, base_momentums,
                                         optimizer.param_groups, strict=True):
                    _set_momentum(group, self.use_beta1, hi)
                    group["max_momentum"] = hi
                    group["base_momentum"] = lo
        super().__init__(optimizer, last_epoch)

    def _anneal_func(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return self._annealing_cos(start, end, pct)
        return self._annealing_linear(start, end, pct)

    @staticmethod
    def _annealing_cos(start, end, pct):
        """Cosine from ``start`` (pct 0) to ``end`` (pct 1)."""
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    @staticmethod
    def _annealing_linear(start, end, pct):
        """Linear from ``start`` (pct 0) to ``end`` (pct 1)."""
        return (end - start) * pct + start

    def get_lr(self):
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(f"Tried to step {step_num} times. The specified number of total "
                             f"steps is {self.total_steps}")
        lrs = []
        last = len(self._schedule_phases) - 1
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == last:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lr = self._anneal_func(group[phase["start_lr"]], group[phase["end_lr"]],
                                           pct)
                    if self.cycle_momentum:
                        momentum = self._anneal_func(group[phase["start_momentum"]],
                                                     group[phase["end_momentum"]], pct)
                    break
                start_step = phase["end_step"]
            lrs.append(lr)
            if self.cycle_momentum:
                _set_momentum(group, self.use_beta1, momentum)
        return lrs


class ReduceLROnPlateau(LRScheduler):
    """Multiply the lr by ``factor`` when the metric passed to ``step(metric)`` has not
    improved for more than ``patience`` epochs (then wait ``cooldown`` epochs); not below
    ``min_lr``, and only by changes larger than ``eps``. "Improved": below
    ``best * (1 - threshold)`` (mode 'min', threshold_mode 'rel'), ``best - threshold``
    ('abs'), or above ``best * (1 + threshold)`` / ``best + threshold`` (mode 'max').

    A parameter group added to the optimizer later gets the scalar ``min_lr`` (as PyTorch;
    with a ``min_lr`` list, reducing then raises RuntimeError: set ``min_lrs`` to match).

    Raises ValueError for a factor >= 1, an unknown mode or threshold mode, or a ``min_lr``
    list of the wrong length."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8):
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau: Factor should be < 1.0.")
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau: threshold mode {threshold_mode} is unknown!")
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != n:
                raise ValueError(f"ReduceLROnPlateau: expected {n} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * n
        self.factor, self.patience, self.cooldown = factor, patience, cooldown
        self.mode, self.threshold, self.threshold_mode, self.eps = mode, threshold, \
            threshold_mode, eps
        self.cooldown_counter = 0
        self.last_epoch = 0
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.best = self.mode_worse
        self.num_bad_epochs = 0
        self._last_lr = [g["lr"] for g in optimizer.param_groups]

    def is_better(self, a, best):
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def step(self, metrics, epoch=None):
        """Record this epoch's ``metrics`` (a number or one-element tensor) and reduce the
        learning rates when it has plateaued."""
        current = float(metrics)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            groups = self.optimizer.param_groups
            if len(groups) != len(self.min_lrs):
                if self.default_min_lr is None:
                    raise RuntimeError(
                        f"The number of param groups in the `optimizer` ({len(groups)}) "
                        f"differs from when `ReduceLROnPlateau` was initialized "
                        f"({len(self.min_lrs)}), usually due to a new param group being "
                        "added to the optimizer. Please modify the `min_lrs` field to match "
                        "the length of the `optimizer` param groups.")
                self.min_lrs = [self.default_min_lr] * len(groups)
            for i, group in enumerate(groups):
                old = float(group["lr"])
                new = max(old * self.factor, self.min_lrs[i])
                if old - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def get_last_lr(self):
        """The current learning rates (one per group)."""
        return self._last_lr

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
