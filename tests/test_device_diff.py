"""The device differential run (``tools/device_diff``) on array-api-strict's second device,
as in CI: about 1,900 calls (ops, nn modules and functionals in float64 and float32,
distributions) each run on the CPU and on the device, with outputs, input and parameter
gradients, buffers and the device of every result compared. A call array-api-strict cannot
run by its own rules, or one that raises NotImplementedError naming the backend, is a gap;
anything else that differs fails here. On a GPU, ``tools/gpu_check.sh`` runs the same calls
on ``cuda:0``."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("array_api_strict")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_call_agrees_with_the_cpu_on_a_device():
    env = dict(os.environ, DEV="array_api_strict.device1", PYTHONWARNINGS="ignore")
    env["PYTHONPATH"] = os.path.join(ROOT, "src") + os.pathsep + env.get("PYTHONPATH", "")
    run = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "device_diff", "run.py")],
                         capture_output=True, text=True, env=env, timeout=600)
    last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr[-2000:]
    assert last.startswith("device_diff: ") and last.endswith("failures 0"), \
        run.stdout[-6000:] + run.stderr[-2000:]
    n, ok = (int(v) for v in re.match(r"device_diff: (\d+) calls, ok (\d+)", last).groups())
    assert n > 1800 and ok > 1500, last  # every part ran, and most calls compared equal
    assert run.returncode == 0
