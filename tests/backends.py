"""Running the table's samples on other backends: Dask (one chunk, several chunks),
array-api-strict on its non-default device (which refuses host conversion where CuPy
would) and, where a GPU is present, CuPy. Used by tests/test_backends.py;
``python tests/backends.py [--where] [backend ...]`` prints each failing sample (to refresh
KNOWN_GAPS)."""

from __future__ import annotations

import numpy as np

import chainrule as cr
from chainrule.autograd import grad
from chainrule.backend import dtype_kind, numpy_dtype


class Computed(AssertionError):
    """A Dask graph was computed while chainrule ran (it must stay lazy)."""


def _dask_guard():
    from dask.callbacks import Callback

    class NoCompute(Callback):
        def _start(self, dsk):
            raise Computed("a Dask compute ran inside chainrule (it must stay lazy)")

    return NoCompute()


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def converters():
    """name -> (to_backend(ndarray), to_numpy(array), guard()) for the installed ones."""
    out = {}
    try:
        import dask.array as da

        def dask_one(a):
            return da.from_array(a, chunks=-1)

        def dask_many(a):
            return da.from_array(a, chunks=tuple(max(1, (n + 1) // 2) for n in a.shape))

        def dask_np(a):
            return np.asarray(a.compute())

        out["dask-1chunk"] = (dask_one, dask_np, _dask_guard)
        out["dask-chunks"] = (dask_many, dask_np, _dask_guard)
    except ImportError:
        pass
    try:
        import array_api_strict as xps

        dev = xps.Device("device1")

        def strict(a):
            return xps.asarray(a, device=dev)

        def strict_np(a):
            return np.asarray(xps.asarray(a, device=xps.Device("CPU_DEVICE")))

        out["array-api-strict"] = (strict, strict_np, _Null)
    except ImportError:
        pass
    try:  # CuPy on a GPU: it refuses implicit host conversion itself, so no guard is needed
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            out["cupy"] = (cupy.asarray, cupy.asnumpy, _Null)
    except Exception:  # no CuPy, or no GPU / CUDA driver to run it
        pass
    return out


def _passes(sample, make, cots, weights, tangents):
    """Forward, VJP, second-order VJP and JVP of ``sample`` on inputs made by ``make``
    (an ndarray -> array function): (outputs, grads, second-order grads, tangents)."""
    from chainrule.autograd import forward_ad as fwAD

    inputs = [cr.tensor(make(x), requires_grad=True) if isinstance(x, np.ndarray) else x
              for x in sample.inputs]
    out = sample.fn(*inputs)
    outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o.requires_grad]
    diff = [t for t in inputs if isinstance(t, cr.Tensor)]
    gs = grad(outs, diff, [cr.as_tensor(make(c)) for c in cots], allow_unused=True,
              materialize_grads=True, create_graph=True)
    second = [g for g in gs if g.requires_grad]
    total = None
    for g, w in zip(gs, weights):
        if g.requires_grad:
            term = (g * cr.as_tensor(make(w))).sum()
            total = term if total is None else total + term
    g2 = grad(total, diff, allow_unused=True, materialize_grads=True) if second else []
    with fwAD.dual_level():
        it = iter(tangents)
        duals = [fwAD.make_dual(cr.tensor(make(x)), cr.tensor(make(next(it))))
                 if isinstance(x, np.ndarray) else x for x in sample.inputs]
        fout = sample.fn(*duals)
        touts = [fwAD.unpack_dual(o).tangent
                 for o in (fout if isinstance(fout, tuple) else (fout,))
                 if dtype_kind(o.dtype) == "f"]
    return outs, gs, g2, touts


def _single(a):
    return a.astype(np.float32) if a.dtype == np.float64 else a


def run_sample(sample, backend):
    """Forward, VJP (first and second order) and JVP of ``sample`` on ``backend``, checked
    against NumPy, then again in float32, where every result must stay float32. Returns
    None when all run and agree, else the exception (its class and message say why)."""
    to_b, to_np, guard = converters()[backend]
    rng = np.random.default_rng(0)
    ref = sample.fn(*[cr.tensor(x) if isinstance(x, np.ndarray) else x
                      for x in sample.inputs])
    shapes = [o.shape for o in (ref if isinstance(ref, tuple) else (ref,))]
    cots = [rng.standard_normal(s) for s in shapes]
    weights = [rng.standard_normal(x.shape) for x in sample.inputs
               if isinstance(x, np.ndarray)]
    tangents = list(weights)
    try:
        expected = _passes(sample, lambda a: a, cots, weights, tangents)
    except Exception:  # a sample NumPy cannot run this way (e.g. an integer output)
        return None
    ref_outs, ref_g, ref_g2, ref_t = expected
    cots = cots[:len(ref_outs)]
    try:
        with guard():
            got = _passes(sample, to_b, cots, weights, tangents)
        for a, b in zip(got[0], ref_outs):
            np.testing.assert_allclose(to_np(a._data), b.detach().numpy(), rtol=1e-9,
                                       atol=1e-9, err_msg="forward")
        for what, xs, ys in (("vjp", got[1], ref_g), ("second-order vjp", got[2], ref_g2),
                             ("jvp", got[3], ref_t)):
            assert len(xs) == len(ys), what
            for a, b in zip(xs, ys):
                if b is None:
                    assert a is None, what
                    continue
                np.testing.assert_allclose(to_np(a._data), b.detach().numpy(), rtol=1e-8,
                                           atol=1e-9, err_msg=what)
        # float32 is kept on the backend too: no kernel or rule may compute in float64
        with guard():
            got = _passes(sample, lambda a: to_b(_single(a)), cots, weights, tangents)
        f32 = np.dtype(np.float32)
        want = np.dtype(np.float64) if sample.op == "_to_copy" else f32  # it converts to f64
        for what, xs, dtype in (("forward", got[0], want), ("vjp", got[1], f32),
                                ("second-order vjp", got[2], f32), ("jvp", got[3], want)):
            for a in xs:
                assert a is None or numpy_dtype(a.dtype) == dtype, \
                    f"float32 {what} gives {a.dtype}"
    except Exception as exc:  # reported: the caller compares with KNOWN_GAPS
        return exc
    return None


if __name__ == "__main__":  # pragma: no cover - a maintenance script
    # python tests/backends.py [--where] [backend ...]: each failing sample, tab-separated
    # (--where adds the innermost chainrule frame of the error)
    import sys
    import time
    import traceback

    sys.path.insert(0, "tests")
    from samples import SAMPLES

    args = sys.argv[1:]
    where = "--where" in args
    names = [a for a in args if a != "--where"] or list(converters())
    for backend in names:
        start, failed = time.perf_counter(), 0
        for s in SAMPLES:
            err = run_sample(s, backend)
            if err is not None:
                failed += 1
                frame = ""
                if where:
                    inner = err  # the first error, under the ones that renamed it
                    while (inner.__cause__ or inner.__context__) is not None:
                        inner = inner.__cause__ or inner.__context__
                    frames = [f for f in traceback.extract_tb(inner.__traceback__)
                              if "chainrule" in f.filename]
                    if frames:
                        f = frames[-1]
                        frame = f"\t{f.filename.split('chainrule/')[-1]}:{f.lineno}"
                msg = str(err).replace("\n", " ")[:300]
                print(f"{backend}\t{s.id}\t{type(err).__name__}: {msg}{frame}", flush=True)
        print(f"# {backend}: {failed} of {len(SAMPLES)} samples fail "
              f"({time.perf_counter() - start:.0f} s)", flush=True)
