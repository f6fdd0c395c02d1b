"""Pytrees of tensors: nested tuples, lists and dicts, flattened to a list of leaves.

A rebuilt tree keeps its containers' types: namedtuples (and the named results of ops such
as ``linalg.slogdet``), OrderedDicts and other tuple, list or dict subclasses."""

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
        return leaves, (type(tree), (keys, specs))
    return [tree], None


def tree_unflatten(leaves, spec):
    """Inverse of :func:`tree_flatten`."""
    it = iter(leaves)
    return _build(it, spec)


def _build(it, spec):
    if spec is None:
        return next(it)
    kind, specs = spec
    if issubclass(kind, dict):
        keys, subs = specs
        out = {k: _build(it, s) for k, s in zip(keys, subs)}
        return out if kind is dict else _same_kind(kind, out, dict)
    items = [_build(it, s) for s in specs]
    if kind is tuple or kind is list:
        return tuple(items) if kind is tuple else items
    if hasattr(kind, "_make"):  # a namedtuple (linalg.slogdet's, max's results, ...)
        return kind._make(items)
    return _same_kind(kind, items, tuple if issubclass(kind, tuple) else list)


def _same_kind(kind, values, base):
    """``values`` rebuilt as the container type ``kind`` (an OrderedDict, a tuple or list
    subclass) where it can be built from them, else as the plain ``base``."""
    try:
        return kind(values)
    except TypeError:  # a constructor of another signature (defaultdict, ...)
        return base(values)

