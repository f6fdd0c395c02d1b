"""Stochastic weight averaging and exponential moving averages of a model's weights, as
``torch.optim.swa_utils``: :class:`AveragedModel`, :class:`SWALR`, :func:`update_bn` and
the averaging functions."""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np

from .. import _creation
from .._state import no_grad
from ..nn import BatchNorm1d, Module
from .lr_scheduler import LRScheduler, _format_param

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         f"[0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """An in-place EMA update of lists of tensors: ``ema += (1 - decay) (model - ema)``
    (``torch._foreach_lerp_``). Raises ValueError for ``decay`` outside [0, 1]."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _):
        with no_grad():
            for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                if p_ema.is_floating_point():
                    p_ema.lerp_(p_model, 1 - decay)
                else:
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """An in-place running mean of lists of tensors: ``avg += (model - avg) / (n + 1)``."""

    def swa_update(averaged_param_list, current_param_list, num_averaged):
        with no_grad():
            w = 1 / (float(num_averaged) + 1)
            for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                if p_avg.is_floating_point():
                    p_avg.lerp_(p_model, w)
                else:
                    p_avg.copy_(p_avg + (p_model - p_avg) / (float(num_averaged) + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """``decay * ema + (1 - decay) * model`` for one tensor. Raises ValueError for ``decay``
    outside [0, 1]."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """``avg + (model - avg) / (n + 1)`` for one tensor."""

    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and, with ``use_buffers``, buffers) are a
    running average of ``model``'s, updated by :meth:`update_parameters`, as
    ``torch.optim.swa_utils.AveragedModel``: an equal-weight mean (SWA) by default, or
    ``avg_fn(avg, current, n)`` / the in-place ``multi_avg_fn(avgs, currents, n)`` (e.g.
    :func:`get_ema_multi_avg_fn`). The first update copies ``model``. ``n_averaged`` (an
    int64 buffer) counts the updates; calling the averaged model calls the copy.

    Raises AssertionError when both ``avg_fn`` and ``multi_avg_fn`` are given."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _creation.tensor(0, dtype=np.int64))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Fold ``model``'s current parameters into the average."""
        if self.use_buffers:
            mine = list(itertools.chain(self.module.parameters(), self.module.buffers()))
            theirs = list(itertools.chain(model.parameters(), model.buffers()))
        else:
            mine, theirs = list(self.parameters()), list(model.parameters())
        mine = [p.detach() for p in mine]
        theirs = [p.detach() for p in theirs]
        n = int(self.n_averaged.item())
        with no_grad():
            if n == 0:
                for a, b in zip(mine, theirs):
                    a.copy_(b)
            elif self.multi_avg_fn is not None:
                self.multi_avg_fn(mine, theirs, self.n_averaged)
            elif self.avg_fn is None:
                get_swa_multi_avg_fn()(mine, theirs, self.n_averaged)
            else:
                for a, b in zip(mine, theirs, strict=True):
                    a.copy_(self.avg_fn(a, b, self.n_averaged))
            if not self.use_buffers:  # keep the buffers in sync with the model's
                for b_avg, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                    b_avg.copy_(b_model.detach())
            self.n_averaged.add_(1)


def update_bn(loader, model, device=None):
    """Recompute the running statistics of ``model``'s batch-norm layers with one pass
    over ``loader`` (each batch a tensor, or a list/tuple whose first entry is the input),
    as a cumulative average (``momentum=None``), as ``torch.optim.swa_utils.update_bn``."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, BatchNorm1d):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for input in loader:
            if isinstance(input, (list, tuple)):
                input = input[0]
            if device is not None:
                input = input.to(device)
            model(input)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's learning rate to ``swa_lr`` (a number or one per group) over
    ``anneal_epochs`` steps, by cosine (``"cos"``) or linear interpolation, then hold it,
    as ``torch.optim.swa_utils.SWALR``.

    Raises ValueError for an unknown ``anneal_strategy`` or a negative / non-integer
    ``anneal_epochs``."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _set_anneal_func(self, strategy):
        self._anneal_strategy = strategy
        self.anneal_func = self._cosine_anneal if strategy == "cos" else self._linear_anneal

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha)
                    for g in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha)
                for g, lr in zip(self.optimizer.param_groups, prev_lrs, strict=True)]

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
