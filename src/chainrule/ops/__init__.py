"""The primitives, by family. Importing this package fills the derivative table."""

from .comparison import *  # noqa: F401,F403
from .einsum import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .matmul import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .reduction import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
