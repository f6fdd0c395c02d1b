"""``torch.multiprocessing``: Python's :mod:`multiprocessing`, with tensors that processes
share.

Everything of :mod:`multiprocessing` is here (``Process``, ``Queue``, ``Pool``,
``get_context``, ``set_start_method``, ...), plus PyTorch's additions:

- ``Tensor.share_memory_()`` moves a tensor's values into memory that every process can
  map (a file in ``/dev/shm``, mapped shared), and ``Module.share_memory()`` does so for
  its parameters and buffers; ``Tensor.is_shared()`` tells. After ``share_memory_()``, an
  in-place update in any process (an optimizer's step, ``x.add_(1)``) is seen by all of
  them: Hogwild training (pytorch/examples' mnist_hogwild) works as in PyTorch. Gradients
  are not shared (each process allocates its own ``.grad``, as in PyTorch).
- A tensor sent to another process (a ``Process``'s arguments with the "spawn" or
  "forkserver" start method, a ``Queue``) is moved to shared memory first and arrives as a
  tensor over the same memory, as PyTorch's reductions do; with "fork" the child inherits
  the shared mapping.
- ``spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn")`` runs
  ``fn(i, *args)`` in ``nprocs`` processes; an exception in one of them is raised in the
  parent as :class:`ProcessRaisedException` with the child's traceback.
- ``set_sharing_strategy`` / ``get_sharing_strategy`` / ``get_all_sharing_strategies``
  (only "file_system" exists here: files in shared memory).

Only NumPy (CPU) tensors can be shared; ``share_memory_()`` of a CuPy or Dask tensor
raises RuntimeError. The files behind shared tensors are removed when the process that
made them exits (the mappings stay valid in the processes still using them).
"""

from __future__ import annotations

import atexit
import mmap
import multiprocessing as _mp
import os
import sys
import tempfile
import traceback
import uuid
from multiprocessing import *  # noqa: F401,F403
from multiprocessing.reduction import ForkingPickler

import numpy as np

from ._tensor import Tensor, wrap

__all__ = [*_mp.__all__, "spawn", "start_processes", "ProcessContext", "ProcessRaisedException",
           "ProcessExitedException", "set_sharing_strategy", "get_sharing_strategy",
           "get_all_sharing_strategies"]

_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
_MADE = []  # files this process made: removed at its exit
_STRATEGY = ["file_system"]


class _SharedMap(mmap.mmap):
    """A shared mapping of a file, remembering the file's path (what another process
    opens to map the same memory)."""


def _open(path, nbytes):
    with open(path, "r+b") as f:
        m = _SharedMap(f.fileno(), nbytes)
    m.path = path
    return m


def _new_map(nbytes):
    path = os.path.join(_DIR, f"chainrule_{os.getpid()}_{uuid.uuid4().hex}")
    nbytes = max(int(nbytes), 1)  # mmap cannot map 0 bytes
    with open(path, "w+b") as f:
        f.truncate(nbytes)
    _MADE.append(path)
    return _open(path, nbytes)


@atexit.register
def _remove_files():
    for path in _MADE:
        try:
            os.unlink(path)
        except OSError:  # already gone
            pass


def _map_of(data):
    """The shared mapping under an array (None for process memory)."""
    while isinstance(data, np.ndarray):
        data = data.base
    return data if isinstance(data, _SharedMap) else None


def _address(m):
    return np.frombuffer(m, dtype=np.uint8).ctypes.data


def share_memory_(self):
    """Move this tensor's values into shared memory (see the module's docstring); nothing
    when they are there already. Returns self. RuntimeError for a tensor that is not on
    NumPy (CuPy's and Dask's memory is not shared this way)."""
    data = self._data
    if _map_of(data) is not None:
        return self
    if data.__class__ is not np.ndarray:
        raise RuntimeError(f"share_memory_: only NumPy (CPU) tensors can be moved to shared "
                           f"memory, got data of type {type(data).__name__}")
    shared = np.ndarray(data.shape, data.dtype, buffer=_new_map(data.nbytes))
    shared[...] = data
    self._data = shared
    return self


def is_shared(self):
    """Whether this tensor's values are in shared memory (``share_memory_()``)."""
    return _map_of(self._data) is not None


def _rebuild(cls, path, nbytes, offset, shape, strides, dtype, requires_grad):
    data = np.ndarray(shape, dtype, buffer=_open(path, nbytes), offset=offset, strides=strides)
    if cls is Tensor:
        return wrap(data, requires_grad=requires_grad)
    return cls(wrap(data), requires_grad=requires_grad)  # Parameter, Buffer


def _reduce(t):
    """How a tensor travels to another process: moved to shared memory, then sent as the
    file, offset, shape, strides and dtype of its values (PyTorch's file_system
    strategy)."""
    if t._grad_fn is not None:  # PyTorch's message
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, "
                           "since autograd does not support crossing process boundaries.  If "
                           "you just want to transfer the data, call detach() on the tensor "
                           "before serializing (e.g., putting it on the queue).")
    share_memory_(t)
    d = t._data
    m = _map_of(d)
    return (_rebuild, (type(t), m.path, len(m), d.ctypes.data - _address(m), d.shape,
                       d.strides, d.dtype, bool(t._requires_grad)))


def register(cls):
    """Send instances of ``cls`` (a Tensor class) between processes through shared memory
    (done for Tensor, and for ``nn.Parameter`` and ``nn.Buffer`` by ``chainrule.nn``)."""
    ForkingPickler.register(cls, _reduce)


def set_sharing_strategy(new_strategy):
    """PyTorch's strategies for sharing CPU tensors; chainrule has "file_system" only."""
    if new_strategy not in get_all_sharing_strategies():
        raise ValueError(f"set_sharing_strategy: unknown strategy {new_strategy!r} "
                         f"(chainrule has {sorted(get_all_sharing_strategies())})")
    _STRATEGY[0] = new_strategy


def get_sharing_strategy():
    return _STRATEGY[0]


def get_all_sharing_strategies():
    return {"file_system"}


# --- spawn -------------------------------------------------------------------------------

class ProcessException(Exception):
    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.error_index, self.pid = error_index, pid


class ProcessRaisedException(ProcessException):
    """An exception raised by ``fn`` in a spawned process (the message holds its
    traceback)."""


class ProcessExitedException(ProcessException):
    """A spawned process that ended with a non-zero exit code without an exception."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name


def _run(fn, i, args, errors):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:  # noqa: BLE001 - any error goes to the parent, with its traceback
        errors.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes started by :func:`spawn`; ``join()`` waits for them (True when all
    ended) and raises the first failure."""

    def __init__(self, processes, error_queues):
        self.processes, self.error_queues = processes, error_queues

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        for p in self.processes:
            p.join(timeout)
        for i, (p, q) in enumerate(zip(self.processes, self.error_queues)):
            if p.exitcode is None:
                return False
            if p.exitcode != 0:
                for other in self.processes:
                    if other.is_alive():
                        other.terminate()
                if not q.empty():
                    raise ProcessRaisedException(
                        f"\n\n-- Process {i} terminated with the following error:\n{q.get()}",
                        i, p.pid)
                raise ProcessExitedException(
                    f"process {i} terminated with exit code {p.exitcode}", i, p.pid, p.exitcode)
        return True


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run ``fn(i, *args)`` for i in 0..nprocs-1, each in a process of ``start_method``;
    with ``join`` wait for all (raising the first failure), else return the
    :class:`ProcessContext`."""
    ctx = _mp.get_context(start_method)
    processes, queues = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_run, args=(fn, i, args, q), daemon=daemon)
        p.start()
        processes.append(p)
        queues.append(q)
    context = ProcessContext(processes, queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """``torch.multiprocessing.spawn``: :func:`start_processes` (the "spawn" start method
    by default)."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)


Tensor.share_memory_ = share_memory_
Tensor.is_shared = is_shared
register(Tensor)
