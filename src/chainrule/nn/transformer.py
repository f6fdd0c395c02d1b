"""Multi-head attention and transformer layers (``torch.nn``'s names and arguments),
composed of chainrule's differentiable ops.

Everything here is ``linear``, ``softmax``, ``dropout``, ``layer_norm``, ``matmul`` and
reshapes, so gradients of any order, ``chainrule.func`` transforms and ``gradcheck`` go
through it. Submodule and parameter names are PyTorch's, so a torch model's ``state_dict``
loads by name. Masks follow ``nn.MultiheadAttention``: a bool mask is True where attention
is NOT allowed (the opposite of ``scaled_dot_product_attention``'s bool mask); a float mask
is added to the attention scores.
"""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np

from .. import _creation
from .. import ops as _ops
from ..backend import dtype_kind, numpy_dtype
from . import functional as F
from . import init
from ._module import Module, ModuleList
from .modules import Dropout, LayerNorm, Linear, _dtype, _empty

__all__ = ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
           "TransformerDecoderLayer", "TransformerDecoder", "Transformer"]

_size = F._size


class NonDynamicallyQuantizableLinear(Linear):
    """``Linear`` under the name PyTorch gives ``MultiheadAttention.out_proj``'s class
    (``torch.nn.modules.linear.NonDynamicallyQuantizableLinear``): the same layer."""


# --- functional --------------------------------------------------------------------------

def _additive_mask(mask, name, dtype, fname):
    """``mask`` as a float tensor added to the scores: bool True -> -inf, False -> 0; a
    float mask is returned as it is (it may carry a gradient)."""
    if mask is None:
        return None
    m = F._t(mask)
    if dtype_kind(m.dtype) == "b":
        return _creation.zeros(tuple(m.shape), dtype=dtype, device=m.device).masked_fill(
            m, float("-inf"))
    if dtype_kind(m.dtype) != "f":
        raise AssertionError(f"{fname}: only bool and floating types of {name} are supported, "
                             f"got {m.dtype}")
    return m


def _check_ranks(query, key, value, kpm, attn_mask, fname):
    """PyTorch's ``_mha_shape_check``: True for batched (3-D) inputs."""
    nd = query.ndim
    if nd not in (2, 3):
        raise AssertionError(f"{fname}: query should be unbatched 2D or batched 3D tensor but "
                             f"received {nd}-D query tensor of shape {_size(query.shape)}")
    kind = "batched (3-D)" if nd == 3 else "unbatched (2-D)"
    if key.ndim != nd or value.ndim != nd:
        raise AssertionError(f"{fname}: for {kind} query, expected key and value to be {nd}-D "
                             f"but found {key.ndim}-D and {value.ndim}-D tensors respectively")
    if kpm is not None and F._t(kpm).ndim != nd - 1:
        raise AssertionError(f"{fname}: for {kind} query, expected key_padding_mask to be None "
                             f"or {nd - 1}-D but found {F._t(kpm).ndim}-D tensor instead")
    if attn_mask is not None and F._t(attn_mask).ndim not in (2, 3):
        raise AssertionError(f"{fname}: expected attn_mask to be None, 2-D or 3-D but found "
                             f"{F._t(attn_mask).ndim}-D tensor instead")
    return nd == 3


def _mha(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
         bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training,
         key_padding_mask, need_weights, attn_mask, use_separate_proj_weight, q_proj_weight,
         k_proj_weight, v_proj_weight, static_k, static_v, average_attn_weights, is_causal,
         batch_first, fname):
    """:func:`multi_head_attention_forward`, for batch-first or sequence-first inputs, with
    errors that start with ``fname``. Computes in (N, H, L, S) layout."""
    query, key, value = F._t(query), F._t(key), F._t(value)
    batched = _check_ranks(query, key, value, key_padding_mask, attn_mask, fname)
    shapes = {"query": query.shape, "key": key.shape, "value": value.shape}  # for messages
    if not batched:
        query, key, value = (x.unsqueeze(0) for x in (query, key, value))
    elif not batch_first:
        query, key, value = (x.transpose(0, 1) for x in (query, key, value))
    n, tgt_len, embed_dim = query.shape
    src_len = key.shape[1]
    built = "the module was built for" if fname == "MultiheadAttention" else \
        "embed_dim_to_check is"
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"{fname}: query has embed_dim {embed_dim} but {built} "
                             f"{embed_dim_to_check} (query of shape {_size(shapes['query'])})")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"{fname}: embed_dim {embed_dim} not divisible by num_heads "
                             f"{num_heads}")

    if (key_padding_mask is not None and attn_mask is not None
            and F._t(key_padding_mask).dtype != F._t(attn_mask).dtype):
        warnings.warn("Support for mismatched key_padding_mask and attn_mask is deprecated. "
                      "Use same type for both instead.", UserWarning,
                      stacklevel=4 if fname == "MultiheadAttention" else 3)
    kpm = _additive_mask(key_padding_mask, "key_padding_mask", query.dtype, fname)
    if is_causal and attn_mask is None:
        raise RuntimeError(f"{fname}: is_causal=True needs attn_mask (the hint is not a mask); "
                           "Transformer.generate_square_subsequent_mask makes one")
    # PyTorch then hands SDPA is_causal=True instead of attn_mask: the (L, S) causal mask
    causal = is_causal and kpm is None and not need_weights
    mask = None if causal else _additive_mask(attn_mask, "attn_mask", query.dtype, fname)

    # in-projection
    if use_separate_proj_weight:
        ws = (q_proj_weight, k_proj_weight, v_proj_weight)
        if any(w is None for w in ws):
            raise AssertionError(f"{fname}: use_separate_proj_weight is True but one of "
                                 "q_proj_weight, k_proj_weight, v_proj_weight is None")
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"{fname}: key of shape {_size(shapes['key'])} and value of "
                                 f"shape {_size(shapes['value'])} differ in their batch or "
                                 "sequence dims")
    else:
        if in_proj_weight is None:
            raise AssertionError(f"{fname}: use_separate_proj_weight is False but "
                                 "in_proj_weight is None")
        ws = F._t(in_proj_weight).chunk(3)
        if key.shape != value.shape:
            raise AssertionError(f"{fname}: key shape {_size(shapes['key'])} does not match "
                                 f"value shape {_size(shapes['value'])}")
    for name, x, w in zip(("key", "value"), (key, value), ws[1:]):
        if x.shape[-1] != w.shape[-1]:
            raise AssertionError(f"{fname}: {name} has {x.shape[-1]} features but its "
                                 f"projection takes {w.shape[-1]} (kdim/vdim), {name} of "
                                 f"shape {_size(shapes[name])}")
    bs = (None,) * 3 if in_proj_bias is None else F._t(in_proj_bias).chunk(3)
    q, k, v = (F.linear(x, w, b) for x, w, b in zip((query, key, value), ws, bs))

    if mask is not None:  # as (L, S) or (N, H, L, S)
        want = (tgt_len, src_len) if mask.ndim == 2 else (n * num_heads, tgt_len, src_len)
        if tuple(mask.shape) != want:
            raise RuntimeError(f"{fname}: the shape of the {mask.ndim}D attn_mask is "
                               f"{_size(mask.shape)}, but should be {_size(want)}")
        if mask.ndim == 3:
            mask = mask.reshape(n, num_heads, tgt_len, src_len)

    extra = 0  # key/value positions appended by bias_k/bias_v and add_zero_attn
    if (bias_k is None) != (bias_v is None):
        raise AssertionError(f"{fname}: bias_k and bias_v must be given together")
    if bias_k is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError(f"{fname}: bias cannot be added to static key or value")
        k, v = (_ops.cat([x, F._t(b).reshape(1, 1, embed_dim).expand(n, 1, embed_dim)], dim=1)
                for x, b in ((k, bias_k), (v, bias_v)))
        extra += 1

    def heads(x, static, name):
        if static is None:
            return x.reshape(n, x.shape[1], num_heads, head_dim).transpose(1, 2)
        s = F._t(static)
        if s.ndim != 3 or s.shape[0] != n * num_heads or s.shape[2] != head_dim:
            raise AssertionError(f"{fname}: expecting {name} of shape [{n * num_heads}, S, "
                                 f"{head_dim}], but got {_size(s.shape)}")
        return s.reshape(n, num_heads, s.shape[1], head_dim)

    q = heads(q, None, "query")
    k, v = heads(k, static_k, "static_k"), heads(v, static_v, "static_v")
    if add_zero_attn:
        zeros = _creation.zeros((n, num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k, v = _ops.cat([k, zeros], dim=2), _ops.cat([v, zeros], dim=2)
        extra += 1
    src_len = k.shape[2] - extra  # the keys a key_padding_mask covers

    if kpm is not None:
        want = (n, src_len) if batched else (src_len,)
        if tuple(kpm.shape) != want:
            raise AssertionError(f"{fname}: expected key_padding_mask of shape {_size(want)}, "
                                 f"got {_size(kpm.shape)}")
        kpm = kpm.reshape(n, 1, 1, src_len)
        mask = kpm if mask is None else mask + kpm
    if mask is not None and extra:
        mask = F.pad(mask, (0, extra))
    if causal:
        allowed = np.tril(np.ones((tgt_len, src_len + extra), dtype=bool))
        mask = F._beside(query, np.where(allowed, 0.0, -np.inf).astype(
            numpy_dtype(query.dtype)))

    # without weights PyTorch runs scaled_dot_product_attention: rows the mask blocks
    # entirely get zero weights there (NaN when the weights are returned)
    dead = None if mask is None or need_weights else F._dead_rows(mask)
    if dead is not None:
        mask = _ops.where(dead, 0.0, mask)
    scores = _ops.matmul(q * math.sqrt(1.0 / head_dim), k.transpose(-2, -1))
    if mask is not None:
        scores = scores + mask
    weights = F.softmax(scores, dim=-1)
    if dead is not None:
        weights = _ops.where(dead, 0.0, weights)
    weights = F.dropout(weights, dropout_p, training)
    out = _ops.matmul(weights, v).transpose(1, 2).reshape(n, tgt_len, embed_dim)
    out = F.linear(out, out_proj_weight, out_proj_bias)
    if not batched:
        out = out[0]
    elif not batch_first:
        out = out.transpose(0, 1).contiguous()  # row-major, as PyTorch's
    if not need_weights:
        return out, None
    if average_attn_weights:
        weights = weights.mean(dim=1)
    return out, (weights if batched else weights[0])


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """Multi-head attention, as ``torch.nn.functional.multi_head_attention_forward``.

    Sequence-first layout: ``query`` (L, N, E) or unbatched (L, E); ``key`` (S, N, Ek) and
    ``value`` (S, N, Ev) (or (S, Ek), (S, Ev)); Ek = Ev = E unless
    ``use_separate_proj_weight`` (then ``q_proj_weight`` (E, E), ``k_proj_weight`` (E, Ek),
    ``v_proj_weight`` (E, Ev)); else ``in_proj_weight`` (3E, E). ``in_proj_bias`` (3E,),
    ``bias_k``/``bias_v`` (1, 1, E) appended to the projected keys/values,
    ``add_zero_attn`` appends a zero key/value, ``static_k``/``static_v`` (N*H, S, E/H)
    replace the projected keys/values. ``key_padding_mask`` (N, S) or (S,) and
    ``attn_mask`` (L, S) or (N*H, L, S): bool (True = may NOT attend) or float (added to
    the scores). ``is_causal`` is a hint that ``attn_mask`` is the causal mask (as PyTorch,
    the causal mask is then used in its place when there is no key padding mask and
    ``need_weights`` is False). Dropout (``dropout_p``) on the attention weights when
    ``training``. Dtypes follow ``query``.

    Returns ``(attn_output, attn_weights)``: output (L, N, E) or (L, E); weights
    (N, L, S') averaged over heads or (N, H, L, S') per head (unbatched: without N), S' =
    S plus the appended positions, post-dropout; None when ``need_weights`` is False.

    Raises
    ------
    AssertionError
        Inputs not 2-D/3-D or of mixed ranks, ``query``'s embedding dim not
        ``embed_dim_to_check`` or not divisible by ``num_heads``, key/value dims that do not
        fit the projection weights, a key padding mask of the wrong shape, non-bool
        non-float masks, bias_k without bias_v (or with static keys).
    RuntimeError
        ``attn_mask`` of the wrong shape, ``is_causal`` without ``attn_mask``.
    """
    return _mha(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight,
                out_proj_bias, training, key_padding_mask, need_weights, attn_mask,
                use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight,
                static_k, static_v, average_attn_weights, is_causal, False,
                "multi_head_attention_forward")


# --- modules -----------------------------------------------------------------------------

class MultiheadAttention(Module):
    """Multi-head attention ``Concat(head_1..head_H) W_O``, ``head_i = softmax(Q_i K_i^T /
    sqrt(E/H) + mask) V_i``, as ``torch.nn.MultiheadAttention``.

    Parameters (PyTorch's names and init): ``in_proj_weight`` (3E, E) xavier-uniform, or
    ``q_proj_weight`` (E, E), ``k_proj_weight`` (E, kdim), ``v_proj_weight`` (E, vdim) when
    ``kdim``/``vdim`` differ from ``embed_dim``; ``in_proj_bias`` (3E,) and
    ``out_proj.bias`` zeros (when ``bias``); ``out_proj`` a :class:`Linear` (E, E);
    ``bias_k``/``bias_v`` (1, 1, E) xavier-normal with ``add_bias_kv``. ``dtype=None`` is
    chainrule's default float dtype.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)``: ``query`` (L, N, E), ``key`` (S, N,
    kdim), ``value`` (S, N, vdim), or (N, L, E) ... with ``batch_first``, or unbatched
    (L, E), (S, kdim), (S, vdim). Masks and outputs as
    :func:`multi_head_attention_forward`; dropout on the attention weights in training mode
    only. Returns ``(attn_output, attn_weights or None)``.

    Raises ValueError for non-positive sizes and AssertionError when ``embed_dim`` is not
    divisible by ``num_heads``; forward raises as :func:`multi_head_attention_forward`,
    e.g. ``MultiheadAttention: query has embed_dim 6 but the module was built for 8``.
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"MultiheadAttention: embed_dim and num_heads must be greater "
                             f"than 0, got embed_dim={embed_dim} and num_heads={num_heads}")
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.dropout, self.batch_first = dropout, batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError(f"MultiheadAttention: embed_dim must be divisible by "
                                 f"num_heads, got {embed_dim} and {num_heads}")
        separate = ("q_proj_weight", "k_proj_weight", "v_proj_weight")
        if self._qkv_same_embed_dim:
            self.in_proj_weight = _empty((3 * embed_dim, embed_dim), dtype)
            for name in separate:
                self.register_parameter(name, None)
        else:
            for name, d in zip(separate, (embed_dim, self.kdim, self.vdim)):
                setattr(self, name, _empty((embed_dim, d), dtype))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = _empty((3 * embed_dim,), dtype)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        dtype=dtype)
        if add_bias_kv:
            self.bias_k = _empty((1, 1, embed_dim), dtype)
            self.bias_v = _empty((1, 1, embed_dim), dtype)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        for name in ("in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight"):
            if getattr(self, name) is not None:
                init.xavier_uniform_(getattr(self, name))
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        for p in (self.bias_k, self.bias_v):
            if p is not None:
                init.xavier_normal_(p)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        return _mha(query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
                    self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn,
                    self.dropout, self.out_proj.weight, self.out_proj.bias, self.training,
                    key_padding_mask, need_weights, attn_mask, not self._qkv_same_embed_dim,
                    self.q_proj_weight, self.k_proj_weight, self.v_proj_weight, None, None,
                    average_attn_weights, is_causal, self.batch_first, "MultiheadAttention")


def _activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if isinstance(activation, str) or not callable(activation):
        raise RuntimeError(f"activation should be relu/gelu or a callable, not {activation!r}")
    return activation


class _Layer(Module):
    """What the encoder and decoder layers share: ``n_attn`` attention blocks and a
    feed-forward block, each a residual block with its own ``norm{i}`` and ``dropout{i}``
    (registered in PyTorch's order)."""

    def __init__(self, n_attn, d_model, nhead, dim_feedforward, dropout, activation,
                 layer_norm_eps, batch_first, norm_first, bias, dtype):
        super().__init__()
        names = ("self_attn", "multihead_attn")[:n_attn]
        for name in names:
            setattr(self, name, MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                   batch_first=batch_first, dtype=dtype))
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        for i in range(1, n_attn + 2):
            setattr(self, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias,
                                                dtype=dtype))
        for i in range(1, n_attn + 2):
            setattr(self, f"dropout{i}", Dropout(dropout))
        self.activation = _activation_fn(activation)

    def _block(self, i, x, fn):
        """Residual block ``i``: ``x + dropout_i(fn(norm_i(x)))`` (norm_first) or
        ``norm_i(x + dropout_i(fn(x)))``."""
        norm, drop = getattr(self, f"norm{i}"), getattr(self, f"dropout{i}")
        if self.norm_first:
            return x + drop(fn(norm(x)))
        return norm(x + drop(fn(x)))

    @staticmethod
    def _attend(attn, memory, mask, key_padding_mask, is_causal):
        def fn(x):
            kv = x if memory is None else memory
            return attn(x, kv, kv, attn_mask=mask, key_padding_mask=key_padding_mask,
                        need_weights=False, is_causal=is_causal)[0]
        return fn

    def _ff(self, x):
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


_LAYER_DOC = """

    Shapes: (S, N, E) or (N, S, E) with ``batch_first``, or unbatched (S, E); the output
    has the input's shape. Masks as :class:`MultiheadAttention` (bool True = may not
    attend, or float added); ``activation`` is ``"relu"``, ``"gelu"`` or a callable
    (RuntimeError for another string). Dropout (``dropout``) is active in training mode
    only. Parameter names are PyTorch's; ``dtype=None`` is chainrule's default float dtype.
    Errors are those of :class:`MultiheadAttention`, ``Linear`` and ``LayerNorm``.
    """


class TransformerEncoderLayer(_Layer):
    __doc__ = ("Self-attention then a feed-forward block (``linear2(dropout(activation("
               "linear1(x))))``), each residual with LayerNorm after (``norm_first=False``) or "
               "before (``norm_first=True``), as ``torch.nn.TransformerEncoderLayer``.\n\n    "
               "``forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False)``."
               + _LAYER_DOC)

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__(1, d_model, nhead, dim_feedforward, dropout, activation,
                         layer_norm_eps, batch_first, norm_first, bias, dtype)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = self._block(1, src, self._attend(self.self_attn, None, src_mask,
                                             src_key_padding_mask, is_causal))
        return self._block(2, x, self._ff)


class TransformerDecoderLayer(_Layer):
    __doc__ = ("Self-attention on ``tgt``, attention to ``memory`` (``multihead_attn``), then "
               "a feed-forward block, each residual with LayerNorm after or before "
               "(``norm_first``), as ``torch.nn.TransformerDecoderLayer``.\n\n    "
               "``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask="
               "None, memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal="
               "False)``; ``memory`` (S, N, E) like ``tgt`` (T, N, E)." + _LAYER_DOC)

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__(2, d_model, nhead, dim_feedforward, dropout, activation,
                         layer_norm_eps, batch_first, norm_first, bias, dtype)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = self._block(1, tgt, self._attend(self.self_attn, None, tgt_mask,
                                             tgt_key_padding_mask, tgt_is_causal))
        x = self._block(2, x, self._attend(self.multihead_attn, memory, memory_mask,
                                           memory_key_padding_mask, memory_is_causal))
        return self._block(3, x, self._ff)


class _Stack(Module):
    def __init__(self, layer, num_layers, norm):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def _finish(self, output):
        return output if self.norm is None else self.norm(output)


class TransformerEncoder(_Stack):
    """``num_layers`` deep copies of ``encoder_layer`` applied in turn (``layers.0``, ...),
    then ``norm`` when given, as ``torch.nn.TransformerEncoder``.

    ``forward(src, mask=None, src_key_padding_mask=None, is_causal=None)``: shapes and masks
    as the layer's. ``enable_nested_tensor`` and ``mask_check`` are accepted and unused
    (chainrule has no nested tensors). PyTorch's result is the same, except at the positions
    ``src_key_padding_mask`` pads when its nested-tensor fast path runs (eval mode without
    autograd, batch first, post-norm layers): there it gives zeros (before ``norm``),
    chainrule the layers' values, as PyTorch's own slow path.
    """

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__(encoder_layer, num_layers, norm)
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                           is_causal=bool(is_causal))
        return self._finish(output)


class TransformerDecoder(_Stack):
    """``num_layers`` deep copies of ``decoder_layer`` applied in turn to ``tgt`` (each
    attending to ``memory``), then ``norm`` when given, as ``torch.nn.TransformerDecoder``.

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False)``.
    """

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__(decoder_layer, num_layers, norm)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                           memory_key_padding_mask, bool(tgt_is_causal), memory_is_causal)
        return self._finish(output)


class Transformer(Module):
    """An encoder (``num_encoder_layers`` layers and a final LayerNorm) and a decoder
    (likewise), as ``torch.nn.Transformer``; every parameter of 2 or more dims is
    re-initialised with ``xavier_uniform_``. ``custom_encoder``/``custom_decoder`` replace
    the built ones.

    ``forward(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
    src_key_padding_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None,
    src_is_causal=None, tgt_is_causal=None, memory_is_causal=False)``: ``src`` (S, N, E),
    ``tgt`` (T, N, E) (batch first with ``batch_first``; unbatched (S, E), (T, E)) ->
    (T, N, E).

    Raises RuntimeError when ``src`` and ``tgt`` differ in batch size or their feature size
    is not ``d_model``.
    """

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation=F.relu, custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        super().__init__()
        args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                batch_first, norm_first, bias)
        for name, custom, layer_cls, stack_cls, n in (
                ("encoder", custom_encoder, TransformerEncoderLayer, TransformerEncoder,
                 num_encoder_layers),
                ("decoder", custom_decoder, TransformerDecoderLayer, TransformerDecoder,
                 num_decoder_layers)):
            if custom is None:
                norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
                custom = stack_cls(layer_cls(*args, dtype=dtype), n, norm)
            setattr(self, name, custom)
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        bdim = 0 if self.batch_first else 1
        if src.ndim == 3 and src.shape[bdim] != tgt.shape[bdim]:
            raise RuntimeError(f"Transformer: the batch number of src and tgt must be equal "
                               f"(src {_size(src.shape)}, tgt {_size(tgt.shape)}, "
                               f"batch_first={self.batch_first})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(f"Transformer: the feature number of src and tgt must be equal "
                               f"to d_model={self.d_model} (src {_size(src.shape)}, tgt "
                               f"{_size(tgt.shape)})")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """The (sz, sz) float causal mask: -inf above the diagonal, 0 elsewhere (``dtype``
        default: chainrule's default float dtype), made on ``device``."""
        return _creation.tensor(np.triu(np.full((sz, sz), -np.inf, dtype=_dtype(dtype)), 1),
                                device=device)
