"""Samples for chainrule.linalg decompositions (see tests/samples.py)."""

SAMPLES = []
