"""``torch.profiler``'s names: ``profile``, ``record_function``, ``ProfilerActivity``,
``ProfilerAction``, ``schedule``, ``tensorboard_trace_handler``.

A profile records, on the thread that entered it, each chainrule op run inside it (named
``aten::<op>``, as PyTorch's operators) and each ``record_function`` range: its CPU time
and how often it ran. ``key_averages()`` groups them by name into rows with PyTorch's
attribute names (``key``, ``count``, ``cpu_time_total``, ``self_cpu_time_total``,
``cpu_time``, ...), ``.table()`` prints them in PyTorch's layout, and
``export_chrome_trace(path)`` writes a Chrome trace (JSON) of the events.

How an op is timed: while a profile records, the dispatcher's SLOW flag is set and
:func:`_op_done` runs as its ``AFTER_OP`` hook. The dispatcher has no hook before an op,
so an op's time runs from the previous event of the profile on this thread (the end of
the previous op, the start of the profile or a ``record_function`` boundary) to its end:
Python code run between two ops counts toward the second. Ops of a backward pass run in
the engine, not the dispatcher, and are not recorded (PyTorch shows them as
``autograd::engine::evaluate_function: ...``). With no profile active nothing changes:
the dispatcher's path is the same, and outputs never change under a profile.

Devices other than the CPU, memory, FLOPs and stacks are accepted and ignored
(``activities``, ``profile_memory``, ``with_flops``, ``with_stack``, ...): there is
nothing to measure there.
"""

from __future__ import annotations

import enum
import functools
import json
import os
import socket
import threading
import time

from . import _dispatch
from ._state import STATE

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "tensorboard_trace_handler", "supported_activities"]

_clock = time.perf_counter_ns
_LOCAL = threading.local()  # .recording: the profiles recording on this thread, innermost last


class ProfilerActivity(enum.Enum):
    """The kinds of activity a profile may be asked to record; only CPU is measured."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


def supported_activities():
    """The activities a profile can record here: the CPU."""
    return {ProfilerActivity.CPU}


class ProfilerAction(enum.Enum):
    """What a :func:`schedule` asks of a profile at a step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """A schedule for :class:`profile` (``torch.profiler.schedule``): after ``skip_first``
    steps, cycles of ``wait`` idle steps, ``warmup`` steps and ``active`` recorded ones
    (the last of which saves: ``on_trace_ready`` is called), ``repeat`` cycles (0: no
    end). ``skip_first_wait`` skips the first cycle's wait."""
    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step should be non-negative, got {step}")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return (ProfilerAction.RECORD if mod_step < num_steps - 1
                else ProfilerAction.RECORD_AND_SAVE)

    if not (wait >= 0 and warmup >= 0 and active > 0 and repeat >= 0 and skip_first >= 0):
        raise AssertionError("Invalid profiler schedule arguments")
    return schedule_fn


def _default_schedule(_step):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An ``on_trace_ready`` handler writing each trace to ``dir_name`` as
    ``<worker_name>.<ms>.pt.trace.json`` (``.gz`` with ``use_gzip``), as PyTorch's."""
    def handler_fn(prof):
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{name}.{time.time_ns() // 1_000_000}.pt.trace.json"
        if use_gzip:
            file_name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


# --- events ---------------------------------------------------------------------------------

def _format_time(time_us):
    """PyTorch's time format: ``12.345us``, ``1.234ms``, ``1.234s``."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_share(time_us, total_us):
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _unmeasured(evt):
    """PyTorch's attributes of an event that nothing here measures (devices, memory,
    FLOPs, stacks), at their empty values."""
    evt.cpu_parent = None
    evt.device_type = "CPU"
    evt.device_time_total = evt.self_device_time_total = 0.0
    evt.cpu_memory_usage = evt.self_cpu_memory_usage = 0
    evt.device_memory_usage = evt.self_device_memory_usage = 0
    evt.flops = 0
    evt.node_id = -1
    evt.is_async = evt.is_remote = evt.is_legacy = False
    evt.stack = []
    evt.scope = 0
    evt.overload_name = ""
    evt.use_device = None


class FunctionEvent:
    """One recorded op or ``record_function`` range (times in microseconds)."""

    def __init__(self, id, name, start_ns, thread, input_shapes=None, user=False):
        self.id = id
        self.name = name
        self.key = name
        self.start_ns = start_ns
        self.end_ns = start_ns
        self.thread = thread
        self.input_shapes = input_shapes or []
        self.is_user_annotation = user
        self.cpu_children = []
        self.count = 1
        _unmeasured(self)

    @property
    def time_range(self):
        return (self.start_ns / 1e3, self.end_ns / 1e3)

    @property
    def cpu_time_total(self):
        return (self.end_ns - self.start_ns) / 1e3

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    cpu_time = cpu_time_total
    device_time = cuda_time = 0.0

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} "
                f"cpu_time={_format_time(self.cpu_time_total)} "
                f"self_cpu_time={_format_time(self.self_cpu_time_total)}>")


class FunctionEventAvg:
    """A row of ``key_averages()``: the events of one name (and input shapes, when
    grouped by them) summed; ``cpu_time`` is the average per call."""

    def __init__(self, key, input_shapes=None):
        self.key = key
        self.input_shapes = input_shapes
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.is_user_annotation = False
        self.cpu_children = None
        _unmeasured(self)

    def add(self, other):
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.is_user_annotation = other.is_user_annotation
        return self

    __iadd__ = add

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def device_time(self):
        return 0.0

    cuda_time = device_time

    cpu_time_str = property(lambda self: _format_time(self.cpu_time))
    cpu_time_total_str = property(lambda self: _format_time(self.cpu_time_total))
    self_cpu_time_total_str = property(lambda self: _format_time(self.self_cpu_time_total))
    device_time_str = device_time_total_str = self_device_time_total_str = property(
        lambda self: _format_time(0.0))

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time="
                f"{_format_time(self.self_cpu_time_total)} cpu_time="
                f"{_format_time(self.cpu_time)} input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events (or of ``key_averages()`` rows) with ``table()``,
    ``key_averages()``, ``total_average()``, ``export_chrome_trace()`` and
    ``self_cpu_time_total``."""

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        """The events as PyTorch's text table (Name, Self CPU %, Self CPU, CPU total %,
        CPU total, CPU time avg, # of Calls; Input Shapes when grouped by them), sorted by
        the attribute ``sort_by`` (largest first), at most ``row_limit`` rows, then the
        line ``Self CPU time total: ...``."""
        return _build_table(self, sort_by, row_limit, max_name_column_width,
                            max_shapes_column_width, header, top_level_events_only)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0):
        rows = {}
        for evt in self:
            key = (evt.key, str(evt.input_shapes)) if group_by_input_shapes else evt.key
            row = rows.get(key)
            if row is None:
                row = rows[key] = FunctionEventAvg(
                    evt.key, evt.input_shapes if group_by_input_shapes else None)
            row.add(evt)
        out = EventList(rows.values())
        out._grouped_by_shapes = group_by_input_shapes
        return out

    def total_average(self):
        total = FunctionEventAvg("Total")
        for evt in self:
            total.add(evt)
        return total

    @property
    def self_cpu_time_total(self):
        return sum(evt.self_cpu_time_total for evt in self)

    def export_chrome_trace(self, path):
        _write_trace(path, [e for e in self if isinstance(e, FunctionEvent)])


def _build_table(events, sort_by, row_limit, name_width, shapes_width, header,
                 top_level_only):
    if sort_by is not None:
        events = sorted(events, key=lambda evt: getattr(evt, sort_by), reverse=True)
    events = list(events)
    if top_level_only:
        events = [e for e in events if getattr(e, "cpu_parent", None) is None]
    shapes = getattr(events[0], "input_shapes", None) is not None and any(
        getattr(e, "input_shapes", None) for e in events) if events else False
    total = sum(e.self_cpu_time_total for e in events)
    if row_limit is not None and row_limit > 0:
        events = events[:row_limit]
    width = min(max([len(e.key) for e in events] + [4]) + 4, name_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
               "# of Calls"]
    widths = [width] + [12] * 6
    if shapes:
        headers.append("Input Shapes")
        widths.append(min(max(len(str(e.input_shapes)) for e in events) + 4, shapes_width))
    line = "".join("-" * w + "  " for w in widths)
    fmt = "".join("{: >" + str(w) + "}  " for w in widths)
    out = []
    if header is not None:
        out += ["=" * len(line), header]
    out += [line, fmt.format(*headers), line]
    for evt in events:
        name = evt.key
        if len(name) >= name_width - 3:
            name = name[:name_width - 3] + "..."
        row = [name, _format_share(evt.self_cpu_time_total, total),
               _format_time(evt.self_cpu_time_total),
               _format_share(evt.cpu_time_total, total), _format_time(evt.cpu_time_total),
               _format_time(evt.cpu_time), evt.count]
        if shapes:
            row.append(str(evt.input_shapes)[:shapes_width])
        out.append(fmt.format(*row))
    out.append(line)
    out.append(f"Self CPU time total: {_format_time(total)}")
    return "\n".join(out) + "\n"


def _write_trace(path, events):
    """A Chrome trace (``chrome://tracing``, Perfetto) of ``events``: complete ("X")
    events with microsecond timestamps."""
    pid = os.getpid()
    trace = [{"ph": "X", "cat": "user_annotation" if e.is_user_annotation else "cpu_op",
              "name": e.name, "pid": pid, "tid": e.thread, "ts": e.start_ns / 1e3,
              "dur": (e.end_ns - e.start_ns) / 1e3,
              "args": {"Input Dims": e.input_shapes} if e.input_shapes else {}}
             for e in events]
    data = json.dumps({"schemaVersion": 1, "traceEvents": trace, "displayTimeUnit": "ms"})
    if path.endswith(".gz"):
        import gzip

        with gzip.open(path, "wt") as f:
            f.write(data)
    else:
        with open(path, "w") as f:
            f.write(data)


# --- recording ----------------------------------------------------------------------------

def _recording():
    return getattr(_LOCAL, "recording", None)


def _op_done(op, inputs, datas, attrs, out, result):
    """The dispatcher's AFTER_OP hook: an op ended; record it in the profiles recording
    on this thread (timed from the previous event, see the module's docstring)."""
    stack = _recording()
    if not stack:
        return
    now = _clock()
    for prof in stack:
        prof._add_op(op, datas, now)
    end = _clock()  # the hook's own time is no op's
    for prof in stack:
        prof._mark = end


_dispatch.AFTER_OP.append(_op_done)


class _Profile:
    """What both ``profile`` classes share: recording, events, averages, traces."""

    def __init__(self, record_shapes=False, on_trace_ready=None, schedule=None):
        self.record_shapes = record_shapes
        self.on_trace_ready = on_trace_ready
        self.schedule = schedule or _default_schedule
        self.step_num = 0
        self._events = EventList()
        self._open = []  # record_function ranges open, innermost last
        self._recording = False
        self._mark = 0
        self._next_id = 0

    # -- starting and stopping
    def _start_recording(self):
        if self._recording:
            return
        self._recording = True
        stack = _recording()
        if stack is None:
            stack = _LOCAL.recording = []
        stack.append(self)
        STATE.set_modes(profiling=True)
        self._mark = _clock()

    def _stop_recording(self):
        if not self._recording:
            return
        self._recording = False
        stack = _recording()
        stack.remove(self)
        if not stack:
            STATE.set_modes(profiling=False)
        now = _clock()
        while self._open:  # ranges still open end here
            self._close_range(self._open[-1], now)

    # -- events
    def _new_event(self, name, start, shapes=None, user=False):
        evt = FunctionEvent(self._next_id, name, start, threading.get_ident(), shapes, user)
        self._next_id += 1
        if self._open:
            evt.cpu_parent = self._open[-1]
            self._open[-1].cpu_children.append(evt)
        self._events.append(evt)
        return evt

    def _add_op(self, op, datas, now):
        shapes = None
        if self.record_shapes:
            shapes = [list(getattr(d, "shape", ())) for d in datas]
        evt = self._new_event("aten::" + op.name, self._mark, shapes)
        evt.end_ns = now

    def _open_range(self, name, now):
        evt = self._new_event(name, now, user=True)
        self._open.append(evt)
        return evt

    def _close_range(self, evt, now):
        if evt in self._open:
            del self._open[self._open.index(evt):]
            evt.end_ns = now

    # -- results
    def events(self):
        """The recorded events (ops and ranges), in the order they started."""
        return EventList(sorted(self._events, key=lambda e: (e.start_ns, e.id)))

    @property
    def function_events(self):
        return self.events()

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """One row per op name (and input shapes with ``group_by_input_shape``, which
        needs ``record_shapes=True``): count, cpu_time_total, self_cpu_time_total,
        cpu_time (average), ..."""
        if group_by_input_shape and not self.record_shapes:
            raise AssertionError("Please set record_shapes=True when using "
                                 "group_by_input_shape")
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by=None, row_limit=100, **kwargs):
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def total_average(self):
        return self.events().total_average()

    @property
    def self_cpu_time_total(self):
        return self.events().self_cpu_time_total

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace (JSON) to ``path``."""
        _write_trace(path, self.events())

    def export_stacks(self, path, metric="self_cpu_time_total"):
        with open(path, "w"):
            pass  # no stacks are recorded

    def __str__(self):
        return self.table()


class profile(_Profile):
    """``torch.profiler.profile``: a context manager recording the CPU time of chainrule
    ops and ``record_function`` ranges run on this thread inside it.

    ``schedule`` (see :func:`schedule`) decides at each ``step()`` whether to record;
    ``on_trace_ready(prof)`` is called at the end of each active cycle (and on exit when
    no schedule is given). ``activities``, ``profile_memory``, ``with_stack``,
    ``with_flops``, ``with_modules``, ``experimental_config``, ``execution_trace_observer``
    and ``acc_events`` are accepted and ignored."""

    def __init__(self, activities=None, *, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, with_modules=False, experimental_config=None,
                 execution_trace_observer=None, acc_events=False, use_cuda=None,
                 custom_trace_id_callback=None):
        super().__init__(record_shapes, on_trace_ready, schedule)
        self.activities = set(activities) if activities else supported_activities()
        self.current_action = self.schedule(self.step_num)

    def start(self):
        self.current_action = self.schedule(self.step_num)
        if self.current_action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._start_recording()

    def stop(self):
        recorded = self._recording
        self._stop_recording()
        if recorded and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def step(self):
        """Move to the next step of the schedule: start or stop recording as it says,
        calling ``on_trace_ready`` after a RECORD_AND_SAVE step (a new cycle's recording
        starts with no events)."""
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        if previous == ProfilerAction.RECORD_AND_SAVE and self._recording:
            self._stop_recording()
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
        if self.current_action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            if not self._recording:
                self._events = EventList()
                self._start_recording()
        else:
            self._stop_recording()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


class record_function:
    """``torch.profiler.record_function(name)``: a context manager (and decorator) that
    marks a range, recorded with its CPU time as an event named ``name`` by the
    profiles recording on this thread (nothing happens when none is). ``args`` is
    accepted and ignored."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._events = []

    def __enter__(self):
        stack = _recording()
        if stack:
            now = _clock()
            self._events = [(p, p._open_range(self.name, now)) for p in stack]
            for p in stack:
                p._mark = _clock()
        return self

    def __exit__(self, *exc):
        if self._events:
            now = _clock()
            for p, evt in self._events:
                p._close_range(evt, now)
                p._mark = now
            self._events = []
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapper
