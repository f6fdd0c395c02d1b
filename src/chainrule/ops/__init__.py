"""The primitives, by family. Importing this package fills the derivative table."""

import numpy as _np

from .. import _creation as _c
from .. import _ns
from .._dispatch import name_errors as _name_errors  # noqa: E402
from ..backend import backend_of as _backend_of
from . import special_fns
from .comparison import *  # noqa: F401,F403
from .einsum import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .elementwise_more import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .matmul import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .numpy_names import *  # noqa: F401,F403
from .rearrange import *  # noqa: F401,F403
from .reduction import *  # noqa: F401,F403
from .scans import *  # noqa: F401,F403
from .scatter import *  # noqa: F401,F403
from .searching import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .special_fns import *  # noqa: F401,F403
from .torch_more import *  # noqa: F401,F403
from .torch_names import *  # noqa: F401,F403

# Errors raised while these functions prepare their arguments name the op (the kernels'
# errors are named by the dispatcher). Not the hot elementwise functions and reductions.
for _name in ("reshape", "view", "flatten", "transpose", "swapaxes", "t", "permute", "movedim",
              "squeeze", "unsqueeze", "expand", "broadcast_to", "cat", "concat",
              "concatenate", "stack", "split", "chunk", "unbind", "take_along_dim",
              "index_put", "tril", "triu", "diagonal", "diag", "diagonal_scatter", "trace",
              "outer", "inner", "dot", "mv", "bmm", "einsum", "clamp", "clip", "where",
              "isclose", "allclose", "equal", "dist", "vector_norm", "norm", "cross_entropy",
              "softmax", "log_softmax", "logsumexp", "to_dtype", "lt", "le", "gt", "ge", "eq",
              "ne", "isnan", "isfinite", "logical_not", "var", "std", "argmax", "argmin",
              "amax", "amin", "max", "min", "prod", "mean", "sum", "flip", "fliplr", "flipud",
              "roll", "rot90", "narrow", "select", "unflatten", "tensor_split", "hstack",
              "vstack", "column_stack", "meshgrid", "tile", "repeat", "swapdims",
              "moveaxis", "histc", "histogram", "histogramdd"):
    globals()[_name] = _name_errors(globals()[_name], _name)
# PyTorch's aliases (torch.greater is torch.gt; torch.igamma is special.gammainc, which is
# differentiable in its second argument only), their errors naming the alias
for _alias, _name in (("greater", "gt"), ("greater_equal", "ge"), ("less", "lt"),
                      ("less_equal", "le"), ("not_equal", "ne"),
                      ("igamma", "special_fns.gammainc"), ("igammac", "special_fns.gammaincc")):
    _fn = special_fns.__dict__[_name[12:]] if _name.startswith("special_fns.") else \
        globals()[_name]
    globals()[_alias] = _name_errors(getattr(_fn, "__wrapped__", _fn), _alias)
del _name, _alias, _fn


def _prod_others(x, dim):
    """prod_{j != i} x_j differentiably: replace x_i by 1 in the i-th of n copies of the
    reduced entries and take the product of each copy (O(n^2), exact with zeros)."""
    shape = x.shape
    dims = tuple(range(len(shape))) if dim is None else dim
    lead = [d for d in range(len(shape)) if d not in dims]
    moved = permute(x, lead + list(dims))  # noqa: F405
    moved_shape = moved.shape
    flat = reshape(moved, tuple(shape[d] for d in lead) + (-1,))  # noqa: F405
    n = flat.shape[-1]
    copies = expand(unsqueeze(flat, -2), flat.shape[:-1] + (n, n))  # noqa: F405
    b = _backend_of(x._data)
    eye = _c.as_tensor(_ns.raw_for(b).eye(n, n, dtype=b.xp.bool))  # on x's backend
    others = where(eye, 1.0, copies).prod(dim=-1)  # noqa: F405
    inverse = _np.argsort(lead + list(dims))
    return permute(reshape(others, moved_shape), tuple(inverse))  # noqa: F405


# The differentiable versions of the rule namespace's NumPy names (chainrule._ns), so that
# a backward pass run on Tensors is itself recorded (create_graph=True).
_ns.register_differentiable(
    where=where, exp=exp, log=log, sin=sin, cos=cos, abs=abs, sign=sign,  # noqa: F405
    sigmoid=sigmoid,  # noqa: F405
    zeros_like=lambda *a, **k: _c.zeros_like(*a, **k),
    ones_like=lambda *a, **k: _c.ones_like(*a, **k),
    zeros=lambda shape, dtype: _c.zeros(shape, dtype=dtype),
    ones=lambda shape, dtype: _c.ones(shape, dtype=dtype),
    eye=lambda n, m=None, dtype=None: _c.eye(n, m, dtype=dtype),
    cast=to_dtype,  # noqa: F405
    reshape=reshape, expand=broadcast_to, unsqueeze=unsqueeze,  # noqa: F405
    squeeze=lambda x, dim: squeeze(x, dim), transpose=transpose,  # noqa: F405
    permute=permute, mT=lambda x: transpose(x, -1, -2),  # noqa: F405
    sum=sum, mean=mean, prod_others=_prod_others,  # noqa: F405
    maybe_any=lambda mask: _ns.raw_for(_backend_of(mask._data)).maybe_any(mask._data),
    onehot=lambda index, n, dim, dtype: _c.as_tensor(
        _ns.raw_for(_backend_of(index._data)).onehot(index._data, n, dim, dtype)),
    matmul=matmul, trace=trace, diag=diag, diagonal=diagonal,  # noqa: F405
    diagonal_scatter=diagonal_scatter,  # noqa: F405
    tril=tril, triu=triu, einsum=einsum,  # noqa: F405
    cat=cat, stack=stack,  # noqa: F405
)
