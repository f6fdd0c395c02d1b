"""Recurrent layers (``torch.nn``'s RNN, LSTM, GRU and their cells), composed of
chainrule's differentiable ops.

One time step of every kind of layer is :func:`_step`; the cells call it once, the
multi-layer modules loop it over time, directions and layers. Parameters have PyTorch's
names, shapes, order and initialisation, so a PyTorch ``state_dict`` loads as it is.
Nothing here has its own derivative rule: gradients of any order, ``chainrule.func``
transforms and ``gradcheck`` go through the ops (``linear``, ``sigmoid``, ``tanh``, ...).

A ``PackedSequence`` input (``nn.utils.rnn``) gives a ``PackedSequence`` output, as in
PyTorch: each sequence runs for its own length only.
"""

from __future__ import annotations

import math
import warnings

from .. import _creation
from .. import ops as _ops
from . import functional as F
from . import init
from ._module import Module
from .modules import _empty
from .utils.rnn import PackedSequence

__all__ = ["RNNCellBase", "RNNCell", "LSTMCell", "GRUCell", "RNNBase", "RNN", "LSTM", "GRU"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _rnn_mode(nonlinearity):
    if nonlinearity not in ("tanh", "relu"):
        raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                         "'relu'.")
    return "RNN_" + nonlinearity.upper()


def _step(mode, gi, state, w_hh, b_hh, w_hr=None):
    """One time step. ``gi = x W_ih^T + b_ih`` (N, gates*H); ``state`` is ``(h,)``, or
    ``(h, c)`` for an LSTM; returns the new state. ``w_hr`` projects an LSTM's ``h``."""
    h = state[0]
    gh = F.linear(h, w_hh, b_hh)
    if mode == "GRU":
        i_r, i_z, i_n = _ops.chunk(gi, 3, -1)
        h_r, h_z, h_n = _ops.chunk(gh, 3, -1)
        r = _ops.sigmoid(i_r + h_r)
        z = _ops.sigmoid(i_z + h_z)
        n = _ops.tanh(i_n + r * h_n)
        return ((1 - z) * n + z * h,)
    gates = gi + gh
    if mode == "LSTM":
        i, f, g, o = _ops.chunk(gates, 4, -1)
        c = _ops.sigmoid(f) * state[1] + _ops.sigmoid(i) * _ops.tanh(g)
        h = _ops.sigmoid(o) * _ops.tanh(c)
        return (h if w_hr is None else F.linear(h, w_hr), c)
    return (_ops.tanh(gates) if mode == "RNN_TANH" else _ops.relu(gates),)


def _check_input(name, x, ndims, input_size, weight):
    if x.ndim not in ndims:
        raise ValueError(f"{name}: input must have {ndims[1]} dimensions (or {ndims[0]} "
                         f"unbatched), got {x.ndim} (shape {tuple(x.shape)})")
    if x.shape[-1] != input_size:
        raise RuntimeError(f"{name}: input.size(-1) must be equal to input_size. Expected "
                           f"{input_size}, got {x.shape[-1]}")
    if x.dtype != weight.dtype:
        raise ValueError(f"{name}: input dtype ({x.dtype}) does not match weight dtype "
                         f"({weight.dtype}); convert the input (input.to({weight.dtype})) or "
                         f"the model (model.to({x.dtype}))")


def _initial_state(name, hx, shapes, batched, dtype, batch_dim, device=None):
    """The initial state as a list of tensors of the (batched) ``shapes``: zeros when
    ``hx`` is None, else ``hx`` (a tuple ``(h, c)`` when two shapes are given) checked
    against ``shapes`` (less ``batch_dim`` when not ``batched``)."""
    if hx is None:
        return [_creation.zeros(*s, dtype=dtype, device=device) for s in shapes]
    if len(shapes) == 1:
        hx = (hx,)
    elif not isinstance(hx, (tuple, list)) or len(hx) != 2:
        raise TypeError(f"{name}: hx must be a tuple (h_0, c_0), got {type(hx).__name__}")
    out = []
    for k, (h, shape) in enumerate(zip(hx, shapes)):
        h = F._t(h)
        want = shape if batched else shape[:batch_dim] + shape[batch_dim + 1:]
        if tuple(h.shape) != want:
            what = "hidden" if len(shapes) == 1 else f"hidden[{k}]"
            raise RuntimeError(f"{name}: Expected {what} size {want}, got {tuple(h.shape)}")
        out.append(h if batched else _ops.unsqueeze(h, batch_dim))
    return out


def _reset_uniform(module):
    bound = 1.0 / math.sqrt(module.hidden_size)
    for p in module.parameters():
        init.uniform_(p, -bound, bound)


class RNNCellBase(Module):
    """The base of :class:`RNNCell`, :class:`LSTMCell` and :class:`GRUCell`, as PyTorch's:
    ``(input_size, hidden_size, bias, num_chunks, device=None, dtype=None)`` makes
    ``weight_ih`` (num_chunks*hidden_size, input_size), ``weight_hh`` (num_chunks*hidden_size,
    hidden_size) and, with ``bias``, ``bias_ih`` and ``bias_hh``, all from
    U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)); ``forward`` runs the step of ``mode``
    ('RNN_TANH' unless a subclass sets it)."""

    mode = "RNN_TANH"

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        gates = num_chunks * hidden_size
        self.weight_ih = _empty((gates, input_size), dtype)
        self.weight_hh = _empty((gates, hidden_size), dtype)
        if bias:
            self.bias_ih = _empty((gates,), dtype)
            self.bias_hh = _empty((gates,), dtype)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        _reset_uniform(self)

    def forward(self, input, hx=None):
        name = type(self).__name__
        x = F._t(input)
        _check_input(name, x, (1, 2), self.input_size, self.weight_ih)
        batched = x.ndim == 2
        if not batched:
            x = _ops.unsqueeze(x, 0)
        shapes = [(x.shape[0], self.hidden_size)] * (2 if self.mode == "LSTM" else 1)
        state = _initial_state(name, hx, shapes, batched, x.dtype, 0, x.device)
        state = _step(self.mode, F.linear(x, self.weight_ih, self.bias_ih), state,
                      self.weight_hh, self.bias_hh)
        if not batched:
            state = tuple(_ops.squeeze(s, 0) for s in state)
        return state if self.mode == "LSTM" else state[0]

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.mode == "RNN_RELU":
            s += ", nonlinearity=relu"
        return s


_CELL_DOC = """

    Shapes: ``input`` (N, input_size) or unbatched (input_size,), of the parameters'
    dtype;
    {states} (N, hidden_size) (unbatched: (hidden_size,)), zeros when omitted.

    Parameters ``weight_ih`` (G*hidden_size, input_size), ``weight_hh`` (G*hidden_size,
    hidden_size), ``bias_ih`` and ``bias_hh`` (G*hidden_size,) (None with ``bias=False``),
    G = {gates}, all from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), of ``dtype`` (None:
    chainrule's default float dtype), on ``device`` (drawn on the host, then moved there).

    Raises
    ------
    ValueError
        An input that is not 2-D (or 1-D unbatched) or whose dtype is not the
        parameters'.{raises}
    RuntimeError
        The input's last dim is not ``input_size`` (``input.size(-1) must be equal to
        input_size``), or a state's shape is not the expected one (``Expected hidden size
        (N, hidden_size), got ...``).
    """


class RNNCell(RNNCellBase):
    """An Elman RNN cell: ``forward(input, hx=None)`` returns
    ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``, ``act`` tanh or relu
    (``nonlinearity``)."""

    __doc__ += _CELL_DOC.format(
        states="``hx`` and ``h'``", gates=1,
        raises="\n        In the constructor, a ``nonlinearity`` other than 'tanh' or 'relu'.")

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        self.mode = _rnn_mode(nonlinearity)
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, _GATES[self.mode], dtype=dtype)


class LSTMCell(RNNCellBase):
    """A long short-term memory cell: ``forward(input, hx=None)``, ``hx = (h, c)``, returns
    ``(h', c')``: with ``i, f, g, o`` the four chunks (in that order) of ``x W_ih^T + b_ih +
    h W_hh^T + b_hh``, ``c' = sigmoid(f) * c + sigmoid(i) * tanh(g)`` and
    ``h' = sigmoid(o) * tanh(c')``."""

    mode = "LSTM"
    __doc__ += _CELL_DOC.format(
        states="``h``, ``c``, ``h'`` and ``c'``", gates=4,
        raises="\n    TypeError\n        ``hx`` given and not a pair ``(h, c)``.")

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, _GATES[self.mode], dtype=dtype)


class GRUCell(RNNCellBase):
    """A gated recurrent unit cell: ``forward(input, hx=None)`` returns
    ``h' = (1 - z) * n + z * h`` where, with ``W_i* x + b_i*`` and ``W_h* h + b_h*`` the
    chunks (r, z, n in that order) of the input and hidden products,
    ``r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)``, ``z = sigmoid(W_iz x + b_iz + W_hz h +
    b_hz)`` and ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))`` (as PyTorch)."""

    mode = "GRU"
    __doc__ += _CELL_DOC.format(states="``hx`` and ``h'``", gates=3, raises="")

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, _GATES[self.mode], dtype=dtype)


def _check_args(input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size):
    for arg, name in ((bias, "bias"), (batch_first, "batch_first")):
        if not isinstance(arg, bool):
            raise TypeError(f"{name} should be of type bool, got: {type(arg).__name__}")
    for arg, name in ((input_size, "input_size"), (hidden_size, "hidden_size")):
        if not isinstance(arg, int):
            raise TypeError(f"{name} should be of type int, got: {type(arg).__name__}")
        if arg <= 0:
            raise ValueError(f"{name} must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not (
            0 <= dropout <= 1):
        raise ValueError("dropout should be a number in range [0, 1] representing the "
                         "probability of an element being zeroed")
    if dropout > 0 and num_layers == 1:
        warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                      "non-zero dropout expects num_layers greater than 1, but got "
                      f"dropout={dropout} and num_layers={num_layers}", stacklevel=4)
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable "
                         "projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


def _permute_state(hx, indices):
    """``hx`` (a tensor, or a pair for an LSTM) reordered along its batch dim (1)."""
    if isinstance(hx, (tuple, list)):
        return type(hx)(_permute_state(h, indices) for h in hx)
    return _ops.index_select(F._t(hx), 1, indices)


def _packed_direction(mode, gi, state, batch_sizes, reverse, w_hh, b_hh, w_hr):
    """Run one direction over packed data (PyTorch's layout: the rows of step t are
    ``gi[offset_t : offset_t + batch_sizes[t]]``, sequences sorted by decreasing length).

    Forward, a sequence's state stops being updated once it has ended (its final state is
    the one after its last step); backward, a sequence joins, from the initial state, at its
    own last step. Returns the outputs in the packed layout and the final state (N, H)."""
    offsets = [0]
    for b in batch_sizes:
        offsets.append(offsets[-1] + b)
    steps = len(batch_sizes)
    seq = [None] * steps
    if not reverse:
        done = []  # (first row, state pieces) of sequences that have ended
        current = tuple(s[:batch_sizes[0]] for s in state) if steps else state
        for t in range(steps):
            b = batch_sizes[t]
            if b < current[0].shape[0]:
                done.append(tuple(s[b:] for s in current))
                current = tuple(s[:b] for s in current)
            current = _step(mode, gi[offsets[t]:offsets[t + 1]], current, w_hh, b_hh, w_hr)
            seq[t] = current[0]
        pieces = [current] + done[::-1]
        final = tuple(_ops.cat([p[k] for p in pieces], 0) if len(pieces) > 1 else current[k]
                      for k in range(len(state)))
    else:
        current = None
        for t in reversed(range(steps)):
            b = batch_sizes[t]
            if current is None:
                current = tuple(s[:b] for s in state)
            elif b > current[0].shape[0]:
                have = current[0].shape[0]
                current = tuple(_ops.cat([c, s[have:b]], 0) for c, s in zip(current, state))
            current = _step(mode, gi[offsets[t]:offsets[t + 1]], current, w_hh, b_hh, w_hr)
            seq[t] = current[0]
        final = current if current is not None else state
    return (_ops.cat(seq, 0) if steps else gi[:0, :0]), final


class RNNBase(Module):
    """The multi-layer loop shared by :class:`RNN`, :class:`LSTM` and :class:`GRU`
    (``mode`` is 'RNN_TANH', 'RNN_RELU', 'LSTM' or 'GRU')."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        _check_args(input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size)
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bidirectional
        self.proj_size = proj_size
        gates, out = _GATES[mode] * hidden_size, proj_size or hidden_size
        num_directions = 2 if bidirectional else 1
        self._flat_weights_names = []
        for layer in range(num_layers):
            layer_in = input_size if layer == 0 else out * num_directions
            for suffix in ("", "_reverse")[:num_directions]:
                shapes = {"weight_ih": (gates, layer_in), "weight_hh": (gates, out)}
                if bias:
                    shapes.update(bias_ih=(gates,), bias_hh=(gates,))
                if proj_size:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                for kind, shape in shapes.items():
                    name = f"{kind}_l{layer}{suffix}"
                    setattr(self, name, _empty(shape, dtype))
                    self._flat_weights_names.append(name)
        self.reset_parameters()

    def reset_parameters(self):
        """Every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        _reset_uniform(self)

    def flatten_parameters(self):
        """Does nothing (PyTorch packs the weights for cuDNN here)."""

    @property
    def all_weights(self):
        """The parameters, a list per layer and direction (in registration order)."""
        per = len(self._flat_weights_names) // (self.num_layers * (1 + self.bidirectional))
        names = self._flat_weights_names
        return [[getattr(self, n) for n in names[k:k + per]] for k in range(0, len(names), per)]

    def _layer_weights(self, layer, direction):
        suffix = f"_l{layer}" + ("_reverse" if direction else "")
        return [getattr(self, kind + suffix, None)
                for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")]

    def _run_direction(self, layer, d, x, state, batch_sizes):
        """One layer's one direction over the time-major ``x``: returns the per-step
        outputs (stacked, (L, N, H_out); or, for packed data, concatenated like ``x``) and
        the final state."""
        w_ih, w_hh, b_ih, b_hh, w_hr = self._layer_weights(layer, d)
        gi = F.linear(x, w_ih, b_ih)
        if batch_sizes is None:
            gi = _ops.unbind(gi, 0)
            seq = [None] * len(gi)
            for t in (reversed(range(len(gi))) if d else range(len(gi))):
                state = _step(self.mode, gi[t], state, w_hh, b_hh, w_hr)
                seq[t] = state[0]
            return _ops.stack(seq, 0), state
        return _packed_direction(self.mode, gi, state, batch_sizes, d, w_hh, b_hh, w_hr)

    def forward(self, input, hx=None):
        name = type(self).__name__
        packed = isinstance(input, PackedSequence)
        if packed:
            batch_sizes = [int(b) for b in input.batch_sizes.numpy().tolist()]
            x = F._t(input.data)
            _check_input(name, x, (2, 2), self.input_size, self.weight_ih_l0)
            batch = batch_sizes[0] if batch_sizes else 0
            batched = True
            if hx is not None and input.sorted_indices is not None:
                hx = _permute_state(hx, input.sorted_indices)
        else:
            batch_sizes = None
            x = F._t(input)
            _check_input(name, x, (2, 3), self.input_size, self.weight_ih_l0)
            batched = x.ndim == 3
            if not batched:
                x = _ops.unsqueeze(x, 1)
            elif self.batch_first:
                x = _ops.transpose(x, 0, 1)
            batch = x.shape[1]
        num_directions = 2 if self.bidirectional else 1
        lead = (self.num_layers * num_directions, batch)
        shapes = [lead + (self.proj_size or self.hidden_size,)]
        if self.mode == "LSTM":
            shapes.append(lead + (self.hidden_size,))
        initial = [_ops.unbind(s, 0)
                   for s in _initial_state(name, hx, shapes, batched, x.dtype, 1, x.device)]
        final = []
        for layer in range(self.num_layers):
            if layer:
                x = F.dropout(x, self.dropout, self.training)
            outputs = []
            for d in range(num_directions):
                state = tuple(s[layer * num_directions + d] for s in initial)
                out, state = self._run_direction(layer, d, x, state, batch_sizes)
                outputs.append(out)
                final.append(state)
            x = outputs[0] if num_directions == 1 else _ops.cat(outputs, -1)
        states = [_ops.stack(list(s), 0) for s in zip(*final)]
        if packed:
            if input.unsorted_indices is not None:
                states = [_ops.index_select(s, 1, input.unsorted_indices) for s in states]
            x = PackedSequence(x, input.batch_sizes, input.sorted_indices,
                               input.unsorted_indices)
        elif not batched:
            x, states = _ops.squeeze(x, 1), [_ops.squeeze(s, 1) for s in states]
        elif self.batch_first:
            x = _ops.transpose(x, 0, 1)
        return x, (tuple(states) if self.mode == "LSTM" else states[0])

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        for key, default in (("proj_size", 0), ("num_layers", 1), ("bias", True),
                             ("batch_first", False), ("dropout", 0), ("bidirectional", False)):
            if getattr(self, key) != default:
                s += f", {key}={getattr(self, key)}"
        return s


_LAYER_DOC = """

    Shapes (D = 2 if ``bidirectional`` else 1; H_out = ``proj_size`` if > 0, else
    ``hidden_size``): ``input`` (L, N, input_size), (N, L, input_size) with
    ``batch_first``, or unbatched (L, input_size), of the parameters' dtype. ``output``
    (L, N, D*H_out) (batch_first: (N, L, D*H_out); unbatched: (L, D*H_out)) is the last
    layer's h_t for every t, the directions concatenated (forward first).
    {states} (unbatched: without the N dim) are zeros when omitted; the final ones hold every
    layer's and direction's last state (for the backward direction, the one after t = 0).
    ``dropout`` is applied to every layer's output but the last, in training mode only.
    A :class:`~chainrule.nn.utils.rnn.PackedSequence` input (``data`` (sum of lengths,
    input_size)) gives a ``PackedSequence`` output of the same layout, each sequence run for
    its own length; ``h_0``/``h_n`` are then in the original batch order (N = the number of
    sequences).

    Parameters, for each layer k and direction (suffix ``_reverse`` for the backward one),
    registered with PyTorch's names and order so that a PyTorch ``state_dict`` loads:
    ``weight_ih_l{{k}}`` (G*hidden_size, input_size for k = 0, else D*H_out),
    ``weight_hh_l{{k}}`` (G*hidden_size, H_out), ``bias_ih_l{{k}}`` and ``bias_hh_l{{k}}``
    (G*hidden_size,) (absent with ``bias=False``){params}, G = {gates}. All from
    U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), of ``dtype`` (None: chainrule's default
    float dtype), on ``device`` (drawn on the host, then moved there).

    Raises
    ------
    ValueError
        In the constructor, non-positive sizes, ``dropout`` outside [0, 1]{raises};
        in ``forward``, an input that is not 3-D (``input must have 3 dimensions (or 2
        unbatched), got ...``) or whose dtype is not the parameters'.
    TypeError
        Non-bool ``bias`` or ``batch_first``{type_raises}.
    RuntimeError
        The input's last dim is not ``input_size`` (``input.size(-1) must be equal to
        input_size``), or an initial state's shape is not the expected one (``Expected
        hidden size (D*num_layers, N, H_out), got ...``{which}).
    """


class RNN(RNNBase):
    """A multi-layer Elman RNN: ``forward(input, h_0=None)`` returns ``(output, h_n)``, with
    ``h_t = act(x_t W_ih^T + b_ih + h_(t-1) W_hh^T + b_hh)`` for each layer and direction,
    ``act`` tanh or relu (``nonlinearity``); layer k > 0 reads layer k-1's output."""

    __doc__ += _LAYER_DOC.format(
        states="``h_0`` and ``h_n`` (D*num_layers, N, hidden_size)", params="", gates=1,
        raises=",\n        an unknown ``nonlinearity``", type_raises="", which="")

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None,
                 dtype=None):
        self.nonlinearity = nonlinearity
        super().__init__(_rnn_mode(nonlinearity), input_size, hidden_size, num_layers, bias,
                         batch_first, dropout, bidirectional, 0, device, dtype)

    def extra_repr(self):
        s = super().extra_repr()
        return s + (", nonlinearity=relu" if self.mode == "RNN_RELU" else "")


class LSTM(RNNBase):
    """A multi-layer long short-term memory RNN: ``forward(input, hx=None)``,
    ``hx = (h_0, c_0)``, returns ``(output, (h_n, c_n))``; each layer and direction runs
    :class:`LSTMCell`'s step (gates i, f, g, o), then ``h_t = h_t W_hr^T`` when
    ``proj_size > 0``."""

    __doc__ += _LAYER_DOC.format(
        states="``h_0``, ``h_n`` (D*num_layers, N, H_out), ``c_0`` and ``c_n``\n    "
        "(D*num_layers, N, hidden_size)",
        params=" and, when ``proj_size > 0``,\n    ``weight_hr_l{k}`` (proj_size, hidden_size)",
        gates=4, raises=",\n        ``proj_size`` negative or not below ``hidden_size``",
        type_raises="; ``hx`` given and not a pair ``(h_0, c_0)``",
        which=";\n        ``hidden[0]`` is h_0, ``hidden[1]`` c_0")

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device, dtype)


class GRU(RNNBase):
    """A multi-layer gated recurrent unit RNN: ``forward(input, h_0=None)`` returns
    ``(output, h_n)``; each layer and direction runs :class:`GRUCell`'s step (gates r, z,
    n; ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``, as PyTorch)."""

    __doc__ += _LAYER_DOC.format(
        states="``h_0`` and ``h_n`` (D*num_layers, N, hidden_size)", params="", gates=3,
        raises="", type_raises="", which="")

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, 0, device, dtype)
