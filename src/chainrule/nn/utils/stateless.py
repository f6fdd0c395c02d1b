"""``nn.utils.stateless``: PyTorch's older home of ``functional_call`` (now
``torch.func.functional_call``); the same function."""

from .._functional_call import functional_call

__all__ = ["functional_call"]
