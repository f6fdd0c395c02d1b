"""``chainrule.linalg``: linear algebra with tensor-level (matrix-form) derivative rules.

Every function here is batched over leading dimensions and works in float32 and float64.
Each primitive is declared in the derivative table like every other op, with its VJP in
matrix form and the paper it comes from (see each function's docstring).
"""

from ..ops.reduction import vector_norm
from . import decomp as _decomp
from . import eigen as _eig
from . import extras as _extras
from . import inverse as _inverse
from . import lu_family as _lu
from . import matrix_function as _matrix_function
from . import matrix_functions as _matrix_functions
from . import norms as _norms
from . import pseudoinverse as _pinv
from . import solves as _solve
from .decomp import *  # noqa: F401,F403
from .eigen import *  # noqa: F401,F403
from .extras import *  # noqa: F401,F403
from .inverse import *  # noqa: F401,F403
from .lu_family import *  # noqa: F401,F403
from .matrix_function import *  # noqa: F401,F403
from .matrix_functions import *  # noqa: F401,F403
from .norms import *  # noqa: F401,F403
from .pseudoinverse import *  # noqa: F401,F403
from .solves import *  # noqa: F401,F403

# one module per family of ops: inverse (inv, det, slogdet), solves (solve, triangular,
# Sylvester), pseudoinverse (pinv, lstsq), matrix_functions (matrix_exp, cross,
# multi_dot), decomp
# (cholesky, qr, eigh, svd), norms, lu (lu, lu_factor, lu_solve), extras (compositions:
# vecdot, vander, matrix_rank, the _ex variants, householder_product, tensorinv, ...)
__all__ = ["vector_norm", *_inverse.__all__, *_solve.__all__, *_pinv.__all__,
           *_matrix_functions.__all__, *_decomp.__all__, *_norms.__all__, *_lu.__all__,
           *_extras.__all__, *_eig.__all__, *_matrix_function.__all__]
