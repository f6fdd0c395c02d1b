"""Sample inputs for every primitive of the derivative table.

Each :class:`Sample` names the table op it exercises, a function built from the public API,
and its inputs. ``tests/test_table.py`` checks that every op in ``chainrule.TABLE`` has at
least one sample, that the sample really records that op, and gradchecks it in float64.
Inputs are drawn away from the points where an op is not differentiable (kinks, ties, the
boundary of its domain), so central differences are meaningful.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import chainrule as cr

RNG = np.random.default_rng(1234)


def randn(*shape):
    return RNG.standard_normal(shape)


def positive(*shape):
    return RNG.uniform(0.5, 2.0, shape)


def distinct(*shape):
    """Well-separated values (no ties), for max/min-type ops."""
    return RNG.permutation(np.arange(int(np.prod(shape)), dtype=float)).reshape(shape) * 0.37


def away_from_zero(*shape):
    x = RNG.uniform(0.3, 1.5, shape)
    return x * RNG.choice([-1.0, 1.0], shape)


@dataclass
class Sample:
    op: str
    fn: object
    inputs: list
    name: str = ""
    kwargs: dict = field(default_factory=dict)

    @property
    def id(self):
        return f"{self.op}-{self.name}" if self.name else self.op

    def tensors(self):
        return [cr.tensor(x, requires_grad=True) if isinstance(x, np.ndarray) else x
                for x in self.inputs]


S = Sample
IDX = np.array([2, 0, 2, 1])  # repeated indices: backward must add
MASK = np.array([[True, False, True, True], [False, True, False, True],
                 [True, True, False, False]])

SAMPLES = [
    # elementwise binary, with broadcasting
    S("add", lambda a, b: a + b, [randn(3, 4), randn(3, 4)]),
    S("add", lambda a, b: a + b, [randn(3, 1), randn(4)], "broadcast"),
    S("add", lambda a: 2.0 + a, [randn(3)], "scalar"),
    S("sub", lambda a, b: a - b, [randn(2, 3, 4), randn(3, 1)], "broadcast"),
    S("sub", lambda a: 1.0 - a, [randn(3)], "rsub"),
    S("mul", lambda a, b: a * b, [randn(3, 4), randn(4)], "broadcast"),
    S("mul", lambda a: a * a, [randn(5)], "same"),
    S("div", lambda a, b: a / b, [randn(3, 4), positive(3, 1)], "broadcast"),
    S("div", lambda a: 2.0 / a, [positive(3)], "rdiv"),
    S("pow", lambda a, b: a ** b, [positive(3, 4), randn(4)], "tensor"),
    S("pow", lambda a: a ** 3, [randn(3, 4)], "scalar"),
    S("pow", lambda a: 2.0 ** a, [randn(3)], "rpow"),
    S("maximum", lambda a, b: cr.maximum(a, b), [randn(3, 4), randn(4)]),
    S("clamp_tensor", lambda a, lo, hi: cr.clamp(a, lo, hi),
      [np.linspace(-2.0, 2.0, 12).reshape(3, 4) + 0.05, np.full(4, -0.93), np.full(4, 1.01)]),
    S("clamp_tensor", lambda a, lo: cr.clamp(a, min=lo), [np.linspace(-2.0, 2.0, 12) + 0.05,
                                                          np.full(12, 0.11)], "min_only"),
    # where min > max the result is max, and max gets the whole gradient there (as PyTorch)
    S("clamp_tensor", lambda a, lo, hi: cr.clamp(a, lo, hi),
      [np.linspace(-2.0, 2.0, 12).reshape(3, 4) + 0.05, np.array([-0.93, 0.6, -0.93, 0.7]),
       np.array([1.01, 0.2, 1.01, -0.45])], "min_above_max"),
    S("minimum", lambda a, b: cr.minimum(a, b), [randn(3, 4), randn(3, 1)]),
    S("where", lambda a, b: cr.where(MASK, a, b), [randn(3, 4), randn(4)]),
    # elementwise unary
    S("neg", lambda a: -a, [randn(3, 4)]),
    S("sign", lambda a: cr.sign(a) * a, [away_from_zero(3, 4)]),
    S("abs", lambda a: a.abs(), [away_from_zero(3, 4)]),
    S("exp", lambda a: a.exp(), [randn(3, 4)]),
    S("log", lambda a: a.log(), [positive(3, 4)]),
    S("log1p", lambda a: a.log1p(), [positive(3, 4)]),
    S("expm1", lambda a: a.expm1(), [randn(3, 4)]),
    S("sqrt", lambda a: a.sqrt(), [positive(3, 4)]),
    S("sin", lambda a: a.sin(), [randn(3, 4)]),
    S("cos", lambda a: a.cos(), [randn(3, 4)]),
    S("tan", lambda a: a.tan(), [RNG.uniform(-1, 1, (3, 4))]),
    S("tanh", lambda a: a.tanh(), [randn(3, 4)]),
    S("sigmoid", lambda a: a.sigmoid(), [randn(3, 4)]),
    S("relu", lambda a: a.relu(), [away_from_zero(3, 4)]),
    S("erf", lambda a: a.erf(), [randn(3, 4)]),
    S("softplus", lambda a: cr.softplus(a, beta=2.0, threshold=3.0),
      [np.array([-2.0, -0.5, 0.3, 1.2, 2.5, 4.0])]),
    S("clamp", lambda a: a.clamp(-0.5, 0.7), [np.array([-1.3, -0.2, 0.1, 0.5, 0.9, 2.0])]),
    S("clamp", lambda a: a.clamp(min=0.1), [away_from_zero(5)], "min_only"),
    S("_to_copy", lambda a: cr.to_dtype(a, cr.float64), [randn(3)]),
    S("clone", lambda a: a.clone() * 2, [randn(3)]),
    # reductions
    S("sum", lambda a: a.sum(), [randn(3, 4)], "all"),
    S("sum", lambda a: a.sum(dim=1, keepdim=True), [randn(3, 4)], "keepdim"),
    S("sum", lambda a: a.sum(dim=(0, 2)), [randn(2, 3, 4)], "dims"),
    S("mean", lambda a: a.mean(dim=-1), [randn(2, 3, 4)]),
    S("mean", lambda a: a.mean(), [randn(3, 4)], "all"),
    S("prod", lambda a: a.prod(dim=1), [randn(3, 4)]),
    S("prod", lambda a: a.prod(), [np.array([[1.5, 0.0, 2.0], [0.7, -1.2, 0.4]])], "one_zero"),
    S("prod", lambda a: a.prod(dim=0, keepdim=True),
      [np.array([[0.0, 0.0, 2.0], [0.0, -1.2, 0.4]])], "zeros"),
    S("amax", lambda a: a.amax(dim=1), [distinct(3, 4)]),
    S("amin", lambda a: a.amin(dim=(0, 1), keepdim=True), [distinct(2, 3, 4)]),
    S("amax", lambda a: a.max(), [distinct(3, 4)], "max_all"),
    S("max", lambda a: a.max(dim=1).values, [distinct(3, 4)]),
    S("max", lambda a: a.max(dim=0, keepdim=True)[0], [distinct(3, 4)], "keepdim"),
    S("min", lambda a: a.min(dim=-1).values, [distinct(2, 3, 4)]),
    S("var", lambda a: a.var(dim=1), [randn(3, 4)]),
    S("var", lambda a: a.var(unbiased=False), [randn(3, 4)], "biased"),
    S("std", lambda a: a.std(dim=0, keepdim=True), [randn(3, 4)]),
    S("logsumexp", lambda a: cr.logsumexp(a, dim=1), [randn(3, 4)]),
    S("logsumexp", lambda a: cr.logsumexp(a, dim=(0, 1), keepdim=True), [randn(3, 4)], "all"),
    S("linalg_vector_norm", lambda a: cr.linalg.vector_norm(a), [randn(3, 4)], "2"),
    S("linalg_vector_norm", lambda a: cr.linalg.vector_norm(a, 3, dim=1), [randn(3, 4)], "p3"),
    S("linalg_vector_norm", lambda a: cr.linalg.vector_norm(a, 1, dim=0, keepdim=True),
      [away_from_zero(3, 4)], "1"),
    S("linalg_vector_norm", lambda a: cr.linalg.vector_norm(a, float("inf"), dim=1),
      [distinct(3, 4)], "inf"),
    S("linalg_vector_norm", lambda a: a.norm(), [randn(5)], "norm"),
    S("softmax", lambda a: cr.softmax(a, dim=1), [randn(3, 4)]),
    S("log_softmax", lambda a: cr.log_softmax(a, dim=0), [randn(3, 4)]),
    S("cross_entropy", lambda a: cr.cross_entropy(a, np.array([0, 3, 1])), [randn(3, 4)]),
    S("cross_entropy", lambda a: cr.cross_entropy(a, np.array([1, 0, 1]), reduction="none"),
      [randn(3, 2)], "none"),
    S("cross_entropy", lambda a: cr.cross_entropy(a, np.full((2, 3), 1 / 3), reduction="sum"),
      [randn(2, 3)], "probs"),
    S("cross_entropy", lambda a, t: cr.cross_entropy(a, t), [randn(2, 3), positive(2, 3)],
      "probs_requiring_grad"),
    # matrix products and structure
    S("mm", lambda a, b: a @ b, [randn(3, 4), randn(4, 2)]),
    S("mm", lambda a: a @ a, [randn(3, 3)], "square"),
    S("matmul", lambda a, b: a @ b, [randn(2, 3, 4), randn(4, 5)], "batched_broadcast"),
    S("matmul", lambda a, b: a @ b, [randn(2, 1, 3, 4), randn(5, 4, 2)], "batch_dims"),
    S("matmul", lambda a, b: a @ b, [randn(4), randn(2, 4, 3)], "vec_left"),
    S("matmul", lambda a, b: a @ b, [randn(2, 3, 4), randn(4)], "vec_right"),
    S("matmul", lambda a, b: cr.dot(a, b), [randn(4), randn(4)], "dot"),
    S("matmul", lambda a, b: a.mv(b), [randn(3, 4), randn(4)], "mv"),
    S("matmul", lambda a, b: cr.bmm(a, b), [randn(2, 3, 4), randn(2, 4, 2)], "bmm"),
    S("mul", lambda a, b: cr.outer(a, b), [randn(3), randn(4)], "outer"),
    S("trace", lambda a: a.trace(), [randn(3, 3)]),
    S("trace", lambda a: a.trace(), [randn(3, 4)], "rect"),
    S("diagonal", lambda a: a.diagonal(), [randn(3, 4)]),
    S("diagonal", lambda a: a.diagonal(-1, 0, 2), [randn(3, 2, 4)], "offset_dims"),
    S("diagonal_scatter", lambda a, b: cr.diagonal_scatter(a, b, 1), [randn(3, 4), randn(3)]),
    S("diag", lambda a: cr.diag(a), [randn(3)]),
    S("diag", lambda a: cr.diag(a, -1), [randn(3)], "offset"),
    S("tril", lambda a: a.tril(), [randn(3, 4)]),
    S("triu", lambda a: a.triu(1), [randn(2, 3, 3)], "batched"),
    # shape
    S("reshape", lambda a: a.reshape(4, 3), [randn(3, 4)]),
    S("reshape", lambda a: a.view(-1), [randn(3, 4)], "flat"),
    S("reshape", lambda a: a.unsqueeze(1).squeeze(1).flatten(), [randn(3, 4)], "squeeze"),
    S("transpose", lambda a: a.transpose(0, 2), [randn(2, 3, 4)]),
    S("transpose", lambda a: a.t() @ a, [randn(3, 2)], "t"),
    S("transpose", lambda a: a.mT, [randn(2, 3, 4)], "mT"),
    S("permute", lambda a: a.permute(2, 0, 1), [randn(2, 3, 4)]),
    S("permute", lambda a: a.T, [randn(2, 3)], "T"),
    S("expand", lambda a: a.expand(2, 3, 4), [randn(3, 1)]),
    S("expand", lambda a: cr.broadcast_to(a, (3, 4)), [randn(4)], "broadcast_to"),
    S("cat", lambda a, b: cr.cat([a, b, a], dim=1), [randn(3, 4), randn(3, 2)]),
    S("stack", lambda a, b: cr.stack([a, b], dim=1), [randn(3, 4), randn(3, 4)]),
    # indexing
    S("slice", lambda a: a[1:, ::2], [randn(3, 4)]),
    S("slice", lambda a: a[..., 1, None], [randn(2, 3, 4)], "int_none_ellipsis"),
    S("slice", lambda a: a.split(2, dim=1)[1] * a.chunk(2, dim=1)[0], [randn(3, 4)], "split"),
    S("index", lambda a: a[IDX], [randn(3, 4)], "repeated"),
    S("index", lambda a: a[MASK], [randn(3, 4)], "mask"),
    S("index", lambda a: a[IDX, IDX[::-1]], [randn(3, 4)], "pairs"),
    S("index", lambda a: cr.take_along_dim(a, np.array([[0, 2], [1, 1], [3, 0]]), 1),
      [randn(3, 4)], "take_along_dim"),
    S("index_put", lambda a, b: cr.index_put(a, (np.array([0, 2]),), b), [randn(3, 4),
                                                                            randn(4)]),
    S("index_put", lambda a, b: cr.index_put(a, (IDX,), b, accumulate=True),
      [randn(3, 4), randn(4, 4)], "accumulate"),
    S("index_put", lambda a, b: _setitem(a, b), [randn(3, 4), randn(2)], "setitem"),
    # einsum
    S("einsum", lambda a, b: cr.einsum("ij,jk->ik", a, b), [randn(3, 4), randn(4, 2)]),
    S("einsum", lambda a: cr.einsum("ii->", a), [randn(3, 3)], "trace"),
    S("einsum", lambda a: cr.einsum("ii->i", a), [randn(3, 3)], "diag"),
    S("einsum", lambda a: cr.einsum("ij->i", a), [randn(3, 4)], "sum_away"),
    S("einsum", lambda a: cr.einsum("ij,jk->ik", a, a), [randn(3, 3)], "repeated_operand"),
    S("einsum", lambda a, b: cr.einsum("...ij,...jk", a, b), [randn(2, 3, 4), randn(4, 2)],
      "ellipsis_implicit"),
    S("einsum", lambda a, b, c: cr.einsum("i,ij,j->", a, b, c),
      [randn(3), randn(3, 4), randn(4)], "three"),
]


def _setitem(a, b):
    x = a * 1.0
    x[1, 1:3] = b
    return x


def _linalg_samples():
    from samples_decomp import SAMPLES as decomp
    from samples_elementwise import SAMPLES as elementwise
    from samples_indexing import SAMPLES as indexing
    from samples_inverse import SAMPLES as inverse
    from samples_linalg_more import SAMPLES as linalg_more
    from samples_matrix_function import SAMPLES as matrix_function
    from samples_reductions import SAMPLES as reductions
    from samples_special_more import SAMPLES as special_more

    return (decomp + inverse + linalg_more + elementwise + reductions + indexing
            + matrix_function + special_more)


SAMPLES += _linalg_samples()

# binary cross-entropy's terms (nn.functional.binary_cross_entropy): probabilities strictly
# inside (0, 1); an RNG of their own, so the samples above keep their values
_BCE_RNG = np.random.default_rng(77)
SAMPLES += [
    S("binary_cross_entropy",
      lambda x: cr.nn.functional.binary_cross_entropy(x, (x.detach() > 0.5).to(x.dtype)),
      [_BCE_RNG.uniform(0.15, 0.85, (2, 3))]),
    S("binary_cross_entropy",
      lambda x, t: cr.nn.functional.binary_cross_entropy(x, t, reduction="none"),
      [_BCE_RNG.uniform(0.15, 0.85, (2, 3)), _BCE_RNG.uniform(0.0, 1.0, (2, 3))],
      "target_requiring_grad"),
]

_RECIPROCAL_RNG = np.random.default_rng(78)
SAMPLES += [
    S("reciprocal", lambda a: a.reciprocal(),
      [_RECIPROCAL_RNG.uniform(0.4, 1.6, (3, 4)) * _RECIPROCAL_RNG.choice([-1.0, 1.0], (3, 4))]),
]
