"""The thread-local state of autodiff: grad mode, the forward-mode level, the anomaly flag.

One object per thread, :data:`STATE`, holds all three, so that two threads can run
``no_grad``, forward mode or ``detect_anomaly`` independently. The dispatcher reads one
attribute per op, ``STATE.flags``: bit :data:`GRAD` is grad mode (record a graph), bit
:data:`SLOW` says that forward mode or anomaly mode is on (run the hooks registered by
those higher layers after each op). The setters below keep the flags in step.

Also here: the grad-mode context managers ``no_grad``, ``enable_grad``,
``set_grad_enabled`` (PyTorch's names and semantics).
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading

GRAD = 1  # STATE.flags bit: grad mode is on
SLOW = 2  # STATE.flags bit: a forward-mode level, anomaly mode, saved-tensor hooks or
#          inference mode or a profiler is active, or the default float dtype is not
#          float64 (the dispatcher then runs its slow path after each op)

# Whether set_default_dtype made the default float dtype other than float64 (for every
# thread: each thread's flags start from it)
LOW_DEFAULT_FLOAT = [False]


class _State(threading.local):
    """Per-thread autodiff state (a new thread starts with grad mode on, no dual level,
    no anomaly mode, as in PyTorch)."""

    def __init__(self):
        self.low_float = LOW_DEFAULT_FLOAT[0]  # the default float dtype is not float64
        self.hooked = False  # a mode whose AFTER_OP hooks must run is on
        self.flags = GRAD | (SLOW if self.low_float else 0)
        self.dual_level = 0  # the innermost active forward-mode level (0: none)
        self.dual_levels = ()  # the active forward-mode levels, outermost first
        self.dual_recorded = frozenset()  # levels whose tangents are differentiable
        self.anomaly = False  # "forward" or "backward" inside detect_anomaly()
        self.saved_hooks = ()  # the active (pack, unpack) saved-tensor hooks, innermost last
        self.saved_hooks_disabled = None  # disable_saved_tensors_hooks' message, when active
        self.inference = False  # an inference_mode() block is running
        self.profiling = False  # a chainrule.profiler profile is recording
        self.tracing = False  # chainrule.compile is tracing a function in this thread

    @property
    def enabled(self):
        return bool(self.flags & GRAD)

    @enabled.setter
    def enabled(self, mode):
        self.flags = (self.flags | GRAD) if mode else (self.flags & ~GRAD)

    def set_modes(self, dual_levels=None, anomaly=None, saved_hooks=None, inference=None,
                  profiling=None, low_float=None, tracing=None):
        """Change the active forward-mode levels (a tuple, outermost first), the anomaly
        mode, the saved-tensor hooks (a tuple of (pack, unpack), innermost last) and/or
        inference mode, keeping SLOW in step."""
        if dual_levels is not None:
            self.dual_levels = dual_levels
            self.dual_level = dual_levels[-1] if dual_levels else 0
        if anomaly is not None:
            self.anomaly = anomaly
        if saved_hooks is not None:
            self.saved_hooks = saved_hooks
        if inference is not None:
            self.inference = inference
        if profiling is not None:
            self.profiling = profiling
        if low_float is not None:
            self.low_float = low_float
        if tracing is not None:
            self.tracing = tracing
        self.hooked = bool(self.dual_level or self.anomaly or self.saved_hooks
                           or self.inference or self.profiling or self.tracing)
        slow = SLOW if (self.hooked or self.low_float) else 0
        self.flags = (self.flags & ~SLOW) | slow


STATE = _State()


def is_grad_enabled() -> bool:
    """Return True when operations record a graph for backward (the default)."""
    return STATE.enabled


class _GradMode:
    """Context manager and decorator that sets grad mode and restores it on exit.

    Works as ``with no_grad():``, ``@no_grad()`` and bare ``@no_grad``.
    """

    _state = True

    def __new__(cls, *args):
        self = super().__new__(cls)
        if len(args) == 1 and callable(args[0]) and cls is not set_grad_enabled:
            return self(args[0])  # bare decorator: @no_grad
        return self

    def __enter__(self):
        self._prev = STATE.enabled
        STATE.enabled = self._state
        return self

    def __exit__(self, *exc):
        STATE.enabled = self._prev
        return False

    def __call__(self, fn):
        mode = self._state
        if inspect.isgeneratorfunction(fn):
            return _generator_in_mode(fn, mode)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = STATE.enabled
            STATE.enabled = mode
            try:
                return fn(*args, **kwargs)
            finally:
                STATE.enabled = prev

        return wrapper


class _ModeSet:
    """Set grad mode for a block and restore it after (the generator wrapper's helper)."""

    def __init__(self, mode):
        self.mode = mode

    def __enter__(self):
        self.prev = STATE.enabled
        STATE.enabled = self.mode

    def __exit__(self, *exc):
        STATE.enabled = self.prev
        return False


def _generator_in_mode(fn, mode):
    """A generator function whose body runs in grad mode ``mode`` at every resume (and
    the caller's mode in between), as PyTorch's decorators do for generators."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        gen = fn(*args, **kwargs)
        try:
            with _ModeSet(mode):
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with _ModeSet(mode):
                        gen.close()
                    raise
                except BaseException:
                    with _ModeSet(mode):
                        response = gen.throw(*sys.exc_info())
                else:
                    with _ModeSet(mode):
                        response = gen.send(request)
        except StopIteration as stop:
            return stop.value

    return wrapper


class no_grad(_GradMode):
    """Disable graph recording: results of ops do not require grad.

    Use it for inference and for in-place updates of leaves (optimizer steps).
    Works as ``with no_grad():`` and as a decorator ``@no_grad()``.
    """

    _state = False


class enable_grad(_GradMode):
    """Re-enable graph recording inside a ``no_grad`` block."""

    _state = True


class set_grad_enabled(_GradMode):
    """Set grad mode to ``mode`` (bool); takes effect immediately, as in PyTorch,
    and is undone at the end of a ``with`` block."""

    def __init__(self, mode: bool):
        self._state = bool(mode)
        self._prev = STATE.enabled
        STATE.enabled = self._state

    def __enter__(self):
        return self

    def __call__(self, fn):
        # As a decorator it must not change the mode where the function is defined.
        STATE.enabled = self._prev
        return super().__call__(fn)
