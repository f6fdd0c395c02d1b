"""Pytrees of tensors: nested tuples, lists and dicts, flattened to a list of leaves."""

from __future__ import annotations


def tree_flatten(tree):
    """``(leaves, spec)``: the leaves in order, and what ``tree_unflatten`` needs."""
    if isinstance(tree, (tuple, list)):
        leaves, specs = [], []
        for item in tree:
            sub, spec = tree_flatten(item)
            leaves += sub
            specs.append(spec)
        return leaves, (type(tree), specs)
    if isinstance(tree, dict):
        keys = list(tree)
        leaves, specs = [], []
        for k in keys:
            sub, spec = tree_flatten(tree[k])
            leaves += sub
            specs.append(spec)
        return leaves, (dict, (keys, specs))
    return [tree], None


def tree_unflatten(leaves, spec):
    """Inverse of :func:`tree_flatten`."""
    it = iter(leaves)
    return _build(it, spec)


def _build(it, spec):
    if spec is None:
        return next(it)
    kind, specs = spec
    if kind is dict:
        keys, subs = specs
        return {k: _build(it, s) for k, s in zip(keys, subs)}
    items = [_build(it, s) for s in specs]
    return tuple(items) if kind is tuple else items

