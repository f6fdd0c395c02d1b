"""``chainrule.utils``: ``utils.data`` (datasets and loaders, as ``torch.utils.data``) and
``utils.checkpoint`` (activation checkpointing's interface, as
``torch.utils.checkpoint``)."""

import sys as _sys

from . import checkpoint, data

# torch.utils.data is a package: ported code imports its submodules
# (``from torch.utils.data.dataset import random_split``); here they are all the one module
for _sub in ("dataset", "dataloader", "sampler", "distributed"):
    _sys.modules.setdefault(f"{data.__name__}.{_sub}", data)

__all__ = ["data", "checkpoint"]
