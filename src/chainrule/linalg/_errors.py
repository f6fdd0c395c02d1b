"""The one error class of ``chainrule.linalg``."""

from __future__ import annotations

import numpy as np

__all__ = ["LinAlgError"]


class LinAlgError(np.linalg.LinAlgError, RuntimeError):
    """A decomposition failed on its input (e.g. cholesky of a matrix that is not positive
    definite). Both a ``numpy.linalg.LinAlgError`` (a ValueError) and a RuntimeError, like
    ``torch.linalg.LinAlgError``."""
