"""``torch.amp``: ``autocast`` and ``GradScaler``.

chainrule computes in the dtypes it is given, so ``autocast`` changes nothing (PyTorch's
lowers some ops to float16/bfloat16 for speed; results here are the more precise ones).
``GradScaler`` is PyTorch's dynamic loss scaling, exactly: the loss is multiplied by the
scale, ``unscale_`` divides the gradients back, ``step`` skips the optimizer step when a
gradient is inf or NaN, and ``update`` halves the scale after such a step and doubles it
after ``growth_interval`` good ones.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ._state import no_grad
from .backend import BFLOAT16

__all__ = ["autocast", "GradScaler"]

# torch.is_autocast_enabled / get_autocast_dtype read this (per device type): autocast's
# blocks turn it on for theirs; nothing else consults it
_AUTOCAST = {}


def autocast_state(device_type):
    """The autocast switch and dtype of ``device_type`` (a dict; PyTorch's defaults)."""
    state = _AUTOCAST.get(device_type)
    if state is None:
        state = _AUTOCAST[device_type] = {
            "enabled": False, "dtype": BFLOAT16 if device_type == "cpu" else np.dtype("float16")}
    return state


class autocast:
    """A context manager and decorator that leaves dtypes as they are (see the module
    docstring); ``is_enabled`` and the arguments are kept for code that reads them."""

    def __init__(self, device_type="cpu", dtype=None, enabled=True, cache_enabled=None):
        self.device_type, self.fast_dtype, self.enabled = device_type, dtype, enabled

    def __enter__(self):
        state = autocast_state(str(self.device_type).split(":")[0])
        self.__dict__.setdefault("_saved", []).append(dict(state))  # (re-entered: a stack)
        state["enabled"] = bool(self.enabled)
        if self.fast_dtype is not None:
            state["dtype"] = self.fast_dtype
        return self

    def __exit__(self, *exc):
        autocast_state(str(self.device_type).split(":")[0]).update(self._saved.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


class GradScaler:
    """Dynamic loss scaling (``torch.amp.GradScaler``): ``scaler.scale(loss).backward();
    scaler.step(optimizer); scaler.update()``. With ``enabled=False`` every method passes
    through (``scale`` returns the loss, ``step`` steps)."""

    def __init__(self, device="cpu", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._enabled = enabled
        self._scale = float(init_scale)
        self._growth_factor, self._backoff_factor = growth_factor, backoff_factor
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        self._found_inf = {}  # id(optimizer) -> bool, for this iteration
        self._unscaled = set()

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def scale(self, outputs):
        """``outputs`` (a tensor or a structure of them) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        return outputs * self._scale

    def unscale_(self, optimizer):
        """Divide the gradients of ``optimizer``'s parameters by the scale, in place, and
        note whether one of them is inf or NaN.

        Raises RuntimeError when called twice for one optimizer between updates."""
        if not self._enabled:
            return
        if id(optimizer) in self._unscaled:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        inv = 1.0 / self._scale
        found = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    g = p.grad._data
                    found = found or not bool(np.all(np.isfinite(g)))
                    g *= inv
        self._found_inf[id(optimizer)] = found
        self._unscaled.add(id(optimizer))

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step()`` unless a gradient is inf or NaN (then skipped); unscales
        first if :meth:`unscale_` was not called. Returns what ``step`` returns (None
        when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if id(optimizer) not in self._unscaled:
            self.unscale_(optimizer)
        if self._found_inf[id(optimizer)]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """Back off after a skipped step, grow after ``growth_interval`` good steps (or set
        ``new_scale``)."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale)
        elif any(self._found_inf.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        if not math.isfinite(self._scale):
            raise RuntimeError("GradScaler: the scale overflowed")
        self._found_inf.clear()
        self._unscaled.clear()

    def state_dict(self):
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker} if self._enabled else {}

    def load_state_dict(self, state_dict):
        self._scale = float(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._growth_tracker = state_dict["_growth_tracker"]
