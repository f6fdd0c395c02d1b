"""Jacobians and Hessian-vector products.

(a) The full Jacobian of f(x) = tanh(W x), W 256x256 float64: chainrule.func.jacrev (one
    backward pass with a batch of 256 cotangents) vs torch.func.jacrev, vs
    torch.autograd.functional.jacobian(vectorize=True), vs the analytic NumPy formula
    diag(1 - tanh(Wx)^2) W. Target: at most 0.5x torch.func.jacrev's time.
(b) A Hessian-vector product (chainrule.func.hvp, forward-over-reverse) of
    f(x) = logsumexp(W2 tanh(W1 x)) for x of size 512, against one gradient of the same f.
    Target: an HVP costs at most 5x one gradient (theory: about 4x).

    .venv/bin/python bench/jacobian_hvp.py
"""

import _common  # noqa: F401  (sets one thread before NumPy loads)
import numpy as np
from _common import interleaved_medians, torch, torch_cell

import chainrule as cr
from chainrule import func

N = 256
RNG = np.random.default_rng(0)
W = RNG.standard_normal((N, N)) / np.sqrt(N)
X = RNG.standard_normal(N)


def jac_chainrule(w, x):
    return func.jacrev(lambda x: (w @ x).tanh())(x)


def jac_numpy(w, x):
    return (1 - np.tanh(w @ x) ** 2)[:, None] * w


def main():
    cw, cx = cr.tensor(W), cr.tensor(X)
    ref = jac_numpy(W, X)
    assert np.allclose(jac_chainrule(cw, cx).numpy(), ref), "chainrule Jacobian is wrong"
    fns = {"chainrule": lambda: jac_chainrule(cw, cx), "NumPy": lambda: jac_numpy(W, X)}
    if torch is not None:
        tw, tx = torch.tensor(W), torch.tensor(X)
        tf = lambda x: torch.tanh(tw @ x)  # noqa: E731
        assert np.allclose(torch.func.jacrev(tf)(tx).numpy(), ref)
        fns["torch.func.jacrev"] = lambda: torch.func.jacrev(tf)(tx)
        fns["torch functional"] = lambda: torch.autograd.functional.jacobian(
            tf, tx, vectorize=True)
    ms = {k: v * 1e3 for k, v in interleaved_medians(fns, repeats=21).items()}
    print(f"(a) Jacobian of tanh(W x), W {N}x{N} float64, median of 21, ms")
    for name in ("chainrule", "torch.func.jacrev", "torch functional", "NumPy"):
        print(f"  {name:<20} {torch_cell(ms.get(name), '.3f'):>20}")
    if torch is not None:
        ratio = ms["chainrule"] / ms["torch.func.jacrev"]
        verdict = "met" if ratio <= 0.5 else "NOT met"
        print(f"  chainrule / torch.func.jacrev = {ratio:.2f}x   (target <= 0.5x: {verdict})")

    n, h = 512, 512
    W1 = cr.tensor(RNG.standard_normal((h, n)) / np.sqrt(n))
    W2 = cr.tensor(RNG.standard_normal((h, h)) / np.sqrt(h))
    x, v = cr.tensor(RNG.standard_normal(n)), cr.tensor(RNG.standard_normal(n))
    f = lambda x: cr.logsumexp(W2 @ (W1 @ x).tanh(), 0)  # noqa: E731
    grad_f = func.grad(f)
    fns = {"gradient": lambda: grad_f(x), "HVP": lambda: func.hvp(f, (x,), (v,))}
    ms = {k: t * 1e3 for k, t in interleaved_medians(fns, repeats=21).items()}
    ratio = ms["HVP"] / ms["gradient"]
    verdict = "met" if ratio <= 5 else "NOT met"
    print(f"\n(b) logsumexp(W2 tanh(W1 x)), x of size {n}: gradient {ms['gradient']:.3f} ms, "
          f"HVP {ms['HVP']:.3f} ms")
    print(f"  HVP / gradient = {ratio:.2f}x   (target <= 5x: {verdict})")


if __name__ == "__main__":
    main()
