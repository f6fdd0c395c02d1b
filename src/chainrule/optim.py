"""Optimizers over a list of tensors: SGD (momentum, weight decay) and Adam.

They update ``p`` in place under ``no_grad`` (the data changes, the tensor stays a leaf) and
bump its version counter, as PyTorch's do. They compute with the parameters' own backend
(NumPy, CuPy, Dask); on Dask, ``step()`` is where the work happens: the new parameters and
the optimizer's state are computed in one shared ``dask.persist`` (the gradients' graphs
with them), so the next step starts from computed chunks, not from a growing graph.
"""

from __future__ import annotations

import numpy as np

from ._tensor import Tensor
from .backend import backend_of


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
        if p._data.__class__ is np.ndarray:
            p._data -= step
        else:
            p._data = p._data - step
        p._vc[0] += 1

    def _persist(self):
        """Compute the lazy (Dask) parameters and state in one shared persist."""
        lazy = [p for p in self.params if p._data.__class__ is not np.ndarray
                and backend_of(p._data).lazy]
        if not lazy:
            return
        import dask

        keys = [id(p) for p in lazy if id(p) in self.state]
        states = [self.state[k] for k in keys]
        flat = [p._data for p in lazy] + [a for st in states for a in st]
        done = dask.persist(*flat)
        for p, d in zip(lazy, done):
            p._data = d
        rest = iter(done[len(lazy):])
        for k, st in zip(keys, states):
            self.state[k] = tuple(next(rest) for _ in st)


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
                (buf,) = self.state.get(id(p), (None,))
                if buf is None:
                    buf = backend_of(g).xp.asarray(g, copy=True)
                else:
                    buf = d["momentum"] * buf + (1 - d["dampening"]) * g
                self.state[id(p)] = (buf,)
                g = g + d["momentum"] * buf if d["nesterov"] else buf
            self._update(p, d["lr"] * g)
        self._persist()


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
            xp = backend_of(p._data).xp
            m, v = self.state.get(id(p), (0.0, 0.0))
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * (g * g)
            self.state[id(p)] = (m, v)
            self._update(p, (d["lr"] / c1) * m / (xp.sqrt(v / c2) + d["eps"]))
        self._persist()
