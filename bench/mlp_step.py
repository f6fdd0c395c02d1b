"""One MLP training step: chainrule vs a hand-written NumPy backward vs PyTorch (CPU).

Measures forward + backward + plain SGD update (p -= lr * grad under no_grad) of a float32
MLP 784 -> 512 -> 512 -> 10 with relu, on a batch X of 256x784 with integer class targets and
softmax cross-entropy (mean reduction), once with the fused ``cross_entropy`` and once with
the loss written from primitives (an ``amax`` shift, ``exp``, ``sum``, ``log`` and indexing:
every rule must keep float32 for this to run at float32 speed). The hand-written NumPy step
(forward saving
activations, backward with matrix products, fused softmax-cross-entropy gradient
(softmax - onehot) / N) is the fair baseline. Before timing, chainrule's gradients are checked
against the hand-written ones. Median over several repeats after warm-up; BLAS and torch run
on one thread. Peak memory of one step is from tracemalloc (NumPy-based columns only). Run from
the repository root with:

    .venv/bin/python bench/mlp_step.py
"""

import tracemalloc

import _common  # noqa: F401  (sets one thread before NumPy loads)
import numpy as np
from _common import interleaved_medians, torch

import chainrule as cr

try:  # Unix only; for the page-fault column
    import resource
except ImportError:
    resource = None

N, SIZES, LR = 256, (784, 512, 512, 10), 1e-3
WARMUP, REPEATS = 3, 31
TARGET = 1.1


def init_params(seed=0):
    """[W1, b1, W2, b2, W3, b3] as float32 arrays (W: fan_in x fan_out)."""
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:], strict=True):
        W = rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)
        params.append(W.astype(np.float32))
        params.append(np.zeros(fan_out, np.float32))
    return params


# --- hand-written NumPy -------------------------------------------------------------------

def numpy_grads(params, X, y, xp=np):
    """The gradients written by hand, in NumPy (or another array library ``xp``: CuPy in
    ``gpu_mlp_step.py``)."""
    W1, b1, W2, b2, W3, b3 = params
    h1 = X @ W1 + b1
    a1 = xp.maximum(h1, 0)
    h2 = a1 @ W2 + b2
    a2 = xp.maximum(h2, 0)
    logits = a2 @ W3 + b3
    e = xp.exp(logits - logits.max(axis=1, keepdims=True))
    d = e / e.sum(axis=1, keepdims=True)  # softmax, becomes dloss/dlogits below
    d[xp.arange(len(y)), y] -= 1
    d /= len(y)
    da2 = d @ W3.T
    da2 *= h2 > 0
    da1 = da2 @ W2.T
    da1 *= h1 > 0
    return [X.T @ da1, da1.sum(0), a1.T @ da2, da2.sum(0), a2.T @ d, d.sum(0)]


def numpy_step(params, X, y):
    for p, g in zip(params, numpy_grads(params, X, y), strict=True):
        p -= LR * g


# --- chainrule and PyTorch (same code, the framework's autograd) --------------------------

def forward_loss(params, X, y, ce, relu):
    W1, b1, W2, b2, W3, b3 = params
    a1 = relu(X @ W1 + b1)
    a2 = relu(a1 @ W2 + b2)
    return ce(a2 @ W3 + b3, y)


def primitive_ce(m):
    """Softmax cross-entropy from primitives: log-softmax with a max shift, then the mean
    negative log-likelihood of the targets (the same loss as ``cross_entropy``)."""
    def ce(logits, y):
        z = logits - m.amax(logits, 1, keepdim=True)
        logp = z - z.exp().sum(1, keepdim=True).log()
        return -logp[m.arange(len(y)), y].mean()
    return ce


def chainrule_step(params, X, y, ce=cr.cross_entropy):
    forward_loss(params, X, y, ce, cr.relu).backward()
    with cr.no_grad():
        for p in params:
            p -= LR * p.grad
            p.grad = None


def torch_step(params, X, y, ce=None):
    forward_loss(params, X, y, ce or torch.nn.functional.cross_entropy, torch.relu).backward()
    with torch.no_grad():
        for p in params:
            p -= LR * p.grad
            p.grad = None


# --- measurement --------------------------------------------------------------------------

def minor_faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt if resource else 0


def peak_mib(step):
    step()  # settle one-off allocations
    tracemalloc.start()
    step()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def main():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((N, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], N)

    np_params = init_params()
    cr_params = [cr.tensor(p.copy(), requires_grad=True) for p in init_params()]
    cX = cr.tensor(X)

    cr_ce = primitive_ce(cr)
    for label, ce in (("fused cross_entropy", cr.cross_entropy), ("primitive loss", cr_ce)):
        forward_loss(cr_params, cX, y, ce, cr.relu).backward()
        pairs = zip([p.grad.numpy() for p in cr_params], numpy_grads(np_params, X, y),
                    strict=True)
        ok = all(a.dtype == b.dtype == np.float32 and np.allclose(a, b, rtol=1e-4, atol=1e-5)
                 for a, b in pairs)
        for p in cr_params:
            p.grad = None
        print(f"gradient check ({label}), chainrule vs hand-written NumPy (float32, rtol=1e-4, "
              "atol=1e-5): " + ("OK, all 6 parameter gradients agree" if ok else "MISMATCH"))
        if not ok:
            raise SystemExit("chainrule gradients are wrong; not timing them")

    steps = {"chainrule": lambda: chainrule_step(cr_params, cX, y),
             "chainrule, prim.": lambda: chainrule_step(cr_params, cX, y, cr_ce),
             "NumPy (by hand)": lambda: numpy_step(np_params, X, y)}
    if torch is not None:
        th_params = [torch.tensor(p, requires_grad=True) for p in init_params()]
        tX, ty = torch.from_numpy(X), torch.from_numpy(y)
        th_ce = primitive_ce(torch)
        steps["PyTorch"] = lambda: torch_step(th_params, tX, ty)
        steps["PyTorch, prim."] = lambda: torch_step(th_params, tX, ty, th_ce)
    # Many page faults per step mean the allocator hands memory back to the OS and touches
    # fresh pages every step (glibc heap trimming), which costs whole milliseconds here.
    seconds, faults = interleaved_medians(steps, warmup=WARMUP, repeats=REPEATS,
                                          counter=minor_faults)
    ms = {name: s * 1e3 for name, s in seconds.items()}
    mib = {name: peak_mib(step) for name, step in steps.items()
           if not name.startswith("PyTorch")}

    print(f"\nMLP {'-'.join(map(str, SIZES))}, batch {N}, float32: forward + backward + SGD "
          f"update, median of {REPEATS}")
    print(f"{'':<16} | {'ms / step':>20} | {'peak MiB (tracemalloc)':>22} | "
          f"{'page faults / step':>18}")
    print(f"{'-' * 16}-+-{'-' * 20}-+-{'-' * 22}-+-{'-' * 18}")
    for name in ("chainrule", "chainrule, prim.", "NumPy (by hand)", "PyTorch",
                 "PyTorch, prim."):
        ms_cell = f"{ms[name]:.2f}" if name in ms else "torch not installed"
        mib_cell = f"{mib[name]:.1f}" if name in mib else "n/a"
        flt_cell = f"{faults[name]:.0f}" if name in faults and resource else "n/a"
        print(f"{name:<16} | {ms_cell:>20} | {mib_cell:>22} | {flt_cell:>18}")

    print("(prim.: the loss written with amax, exp, sum, log and indexing)")
    for name in ("chainrule", "chainrule, prim."):
        ratio = ms[name] / ms["NumPy (by hand)"]
        verdict = "met" if ratio <= TARGET else "NOT met"
        print(f"{name + ' / NumPy (by hand)':<36} = {ratio:.2f}x   "
              f"(target <= {TARGET}x the hand-written NumPy step: {verdict})")
    if torch is not None:
        print(f"{'chainrule / PyTorch':<36} = {ms['chainrule'] / ms['PyTorch']:.2f}x")


if __name__ == "__main__":
    main()
