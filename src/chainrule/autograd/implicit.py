"""Differentiating through solvers (implicit function theorem)."""
