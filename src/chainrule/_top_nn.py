"""PyTorch's top-level spellings of ``nn.functional`` ops whose signatures are ATen's, not
``nn.functional``'s: ``torch.embedding(weight, indices)`` (arguments swapped),
``torch.batch_norm``/``instance_norm`` (weight and bias first, every argument required), and
the losses, whose ``reduction`` is ATen's integer (0 none, 1 mean, 2 sum) with no
``size_average``/``reduce``. Each calls ``chainrule.nn.functional``'s op.

The losses' default ``reduction`` is 0 (none): ATen's schemas say 1 (mean), but torch's
Python bindings give the unreduced loss when it is left out (torch 2.13:
``torch.kl_div(x, t).shape == x.shape``), and ported code gets what torch gives.
"""

from __future__ import annotations

from ._dispatch import name_errors
from .nn import functional as F

__all__ = ["embedding", "batch_norm", "instance_norm", "kl_div",
           "binary_cross_entropy_with_logits", "cosine_embedding_loss", "hinge_embedding_loss",
           "margin_ranking_loss", "triplet_margin_loss", "poisson_nll_loss", "ctc_loss"]

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(reduction, name):
    if isinstance(reduction, bool) or reduction not in _REDUCTIONS:
        raise ValueError(f"{name}: reduction must be 0 (none), 1 (mean) or 2 (sum), got "
                         f"{reduction!r}")
    return _REDUCTIONS[reduction]


@name_errors
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """``nn.functional.embedding(indices, weight)``: the rows of ``weight`` at ``indices``;
    a ``padding_idx`` of -1 (or any negative) means none, as ATen's."""
    return F.embedding(indices, weight, padding_idx=padding_idx if padding_idx >= 0 else None,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


@name_errors
def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    """``nn.functional.batch_norm`` in ATen's argument order (``cudnn_enabled`` ignored)."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                        eps)


@name_errors
def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    """``nn.functional.instance_norm`` in ATen's argument order (``cudnn_enabled`` ignored)."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


@name_errors
def kl_div(input, target, reduction=0, *, log_target=False):
    """The pointwise KL divergence ``t (log t - x)`` reduced by ATen's ``reduction`` (0,
    the default: none; 1: the mean over every element, without ``nn.functional``'s warning
    about it; 2: the sum)."""
    how = _reduction(reduction, "kl_div")
    loss = F.kl_div(input, target, reduction="none", log_target=log_target)
    return loss if how == "none" else getattr(loss, how)()


@name_errors
def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    """``nn.functional.binary_cross_entropy_with_logits`` with ATen's arguments."""
    return F.binary_cross_entropy_with_logits(
        input, target, weight, reduction=_reduction(reduction, "binary_cross_entropy_with_logits"),
        pos_weight=pos_weight)


@name_errors
def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction(reduction, "cosine_embedding_loss"))


@name_errors
def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    return F.hinge_embedding_loss(input, target, margin,
                                  reduction=_reduction(reduction, "hinge_embedding_loss"))


@name_errors
def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction(reduction, "margin_ranking_loss"))


@name_errors
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                        reduction=0):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction, "triplet_margin_loss"))


@name_errors
def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """``nn.functional.poisson_nll_loss`` with ATen's arguments (all required)."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction, "poisson_nll_loss"))


@name_errors
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0,
             zero_infinity=False):
    """``nn.functional.ctc_loss`` with ATen's integer ``reduction`` (0, the default: one loss
    per batch entry; 1: each loss divided by its target length, then the mean)."""
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction(reduction, "ctc_loss"), zero_infinity)


for _fn in (cosine_embedding_loss, hinge_embedding_loss, margin_ranking_loss,
            triplet_margin_loss):
    _fn.__doc__ = (f"``nn.functional.{_fn.__name__}`` with ATen's integer ``reduction`` (0 "
                   "none, the default; 1 mean; 2 sum).")
del _fn
