"""Composable transforms beside torch.func: per-sample gradients with vmap(grad(...)) and a
Hessian with jacfwd(jacrev(...)).

1. Per-sample gradients of a logistic-regression loss, N samples of D features:
   ``vmap(grad(loss), in_dims=(None, 0, 0))(w, X, y)``, beside torch.func's and a
   hand-batched NumPy gradient ``(sigmoid(X w) - y)[:, None] * X``.
   Targets: at most 1.5x the NumPy time and at most torch.func's time.
2. The Hessian of ``f(x) = sum(tanh(A x)) + |x|^2 / 2`` for x of size 100 with
   ``jacfwd(jacrev(f))``, beside torch.func's. Target: at most torch.func's time.

Medians of interleaved repeats after warm-up, one thread. Run from the repository root:

    .venv/bin/python bench/func_transforms.py
"""

import _common  # noqa: F401  (sets one thread before NumPy loads)
import numpy as np
from _common import interleaved_medians, torch, torch_cell

import chainrule as cr
from chainrule import func

N, D, HESS_N = 1000, 100, 100


def loss_cr(w, x, t):  # one sample's logistic loss
    z = (x * w).sum()
    return cr.softplus(z) - t * z


def per_sample_chainrule(w, X, y):
    return func.vmap(func.grad(loss_cr), in_dims=(None, 0, 0))(w, X, y).numpy()


def per_sample_numpy(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return (p - y)[:, None] * X


def hess_f_cr(A):
    return lambda x: (A @ x).tanh().sum() + (x * x).sum() / 2


def main():
    rng = np.random.default_rng(0)
    X, y, w = rng.standard_normal((N, D)), (rng.random(N) < 0.5) * 1.0, rng.standard_normal(D)
    ref = per_sample_numpy(w, X, y)
    tw, tX, ty = cr.tensor(w), cr.tensor(X), cr.tensor(y)
    assert np.allclose(per_sample_chainrule(tw, tX, ty), ref), "per-sample gradients differ"
    fns = {"chainrule": lambda: per_sample_chainrule(tw, tX, ty),
           "NumPy": lambda: per_sample_numpy(w, X, y)}
    if torch is not None:
        import torch.func as tf

        def loss_t(w_, x_, t_):
            z = (x_ * w_).sum()
            return torch.nn.functional.softplus(z) - t_ * z

        Tw, TX, Ty = torch.tensor(w), torch.tensor(X), torch.tensor(y)
        per_t = tf.vmap(tf.grad(loss_t), in_dims=(None, 0, 0))
        assert np.allclose(per_t(Tw, TX, Ty).numpy(), ref)
        fns["torch.func"] = lambda: per_t(Tw, TX, Ty)
    ms = {k: v * 1e3 for k, v in interleaved_medians(fns, warmup=2, repeats=7).items()}
    print(f"per-sample gradients, logistic regression, {N} samples x {D} features, ms")
    print(f"{'chainrule':>12} | {'torch.func':>20} | {'NumPy (batched by hand)':>24}")
    print(f"{ms['chainrule']:>12.2f} | {torch_cell(ms.get('torch.func'), '.2f'):>20} | "
          f"{ms['NumPy']:>24.3f}")
    r_np = ms["chainrule"] / ms["NumPy"]
    verdict = "met" if r_np <= 1.5 else "NOT met"
    print(f"chainrule / NumPy = {r_np:.1f}x (target <= 1.5x: {verdict})")
    if "torch.func" in ms:
        r_t = ms["chainrule"] / ms["torch.func"]
        print(f"chainrule / torch.func = {r_t:.1f}x (target <= 1x: "
              f"{'met' if r_t <= 1 else 'NOT met'})")

    A = rng.standard_normal((HESS_N, HESS_N)) / np.sqrt(HESS_N)
    x0 = rng.standard_normal(HESS_N)
    tA, tx = cr.tensor(A), cr.tensor(x0)
    hess_cr = func.jacfwd(func.jacrev(hess_f_cr(tA)))
    s = 1 - np.tanh(A @ x0) ** 2
    ref_h = A.T @ np.diag(-2 * np.tanh(A @ x0) * s) @ A + np.eye(HESS_N)
    assert np.allclose(hess_cr(tx).numpy(), ref_h), "Hessian differs from the formula"
    fns = {"chainrule": lambda: hess_cr(tx)}
    if torch is not None:
        TA, Tx = torch.tensor(A), torch.tensor(x0)
        hess_t = tf.jacfwd(tf.jacrev(lambda v: (TA @ v).tanh().sum() + (v * v).sum() / 2))
        assert np.allclose(hess_t(Tx).numpy(), ref_h)
        fns["torch.func"] = lambda: hess_t(Tx)
    ms = {k: v * 1e3 for k, v in interleaved_medians(fns, warmup=2, repeats=11).items()}
    print(f"\nHessian by jacfwd(jacrev(f)), x of size {HESS_N}, ms")
    print(f"{'chainrule':>12} | {'torch.func':>20}")
    print(f"{ms['chainrule']:>12.2f} | {torch_cell(ms.get('torch.func'), '.2f'):>20}")
    if "torch.func" in ms:
        r = ms["chainrule"] / ms["torch.func"]
        print(f"chainrule / torch.func = {r:.2f}x (target <= 1x: {'met' if r <= 1 else 'NOT met'})")


if __name__ == "__main__":
    main()
