"""Inverses, determinants and solves."""

__all__ = []
