"""``chainrule.utils``: ``utils.data`` (datasets and loaders, as ``torch.utils.data``) and
``utils.checkpoint`` (activation checkpointing's interface, as
``torch.utils.checkpoint``)."""

from . import checkpoint, data

__all__ = ["data", "checkpoint"]
