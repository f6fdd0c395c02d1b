"""``torch.autograd.profiler``: the legacy ``profile`` context manager and
``record_function``, on :mod:`chainrule.profiler`'s recording (see there for what is
measured and how)."""

from __future__ import annotations

from ..profiler import EventList, FunctionEvent, FunctionEventAvg, _Profile, record_function

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]


class profile(_Profile):
    """``torch.autograd.profiler.profile``: records the CPU time of chainrule ops and
    ``record_function`` ranges run on this thread inside it (when ``enabled``).
    ``use_cuda``, ``use_device``, ``with_flops``, ``profile_memory``, ``with_stack``,
    ``with_modules``, ``use_kineto``, ``use_cpu``, ``experimental_config`` and
    ``acc_events`` are accepted and ignored."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False,
                 with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None):
        super().__init__(record_shapes)
        self.enabled = enabled
        self.entered = False

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._start_recording()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self._stop_recording()
        return False
