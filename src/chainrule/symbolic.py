"""The formula of a gradient, from the same table rules that compute the numbers.

:func:`derive` runs a function on chainrule tensors while the dispatcher reports every
primitive it runs (the hook that forward mode and anomaly mode use), keeps a symbolic
value (a SymPy matrix expression) beside each tensor, and then walks the recorded ops in
reverse calling each op's OWN VJP rule from :data:`chainrule.TABLE` with ``F`` = a SymPy
namespace (:data:`NAMESPACE`): ``F.matmul`` builds a ``MatMul``, ``F.mT`` a ``Transpose``,
``F.inv`` an ``Inverse``, ``F.cofactor`` ``det(A) A^-T``, ``F.solve(A, B)`` ``A^-1 B``,
``F.sum`` products with matrices of ones, ``*`` between matrices a Hadamard product, and
so on. So the formula comes from the rules that ``backward`` runs, and
:meth:`Derivation.check` compares it with chainrule's numeric VJP (and with finite
differences).

Conventions: a vector of shape ``(n,)`` is a column ``n x 1`` matrix symbol; a scalar
function's cotangent is 1 (the result is the gradient); a matrix-valued function's
cotangent is a matrix symbol ``G`` of the output's shape. Comparisons a rule makes on
values (``out == 0`` in the norm's rule, ``self == self`` in abs's) are decided for inputs
in general position (an expression of random inputs is not 0): the formula holds off that
measure-zero set.

SymPy is an optional dependency: ``pip install chainrule[symbolic]``.
"""

from __future__ import annotations

import functools
import inspect
import numbers
import threading
from types import SimpleNamespace

import numpy as np

__all__ = ["derive", "Derivation", "NAMESPACE", "elementwise", "evaluate"]


def _sympy():
    try:
        import sympy
    except ImportError as error:  # pragma: no cover - sympy is in the test extra
        raise ImportError("chainrule.symbolic needs SymPy: pip install chainrule[symbolic] "
                          "(or pip install sympy)") from error
    return sympy


class NoSymbolicForm(NotImplementedError):
    """A rule (or a forward) used something that has no symbolic form."""


def _refuse(name, detail=""):
    raise NoSymbolicForm(f"F.{name}" + (f" ({detail})" if detail else ""))


# --- shapes -------------------------------------------------------------------------------


def _is_one(d):
    return d == 1


def _scalarlike(shape):
    return all(_is_one(d) for d in shape)


def _same(a, b):
    return len(a) == len(b) and all(x == y for x, y in zip(a, b))


def _mshape(shape):
    """The matrix shape of a NumPy shape: () -> None, (k,) -> (k, 1), (a, b) -> (a, b)."""
    if _scalarlike(shape):
        return None
    if len(shape) == 1:
        return (shape[0], 1)
    if len(shape) == 2:
        return tuple(shape)
    raise NoSymbolicForm(f"arrays of {len(shape)} dimensions (shape {tuple(shape)}): only "
                         "scalars, vectors and matrices have a matrix-expression form")


def _broadcast(*shapes):
    nd = max(len(s) for s in shapes)
    out = []
    for k in range(nd):
        dims = [s[len(s) - nd + k] for s in shapes if len(s) - nd + k >= 0]
        big = [d for d in dims if not _is_one(d)]
        if any(d != big[0] for d in big):
            raise ValueError(f"shapes {shapes} do not broadcast")
        out.append(big[0] if big else 1)
    return tuple(out)


def _prod(dims):
    out = 1
    for d in dims:
        out = out * d
    return out


# --- symbolic values ----------------------------------------------------------------------


class Cond:
    """A comparison of symbolic values, decided for inputs in general position: ``value``
    is True or False when it is, None when it cannot be."""

    __slots__ = ("value", "text")

    def __init__(self, value, text):
        self.value, self.text = value, text

    def __invert__(self):
        return Cond(None if self.value is None else not self.value, f"~({self.text})")

    def _combine(self, other, op, word):
        o = other.value if isinstance(other, Cond) else _decided(other)
        a = self.value
        if op == "and":
            value = False if (a is False or o is False) else (None if None in (a, o) else True)
        else:
            value = True if (a is True or o is True) else (None if None in (a, o) else False)
        return Cond(value, f"({self.text}) {word} ...")

    def __and__(self, other):
        return self._combine(other, "and", "&")

    __rand__ = __and__

    def __or__(self, other):
        return self._combine(other, "or", "|")

    __ror__ = __or__

    def __bool__(self):
        if self.value is None:
            raise NoSymbolicForm(f"a comparison ({self.text}) whose value depends on the "
                                 "inputs")
        return self.value


def _decided(c):
    """True/False when condition ``c`` (a Cond, a bool, a boolean array) is decided."""
    if isinstance(c, Cond):
        return c.value
    if isinstance(c, (bool, np.bool_)):
        return bool(c)
    a = np.asarray(c)
    if a.dtype == bool:
        if a.all():
            return True
        if not a.any():
            return False
    return None


class Sym:
    """A symbolic array: ``expr`` (a SymPy scalar or matrix expression) of NumPy shape
    ``bshape``, broadcast to ``shape``. Operators are NumPy's elementwise ones (``*`` is
    the Hadamard product), so that the table's rules run on it unchanged."""

    __slots__ = ("expr", "shape", "bshape")
    dtype = np.dtype(np.float64)
    __array_priority__ = 1000
    __hash__ = object.__hash__

    def __init__(self, expr, shape, bshape=None):
        self.expr = expr
        self.shape = tuple(shape)
        self.bshape = self.shape if bshape is None else tuple(bshape)

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return f"Sym({self.expr}, shape={self.shape})"

    def full(self):
        """The expression of the whole array (a broadcast made explicit)."""
        return _full(self, self.shape)

    def __neg__(self):
        return Sym(-self.expr, self.shape, self.bshape)

    def __pos__(self):
        return self

    def __add__(self, other):
        return _binary("add", self, other)

    def __radd__(self, other):
        return _binary("add", other, self)

    def __sub__(self, other):
        return _binary("sub", self, other)

    def __rsub__(self, other):
        return _binary("sub", other, self)

    def __mul__(self, other):
        return _binary("mul", self, other)

    def __rmul__(self, other):
        return _binary("mul", other, self)

    def __truediv__(self, other):
        return _binary("div", self, other)

    def __rtruediv__(self, other):
        return _binary("div", other, self)

    def __pow__(self, p):
        return _power(self, p)

    def __matmul__(self, other):
        return _matmul(self, _lift(other))

    def __eq__(self, other):
        if other is self or (isinstance(other, Sym) and other.expr == self.expr):
            return Cond(True, "x == x")
        if isinstance(other, numbers.Number) and other == 0:
            return Cond(False, f"{self.expr} == 0")
        return Cond(None, f"{self.expr} == {getattr(other, 'expr', other)}")

    def __ne__(self, other):
        return ~self.__eq__(other)

    def _order(self, other, word):
        return Cond(None, f"{self.expr} {word} {getattr(other, 'expr', other)}")

    def __lt__(self, other):
        return self._order(other, "<")

    def __le__(self, other):
        return self._order(other, "<=")

    def __gt__(self, other):
        return self._order(other, ">")

    def __ge__(self, other):
        return self._order(other, ">=")


def _lift(x):
    """A Sym for a rule's operand: a Sym, a number, a NumPy scalar or array."""
    sp = _sympy()
    if isinstance(x, Sym):
        return x
    if isinstance(x, Cond):
        if x.value is None:
            raise NoSymbolicForm(f"a comparison ({x.text}) whose value depends on the inputs")
        return Sym(sp.Integer(int(x.value)), ())
    if isinstance(x, (numbers.Number, np.generic)) or (isinstance(x, np.ndarray) and x.ndim == 0):
        return Sym(sp.sympify(x.item() if hasattr(x, "item") else x), ())
    if isinstance(x, sp.Basic):
        return Sym(x, () if not getattr(x, "is_Matrix", False) else
                   (x.rows,) if x.cols == 1 else x.shape)
    if isinstance(x, np.ndarray):
        return _constant(x, tuple(x.shape))
    raise NoSymbolicForm(f"a value of type {type(x).__name__}")


def _constant(a, shape):
    """A constant array: a number broadcast, the identity, or explicit entries."""
    sp = _sympy()
    a = np.asarray(a)
    if a.dtype == bool:
        a = a.astype(float)
    flat = a.reshape(-1)
    if flat.size and np.all(flat == flat[0]):
        return Sym(sp.sympify(float(flat[0]) if flat[0] != int(flat[0]) else int(flat[0])),
                   shape, ())
    if a.ndim == 2 and a.shape[0] == a.shape[1] and np.array_equal(a, np.eye(a.shape[0])):
        return Sym(sp.Identity(shape[0]), shape)
    if all(isinstance(d, numbers.Integral) for d in shape) and a.ndim <= 2:
        m = a.reshape(-1, 1) if a.ndim == 1 else a
        return Sym(sp.ImmutableMatrix(m.tolist()), shape)
    raise NoSymbolicForm("a constant array that is neither a number, the identity nor of "
                         "numeric shape")


def _full(s, shape):
    """The expression of Sym ``s`` broadcast to ``shape`` (canonical matrix form)."""
    sp = _sympy()
    e, b = s.expr, s.bshape
    target = _mshape(shape)
    if target is None:
        return e
    if _scalarlike(b):
        one = sp.OneMatrix(*target)
        return one if e == 1 else (sp.ZeroMatrix(*target) if e == 0 else e * one)
    if _same(b, shape):
        return e
    if len(shape) == 1:
        return e
    bb = (1,) * (len(shape) - len(b)) + tuple(b)
    row = e.T if len(b) == 1 else e
    out = row
    if _is_one(bb[0]) and not _is_one(shape[0]):
        out = sp.OneMatrix(shape[0], 1) * out
    if _is_one(bb[1]) and not _is_one(shape[1]):
        out = out * sp.OneMatrix(1, shape[1])
    return out


def _as_row(s):
    """(expr as a 1 x k row, k) for a Sym whose base is a row vector in 2-D alignment."""
    b = s.bshape
    if len(b) == 1:
        return s.expr.T
    return s.expr


def _binary(op, x, y):
    sp = _sympy()
    x, y = _lift(x), _lift(y)
    shape = _broadcast(x.shape, y.shape)
    common = _broadcast(x.bshape, y.bshape)
    xs, ys = _scalarlike(x.bshape), _scalarlike(y.bshape)
    if op == "div":
        if ys:
            return Sym(x.expr / y.expr, shape, x.bshape if not xs else common)
        recip = Sym(sp.HadamardPower(_full(y, y.bshape), -1), y.shape, y.bshape)
        return _binary("mul", x, recip)
    if xs and ys:
        e = {"add": x.expr + y.expr, "sub": x.expr - y.expr, "mul": x.expr * y.expr}[op]
        return Sym(e, shape, common)
    if op == "mul":
        if xs:
            return Sym(x.expr * y.expr, shape, y.bshape)
        if ys:
            return Sym(y.expr * x.expr, shape, x.bshape)
        ax = (1,) * (len(common) - len(x.bshape)) + tuple(x.bshape)
        ay = (1,) * (len(common) - len(y.bshape)) + tuple(y.bshape)
        if len(common) == 2:  # an outer product: a column times a row
            if _is_one(ax[1]) and _is_one(ay[0]) and not _is_one(ax[0]):
                return Sym(x.expr * _as_row(y), shape, common)
            if _is_one(ay[1]) and _is_one(ax[0]) and not _is_one(ay[0]):
                return Sym(y.expr * _as_row(x), shape, common)
        return Sym(sp.HadamardProduct(_full(x, common), _full(y, common)).doit(), shape,
                   common)
    a, b = _full(x, common), _full(y, common)
    return Sym(a + b if op == "add" else a - b, shape, common)


def _power(x, p):
    sp = _sympy()
    if isinstance(p, Sym):
        if not _scalarlike(p.bshape):
            raise NoSymbolicForm("an elementwise power with an array exponent")
        p = p.expr
    if p == 1:
        return x
    if _scalarlike(x.bshape):
        return Sym(x.expr ** p, x.shape, x.bshape)
    return Sym(sp.HadamardPower(x.expr, p), x.shape, x.bshape)


def _sigmoid_function():
    sp = _sympy()

    class sigmoid(sp.Function):  # noqa: N801 - printed as sigmoid(x)
        """The logistic function 1 / (1 + exp(-x))."""

        def fdiff(self, argindex=1):
            s = sigmoid(self.args[0])
            return s * (1 - s)

        def _eval_rewrite_as_exp(self, x, **kwargs):
            return 1 / (1 + sp.exp(-x))

    return sigmoid


@functools.lru_cache(maxsize=None)
def _function(name):
    """The SymPy scalar function applied elementwise for ``name``."""
    sp = _sympy()
    if name == "sigmoid":
        return _sigmoid_function()
    if name == "abs":
        return sp.Abs
    return getattr(sp, name)


@functools.lru_cache(maxsize=None)
def _lambda(name):
    sp = _sympy()
    d = sp.Dummy("x")
    return sp.Lambda(d, _function(name)(d))


def elementwise(name, M):
    """Matrix expression ``M`` with the scalar function ``name`` (``"exp"``, ``"log"``,
    ``"tanh"``, ``"sigmoid"``, ...) applied to each entry, as :func:`derive` writes it (one
    Lambda per function, so that two such expressions compare equal)."""
    return M.applyfunc(_lambda(name))


def _apply(name, x):
    """Function ``name`` applied to each entry of ``x``."""
    x = _lift(x)
    if _scalarlike(x.bshape):
        return Sym(_function(name)(x.expr), x.shape, x.bshape)
    return Sym(elementwise(name, x.expr), x.shape, x.bshape)


def _transpose2(x):
    """The transpose of a 2-D Sym."""
    b = x.bshape
    if _scalarlike(b):
        return Sym(x.expr, x.shape[::-1], tuple(b)[::-1])
    if len(b) == 1:  # a row broadcast down the rows; transposed: a column
        return Sym(x.expr, x.shape[::-1], (b[0], 1))
    return Sym(x.expr.T, x.shape[::-1], b[::-1])


def _norm_axes(dims, nd):
    return tuple(sorted(d % nd for d in dims))


def _transpose(x, dim0, dim1):
    x = _lift(x)
    if x.ndim < 2 or dim0 % x.ndim == dim1 % x.ndim:
        return x
    if x.ndim != 2:
        _mshape(x.shape)
    return _transpose2(x)


def _permute(x, dims):
    x = _lift(x)
    dims = tuple(d % x.ndim for d in dims) if x.ndim else ()
    if dims == tuple(range(x.ndim)):
        return x
    if x.ndim == 2:
        return _transpose2(x)
    _mshape(x.shape)
    return x


def _mT(x):
    return _transpose(x, -2, -1)


def _reshape(x, shape):
    """A reshape that only adds or removes dims of size 1 (the entries keep their order)."""
    x = _lift(x)
    shape = tuple(shape)
    if any(d == -1 for d in shape):
        known = _prod(d for d in shape if d != -1)
        total = _prod(x.shape)
        shape = tuple(_sympy().simplify(total / known) if d == -1 else d for d in shape)
    core_old = [d for d in x.shape if not _is_one(d)]
    core_new = [d for d in shape if not _is_one(d)]
    if not _same(core_old, core_new):
        raise NoSymbolicForm(f"a reshape from {x.shape} to {shape} that moves entries")
    if _scalarlike(x.bshape):
        return Sym(x.expr, shape, ())
    e = _full(x, x.shape)
    if not core_new:
        return Sym(e, shape)
    if len(core_new) == 2:
        return Sym(e, shape)
    col = e if e.shape[1] == 1 else e.T
    if len(shape) == 2 and _is_one(shape[0]):
        return Sym(col.T, shape)
    return Sym(col, shape)


def _unsqueeze(x, dim):
    x = _lift(x)
    d = dim % (x.ndim + 1)
    return _reshape(x, x.shape[:d] + (1,) + x.shape[d:])


def _squeeze(x, dim=None):
    x = _lift(x)
    if dim is None:
        dims = tuple(i for i, n in enumerate(x.shape) if _is_one(n))
    else:
        dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
        dims = tuple(d % x.ndim for d in dims if _is_one(x.shape[d % x.ndim]))
    return _reshape(x, tuple(n for i, n in enumerate(x.shape) if i not in dims))


def _expand(x, shape):
    x = _lift(x)
    shape = tuple(x.shape[i - len(shape) + x.ndim] if d == -1 else d
                  for i, d in enumerate(shape))
    _broadcast(x.shape, shape)
    return Sym(x.expr, shape, x.bshape)


def _to_scalar(m):
    """A 1 x 1 matrix expression as a scalar (its trace)."""
    sp = _sympy()
    if not getattr(m, "is_Matrix", False):
        return m
    return sp.Trace(m)


def _sum_all(e, mshape):
    """The sum of all entries of matrix expression ``e``: tr(1 e) with a matrix of ones."""
    sp = _sympy()
    r, c = mshape
    if isinstance(e, sp.OneMatrix):
        return r * c
    if _is_one(c):
        return _to_scalar(sp.OneMatrix(1, r) * e)
    if _is_one(r):
        return _to_scalar(e * sp.OneMatrix(c, 1))
    return sp.Trace(sp.OneMatrix(c, r) * e)


def _sum(x, dim=None, keepdim=False):
    sp = _sympy()
    x = _lift(x)
    nd = x.ndim
    if dim is None:
        dims = tuple(range(nd))
    else:
        dims = _norm_axes((dim,) if isinstance(dim, numbers.Integral) else dim, nd) if nd else ()
    kept = tuple(1 if i in dims else n for i, n in enumerate(x.shape))
    shape = kept if keepdim else tuple(n for i, n in enumerate(x.shape) if i not in dims)
    if _scalarlike(x.bshape):
        count = _prod(x.shape[i] for i in dims if not _is_one(x.bshape[i - nd + len(x.bshape)]
                                                             if i - nd + len(x.bshape) >= 0
                                                             else True))
        return Sym(x.expr * count, shape, ())
    e = _full(x, x.shape)
    dims = tuple(i for i in dims if not _is_one(x.shape[i]))
    if not dims:
        return _reshape(Sym(e, x.shape), shape)
    m = _mshape(x.shape)
    if nd == 1 or len(dims) == 2:
        return Sym(_sum_all(e, m), shape, ())
    if dims == (1,):  # row sums: a column
        return _reshape(Sym(e * sp.OneMatrix(m[1], 1), (x.shape[0], 1)), shape)
    col = e.T * sp.OneMatrix(m[0], 1)  # column sums, as a column
    return _reshape(Sym(col, (x.shape[1],)), shape)


def _mean(x, dim=None, keepdim=False):
    x = _lift(x)
    nd = x.ndim
    dims = tuple(range(nd)) if dim is None else _norm_axes(
        (dim,) if isinstance(dim, numbers.Integral) else dim, nd)
    return _sum(x, dim, keepdim) / _prod(x.shape[i] for i in dims)


def _matmul(a, b):
    a, b = _lift(a), _lift(b)
    if a.ndim == 0 or b.ndim == 0 or a.ndim > 2 or b.ndim > 2:
        raise NoSymbolicForm(f"matmul of shapes {a.shape} and {b.shape} (batches or 0-d)")
    A, B = _full(a, a.shape), _full(b, b.shape)
    if a.ndim == 2 and b.ndim == 2:
        return Sym(A * B, (a.shape[0], b.shape[1]))
    if a.ndim == 2:
        return Sym(A * B, (a.shape[0],))
    if b.ndim == 2:
        return Sym(B.T * A, (b.shape[1],))
    return Sym(_to_scalar(A.T * B), ())


def _trace(x):
    x = _lift(x)
    if _scalarlike(x.bshape):
        return Sym(x.expr * x.shape[0], ())
    return Sym(_sympy().Trace(_full(x, x.shape)), ())


def _eye(n, m=None, dtype=None):
    if m is not None and m != n:
        _refuse("eye", "a rectangular identity")
    return Sym(_sympy().Identity(n), (n, n))


def _where(c, a, b):
    value = _decided(c)
    if value is None:
        _refuse("where", "a condition that depends on the entries")
    a, b = _lift(a), _lift(b)
    shape = _broadcast(a.shape, b.shape, getattr(c, "shape", ()) if not isinstance(c, Cond)
                       else ())
    pick = a if value else b
    return Sym(pick.expr, shape, pick.bshape)


def _cast(x, dtype):
    if isinstance(x, Cond):
        return _lift(x)
    if isinstance(x, np.ndarray) or isinstance(x, (bool, np.bool_)):
        return _constant(np.asarray(x, dtype=float), np.shape(x))
    return x


def _maybe_any(c):
    value = _decided(c)
    if value is None:
        return True  # the general branch, as a lazy backend answers
    return value


def _matrix(x):
    x = _lift(x)
    if x.ndim != 2:
        _refuse("linalg", f"a batch or a non-matrix of shape {x.shape}")
    return _full(x, x.shape)


def _inv(A):
    A = _lift(A)
    return Sym(_sympy().Inverse(_matrix(A)), A.shape)


def _cofactor(A):
    sp = _sympy()
    A = _lift(A)
    M = _matrix(A)
    return Sym(sp.Determinant(M) * sp.Inverse(M).T, A.shape)


def _solve(A, B):
    A, B = _lift(A), _lift(B)
    return Sym(_sympy().Inverse(_matrix(A)) * _full(B, B.shape), B.shape)


# -- einsum: two-operand contractions as matrix products ---------------------------------


def _einsum(equation, *operands):
    from .ops.einsum import parse

    sp = _sympy()
    ops = [_lift(x) for x in operands]
    terms, out = parse(equation, [x.ndim for x in ops])
    sizes = {}
    items = []
    for term, x in zip(terms, ops):
        sizes.update(zip(term, x.shape))
        if len(term) > 2:
            _refuse("einsum", f"a term {term!r} of more than 2 indices")
        e = _full(x, x.shape)
        if len(term) == 2 and term[0] == term[1]:
            elsewhere = term[0] in out or any(term[0] in t for t in terms if t is not term)
            if elsewhere:
                from sympy.matrices.expressions.diagonal import DiagonalOf

                items.append((DiagonalOf(e), term[0]))
            else:
                items.append((sp.Trace(e), ""))
            continue
        items.append((e, term))
    while len(items) > 1:
        pair = next(((i, j) for i in range(len(items)) for j in range(i + 1, len(items))
                     if set(items[i][1]) & set(items[j][1])), (0, 1))
        i, j = pair
        rest = [t for k, (_, t) in enumerate(items) if k not in pair]
        keep = set(out) | set("".join(rest))
        merged = _contract(items[i], items[j], keep)
        items = [it for k, it in enumerate(items) if k not in pair] + [merged]
    e, labels = items[0]
    x = Sym(e, tuple(sizes[c] for c in labels))
    summed = tuple(k for k, c in enumerate(labels) if c not in out)
    if summed:
        x = _sum(x, summed, False)
        labels = "".join(c for c in labels if c in out)
    if labels != out:
        if sorted(labels) != sorted(out):
            _refuse("einsum", f"an output {out!r} from {labels!r}")
        x = _permute(x, tuple(labels.index(c) for c in out))
    return x


def _contract(p, q, keep):
    sp = _sympy()
    (P, lp), (Q, lq) = p, q
    if not lp:
        return (P * Q, lq)
    if not lq:
        return (Q * P, lp)
    shared = [c for c in lp if c in lq]
    summed = [c for c in shared if c not in keep]
    kept = [c for c in shared if c in keep]

    def oriented(M, labels, first):
        """M as a matrix whose row index is ``first``."""
        return (M, labels) if labels[0] == first else (M.T, labels[::-1])

    if not shared:
        if len(lp) == 1 and len(lq) == 1:
            return (P * Q.T, lp + lq)
        _refuse("einsum", "an outer product of more than two indices")
    if not summed:  # entrywise
        if len(lp) == len(lq):
            Qo = Q if lq == lp else Q.T
            return (sp.HadamardProduct(P, Qo).doit(), lp)
        from sympy.matrices.expressions.diagonal import DiagMatrix

        (M, lm), (v, lv) = (p, q) if len(lp) == 2 else (q, p)
        return ((M * DiagMatrix(v), lm) if lm[1] == lv else (DiagMatrix(v) * M, lm))
    if not kept:
        if len(lp) == 1 and len(lq) == 1:
            return (_to_scalar(P.T * Q), "")
        if len(lp) == 1 or len(lq) == 1:
            (M, lm), (v, lv) = (p, q) if len(lp) == 2 else (q, p)
            M, lm = oriented(M, lm, lm.replace(lv, ""))
            return (M * v, lm[0])
        if len(summed) == 1:
            c = summed[0]
            Po, lpo = oriented(P, lp, lp.replace(c, ""))
            Qo, lqo = oriented(Q, lq, c)
            return (Po * Qo, lpo[0] + lqo[1])
        Qo = Q if lq == lp else Q.T
        return (sp.Trace(P.T * Qo), "")
    if len(lp) == 2 and len(lq) == 2 and len(summed) == 1 and len(kept) == 1:
        from sympy.matrices.expressions.diagonal import DiagonalOf

        Po, _ = oriented(P, lp, kept[0])
        Qo, _ = oriented(Q, lq, kept[0])
        return (DiagonalOf(Po * Qo.T), kept[0])
    _refuse("einsum", f"the contraction {lp},{lq}")


# --- the rule namespace -------------------------------------------------------------------


def _elementwise_names():
    return {name: (lambda n: lambda x: _apply(n, x))(name)
            for name in ("exp", "log", "sin", "cos", "abs", "sign", "sigmoid")}


def _namespace():
    from . import _ns

    fns = {name: (lambda n: lambda *a, **k: _refuse(n))(name) for name in _ns.names()}
    fns.update(_elementwise_names())
    fns.update(
        where=_where, zeros_like=lambda x: Sym(_sympy().Integer(0), _lift(x).shape, ()),
        ones_like=lambda x: Sym(_sympy().Integer(1), _lift(x).shape, ()),
        zeros=lambda shape, dtype=None: Sym(_sympy().Integer(0), tuple(shape), ()),
        ones=lambda shape, dtype=None: Sym(_sympy().Integer(1), tuple(shape), ()),
        eye=_eye, cast=_cast, reshape=_reshape, expand=_expand, unsqueeze=_unsqueeze,
        squeeze=_squeeze, transpose=_transpose, permute=_permute, mT=_mT, sum=_sum,
        mean=_mean, maybe_any=_maybe_any, matmul=_matmul, trace=_trace, einsum=_einsum,
        inv=_inv, inv_ext=_inv, cofactor=_cofactor, solve=_solve,
    )
    return SimpleNamespace(**fns)


class _Namespace:
    """The SymPy rule namespace (built on first use, and again when names are added)."""

    def __init__(self):
        self._ns = None
        self._count = -1

    def get(self):
        from . import _ns

        if self._ns is None or self._count != len(_ns.names()):
            self._ns = _namespace()
            self._count = len(_ns.names())
        return self._ns

    def __getattr__(self, name):
        try:
            return getattr(self.get(), name)
        except AttributeError:
            return lambda *a, **k: _refuse(name)


#: The rule namespace ``F`` of :func:`derive`: every name of ``chainrule._ns.names()``,
#: over SymPy matrix expressions (a name without a symbolic form raises
#: NotImplementedError naming it).
NAMESPACE = _Namespace()


# --- symbolic forwards of the table's ops ---------------------------------------------------


def _fwd_unary(name):
    return lambda F, x: _apply(name, x)


_FORWARD = {
    "add": lambda F, a, b: _binary("add", a, b),
    "sub": lambda F, a, b: _binary("sub", a, b),
    "mul": lambda F, a, b: _binary("mul", a, b),
    "div": lambda F, a, b: _binary("div", a, b),
    "pow": lambda F, a, p: _power(_lift(a), p),
    "neg": lambda F, x: -_lift(x),
    "clone": lambda F, x: _lift(x),
    "_to_copy": lambda F, x, dtype, src: _lift(x),
    "sqrt": lambda F, x: _power(_lift(x), _sympy().Rational(1, 2)),
    "log1p": lambda F, x: _apply("log", _lift(x) + 1),
    "expm1": lambda F, x: _apply("exp", x) - 1,
    "mm": lambda F, a, b: _matmul(a, b),
    "matmul": lambda F, a, b: _matmul(a, b),
    "trace": lambda F, x: _trace(x),
    "sum": lambda F, x, dim, keepdim: _sum(x, dim, keepdim),
    "mean": lambda F, x, dim, keepdim: _mean(x, dim, keepdim),
    "reshape": lambda F, x, shape: _reshape(x, shape),
    "expand": lambda F, x, shape: _expand(x, shape),
    "transpose": lambda F, x, d0, d1: _transpose(x, d0, d1),
    "permute": lambda F, x, dims: _permute(x, dims),
    "where": lambda F, c, a, b: _where(c, a, b),
    "einsum": lambda F, xs, equation, parsed: _einsum(equation, *xs),
    "linalg_inv": lambda F, A: _inv(A),
    "linalg_det": lambda F, A: Sym(_sympy().Determinant(_matrix(A)), ()),
    "linalg_slogdet": lambda F, A: (
        Sym(_sympy().sign(_sympy().Determinant(_matrix(A))), ()),
        Sym(_sympy().log(_sympy().Abs(_sympy().Determinant(_matrix(A)))), ())),
    "linalg_solve": lambda F, A, B, left, vector: _solve_forward(A, B, left, vector),
    "linalg_vector_norm": lambda F, x, ord, dim, keepdim: _norm_forward(x, ord, dim, keepdim),
}
for _name in ("exp", "log", "sin", "cos", "tan", "tanh", "sigmoid", "abs", "erf"):
    _FORWARD[_name] = _fwd_unary(_name)


def _solve_forward(A, B, left, vector):
    sp = _sympy()
    A, B = _lift(A), _lift(B)
    Ai = sp.Inverse(_matrix(A))
    b = _full(B, B.shape)
    if left:
        return Sym(Ai * b, B.shape)
    return Sym(Ai.T * b if vector else b * Ai, B.shape)


def _norm_forward(x, ord, dim, keepdim):
    x = _lift(x)
    if ord != 2 or not (dim is None or len(dim) == x.ndim):
        raise NoSymbolicForm(f"vector_norm with ord={ord}, dim={dim} (only the 2-norm of "
                             "all entries)")
    return _power(_sum(x * x, dim, keepdim), _sympy().Rational(1, 2))


# --- tracing ----------------------------------------------------------------------------------

_TRACING = threading.local()


class _Entry:
    __slots__ = ("op", "inputs", "attrs", "results", "syms", "outs", "depends")


class _Tracer:
    """Keeps a symbolic value beside each tensor the traced function makes."""

    def __init__(self, dim_of):
        self.dim_of = dim_of  # concrete size -> symbolic size
        self.sym = {}  # id(tensor) -> Sym
        self.depends = set()  # ids of tensors that depend on the differentiated inputs
        self.entries = []
        self.keep = []  # the tensors, so that their ids stay theirs

    def shape_of(self, shape):
        return tuple(self.dim_of.get(int(d), int(d)) for d in shape)

    def value(self, x):
        from ._tensor import Tensor

        if isinstance(x, Tensor):
            s = self.sym.get(id(x))
            if s is not None:
                return s
            data = np.asarray(x._data)
            if data.ndim == 0:
                return data.item()
            return _constant(data, self.shape_of(data.shape))
        if isinstance(x, np.ndarray) and x.dtype != bool and x.ndim:
            return _constant(x, self.shape_of(x.shape))
        if isinstance(x, np.generic):
            return x.item()
        return x

    def record(self, op, inputs, attrs, result):
        from ._tensor import Tensor

        entry = _Entry()
        entry.op = op
        entry.inputs = list(inputs)
        entry.attrs = tuple(attrs)
        entry.results = result if isinstance(result, tuple) else (result,)
        entry.depends = [isinstance(x, Tensor) and id(x) in self.depends for x in entry.inputs]
        self.keep.append((entry.inputs, entry.results))
        if not any(entry.depends):
            return  # a constant: its numeric value stands for it
        forward = _FORWARD.get(op.name)
        if forward is None:
            raise NotImplementedError(
                f"chainrule.symbolic: the op {op.name!r} has no symbolic form (its forward "
                "is not a matrix expression chainrule.symbolic knows)")
        entry.syms = [self.value(x) for x in entry.inputs]
        attrs = entry.attrs
        if op.name in ("reshape", "expand"):
            attrs = (self.shape_of(attrs[0]),)
        try:
            outs = forward(NAMESPACE, entry.syms, *attrs) if op.variadic else \
                forward(NAMESPACE, *entry.syms, *attrs)
        except NoSymbolicForm as error:
            raise NotImplementedError(
                f"chainrule.symbolic: the op {op.name!r} has no symbolic form here: it needs "
                f"{error}") from None
        entry.outs = outs if isinstance(outs, tuple) else (outs,)
        for r, s in zip(entry.results, entry.outs):
            if isinstance(r, Tensor):
                self.sym[id(r)] = s
                self.depends.add(id(r))
        self.entries.append(entry)


def _hook(op, inputs, datas, attrs, out, result):
    tracer = getattr(_TRACING, "tracer", None)
    if tracer is not None:
        tracer.record(op, inputs, attrs, result)


def _trace_run(fn, tensors, tracer):
    from . import _dispatch, _state

    state = _state.STATE
    flags, hooked = state.flags, state.hooked
    _dispatch.AFTER_OP.append(_hook)
    _TRACING.tracer = tracer
    state.flags, state.hooked = flags | _state.SLOW, True
    try:
        return fn(*tensors)
    finally:
        state.flags, state.hooked = flags, hooked
        _TRACING.tracer = None
        _dispatch.AFTER_OP.remove(_hook)


# --- the reverse walk ------------------------------------------------------------------------


def _rule_args(entry, params, g):
    op = entry.op
    args = []
    for p in params:
        if p == "out":
            args.append(entry.outs[0] if op.nout == 1 else entry.outs)
        elif p in op.attrs:
            args.append(entry.attrs[op.attrs.index(p)])
        elif p.endswith("_shape") and p[:-6] in op.inputs:
            i = op.inputs.index(p[:-6])
            if op.variadic:
                args.append([_lift(s).shape for s in entry.syms])
            else:
                args.append(_lift(entry.syms[i]).shape)
        else:
            i = op.inputs.index(p)
            args.append(entry.syms if op.variadic else entry.syms[i])
    return args


def _sum_to(g, shape):
    g = _lift(g)
    if _same(g.shape, shape):
        return g
    lead = g.ndim - len(shape)
    if lead:
        g = _sum(g, tuple(range(lead)), False)
    stretched = tuple(i for i, n in enumerate(shape) if _is_one(n) and not _is_one(g.shape[i]))
    return _sum(g, stretched, True) if stretched else Sym(g.expr, shape, g.bshape)


def _add(a, b):
    return b if a is None else a + b


def _backward(tracer, result, seed):
    cot = {id(result): seed}
    used = []
    for entry in reversed(tracer.entries):
        gs = [cot.pop(id(r), None) for r in entry.results]
        if all(g is None for g in gs):
            continue
        op = entry.op
        g = gs[0] if op.nout == 1 else tuple(gs)
        if op.name not in used:
            used.append(op.name)
        try:
            if op.variadic:
                fn, params = op.vjp_rules[op.inputs[0]]
                grads = fn(NAMESPACE, g, entry.depends, *_rule_args(entry, params, g))
            else:
                grads = []
                for name, need in zip(op.inputs, entry.depends):
                    if not need:
                        grads.append(None)
                        continue
                    fn, params = op.vjp_rules[name]
                    grads.append(fn(NAMESPACE, g, *_rule_args(entry, params, g)))
        except NoSymbolicForm as error:
            raise NotImplementedError(
                f"chainrule.symbolic: the VJP rule of {op.name!r} uses {error}, which has no "
                "symbolic form") from None
        except (TypeError, ValueError, AttributeError, IndexError) as error:
            raise NotImplementedError(
                f"chainrule.symbolic: the VJP rule of {op.name!r} does not run on symbolic "
                f"values ({type(error).__name__}: {error}); give numeric shapes, or this op "
                "has no symbolic form") from error
        for x, need, sx, gx in zip(entry.inputs, entry.depends, entry.syms, grads):
            if need and gx is not None:
                cot[id(x)] = _add(cot.get(id(x)), _sum_to(gx, _lift(sx).shape))
    return cot, used


# --- evaluation with NumPy --------------------------------------------------------------------


def _modules():
    from scipy.special import erf, expit

    return [{"sigmoid": expit, "erf": erf}, "numpy"]


def evaluate(expr, values, dims=None):
    """The value of SymPy matrix expression ``expr`` with NumPy: ``values`` maps symbol
    names to arrays (vectors as columns or 1-D), ``dims`` size symbols to ints."""
    sp = _sympy()
    from sympy.matrices.expressions.applyfunc import ElementwiseApplyFunction
    from sympy.matrices.expressions.diagonal import DiagMatrix, DiagonalOf
    from sympy.matrices.expressions.matexpr import MatrixElement

    dims = dict(dims or {})

    def size(d):
        return int(sp.sympify(d).xreplace(dims))

    def scalar(e):
        atoms = e.atoms(sp.Trace, sp.Determinant, MatrixElement)
        e = e.xreplace({a: sp.Float(float(ev(a))) for a in atoms}).xreplace(dims)
        return float(sp.lambdify((), e, _modules())())

    def ev(e):
        if not getattr(e, "is_Matrix", False):
            if isinstance(e, sp.Trace):
                return float(np.trace(ev(e.arg)))
            if isinstance(e, sp.Determinant):
                return float(np.linalg.det(ev(e.arg)))
            if isinstance(e, MatrixElement):
                return float(ev(e.parent)[int(e.i), int(e.j)])
            return scalar(e)
        if isinstance(e, sp.MatrixSymbol):
            v = np.asarray(values[e.name], dtype=float)
            return v.reshape(-1, 1) if v.ndim == 1 else v
        if isinstance(e, sp.Identity):
            return np.eye(size(e.rows))
        if isinstance(e, sp.ZeroMatrix):
            return np.zeros((size(e.rows), size(e.cols)))
        if isinstance(e, sp.OneMatrix):
            return np.ones((size(e.rows), size(e.cols)))
        if isinstance(e, sp.MatMul):
            coeff, mats = e.as_coeff_matrices()
            out = ev(mats[0])
            for m in mats[1:]:
                out = out @ ev(m)
            return ev(coeff) * out if coeff != 1 else out
        if isinstance(e, sp.MatAdd):
            return functools.reduce(np.add, [ev(a) for a in e.args])
        if isinstance(e, sp.Transpose):
            return ev(e.arg).T
        if isinstance(e, sp.Inverse):
            return np.linalg.inv(ev(e.arg))
        if isinstance(e, sp.MatPow):
            base, p = ev(e.base), int(e.exp)
            return np.linalg.matrix_power(np.linalg.inv(base) if p < 0 else base, abs(p))
        if isinstance(e, sp.HadamardProduct):
            return functools.reduce(np.multiply, [ev(a) for a in e.args])
        if isinstance(e, sp.HadamardPower):
            return ev(e.base) ** ev(e.exp)
        if isinstance(e, ElementwiseApplyFunction):
            f = e.function
            if isinstance(f, sp.Lambda):
                return sp.lambdify(f.variables, f.expr, _modules())(ev(e.expr))
            d = sp.Dummy("d")
            return sp.lambdify(d, f(d), _modules())(ev(e.expr))
        if isinstance(e, DiagonalOf):
            return np.diagonal(ev(e.arg)).reshape(-1, 1).copy()
        if isinstance(e, DiagMatrix):
            return np.diag(ev(e.arg).ravel())
        if isinstance(e, sp.MatrixBase):
            return np.array(e.xreplace(dims).tolist(), dtype=float)
        if isinstance(e, sp.MatrixExpr):
            return ev(e.doit()) if e.doit() != e else _unknown(e)
        return _unknown(e)

    def _unknown(e):
        raise NotImplementedError(f"chainrule.symbolic.evaluate: cannot evaluate "
                                  f"{type(e).__name__} ({e})")

    return ev(sp.sympify(expr))


# --- printing -------------------------------------------------------------------------------


def _function_name(f):
    sp = _sympy()
    if isinstance(f, sp.Lambda) and len(f.variables) == 1 and isinstance(f.expr, sp.Function) \
            and f.expr.args == f.variables:
        return f.expr.func.__name__
    if isinstance(f, sp.Lambda):
        return None
    return getattr(f, "__name__", None)


@functools.lru_cache(maxsize=None)
def _printers():
    sp = _sympy()
    from sympy.printing.latex import LatexPrinter
    from sympy.printing.precedence import PRECEDENCE
    from sympy.printing.str import StrPrinter

    class Text(StrPrinter):
        def _print_HadamardProduct(self, e):
            return " ∘ ".join(self.parenthesize(a, PRECEDENCE["Mul"]) for a in e.args)

        def _print_HadamardPower(self, e):
            return f"{self.parenthesize(e.base, PRECEDENCE['Pow'])}^∘{self._print(e.exp)}"

        def _print_ElementwiseApplyFunction(self, e):
            name = _function_name(e.function) or self._print(e.function)
            return f"{name}.({self._print(e.expr)})"

        def _print_OneMatrix(self, e):
            return f"ones({self._print(e.rows)}, {self._print(e.cols)})"

        def _print_Trace(self, e):
            return f"tr({self._print(e.arg)})"

        def _print_Determinant(self, e):
            return f"det({self._print(e.arg)})"

    class Latex(LatexPrinter):
        def _print_ElementwiseApplyFunction(self, e):
            name = _function_name(e.function)
            head = (r"\operatorname{%s}" % name) if name else self._print(e.function)
            return r"%s_{\circ}\left(%s\right)" % (head, self._print(e.expr))

    del sp
    return Text(), Latex()


# --- derive ------------------------------------------------------------------------------------


class Derivation:
    """The VJP formula of a function, from the table's own rules.

    Attributes
    ----------
    expr : SymPy expression, or dict name -> expression
        The VJP (the gradient for a scalar function); a dict keyed by input name when
        several inputs are differentiated.
    unsimplified : same form as ``expr``
        What the rules built, before SymPy's simplification.
    rules : tuple of str
        The table ops whose VJP rules were used, in the order of the reverse walk.
    cotangent : SymPy MatrixSymbol or None
        ``G``, the output's cotangent (None for a scalar function: it is 1).
    """

    def __init__(self, fn, names, symbols, shapes, wrt, exprs, raw, rules, cotangent,
                 out_shape, dims):
        self.fn = fn
        self.names = names
        self.symbols = symbols
        self.shapes = shapes
        self.wrt = wrt
        self._exprs = exprs
        self._raw = raw
        self.rules = tuple(rules)
        self.cotangent = cotangent
        self.out_shape = out_shape
        self.dims = dims

    @property
    def expr(self):
        return self._exprs[self.wrt[0]] if len(self.wrt) == 1 else dict(self._exprs)

    @property
    def unsimplified(self):
        return self._raw[self.wrt[0]] if len(self.wrt) == 1 else dict(self._raw)

    def __getitem__(self, name):
        return self._exprs[name]

    def _head(self, name):
        return f"grad_{name}" if self.cotangent is None else f"vjp_{name}"

    def __str__(self):
        text, _ = _printers()
        return "\n".join(f"{self._head(n)} = {text.doprint(self._exprs[n])}" for n in self.wrt)

    def __repr__(self):
        return f"<Derivation {'; '.join(str(self).splitlines())}>"

    def latex(self):
        """The formula as LaTeX (``\\nabla_X = ...`` lines for several inputs)."""
        _, latex = _printers()
        if len(self.wrt) == 1:
            return latex.doprint(self._exprs[self.wrt[0]])
        return r" \\ ".join(rf"\nabla_{{{n}}} = {latex.doprint(self._exprs[n])}"
                            for n in self.wrt)

    def _sizes(self, n):
        sizes = {}
        for k, d in enumerate(self.dims):
            sizes[d] = n + k
        return sizes

    def check(self, n=3, seed=0, rtol=1e-6, atol=1e-8, fd=True):
        """Evaluate the formula with NumPy on random inputs (symbolic sizes -> ``n``, the
        next size symbol ``n + 1``, ...) and compare it with chainrule's numeric VJP
        (``chainrule.autograd.grad`` with the same cotangent) and, with ``fd``, with
        central finite differences of ``<G, f(x)>``. Inputs are well-conditioned: entries
        in [0.5, 1.5] plus ``n I`` on square matrices (so inverses, solves, logs and
        log-determinants are defined). Raises AssertionError with both values when they
        differ; returns the largest difference."""
        import chainrule

        sp = _sympy()
        rng = np.random.default_rng(seed)
        sizes = self._sizes(n)
        values = {}
        for name, shape in zip(self.names, self.shapes):
            concrete = tuple(int(sp.sympify(d).xreplace(sizes)) for d in shape)
            a = rng.uniform(0.5, 1.5, concrete)
            if a.ndim == 2 and a.shape[0] == a.shape[1]:
                a = a + a.shape[0] * np.eye(a.shape[0])
            values[name] = a
        tensors = [chainrule.tensor(values[nm], requires_grad=nm in self.wrt)
                   for nm in self.names]
        out = self.fn(*tensors)
        G = None
        env = {s.name: values[nm] for nm, s in zip(self.names, self.symbols)}
        if self.cotangent is not None:
            G = rng.standard_normal(np.shape(out._data))
            env[self.cotangent.name] = G
        targets = [t for nm, t in zip(self.names, tensors) if nm in self.wrt]
        numeric = chainrule.autograd.grad(
            out, targets, grad_outputs=None if G is None else chainrule.tensor(G),
            allow_unused=True)
        worst = 0.0
        for name, t, num in zip(self.wrt, targets, numeric):
            num = np.zeros(t.shape) if num is None else np.asarray(num._data)
            formula = np.asarray(evaluate(self._exprs[name], env, sizes), dtype=float)
            formula = np.broadcast_to(formula.reshape(num.shape) if formula.size == num.size
                                      else formula, num.shape)
            references = [("chainrule's numeric VJP", num)]
            if fd:
                references.append(("central finite differences",
                                   self._finite_differences(values, name, G)))
            for label, ref in references:
                tol = (rtol, atol) if label.startswith("chainrule") else (1e-4, 1e-6)
                if not np.allclose(formula, ref, rtol=tol[0], atol=tol[1]):
                    raise AssertionError(
                        f"chainrule.symbolic: the formula for {name} does not match "
                        f"{label} (n={n}, seed={seed}).\nformula: {self._exprs[name]}\n"
                        f"formula gives:\n{formula}\n{label} gives:\n{ref}")
                worst = max(worst, float(np.max(np.abs(formula - ref), initial=0.0)))
        return worst

    def _finite_differences(self, values, name, G, h=1e-6):
        import chainrule

        def f(vals):
            with chainrule.no_grad():
                y = np.asarray(self.fn(*[chainrule.tensor(vals[nm])
                                         for nm in self.names])._data)
            return float(np.sum(y)) if G is None else float(np.sum(G * y))

        x = values[name]
        grad = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            plus, minus = dict(values), dict(values)
            plus[name], minus[name] = x.copy(), x.copy()
            plus[name][idx] += h
            minus[name][idx] -= h
            grad[idx] = (f(plus) - f(minus)) / (2 * h)
        return grad


def _dim(d):
    sp = _sympy()
    if isinstance(d, str):
        return int(d) if d.isdigit() else sp.Symbol(d, integer=True, positive=True)
    if isinstance(d, numbers.Integral):
        return int(d)
    return sp.sympify(d)


def _simplify(e):
    """``e`` canonicalized by SymPy when that works and keeps its value (some of SymPy's
    matrix simplifications fail or change the meaning: then ``e`` is kept)."""
    sp = _sympy()
    try:
        out = e.doit()
    except Exception:  # noqa: BLE001 - SymPy's simplifiers raise many kinds of errors
        return e
    if getattr(out, "is_Matrix", False):
        try:
            expanded = sp.expand(out).doit()
            if sp.count_ops(expanded) <= sp.count_ops(out):
                out = expanded
        except Exception:  # noqa: BLE001
            pass
    else:
        try:
            out = sp.simplify(out)
        except Exception:  # noqa: BLE001
            pass
    return out


def _same_value(a, b, symbols, shapes, cotangent, out_shape, dims):
    """True when expressions ``a`` and ``b`` agree at a random point (or cannot be
    evaluated: then the simplification is kept only if it is structurally the same)."""
    sp = _sympy()
    rng = np.random.default_rng(12345)
    sizes = {d: 3 + k for k, d in enumerate(dims)}
    env = {}
    for s, shape in zip(symbols, shapes):
        concrete = tuple(int(sp.sympify(d).xreplace(sizes)) for d in shape)
        v = rng.uniform(0.5, 1.5, concrete)
        if v.ndim == 2 and v.shape[0] == v.shape[1]:
            v = v + v.shape[0] * np.eye(v.shape[0])
        env[s.name] = v
    if cotangent is not None:
        env[cotangent.name] = rng.standard_normal(
            tuple(int(sp.sympify(d).xreplace(sizes)) for d in cotangent.shape))
    try:
        va = np.asarray(evaluate(a, env, sizes), dtype=float)
        vb = np.asarray(evaluate(b, env, sizes), dtype=float)
    except Exception:  # noqa: BLE001
        return a == b
    return va.shape == vb.shape and np.allclose(va, vb, rtol=1e-9, atol=1e-12)


def derive(fn, *shapes_or_symbols, wrt=None, names=None):
    """The VJP formula of ``fn`` from the derivative table's own rules.

    Parameters
    ----------
    fn : callable
        A function of chainrule tensors (``lambda X: X @ X``); it is run once on random
        tensors while the ops it calls are recorded symbolically.
    *shapes_or_symbols : tuple or sympy.MatrixSymbol
        One per parameter of ``fn``: a shape such as ``(n, n)``, ``(3, 3)``, ``("n",)``
        (sizes are ints, SymPy symbols or names), or a MatrixSymbol (a one-column symbol is a
        vector).
    wrt : str or sequence of str, optional
        The parameters to differentiate (default: all); the others are constants.
    names : sequence of str, optional
        Names for the parameters (default: those of ``fn``'s signature).

    Returns
    -------
    Derivation
        ``.expr`` (a dict by name for several inputs), ``str()``, ``.latex()``, ``.rules``,
        ``.check()``.

    Raises
    ------
    NotImplementedError
        When an op has no symbolic form, or its rule uses an ``F`` name without one (the
        message names the op and the name).
    """
    sp = _sympy()
    import chainrule

    if names is None:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        names = [p.name for p in params]
    names = list(names)
    if len(names) != len(shapes_or_symbols):
        raise TypeError(f"derive: {len(names)} parameter(s) {names} but "
                        f"{len(shapes_or_symbols)} shape(s) or symbol(s)")
    wrt = list(names) if wrt is None else [wrt] if isinstance(wrt, str) else list(wrt)
    unknown = [w for w in wrt if w not in names]
    if unknown:
        raise ValueError(f"derive: wrt names {unknown} are not parameters {names}")
    symbols, shapes = [], []
    for name, s in zip(names, shapes_or_symbols):
        if isinstance(s, sp.MatrixSymbol):
            shape = (s.rows,) if s.cols == 1 else (s.rows, s.cols)
            symbols.append(s)
        else:
            shape = tuple(_dim(d) for d in ((s,) if isinstance(s, (int, str)) else s))
            if len(shape) > 2:
                raise ValueError(f"derive: {name} has shape {shape}; only scalars, vectors "
                                 "and matrices have a matrix-expression form")
            m = _mshape(shape) if shape else (1, 1)
            symbols.append(sp.MatrixSymbol(name, *m) if shape else sp.Symbol(name))
        shapes.append(tuple(shape))
    # Concrete sizes for the run: distinct, and distinct from the numeric sizes in use.
    dims = []
    for shape in shapes:
        for d in shape:
            if not isinstance(d, numbers.Integral) and d not in dims:
                dims.extend(sorted(d.free_symbols, key=str) if not d.is_Symbol else [d])
    dims = list(dict.fromkeys(dims))
    taken = {int(d) for shape in shapes for d in shape if isinstance(d, numbers.Integral)}
    sizes, size = {}, 4
    for d in dims:
        while size in taken:
            size += 1
        sizes[d] = size
        taken.add(size)
    dim_of = {v: k for k, v in sizes.items()}
    tracer = _Tracer(dim_of)
    rng = np.random.default_rng(0)
    tensors = []
    for name, sym, shape in zip(names, symbols, shapes):
        concrete = tuple(int(sp.sympify(d).xreplace(sizes)) for d in shape)
        a = rng.uniform(0.5, 1.5, concrete)
        if a.ndim == 2 and a.shape[0] == a.shape[1]:
            a = a + a.shape[0] * np.eye(a.shape[0])
        t = chainrule.tensor(a)
        tracer.sym[id(t)] = Sym(sym if shape else sym, shape)
        if name in wrt:
            tracer.depends.add(id(t))
        tensors.append(t)
    tracer.keep.append(tensors)
    with np.errstate(all="ignore"):
        result = _trace_run(fn, tensors, tracer)
    from ._tensor import Tensor

    if not isinstance(result, Tensor):
        raise TypeError(f"derive: fn must return a chainrule Tensor, got {type(result).__name__}")
    out = tracer.sym.get(id(result))
    taken_names = {s.name for s in symbols}
    cotangent = None
    if out is None:
        exprs = {w: _zero(shape) for w, shape in zip(names, shapes) if w in wrt}
        return Derivation(fn, names, symbols, shapes, wrt, exprs, dict(exprs), (), None,
                          (), dims)
    if _scalarlike(out.shape):
        seed = Sym(sp.Integer(1), out.shape, ())
    else:
        gname = next(c for c in ("G", "G_", "Gbar", "cotangent") if c not in taken_names)
        cotangent = sp.MatrixSymbol(gname, *_mshape(out.shape))
        seed = Sym(cotangent, out.shape)
    cot, used = _backward(tracer, result, seed)
    raw, exprs = {}, {}
    for name, t, shape in zip(names, tensors, shapes):
        if name not in wrt:
            continue
        g = cot.get(id(t))
        raw[name] = _zero(shape) if g is None else _full(_lift(g), shape)
        simple = _simplify(raw[name])
        ok = _same_value(raw[name], simple, symbols, shapes, cotangent, out.shape, dims)
        exprs[name] = simple if ok else raw[name]
    return Derivation(fn, names, symbols, shapes, wrt, exprs, raw, used, cotangent,
                      out.shape, dims)


def _zero(shape):
    sp = _sympy()
    m = _mshape(shape) if shape else None
    return sp.Integer(0) if m is None else sp.ZeroMatrix(*m)

