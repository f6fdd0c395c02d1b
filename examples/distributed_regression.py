"""Ridge and logistic regression fitted with chainrule gradients on a Dask cluster.

The data set is row-chunked and larger than one worker's memory limit (the default run:
4,000,000 x 50 float64 = 1.5 GiB on two worker processes limited to 300 MiB each): every
chunk is made on a worker, the forward pass and the backward pass build one lazy Dask
graph, and each step computes only the gradient (50 numbers) with one shared compute.
The gradient is first checked against NumPy on a small instance.

    python examples/distributed_regression.py            # 4,000,000 x 50 on a LocalCluster
    python examples/distributed_regression.py --small    # 20,000 x 10, a few seconds
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import chainrule as cr


def make_data(n, d, chunk_rows, seed=0):
    """Row-chunked X (n, d), targets y (n,) for ridge and labels (n,) in {0, 1}; each chunk
    is generated where it is used (nothing of size n goes through the client)."""
    import dask.array as da

    rs = da.random.RandomState(seed)
    X = rs.standard_normal((n, d), chunks=(chunk_rows, d))
    w_true = np.linspace(-1.0, 1.0, d)
    z = X @ w_true
    y = z + 0.1 * rs.standard_normal(n, chunks=chunk_rows)
    labels = (z > 0).astype(np.float64)
    return X, y, labels


def ridge_loss(X, y, w, lam):
    r = X @ w - y
    return (r * r).mean() + lam * (w * w).sum()


def logistic_loss(X, labels, w, lam):
    z = X @ w
    # log(1 + exp(-z)) for label 1, log(1 + exp(z)) for label 0
    margin = (1.0 - 2.0 * labels) * z
    return margin.exp().log1p().mean() + lam * (w * w).sum()


def gradient(loss_fn, X, t, w_np, lam):
    """The loss and its gradient at w_np (NumPy), computed on the cluster in one compute."""
    import dask.array as da

    w = cr.tensor(da.from_array(w_np, chunks=-1), requires_grad=True)
    loss = loss_fn(cr.as_tensor(X), cr.as_tensor(t), w, lam)
    loss.backward()  # lazy: builds the backward graph, computes nothing
    value, g = cr.compute(loss, w.grad)
    return float(value.numpy()), g.numpy()


def check_against_numpy(loss_fn, lam=0.01):
    """chainrule's gradient on Dask equals a NumPy computation on a small instance."""
    X, y, labels = make_data(300, 4, 70, seed=1)
    Xn, yn, ln = (np.asarray(a.compute()) for a in (X, y, labels))
    w0 = np.array([0.3, -0.2, 0.1, 0.5])
    t, tn = (y, yn) if loss_fn is ridge_loss else (labels, ln)
    _, g = gradient(loss_fn, X, t, w0, lam)
    wn = cr.tensor(w0, requires_grad=True)
    loss_fn(cr.tensor(Xn), cr.tensor(tn), wn, lam).backward()
    if loss_fn is ridge_loss:  # by hand: 2/n X^T (X w - y) + 2 lam w
        by_hand = 2 / len(yn) * Xn.T @ (Xn @ w0 - yn) + 2 * lam * w0
    else:  # by hand: X^T (sigmoid(z) - labels) / n + 2 lam w
        z = Xn @ w0
        by_hand = Xn.T @ (1 / (1 + np.exp(-z)) - ln) / len(ln) + 2 * lam * w0
    err = max(np.abs(g - wn.grad.numpy()).max(), np.abs(g - by_hand).max())
    assert err < 1e-10, err
    return err


def fit(loss_fn, X, t, d, steps, lr, lam=0.01):
    w = np.zeros(d)
    history = []
    for _ in range(steps):
        value, g = gradient(loss_fn, X, t, w, lam)
        history.append(value)
        w = w - lr * g
    return w, history


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="20,000 x 10, for tests")
    parser.add_argument("--steps", type=int, default=None)
    args = parser.parse_args(argv)
    from dask.distributed import Client, LocalCluster

    n, d, chunk = (20_000, 10, 5_000) if args.small else (4_000_000, 50, 100_000)
    steps = args.steps or (5 if args.small else 3)
    with LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="300MiB",
                      processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        for name, fn in (("ridge", ridge_loss), ("logistic", logistic_loss)):
            err = check_against_numpy(fn)
            print(f"{name}: gradient on Dask vs NumPy, max abs difference {err:.1e}")
        X, y, labels = make_data(n, d, chunk)
        size = n * d * 8 / 2**30
        print(f"data: {n:,} x {d} float64 = {size:.2f} GiB in {X.numblocks[0]} chunks, "
              f"2 workers with 300 MiB each")
        for name, fn, t, lr in (("ridge", ridge_loss, y, 0.4),
                                ("logistic", logistic_loss, labels, 2.0)):
            start = time.perf_counter()
            w, history = fit(fn, X, t, d, steps, lr)
            took = time.perf_counter() - start
            print(f"{name}: loss {history[0]:.4f} -> {history[-1]:.4f} in {steps} steps "
                  f"({took / steps:.2f} s a step)")
            assert history[-1] < history[0]
        del client
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
