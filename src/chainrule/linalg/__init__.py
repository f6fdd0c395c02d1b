"""``chainrule.linalg``: linear algebra with tensor-level (matrix-form) derivative rules.

Every function here is batched over leading dimensions and works in float32 and float64.
Each primitive is declared in the derivative table like every other op, with its VJP in
matrix form and the paper it comes from (see each function's docstring).
"""

from ..ops.reduction import vector_norm
from . import decomp, inverse, norms
from .decomp import *  # noqa: F401,F403
from .inverse import *  # noqa: F401,F403
from .norms import *  # noqa: F401,F403

__all__ = ["vector_norm", *decomp.__all__,
           *(n for n in inverse.__all__ if n not in decomp.__all__), *norms.__all__]
