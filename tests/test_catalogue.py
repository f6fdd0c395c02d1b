"""A catalogue of bad and edge inputs across every op family.

Each case builds its inputs with a module ``m`` (chainrule, or torch where installed), runs
one action, and states what must happen: an exception of PyTorch's class whose message
names the op (``Raises``), or values and gradients derived by hand (``Value``; the
derivation is in the comment). After every case that does not update in place on purpose,
the user's arrays, their ``.grad`` and grad mode are checked to be unchanged.
"""

from __future__ import annotations

import copy
import math
import pickle
from dataclasses import dataclass, field

import numpy as np
import pytest

import chainrule as cr

NAN, INF = math.nan, math.inf


@dataclass
class Raises:
    exc: type
    text: str = ""          # a substring of chainrule's message (the op's name, the shapes)


@dataclass
class Value:
    check: object           # check(result, inputs) -> list of (got, want)


@dataclass
class Case:
    id: str
    make: object            # make(m) -> list of inputs
    act: object             # act(m, *inputs) -> result
    expect: object
    mutates: bool = False   # the action updates its inputs in place on purpose
    torch_differs: str = "" # a documented departure from PyTorch (skipped in the torch run)
    tags: set = field(default_factory=set)


def t(m, values, grad=False, dtype="float64"):
    return m.tensor(np.asarray(values, dtype=float), dtype=getattr(m, dtype),
                    requires_grad=grad)


def arr(x):
    if x is None:
        return None
    if hasattr(x, "detach"):
        x = x.detach()
    return np.asarray(x.numpy() if hasattr(x, "numpy") else x)


def grads_of(*xs):
    return [arr(x.grad) for x in xs]


def backward_grads(fn):
    """Value check: run backward of sum(fn(...)) and compare the inputs' grads."""
    def act(m, *xs):
        y = fn(m, *xs)
        y.sum().backward()
        return grads_of(*[x for x in xs if getattr(x, "requires_grad", False)])
    return act


CASES: list[Case] = []


def case(*args, **kwargs):
    CASES.append(Case(*args, **kwargs))


M23 = np.arange(1.0, 7.0).reshape(2, 3)
M33 = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])

# --- elementwise: broadcasting errors name the op and both shapes ----------------------------
for name, fn in [("add", lambda m, a, b: a + b), ("sub", lambda m, a, b: a - b),
                 ("mul", lambda m, a, b: a * b), ("div", lambda m, a, b: a / b),
                 ("pow", lambda m, a, b: a ** b), ("maximum", lambda m, a, b: m.maximum(a, b)),
                 ("minimum", lambda m, a, b: m.minimum(a, b)),
                 ("where", lambda m, a, b: m.where(a > 0, a, b)),
                 ("atan2?add", lambda m, a, b: m.add(a, b))]:
    case(f"broadcast-{name}", lambda m: [t(m, M23, True), t(m, [1.0, 2.0], True)], fn,
         Raises(RuntimeError, "(2, 3)"))

# --- elementwise values and gradients at kinks and NaN ------------------------------------------
# relu'(x) = [x > 0], with NaN passing the gradient (threshold_backward: not x <= 0)
case("relu-kink-nan", lambda m: [t(m, [NAN, 0.0, 1.0, -1.0], True)],
     backward_grads(lambda m, x: m.relu(x)), Value(lambda r, xs: [(r[0], [1, 0, 1, 0])]))
# abs'(x) = sign(x), 0 at 0 and at NaN
case("abs-kink-nan", lambda m: [t(m, [NAN, 0.0, -2.0, 3.0], True)],
     backward_grads(lambda m, x: m.abs(x)), Value(lambda r, xs: [(r[0], [0, 0, -1, 1])]))
# maximum: the larger side gets g, ties g/2 each, NaN passes g to both sides
case("maximum-ties-nan", lambda m: [t(m, [NAN, 1.0, 2.0], True), t(m, [0.0, 1.0, 3.0], True)],
     backward_grads(lambda m, a, b: m.maximum(a, b)),
     Value(lambda r, xs: [(r[0], [1, 0.5, 0]), (r[1], [1, 0.5, 1])]))
case("minimum-ties", lambda m: [t(m, [1.0, 2.0], True), t(m, [1.0, 3.0], True)],
     backward_grads(lambda m, a, b: m.minimum(a, b)),
     Value(lambda r, xs: [(r[0], [0.5, 1]), (r[1], [0.5, 0])]))
# clamp: x at a bound passes the gradient, number and tensor bounds alike
case("clamp-number-ties", lambda m: [t(m, [1.0, 2.0, 3.0, 4.0], True)],
     backward_grads(lambda m, x: m.clamp(x, 2.0, 3.0)),
     Value(lambda r, xs: [(r[0], [0, 1, 1, 0])]))
case("clamp-tensor-ties",
     lambda m: [t(m, [1.0, 2.0, 3.0, 4.0], True), t(m, [2.0] * 4, True), t(m, [3.0] * 4, True)],
     backward_grads(lambda m, x, lo, hi: m.clamp(x, lo, hi)),
     Value(lambda r, xs: [(r[0], [0, 1, 1, 0]), (r[1], [1, 0, 0, 0]), (r[2], [0, 0, 0, 1])]))
case("sqrt-at-zero", lambda m: [t(m, [0.0, 4.0], True)],
     backward_grads(lambda m, x: m.sqrt(x)), Value(lambda r, xs: [(r[0], [INF, 0.25])]))
case("log-of-negative", lambda m: [t(m, [-1.0, 1.0])], lambda m, x: m.log(x),
     Value(lambda r, xs: [(r, [NAN, 0.0])]))
case("exp-overflow", lambda m: [t(m, [1000.0])], lambda m, x: m.exp(x),
     Value(lambda r, xs: [(r, [INF])]))
case("div-by-zero", lambda m: [t(m, [1.0, -1.0, 0.0])], lambda m, x: x / 0.0,
     Value(lambda r, xs: [(r, [INF, -INF, NAN])]))
# pow: d/dx x^0 = 0 even at x = 0
case("pow-zero-exponent", lambda m: [t(m, [0.0, 2.0], True)],
     backward_grads(lambda m, x: x ** 0.0), Value(lambda r, xs: [(r[0], [0.0, 0.0])]))
case("sigmoid-extremes", lambda m: [t(m, [-800.0, 800.0], True)],
     backward_grads(lambda m, x: m.sigmoid(x)), Value(lambda r, xs: [(r[0], [0.0, 0.0])]))
case("int-tensor-requires-grad", lambda m: [], lambda m: m.tensor([1, 2], requires_grad=True),
     Raises(RuntimeError, "floating point"))

# --- reductions over dims ---------------------------------------------------------------
REDUCTIONS = {
    "sum": lambda m, x, d: x.sum(d), "mean": lambda m, x, d: x.mean(d),
    "prod": lambda m, x, d: x.prod(d), "amax": lambda m, x, d: m.amax(x, d),
    "amin": lambda m, x, d: m.amin(x, d), "max": lambda m, x, d: x.max(d)[0],
    "min": lambda m, x, d: x.min(d)[0], "logsumexp": lambda m, x, d: m.logsumexp(x, d),
    "softmax": lambda m, x, d: m.softmax(x, d), "log_softmax": lambda m, x, d: m.log_softmax(x, d),
    "argmax": lambda m, x, d: x.argmax(d), "std": lambda m, x, d: x.std(d),
}
for name, fn in REDUCTIONS.items():
    # out of range: a (2, 3) tensor has dims -2..1
    case(f"{name}-dim-out-of-range", lambda m: [t(m, M23, True)],
         lambda m, x, fn=fn: fn(m, x, 2), Raises(IndexError, "Dimension out of range"))
    case(f"{name}-negative-dim-out-of-range", lambda m: [t(m, M23, True)],
         lambda m, x, fn=fn: fn(m, x, -3), Raises(IndexError, "[-2, 1], but got -3"))
    if name in ("std", "argmax"):
        continue
    # a 0-d tensor takes dim 0 and -1 as if it had one dim; its value is x itself (softmax
    # of one entry: 1, log_softmax: 0), and the gradient is the derivative at one entry
    want = {"softmax": 1.0, "log_softmax": 0.0}.get(name, 2.0)
    for d in (0, -1):
        case(f"{name}-0d-dim{d}", lambda m: [t(m, 2.0, True)],
             lambda m, x, fn=fn, d=d: fn(m, x, d),
             Value(lambda r, xs, want=want: [(np.shape(arr(r)), ()), (r, want)]))
case("sum-repeated-dims", lambda m: [t(m, M23, True)], lambda m, x: x.sum((0, 0)),
     Raises(RuntimeError, "appears multiple times"))
case("sum-dim-tuple-negative", lambda m: [t(m, M23, True)],
     backward_grads(lambda m, x: x.sum((-1, 0))), Value(lambda r, xs: [(r[0], np.ones((2, 3)))]))
case("logsumexp-0d-keepdim", lambda m: [t(m, 2.0, True)],
     lambda m, x: m.logsumexp(x, 0, keepdim=True),
     Value(lambda r, xs: [(np.shape(arr(r)), ())]))
case("var-no-dof", lambda m: [t(m, [3.0], True)], lambda m, x: x.var(),
     Value(lambda r, xs: [(r, NAN)]))
case("std-no-dof-grad", lambda m: [t(m, [3.0], True)], backward_grads(lambda m, x: x.std()),
     Value(lambda r, xs: [(r[0], [NAN])]))
case("var-unbiased-positional", lambda m: [t(m, [1.0, 2.0, 3.0, 4.0])],
     lambda m, x: x.var(False), Value(lambda r, xs: [(r, 1.25)]))  # mean of squares about 2.5
case("mean-empty", lambda m: [t(m, np.zeros(0))], lambda m, x: x.mean(),
     Value(lambda r, xs: [(r, NAN)]))
case("sum-empty-grad", lambda m: [t(m, np.zeros((0, 3)), True)],
     backward_grads(lambda m, x: x.sum(0)), Value(lambda r, xs: [(r[0], np.zeros((0, 3)))]))
case("softmax-empty", lambda m: [t(m, np.zeros((0, 3)))], lambda m, x: m.softmax(x, 1),
     Value(lambda r, xs: [(np.shape(arr(r)), (0, 3))]))
# amax with ties shares the gradient evenly: [3, 3, 1] -> [1/2, 1/2, 0]
case("amax-ties", lambda m: [t(m, [3.0, 3.0, 1.0], True)], backward_grads(lambda m, x: m.amax(x)),
     Value(lambda r, xs: [(r[0], [0.5, 0.5, 0.0])]))
case("max-dim-ties-index", lambda m: [t(m, [[3.0, 3.0, 1.0]], True)],
     backward_grads(lambda m, x: x.max(1)[0]), Value(lambda r, xs: [(r[0], [[1, 0, 0]])]))
# ||x||_p for p < 1 has an infinite derivative at zero entries: PyTorch gives 0 there
case("vector-norm-p-half-at-zero", lambda m: [t(m, [0.0, 1.0, 4.0], True)],
     backward_grads(lambda m, x: m.linalg.vector_norm(x, 0.5)),
     Value(lambda r, xs: [(r[0][0], 0.0)]))
case("vector-norm-at-zero", lambda m: [t(m, [0.0, 0.0], True)],
     backward_grads(lambda m, x: m.linalg.vector_norm(x)), Value(lambda r, xs: [(r[0], [0, 0])]))

# --- matmul family ----------------------------------------------------------------------------
for name, fn, shapes in [
        ("mm", lambda m, a, b: m.mm(a, b), ((2, 3), (2, 3))),
        ("matmul", lambda m, a, b: a @ b, ((2, 3), (4,))),
        ("matmul-batch", lambda m, a, b: a @ b, ((2, 2, 3), (3, 3, 2))),
        ("mv", lambda m, a, b: m.mv(a, b), ((2, 3), (2,))),
        ("bmm", lambda m, a, b: m.bmm(a, b), ((2, 2, 3), (2, 4, 2))),
        ("dot", lambda m, a, b: m.dot(a, b), ((3,), (4,))),
        ("inner", lambda m, a, b: m.inner(a, b), ((3,), (4,)))]:
    case(f"{name}-shape-mismatch",
         lambda m, shapes=shapes: [t(m, np.ones(shapes[0]), True), t(m, np.ones(shapes[1]), True)],
         fn, Raises(RuntimeError, str(shapes[0]) if name != "dot" else "(3,)"))
case("matmul-0d", lambda m: [t(m, 2.0, True), t(m, [1.0, 2.0], True)],
     lambda m, a, b: m.matmul(a, b), Raises(RuntimeError, "matmul"))
# d/dA sum(A @ B) = ones @ B^T, d/dB = A^T @ ones
case("mm-grad", lambda m: [t(m, M23, True), t(m, np.ones((3, 2)), True)],
     backward_grads(lambda m, a, b: a @ b),
     Value(lambda r, xs: [(r[0], np.full((2, 3), 2.0)), (r[1], M23.T @ np.ones((2, 2)))]))
case("matmul-1d-1d-grad", lambda m: [t(m, [1.0, 2.0], True), t(m, [3.0, 4.0], True)],
     backward_grads(lambda m, a, b: a @ b), Value(lambda r, xs: [(r[0], [3, 4]), (r[1], [1, 2])]))
case("outer-grad", lambda m: [t(m, [1.0, 2.0], True), t(m, [3.0, 4.0, 5.0], True)],
     backward_grads(lambda m, a, b: m.outer(a, b)),
     Value(lambda r, xs: [(r[0], [12, 12]), (r[1], [3, 3, 3])]))
case("trace-nonsquare-grad", lambda m: [t(m, M23, True)], backward_grads(lambda m, x: m.trace(x)),
     Value(lambda r, xs: [(r[0], np.eye(2, 3))]))
case("tril-1d", lambda m: [t(m, [1.0, 2.0])], lambda m, x: m.tril(x),
     Raises(RuntimeError, "tril"))
case("triu-1d", lambda m: [t(m, [1.0, 2.0])], lambda m, x: m.triu(x),
     Raises(RuntimeError, "triu"))

# --- einsum ------------------------------------------------------------------------------
for name, eq, shapes, exc in [
        ("size-mismatch", "ij,jk->ik", ((2, 3), (4, 2)), RuntimeError),
        ("too-few-operands", "ij,jk->ik", ((2, 3),), (RuntimeError, ValueError)),
        ("bad-letter-count", "ijk->i", ((2, 3),), (RuntimeError, ValueError)),
        ("unknown-output", "ij->k", ((2, 3),), (RuntimeError, ValueError))]:
    case(f"einsum-{name}", lambda m, shapes=shapes: [t(m, np.ones(s), True) for s in shapes],
         lambda m, *xs, eq=eq: m.einsum(eq, *xs), Raises(exc, "einsum"))
# d/dA einsum("ij,ij->", A, B) = B
case("einsum-grad", lambda m: [t(m, M23, True), t(m, M23 + 1, True)],
     backward_grads(lambda m, a, b: m.einsum("ij,ij->", a, b)),
     Value(lambda r, xs: [(r[0], M23 + 1), (r[1], M23)]))
case("einsum-trace-grad", lambda m: [t(m, M33, True)],
     backward_grads(lambda m, a: m.einsum("ii->", a)), Value(lambda r, xs: [(r[0], np.eye(3))]))

# --- shape ops: dims wrap as in PyTorch ----------------------------------------------------
SHAPE_DIMS = {
    "cat": (lambda m, x, d: m.cat([x, x], d), 2), "stack": (lambda m, x, d: m.stack([x, x], d), 3),
    "squeeze": (lambda m, x, d: x.squeeze(d), 2),
    "unsqueeze": (lambda m, x, d: x.unsqueeze(d), 3),
    "movedim": (lambda m, x, d: m.movedim(x, d, 0), 2),
    "flatten": (lambda m, x, d: x.flatten(d), 2),
    "transpose": (lambda m, x, d: x.transpose(d, 0), 2),
    "unbind": (lambda m, x, d: x.unbind(d), 2), "chunk": (lambda m, x, d: x.chunk(2, d), 2),
    "split": (lambda m, x, d: x.split(1, d), 2),
}
for name, (fn, n) in SHAPE_DIMS.items():
    # a (2, 3) tensor has n valid dims (n = 3 where the op adds one): -n..n-1
    case(f"{name}-dim-out-of-range", lambda m: [t(m, M23, True)],
         lambda m, x, fn=fn, n=n: fn(m, x, n),
         Raises(IndexError, f"Dimension out of range (expected to be in range of [{-n}, {n - 1}]"
                f", but got {n})"))
    case(f"{name}-negative-dim", lambda m: [t(m, M23, True)],
         lambda m, x, fn=fn, n=n: fn(m, x, -n - 1), Raises(IndexError, "Dimension out of range"))
case("permute-not-a-permutation", lambda m: [t(m, M23, True)], lambda m, x: x.permute(0, 0),
     Raises(RuntimeError, "permute"))
case("permute-wrong-length", lambda m: [t(m, M23, True)], lambda m, x: x.permute(0, 1, 2),
     Raises(RuntimeError, "permute"))
case("reshape-bad-size", lambda m: [t(m, M23, True)], lambda m, x: x.reshape(4, 2),
     Raises(RuntimeError, "is invalid for input of size 6"))
case("view-needs-copy", lambda m: [t(m, M23)], lambda m, x: x.t().view(6),
     Raises(RuntimeError, "view size is not compatible with input tensor's size and stride"))
case("expand-bad", lambda m: [t(m, [1.0, 2.0])], lambda m, x: x.expand(3, 3),
     Raises(RuntimeError, "expand"))
case("chunk-zero", lambda m: [t(m, M23)], lambda m, x: x.chunk(0),
     Raises(RuntimeError, "chunk"))
case("unbind-0d", lambda m: [t(m, 1.0)], lambda m, x: x.unbind(0),
     Raises(IndexError, "unbind"))
case("cat-0d", lambda m: [t(m, 1.0)], lambda m, x: m.cat([x, x]), Raises(RuntimeError, "cat"))
case("cat-mismatch", lambda m: [t(m, M23), t(m, np.ones((2, 2)))],
     lambda m, a, b: m.cat([a, b], 0), Raises(RuntimeError, "cat"))
case("stack-mismatch", lambda m: [t(m, M23), t(m, np.ones((2, 2)))],
     lambda m, a, b: m.stack([a, b]), Raises(RuntimeError, "stack"))
case("cat-empty-1d-skipped", lambda m: [t(m, np.zeros(0), True), t(m, M23, True)],
     lambda m, e, x: m.cat([e, x]), Value(lambda r, xs: [(r, M23)]))
case("flatten-0d", lambda m: [t(m, 5.0)], lambda m, x: x.flatten(),
     Value(lambda r, xs: [(np.shape(arr(r)), (1,))]))
case("flatten-empty", lambda m: [t(m, np.zeros((2, 0, 3)))], lambda m, x: x.flatten(1),
     Value(lambda r, xs: [(np.shape(arr(r)), (2, 0))]))
case("squeeze-non-one-dim", lambda m: [t(m, M23)], lambda m, x: x.squeeze(0),
     Value(lambda r, xs: [(np.shape(arr(r)), (2, 3))]))
case("split-sizes-wrong-sum", lambda m: [t(m, M23)], lambda m, x: x.split([1, 1], 1),
     Raises(RuntimeError, "split"))
# the pieces of split are views: the gradient of each lands in its own slice
case("split-grad", lambda m: [t(m, M23, True)],
     lambda m, x: (lambda a, b: ((a * 2).sum() + (b * 3).sum()).backward())(*x.split([1, 2], 1))
     or grads_of(x), Value(lambda r, xs: [(r[0], [[2, 3, 3], [2, 3, 3]])]))

# --- indexing ----------------------------------------------------------------------------------
case("index-out-of-range", lambda m: [t(m, M23, True)], lambda m, x: x[2],
     Raises(IndexError, "(2, 3)"))
case("index-negative-out-of-range", lambda m: [t(m, M23, True)], lambda m, x: x[:, -4],
     Raises(IndexError, "(2, 3)"))
case("index-empty-list", lambda m: [t(m, M23, True)], backward_grads(lambda m, x: x[[]]),
     Value(lambda r, xs: [(r[0], np.zeros((2, 3)))]))
case("index-mask-wrong-shape", lambda m: [t(m, M23, True)],
     lambda m, x: x[m.tensor([True, False, True])], Raises(IndexError, ""))
case("index-too-many", lambda m: [t(m, [1.0, 2.0], True)], lambda m, x: x[0, 0],
     Raises(IndexError, ""))
# repeated integer indices add up: x[[0, 0, 1]].sum() -> [2, 1]
case("index-repeated-grad", lambda m: [t(m, [5.0, 6.0], True)],
     backward_grads(lambda m, x: x[[0, 0, 1]]), Value(lambda r, xs: [(r[0], [2, 1])]))
case("index-mask-grad", lambda m: [t(m, [1.0, -2.0, 3.0], True)],
     backward_grads(lambda m, x: x[x > 0] * 2), Value(lambda r, xs: [(r[0], [2, 0, 2])]))
case("take-along-dim-grad", lambda m: [t(m, M23, True)],
     backward_grads(lambda m, x: m.take_along_dim(x, m.tensor([[2], [0]]), 1)),
     Value(lambda r, xs: [(r[0], [[0, 0, 1], [1, 0, 0]])]))

# --- linalg on singular, non-square, non-SPD and empty inputs --------------------------------
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
for name, fn, data, exc in [
        ("inv-singular", lambda m, a: m.linalg.inv(a), SINGULAR, RuntimeError),
        ("inv-nonsquare", lambda m, a: m.linalg.inv(a), M23, RuntimeError),
        ("det-nonsquare", lambda m, a: m.linalg.det(a), M23, RuntimeError),
        ("cholesky-not-spd", lambda m, a: m.linalg.cholesky(a), -M33, RuntimeError),
        ("cholesky-nonsquare", lambda m, a: m.linalg.cholesky(a), M23, RuntimeError),
        ("solve-singular", lambda m, a: m.linalg.solve(a, a), SINGULAR, RuntimeError),
        ("solve-mismatch", lambda m, a: m.linalg.solve(a, a[:, :1].t()), M33, RuntimeError),
        ("eigh-nonsquare", lambda m, a: m.linalg.eigh(a), M23, RuntimeError),
        ("slogdet-nonsquare", lambda m, a: m.linalg.slogdet(a), M23, RuntimeError),
        ("qr-1d", lambda m, a: m.linalg.qr(a), np.ones(3), RuntimeError),
        ("svd-1d", lambda m, a: m.linalg.svd(a), np.ones(3), RuntimeError)]:
    case(f"linalg-{name}", lambda m, data=data: [t(m, data, True)], fn,
         Raises(exc, name.split("-")[0]))
case("det-singular-grad", lambda m: [t(m, SINGULAR, True)],
     backward_grads(lambda m, a: m.linalg.det(a)),
     # the cofactor matrix [[d, -c], [-b, a]] of [[a, b], [c, d]]
     Value(lambda r, xs: [(r[0], [[4.0, -2.0], [-2.0, 1.0]])]),
     torch_differs="torch returns 0 at an exactly singular matrix; chainrule the cofactor")
case("slogdet-singular", lambda m: [t(m, SINGULAR)], lambda m, a: m.linalg.slogdet(a)[1],
     Value(lambda r, xs: [(r, -INF)]))
for name, fn in [("det", lambda m, a: m.linalg.det(a)),
                 ("cholesky", lambda m, a: m.linalg.cholesky(a)),
                 ("qr", lambda m, a: m.linalg.qr(a)[1]), ("inv", lambda m, a: m.linalg.inv(a))]:
    case(f"linalg-{name}-0x0-grad", lambda m: [t(m, np.zeros((0, 0)), True)],
         backward_grads(fn), Value(lambda r, xs: [(np.shape(r[0]), (0, 0))]))
# d/dA logdet(A) = A^-T
case("logdet-grad", lambda m: [t(m, M33, True)], backward_grads(lambda m, a: m.logdet(a)
                                                                 if hasattr(m, "logdet")
                                                                 else m.linalg.slogdet(a)[1]),
     Value(lambda r, xs: [(r[0], np.linalg.inv(M33).T)]))

# --- in-place updates and views -----------------------------------------------------------------
case("inplace-leaf", lambda m: [t(m, [1.0, 2.0], True)], lambda m, x: x.mul_(2),
     Raises(RuntimeError, "a leaf Variable that requires grad is being used in an in-place"))
case("inplace-view-of-leaf", lambda m: [t(m, M23, True)], lambda m, x: x[0].add_(1),
     Raises(RuntimeError, "a view of a leaf Variable that requires grad"))
case("setitem-leaf", lambda m: [t(m, [1.0, 2.0], True)],
     lambda m, x: x.__setitem__(0, 5.0), Raises(RuntimeError, "leaf Variable"))
case("zero-leaf", lambda m: [t(m, [1.0, 2.0], True)], lambda m, x: x.zero_(),
     Raises(RuntimeError, "leaf Variable"))


def _saved_then_modified(m, x):
    y = x * 1
    z = y.sin()                        # sin saves y
    y.add_(1)
    z.sum().backward()


case("inplace-saved-input", lambda m: [t(m, [1.0, 2.0], True)], _saved_then_modified,
     Raises(RuntimeError, "modified by an inplace operation"))


def _saved_output_then_modified(m, x):
    y = x.exp()                        # exp saves its output
    y[0].mul_(2)
    y.sum().backward()


case("inplace-saved-output-through-view", lambda m: [t(m, [1.0, 2.0], True)],
     _saved_output_then_modified, Raises(RuntimeError, "modified by an inplace operation"))


def _copy_into_buffer(m, y, w):
    buf = m.zeros(2, 3, dtype=m.float64)
    buf[0].copy_(y * 2)
    (buf * w).sum().backward()
    return y.grad


# buf[0] = 2y; loss = sum(buf * w) => dloss/dy = 2 w[0]
case("copy-into-buffer-view", lambda m: [t(m, [1.0, 2.0, 3.0], True), t(m, M23)],
     _copy_into_buffer, Value(lambda r, xs: [(r, 2 * M23[0])]))


def _mul_row(m, x):
    y = x * 1
    y[0].mul_(3)
    (y * y).sum().backward()
    return x.grad


# row 0: 2 (3x) 3 = 18x; row 1: 2x
case("mul-row-of-nonleaf", lambda m: [t(m, M23, True)], _mul_row,
     Value(lambda r, xs: [(r, np.vstack([18 * M23[0], 2 * M23[1]]))]))


def _col_add(m, x):
    y = x * 2
    y[:, 0] += 1
    (y * y).sum().backward()
    return x.grad


# column 0: 2 (2x + 1) 2; other columns 8x
case("add-to-column", lambda m: [t(m, M23, True)], _col_add,
     Value(lambda r, xs: [(r, np.where(np.arange(3) == 0, 4 * (2 * M23 + 1), 8 * M23))]))


def _diag_zero(m, x):
    y = x * 1
    y.diagonal().zero_()
    (y * y).sum().backward()
    return x.grad


case("diagonal-zero", lambda m: [t(m, M33, True)], _diag_zero,
     Value(lambda r, xs: [(r, 2 * M33 * (1 - np.eye(3)))]))


def _view_before_update(m, x):
    y = x * 1
    v = y[1:]
    y.mul_(2)
    (v * v).sum().backward()
    return x.grad


# v follows y's new history: sum((2 x[1:])^2) => 8 x[1:]
case("view-before-base-update", lambda m: [t(m, [1.0, 2.0, 3.0], True)], _view_before_update,
     Value(lambda r, xs: [(r, [0, 16, 24])]))


def _reshape_copy(m, a):
    b = a * 1
    r = b.t().reshape(-1)
    b.mul_(10)
    (r * r).sum().backward()
    return a.grad


case("reshape-copy-independent", lambda m: [t(m, M23, True)], _reshape_copy,
     Value(lambda r, xs: [(r, 2 * M23)]))


def _retain_then_update(m, x):
    y = x * 2
    y.retain_grad()
    y.mul_(3)
    y.sum().backward()
    return [y.grad, x.grad]


case("retain-grad-then-inplace", lambda m: [t(m, [1.0, 2.0], True)], _retain_then_update,
     Value(lambda r, xs: [(r[0], [1, 1]), (r[1], [6, 6])]))


def _expanded_inplace(m, x):
    e = (x * 1).expand(2, 2)
    e.mul_(2)


case("inplace-on-expanded", lambda m: [t(m, [1.0, 2.0], True)], _expanded_inplace,
     Raises(RuntimeError, "refers to a single memory location"))


def _no_grad_view(m, x):
    y = x * 1
    with m.no_grad():
        v = y[0]
    v.mul_(2)


case("inplace-no-grad-view", lambda m: [t(m, [1.0, 2.0], True)], _no_grad_view,
     Raises(RuntimeError, "A view was created in no_grad mode"))


def _inplace_under_no_grad(m, x):
    with m.no_grad():
        x.mul_(2)
    return x


case("inplace-leaf-under-no-grad", lambda m: [t(m, [1.0, 2.0], True)], _inplace_under_no_grad,
     Value(lambda r, xs: [(r, [2, 4])]), mutates=True)
case("contiguous-transposed", lambda m: [t(m, M23)],
     lambda m, x: [x.t().is_contiguous(), x.t().contiguous().is_contiguous()],
     Value(lambda r, xs: [(r, [False, True])]))
case("inplace-int-into-float-ok", lambda m: [t(m, [1.5, 2.5])], lambda m, x: x.add_(1),
     Value(lambda r, xs: [(r, [2.5, 3.5])]), mutates=True)
case("inplace-float-into-int", lambda m: [m.tensor([1, 2])], lambda m, x: x.add_(1.5),
     Raises(RuntimeError, ""))
case("inplace-broadcast-grows", lambda m: [t(m, [1.0, 2.0])],
     lambda m, x: x.add_(m.ones(2, 2, dtype=m.float64)), Raises(RuntimeError, ""))

# --- custom Functions ---------------------------------------------------------------------------


def _function(m, backward):
    class F(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return backward(g)

    return F


case("function-too-many-grads", lambda m: [t(m, [1.0, 2.0], True)],
     lambda m, x: _function(m, lambda g: (g, g)).apply(x).sum().backward(),
     Raises(RuntimeError, "F.backward"))
case("function-wrong-shape", lambda m: [t(m, [1.0, 2.0], True)],
     lambda m, x: _function(m, lambda g: g[:1]).apply(x).sum().backward(),
     Raises(RuntimeError, "shape"))
case("function-non-tensor-output", lambda m: [t(m, [1.0, 2.0], True)],
     lambda m, x: type("G", (m.autograd.Function,), {
         "forward": staticmethod(lambda ctx, x: [1, 2]),
         "backward": staticmethod(lambda ctx, g: g)}).apply(x).sum(),
     Raises((TypeError, AttributeError), ""))
case("function-right", lambda m: [t(m, [1.0, 2.0], True)],
     lambda m, x: (_function(m, lambda g: g * 2).apply(x).sum().backward(), x.grad)[1],
     Value(lambda r, xs: [(r, [2, 2])]), mutates=True)

# --- hooks, .grad, autograd.grad -----------------------------------------------------------------


def _hook_case(result):
    def act(m, x):
        x.register_hook(result)
        (x * 2).sum().backward()
    return act


case("hook-changes-size", lambda m: [t(m, [1.0, 2.0], True)], _hook_case(lambda g: g[:1]),
     Raises(RuntimeError, "hook"))
case("nonleaf-hook-changes-size", lambda m: [t(m, [1.0, 2.0], True)],
     lambda m, x: (lambda y: (y.register_hook(lambda g: g.sum()), y.sum().backward()))(x * 1),
     Raises(RuntimeError, "hook"))
case("grad-assign-wrong-shape", lambda m: [t(m, [1.0, 2.0], True)],
     lambda m, x: setattr(x, "grad", t(m, [1.0])), Raises(RuntimeError, "size"))
case("grad-assign-wrong-dtype", lambda m: [t(m, [1.0, 2.0], True)],
     lambda m, x: setattr(x, "grad", t(m, [1.0, 2.0], dtype="float32")),
     Raises(RuntimeError, "dtype"))
case("grad-assign-array", lambda m: [t(m, [1.0, 2.0], True)],
     lambda m, x: setattr(x, "grad", np.ones(2)), Raises(TypeError, "Tensor or None"))
case("autograd-grad-length-mismatch", lambda m: [t(m, [1.0, 2.0], True)],
     lambda m, x: m.autograd.grad([x.sum(), x.sum()], [x], grad_outputs=[t(m, 1.0)]),
     Raises(RuntimeError, "got 2 tensors and 1 gradients"))
case("backward-nonscalar", lambda m: [t(m, [1.0, 2.0], True)], lambda m, x: (x * 2).backward(),
     Raises(RuntimeError, "grad can be implicitly created only for scalar outputs"))
case("backward-wrong-gradient-shape", lambda m: [t(m, [1.0, 2.0], True)],
     lambda m, x: (x * 2).backward(t(m, [1.0, 2.0, 3.0])),
     Raises(RuntimeError, "Mismatch in shape"))
case("grad-of-unused", lambda m: [t(m, [1.0, 2.0], True), t(m, [1.0], True)],
     lambda m, x, u: m.autograd.grad(x.sum(), [x, u]), Raises(RuntimeError, "not have been used"))
case("grad-no-requires", lambda m: [t(m, [1.0, 2.0])], lambda m, x: m.autograd.grad(x.sum(), x),
     Raises(RuntimeError, "does not require grad"))
case("backward-twice", lambda m: [t(m, [1.0, 2.0], True)],
     lambda m, x: (lambda y: (y.backward(), y.backward()))((x.sin()).sum()),
     Raises(RuntimeError, "retain_graph=True"), mutates=True)
case("grad-fn-call-wrong-shape", lambda m: [t(m, [1.0, 2.0], True)],
     lambda m, x: x.sin().grad_fn(t(m, [1.0, 2.0, 3.0])), Raises(RuntimeError, ""))

# --- copies and pickling ------------------------------------------------------------------------
case("deepcopy-nonleaf", lambda m: [t(m, [1.0, 2.0], True)], lambda m, x: copy.deepcopy(x * 2),
     Raises(RuntimeError, "Only Tensors created explicitly by the user"))
case("deepcopy-leaf", lambda m: [t(m, [1.0, 2.0], True)],
     lambda m, x: (lambda d: [d.requires_grad, d.is_leaf, arr(d)])(copy.deepcopy(x)),
     Value(lambda r, xs: [(r[:2], [True, True]), (r[2], [1.0, 2.0])]))


def _copy_grad_isolated(m, x):
    y = (x * 2).sum()
    c = copy.copy(x)
    (c * 3).sum().backward()
    y.backward()
    return [c.grad, x.grad]


case("copy-leaf-own-grad", lambda m: [t(m, [1.0, 2.0], True)], _copy_grad_isolated,
     Value(lambda r, xs: [(r[0], [3, 3]), (r[1], [2, 2])]), mutates=True)
case("pickle-leaf-in-graph", lambda m: [t(m, [1.0, 2.0], True)],
     lambda m, x: (lambda y: pickle.loads(pickle.dumps(x)))((x * 2).sum()),
     Value(lambda r, xs: [(arr(r), [1.0, 2.0]), (r.requires_grad, True)]))

# --- dtypes ----------------------------------------------------------------------------------
for name, other in [("python-float", lambda m: 2.5), ("numpy-float64", lambda m: np.float64(2.5)),
                    ("0d-float64", lambda m: m.tensor(2.5, dtype=m.float64)),
                    ("0d-int", lambda m: m.tensor(2)), ("python-int", lambda m: 2)]:
    for op, fn in [("mul", lambda a, b: a * b), ("radd", lambda a, b: b + a),
                   ("div", lambda a, b: a / b)]:
        case(f"float32-{op}-{name}", lambda m, other=other: [t(m, [1.0, 2.0], True, "float32")],
             lambda m, x, other=other, fn=fn: fn(x, other(m)).dtype,
             Value(lambda r, xs: [(str(r).replace("torch.", ""), "float32")]))
case("float32-mixed-dimensioned-promotes", lambda m: [t(m, [1.0], dtype="float32"), t(m, [1.0])],
     lambda m, a, b: (a * b).dtype,
     Value(lambda r, xs: [(str(r).replace("torch.", ""), "float64")]))
for name, fn in [("amax", lambda m, x: m.amax(x - m.amax(x)).exp()),
                 ("max-dim", lambda m, x: x.max(0)[0]),
                 ("logsumexp", lambda m, x: m.logsumexp(x, 0)),
                 ("softmax", lambda m, x: m.softmax(x, 0)),
                 ("norm", lambda m, x: m.linalg.vector_norm(x)),
                 ("std", lambda m, x: x.std())]:
    case(f"float32-grad-{name}", lambda m: [t(m, [1.0, 3.0, 2.0], True, "float32")],
         lambda m, x, fn=fn: (fn(m, x).sum().backward(), str(x.grad.dtype))[1],
         Value(lambda r, xs: [(r.replace("torch.", ""), "float32")]), mutates=True)

IDS = [c.id for c in CASES]
assert len(IDS) == len(set(IDS)), "duplicate case ids"


def _snapshot(m, inputs):
    return [(arr(x).copy(), None if getattr(x, "grad", None) is None else arr(x.grad).copy())
            if hasattr(x, "detach") else None for x in inputs]


def _same(a, b):
    a, b = np.asarray(a, dtype=object if isinstance(a, list) else None), np.asarray(b)
    return np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float), equal_nan=True)


def run_case(m, c, check_message=True):
    inputs = c.make(m)
    before = _snapshot(m, inputs)
    mode = m.is_grad_enabled()
    if isinstance(c.expect, Raises):
        with pytest.raises(c.expect.exc) as info:
            c.act(m, *inputs)
        if check_message:
            assert c.expect.text in str(info.value), (c.id, str(info.value))
    else:
        result = c.act(m, *inputs)
        for got, want in c.expect.check(result, inputs):
            if isinstance(want, (str, bool, tuple)) or (isinstance(want, list) and want and
                                                        isinstance(want[0], bool)):
                assert got == want if not isinstance(got, list) else list(got) == want, (
                    c.id, got, want)
            else:
                got_a = np.asarray(arr(got) if hasattr(got, "detach") else got, dtype=float)
                np.testing.assert_allclose(got_a, np.asarray(want, dtype=float), rtol=1e-6,
                                           atol=1e-9, equal_nan=True, err_msg=c.id)
    assert m.is_grad_enabled() == mode, f"{c.id}: grad mode changed"
    if not c.mutates:
        for x, snap in zip(inputs, before):
            if snap is None:
                continue
            assert _same(arr(x), snap[0]), f"{c.id}: the input's data changed"
            if isinstance(c.expect, Raises):
                grad = getattr(x, "grad", None)
                assert (grad is None) == (snap[1] is None), f"{c.id}: .grad changed"


def test_catalogue_has_at_least_150_cases():
    assert len(CASES) >= 150, len(CASES)


try:
    import torch
except ImportError:  # CI: the expectations, derived by hand, are checked on chainrule only
    torch = None


@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_case(c):
    """chainrule meets the case's expectation; where torch is installed (and the case is not
    a documented departure), PyTorch meets the same expectation (its messages do not name
    the op, so only the exception class is compared)."""
    run_case(cr, c)
    if torch is not None and not c.torch_differs:
        run_case(torch, c, check_message=False)
