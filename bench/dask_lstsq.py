"""Least-squares gradient on a Dask cluster: chainrule's lazy backward vs hand-written Dask.

Measures the time and the peak worker memory of one loss-and-gradient evaluation of
L(w) = ||X w - y||^2 / n for a row-chunked X (n x d float64, default 2,000,000 x 50 in chunks
of 100,000 rows) and y (n,), on a LocalCluster of 2 worker processes with one thread and a
300 MiB memory limit each. X and y are generated with ``dask.array.random`` (seeded) and
persisted on the workers first, so generation is not counted. Two ways, on the same chunks:

* chainrule: ``r = cr.tensor(X) @ w - cr.tensor(y)``, ``loss = (r * r).sum() / n``,
  ``loss.backward()`` (lazy), then one ``cr.compute(loss, w.grad)``;
* hand-written Dask: ``r = X @ w0 - y``, ``g = 2 * (X.T @ r) / n`` and one
  ``dask.compute((r * r).sum() / n, g)``.

Each timed run includes building the graph (and, for chainrule, the backward pass). Time is
the median of ``--repeat`` runs after one warm-up, the two ways taking turns. Peak memory is
the largest resident set size (RSS) of any worker process during a run, read by a sampler
thread on every worker (psutil, every 10 ms) that is reset before each run; the figure
reported is the largest over the timed runs. The gradients of the two ways are checked to
agree before timing. At the default size the data (763 MiB) is more than the two workers may
hold, so most of it is spilled to disk and the workers pause now and then: the script counts
those pauses (instead of logging each) and worker restarts, per run.

chainrule's ``w`` is a one-chunk Dask array (``da.from_array(w0, chunks=-1)``, as in
examples/distributed_regression.py); whether a NumPy ``w`` works with Dask ``X`` is
printed as a note. Run from the repository root with:

    .venv/bin/python bench/dask_lstsq.py
    .venv/bin/python bench/dask_lstsq.py --n 200000 --repeat 3     # quicker (--rows = --n)
"""

import os

# One BLAS thread, set before NumPy loads; the worker processes inherit it. (Not via
# _common: it imports torch, and the spawned workers re-import this module, so each would
# start with some 250 MiB of torch and pause at once under the 300 MiB limit.)
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import chainrule as cr  # noqa: E402

TIME_TARGET, MEMORY_TARGET = 1.3, 1.5
SAMPLE_INTERVAL = 0.01  # seconds between RSS samples on the workers


# --- on every worker (client.run): peak RSS sampler, pause counter ------------------------

def _arm(dask_worker, interval=SAMPLE_INTERVAL):
    """Once per worker process: start a daemon thread that keeps the largest RSS seen, and
    replace the worker's "Pausing/Resuming worker" and "Unmanaged memory" warnings (one per
    event, hundreds a run when the data is spilled) by a count of pauses. Restarts and errors
    are still logged."""
    import logging
    import threading
    import time

    import psutil

    state = getattr(dask_worker, "_bench_state", None)
    if state is not None:
        return state
    proc = psutil.Process()
    state = {"proc": proc, "peak": proc.memory_info().rss, "pauses": 0}

    def sample():
        while dask_worker._bench_state is state:
            rss = proc.memory_info().rss
            if rss > state["peak"]:
                state["peak"] = rss
            time.sleep(interval)

    def count_and_drop(record):
        message = record.getMessage()
        if "Pausing worker" in message:
            state["pauses"] += 1
        return not ("Pausing worker" in message or "Resuming worker" in message
                    or "Unmanaged memory use is high" in message)

    logging.getLogger("distributed.worker.memory").addFilter(count_and_drop)
    dask_worker._bench_state = state
    threading.Thread(target=sample, name="bench-rss-sampler", daemon=True).start()
    return state


def _arm_plugin():
    """A worker plugin that arms every worker when it starts, restarted ones included."""
    from distributed import WorkerPlugin

    class ArmWorkers(WorkerPlugin):
        name = "bench-dask-lstsq"

        def setup(self, worker):
            _arm(worker)

        def teardown(self, worker):
            _disarm(worker)

    return ArmWorkers()


def _probe(dask_worker, reset=False):
    """This worker's pid, largest RSS since the last reset (bytes, with one last sample), RSS
    now, pauses since the last reset, and bytes of data held in memory and spilled to disk;
    with ``reset``, start a new measurement afterwards."""
    import os

    state = _arm(dask_worker)
    now = state["proc"].memory_info().rss
    data = dask_worker.data
    memory = getattr(data, "memory", data)
    tasks = dask_worker.state.tasks
    out = {"pid": os.getpid(), "peak": max(state["peak"], now), "now": now,
           "pauses": state["pauses"],
           "in_memory": sum(tasks[k].nbytes or 0 for k in list(memory) if k in tasks),
           "on_disk": getattr(getattr(data, "spilled_total", None), "disk", 0)}
    if reset:
        state["peak"], state["pauses"] = now, 0
    return out


def _disarm(dask_worker):
    dask_worker._bench_state = None  # ends the sampler thread
    return True


# --- the two gradients ---------------------------------------------------------------------

def chainrule_grad(X, y, w0, n):
    import dask.array as da

    # w is a one-chunk Dask array: chainrule does not mix a NumPy tensor with Dask ones
    # (see mixed_backend_note).
    w = cr.tensor(da.from_array(w0, chunks=-1), requires_grad=True)
    r = cr.tensor(X) @ w - cr.tensor(y)
    loss = (r * r).sum() / n
    loss.backward()  # lazy: builds the backward graph, computes nothing
    value, g = cr.compute(loss, w.grad)
    return float(value.numpy()), g.numpy()


def dask_grad(X, y, w0, n):
    import dask

    r = X @ w0 - y
    g = 2 * (X.T @ r) / n
    value, g = dask.compute((r * r).sum() / n, g)
    return float(value), np.asarray(g)


def graph_note(X, y, w0, n):
    """The tasks of chainrule's gradient graph beside the hand-written one's, and any
    rechunk layer in it (a cotangent broadcast back in other chunks than its input's)."""
    import dask.array as da

    w = cr.tensor(da.from_array(w0, chunks=-1), requires_grad=True)
    r = cr.tensor(X) @ w - cr.tensor(y)
    ((r * r).sum() / n).backward()
    graph = w.grad._data.dask
    rechunks = [name for name in graph.layers if "rechunk" in name]
    r0 = X @ w0 - y
    hand = (2 * (X.T @ r0) / n).dask
    return (f"gradient graph: {len(graph)} tasks (hand-written Dask {len(hand)}); rechunk "
            f"layers: {', '.join(rechunks) if rechunks else 'none'}")


def mixed_backend_note(X, y, w0):
    """Whether ``cr.tensor(w0)`` with w0 a NumPy array can be used with Dask tensors (builds
    the graph only)."""
    try:
        w = cr.tensor(w0, requires_grad=True)
        r = cr.tensor(X) @ w - cr.tensor(y)
        (r * r).sum().backward()
    except Exception as exc:  # noqa: BLE001  (report whatever chainrule raises)
        return f"a NumPy w with Dask X fails ({type(exc).__name__}: {exc}); w is wrapped " \
               "with da.from_array(w0, chunks=-1) instead"
    return "a NumPy w with Dask X works; w is still wrapped with da.from_array for the timing"


# --- measurement ---------------------------------------------------------------------------

def probe(client, reset=False):
    return list(client.run(_probe, reset=reset).values())


def measured_run(client, fn, *args):
    """Seconds, the largest worker RSS during the run (bytes), the largest RSS at its start
    (bytes), the worker pauses during it and the worker pids after it."""
    before = probe(client, reset=True)
    t0 = time.perf_counter()
    fn(*args)
    seconds = time.perf_counter() - t0
    after = probe(client)
    # a worker that was restarted during the run is new: its peak covers only its own life
    return (seconds, max(w["peak"] for w in after), max(w["now"] for w in before),
            sum(w["pauses"] for w in after), {w["pid"] for w in after})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", "--rows", type=int, default=2_000_000, help="rows of X")
    parser.add_argument("--d", type=int, default=50, help="columns of X")
    parser.add_argument("--chunk", type=int, default=100_000, help="rows per chunk")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each way")
    args = parser.parse_args(argv)
    n, d, chunk, repeat = args.n, args.d, args.chunk, args.repeat

    import dask.array as da
    from dask.distributed import Client, LocalCluster, wait

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="300MiB",
                           processes=True, dashboard_address=None)
    client = None
    try:
        client = Client(cluster)
        client.register_plugin(_arm_plugin())  # the samplers and the pause counters
        rs = da.random.RandomState(0)
        X = rs.standard_normal((n, d), chunks=(chunk, d))
        y = X @ np.linspace(-1.0, 1.0, d) + 0.1 * rs.standard_normal(n, chunks=chunk)
        X, y = client.persist([X, y])
        wait([X, y])
        w0 = np.random.default_rng(1).standard_normal(d) * 0.1
        workers = probe(client, reset=True)
        print(f"data: X {n:,} x {d} float64 = {n * d * 8 / 2**20:,.0f} MiB in "
              f"{X.numblocks[0]} chunks of {chunk:,} rows, and y, persisted on 2 worker "
              "processes (1 thread, 300 MiB limit each): "
              f"{sum(w['in_memory'] for w in workers) / 2**20:.0f} MiB in memory, "
              f"{sum(w['on_disk'] for w in workers) / 2**20:.0f} MiB spilled to disk; "
              f"workers paused {sum(w['pauses'] for w in workers)} times while persisting")
        print("note: " + mixed_backend_note(X, y, w0))
        print(graph_note(X, y, w0, n))

        loss_cr, g_cr = chainrule_grad(X, y, w0, n)
        loss_da, g_da = dask_grad(X, y, w0, n)
        ok = np.allclose(g_cr, g_da) and np.isclose(loss_cr, loss_da)
        print(f"gradient check, chainrule vs hand-written Dask: max abs difference "
              f"{np.abs(g_cr - g_da).max():.2e} (loss {loss_cr:.6f} vs {loss_da:.6f}): "
              + ("OK" if ok else "MISMATCH"))
        if not ok:
            raise SystemExit("chainrule's gradient is wrong; not timing it")

        ways = {"chainrule": chainrule_grad, "hand-written Dask": dask_grad}
        for fn in ways.values():  # warm-up
            fn(X, y, w0, n)
        pids = {w["pid"] for w in probe(client)}
        times, peaks, starts, pauses = ({name: [] for name in ways} for _ in range(4))
        restarted = {name: 0 for name in ways}
        for _ in range(repeat):  # the two ways take turns
            for name, fn in ways.items():
                seconds, peak, start_rss, paused, pids_after = measured_run(
                    client, fn, X, y, w0, n)
                times[name].append(seconds)
                peaks[name].append(peak / 2**20)
                starts[name].append(start_rss / 2**20)
                pauses[name].append(paused)
                restarted[name] += len(pids_after - pids)
                pids = pids_after
        client.unregister_worker_plugin(_arm_plugin().name)

        sec = {name: statistics.median(t) for name, t in times.items()}
        mib = {name: max(p) for name, p in peaks.items()}
        print(f"\nleast-squares loss + gradient, {n:,} x {d}, chunks of {chunk:,} rows: "
              f"median of {repeat} runs after 1 warm-up")
        print(f"{'':<18} | {'time (s, median)':>16} | {'peak RSS per worker (MiB)':>25}")
        print(f"{'-' * 18}-+-{'-' * 16}-+-{'-' * 25}")
        for name in ways:
            print(f"{name:<18} | {sec[name]:>16.3f} | {mib[name]:>25.0f}")
        print("(peak RSS: the largest of any worker over the timed runs, sampled every "
              f"{SAMPLE_INTERVAL * 1e3:.0f} ms)")
        for name in ways:
            print(f"  {name}: runs {', '.join(f'{t:.2f}' for t in times[name])} s; worker RSS "
                  f"at the start of a run up to {max(starts[name]):.0f} MiB; worker pauses "
                  f"per run {', '.join(map(str, pauses[name]))}; worker restarts "
                  f"{restarted[name]}")
        t_ratio = sec["chainrule"] / sec["hand-written Dask"]
        m_ratio = mib["chainrule"] / mib["hand-written Dask"]
        t_verdict = "met" if t_ratio <= TIME_TARGET else "NOT met"
        m_verdict = "met" if m_ratio <= MEMORY_TARGET else "NOT met"
        print(f"chainrule / Dask time = {t_ratio:.2f}x (target <= {TIME_TARGET}x: {t_verdict})")
        print(f"peak memory = {m_ratio:.2f}x (target <= {MEMORY_TARGET}x: {m_verdict})")
    finally:
        if client is not None:
            client.close()
        cluster.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
