"""The primitives, by family. Importing this package fills the derivative table."""

from .._dispatch import name_errors as _name_errors  # noqa: E402
from .comparison import *  # noqa: F401,F403
from .einsum import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .matmul import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .reduction import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403

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
              "amax", "amin", "max", "min", "prod", "mean", "sum"):
    globals()[_name] = _name_errors(globals()[_name], _name)
del _name
