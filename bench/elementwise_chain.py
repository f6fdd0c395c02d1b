"""Per-op overhead of a long elementwise chain: chainrule vs PyTorch (CPU) vs hand-written NumPy.

Measures forward + backward of a 300-op chain on a 16x16 float64 array,

    y = x
    for _ in range(100):
        y = (y * 1.001 + 0.5).tanh()
    y.sum().backward()

and reports the time per op (total / 300), median over several repeats after warm-up. The
array is tiny, so this measures per-op framework overhead, not arithmetic. BLAS and torch run
on one thread. Run from the repository root with:

    .venv/bin/python bench/elementwise_chain.py
"""

import _common  # noqa: F401  (sets one thread before NumPy loads)
import numpy as np
from _common import interleaved_medians, torch, torch_cell

import chainrule as cr

STEPS, OPS_PER_STEP = 100, 3
N_OPS = STEPS * OPS_PER_STEP
WARMUP, REPEATS = 5, 41
TARGET = 0.8


def chain(x):
    y = x
    for _ in range(STEPS):
        y = (y * 1.001 + 0.5).tanh()
    return y


def run_chainrule(a):
    x = cr.tensor(a, requires_grad=True)
    chain(x).sum().backward()
    return x.grad.numpy()


def run_torch(a):
    x = torch.tensor(a, requires_grad=True)
    chain(x).sum().backward()
    return x.grad.numpy()


def run_numpy(a):
    outs, y = [], a
    for _ in range(STEPS):
        y = np.tanh(y * 1.001 + 0.5)
        outs.append(y)
    g = np.ones_like(y)  # d sum / d y
    for out in reversed(outs):
        g = g * (1 - out**2) * 1.001
    return g


def main():
    a = np.random.default_rng(0).standard_normal((16, 16))
    ref = run_numpy(a)
    assert np.allclose(run_chainrule(a), ref), "chainrule gradient differs from NumPy"
    if torch is not None:
        assert np.allclose(run_torch(a), ref), "PyTorch gradient differs from NumPy"
    print("gradients agree with the hand-written NumPy backward (np.allclose)")

    fns = {"chainrule": run_chainrule, "NumPy": run_numpy}
    if torch is not None:
        fns["PyTorch"] = run_torch
    us = {k: v / N_OPS * 1e6 for k, v in
          interleaved_medians(fns, a, warmup=WARMUP, repeats=REPEATS).items()}
    cr_us, np_us, th_us = us["chainrule"], us["NumPy"], us.get("PyTorch")

    th_cell = torch_cell(th_us, ".2f")
    print(f"\n{N_OPS}-op elementwise chain on 16x16 float64, forward + backward, "
          f"median of {REPEATS}, us per op")
    print(f"{'chainrule':>12} | {'PyTorch':>20} | {'NumPy (by hand)':>16}")
    print(f"{'-' * 12}-+-{'-' * 20}-+-{'-' * 16}")
    print(f"{cr_us:>12.2f} | {th_cell:>20} | {np_us:>16.2f}")
    if th_us is not None:
        ratio = cr_us / th_us
        verdict = "met" if ratio <= TARGET else "NOT met"
        print(f"\nchainrule / PyTorch = {ratio:.2f}x   (target <= {TARGET}x PyTorch: {verdict})")
    else:
        print(f"\nchainrule / PyTorch: torch not installed (target <= {TARGET}x PyTorch)")
    print(f"chainrule / NumPy   = {cr_us / np_us:.2f}x")


if __name__ == "__main__":
    main()
