"""Optimizers over a list of tensors: SGD (momentum, weight decay) and Adam.

They update ``p`` in place under ``no_grad`` (the data changes, the tensor stays a leaf) and
bump its version counter, as PyTorch's do.
"""

from __future__ import annotations

import numpy as np

from ._tensor import Tensor


class Optimizer:
    """Base class: holds ``params`` and offers ``zero_grad()``."""

    def __init__(self, params, defaults):
        self.params = list(params)
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")
        for i, p in enumerate(self.params):
            if not isinstance(p, Tensor) or not p.requires_grad or not p.is_leaf:
                raise ValueError(f"optimizer parameter {i} must be a leaf Tensor with "
                                 "requires_grad=True")
        self.defaults = defaults
        self.state = {}

    def zero_grad(self, set_to_none=True):
        """Clear the gradients (set them to None, or to zeros with ``set_to_none=False``)."""
        for p in self.params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad._data[...] = 0

    def _update(self, p, step):
        p._data -= step
        p._vc[0] += 1


class SGD(Optimizer):
    """Stochastic gradient descent: ``v = momentum v + (1 - dampening)(g + wd p)``,
    ``p -= lr (g + momentum v if nesterov else v)`` (PyTorch's formulation)."""

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False):
        if lr < 0:
            raise ValueError(f"SGD: invalid learning rate {lr}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: nesterov momentum requires momentum > 0 and dampening = 0")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov))

    def step(self):
        d = self.defaults
        for p in self.params:
            if p.grad is None:
                continue
            g = p.grad._data
            if d["weight_decay"]:
                g = g + d["weight_decay"] * p._data
            if d["momentum"]:
                buf = self.state.get(id(p))
                if buf is None:
                    buf = self.state[id(p)] = np.array(g, copy=True)
                else:
                    buf *= d["momentum"]
                    buf += (1 - d["dampening"]) * g
                g = g + d["momentum"] * buf if d["nesterov"] else buf
            self._update(p, d["lr"] * g)


class Adam(Optimizer):
    """Adam (Kingma and Ba, 2015, Algorithm 1) with bias correction and optional L2
    ``weight_decay`` added to the gradient."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        if lr < 0:
            raise ValueError(f"Adam: invalid learning rate {lr}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        self.t = 0

    def step(self):
        d = self.defaults
        b1, b2 = d["betas"]
        self.t += 1
        c1 = 1 - b1 ** self.t
        c2 = 1 - b2 ** self.t
        for p in self.params:
            if p.grad is None:
                continue
            g = p.grad._data
            if d["weight_decay"]:
                g = g + d["weight_decay"] * p._data
            state = self.state.get(id(p))
            if state is None:
                state = self.state[id(p)] = (np.zeros_like(p._data), np.zeros_like(p._data))
            m, v = state
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * (g * g)
            self._update(p, (d["lr"] / c1) * m / (np.sqrt(v / c2) + d["eps"]))
