"""One MLP training step on a GPU: chainrule on CuPy vs PyTorch on CUDA vs the same step
written by hand in CuPy (the floor).

The step of ``bench/mlp_step.py`` (float32 MLP 784 -> 512 -> 512 -> 10, relu, softmax
cross-entropy, forward + backward + SGD update), with every array on the GPU, at a small
batch (256, where per-op overhead decides) and a large one (8192, where the GPU's work
does). chainrule's gradients are first checked against the hand-written CuPy backward.
Each step ends with a device synchronize; median over repeats after warm-up, the three
columns interleaved. Needs CuPy and a GPU (PyTorch with CUDA optional); run from the
repository root on such a machine with:

    python bench/gpu_mlp_step.py             # the table
    python bench/gpu_mlp_step.py --profile   # where chainrule's host time goes (cProfile)
"""

import sys

import _common  # noqa: F401  (one CPU thread, optional torch)
from _common import interleaved_medians, torch
from mlp_step import LR, SIZES, forward_loss, init_params, numpy_grads

import chainrule as cr

try:
    import cupy
except ImportError:
    cupy = None

BATCHES = (256, 8192)
WARMUP, REPEATS = 5, 41


def cupy_grads(params, X, y):
    """The hand-written backward of ``mlp_step.numpy_grads``, in CuPy."""
    return numpy_grads(params, X, y, xp=cupy)


def chainrule_step(params, X, y):
    """One chainrule step (forward, backward, SGD update), waiting for the GPU."""
    def step():
        forward_loss(params, X, y, cr.cross_entropy, cr.relu).backward()
        with cr.no_grad():
            for p in params:
                p -= LR * p.grad
                p.grad = None
        cupy.cuda.Device().synchronize()

    return step


def measure(n, sync, has_torch):
    """ms per step of each column at batch ``n`` (None when the gradient check fails)."""
    rng = cupy.random.default_rng(1)
    X = rng.standard_normal((n, SIZES[0]), dtype=cupy.float32)
    y = rng.integers(0, SIZES[-1], n)
    cp_params = [cupy.asarray(p) for p in init_params()]
    cr_params = [cr.tensor(cupy.asarray(p), requires_grad=True) for p in init_params()]
    cX, cy = cr.tensor(X), cr.tensor(y)

    forward_loss(cr_params, cX, cy, cr.cross_entropy, cr.relu).backward()
    ok = all(p.grad.dtype == cr.float32 and bool(cupy.allclose(
        p.grad._data, g, rtol=1e-4, atol=1e-5)) for p, g in zip(
            cr_params, cupy_grads(cp_params, X, y), strict=True))
    print(f"batch {n}: gradient check, chainrule vs hand-written CuPy (float32, rtol=1e-4, "
          "atol=1e-5): " + ("OK" if ok else "MISMATCH"))
    if not ok:
        return None
    for p in cr_params:
        p.grad = None

    def cupy_step():
        for p, g in zip(cp_params, cupy_grads(cp_params, X, y), strict=True):
            p -= LR * g
        sync()

    steps = {"chainrule": chainrule_step(cr_params, cX, cy), "CuPy (by hand)": cupy_step}
    if has_torch:
        th = [torch.as_tensor(p, device="cuda").requires_grad_() for p in init_params()]
        tX, ty = torch.as_tensor(X, device="cuda"), torch.as_tensor(y, device="cuda")

        def torch_step():
            forward_loss(th, tX, ty, torch.nn.functional.cross_entropy, torch.relu).backward()
            with torch.no_grad():
                for p in th:
                    p -= LR * p.grad
                    p.grad = None
            torch.cuda.synchronize()

        steps["PyTorch"] = torch_step
    seconds = interleaved_medians(steps, warmup=WARMUP, repeats=REPEATS)
    return {k: v * 1e3 for k, v in seconds.items()}


def profile(n=256, steps=50, top=30):
    """cProfile of ``steps`` chainrule steps at batch ``n``: where the host time goes."""
    import cProfile
    import pstats

    rng = cupy.random.default_rng(1)
    X = cr.tensor(rng.standard_normal((n, SIZES[0]), dtype=cupy.float32))
    y = cr.tensor(rng.integers(0, SIZES[-1], n))
    params = [cr.tensor(cupy.asarray(p), requires_grad=True) for p in init_params()]
    step = chainrule_step(params, X, y)
    for _ in range(5):
        step()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        step()
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def main():
    if cupy is None or cupy.cuda.runtime.getDeviceCount() == 0:
        print("needs CuPy and a GPU")
        return 1
    if "--profile" in sys.argv:
        profile()
        return 0
    sync = cupy.cuda.Device().synchronize
    has_torch = torch is not None and torch.cuda.is_available()
    print(f"GPU: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}, CuPy "
          f"{cupy.__version__}" + (f", PyTorch {torch.__version__}" if has_torch else ""))
    rows = []
    for n in BATCHES:
        ms = measure(n, sync, has_torch)
        if ms is None:
            return 1
        rows.append((n, ms))

    print(f"\nMLP {'-'.join(map(str, SIZES))}, float32, on the GPU: forward + backward + SGD "
          f"update, ms per step (median of {REPEATS})")
    print(f"{'batch':>6} | {'chainrule':>10} | {'CuPy (by hand)':>14} | {'PyTorch':>8} | "
          f"{'vs CuPy':>8} | {'vs PyTorch':>10}")
    for n, ms in rows:
        mine, floor, t = ms["chainrule"], ms["CuPy (by hand)"], ms.get("PyTorch")
        t_cell = "n/a" if t is None else f"{t:.3f}"
        ratio = "n/a" if t is None else f"{mine / t:.2f}x"
        print(f"{n:>6} | {mine:>10.3f} | {floor:>14.3f} | {t_cell:>8} | "
              f"{mine / floor:>7.2f}x | {ratio:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
