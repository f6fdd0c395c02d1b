"""``einsum`` with its own rule.

For ``out = einsum("A,B,C->O", a, b, c)`` the cotangent of ``a`` is one einsum of the output
cotangent with the other operands: ``grad_a = einsum("O,B,C->A", g, b, c)``. Two details
make that exact for every equation:

- a letter repeated inside ``A`` (a diagonal, as in ``"ii->"``) is renamed, and an identity
  matrix joins the two names, so the result lands on the diagonal only;
- a letter of ``A`` that appears in no other term (summed away in the forward pass, as in
  ``"ij->i"``) is joined to a vector of ones, which broadcasts the cotangent along it.
"""

from __future__ import annotations

import string

import numpy as np

from .._dispatch import ShapeError, apply
from .._table import defop, documented
from .._tensor import Tensor
from ..backend import xp_kernel

__all__ = ["einsum"]


def parse(equation, ndims):
    """Explicit form of an einsum equation: (terms, output) with ``...`` spelled out."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise ShapeError(f"einsum: equation {equation!r} has {len(terms)} operand terms but "
                         f"{len(ndims)} operands were given")
    free = [c for c in string.ascii_letters if c not in eq]
    ell = 0
    for term, nd in zip(terms, ndims):
        if "..." in term:
            ell = max(ell, nd - (len(term) - 3))
    ell_letters = "".join(free[:ell])
    explicit = []
    for term, nd in zip(terms, ndims):
        if "..." in term:
            k = nd - (len(term) - 3)
            term = term.replace("...", ell_letters[ell - k:] if k else "")
        if len(term) != nd:
            raise ShapeError(f"einsum: term {term!r} of {equation!r} does not match an operand "
                             f"with {nd} dimensions")
        explicit.append(term)
    if arrow:
        out = rhs.replace("...", ell_letters)
    else:
        counts = {}
        for c in "".join(explicit):
            counts[c] = counts.get(c, 0) + 1
        out = ell_letters + "".join(
            sorted(c for c, n in counts.items() if n == 1 and c not in ell_letters))
    return tuple(explicit), out


def _einsum_vjp(F, g, needs, operands, parsed):
    terms, out = parsed
    used = set("".join(terms)) | set(out)
    fresh = iter(c for c in string.ascii_letters if c not in used)
    sizes = {}  # a letter's broadcast size: a size-1 dim broadcasts against the others
    for term, x in zip(terms, operands):
        for c, n in zip(term, x.shape):
            if sizes.get(c, 1) == 1:  # (== is structural for symbolic sizes)
                sizes[c] = n
    grads = []
    for i, need in enumerate(needs):
        if not need:
            grads.append(None)
            continue
        subs = [out] + [t for j, t in enumerate(terms) if j != i]
        ops = [g] + [x for j, x in enumerate(operands) if j != i]
        target = ""
        for pos, c in enumerate(terms[i]):
            if c in terms[i][:pos]:  # repeated letter: a diagonal
                c2 = next(fresh)
                subs.append(c + c2)
                ops.append(F.eye(sizes[c], dtype=g.dtype))
                c = c2
            target += c
        present = set("".join(subs))
        for c in target:
            if c not in present:  # summed away in forward: broadcast back with ones
                subs.append(c)
                ops.append(F.ones((sizes[c],), g.dtype))
                present.add(c)
        gi = F.einsum(",".join(subs) + "->" + target, *ops)
        shape = tuple(operands[i].shape)
        if tuple(gi.shape) != shape:  # a letter broadcast between operands (sizes n and 1)
            from .._engine import sum_to

            gi = sum_to(gi, shape, F)  # this operand's size-1 dims: summed
            if tuple(gi.shape) != shape:  # the others' size-1 dims: the same for every entry
                gi = F.expand(gi, shape)
        grads.append(gi)
    return grads


def _einsum_jvp(F, ts, operands, equation):
    """Multilinear: the tangent is the sum over operands of the einsum with that operand
    replaced by its tangent."""
    out = None
    for i, t in enumerate(ts):
        if t is not None:
            term = F.einsum(equation, *operands[:i], t, *operands[i + 1:])
            out = term if out is None else out + term
    return out


@xp_kernel
def _forward(xp, xs, equation, parsed):
    out = xp.einsum(equation, *xs)
    # NumPy returns a view for a pure relabelling ('ij->ji', 'ii->i'); einsum's result is a
    # new tensor (PyTorch's too), so writing into it must not change an operand
    return out.copy() if getattr(out, "base", None) is not None else out


EINSUM = defop(
    "einsum", _forward, ("operands",), attrs=("equation", "parsed"), variadic=True,
    vjp={"operands": _einsum_vjp}, jvp={"operands": _einsum_jvp},
    math={"operands": "grad_A = einsum('O,B,C->A', grad, b, c) (identity matrices for repeated "
                      "letters, ones for letters summed away)",
          "out": "dy = sum_i einsum(..., dx_i, ...)"},
    source="einsum is multilinear: each operand's VJP is the contraction of the cotangent with "
           "the other operands (cf. Giles 2008, the matrix product; opt_einsum/JAX einsum "
           "transpose)",
)


@documented(EINSUM)
def einsum(equation, *operands):
    """Einstein summation, as ``numpy.einsum``/``torch.einsum``: ``einsum("ij,jk->ik", a, b)``.
    Operands may also be given as one list. Implicit output (no ``->``) and ``...`` work."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    ndims = [x.ndim if isinstance(x, Tensor) else np.ndim(x) for x in operands]
    return apply(EINSUM, list(operands), (equation, parse(equation, ndims)))
