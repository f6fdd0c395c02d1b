"""``torch.nn.parallel``'s wrappers on one device: chainrule computes on one CPU (NumPy) or
one GPU (CuPy), and scales out with Dask rather than process groups.

``DataParallel(module)`` runs ``module`` as it is (what PyTorch's does when there is one
device or none); ``DistributedDataParallel`` raises, since there is no ``torch.distributed``
process group to synchronise gradients with (training would silently differ).
"""

from __future__ import annotations

from ._module import Module

__all__ = ["DataParallel", "DistributedDataParallel"]


class DataParallel(Module):
    """``module`` on one device, as ``torch.nn.DataParallel`` with a single device: the
    forward is the module's, and ``.module`` (the wrapped module, as in PyTorch) holds the
    parameters (so a state_dict has ``module.`` prefixes, as PyTorch's).

    Raises ValueError for ``device_ids`` naming more than one device."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError(f"DataParallel: chainrule runs on one device; got device_ids="
                             f"{list(device_ids)}")
        self.module = module
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class DistributedDataParallel(Module):
    """Not available: raises RuntimeError (chainrule has no ``torch.distributed``)."""

    def __init__(self, module, *args, **kwargs):
        raise RuntimeError("DistributedDataParallel: chainrule has no torch.distributed process "
                           "groups; train on one device, or scale the data with Dask")
