#!/usr/bin/env bash
# chainrule's checks that need a GPU, in one run (on a machine with CuPy and a GPU):
#   OUT=/tmp/gpu bash tools/gpu_check.sh
# 1. every table sample on CuPy: forward, VJP, second-order VJP and JVP against NumPy
#    (tests/backends.py cupy; the failing samples go to $OUT/cupy_samples.txt);
# 2. the GPU tests of the suite (tests/test_backends.py: the CuPy cases and the GPU MLP;
#    tests/test_device_*.py, written for array-api-strict's device, on the GPU);
# 3. examples/gpu_mlp.py, the digits MLP trained on the GPU (its timing and accuracy);
# 4. bench/gpu_mlp_step.py: an MLP step, chainrule on CuPy beside PyTorch on CUDA and the
#    step written by hand in CuPy;
# 5. tools/device_diff/run.py: ~1,400 calls (ops, nn modules and functionals, distributions;
#    the nn ones again in float32) on the CPU and on cuda:0, outputs, gradients, buffers and
#    devices compared (the non-ok calls and the summaries go to $OUT/device_diff.txt).
# Set PYTHON to the interpreter that has CuPy (default python3); chainrule runs from src/.
set -u
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi -L
"$PY" -c "import cupy, numpy, scipy; print('cupy', cupy.__version__, 'numpy', numpy.__version__,
'scipy', scipy.__version__, 'devices', cupy.cuda.runtime.getDeviceCount())
import cupyx.scipy.special as s, cupyx.scipy.linalg as l
print('cupyx.scipy.special has', [n for n in ('jv', 'iv', 'ive', 'yv', 'kv') if hasattr(s, n)],
      'cupyx.scipy.linalg has', [n for n in ('lu', 'expm', 'schur', 'sqrtm') if hasattr(l, n)])"
timeout "${SAMPLES_TIMEOUT:-300}" "$PY" tests/backends.py --where cupy 2>&1 \
    | tee "$OUT/cupy_samples.txt" | tail -n 3
timeout "${TESTS_TIMEOUT:-240}" "$PY" -m pytest -q -p no:cacheprovider -rfs \
    tests/test_backends.py -k "${TESTS_K:-cupy or gpu}" 2>&1 | tee "$OUT/cupy_tests.txt" | tail -n 15
CHAINRULE_TEST_DEVICE=cuda:0 timeout "${TESTS_TIMEOUT:-240}" "$PY" -m pytest -q \
    -p no:cacheprovider -rfs tests/test_device_ops.py tests/test_device_nn.py 2>&1 \
    | tee "$OUT/device_tests.txt" | tail -n 15
timeout "${MLP_TIMEOUT:-120}" "$PY" examples/gpu_mlp.py 2>&1 | tee "$OUT/gpu_mlp.txt" | tail -n 15
timeout "${BENCH_TIMEOUT:-150}" "$PY" bench/gpu_mlp_step.py 2>&1 | tee "$OUT/gpu_bench.txt" | tail -n 12
DEV=cuda:0 timeout "${DIFF_TIMEOUT:-240}" "$PY" tools/device_diff/run.py 2>&1 \
    | tee "$OUT/device_diff.txt" | tail -n 12
