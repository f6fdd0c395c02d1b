"""Matrix decompositions (cholesky, qr, eigh, eigvalsh, svd, svdvals)."""

__all__ = []
