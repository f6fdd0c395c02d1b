"""Running the table's samples on other backends: Dask (one chunk, several chunks) and
array-api-strict on its non-default device (which refuses host conversion where CuPy
would). Used by tests/test_backends.py; ``python tests/backends.py`` prints each
sample's outcome (to refresh KNOWN_GAPS)."""

from __future__ import annotations

import numpy as np

import chainrule as cr
from chainrule.autograd import grad


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
    return out


def run_sample(sample, backend):
    """Forward and VJP of ``sample`` on ``backend``, checked against NumPy. Returns None
    when it runs and agrees, else the exception (its class and message say why)."""
    to_b, to_np, guard = converters()[backend]
    inputs = [x for x in sample.inputs]
    ref_in = [cr.tensor(x, requires_grad=True) if isinstance(x, np.ndarray) else x
              for x in inputs]
    ref = sample.fn(*ref_in)
    ref_outs = [o for o in (ref if isinstance(ref, tuple) else (ref,))
                if o.requires_grad and o.dtype.kind == "f"]
    rng = np.random.default_rng(0)
    cots = [rng.standard_normal(o.shape) for o in ref_outs]
    diff_ref = [t for t in ref_in if isinstance(t, cr.Tensor)]
    ref_g = grad(ref_outs, diff_ref, [cr.tensor(c) for c in cots], allow_unused=True,
                 materialize_grads=True)
    try:
        b_in = [cr.tensor(to_b(x), requires_grad=True) if isinstance(x, np.ndarray) else x
                for x in inputs]
        with guard():
            out = sample.fn(*b_in)
            outs = [o for o in (out if isinstance(out, tuple) else (out,))
                    if o.requires_grad]
            b_cots = [cr.as_tensor(to_b(c)) for c in cots]
            diff = [t for t in b_in if isinstance(t, cr.Tensor)]
            gs = grad(outs, diff, b_cots, allow_unused=True, materialize_grads=True)
        for o, r in zip(outs, ref_outs):
            np.testing.assert_allclose(to_np(o._data), r.detach().numpy(), rtol=1e-9,
                                       atol=1e-9)
        for g, r in zip(gs, ref_g):
            np.testing.assert_allclose(to_np(g._data), r.numpy(), rtol=1e-8, atol=1e-9)
    except Exception as exc:  # reported: the caller compares with KNOWN_GAPS
        return exc
    return None


if __name__ == "__main__":  # pragma: no cover - a maintenance script
    import sys

    sys.path.insert(0, "tests")
    from samples import SAMPLES

    for backend in converters():
        for s in SAMPLES:
            err = run_sample(s, backend)
            if err is not None:
                print(f"{backend}\t{s.id}\t{type(err).__name__}: {str(err)[:150]}")
