"""Device differential run: ~1,400 calls (ops, nn modules and functionals, distributions;
the nn ones again in float32) once on the CPU and once on a device, compared (outputs,
input and parameter gradients, buffers, and the device of every result).

    DEV=cuda:0 python tools/device_diff/run.py            # on a GPU, with CuPy
    python tools/device_diff/run.py                        # array_api_strict.device1
    python tools/device_diff/run.py nn-f32 dist            # some parts only

Parts: ops1 .. ops5 (cases_ops*.py), nn and nn-f32 (cases_nn.py; nn-f32 with float32
inputs and modules), dist (dist_diff.py). Each prints its non-ok calls and a summary line;
at the end come the summary lines again and ``device_diff: N calls, ok X, gaps G,
failures F``. A gap is a documented limit (harness.classify says which), a failure anything
else; the exit status is 1 when there is a failure.
"""
import importlib
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402

PARTS = ["nn", "ops1", "ops2", "ops3", "ops4", "ops5", "dist", "nn-f32"]


def run_part(part):
    if part in ("nn", "nn-f32"):
        return importlib.import_module("nn_diff").run_all(f32=part == "nn-f32")
    if part == "dist":
        return importlib.import_module("dist_diff").run_all()
    importlib.import_module(f"cases_{part}")  # registers its calls
    return harness.run_cases()


def main(argv):
    parts = argv or PARTS
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        sys.exit(f"unknown part(s) {unknown}; the parts are {PARTS}")
    warnings.simplefilter("ignore")
    print(f"device_diff on {harness.DEV} (backend {harness.backend_name()})", flush=True)
    start = time.perf_counter()
    summary = {}
    for part in parts:
        print(f"== {part}", flush=True)
        summary[part] = harness.report(part, run_part(part))
    print(f"== summary ({time.perf_counter() - start:.1f} s)")
    for part, (n, ok, gaps, fails) in summary.items():  # again, for a tail of the output
        print(f"{part}: {n} calls, ok {ok}, gaps {gaps}, failures {fails}")
    n, ok, gaps, fails = (sum(c[i] for c in summary.values()) for i in range(4))
    print(f"device_diff: {n} calls, ok {ok}, gaps {gaps}, failures {fails}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
