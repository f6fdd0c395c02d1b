"""Thread-local grad mode: ``no_grad``, ``enable_grad``, ``set_grad_enabled``.

The dispatcher reads ``STATE.enabled`` once per op; when it is False no graph is recorded.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading


class _State(threading.local):
    enabled = True


STATE = _State()


def is_grad_enabled() -> bool:
    """Return True when operations record a graph for backward (the default)."""
    return STATE.enabled


class _GradMode:
    """Context manager and decorator that sets grad mode and restores it on exit.

    Works as ``with no_grad():``, ``@no_grad()`` and bare ``@no_grad``.
    """

    _mode = True

    def __new__(cls, *args):
        self = super().__new__(cls)
        if len(args) == 1 and callable(args[0]) and cls is not set_grad_enabled:
            return self(args[0])  # bare decorator: @no_grad
        return self

    def __enter__(self):
        self._prev = STATE.enabled
        STATE.enabled = self._mode
        return self

    def __exit__(self, *exc):
        STATE.enabled = self._prev
        return False

    def __call__(self, fn):
        mode = self._mode
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

    _mode = False


class enable_grad(_GradMode):
    """Re-enable graph recording inside a ``no_grad`` block."""

    _mode = True


class set_grad_enabled(_GradMode):
    """Set grad mode to ``mode`` (bool); takes effect immediately, as in PyTorch,
    and is undone at the end of a ``with`` block."""

    def __init__(self, mode: bool):
        self._mode = bool(mode)
        self._prev = STATE.enabled
        STATE.enabled = self._mode

    def __enter__(self):
        return self

    def __call__(self, fn):
        # As a decorator it must not change the mode where the function is defined.
        STATE.enabled = self._prev
        return super().__call__(fn)
