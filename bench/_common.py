"""Shared set-up of the benchmark scripts: one thread everywhere, optional torch, timing.

Import it before NumPy: the thread variables only take effect if they are set before BLAS
loads.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import statistics  # noqa: E402
import time  # noqa: E402

try:
    import torch

    torch.set_num_threads(1)
except ImportError:
    torch = None


def interleaved_medians(fns, *args, warmup=3, repeats=31, counter=None):
    """Median seconds of each ``name -> fn(*args)``. The functions take turns within every
    repeat, so machine noise hits all columns alike. With ``counter`` (a function returning
    a running count, such as page faults) also return the mean count per call."""
    for _ in range(warmup):
        for fn in fns.values():
            fn(*args)
    times = {name: [] for name in fns}
    counts = dict.fromkeys(fns, 0)
    for _ in range(repeats):
        for name, fn in fns.items():
            c0 = counter() if counter else 0
            t0 = time.perf_counter()
            fn(*args)
            times[name].append(time.perf_counter() - t0)
            counts[name] += (counter() - c0) if counter else 0
    medians = {name: statistics.median(t) for name, t in times.items()}
    if counter is None:
        return medians
    return medians, {name: n / repeats for name, n in counts.items()}


def torch_cell(value, fmt):
    return "torch not installed" if value is None else format(value, fmt)
