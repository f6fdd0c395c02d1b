"""Samples for chainrule.linalg inverses and solves (see tests/samples.py)."""

SAMPLES = []
