"""Composable transforms beside torch.func: per-sample gradients with vmap(grad(...)) and a
Hessian with jacfwd(jacrev(...)).

1. Per-sample gradients of a logistic-regression loss, N samples of D features:
   ``vmap(grad(loss), in_dims=(None, 0, 0))(w, X, y)``, beside torch.func's and a
   hand-batched NumPy gradient ``(sigmoid(X w) - y)[:, None] * X``, with the loss's linear
   part written two ways: ``(x * w).sum()`` and ``x @ w``; each also under
   ``chainrule.compile`` (traced once, then replayed as the NumPy calls it made). The
   NumPy floor of the ``(x * w).sum()`` loss is written the same way, ``(X * w).sum(1)``.
   The same at 4 samples shows the cost of the calls alone.
   Targets: at most 1.5x the NumPy time and at most torch.func's time.
2. The Hessian of ``f(x) = sum(tanh(A x)) + |x|^2 / 2`` for x of size 100 with
   ``jacfwd(jacrev(f))``, beside torch.func's. Target: at most torch.func's time.
3. (No target.) Per-sample gradients of an MLP classifier through ``functional_call`` and
   ``nll_loss`` (PyTorch's per-sample-gradients tutorial, with an MLP for its CNN).

Medians of interleaved repeats after warm-up, one thread. Run from the repository root:

    .venv/bin/python bench/func_transforms.py
"""

import _common  # noqa: F401  (sets one thread before NumPy loads)
import numpy as np
from _common import interleaved_medians, torch, torch_cell

import chainrule as cr
from chainrule import func

N, D, HESS_N = 1000, 100, 100


def loss_sum(w, x, t):  # one sample's logistic loss, the linear part written elementwise
    z = (x * w).sum()
    return cr.softplus(z) - t * z


def loss_dot(w, x, t):  # the same loss, the linear part written as a product
    z = x @ w
    return cr.softplus(z) - t * z


def per_sample_numpy(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return (p - y)[:, None] * X


def per_sample_numpy_sum(w, X, y):  # the same, the linear part written as the loss writes it
    p = 1.0 / (1.0 + np.exp(-(X * w).sum(1)))
    return (p - y)[:, None] * X


def hess_f_cr(A):
    return lambda x: (A @ x).tanh().sum() + (x * x).sum() / 2


def per_sample_table(n, rng):
    """Median ms of each way to get the per-sample gradients of n samples."""
    X, y, w = rng.standard_normal((n, D)), (rng.random(n) < 0.5) * 1.0, rng.standard_normal(D)
    ref = per_sample_numpy(w, X, y)
    tw, tX, ty = cr.tensor(w), cr.tensor(X), cr.tensor(y)
    fns = {"NumPy dot": lambda: per_sample_numpy(w, X, y),
           "NumPy sum": lambda: per_sample_numpy_sum(w, X, y)}
    for name, loss in (("sum", loss_sum), ("dot", loss_dot)):
        per = func.vmap(func.grad(loss), in_dims=(None, 0, 0))
        fast = cr.compile(per)
        for f in (per, fast, fast, fast):  # the compiled one traces, then checks a replay
            assert np.allclose(f(tw, tX, ty).numpy(), ref), "per-sample gradients differ"
        assert not fast.why, f"the compiled per-sample gradients do not replay: {fast.why}"
        fns[f"chainrule {name}"] = lambda per=per: per(tw, tX, ty)
        fns[f"compiled {name}"] = lambda fast=fast: fast(tw, tX, ty)
    if torch is not None:
        import torch.func as tf

        def t_sum(w_, x_, t_):
            z = (x_ * w_).sum()
            return torch.nn.functional.softplus(z) - t_ * z

        def t_dot(w_, x_, t_):
            z = x_ @ w_
            return torch.nn.functional.softplus(z) - t_ * z

        Tw, TX, Ty = torch.tensor(w), torch.tensor(X), torch.tensor(y)
        for name, loss in (("sum", t_sum), ("dot", t_dot)):
            per_t = tf.vmap(tf.grad(loss), in_dims=(None, 0, 0))
            assert np.allclose(per_t(Tw, TX, Ty).numpy(), ref)
            fns[f"torch.func {name}"] = lambda per_t=per_t: per_t(Tw, TX, Ty)
    return {k: v * 1e3 for k, v in interleaved_medians(fns, warmup=5, repeats=41).items()}


def main():
    rng = np.random.default_rng(0)
    ms = per_sample_table(N, rng)
    print(f"per-sample gradients, logistic regression, {N} samples x {D} features, ms")
    print(f"{'loss written with':>18} | {'chainrule':>9} | {'compiled':>9} | "
          f"{'torch.func':>20} | {'NumPy (batched by hand)':>24}")
    for name, text in (("sum", "(x * w).sum()"), ("dot", "x @ w")):
        print(f"{text:>18} | {ms[f'chainrule {name}']:>9.3f} | {ms[f'compiled {name}']:>9.3f} | "
              f"{torch_cell(ms.get(f'torch.func {name}'), '.3f'):>20} | "
              f"{ms[f'NumPy {name}']:>24.3f}")
    for name, text in (("sum", "(x * w).sum()"), ("dot", "x @ w")):
        for how in ("chainrule", "compiled"):
            r_np = ms[f"{how} {name}"] / ms[f"NumPy {name}"]
            line = (f"{text}, {how}: / NumPy = {r_np:.2f}x (target <= 1.5x: "
                    f"{'met' if r_np <= 1.5 else 'NOT met'})")
            if f"torch.func {name}" in ms:
                r_t = ms[f"{how} {name}"] / ms[f"torch.func {name}"]
                line += (f"; / torch.func = {r_t:.2f}x (target <= 1x: "
                         f"{'met' if r_t <= 1 else 'NOT met'})")
            print(line)
    small = per_sample_table(4, rng)
    print("the same with 4 samples (almost no array work: the cost of the calls), ms: "
          + ", ".join(f"{k} {v:.3f}" for k, v in small.items()))

    A = rng.standard_normal((HESS_N, HESS_N)) / np.sqrt(HESS_N)
    x0 = rng.standard_normal(HESS_N)
    tA, tx = cr.tensor(A), cr.tensor(x0)
    if torch is not None:
        import torch.func as tf
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


def mlp_per_sample(m, tf):
    """PyTorch's per-sample-gradients tutorial with an MLP (784-128-10, log_softmax and
    nll_loss, 64 samples) through functional_call: the function to time."""
    m.manual_seed(0)
    nn, F = m.nn, m.nn.functional
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    if m is torch:
        model = model.double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    data, targets = m.randn(64, 1, 28, 28, dtype=m.float64), m.randint(10, (64,))

    def loss(p, sample, target):
        out = tf.functional_call(model, p, (sample.unsqueeze(0),))
        return F.nll_loss(F.log_softmax(out, dim=1), target.unsqueeze(0))

    per = tf.vmap(tf.grad(loss), in_dims=(None, 0, 0))
    return lambda: per(params, data, targets)


def mlp_table():
    fns = {"chainrule": mlp_per_sample(cr, func)}
    if torch is not None:
        import torch.func as tf
        fns["torch.func"] = mlp_per_sample(torch, tf)
    ms = {k: v * 1e3 for k, v in interleaved_medians(fns, warmup=2, repeats=9).items()}
    print("\nper-sample gradients of an MLP classifier (784-128-10, nll_loss, 64 samples), ms")
    print(f"{'chainrule':>12} | {'torch.func':>20}")
    print(f"{ms['chainrule']:>12.2f} | {torch_cell(ms.get('torch.func'), '.2f'):>20}")


if __name__ == "__main__":
    main()
    mlp_table()
