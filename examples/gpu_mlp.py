"""The digits MLP of ``python -m chainrule demo``, trained on a GPU with CuPy.

Every parameter and every image lives on the GPU (``device="cuda"``, CuPy arrays): the
forward pass ``tanh(x W1 + b1) W2 + b2``, the softmax cross-entropy, chainrule's backward
pass and the SGD updates all run there; only the loss of each batch (a number) and, at the
end, the test logits (for the accuracy) are copied to the host. Before training, the
gradient of the loss on a small float64 batch is computed twice, on the GPU and with the
same code and the same initial weights on NumPy, and the two must agree to 1e-10; the NumPy
gradient is also checked against backpropagation written out by hand.

    python examples/gpu_mlp.py                      # 30 epochs on the GPU
    python examples/gpu_mlp.py --small              # 10 epochs
    python examples/gpu_mlp.py --skip-if-no-gpu     # exit 0 (with a note) without CuPy/GPU

It needs CuPy and a GPU (``pip install chainrule[gpu]``) and scikit-learn for the data.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

try:
    import cupy
except ImportError:  # no CuPy: main() says so (and exits 0 with --skip-if-no-gpu)
    cupy = None

import chainrule as cr

NO_GPU = "needs CuPy and a GPU: pip install chainrule[gpu]"
SIZES = (64, 128, 10)


def gpu_problem():
    """Why the GPU cannot be used (a sentence), or None when CuPy sees a device."""
    if cupy is None:
        return "CuPy is not installed"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # CUDARuntimeError without a driver or a device
        return f"CuPy finds no GPU ({type(err).__name__}: {err})"
    return None if count > 0 else "CuPy finds no GPU"


def load_digits_split(seed=0):
    """Digits scaled to [0, 1], split 80/20 as in the demo (NumPy, float32 / int64)."""
    from chainrule.demo import load_digits_split as load

    return load(seed=seed)


def init_params(seed=0, sizes=SIZES):
    """Initial ``[W1, b1, W2, b2]`` as float64 NumPy arrays (the demo's scaling:
    standard normal / sqrt(fan_in), zero biases)."""
    rng = np.random.default_rng(seed)
    n_in, n_hidden, n_out = sizes
    return [rng.standard_normal((n_in, n_hidden)) / math.sqrt(n_in), np.zeros(n_hidden),
            rng.standard_normal((n_hidden, n_out)) / math.sqrt(n_hidden), np.zeros(n_out)]


def to_params(arrays, device, dtype):
    """Leaf tensors on ``device`` holding copies of the NumPy ``arrays``.

    The tensor is moved first and marked ``requires_grad`` after: chainrule refuses to move
    a tensor that already requires grad (the move is not recorded)."""
    return [cr.tensor(a, dtype=dtype, device=device).requires_grad_(True) for a in arrays]


def forward(x, W1, b1, W2, b2):
    """Logits of a batch ``x`` (n, 64): the demo's MLP."""
    return (x @ W1 + b1).tanh() @ W2 + b2


def loss_fn(x, y, params):
    return cr.cross_entropy(forward(x, *params), y)


def gradient(X, y, arrays, device):
    """Loss and gradients (NumPy copies) at the float64 ``arrays``, computed on ``device``."""
    params = to_params(arrays, device, cr.float64)
    x = cr.tensor(X, dtype=cr.float64, device=device)
    t = cr.tensor(y, device=device)
    loss = loss_fn(x, t, params)
    loss.backward()
    assert all(p.grad.device == params[0].device for p in params)
    return loss.item(), [p.grad.numpy() for p in params]


def gradient_by_hand(X, y, arrays):
    """The same gradients by backpropagation written out in NumPy."""
    W1, b1, W2, b2 = arrays
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    dz = p.copy()
    dz[np.arange(len(y)), y] -= 1.0
    dz /= len(y)
    da = (dz @ W2.T) * (1.0 - h * h)
    return [X.T @ da, da.sum(axis=0), h.T @ dz, dz.sum(axis=0)]


def check_gradient(X, y, device, n=16, seed=0):
    """The gradient on ``device`` equals NumPy's (same code, same weights) and NumPy's
    equals the by-hand one, on ``n`` samples in float64. Returns the two max differences."""
    Xs, ys = X[:n].astype(np.float64), y[:n]
    arrays = init_params(seed)
    _, g_dev = gradient(Xs, ys, arrays, device)
    _, g_np = gradient(Xs, ys, arrays, "cpu")
    g_hand = gradient_by_hand(Xs, ys, arrays)
    err_dev = max(float(np.abs(a - b).max()) for a, b in zip(g_dev, g_np))
    err_hand = max(float(np.abs(a - b).max()) for a, b in zip(g_np, g_hand))
    return err_dev, err_hand


def train(params, X, y, *, epochs, batch_size=32, lr=0.2, seed=0, device="cuda"):
    """Minibatch SGD on ``params`` (tensors on ``device``) over the data tensors ``X``, ``y``
    (on ``device`` too); prints and returns the mean loss of each epoch."""
    rng = np.random.default_rng(seed)
    opt = cr.optim.SGD(params, lr=lr)
    n = X.shape[0]
    history = []
    for epoch in range(epochs):
        start = time.perf_counter()
        order = cr.tensor(rng.permutation(n), device=device)  # the shuffle, on the device
        total = 0.0
        for i in range(0, n, batch_size):
            idx = order[i:i + batch_size]
            loss = loss_fn(X[idx], y[idx], params)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * idx.shape[0]
        history.append(total / n)
        print(f"epoch {epoch + 1:3d}: loss {history[-1]:.4f} "
              f"({time.perf_counter() - start:.2f} s)", flush=True)
    return history


def accuracy(params, X, y):
    """Test accuracy: the logits are computed on the device, compared on the host."""
    with cr.no_grad():
        logits = forward(X, *params)
    return float(np.mean(logits.numpy().argmax(axis=1) == y))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=None, help="default 30 (10 with --small)")
    parser.add_argument("--small", action="store_true", help="10 epochs, for tests")
    parser.add_argument("--skip-if-no-gpu", action="store_true",
                        help="exit with status 0 (after a note) when CuPy or a GPU is missing")
    # hidden: the same script on NumPy, to test its logic on a machine without a GPU
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    epochs = args.epochs if args.epochs is not None else (10 if args.small else 30)
    if epochs < 1:
        parser.error("--epochs must be at least 1")

    device = args.device
    if device == "cuda":
        problem = gpu_problem()
        if problem is not None:
            message = f"examples/gpu_mlp.py {NO_GPU} ({problem})"
            if args.skip_if_no_gpu:
                print(f"skipped: {message}")
                return 0
            print(message, file=sys.stderr)
            return 1
        index = cupy.cuda.runtime.getDevice()
        name = cupy.cuda.runtime.getDeviceProperties(index)["name"]
        print(f"device: cuda:{index} ({name.decode() if isinstance(name, bytes) else name})")
    else:
        print("device: cpu (NumPy; the hidden --device cpu run of this example)")

    X_train, X_test, y_train, y_test = load_digits_split()

    err_dev, err_hand = check_gradient(X_train, y_train, device)
    print(f"gradient on {device} vs NumPy (16 samples, float64): max abs difference "
          f"{err_dev:.1e}; NumPy vs backprop by hand: {err_hand:.1e}")
    assert err_dev < 1e-10, err_dev
    assert err_hand < 1e-10, err_hand

    params = to_params(init_params(seed=0), device, cr.float32)
    X = cr.tensor(X_train, device=device)
    y = cr.tensor(y_train, device=device)
    assert X.device == params[0].device and str(X.device).startswith(device)
    print(f"training a 64-128-10 MLP (tanh, softmax cross-entropy, SGD) on {len(X_train)} "
          f"digits for {epochs} epochs on {X.device}")
    start = time.perf_counter()
    history = train(params, X, y, epochs=epochs, device=device)
    took = time.perf_counter() - start
    acc = accuracy(params, cr.tensor(X_test, device=device), y_test)
    print(f"loss {history[0]:.4f} -> {history[-1]:.4f} in {took:.1f} s; test accuracy "
          f"{acc:.4f} ({round(acc * len(y_test))}/{len(y_test)})")
    assert history[-1] < history[0]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
