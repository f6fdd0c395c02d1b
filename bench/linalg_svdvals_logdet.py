"""Forward + backward of ``svdvals(A).sum() + logdet(A A^T + I)`` for A 200x200 float64:
chainrule vs PyTorch (CPU) vs a hand-written NumPy gradient, one thread each.

The hand-written gradient: d sum(svdvals(A)) / dA = U V^T and
d logdet(M) / dA = 2 M^-1 A for M = A A^T + I (M is symmetric).

    .venv/bin/python bench/linalg_svdvals_logdet.py
"""

import _common  # noqa: F401  (sets one thread before NumPy loads)
import numpy as np
from _common import interleaved_medians, torch, torch_cell

import chainrule as cr

N = 200
TARGET = 1.0


def run_chainrule(a):
    A = cr.tensor(a, requires_grad=True)
    loss = cr.linalg.svdvals(A).sum() + cr.linalg.logdet(A @ A.mT + cr.eye(N))
    loss.backward()
    return A.grad.numpy()


def run_torch(a):
    A = torch.tensor(a, requires_grad=True)
    loss = torch.linalg.svdvals(A).sum() + torch.logdet(A @ A.mT + torch.eye(N, dtype=A.dtype))
    loss.backward()
    return A.grad.numpy()


def run_numpy(a):
    U, _, Vh = np.linalg.svd(a, full_matrices=False)
    M = a @ a.T + np.eye(N)
    return U @ Vh + 2 * np.linalg.solve(M, a)


def main():
    a = np.random.default_rng(0).standard_normal((N, N))
    ref = run_numpy(a)
    assert np.allclose(run_chainrule(a), ref), "chainrule gradient differs from NumPy"
    if torch is not None:
        assert np.allclose(run_torch(a), ref), "PyTorch gradient differs from NumPy"
    print("gradients agree with the hand-written NumPy gradient (np.allclose)")
    fns = {"chainrule": run_chainrule, "NumPy": run_numpy}
    if torch is not None:
        fns["PyTorch"] = run_torch
    ms = {k: v * 1e3 for k, v in interleaved_medians(fns, a, repeats=15).items()}
    th = ms.get("PyTorch")
    print(f"\nsvdvals(A).sum() + logdet(A A^T + I), A {N}x{N} float64, forward + backward, "
          "median of 15, ms")
    print(f"{'chainrule':>12} | {'PyTorch':>20} | {'NumPy (by hand)':>16}")
    print(f"{'-' * 12}-+-{'-' * 20}-+-{'-' * 16}")
    print(f"{ms['chainrule']:>12.2f} | {torch_cell(th, '.2f'):>20} | {ms['NumPy']:>16.2f}")
    if th is not None:
        ratio = ms["chainrule"] / th
        verdict = "met" if ratio <= TARGET else "NOT met"
        print(f"\nchainrule / PyTorch = {ratio:.2f}x   (target <= PyTorch's time: {verdict})")
    print(f"chainrule / NumPy   = {ms['chainrule'] / ms['NumPy']:.2f}x")


if __name__ == "__main__":
    main()
