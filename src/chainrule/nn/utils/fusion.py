"""Folding an eval-mode BatchNorm into the preceding convolution or linear layer, as
``torch.nn.utils.fusion`` (torch/nn/utils/fusion.py, PyTorch 2.13): with
``s = bn_w / sqrt(running_var + eps)``, ``W' = W s`` (per output channel) and
``b' = (b - running_mean) s + bn_b``, so that ``layer'(x) == bn(layer(x))``."""

from __future__ import annotations

import copy

from ... import _creation
from .._module import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A new convolution (a deep copy of ``conv``) equal to ``bn(conv(x))`` in eval mode,
    as ``torch.nn.utils.fusion.fuse_conv_bn_eval`` (weights from
    :func:`fuse_conv_bn_weights`).

    Parameters
    ----------
    conv : Module
        A ``ConvNd`` (or ``ConvTransposeNd`` with ``transpose=True``) in eval mode.
    bn : Module
        A ``BatchNormNd`` in eval mode with running statistics, ``num_features`` the
        convolution's output channels.
    transpose : bool
        Whether the output channels are the weight's dim 1 (transposed convolutions).

    Returns
    -------
    Module

    Raises
    ------
    AssertionError
        Either module is in training mode, or ``bn`` has no running statistics.
    """
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused_conv = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused_conv.weight, fused_conv.bias = fuse_conv_bn_weights(
        fused_conv.weight, fused_conv.bias, bn.running_mean, bn.running_var, bn.eps,
        bn.weight, bn.bias, transpose)
    return fused_conv


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """The fused convolution parameters ``(W', b')``, as
    ``torch.nn.utils.fusion.fuse_conv_bn_weights``:
    ``W' = W * (bn_w / sqrt(bn_rv + bn_eps))`` broadcast along the output-channel dim (0, or
    1 when ``transpose``), ``b' = (conv_b - bn_rm) / sqrt(bn_rv + bn_eps) * bn_w + bn_b``,
    cast to the weight's (bias's) dtype.

    Parameters
    ----------
    conv_w : Tensor, shape ``(C_out, C_in/groups, *k)`` (``(C_in, C_out/groups, *k)``
        when ``transpose``)
    conv_b : Tensor of shape ``(C_out,)`` or None (zeros)
    bn_rm, bn_rv : Tensor, shape ``(C_out,)``
        Running mean and variance.
    bn_eps : float
    bn_w, bn_b : Tensor of shape ``(C_out,)`` or None (ones, zeros)
    transpose : bool

    Returns
    -------
    tuple of Parameter
        ``(W', b')``, ``requires_grad`` as ``conv_w`` and ``conv_b`` (True for a
        ``conv_b`` of None, whose zeros do not require grad: False).
    """
    conv_weight_dtype = conv_w.dtype
    conv_bias_dtype = conv_b.dtype if conv_b is not None else conv_weight_dtype
    if conv_b is None:
        conv_b = _creation.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = _creation.ones_like(bn_rm)
    if bn_b is None:
        bn_b = _creation.zeros_like(bn_rm)
    bn_var_rsqrt = (bn_rv + bn_eps).rsqrt()
    if transpose:
        shape = [1, -1] + [1] * (len(conv_w.shape) - 2)
    else:
        shape = [-1, 1] + [1] * (len(conv_w.shape) - 2)
    fused_w = (conv_w * (bn_w * bn_var_rsqrt).reshape(shape)).to(dtype=conv_weight_dtype)
    fused_b = ((conv_b - bn_rm) * bn_var_rsqrt * bn_w + bn_b).to(dtype=conv_bias_dtype)
    return (Parameter(fused_w, conv_w.requires_grad),
            Parameter(fused_b, conv_b.requires_grad))


def fuse_linear_bn_eval(linear, bn):
    """A new ``Linear`` (a deep copy of ``linear``) equal to ``bn(linear(x))`` in eval
    mode, as ``torch.nn.utils.fusion.fuse_linear_bn_eval`` (weights from
    :func:`fuse_linear_bn_weights`).

    Raises
    ------
    AssertionError
        Either module is in training mode; ``bn.num_features`` is neither
        ``linear.out_features`` nor 1; ``bn`` has no running statistics.
    """
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused_linear = copy.deepcopy(linear)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            "To fuse, linear.out_features == bn.num_features or bn.num_features == 1, "
            f"got linear.out_features={linear.out_features} and "
            f"bn.num_features={bn.num_features}")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused_linear.weight, fused_linear.bias = fuse_linear_bn_weights(
        fused_linear.weight, fused_linear.bias, bn.running_mean, bn.running_var, bn.eps,
        bn.weight, bn.bias)
    return fused_linear


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The fused linear parameters ``(W', b')``, as
    ``torch.nn.utils.fusion.fuse_linear_bn_weights``: with
    ``s = bn_w / sqrt(bn_rv + bn_eps)``, ``W' = W * s[:, None]``,
    ``b' = (linear_b - bn_rm) * s + bn_b``.

    Parameters
    ----------
    linear_w : Tensor, shape ``(out, in)``
    linear_b : Tensor of shape ``(out,)`` or None (zeros)
    bn_rm, bn_rv, bn_w, bn_b : Tensor, shape ``(out,)`` or ``(1,)``
    bn_eps : float

    Returns
    -------
    tuple of Parameter
        ``(W', b')``.
    """
    linear_weight_dtype = linear_w.dtype
    linear_bias_dtype = linear_b.dtype if linear_b is not None else linear_weight_dtype
    if linear_b is None:
        linear_b = _creation.zeros_like(bn_rm)
    bn_scale = bn_w * (bn_rv + bn_eps).rsqrt()
    fused_w = linear_w * bn_scale.unsqueeze(-1).to(dtype=linear_weight_dtype)
    fused_b = ((linear_b - bn_rm) * bn_scale + bn_b).to(dtype=linear_bias_dtype)
    return (Parameter(fused_w, linear_w.requires_grad),
            Parameter(fused_b, linear_b.requires_grad))
