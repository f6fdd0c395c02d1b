"""``chainrule.nn.functional``: PyTorch's ``torch.nn.functional``, built from chainrule ops.

Every function here is a composition of public chainrule operations (``matmul``, ``where``,
``exp``, ``erf``, ``softplus``, ``log_softmax``, indexing, reductions, ...), so it has no
derivative rule of its own: its gradients, at every order and in forward mode, are those of
the ops it is made of. Signatures, defaults, the ``reduction=`` argument (``'mean'``,
``'sum'``, ``'none'``) and the error messages follow ``torch.nn.functional`` 2.x; messages
start with the function's name.

Dtypes follow the inputs (float32 in, float32 out); class-index targets are integer arrays or
tensors; boolean masks are bool.
"""

from __future__ import annotations

import functools
import inspect
import math
import warnings

import numpy as np

from .. import _creation, _inplace
from .. import ops as _ops
from .._batched import Batched, in_user_vmap, in_vmap_evaluation
from .._state import STATE, no_grad
from .._tensor import Tensor, wrap
from ..autograd.function import Function, once_differentiable
from ..backend import backend_of, beside, dtype_kind, numpy_dtype
from ..ops._dims import number_arg
from ..ops.nn import binary_cross_entropy_terms

__all__ = [
    "linear", "bilinear", "relu", "relu6", "leaky_relu", "elu", "selu", "celu", "gelu", "silu",
    "mish", "softplus", "softsign", "hardtanh", "hardswish", "hardsigmoid", "logsigmoid",
    "tanhshrink", "sigmoid", "tanh", "softmax", "log_softmax", "softmin", "normalize",
    "cosine_similarity", "pairwise_distance", "pdist", "dropout", "layer_norm", "group_norm",
    "batch_norm", "embedding", "one_hot", "pad", "mse_loss", "l1_loss", "smooth_l1_loss",
    "huber_loss", "nll_loss", "cross_entropy", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss", "gaussian_nll_loss",
    "margin_ranking_loss", "hinge_embedding_loss", "triplet_margin_loss",
    "cosine_embedding_loss", "scaled_dot_product_attention",
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


# --- helpers -----------------------------------------------------------------------------

def _t(x):
    """A Tensor for ``x`` (Tensors pass through; arrays and numbers are wrapped, no copy)."""
    if isinstance(x, Tensor):
        return x
    return wrap(np.asarray(x))


def _shape(x):
    return tuple(x.shape) if isinstance(x, Tensor) else np.shape(x)


def _size(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _legacy_reduction(size_average, reduce, reduction):
    """PyTorch's ``_Reduction.legacy_get_string`` for the deprecated arguments."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  "reduction='mean' (or 'sum', 'none') instead.", UserWarning, stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


def _check_reduction(reduction, fname):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{fname}: {reduction} is not a valid value for reduction")


def _reduce(loss, reduction, fname):
    _check_reduction(reduction, fname)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _same_size_warning(input, target, fname):
    """PyTorch's warning for a target whose size differs from the input's; raises when the
    two do not broadcast."""
    si, st = _shape(input), _shape(target)
    if si == st:
        return
    warnings.warn(f"{fname}: Using a target size ({_size(st)}) that is different to the input "
                  f"size ({_size(si)}). This will likely lead to incorrect results due to "
                  "broadcasting. Please ensure they have the same size.", UserWarning,
                  stacklevel=3)
    try:
        np.broadcast_shapes(si, st)
    except ValueError:
        raise RuntimeError(f"{fname}: the size of input {_size(si)} does not broadcast with the "
                           f"size of target {_size(st)}") from None


def _hardtanh(x, lo, hi):
    # values clamped to [lo, hi] (NaN stays NaN); the gradient passes strictly inside only (as
    # PyTorch's vectorised hardtanh_backward: zero at the boundaries and at NaN)
    return _ops.where((x > lo) & (x < hi), x, _ops.clamp(x, lo, hi).detach())


def _float_dtype_of(x):
    """``x``'s dtype if floating, else the default float dtype, as a NumPy dtype (for the
    host-side masks and weights that then move beside ``x``)."""
    return numpy_dtype(x.dtype if dtype_kind(x.dtype) == "f" else
                       _creation.get_default_dtype())


def _not_a_tensor(fname, name, position, value):
    """PyTorch's TypeError for ``value`` (None) passed where a Tensor is required."""
    return TypeError(f"{fname}(): argument '{name}' (position {position}) must be Tensor, not "
                     f"{type(value).__name__}")


def _tensor_args(*names, fname=None, labels=None):
    """Wrap a function so that None for one of its Tensor parameters ``names`` raises
    PyTorch's ``TypeError: <fname>(): argument '<name>' (position <k>) must be Tensor, not
    NoneType`` (instead of an error from deep inside, or a result computed from a 0-d object
    array). ``labels`` maps a parameter to the (name, position) PyTorch's message gives it
    where that differs from the Python signature's."""
    def decorate(fn):
        params = list(inspect.signature(fn).parameters)
        spots = tuple((params.index(n), n, *(labels or {}).get(n, (n, params.index(n) + 1)))
                      for n in names)
        name = fname or fn.__name__

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            for i, n, label, position in spots:
                if (args[i] if i < len(args) else kwargs.get(n, 0)) is None:
                    raise _not_a_tensor(name, label, position, None)
            return fn(*args, **kwargs)

        return wrapper

    return decorate


# --- linear layers -----------------------------------------------------------------------

def linear(input, weight, bias=None):
    """``input @ weight.T + bias``.

    Shapes: ``input`` (\\*, in_features), ``weight`` (out_features, in_features) or
    (in_features,), ``bias`` (out_features,) or None; output (\\*, out_features).

    Raises
    ------
    RuntimeError
        ``linear: mat1 and mat2 shapes cannot be multiplied (AxB and CxD)`` when the last
        dim of ``input`` is not ``in_features`` (A = product of the leading dims of input).
    """
    si, sw = _shape(input), _shape(weight)
    k_w = sw[-1] if len(sw) else None
    if not si or si[-1] != k_w:
        for position, (name, value) in enumerate((("input", input), ("weight", weight)), 1):
            if value is None:
                raise _not_a_tensor("linear", name, position, value)
        rows = math.prod(si[:-1]) if len(si) > 1 else 1
        cols = si[-1] if si else 1
        w_t = (sw[1], sw[0]) if len(sw) == 2 else (sw[0] if sw else 1, 1)
        raise RuntimeError(f"linear: mat1 and mat2 shapes cannot be multiplied ({rows}x{cols} "
                           f"and {w_t[0]}x{w_t[1]})")
    w = _t(weight)
    out = _ops.matmul(input, w.t() if w.ndim == 2 else w)
    if bias is not None:
        out = out + bias
    return out


def bilinear(input1, input2, weight, bias=None):
    """``y_k = x1^T A_k x2 + b_k``: ``input1`` (\\*, in1), ``input2`` (\\*, in2), ``weight``
    (out, in1, in2), ``bias`` (out,) or None; output (\\*, out).

    Raises RuntimeError when the feature sizes do not match ``weight``'s or the leading dims
    of the inputs differ."""
    s1, s2, sw = _shape(input1), _shape(input2), _shape(weight)
    if len(sw) != 3 or s1[-1:] != sw[1:2] or s2[-1:] != sw[2:3] or s1[:-1] != s2[:-1]:
        in1 = sw[1] if len(sw) > 1 else "?"
        in2 = sw[2] if len(sw) > 2 else "?"
        raise RuntimeError(f"bilinear: input1 {_size(s1)} and input2 {_size(s2)} do not fit "
                           f"weight {_size(sw)} (expected input1 [*, {in1}], input2 [*, {in2}] "
                           "with the same *)")
    out = _ops.einsum("...i,oij,...j->...o", input1, weight, input2)
    if bias is not None:
        out = out + bias
    return out


# --- activations -------------------------------------------------------------------------

def relu(input, inplace=False):
    """``max(x, 0)`` (gradient 0 at 0)."""
    return _ops.relu(input)


def relu6(input, inplace=False):
    """``min(max(x, 0), 6)``."""
    return _hardtanh(input, 0.0, 6.0)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``x`` clamped to ``[min_val, max_val]`` (gradient 0 outside the open interval).

    Raises ValueError when ``min_val > max_val``."""
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val "
                         f"({max_val})")
    return _hardtanh(input, float(min_val), float(max_val))


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``x`` where ``x > 0``, ``negative_slope * x`` elsewhere."""
    return _ops.where(input > 0, input, input * negative_slope)


def _expm1_neg(x, alpha=1.0):
    # expm1(x / alpha) of the negative part: no overflow (nor NaN gradient) from the unused
    # branch; a NaN passes (value and gradient NaN, as PyTorch's vectorised elu_backward)
    neg = _ops.where(x > 0, 0.0, x)
    return _ops.expm1(neg if alpha == 1.0 else neg / alpha)


def elu(input, alpha=1.0, inplace=False):
    """``x`` where ``x > 0``, ``alpha (exp(x) - 1)`` elsewhere."""
    return _ops.where(input > 0, input, alpha * _expm1_neg(input))


def selu(input, inplace=False):
    """``scale * elu(x, alpha)`` with PyTorch's (Klambauer et al.) constants."""
    return _SELU_SCALE * elu(input, _SELU_ALPHA)


def celu(input, alpha=1.0, inplace=False):
    """``max(0, x) + min(0, alpha (exp(x / alpha) - 1))``.

    Raises ValueError for ``alpha == 0``."""
    if alpha == 0:
        raise ValueError("celu: alpha cannot be 0 (ZeroDivisionError in x / alpha)")
    return _ops.where(input > 0, input, alpha * _expm1_neg(input, alpha))


def gelu(input, approximate="none"):
    """``x Phi(x)`` (``approximate='none'``, with ``erf``) or its ``'tanh'`` approximation
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.

    Raises ValueError for another ``approximate``."""
    if approximate == "none":
        return 0.5 * input * (1.0 + _ops.erf(input * (1.0 / math.sqrt(2.0))))
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (input + 0.044715 * input * input * input)
        return 0.5 * input * (1.0 + _ops.tanh(inner))
    raise ValueError(f"gelu: approximate argument must be either none or tanh, got "
                     f"{approximate!r}")


def silu(input, inplace=False):
    """``x sigmoid(x)`` (swish)."""
    return input * _ops.sigmoid(input)


def mish(input, inplace=False):
    """``x tanh(softplus(x))``."""
    return input * _ops.tanh(_ops.softplus(input))


def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta x)) / beta``, linear (``x``) where ``beta x > threshold``."""
    return _ops.softplus(input, beta, threshold)


def softsign(input):
    """``x / (1 + |x|)``."""
    return input / (1.0 + _ops.abs(input))


def hardswish(input, inplace=False):
    """``x relu6(x + 3) / 6``."""
    return input * _hardtanh(input + 3.0, 0.0, 6.0) / 6.0


def hardsigmoid(input, inplace=False):
    """``relu6(x + 3) / 6``."""
    return _hardtanh(input + 3.0, 0.0, 6.0) / 6.0


def logsigmoid(input):
    """``log(sigmoid(x)) = -softplus(-x)``, computed stably for large ``|x|``."""
    return -_ops.softplus(-input)


def tanhshrink(input):
    """``x - tanh(x)``."""
    return input - _ops.tanh(input)


def sigmoid(input):
    """``1 / (1 + exp(-x))``."""
    return _ops.sigmoid(input)


def tanh(input):
    """``tanh(x)``."""
    return _ops.tanh(input)


def _softmax_dim(ndim, fname):
    warnings.warn(f"Implicit dimension choice for {fname} has been deprecated. Change the call "
                  "to include dim=X as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_prep(input, dim, dtype, fname):
    input = _t(input)
    if dim is None:
        dim = _softmax_dim(input.ndim, fname)
    if dtype is not None:
        input = input.to(dtype)
    return input, dim


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x), dim)`` (stable). ``dtype``: cast ``input`` first. ``dim=None``
    picks PyTorch's legacy implicit dim (0 for 0-, 1- and 3-D inputs, else 1) with a
    warning."""
    input, dim = _softmax_prep(input, dim, dtype, "softmax")
    return _ops.softmax(input, dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``x - logsumexp(x, dim)`` (stable); ``dim`` and ``dtype`` as :func:`softmax`."""
    input, dim = _softmax_prep(input, dim, dtype, "log_softmax")
    return _ops.log_softmax(input, dim)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-x, dim)``; ``dim`` and ``dtype`` as :func:`softmax`."""
    input, dim = _softmax_prep(input, dim, dtype, "softmin")
    return _ops.softmax(-input, dim)


# --- distances ---------------------------------------------------------------------------

def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``x / max(||x||_p, eps)`` along ``dim`` (``out`` is not supported: pass None)."""
    if out is not None:
        raise NotImplementedError("normalize: out= is not supported in chainrule")
    norm = _ops.vector_norm(input, p, dim=dim, keepdim=True)
    return input / _ops.clamp(norm, min=eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``sum(x1 x2, dim) / (max(||x1||, eps) max(||x2||, eps))``, the inputs broadcast
    together first.

    Raises RuntimeError when the shapes do not broadcast."""
    s1, s2 = _shape(x1), _shape(x2)
    try:
        shape = np.broadcast_shapes(s1, s2)
    except ValueError:
        raise RuntimeError(f"cosine_similarity: x1 of shape {_size(s1)} and x2 of shape "
                           f"{_size(s2)} do not broadcast") from None
    x1 = _ops.broadcast_to(x1, shape)
    x2 = _ops.broadcast_to(x2, shape)
    n1 = _ops.clamp(_ops.vector_norm(x1, 2, dim=dim, keepdim=True), min=eps)
    n2 = _ops.clamp(_ops.vector_norm(x2, 2, dim=dim, keepdim=True), min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim=dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` along the last dim."""
    return _ops.vector_norm(x1 - x2 + eps, p, dim=-1, keepdim=keepdim)


def pdist(input, p=2):
    """The ``N (N - 1) / 2`` distances ``||x_i - x_j||_p`` (i < j, row-major) between the
    rows of an (N, M) input.

    Raises RuntimeError for an input that is not 2-D."""
    s = _shape(input)
    if len(s) != 2:
        raise RuntimeError(f"pdist: only supports 2D tensors, got: {len(s)}D (shape {_size(s)})")
    i, j = np.triu_indices(s[0], 1)
    return _ops.vector_norm(input[i] - input[j], p, dim=-1)


# --- dropout and normalisation -----------------------------------------------------------

def _dropout_input(input, fname):
    """``input`` as a Tensor, checked before a dropout draws its mask: a failing call must
    leave the random state as it was (``dropout(None)`` raises, drawing nothing)."""
    x = _t(input)
    if dtype_kind(x.dtype) not in "biufc":
        raise TypeError(f"{fname}: input must be a Tensor, got {type(input).__name__}")
    return x


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each entry with probability ``p`` and scale the rest by ``1 / (1 - p)`` when
    ``training``; the identity otherwise. The mask comes from chainrule's generator, so
    ``chainrule.manual_seed`` makes it reproducible.

    Raises ValueError for ``p`` outside [0, 1]."""
    p = _check_p(p, "dropout")
    if not training or p == 0.0:
        return input
    input = _dropout_input(input, "dropout")
    if p == 1.0:
        return input * 0.0
    keep = _creation.default_generator.random(tuple(input.shape)) >= p
    scale = (keep / (1.0 - p)).astype(_float_dtype_of(input))
    return input * _beside(_t(input), scale)


def _check_affine(name, t, n, fname):
    if t is not None and _shape(t) != (n,) and _shape(t) != ():
        raise RuntimeError(f"{fname}: expected {name} of shape [{n}], got {_size(_shape(t))}")


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the last ``len(normalized_shape)`` dims (biased variance), then
    ``* weight + bias`` (both of shape ``normalized_shape``, optional).

    Raises RuntimeError when the input's trailing dims are not ``normalized_shape``."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    s = _shape(input)
    k = len(ns)
    if k == 0 or tuple(s[len(s) - k:]) != ns or len(s) < k:
        raise RuntimeError(f"layer_norm: Given normalized_shape={list(ns)}, expected input with "
                           f"shape [*, {', '.join(map(str, ns))}], but got input of size"
                           f"{_size(s)}")
    dims = tuple(range(len(s) - k, len(s)))
    mean = input.mean(dim=dims, keepdim=True)
    centered = input - mean
    var = (centered * centered).mean(dim=dims, keepdim=True)
    out = centered / _ops.sqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise (N, C, \\*) inputs over groups of ``C / num_groups`` channels (and all of
    \\*), then ``* weight + bias`` per channel (shape (C,), optional).

    Raises RuntimeError when C is not divisible by ``num_groups``, or ``weight`` / ``bias``
    is not of shape (C,); ValueError when each group holds a single value
    (``N * C / num_groups * prod(*) == 1``), as PyTorch does."""
    s = _shape(input)
    if not isinstance(num_groups, int):
        raise TypeError(f"group_norm: num_groups must be an int, got {type(num_groups).__name__}")
    if num_groups <= 0:
        raise RuntimeError(f"group_norm: num_groups must be a positive int, got {num_groups!r} "
                           f"(input of shape {_size(s)})")
    if len(s) < 2 or s[1] % num_groups:
        raise RuntimeError(f"group_norm: Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {_size(s)} and "
                           f"num_groups={num_groups}")
    n, c = s[0], s[1]
    if n * c // num_groups * math.prod(s[2:]) == 1:  # as torch: one value per group
        raise ValueError(f"group_norm: Expected more than 1 value per channel when training, "
                         f"got input size {[n * c // num_groups, num_groups, *s[2:]]}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and _shape(t) != (c,):
            raise RuntimeError(f"group_norm: Expected {name} to be a vector of size equal to "
                               f"the number of channels in input, but got {name} of shape "
                               f"{_size(_shape(t))} and input of shape {_size(s)}")
    x = input.reshape(n, num_groups, -1)
    mean = x.mean(dim=-1, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dim=-1, keepdim=True)
    out = (centered / _ops.sqrt(var + eps)).reshape(*s)
    bshape = (1, c) + (1,) * (len(s) - 2)
    if weight is not None:
        out = out * _t(weight).reshape(*bshape)
    if bias is not None:
        out = out + _t(bias).reshape(*bshape)
    return out


def _refuse_running_stats_under_vmap(input, running_mean, running_var):
    """Under ``vmap``, batch norm in training mode would update unbatched running stats in
    place with each sample's statistics: PyTorch raises, and so does chainrule (in its
    batched evaluation when the input is batched, and always when vmap evaluates once per
    sample, where a batched input cannot be told apart). Once per sample, stats that are
    views are taken for a sample's rows of mapped (stacked) buffers, which PyTorch updates
    (``stack_module_state`` with ``functional_call``); a view from outside ``func`` still
    raises, by vmap's write journal."""
    if not in_user_vmap():
        return
    batched = isinstance(input._data, Batched)
    per_sample = not in_vmap_evaluation()
    stats_batched = all(t is None or isinstance(t._data, Batched) or
                        (per_sample and t._base is not None)
                        for t in (running_mean, running_var))
    if (batched or not in_vmap_evaluation()) and not stats_batched:
        raise RuntimeError(
            "batch_norm: Batch norm got a batched tensor as input while the running_mean or "
            "running_var, which will be updated in place, were not batched. If you are using "
            "a module and do not need eval mode, please set `track_running_stats` to be "
            "False (or use chainrule.func.replace_all_batch_norm_modules_)")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Batch normalisation of (N, C) or (N, C, \\*) inputs, per channel C.

    With ``training=True`` the batch's mean and biased variance normalise, and the running
    statistics (when given, shape (C,)) are updated in place without gradient:
    ``running = (1 - momentum) running + momentum stat``, with the *unbiased* batch variance
    for ``running_var``, as in PyTorch. With ``training=False`` the running statistics
    normalise.

    Raises
    ------
    ValueError
        Training with a single value per channel.
    RuntimeError
        ``training=False`` without running statistics, or statistics of the wrong shape.
    """
    s = _shape(input)
    if len(s) < 2 and not math.prod(s) == 0:  # (an empty input gives an empty output)
        raise ValueError(f"batch_norm: expected a 2D or higher input (N, C, *), got {_size(s)}")
    if math.prod(s) == 0:
        return input * 1.0
    c = s[1]
    dims = (0,) + tuple(range(2, len(s)))
    bshape = (1, c) + (1,) * (len(s) - 2)
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is not None and _shape(t) != (c,):
            raise RuntimeError(f"batch_norm: {name} should contain {c} elements not "
                               f"{math.prod(_shape(t))}")
    _check_affine("weight", weight, c, "batch_norm")
    _check_affine("bias", bias, c, "batch_norm")
    if training:
        count = math.prod(s) // c
        if count <= 1:
            raise ValueError(f"batch_norm: Expected more than 1 value per channel when training, "
                             f"got input size {_size(s)}")
        mean = input.mean(dim=dims, keepdim=True)
        centered = input - mean
        var = (centered * centered).mean(dim=dims, keepdim=True)
        if running_mean is not None or running_var is not None:
            _refuse_running_stats_under_vmap(input, running_mean, running_var)
            with no_grad():
                if running_mean is not None:
                    new = (1 - momentum) * running_mean.detach() + \
                        momentum * mean.detach().reshape(c)
                    running_mean.copy_(new.to(running_mean.dtype))
                if running_var is not None:
                    unbiased = var.detach().reshape(c) * (count / (count - 1))
                    new = (1 - momentum) * running_var.detach() + momentum * unbiased
                    running_var.copy_(new.to(running_var.dtype))
        out = centered / _ops.sqrt(var + eps)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("batch_norm: running_mean and running_var must be defined in "
                               "evaluation mode (training=False)")
        rm = _t(running_mean).reshape(*bshape)
        rv = _t(running_var).reshape(*bshape)
        out = (input - rm) / _ops.sqrt(rv + eps)
    if weight is not None:
        out = out * _t(weight).reshape(*bshape)
    if bias is not None:
        out = out + _t(bias).reshape(*bshape)
    return out


# --- embeddings, one-hot, padding --------------------------------------------------------

def _index_array(x, fname, what="input"):
    if isinstance(x, Tensor) and isinstance(x._data, Batched):
        # inside vmap: the tensor of a batch of indices stays a tensor (see _gather_classes)
        if x._data.dtype.kind not in "iu":
            raise RuntimeError(f"{fname}: expected {what} of an integer dtype (Long or Int), "
                               f"got {x._data.dtype}")
        return x
    a = x.numpy() if isinstance(x, Tensor) else np.asarray(x)
    if a.dtype.kind not in "iu":
        raise RuntimeError(f"{fname}: expected {what} of an integer dtype (Long or Int), got "
                           f"{a.dtype}")
    return a


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` (num_embeddings, embedding_dim) picked by the integer ``input``
    (any shape); output (\\*, embedding_dim). Rows at ``padding_idx`` receive no gradient.
    ``max_norm``: the picked rows of ``weight`` whose ``norm_type`` norm exceeds it are
    rescaled in place (without gradient) to norm ``max_norm``, as in PyTorch.

    Raises
    ------
    IndexError
        An index outside ``[0, num_embeddings)``.
    NotImplementedError
        ``sparse``.

    ``scale_grad_by_freq``: each picked row's gradient is divided by the number of times
    ``input`` picks it, as PyTorch's.
    """
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported")
    idx = _index_array(input, "embedding")
    n = _shape(weight)[0]
    padding_idx = _checked_rows(idx, n, padding_idx, "embedding",
                                "embedding: Padding_idx must be within num_embeddings")
    if max_norm is not None:
        rows = np.unique(idx)
        with no_grad():
            w = weight._data
            if w.__class__ is np.ndarray:
                norms = np.linalg.norm(w[rows], ord=norm_type, axis=-1)
                scale = np.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
                w[rows] = w[rows] * scale[:, None].astype(w.dtype)
            else:  # another backend's (a GPU's) rows: rescaled there
                picked = weight.detach()[_beside(weight, rows)]
                norms = _ops.vector_norm(picked, norm_type, -1)
                scale = _ops.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
                w[beside(rows, w)] = (picked * scale[:, None])._data
            weight._vc[0] += 1
    out = weight[idx]
    scale = keep = None
    if padding_idx is not None and (idx == padding_idx).any():
        scale = (idx != padding_idx)[..., None].astype(numpy_dtype(out.dtype))
    if scale_grad_by_freq and idx.size:
        # each row's gradient divided by how often the input picks it; the value unchanged
        _, inverse, counts = np.unique(idx, return_inverse=True, return_counts=True)
        freq = (1.0 / counts[inverse.reshape(idx.shape)])[..., None].astype(
            numpy_dtype(out.dtype))
        keep = np.ones_like(freq) if scale is None else scale
        scale = freq if scale is None else scale * freq
    if scale is not None and (out.requires_grad or STATE.dual_level):
        out = _ScaleRowGrads.apply(out, _beside(out, scale),
                                   None if keep is None else _beside(out, keep))
    return out


def _checked_rows(idx, n, padding_idx, name, padding_message):
    """IndexError naming ``name`` for an index outside ``[0, n)``; ``padding_idx`` made
    non-negative (AssertionError with ``padding_message`` outside ``[-n, n)``, as PyTorch)."""
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError(f"{name}: index out of range in self (indices in "
                         f"[{idx.min()}, {idx.max()}], weight has {n} rows)")
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise AssertionError(padding_message)
        padding_idx %= n
    return padding_idx


class _CTCLoss(Function):
    """CTC's per-sample negative log-likelihoods (computed by the forward-backward recursion
    in NumPy) with their gradient ``G`` with respect to ``log_probs`` (T, N, C), as
    PyTorch's ``ctc_loss_backward`` (Graves et al., 2006, eq. 16, for log-probabilities):
    ``grad = g_n G[:, n, :]``. Once differentiable, and no forward mode (PyTorch has
    neither): ``G`` is that of the recursion at these log_probs, so it cannot be
    differentiated again, and it is the derivative of the loss only along log_softmax
    outputs, so it is no JVP for other tangents."""

    @staticmethod
    def forward(ctx, log_probs, losses, G):
        ctx.G = G
        return losses.clone()

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        return grad.reshape(1, -1, 1) * ctx.G, None, None


class _ScaleRowGrads(Function):
    """The identity on embedding's picked rows whose backward multiplies the cotangent by
    ``scale`` (0 on padding rows, ``1 / count`` with scale_grad_by_freq), as PyTorch's
    embedding_backward; the tangent passes unchanged, as PyTorch's forward-mode rule for
    embedding is the plain gather of the weight's tangent. With ``keep`` (scale_grad_by_freq)
    that backward is :class:`_ScaledCotangent`."""

    generate_vmap_rule = True

    @staticmethod
    def forward(rows, scale, keep):
        return rows.clone()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[1], inputs[2])

    @staticmethod
    def backward(ctx, grad):
        scale, keep = ctx.saved_tensors
        if keep is None:
            return grad * scale, None, None
        return _ScaledCotangent.apply(grad, scale, keep), None, None

    @staticmethod
    def jvp(ctx, rows_t, scale_t, keep_t):
        return rows_t


class _ScaledCotangent(Function):
    """``grad * scale`` (embedding's backward with scale_grad_by_freq), whose own VJP is by
    ``keep`` alone (the padding mask), as PyTorch's embedding_dense_double_backward: the
    counts are divided again where the second pass goes back through the embedding, and
    dividing here too put them in second derivatives twice. Its JVP keeps ``scale`` (the
    embedding's tangent is the plain gather, so they are divided only here)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(grad, scale, keep):
        return grad * scale

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[1], inputs[2])

    @staticmethod
    def backward(ctx, v):
        scale, keep = ctx.saved_tensors
        return v * keep, None, None

    @staticmethod
    def jvp(ctx, grad_t, scale_t, keep_t):
        scale, keep = ctx.saved_tensors
        return grad_t * scale


def one_hot(tensor, num_classes=-1):
    """int64 one-hot encoding of an integer tensor: shape (\\*, num_classes)
    (``num_classes=-1``: one more than the largest value). Not differentiable.

    Raises RuntimeError for negative values or values >= ``num_classes``."""
    a = _index_array(tensor, "one_hot", "tensor")
    if num_classes == -1:
        if a.size == 0:
            raise RuntimeError("one_hot: Can not infer total number of classes from empty "
                               "tensor.")
        num_classes = int(a.max()) + 1
    if a.size and a.min() < 0:
        raise RuntimeError("one_hot: Class values must be non-negative.")
    if a.size and a.max() >= num_classes:
        raise RuntimeError(f"one_hot: Class values must be smaller than num_classes "
                           f"(got {int(a.max())} with num_classes={num_classes}).")
    out = (a[..., None] == np.arange(num_classes)).astype(np.int64)
    return _beside(tensor, out) if isinstance(tensor, Tensor) else wrap(out)


def pad(input, pad, mode="constant", value=None):
    """Pad (or, with negative sizes in ``'constant'`` mode, crop) ``input``.

    ``pad`` lists ``(left, right)`` pairs from the *last* dim backwards, as PyTorch:
    ``(1, 2)`` pads the last dim, ``(1, 2, 3, 4)`` the last two. Modes: ``'constant'``
    (``value``, default 0), ``'reflect'`` (mirror without the edge, pads < the dim's
    size), ``'replicate'`` (repeat the edge), ``'circular'`` (wrap around, pads <= size).
    Non-constant modes accept any number of padded dims here (PyTorch limits them to the
    trailing 1-3 dims of a batched input).

    Raises
    ------
    ValueError
        An odd-length ``pad``, one longer than twice the input's dims, or an unknown mode.
    RuntimeError
        Reflect/circular padding too large for the dim, or pads that leave nothing.
    """
    pad = tuple(int(v) for v in pad)
    s = _shape(input)
    if len(pad) % 2:
        raise ValueError(f"pad: Padding length must be divisible by 2, got {len(pad)}")
    if len(pad) // 2 > len(s):
        raise ValueError(f"pad: Padding length should be less than or equal to two times the "
                         f"input dimension but got padding length {len(pad)} and input of "
                         f"dimension {len(s)}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise ValueError(f"pad: unsupported padding mode {mode!r} (expected 'constant', "
                         "'reflect', 'replicate' or 'circular')")
    if mode != "constant" and value not in (None, 0, 0.0):
        raise ValueError(f"pad: Padding mode \"{mode}\" doesn't take in value argument")
    out = _t(input)
    for k in range(len(pad) // 2):
        d = len(s) - 1 - k
        left, right = pad[2 * k], pad[2 * k + 1]
        if left == 0 and right == 0:
            continue
        n = out.shape[d]
        if mode == "constant":
            if left < 0:
                out = _ops.narrow(out, d, -left, out.shape[d] + left)
                left = 0
            if right < 0:
                out = _ops.narrow(out, d, 0, out.shape[d] + right)
                right = 0
            parts = []
            fill = 0.0 if value is None else value
            for size in (left, right):
                shape = list(out.shape)
                shape[d] = size
                parts.append(_creation.full(tuple(shape), fill, dtype=out.dtype,
                                             device=out.device))
            out = _ops.cat([parts[0], out, parts[1]], d)
            continue
        if n + left + right < 0:
            raise RuntimeError(f"pad: padding ({left}, {right}) at dimension {d} of input "
                               f"{_size(s)} leaves an output of size {n + left + right}")
        pos = np.arange(-left, n + right)  # a negative pad crops (as PyTorch's)
        if mode == "reflect":
            if left >= n or right >= n:
                raise RuntimeError(f"pad: Argument #4: Padding size should be less than the "
                                   f"corresponding input dimension, but got: padding ({left}, "
                                   f"{right}) at dimension {d} of input {_size(s)}")
            pos = np.abs(pos)
            pos = np.where(pos >= n, 2 * (n - 1) - pos, pos)
        elif mode == "replicate":
            pos = np.clip(pos, 0, n - 1)
        else:
            if left < 0 or right < 0:  # PyTorch crops first, then wraps what is left
                out = _ops.narrow(out, d, max(-left, 0), n + min(left, 0) + min(right, 0))
                n, left, right = out.shape[d], max(left, 0), max(right, 0)
                pos = np.arange(-left, n + right)
            if left > n or right > n:
                raise RuntimeError(f"pad: Padding value causes wrapping around more than once "
                                   f"(padding ({left}, {right}) at dimension {d} of input "
                                   f"{_size(s)})")
            pos = pos % n
        out = out[(slice(None),) * d + (pos,)]
    if out is input:  # a new tensor, as PyTorch's, even for zero padding
        return _ops.clone(out)
    return out.contiguous()  # row-major, as PyTorch's


# --- regression losses -------------------------------------------------------------------

def _weighted(loss, weight, reduction, fname):
    if weight is None:
        return _reduce(loss, reduction, fname)
    if _shape(weight) != tuple(loss.shape):
        raise ValueError(f"{fname}: Weights and input must have the same size (weight "
                         f"{_size(_shape(weight))}, input {_size(loss.shape)})")
    _check_reduction(reduction, fname)
    loss = loss * weight
    if reduction == "mean":
        return loss.sum() / _t(weight).sum()
    return loss.sum() if reduction == "sum" else loss


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """``(input - target)^2``, reduced. A target of another shape is broadcast with a
    warning, as in PyTorch; ``weight`` (input's shape) weights each entry ('mean' divides by
    ``sum(weight)``).

    Raises RuntimeError when input and target do not broadcast, ValueError for an unknown
    reduction or a weight of the wrong shape."""
    _same_size_warning(input, target, "mse_loss")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    d = input - target
    return _weighted(d * d, weight, reduction, "mse_loss")


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """``|input - target|``, reduced (shapes and errors as :func:`mse_loss`)."""
    _same_size_warning(input, target, "l1_loss")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _weighted(_ops.abs(input - target), weight, reduction, "l1_loss")


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 d^2 / beta`` where ``|d| < beta``, ``|d| - 0.5 beta`` elsewhere
    (``d = input - target``; ``beta = 0`` gives the L1 loss).

    Raises ValueError for a negative ``beta``."""
    _same_size_warning(input, target, "smooth_l1_loss")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: smooth_l1_loss does not support negative values for "
                         f"beta, got {beta}")
    d = input - target
    a = _ops.abs(d)
    if beta == 0:
        return _reduce(a, reduction, "smooth_l1_loss")
    loss = _ops.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta)
    return _reduce(loss, reduction, "smooth_l1_loss")


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 d^2`` where ``|d| < delta``, ``delta (|d| - 0.5 delta)`` elsewhere.

    Raises RuntimeError for ``delta <= 0`` (as PyTorch)."""
    _same_size_warning(input, target, "huber_loss")
    if delta <= 0:
        raise RuntimeError(f"huber_loss: huber_loss does not support non-positive values for "
                           f"delta, got {delta}")
    d = input - target
    a = _ops.abs(d)
    loss = _ops.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta))
    return _weighted(loss, weight, reduction, "huber_loss")


# --- classification losses ---------------------------------------------------------------

def _class_shapes(x_shape, t_shape, fname):
    """Check a class-index target's shape against (N, C, d...) or (C,) input."""
    if len(x_shape) == 0:
        raise ValueError(f"{fname}: input must have at least 1 dimension (classes), got a 0-D "
                         "input")
    if len(x_shape) == 1:  # (C,): a 0-d target, or one of shape (1,) as PyTorch accepts
        if len(t_shape) > 1:
            raise RuntimeError(f"{fname}: 0D or 1D target tensor expected, multi-target not "
                               "supported")
        if len(t_shape) == 1 and t_shape[0] != 1:
            raise ValueError(f"{fname}: For 1D input, 1D target must have size 1, but got "
                             f"target size: {t_shape[0]}")
        return
    expected = (x_shape[0],) + tuple(x_shape[2:])
    if tuple(t_shape) != expected:
        if len(x_shape) >= 2 and len(t_shape) >= 1 and t_shape[0] != x_shape[0]:
            raise ValueError(f"{fname}: Expected input batch_size ({x_shape[0]}) to match "
                             f"target batch_size ({t_shape[0]}) (input {_size(x_shape)}, "
                             f"target {_size(t_shape)})")
        raise RuntimeError(f"{fname}: expected a class-index target of shape "
                           f"{_size(expected)} for input of shape {_size(x_shape)}, got "
                           f"target of shape {_size(t_shape)}")


def _class_last(x):
    """(N, C, d...) -> (N, d..., C); (C,) unchanged."""
    return x if x.ndim == 1 else _ops.movedim(x, 1, -1)


def _check_classes(t, c, ignore_index, fname):
    """Class indices ``t`` (an int ndarray) in ``[0, c)`` or ``ignore_index``; the mask of
    the ignored ones."""
    ignored = t == ignore_index
    bad = (~ignored) & ((t < 0) | (t >= c))
    if bad.any():
        raise IndexError(f"{fname}: Target {int(t[bad].flat[0])} is out of bounds (classes "
                         f"[0, {c}))")
    return ignored


def _gather_batched_classes(logp, t, weight, ignore_index, fname):
    """``_gather_classes`` inside vmap, for ``t`` a tensor of a batch of class indices: the
    pick is ``where(one_hot, logp, 0)`` summed over the classes, elementwise ops that run on
    the whole batch (the bounds are checked on every sample's indices at once)."""
    c = logp.shape[0 if logp.ndim == 1 else 1]
    _check_classes(t._data.data, c, ignore_index, fname)
    onehot = _ops.unsqueeze(t, -1) == wrap(np.arange(c))
    last = _class_last(logp)
    picked = _ops.where(onehot, last, 0.0).sum(-1)
    counted = (t != ignore_index).to(logp.dtype)
    wt = counted if weight is None else \
        _ops.where(onehot, _t(weight), 0.0).sum(-1) * counted
    return -picked * wt, wt


def _gather_classes(logp, t, weight, ignore_index, fname):
    """Per-sample ``-w[t] logp[t]`` and ``w[t]`` (0 where ignored), for class indices ``t``
    (an int ndarray; inside vmap, a tensor of a batch of them) and log-probabilities
    ``logp`` (Tensor, classes along dim 1 or 0)."""
    if isinstance(t, Tensor):
        return _gather_batched_classes(logp, t, weight, ignore_index, fname)
    ignored = _check_classes(t, logp.shape[0 if logp.ndim == 1 else 1], ignore_index, fname)
    safe = np.where(ignored, 0, t).astype(np.int64)
    last = _class_last(logp)
    picked = _ops.take_along_dim(last, wrap(safe[..., None]), dim=-1)[..., 0]
    if weight is None:
        wt = _beside(logp, (~ignored).astype(numpy_dtype(logp.dtype)))
    else:
        wt = _t(weight)[safe] * _beside(logp, (~ignored).astype(numpy_dtype(logp.dtype)))
    return -picked * wt, wt


def _beside(x, array):
    """NumPy ``array`` as a tensor on ``x``'s device (a GPU's: class indices and weights
    are checked on the host, then meet ``x`` there)."""
    return wrap(beside(array, x._data))


def _counted_mean(loss, w):
    """``loss.sum() / w.sum()``, the 'mean' of the class losses. When nothing is counted
    (NumPy data) it is NaN, as PyTorch's, yet with zero gradients as PyTorch's backward
    (which scales only the counted entries) instead of ``0 * inf`` NaNs."""
    total = w.sum()
    d = total._data
    if d.__class__ in (np.ndarray, np.float64, np.float32) and np.ndim(d) == 0:
        return loss.sum() * 0.0 + math.nan if d == 0 else loss.sum() / total
    # another backend's data: the same without reading the total back to the host
    none = total == 0
    return _ops.where(none, math.nan, loss.sum() / _ops.where(none, 1.0, total))


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log-likelihood of log-probabilities ``input`` (N, C), (C,) or
    (N, C, d1, ...) at class indices ``target`` ((N,), (), (N, d1, ...)):
    ``-weight[t] input[n, t]``; entries with ``target == ignore_index`` count for nothing.
    'mean' divides by the sum of the weights of the counted entries.

    Raises
    ------
    ValueError
        Target batch size differs from the input's.
    RuntimeError
        Another target shape mismatch, or a weight not of shape (C,).
    IndexError
        A target outside ``[0, C)`` (other than ``ignore_index``).
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    ignore_index = number_arg(ignore_index, "nll_loss", "ignore_index")
    _check_reduction(reduction, "nll_loss")
    x = _t(input)
    t = _index_array(target, "nll_loss", "target")
    _class_shapes(tuple(x.shape), t.shape, "nll_loss")
    if x.ndim == 1 and t.ndim == 1:
        t = t.reshape(())  # a (1,) target of a (C,) input is its 0-d target
    c = x.shape[0 if x.ndim == 1 else 1]
    if weight is not None and _shape(weight) != (c,):
        raise RuntimeError(f"nll_loss: weight tensor should be defined either for all {c} "
                           f"classes or no classes but got weight tensor of shape: "
                           f"{_size(_shape(weight))}")
    loss, w = _gather_classes(x, t, weight, ignore_index, "nll_loss")
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return _counted_mean(loss, w)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Softmax cross-entropy of logits ``input`` ((N, C), (C,) or (N, C, d1, ...)).

    ``target`` is either class indices (integer, the input's shape without the class dim;
    ``ignore_index`` entries count for nothing) or class probabilities (float, the input's
    shape). ``weight`` (C,) rescales classes; ``label_smoothing`` in [0, 1] mixes the target
    with the uniform distribution. Formulas as ``torch.nn.functional.cross_entropy``
    ('mean' over class indices divides by the summed weights of the counted entries; over
    probabilities by the number of samples).

    Raises
    ------
    ValueError
        Target batch size differs, an unknown reduction.
    RuntimeError
        Another target-shape mismatch, a bad weight shape, ``ignore_index`` with probability
        targets, or ``label_smoothing`` outside [0, 1].
    IndexError
        A class index out of range.
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    ignore_index = number_arg(ignore_index, "cross_entropy", "ignore_index")
    _check_reduction(reduction, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing}")
    x = _t(input)
    if x.ndim == 0:
        raise ValueError("cross_entropy: input must have at least 1 dimension (classes), got a "
                         "0-D input")
    cdim = 0 if x.ndim == 1 else 1
    c = x.shape[cdim]
    if weight is not None and _shape(weight) != (c,):
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {c} "
                           f"classes or no classes but got weight tensor of shape: "
                           f"{_size(_shape(weight))}")
    tdata = target._data if isinstance(target, Tensor) else np.asarray(target)
    if dtype_kind(tdata.dtype) in "iu":
        t = _index_array(target, "cross_entropy", "target")  # a tensor inside vmap
        _class_shapes(tuple(x.shape), t.shape, "cross_entropy")
        if x.ndim == 1 and t.ndim == 1:
            t = t.reshape(())  # a (1,) target of a (C,) input is its 0-d target
        if (weight is None and label_smoothing == 0.0 and x.ndim >= 2
                and not isinstance(t, Tensor) and not (t == ignore_index).any()):
            return _ops.cross_entropy(x, _beside(x, t), reduction=reduction)  # fused
        logp = _ops.log_softmax(x, cdim)
        nll, w = _gather_classes(logp, t, weight, ignore_index, "cross_entropy")
        nll_red = nll if reduction == "none" else (nll.sum() if reduction == "sum"
                                                   else _counted_mean(nll, w))
        if label_smoothing == 0.0:
            return nll_red
        counted = (t != ignore_index).to(x.dtype) if isinstance(t, Tensor) else \
            _beside(x, (t != ignore_index).astype(numpy_dtype(x.dtype)))
        if weight is None:
            smooth = -logp.sum(dim=cdim) * counted
        else:
            wshape = (c,) if x.ndim == 1 else (1, c) + (1,) * (x.ndim - 2)
            smooth = -(logp * _t(weight).reshape(*wshape)).sum(dim=cdim) * counted
        if reduction == "mean":
            smooth = _counted_mean(smooth, w if weight is not None else counted)
        elif reduction == "sum":
            smooth = smooth.sum()
        return (1 - label_smoothing) * nll_red + smooth * (label_smoothing / c)
    # probability targets
    if tuple(tdata.shape) != tuple(x.shape):
        raise RuntimeError(f"cross_entropy: probability target of shape {_size(tdata.shape)} "
                           f"does not match input of shape {_size(x.shape)} (class-index "
                           f"targets are integer, of shape {_size(x.shape[:1] + x.shape[2:])})")
    if ignore_index >= 0:
        raise RuntimeError("cross_entropy: ignore_index is not supported for floating point "
                           "target")
    tt = _t(target)
    if tt.dtype != x.dtype:
        tt = tt.to(x.dtype)
    if weight is None and label_smoothing == 0.0 and x.ndim >= 2:
        return _ops.cross_entropy(x, tt, reduction=reduction)
    logp = _ops.log_softmax(x, cdim)
    if label_smoothing > 0:
        tt = tt * (1 - label_smoothing) + label_smoothing / c
    if weight is not None:
        wshape = (c,) if x.ndim == 1 else (1, c) + (1,) * (x.ndim - 2)
        logp = logp * _t(weight).reshape(*wshape)
    per = -(logp * tt).sum(dim=cdim)
    if reduction == "mean":
        return per.sum() / (math.prod(x.shape) // c)
    return per.sum() if reduction == "sum" else per


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """``-w (t log x + (1 - t) log(1 - x))`` for probabilities ``input`` in [0, 1] (the logs
    clamped at -100, as PyTorch); ``weight`` broadcasts to the input.

    Raises ValueError when target and input shapes differ, RuntimeError for input values
    outside [0, 1]."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    si, st = _shape(input), _shape(target)
    if si != st:
        raise ValueError(f"binary_cross_entropy: Using a target size ({_size(st)}) that is "
                         f"different to the input size ({_size(si)}) is deprecated. Please "
                         "ensure they have the same size.")
    xd = input._data if isinstance(input, Tensor) else np.asarray(input)
    # checked on NumPy data (other backends' data stays where it is: a lazy Dask array is
    # not computed here)
    if xd.__class__ is np.ndarray and xd.size and not (np.min(xd) >= 0 and np.max(xd) <= 1):
        raise RuntimeError("binary_cross_entropy: all elements of input should be between 0 "
                           "and 1")
    with np.errstate(divide="ignore"):  # log(0) = -inf, clamped to -100 as PyTorch
        loss = binary_cross_entropy_terms(input, target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy")


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """``-w (p t log sigmoid(x) + (1 - t) log(1 - sigmoid(x)))`` from logits, stably
    (``p`` = ``pos_weight``, broadcast along the last dim; ``w`` = ``weight``).

    Raises ValueError when target and input shapes differ."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    si, st = _shape(input), _shape(target)
    if si != st:
        raise ValueError(f"binary_cross_entropy_with_logits: Target size ({_size(st)}) must be "
                         f"the same as input size ({_size(si)})")
    log_sig_neg = _ops.softplus(-input)  # -log(sigmoid(x))
    if pos_weight is not None:
        log_weight = (pos_weight - 1.0) * target + 1.0
        loss = (1.0 - target) * input + log_weight * log_sig_neg
    else:
        loss = (1.0 - target) * input + log_sig_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Kullback-Leibler divergence ``t (log t - x)`` pointwise (``x`` = log-probabilities;
    ``0`` where ``t = 0``), or ``exp(t) (t - x)`` with ``log_target``. Reductions also
    include ``'batchmean'`` (the sum divided by the batch size, the KL divergence's own
    definition); ``'mean'`` warns as in PyTorch.

    Raises ValueError for an unknown reduction."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction == "mean":
        warnings.warn("kl_div: reduction: 'mean' divides the total loss by both the batch size "
                      "and the support size.'batchmean' divides only by the batch size, and "
                      "aligns with the KL div math definition.'mean' will be changed to behave "
                      "the same as 'batchmean' in the next major release.", UserWarning,
                      stacklevel=2)
    if log_target:
        loss = _ops.exp(target) * (target - input)
    else:
        t = _t(target)
        # PyTorch's xlogy(t, t): 0 at t = 0 (there a NaN gradient for t, as PyTorch's), NaN
        # for a negative target
        loss = _ops.xlogy(t, t) - t * input
    if reduction == "batchmean":
        return loss.sum() / (loss.shape[0] if loss.ndim else 1)
    return _reduce(loss, reduction, "kl_div")


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Poisson negative log-likelihood: ``exp(x) - t x`` (``log_input``) or
    ``x - t log(x + eps)``; ``full`` adds Stirling's ``t log t - t + 0.5 log(2 pi t)``
    where ``t > 1``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_input:
        loss = _ops.exp(input) - target * input
    else:
        loss = input - target * _ops.log(input + eps)
    if full:
        t = _t(target)
        big = t > 1
        ts = _ops.where(big, t, 1.0)
        stirling = ts * _ops.log(ts) - ts + 0.5 * _ops.log(2 * math.pi * ts)
        loss = loss + _ops.where(big, stirling, 0.0)
    return _reduce(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Gaussian negative log-likelihood ``0.5 (log v + (x - t)^2 / v)`` (+ ``0.5 log 2 pi``
    with ``full``), ``v = max(var, eps)`` (the clamp passes the gradient, as PyTorch's
    no-grad ``clamp_``). ``var`` is the input's shape, one dim short, with one dim of size
    1, or a float.

    Raises ValueError for a negative variance or a ``var`` of incorrect size."""
    _check_reduction(reduction, "gaussian_nll_loss")
    si = _shape(input)
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("gaussian_nll_loss: var has negative entry/entries")
        var = _creation.full(si, float(var), dtype=_float_dtype_of(_t(input)),
                              device=_t(input).device)
    else:
        var = _t(var)
        if (var.detach() < 0).any():
            raise ValueError("gaussian_nll_loss: var has negative entry/entries")
    sv = tuple(var.shape)
    if sv != si:
        if tuple(si[:-1]) == sv:
            var = var.unsqueeze(-1)
        elif not (len(si) == len(sv) and sum(y for x, y in zip(si, sv) if x != y) == 1):
            raise ValueError(f"gaussian_nll_loss: var is of incorrect size (var {_size(sv)}, "
                             f"input {_size(si)})")
    var = var + (_ops.clamp(var, min=eps) - var).detach()
    d = input - target
    loss = 0.5 * (_ops.log(var) + d * d / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, "gaussian_nll_loss")


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """``max(0, -y (x1 - x2) + margin)``, ``y`` in {1, -1}.

    Raises RuntimeError when the three tensors have different numbers of dims."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    s1, s2, st = _shape(input1), _shape(input2), _shape(target)
    if not len(s1) == len(s2) == len(st):
        raise RuntimeError(f"margin_ranking_loss: All input tensors should have same dimension "
                           f"but got sizes: input1: {_size(s1)}, input2: {_size(s2)}, target: "
                           f"{_size(st)} ")
    loss = _ops.clamp(-target * (input1 - input2) + margin, min=0.0)
    return _reduce(loss, reduction, "margin_ranking_loss")


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """``x`` where ``y = 1``, ``max(0, margin - x)`` where ``y = -1`` (PyTorch's exact
    formula: the first term where ``y != -1``, the second where ``y != 1``)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    t = _t(target)
    margin_clamp = _ops.clamp(margin - input, min=0.0)
    loss = _ops.where(t != 1, margin_clamp, 0.0) + _ops.where(t != -1, input, 0.0)
    return _reduce(loss, reduction, "hinge_embedding_loss")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` = :func:`pairwise_distance`
    (``swap``: ``d(a, n)`` replaced by ``min(d(a, n), d(p, n))``).

    Raises RuntimeError when the three inputs have different numbers of dims."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    sa, sp, sn = _shape(anchor), _shape(positive), _shape(negative)
    if not len(sa) == len(sp) == len(sn):
        raise RuntimeError(f"triplet_margin_loss: The anchor, positive, and negative tensors are "
                           f"expected to have the same number of dimensions, but got: anchor "
                           f"{len(sa)}D, positive {len(sp)}D, and negative {len(sn)}D inputs")
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = _ops.minimum(d_an, pairwise_distance(positive, negative, p, eps))
    loss = _ops.clamp(margin + d_ap - d_an, min=0.0)
    return _reduce(loss, reduction, "triplet_margin_loss")


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """``1 - cos(x1, x2)`` where ``y = 1``, ``max(0, cos(x1, x2) - margin)`` where ``y = -1``
    (cosine along the feature dim of (N, D) or (D,) inputs, with PyTorch's 1e-12 added to
    the squared norms).

    Raises RuntimeError for inputs of different shapes or not 1-D/2-D."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    s1, s2, st = _shape(input1), _shape(input2), _shape(target)
    if s1 != s2 or len(s1) not in (1, 2) or st != tuple(s1[:-1]):
        raise RuntimeError(f"cosine_embedding_loss: expected input1 and input2 of the same 1D or "
                           f"2D shape and a target of their batch shape, got input1 {_size(s1)}, "
                           f"input2 {_size(s2)}, target {_size(st)}")
    dim = len(s1) - 1
    prod = (input1 * input2).sum(dim=dim)
    m1 = (input1 * input1).sum(dim=dim) + 1e-12
    m2 = (input2 * input2).sum(dim=dim) + 1e-12
    cos = prod / _ops.sqrt(m1 * m2)
    t = _t(target)
    loss = _ops.where(t == 1, 1.0 - cos, 0.0) + \
        _ops.where(t == -1, _ops.clamp(cos - margin, min=0.0), 0.0)
    return _reduce(loss, reduction, "cosine_embedding_loss")


# --- attention ---------------------------------------------------------------------------

def _dead_rows(mask):
    """The query rows an additive ``mask`` (a tensor, NumPy data) blocks entirely: a bool
    (..., L, 1) tensor, or None when there are none (or the data is not NumPy's). PyTorch's
    attention kernels (its ``_safe_softmax``) give such rows zero weights, not NaN."""
    d = mask._data
    if d.ndim != mask.ndim or d.ndim == 0 or (
            d.__class__ is not np.ndarray and backend_of(d).lazy):
        return None
    if d.__class__ is not np.ndarray:  # a device's data: checked there (one host sync)
        dead = _ops.isneginf(mask.detach()).all(-1, keepdim=True)
        return dead if dead.any() else None
    dead = np.isneginf(d).all(-1, keepdims=True)
    return wrap(dead) if dead.any() else None


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """``softmax(Q K^T * scale + bias) V`` with PyTorch's reference semantics.

    Shapes: ``query`` (\\*, L, E), ``key`` (\\*, S, E), ``value`` (\\*, S, Ev); output
    (\\*, L, Ev). ``scale`` defaults to ``1 / sqrt(E)``. ``attn_mask``: bool (True = take
    part) or float (added), broadcastable to (\\*, L, S). ``is_causal``: the lower-triangular
    mask. ``dropout_p``: dropout on the attention weights (chainrule's generator).

    Raises
    ------
    RuntimeError
        ``is_causal`` together with ``attn_mask``, or mismatched feature / sequence sizes.
    """
    q, k, v = _t(query), _t(key), _t(value)
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: query {_size(q.shape)}, key "
                           f"{_size(k.shape)} and value {_size(v.shape)} do not fit (expected "
                           "query (*, L, E), key (*, S, E), value (*, S, Ev))")
    if enable_gqa and q.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        rep = q.shape[-3] // k.shape[-3]
        idx = np.repeat(np.arange(k.shape[-3]), rep)
        sl = (slice(None),) * (k.ndim - 3) + (idx,)
        k, v = k[sl], v[sl]
    L, S = q.shape[-2], k.shape[-2]
    scale_factor = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    bias = np.zeros((L, S), dtype=numpy_dtype(q.dtype))
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("scaled_dot_product_attention: _scaled_dot_product_attention: "
                               "Explicit attn_mask should not be set when is_causal=True")
        bias[~np.tril(np.ones((L, S), dtype=bool))] = -np.inf
    bias_t = _beside(q, bias)
    if attn_mask is not None:
        m = _t(attn_mask)
        if dtype_kind(m.dtype) == "b":
            bias_t = _ops.where(m, _beside(q, bias), -np.inf).to(q.dtype)
        else:
            bias_t = m + bias_t
    dead = None if attn_mask is None else _dead_rows(bias_t)  # (the causal mask has none)
    if dead is not None:  # a finite bias there; the row is zeroed after the softmax
        bias_t = _ops.where(dead, 0.0, bias_t)
    w = _ops.matmul(q, k.transpose(-2, -1)) * scale_factor + bias_t
    w = _ops.softmax(w, -1)
    if dead is not None:
        w = _ops.where(dead, 0.0, w)
    if dropout_p > 0.0:
        w = dropout(w, dropout_p, True)
    return _ops.matmul(w, v)


# --- more of torch.nn.functional (compositions) -------------------------------------------

def glu(input, dim=-1):
    """The gated linear unit ``a * sigmoid(b)``, ``a, b`` the halves of ``input`` along
    ``dim`` (whose size must be even), as ``torch.nn.functional.glu``."""
    x = _t(input)
    size = x.shape[dim]
    if size % 2:
        raise RuntimeError(f"glu: Halving dimension must be even, but dimension {dim} is size "
                           f"{size}")
    a, b = _ops.chunk(x, 2, dim)
    return a * _ops.sigmoid(b)


def _nan_or_zero(x):
    # NaN where ``x`` is NaN, else 0, in x's dtype and without gradient
    d = x.detach()
    return _ops.where(d == d, 0.0, d)


def hardshrink(input, lambd=0.5):
    """``x`` where ``|x| > lambd``, else 0."""
    x = _t(input)
    # NaN comes out NaN with gradient 0, as PyTorch's vectorised kernels
    return _ops.where((x < -lambd) | (x > lambd), x, _nan_or_zero(x))


def softshrink(input, lambd=0.5):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""
    x = _t(input)
    # NaN fails both comparisons and comes out NaN with gradient 0, as PyTorch's vectorised
    # kernels
    return _ops.where(x > lambd, x - lambd, _ops.where(x < -lambd, x + lambd, _nan_or_zero(x)))


def threshold(input, threshold, value, inplace=False):
    """``value`` where ``x <= threshold``, else ``x`` (gradient 0 there); a NaN stays NaN
    (with gradient 1), as PyTorch's ``x <= threshold ? value : x``."""
    x = _t(input)
    return _ops.where(x <= threshold, float(value), x)


def prelu(input, weight):
    """``max(0, x) + weight * min(0, x)``, ``weight`` of one entry or one per channel (dim 1),
    as ``torch.nn.functional.prelu``."""
    x, w = _t(input), _t(weight)
    if w.numel() == 1:
        w = w.reshape(())  # one slope for every entry (a 0-d input stays 0-d)
    else:
        if x.ndim < 2 or x.shape[1] != w.numel():
            raise RuntimeError(f"prelu: Mismatch of parameter numbers and input channel size. "
                               f"Found parameter numbers = {w.numel()} and channel size = "
                               f"{x.shape[1] if x.ndim > 1 else 1}.")
        w = w.reshape((-1,) + (1,) * (x.ndim - 2))
    return _ops.where(x > 0, x, w * x)


def _name_errors_of(name):
    from .._dispatch import name_errors

    return lambda fn: name_errors(fn, name)


@_name_errors_of("rms_norm")
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last ``len(normalized_shape)`` dims
    (``eps`` defaults to the dtype's machine epsilon), as ``torch.nn.functional.rms_norm``."""
    x = _t(input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise RuntimeError(f"rms_norm: Given normalized_shape={list(shape)}, expected input "
                           f"with shape [*, {', '.join(map(str, shape))}], but got input of "
                           f"size {list(x.shape)}")
    if eps is None:
        eps = float(np.finfo(numpy_dtype(x.dtype)).eps)
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    y = x * _ops.rsqrt(_ops.mean(x * x, dims, True) + eps)
    return y if weight is None else y * weight


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-y x))``, averaged, as ``torch.nn.functional.soft_margin_loss``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    # -input first: a bool target (as PyTorch accepts) has no negation
    return _reduce(_ops.softplus(-_t(input) * target), reduction, "soft_margin_loss")


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """``-mean_c [y log sigmoid(x) + (1 - y) log sigmoid(-x)]`` per sample (times ``weight``),
    as ``torch.nn.functional.multilabel_soft_margin_loss``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    x, y = _t(input), _t(target)
    loss = -(y * logsigmoid(x) + (1 - y) * logsigmoid(-x))
    if weight is not None:
        loss = loss * weight
    loss = _ops.mean(loss, x.ndim - 1) if x.ndim else loss
    return _reduce(loss, reduction, "multilabel_soft_margin_loss")


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """``sum_{i != y} max(0, margin - x_y + x_i)^p / C`` per sample (``weight[y]`` times the
    terms), as ``torch.nn.functional.multi_margin_loss``; ``p`` is 1 or 2. ``input`` is
    (N, C) or (C,), ``target`` (N,) (or 0-d / (1,) for a (C,) input) class indices.

    Raises ValueError for another ``p``; RuntimeError for input of more than 2 dims, a
    target that is not integer, of another size, or outside ``[0, C)``."""
    if p not in (1, 2):
        raise ValueError("multi_margin_loss: only p == 1 and p == 2 supported")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    x = _t(input)
    x2 = x.reshape(1, -1) if x.ndim <= 1 else x
    if x.ndim > 2:
        raise RuntimeError(f"multi_margin_loss: Expected non-empty vector or matrix with "
                           f"optional 0-dim batch size, but got: {_size(x.shape)}")
    tgt = _t(target)
    tn = tgt.detach().numpy()
    if tn.dtype.kind not in "iu":
        raise RuntimeError(f"multi_margin_loss: expected target of an integer dtype (Long), "
                           f"got {tgt.dtype}")
    if tn.ndim > 1 or tn.size != x2.shape[0]:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to "
                           f"the number of input samples (batch size). Expected target size "
                           f"[{x2.shape[0]}], but got {_size(tn.shape)}. Input has shape "
                           f"{_size(x.shape)}.")
    idx = np.asarray(tn, dtype=np.int64).reshape(-1)
    C = x2.shape[1]
    if idx.size and (idx.min() < 0 or idx.max() >= C):  # a negative one would wrap around
        raise RuntimeError(f"multi_margin_loss: target out of range: got {int(idx.min())}.."
                           f"{int(idx.max())} for {C} classes")
    picked = _ops.take_along_dim(x2, _beside(x, idx.reshape(-1, 1)), 1)  # x_y, (N, 1)
    terms = relu(margin - picked + x2)  # PyTorch's ``z > 0``: no gradient at z == 0
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * _t(weight)[_beside(x, idx)].reshape(-1, 1)
    others = _beside(x, np.arange(C)[None, :] != idx[:, None])
    loss = _ops.sum(_ops.where(others, terms, 0.0), 1) / C
    if x.ndim <= 1:
        loss = loss.reshape(tn.shape)  # () or (1,), as the target (PyTorch's)
    return _reduce(loss, reduction, "multi_margin_loss")


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """:func:`triplet_margin_loss` with any ``distance_function`` (default:
    :func:`pairwise_distance`)."""
    d = distance_function or pairwise_distance
    d_ap, d_an = d(anchor, positive), d(anchor, negative)
    if swap:
        d_an = _ops.minimum(d_an, d(positive, negative))
    loss = _ops.clamp(margin + d_ap - d_an, min=0.0)
    return _reduce(loss, reduction, "triplet_margin_with_distance_loss")


__all__ += ["glu", "hardshrink", "softshrink", "threshold", "prelu", "rms_norm",
            "soft_margin_loss", "multilabel_soft_margin_loss", "multi_margin_loss",
            "triplet_margin_with_distance_loss"]


# torch's top-level spellings (torch.layer_norm, ...), which take one more flag
@_name_errors_of("layer_norm")
def _top_layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5,
                    cudnn_enable=True):
    return layer_norm(input, normalized_shape, weight, bias, eps)


@_name_errors_of("group_norm")
def _top_group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return group_norm(input, num_groups, weight, bias, eps)


# --- the other dropouts, rrelu, multilabel_margin_loss (compositions) -----------------------

def _channel_mask(x, p, fname, batched_ndim):
    """A keep-mask drawn per channel: shape (N, C, 1, ...) for a batched input of
    ``batched_ndim`` dims, (C, 1, ...) for an unbatched one."""
    shape = list(x.shape)
    lead = 2 if x.ndim == batched_ndim else 1
    mask_shape = shape[:lead] + [1] * (x.ndim - lead)
    return _creation.default_generator.random(tuple(mask_shape)) >= p


def _check_p(p, fname):
    """``p`` as a number (a one-element tensor read as one); ValueError outside [0, 1]."""
    p = number_arg(p, fname, "p")
    if p < 0.0 or p > 1.0:
        raise ValueError(f"{fname}: dropout probability has to be between 0 and 1, but got {p}")
    return p


def _channel_dropout(input, p, training, fname, batched_ndim):
    """Whole channels zeroed with probability ``p``, the rest scaled by ``1 / (1 - p)``."""
    p = _check_p(p, fname)
    if not training or p == 0.0:
        return input
    x = _dropout_input(input, fname)
    keep = _channel_mask(x, p, fname, batched_ndim)
    return x * _beside(x, (keep / (1.0 - p) if p < 1 else keep * 0.0).astype(
        _float_dtype_of(x)))


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels (dim 1 of (N, C, H, W)) with probability ``p``, the rest scaled
    by ``1 / (1 - p)``, when ``training``; as PyTorch 2.13's ``feature_dropout`` on the input
    as given: a 3-D input is (N, C, L) (dropout1d's behaviour, with PyTorch's warning), a
    2-D one (N, C) drops single entries (with PyTorch's deprecation warning).

    Raises ValueError for ``p`` outside [0, 1]; RuntimeError for fewer than 2 dims when
    ``training``."""
    ndim = len(_shape(input))
    if ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {ndim}-D input to dropout2d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. "
                      "Note that dropout2d exists to provide channel-wise dropout on inputs "
                      "with 2 spatial dimensions, a channel dimension, and an optional batch "
                      "dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise "
                      "dropout behavior, please switch to using dropout1d instead.",
                      stacklevel=2)
    if ndim < 2 and training and _check_p(p, "dropout2d") > 0:
        raise RuntimeError("dropout2d: Feature dropout requires at least 2 dimensions in the "
                           f"input, got shape {list(_shape(input))}")
    return _channel_dropout(input, p, training, "dropout2d", ndim)  # (N, C, 1, ...) mask


def dropout3d(input, p=0.5, training=True, inplace=False):
    """:func:`dropout2d` for (N, C, D, H, W) or (C, D, H, W) inputs."""
    return _channel_dropout(input, p, training, "dropout3d", 5)


_ALPHA_PRIME = -_SELU_ALPHA * _SELU_SCALE


def _alpha_dropout(x, keep, p):
    q = 1.0 - p
    a = (q + _ALPHA_PRIME ** 2 * q * p) ** -0.5
    b = -a * _ALPHA_PRIME * p
    k = _beside(x, keep.astype(_float_dtype_of(x)))
    return (x * k + _ALPHA_PRIME * (1 - k)) * a + b


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's zero mean and unit variance: dropped entries are set to
    ``-scale * alpha`` of SELU, then an affine map ``a x + b`` restores the moments
    (Klambauer et al. 2017, sec. "New dropout technique"), as PyTorch's."""
    p = _check_p(p, "alpha_dropout")
    if not training or p == 0.0:
        return input
    x = _t(input)
    if p == 1.0:
        return x * 0.0
    return _alpha_dropout(x, _creation.default_generator.random(tuple(x.shape)) >= p, p)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """:func:`alpha_dropout` with whole channels dropped."""
    p = _check_p(p, "feature_alpha_dropout")
    if not training or p == 0.0:
        return input
    x = _t(input)
    if p == 1.0:
        return x * 0.0
    return _alpha_dropout(x, _channel_mask(x, p, "feature_alpha_dropout", x.ndim), p)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """The randomized leaky ReLU: negative entries times a slope drawn from U(lower, upper)
    when ``training`` (chainrule's generator), times ``(lower + upper) / 2`` otherwise."""
    x = _t(input)
    if training:
        slope = _beside(x, _creation.default_generator.uniform(lower, upper, tuple(x.shape))
                        .astype(_float_dtype_of(x)))
    else:
        slope = (lower + upper) / 2.0
    # x == 0 takes the slope (PyTorch's ``input <= 0`` branch): its gradient there is slope
    return _ops.where(x > 0, x, x * slope)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``sum_{j in y} sum_{i not in y} max(0, 1 - (x_j - x_i)) / C`` per sample, ``y`` the
    target's class indices up to the first -1, as
    ``torch.nn.functional.multilabel_margin_loss``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    x = _t(input)
    x2 = x.reshape(1, -1) if x.ndim <= 1 else x
    y = np.asarray(_t(target).detach().numpy(), dtype=np.int64).reshape(x2.shape)
    n, C = x2.shape
    is_target = np.zeros((n, C), dtype=bool)
    count = np.zeros((n, C))  # how often each class is listed (PyTorch sums over the list)
    for k, row in enumerate(y):
        for c in row:
            if c < 0:
                break
            is_target[k, c] = True
            count[k, c] += 1
    # pairs (j, i): j a listed target, i not a target; the hinge on x_j - x_i
    diff = x2.unsqueeze(2) - x2.unsqueeze(1)  # (n, C, C): x_j - x_i
    pairs = _beside(x, (count[:, :, None] * ~is_target[:, None, :]).astype(
        _float_dtype_of(x)))
    # relu, not clamp: a hinge exactly at 0 passes no gradient (PyTorch's ``z > 0`` test)
    loss = _ops.sum(relu(1.0 - diff) * pairs, (1, 2)) / C
    if x.ndim <= 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction, "multilabel_margin_loss")


__all__ += ["dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "rrelu",
            "multilabel_margin_loss"]


# --- dropout1d, pixel_shuffle, pixel_unshuffle (compositions) ------------------------------

def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels (dim 1 of (N, C, L); dim 0 of (C, L)) with probability ``p``, the
    rest scaled by ``1 / (1 - p)``, when ``training``.

    Raises ValueError for ``p`` outside [0, 1], RuntimeError for an input that is not 2-D
    or 3-D."""
    p = _check_p(p, "dropout1d")
    ndim = len(_shape(input))
    if ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {ndim}D input. "
                           "Note that dropout1d exists to provide channel-wise dropout on "
                           "inputs with 1 spatial dimension, a channel dimension, and an "
                           "optional batch dimension (i.e. 2D or 3D inputs).")
    return _channel_dropout(input, p, training, "dropout1d", 3)


def _check_shuffle_factor(x, factor, fname, what):
    if x.ndim < 3:
        raise RuntimeError(f"{fname} expects input to have at least 3 dimensions, but got "
                           f"input with {x.ndim} dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{fname} expects a positive {what}, but got {factor}")


def pixel_shuffle(input, upscale_factor):
    """Rearrange (\\*, C r^2, H, W) into (\\*, C, H r, W r), ``r = upscale_factor``: output
    ``[..., c, h r + i, w r + j]`` is input ``[..., c r^2 + i r + j, h, w]``, as
    ``torch.nn.functional.pixel_shuffle`` (a reshape and a permute, so differentiable).

    Raises RuntimeError for an input of fewer than 3 dims, a non-positive factor, or a
    channel dim not divisible by ``r^2``."""
    x, r = _t(input), int(upscale_factor)
    _check_shuffle_factor(x, r, "pixel_shuffle", "upscale_factor")
    *lead, c, h, w = x.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    n = len(lead)
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    y = y.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)  # (*, C, H, r, W, r)
    return y.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """The inverse of :func:`pixel_shuffle`: (\\*, C, H r, W r) -> (\\*, C r^2, H, W),
    ``r = downscale_factor``, as ``torch.nn.functional.pixel_unshuffle``.

    Raises RuntimeError for an input of fewer than 3 dims, a non-positive factor, or a
    height or width not divisible by ``r``."""
    x, r = _t(input), int(downscale_factor)
    _check_shuffle_factor(x, r, "pixel_unshuffle", "downscale_factor")
    *lead, c, h, w = x.shape
    for size, name, d in ((h, "height", -2), (w, "width", -1)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by "
                               f"downscale_factor, but input.size({d})={size} is not divisible "
                               f"by {r}")
    n = len(lead)
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    y = y.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)  # (*, C, r, r, H/r, W/r)
    return y.reshape(*lead, c * r * r, h // r, w // r)


__all__ += ["dropout1d", "pixel_shuffle", "pixel_unshuffle"]


# --- inplace=True ----------------------------------------------------------------------------

def _in_place_option(fn):
    """``fn`` whose ``inplace=True`` writes the result into ``input`` and returns ``input``
    (as PyTorch's ``relu_``, ``dropout(..., inplace=True)``): the update is recorded as
    chainrule's in-place ops are (``input``'s history is rewritten, the values the update's
    nodes saved stay intact, and its version counter is bumped), so what was computed from
    ``input`` before sees a changed tensor exactly as in PyTorch.

    Raises RuntimeError (naming ``<fn>_``) for a leaf that requires grad, as PyTorch."""
    params = list(inspect.signature(fn).parameters)
    position = params.index("inplace")

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not (kwargs.get("inplace") or (len(args) > position and args[position])):
            return fn(*args, **kwargs)
        args = list(args)
        if len(args) > position:
            args[position] = False
        else:
            kwargs["inplace"] = False
        input = args[0] if args else kwargs.pop("input")
        rest = args[1:]
        if not isinstance(input, Tensor):
            return fn(input, *rest, **kwargs)
        return _inplace.update(input, lambda old: fn(old, *rest, **kwargs), f"{fn.__name__}_")

    return wrapper


INPLACE = ("relu", "relu6", "hardtanh", "leaky_relu", "elu", "selu", "celu", "silu", "mish",
           "hardswish", "hardsigmoid", "threshold", "rrelu", "dropout", "dropout1d",
           "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")
for _name in INPLACE:
    globals()[_name] = _in_place_option(globals()[_name])


def _in_place_form(name):
    fn = globals()[name]

    def in_place(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}_: input must be a Tensor, got {type(input).__name__}")
        return fn(input, *args, **kwargs, inplace=True)

    in_place.__name__ = in_place.__qualname__ = name + "_"
    in_place.__doc__ = f"``{name}(input, ..., inplace=True)``: ``input``, updated in place."
    return in_place


for _name in ("relu", "hardtanh", "leaky_relu", "elu", "selu", "celu", "threshold", "rrelu"):
    globals()[_name + "_"] = _in_place_form(_name)  # torch.nn.functional's relu_, elu_, ...
    __all__.append(_name + "_")
del _name


def _top_dropout_(fn, name):
    """``torch.<name>_(input, p, train)``: ``fn(input, p, train, inplace=True)``."""
    def in_place(input, p, train):
        return fn(input, p, train, inplace=True)

    in_place.__name__ = in_place.__qualname__ = name + "_"
    in_place.__doc__ = f"``torch.{name}_(input, p, train)``: {name} of ``input`` in place."
    return in_place


# PyTorch's top-level in-place dropouts (chainrule.dropout_ ...), exported by chainrule
_top_dropout = _top_dropout_(dropout, "dropout")
_top_alpha_dropout = _top_dropout_(alpha_dropout, "alpha_dropout")
_top_feature_alpha_dropout = _top_dropout_(feature_alpha_dropout, "feature_alpha_dropout")


# --- embedding bags ----------------------------------------------------------------------

__all__ += ["embedding_bag"]


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of embeddings, as ``torch.nn.functional.embedding_bag``,
    without materialising the (bags, bag length, dim) intermediate beyond the picked rows.

    ``input`` is (B, N), B bags of N indices (``offsets`` must be None), or 1-D with
    ``offsets`` (1-D) giving where each bag starts (with ``include_last_offset`` the last
    offset ends the last bag). ``weight`` is (num_embeddings, D); the output is (B, D), an
    empty bag giving zeros. Entries equal to ``padding_idx`` are left out of their bag (and
    of a mean's count). ``per_sample_weights`` (``input``'s shape, ``mode="sum"`` only)
    weights each entry. ``max_norm`` renormalises the picked rows as :func:`embedding`.

    Raises
    ------
    ValueError
        An unknown ``mode``, 2-D ``input`` with ``offsets``, 1-D ``input`` without them,
        input of another rank, ``per_sample_weights`` of another shape or with a mode
        other than "sum".
    IndexError
        An index outside ``[0, num_embeddings)``.
    NotImplementedError
        ``scale_grad_by_freq`` or ``sparse``.
    """
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding_bag: scale_grad_by_freq and sparse are not "
                                  "supported")
    idx = _index_array(input, "embedding_bag")
    n = _shape(weight)[0]
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences.")
        starts = np.arange(0, idx.size, idx.shape[1]) if idx.shape[1] else \
            np.zeros(idx.shape[0], dtype=np.int64)
        flat = idx.reshape(-1)
        ends = starts + idx.shape[1]
    elif idx.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        offs = _index_array(offsets, "embedding_bag", "offsets")
        if offs.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        flat = idx
        if include_last_offset:
            starts, ends = offs[:-1], offs[1:]
        else:
            starts, ends = offs, np.append(offs[1:], idx.size)
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{idx.ndim}")
    if per_sample_weights is not None:
        if mode != "sum":
            raise ValueError(f"embedding_bag: per_sample_weights was not None. "
                             f"per_sample_weights is only supported for mode='sum' (got "
                             f"mode='{mode}'). Please open a feature request on GitHub.")
        if _shape(per_sample_weights) != idx.shape:
            raise ValueError(f"embedding_bag: If per_sample_weights ({_shape(per_sample_weights)}"
                             f") is not None, then it must have the same shape as the input "
                             f"({idx.shape})")
    padding_idx = _checked_rows(flat, n, padding_idx, "embedding_bag",
                                "padding_idx must be within num_embeddings")
    rows = embedding(wrap(flat), weight, max_norm=max_norm, norm_type=norm_type)  # (L, D)
    keep = np.ones(flat.size, dtype=bool) if padding_idx is None else flat != padding_idx
    bags = len(starts)
    if mode == "max":
        # an empty bag gives zeros still joined to the graph (a zero gradient, as PyTorch's)
        none = _t(weight)[:0]
        outs = []
        for s, e in zip(starts, ends):
            sel = np.arange(s, e)[keep[s:e]]
            if not sel.size:
                outs.append(none.sum(0))
                continue
            # the first maximum in bag order takes the gradient, as PyTorch's (amax would
            # share it among tied rows)
            bag = rows[wrap(sel)]
            outs.append(bag.gather(0, bag.detach().argmax(0).unsqueeze(0)).squeeze(0))
        return _ops.stack(outs) if outs else none
    # one (B, L) matrix that sums (or averages) each bag's rows
    M = np.zeros((bags, flat.size), dtype=numpy_dtype(weight.dtype))
    for b, (s, e) in enumerate(zip(starts, ends)):
        k = keep[s:e]
        if mode == "mean" and k.any():
            M[b, s:e] = k / k.sum()
        else:
            M[b, s:e] = k
    if per_sample_weights is not None:
        rows = rows * _ops.unsqueeze(_t(per_sample_weights).reshape(-1), -1)
    return _ops.matmul(_beside(rows, M), rows)


__all__ += ["local_response_norm"]


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Local response normalisation across channels (AlexNet), as
    ``torch.nn.functional.local_response_norm``: for input (N, C, \\*),
    ``x / (k + alpha / size * sum_{c' in window(c)} x_{c'}^2) ** beta`` with the window of
    ``size`` channels from ``c - size // 2`` to ``c + (size - 1) // 2`` (zero outside).

    Raises ValueError for input of fewer than 3 dims."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    channels = input.shape[1]
    sq = input * input
    widths = [(0, 0)] * dim
    widths[1] = (size // 2, (size - 1) // 2)
    flat = [w for pair in reversed(widths) for w in pair]
    padded = pad(sq, tuple(flat))
    total = padded.narrow(1, 0, channels)
    for i in range(1, size):
        total = total + padded.narrow(1, i, channels)
    div = (total / size * alpha + k) ** beta
    return input / div


__all__ += ["gumbel_softmax"]


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """A draw from the Gumbel-softmax (Concrete) relaxation of a categorical over ``dim``,
    as ``torch.nn.functional.gumbel_softmax``: ``softmax((logits + g) / tau, dim)`` with
    ``g = -log(e)``, ``e ~ Exponential(1)`` (Gumbel noise from chainrule's generator, not
    PyTorch's). With ``hard``, the one-hot of its argmax, with the soft sample's gradient
    (straight-through: ``y_hard - y_soft.detach() + y_soft``). Output: ``logits``' shape
    and dtype. ``eps`` is deprecated and unused (a UserWarning when set)."""
    logits = _t(logits)
    if dtype_kind(logits.dtype) not in "fc":  # before the draw, which a failing call must not make
        raise (RuntimeError if dtype_kind(logits.dtype) in "biu" else TypeError)(
            f"gumbel_softmax: expected floating-point logits, got {logits.dtype}")
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    e = _creation.default_generator.exponential(size=tuple(logits.shape))
    gumbels = _beside(logits, -np.log(np.asarray(e)).astype(numpy_dtype(logits.dtype)))
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = _ops.argmax(y_soft, dim, keepdim=True)
    y_hard = _ops.scatter(_creation.zeros_like(logits), dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# --- connectionist temporal classification ------------------------------------------------

__all__ += ["ctc_loss"]


def _shift(v, k):
    """``v`` moved ``k`` places right (k > 0) or left (k < 0), -inf filled."""
    out = np.full_like(v, -np.inf)
    if k > 0:
        out[k:] = v[:len(v) - k]
    else:
        out[:len(v) + k] = v[-k:]
    return out


def _logsumexp_np(*xs):
    m = np.maximum.reduce(xs)
    finite = np.isfinite(m)
    safe = np.where(finite, m, 0.0)
    with np.errstate(divide="ignore"):
        out = safe + np.log(sum(np.exp(x - safe) for x in xs))
    return np.where(finite, out, m)


def _ctc_one(lp, target, blank):
    """The CTC negative log-likelihood of ``target`` (ints) under ``lp`` (T, C) (float64)
    and PyTorch's gradient with respect to ``lp``: ``exp(lp) - posterior / exp(lp)``
    summed into classes (the gradient with respect to the logits of a log-softmax)."""
    T, C = lp.shape
    ext = np.full(2 * len(target) + 1, blank, dtype=np.int64)
    ext[1::2] = target
    S = len(ext)
    skip = np.zeros(S, dtype=bool)
    skip[2:] = (ext[2:] != blank) & (ext[2:] != ext[:-2])
    ninf = -np.inf
    grad = np.zeros((T, C))
    if T == 0:
        return (0.0 if S == 1 else np.inf), grad
    la = np.full((T, S), ninf)
    la[0, 0] = lp[0, ext[0]]
    if S > 1:
        la[0, 1] = lp[0, ext[1]]
    for t in range(1, T):
        prev = la[t - 1]
        a1 = _shift(prev, 1)
        a2 = np.where(skip, _shift(prev, 2), ninf)
        la[t] = _logsumexp_np(prev, a1, a2) + lp[t, ext]
    ends = [la[T - 1, S - 1]] + ([la[T - 1, S - 2]] if S > 1 else [])
    nll = -float(_logsumexp_np(*[np.asarray(e) for e in ends]))
    lb = np.full((T, S), ninf)
    lb[T - 1, S - 1] = lp[T - 1, ext[S - 1]]
    if S > 1:
        lb[T - 1, S - 2] = lp[T - 1, ext[S - 2]]
    skip_next = np.zeros(S, dtype=bool)
    skip_next[:-2] = skip[2:]
    for t in range(T - 2, -1, -1):
        nxt = lb[t + 1]
        b1 = _shift(nxt, -1)
        b2 = np.where(skip_next, _shift(nxt, -2), ninf)
        lb[t] = _logsumexp_np(nxt, b1, b2) + lp[t, ext]
    lab = la + lb  # (T, S): log of alpha * beta (each including lp at (t, s))
    lcab = np.full((T, C), ninf)
    for s in range(S):
        lcab[:, ext[s]] = _logsumexp_np(lcab[:, ext[s]], lab[:, s])
    with np.errstate(over="ignore", invalid="ignore"):
        grad = np.exp(lp) - np.exp(lcab + nll - lp)
    return nll, grad


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """The connectionist temporal classification loss (Graves et al., 2006), as
    ``torch.nn.functional.ctc_loss``: ``-log p(target | log_probs)`` summed over every
    alignment (blank-separated paths), by the forward-backward recursions in log space.

    Shapes: ``log_probs`` (T, N, C) (log-softmax outputs; unbatched (T, C)), ``targets``
    (N, S) padded or 1-D (the targets concatenated), ``input_lengths`` and
    ``target_lengths`` (N,) (ints or tensors). ``reduction``: ``'none'`` (N,), ``'sum'``, or
    ``'mean'``: each loss divided by its target length (at least 1), then averaged.
    ``zero_infinity`` turns infinite losses (impossible alignments) and their gradients to
    zero. The gradient with respect to ``log_probs`` is PyTorch's, ``exp(log_probs) -
    posterior`` at the steps within each input length (what flows back through a
    log-softmax is then the exact gradient); it is first-order only, and an infinite loss
    (without ``zero_infinity``) passes no gradient.

    Raises
    ------
    RuntimeError
        An input length above T, a target length above S, lengths of the wrong count, or a
        target label outside ``[0, C)`` or equal to ``blank`` (PyTorch's CPU kernel reads
        out of bounds or computes an undefined value there).
    ValueError
        An unknown ``reduction``.
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    lp_t = _t(log_probs)
    unbatched = lp_t.ndim == 2
    if unbatched:
        lp_t = _ops.unsqueeze(lp_t, 1)
    T, N, C = lp_t.shape
    lp = np.asarray(lp_t.detach().numpy(), dtype=np.float64)
    tg = np.asarray(_t(targets).numpy()).astype(np.int64)
    in_len = np.asarray(_t(input_lengths).numpy() if isinstance(input_lengths, Tensor)
                        else input_lengths).astype(np.int64).reshape(-1)
    tg_len = np.asarray(_t(target_lengths).numpy() if isinstance(target_lengths, Tensor)
                        else target_lengths).astype(np.int64).reshape(-1)
    if unbatched and tg.ndim == 1 and len(tg_len) == 1 and tg.size == tg_len[0]:
        tg = tg.reshape(1, -1)
    if len(in_len) != N or len(tg_len) != N:
        raise RuntimeError(f"ctc_loss: expected input_lengths and target_lengths of size "
                           f"{N}, got {len(in_len)} and {len(tg_len)}")
    losses = np.zeros(N)
    grads = np.zeros((T, N, C))
    offset = 0
    for b in range(N):
        if in_len[b] > T:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got "
                               f"value {in_len[b]} (while checking arguments for ctc_loss_cpu)")
        if tg.ndim == 2:
            if tg_len[b] > tg.shape[1]:
                raise RuntimeError(f"Expected tensor to have size at least {tg_len[b]} at "
                                   f"dimension 1, but got size {tg.shape[1]} for argument "
                                   f"#2 'targets' (while checking arguments for ctc_loss_cpu)")
            target = tg[b, :tg_len[b]]
        else:
            target = tg[offset:offset + tg_len[b]]
            offset += tg_len[b]
        bad = (target < 0) | (target >= C) | (target == blank)
        if bad.any():  # a negative label would wrap around; a blank one is undefined
            raise RuntimeError(f"ctc_loss: target labels must be class indices in [0, {C}) "
                               f"other than blank={blank}, got {int(target[bad][0])} in the "
                               f"target of sample {b}")
        nll, g = _ctc_one(lp[:in_len[b], b], target, blank)
        if zero_infinity and np.isinf(nll):
            nll, g = 0.0, np.zeros_like(g)
        losses[b] = nll
        grads[:in_len[b], b] = g
    dt = numpy_dtype(lp_t.dtype)
    finite = np.isfinite(grads).all(axis=(0, 2))  # an infinite loss passes no gradient
    G = _beside(lp_t, np.where(finite[None, :, None], grads, 0.0).astype(dt))
    out = _CTCLoss.apply(lp_t, _beside(lp_t, losses.astype(dt)), G)
    if reduction == "mean":
        out = (out / _beside(lp_t, np.maximum(tg_len, 1).astype(dt))).mean()
    elif reduction == "sum":
        out = out.sum()
    elif unbatched:
        out = out[0]
    return out


# --- None where a Tensor is required: PyTorch's TypeError naming the function and argument --

_TENSOR_ARGS = {
    "bilinear": ("input1", "input2", "weight"),
    "prelu": ("input", "weight"),
    "gumbel_softmax": ("logits",),
    "one_hot": ("tensor",),
    "cosine_similarity": ("x1", "x2"),
    "pairwise_distance": ("x1", "x2"),
    "embedding": ("input", "weight"),
    "embedding_bag": ("input", "weight"),
    "gaussian_nll_loss": ("input", "target", "var"),
    "margin_ranking_loss": ("input1", "input2", "target"),
    "cosine_embedding_loss": ("input1", "input2", "target"),
    "triplet_margin_loss": ("anchor", "positive", "negative"),
    "triplet_margin_with_distance_loss": ("anchor", "positive", "negative"),
    "scaled_dot_product_attention": ("query", "key", "value"),
    "ctc_loss": ("log_probs", "targets", "input_lengths", "target_lengths"),
}
for _name in ("relu6", "hardtanh", "leaky_relu", "elu", "selu", "celu", "gelu", "silu", "mish",
              "softplus", "softsign", "hardswish", "hardsigmoid", "logsigmoid", "tanhshrink",
              "sigmoid", "tanh", "hardshrink", "softshrink", "threshold", "rrelu", "glu",
              "softmax", "log_softmax", "softmin", "normalize", "pdist", "dropout", "dropout1d",
              "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "layer_norm",
              "group_norm", "rms_norm", "batch_norm", "local_response_norm", "pad",
              "pixel_shuffle", "pixel_unshuffle"):
    _TENSOR_ARGS[_name] = ("input",)
for _name in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss",
              "cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits",
              "kl_div", "poisson_nll_loss", "hinge_embedding_loss", "soft_margin_loss",
              "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss"):
    _TENSOR_ARGS[_name] = ("input", "target")
_LABELS = {"embedding": {"input": ("indices", 2), "weight": ("weight", 1)}}  # aten's order
for _name, _names in _TENSOR_ARGS.items():
    globals()[_name] = _tensor_args(*_names, fname=_name, labels=_LABELS.get(_name))(
        globals()[_name])
del _name, _names
