"""Custom differentiable functions with a hand-written backward, as ``torch.autograd.Function``.

A subclass defines ``forward(ctx, *args, **kwargs)`` and ``backward(ctx, *grad_outputs)``
as static methods and is called through ``MyFunction.apply(*args)``. ``backward`` receives
one cotangent per output (the gradient of the final scalar with respect to that output)
and returns one gradient per positional input of ``forward``: the vector-Jacobian product
``grad_output^T J`` for that input, of the input's shape, or ``None``.

The call becomes a :class:`FunctionNode` in the graph, so the engine treats it exactly as
it treats a primitive.
"""

from __future__ import annotations

import collections
import functools
import warnings
import weakref

import numpy as np

from .. import _dispatch, _dual, _state
from .._batched import Batched, NotBatchable, in_user_vmap, in_vmap_evaluation, vmap_evaluation
from .._engine import CROSS_DEVICE, Unbatchable
from .._methods import RECORDED_MOVE, move_data
from .._node import FREED, DelayedError, Node, _with_history, unpack_value
from .._state import STATE
from .._tensor import INFERENCE_SAVED, InferenceVersion, Tensor, _fill, wrap
from ..backend import backend_of, dtype_kind
from . import anomaly


def _only_tensors(method, tensors):
    for i, t in enumerate(tensors):
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{method} can only save tensors or None, but argument {i} is a "
                            f"{type(t).__name__}; store other values as ctx attributes")


def _nothing_differentiable(cotangents, ctx):
    """Whether a backward had no value that could carry history: no cotangent or saved
    tensor requiring grad, and no tensor or array kept as a ctx attribute (a backward
    linear in constant cotangents, as embedding's row scaling: its gradient truly is
    constant, as PyTorch's, and can be differentiated again)."""
    if any(g is not None and g._requires_grad for g in cotangents):
        return False
    if any(t is not None and t._requires_grad for t in ctx._saved):
        return False
    return not any(isinstance(v, (Tensor, np.ndarray, list, tuple, dict))
                   for k, v in vars(ctx).items() if k not in _CTX_OWN)


class FunctionCtx:
    """The ``ctx`` object passed to ``forward`` and ``backward``.

    Attributes set on it in ``forward`` are available in ``backward``. ``needs_input_grad``
    is a tuple of bools, one per positional input.
    """

    def __init__(self, needs_input_grad):
        self.needs_input_grad = needs_input_grad
        self.materialize_grads = True
        self._saved = ()
        self._versions = ()
        self._freed = False
        self._non_differentiable = set()
        self._name = "Function"
        self._saved_outputs = None  # {index in saved: output_nr} for saved outputs
        self._returned = None  # the outputs' tangents by level (see _as_output)
        self._node = None  # weak reference to the FunctionNode, once recorded
        self._saved_forward = None  # save_for_forward's tensors, read back in jvp
        self._in_jvp = False
        self._dirty = ()
        self._packed = None  # saved_tensors_hooks: (PackedValue or None, edge) per saved tensor

    def save_for_backward(self, *tensors):
        """Save tensors (or None) for backward; read them back through ``saved_tensors``.
        Changing a saved tensor in place before backward is detected there. Raises
        TypeError for anything but tensors and None; an inference tensor raises
        RuntimeError when the call is recorded (see ``Function.apply``)."""
        _only_tensors("save_for_backward", tensors)
        self._saved = tensors
        self._versions = tuple(None if t is None or t._vc.__class__ is InferenceVersion
                               else (t._vc, t._vc[0]) for t in tensors)

    def save_for_forward(self, *tensors):
        """Save tensors (or None) for ``jvp``; inside ``jvp``, ``saved_tensors`` gives them
        back (as in PyTorch)."""
        _only_tensors("save_for_forward", tensors)
        self._saved_forward = tensors

    def _as_output(self, t, node, nr):
        """A saved output, for a recorded backward: the output (this Function's node as its
        grad_fn, output ``nr``) with the tangents the returned output carries."""
        out = _fill(object.__new__(Tensor), t._data, node, nr, t._vc)
        tangent = self._returned[nr] if self._returned else None
        if tangent:
            out._extra = {"tangent": tangent}
        return out

    @property
    def saved_tensors(self):
        if self._in_jvp and self._saved_forward is not None:
            return self._saved_forward
        if self._freed:
            raise RuntimeError(FREED)
        if self._packed is not None:
            return self._unpacked()
        for i, (t, v) in enumerate(zip(self._saved, self._versions)):
            if v is not None and v[0][0] != v[1]:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified "
                    f"by an inplace operation: saved tensor {i} of {self._name} "
                    f"([{t.dtype} {list(t.shape)}]) is at version {v[0][0]}; expected version "
                    f"{v[1]} instead."
                )
        outputs = self._saved_outputs
        if outputs and _state.STATE.enabled and self._node is not None \
                and self._node() is not None:
            # In a recorded backward (create_graph=True) a saved output comes back as the
            # output: with this Function's node as its grad_fn, so a backward that uses it
            # can be differentiated again (PyTorch's rule for saved outputs; the tutorial's
            # Exp saves exp(x) and returns g * out). A first-order backward runs with grad
            # mode off and gets the plain saved tensor.
            node = self._node()
            return tuple(self._as_output(t, node, outputs[i]) if i in outputs else t
                         for i, t in enumerate(self._saved))
        return self._saved

    def _unpacked(self):
        """``saved_tensors`` of tensors saved through saved_tensors_hooks: each unpack hook
        runs again; the tensor it returns takes the saved tensor's history (a saved output
        this Function's node), as PyTorch's SavedVariable with hooks."""
        node = self._node() if self._node is not None else None
        outputs = self._saved_outputs or {}
        out = []
        for i, (value, edge_) in enumerate(self._packed):
            if value is None:
                out.append(None)
                continue
            data = unpack_value(value)
            if i in outputs and node is not None:
                out.append(_fill(object.__new__(Tensor), data, node, outputs[i]))
            else:
                out.append(_with_history(data, edge_, None, True))
        return tuple(out)

    @property
    def saved_variables(self):
        """Deprecated alias of ``saved_tensors`` (as in PyTorch)."""
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'",
                      DeprecationWarning, stacklevel=2)
        return self.saved_tensors

    def mark_non_differentiable(self, *outputs):
        """Declare outputs that have no gradient (their cotangent is never computed)."""
        self._non_differentiable.update(id(o) for o in outputs)

    def set_materialize_grads(self, value):
        """With True (the default) backward receives zeros instead of None for outputs that
        did not contribute to the loss."""
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors):
        """Declare inputs that ``forward`` changed in place and returns as outputs: they
        keep their identity and take this Function's node as their history (an in-place
        Function, as PyTorch's ``mark_dirty``)."""
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"mark_dirty expects tensors, but argument {i} is a "
                                f"{type(t).__name__}")
        self._dirty = tensors


_CTX_OWN = frozenset(vars(FunctionCtx(())))  # ctx's own attributes (not the user's)

# what grad_fn reads from ctx beside the attributes forward set on it; never the names the
# library probes nodes for
_CTX_API = frozenset(("saved_tensors", "saved_variables", "needs_input_grad",
                      "materialize_grads", "mark_dirty", "mark_non_differentiable",
                      "save_for_backward", "save_for_forward", "set_materialize_grads"))
_NOT_CTX = frozenset(("plan", "op", "saved", "checks", "out_shape", "deriv"))


class FunctionNode(Node):
    """The graph node of one ``Function.apply`` call (``<Name>Backward``)."""

    # next_functions, shapes and input_meta: one entry per Tensor argument of forward (as
    # PyTorch's), which are arguments ``arg_index`` of the ``nargs`` given to apply
    __slots__ = ("fn", "ctx", "input_meta", "output_meta", "once", "nout", "arg_index",
                 "nargs")
    runs_on_undefined = True

    @property
    def batches_cotangents(self):
        """A backward written in chainrule ops (``generate_vmap_rule``) takes a batch of
        cotangents at once (jacrev's one batched pass)."""
        return _batches(self.fn)

    def name(self):
        return f"{self.fn.__name__}Backward"

    def __getattr__(self, attr):
        # PyTorch's grad_fn of a custom Function is its ctx: y.grad_fn.saved_tensors,
        # .needs_input_grad and the attributes forward set on ctx are read through it
        if attr.startswith("_") or attr in _NOT_CTX:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attr}'")
        try:
            ctx = object.__getattribute__(self, "ctx")
        except AttributeError:
            ctx = None
        if ctx is not None and (attr in _CTX_API or attr in ctx.__dict__):
            return getattr(ctx, attr)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attr}'")

    def _output_shapes(self):
        return [None if m is None else m[0] for m in self.output_meta]

    def _vjp(self, grads, F, graph=False):
        """Run the user's backward: the node's one backward path, for every order.

        With ``graph`` (create_graph=True) backward runs on Tensors with grad mode on, so a
        backward written with chainrule ops is recorded and can be differentiated again. A
        backward that cannot be (``@once_differentiable``, or one that left the library:
        its gradient has no history) yields gradients that raise when differentiated."""
        if self.nout == 1:
            grads = [grads]
        fn, ctx = self.fn, self.ctx
        # a second backward after the graph was freed raises only where it reads
        # ctx.saved_tensors (PyTorch's rule): a backward that saved nothing runs again
        args = []
        for g, meta in zip(grads, self.output_meta):
            if g is None and ctx.materialize_grads and meta is not None:
                g = F.zeros(meta[0], meta[1])  # on the cotangents' backend and device
            args.append(g if g is None or graph else wrap(g))
        if _jvp_only(fn):
            result = _backward_from_jvp(self, args, F, create_graph=graph)
        elif any(isinstance(g, Batched) for g in grads):  # a batch of cotangents
            inside_vmap = in_vmap_evaluation()
            try:
                with _state.no_grad(), vmap_evaluation():
                    result = _user_backward(fn)(ctx, *args)
            except NotBatchable as error:
                if inside_vmap:  # vmap's evaluation of the whole batch (vmap(grad(f))):
                    raise  # vmap then evaluates once per sample
                raise Unbatchable(f"{fn.__name__}.backward cannot take a batch of "
                                  f"cotangents: {error}") from error
        else:
            with _state.set_grad_enabled(graph and not self.once):
                result = _user_backward(fn)(ctx, *args)
        if not graph:
            return self._check(result)
        checked = self._check(result, keep_tensors=True)
        if not self.once and _nothing_differentiable(args, ctx):
            return checked  # backward was given no value with a history: truly constant
        # The inputs of this node require grad, so a gradient without history cannot be
        # right to second order (unless it truly is constant): say so when it is used.
        why = (f"{fn.__name__}.backward is marked @once_differentiable" if self.once else
               f"{fn.__name__}.backward returned a gradient that does not depend on its "
               "inputs or grad_output through chainrule ops (it used NumPy, .numpy() or "
               ".detach())")
        return [g if g is None or g._requires_grad else _delayed_error(g, why, self.next_functions)
                for g in checked]

    def _check(self, result, keep_tensors=False):
        name = self.fn.__name__
        if not isinstance(result, tuple):
            result = (result,)
        n = self.nargs
        if len(result) != n:
            extra = [r for r in result[n:] if r is not None]
            if len(result) < n or extra:
                plural = "" if len(result) == 1 else "s"
                raise RuntimeError(
                    f"{name}.backward returned {len(result)} gradient{plural}, expected {n}: "
                    "one per input of forward (None for inputs that need no gradient)"
                )
            result = result[:n]
        out = []
        position = dict(zip(self.arg_index, range(len(self.arg_index))))
        for i, g in enumerate(result):
            j = position.get(i)
            if j is None:  # not a Tensor argument: no edge, no entry
                if g is not None:
                    raise RuntimeError(
                        f"{name}.backward returned a gradient different than None for input "
                        f"{i}, but that forward input was not a Tensor; return None for it"
                    )
                continue
            meta = self.input_meta[j]
            if g is None or self.next_functions[j][0] is None:
                out.append(None)
                continue
            if not isinstance(g, Tensor):
                raise TypeError(
                    f"{name}.backward returned a {type(g).__name__} as the gradient of input "
                    f"{i}; expected a Tensor (or None). Wrap arrays with chainrule.tensor()."
                )
            shape, dtype = meta
            if g.shape != shape and _expandable(shape, g.shape):
                # a gradient of the broadcast shape is summed back, as PyTorch's engine
                # does (validate_outputs: the input is expandable to it)
                g = g.sum_to_size(*shape)
            if g.shape != shape:
                raise RuntimeError(
                    f"{name}.backward returned a gradient of shape {tuple(g.shape)} for input "
                    f"{i}, which has shape {tuple(shape)}: the gradient of an input must have "
                    "that input's shape"
                )
            if dtype_kind(g.dtype) not in "fbiu":  # integers and bools are cast, as PyTorch
                raise TypeError(f"{name}.backward returned a gradient of dtype {g.dtype} for "
                                f"input {i}; expected a float dtype ({dtype})")
            if keep_tensors:
                out.append(g if g.dtype == dtype else g.to(dtype))
            else:
                out.append(g._data if g.dtype == dtype else g._data.astype(dtype))
        return out

    def _release(self):
        self.ctx._freed = True
        self.ctx._saved = ()
        self.ctx._packed = None


def _node_class(cls):
    """The node class of Function ``cls``: a FunctionNode named ``<Name>Backward`` (as
    ``type(y.grad_fn).__name__`` is in PyTorch), made once per Function."""
    node_cls = cls.__dict__.get("_node_cls")
    if node_cls is None:
        node_cls = type(f"{cls.__name__}Backward", (FunctionNode,),
                        {"__slots__": (), "__module__": cls.__module__})
        cls._node_cls = node_cls
    return node_cls


def _expandable(shape, to):
    """Whether ``shape`` broadcasts to ``to`` (PyTorch's is_expandable_to)."""
    shape, to = tuple(shape), tuple(to)
    if len(shape) > len(to):
        return False
    return all(a == b or a == 1 for a, b in zip(reversed(shape), reversed(to)))


def _jvp_only(fn):
    """A Function that defines forward and jvp but no backward (nor vjp)."""
    return _user_backward(fn) is Function.backward and fn.jvp is not Function.jvp


def _user_backward(fn):
    """The Function's backward: ``backward``, or ``vjp`` (its alias, as in PyTorch).
    Defining both is an error."""
    backward, vjp = fn.backward, fn.vjp
    if vjp is Function.vjp:
        return backward
    if backward is not Function.backward:
        raise RuntimeError(f"Implementing both 'backward' and 'vjp' for a custom Function is "
                           f"not allowed ({fn.__name__}). You should only implement one of "
                           "them.")
    return vjp


def _run_forward(cls, ctx, args, kwargs):
    """``forward(ctx, *args)``, or ``forward(*args)`` then ``setup_context(ctx, inputs,
    output)`` (PyTorch 2's style, which keeps forward free of ctx)."""
    if cls.setup_context is Function.setup_context:
        return cls.forward(ctx, *args, **kwargs)
    output = cls.forward(*args, **kwargs)
    cls.setup_context(ctx, args, output)
    return output


def _run_vmap_rule(cls, ctx, args, kwargs, record):
    """The forward of a batched evaluation by the Function's ``vmap`` staticmethod, then
    ``setup_context`` on the batched inputs and output (so backward and jvp get batched
    saved tensors, as in PyTorch)."""
    output = _apply_vmap_rule(cls, args, kwargs)
    if cls.setup_context is not Function.setup_context:
        cls.setup_context(ctx, args, output)
    elif record or STATE.dual_levels:
        raise RuntimeError(f"{cls.__name__}: differentiating a Function through its vmap "
                           "staticmethod needs the setup_context style (forward without ctx, "
                           "plus setup_context(ctx, inputs, output)), as in PyTorch")
    return output


def _backward_from_jvp(node, grad_outputs, F, create_graph):
    """The VJP of a Function known only by its JVP (a Gateaux derivative).

    ``jvp(ctx, *t)`` is linear in the tangents ``t``, ``t -> J t``; its transpose is the VJP
    ``g -> J^T g``. It is computed by the library's own reverse mode: the tangents become
    zero tensors that require grad, ``jvp`` runs recording, and the cotangent of its output
    is pulled back to them (one recorded jvp pass per backward call, so it costs about one
    extra forward pass over a hand-written backward). With ``create_graph`` the pass is
    recorded, so a jvp written with chainrule ops is differentiable again. The zero
    tangents are made by ``F``, the rule namespace of the cotangents' backend and device.
    """
    from .._dispatch import edge
    from .._engine import run_backward
    from .._ns import RAW, differentiable

    fn, ctx = node.fn, node.ctx
    tangents = [None] * node.nargs  # one per argument of forward, as jvp takes them
    for i, meta, (edge_, _) in zip(node.arg_index, node.input_meta, node.next_functions):
        if edge_ is not None:
            tangents[i] = wrap(_data_of(F.zeros(meta[0], meta[1])), requires_grad=True)
    ctx._in_jvp = True  # saved_tensors gives save_for_forward's tensors
    try:
        with _state.enable_grad():
            out = fn.jvp(ctx, *tangents)
    finally:
        ctx._in_jvp = False
    outs = out if isinstance(out, tuple) else (out,)
    roots, seeds = [], []
    for o, g in zip(outs, grad_outputs):
        if isinstance(o, Tensor) and o._requires_grad and g is not None:
            roots.append(edge(o))
            seeds.append(g if create_graph else g._data)
    live = [(i, t) for i, t in enumerate(tangents) if t is not None]
    result = [None] * len(tangents)
    if not roots or not live:
        return tuple(result)
    capture = {edge(t): k for k, (_, t) in enumerate(live)}
    got = run_backward(roots, seeds, differentiable() if create_graph else RAW,
                       retain_graph=create_graph, accumulate=False,
                       capture=capture, create_graph=create_graph)
    for k, (i, _) in enumerate(live):
        g = got[k] if k < len(got) else None
        if g is not None:
            result[i] = g if isinstance(g, Tensor) else wrap(g)
    return tuple(result)


def _data_of(x):
    return x._data if isinstance(x, Tensor) else x


def _delayed_error(g, why, edges):
    message = (f"{why}, so it cannot be differentiated again (create_graph=True / second "
               "derivatives). Write its backward with chainrule ops on the tensors it receives, "
               "or do not differentiate through it twice.")
    return _fill(object.__new__(Tensor), g._data, DelayedError(message, edges), 0)


class FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._backward_cls = cls


class Function(metaclass=FunctionMeta):
    """Base class for differentiable functions with a hand-written backward.

    Examples
    --------
    >>> import chainrule as cr
    >>> class MatVec(cr.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, A, x):
    ...         ctx.save_for_backward(A, x)
    ...         return A @ x
    ...     @staticmethod
    ...     def backward(ctx, grad):          # grad: shape (m,) for A (m, n): A @ x's cotangent
    ...         A, x = ctx.saved_tensors
    ...         return cr.outer(grad, x), A.t() @ grad   # grad_A = g x^T, grad_x = A^T g
    >>> A = cr.randn(3, 2, requires_grad=True); x = cr.randn(2, requires_grad=True)
    >>> MatVec.apply(A, x).sum().backward()
    >>> A.grad.shape, x.grad.shape
    ((3, 2), (2,))
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a Function subclass must define forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a Function subclass must define backward(ctx, *grads)")

    @staticmethod
    def vjp(ctx, *grad_outputs):
        """An alias of ``backward``: define one of the two (as in PyTorch)."""
        raise NotImplementedError("a Function subclass must define backward(ctx, *grads)")

    @staticmethod
    def jvp(ctx, *tangents):
        """Forward mode: output tangent(s) for the input tangents (None for no tangent).
        Optional; forward-mode AD through a Function without it raises."""
        raise NotImplementedError

    @staticmethod
    def setup_context(ctx, inputs, output):
        """PyTorch 2's style: with this defined, ``forward(*args)`` takes no ctx, and
        ``setup_context`` receives the inputs (a tuple) and forward's output to save what
        backward needs."""
        raise NotImplementedError

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            f"{type(self).__name__} is used through {type(self).__name__}.apply(...); "
            "forward and backward are static methods"
        )

    generate_vmap_rule = False  # True: forward/backward/jvp in chainrule ops batch as they are

    @staticmethod
    def vmap(info, in_dims, *args):
        """The batching rule of this Function under ``chainrule.func.vmap`` (PyTorch's
        signature): ``info.batch_size`` and ``info.randomness``, ``in_dims`` (per argument
        the batch dim, or None for an unbatched one), and the arguments with their batch
        dims. Returns ``(output, out_dims)``: the batched output(s) and where the batch dim
        is in each (an int, None, or a tuple with one per output). Its backward and jvp
        must then be written in chainrule ops (jacrev and jacfwd batch them)."""
        raise NotImplementedError

    @classmethod
    def apply(cls, *args, **kwargs):
        if in_user_vmap() and not _batches(cls):
            raise RuntimeError(
                f"{cls.__name__}: To use autograd.Function with vmap, you must either "
                "override the vmap staticmethod or set generate_vmap_rule=True.")
        rule = False
        if in_vmap_evaluation() and any(isinstance(a, Tensor) and isinstance(a._data, Batched)
                                        for a in args):
            rule = cls.vmap is not Function.vmap
            if not rule and not cls.generate_vmap_rule:
                # a forward that may leave the library would mix the samples
                raise NotBatchable(f"vmap: {cls.__name__} has no vmap rule (set "
                                   "generate_vmap_rule = True when it is written in "
                                   "chainrule ops)")
        needs = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        record = any(needs) and _state.STATE.enabled
        ctx = FunctionCtx(needs)
        ctx._name = cls.__name__
        with _state.no_grad(), _no_dual_levels():
            # forward runs with forward mode off too (as PyTorch's): its ops compute no
            # tangents, which come from jvp alone (an op-level tangent left on an output
            # would stand for jvp's where it returns None, or be counted twice where
            # forward changes an input in place)
            result = _run_vmap_rule(cls, ctx, args, kwargs, record) if rule else \
                _run_forward(cls, ctx, args, kwargs)
        single = not isinstance(result, tuple)
        outputs = (result,) if single else result
        if single and not isinstance(result, Tensor):
            raise TypeError(f"{cls.__name__}.forward returned a {type(result).__name__}; it "
                            "must return a Tensor, or a tuple (which may hold other values "
                            "beside Tensors)")
        raw_outputs = outputs  # what forward returned (ctx saved these objects)
        if ctx._dirty:
            _check_dirty(cls, ctx, outputs)
        if STATE.dual_levels:
            result = _forward_mode(cls, ctx, args, result, single)
            outputs = (result,) if single else result
        if not record:
            return result
        node = _node_class(cls).__new__(_node_class(cls))
        node.fn = cls
        node.ctx = ctx
        node.pre_hooks = None
        node.once = getattr(_user_backward(cls), "_once_differentiable", False)
        if any(v is None and t is not None for t, v in zip(ctx._saved, ctx._versions)):
            raise RuntimeError(INFERENCE_SAVED)  # an inference tensor, now saved
        arg_index = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
        node.arg_index = arg_index
        node.nargs = len(args)
        # one edge per Tensor argument (PyTorch's next_functions): a number gets none
        node.next_functions = tuple(_dispatch.edge(args[i]) if needs[i] else (None, 0)
                                    for i in arg_index)
        node.shapes = [args[i].shape if needs[i] else None for i in arg_index]
        node.input_meta = tuple((args[i].shape, args[i].dtype) for i in arg_index)
        wrapped = []
        meta = []
        for i, o in enumerate(outputs):
            if not isinstance(o, Tensor):  # None, or a non-tensor output: passed through
                wrapped.append(o)
                meta.append(None)
                continue
            kind = dtype_kind(o.dtype)
            diff = kind == "f" and id(o) not in ctx._non_differentiable
            if kind == "c" and id(o) not in ctx._non_differentiable:
                # PyTorch differentiates it; taking it as constant would drop its share of
                # every gradient silently
                raise RuntimeError(
                    f"{cls.__name__}: output {i} is complex ({o.dtype}) and an input requires "
                    "grad; chainrule is real-valued and does not differentiate through "
                    "complex values. Return its real and imaginary parts as two real "
                    "outputs, or mark it with ctx.mark_non_differentiable()")
            if any(o is d for d in ctx._dirty):
                t = _dirty_output(cls, o)  # the input itself, changed in place by forward
            else:
                t = wrap(o._data)
                t._vc = o._vc  # one version counter: saving o and changing t in place is caught
                t._extra = o._extra  # carries its tangent in forward mode
                if diff and _aliases(o, args):
                    # a view of an input (or the input returned as it is): its history is
                    # this node, so a change of its memory in place raises when it is used
                    # (see refresh_view), as PyTorch's CUSTOM_FUNCTION views
                    t._extra = dict(o._extra or ())
                    t._extra["custom_view"] = (cls.__name__, i, t._vc[0])
            if diff:
                t._requires_grad = True
                t._grad_fn = node
                t._output_nr = i
            wrapped.append(t)
            meta.append((o.shape, o.dtype))
        node.output_meta = tuple(meta)
        node.nout = len(meta)
        if STATE.anomaly:  # the user's line, for a NaN found in its backward
            anomaly.record_function_node(node, args)
        saved_outputs = {i: nr for i, t in enumerate(ctx._saved)
                         for nr, o in enumerate(raw_outputs)
                         if t is not None and t is o and wrapped[nr]._grad_fn is node}
        if saved_outputs:
            ctx._saved_outputs = saved_outputs
            ctx._node = weakref.ref(node)
            # the outputs' tangents: a saved output read back in a recorded backward carries
            # them (forward-over-reverse through a saved output)
            ctx._returned = [w._extra.get("tangent") if isinstance(w, Tensor) and w._extra
                             else None for w in wrapped]
        if STATE.saved_hooks and ctx._saved:
            _pack_saved(ctx, node, wrapped, saved_outputs)
        return wrapped[0] if single else tuple(wrapped)


def _pack_saved(ctx, node, wrapped, saved_outputs):
    """``ctx.save_for_backward``'s tensors through the innermost saved-tensor pack hook,
    after forward (as PyTorch packs them): a saved output is packed as the returned output.
    The tensors themselves are no longer held."""
    from .graph import pack_tensor

    hooks = STATE.saved_hooks[-1]
    ctx._node = weakref.ref(node)
    packed = []
    for i, t in enumerate(ctx._saved):
        if t is None:
            packed.append((None, None))
        elif i in saved_outputs:
            packed.append((pack_tensor(wrapped[saved_outputs[i]], t._data, hooks), None))
        else:
            edge_ = _dispatch.edge(t) if t._requires_grad else (None, 0)
            packed.append((pack_tensor(t, t._data, hooks), edge_))
    ctx._packed = tuple(packed)
    ctx._saved = ()
    ctx._versions = ()


def _batches(cls):
    """Whether a Function batches (its own vmap rule, or ``generate_vmap_rule``): its
    backward and jvp then take a batch of cotangents / tangents at once."""
    return cls.generate_vmap_rule or cls.vmap is not Function.vmap


VmapInfo = collections.namedtuple("VmapInfo", ["batch_size", "randomness"])


def _apply_vmap_rule(cls, args, kwargs):
    """``cls.vmap(info, in_dims, *args)`` on a batched evaluation's arguments (the batch
    dim first), its outputs made batched values again."""
    from .._vmap_backend import VBatched

    in_dims = tuple(0 if isinstance(a, Tensor) and isinstance(a._data, Batched) else None
                    for a in args)
    B = next(a._data.data.shape[0] for a, d in zip(args, in_dims) if d == 0)
    plain = [wrap(a._data.data) if d == 0 else a for a, d in zip(args, in_dims)]
    result = cls.vmap(VmapInfo(B, "error"), in_dims, *plain, **kwargs)
    if not isinstance(result, tuple) or len(result) != 2:
        raise RuntimeError(f"{cls.__name__}.vmap must return a tuple (output, out_dims), got "
                           f"a {type(result).__name__}")
    out, out_dims = result
    single = not isinstance(out, tuple)
    outs = (out,) if single else out
    dims = (out_dims,) * len(outs) if not isinstance(out_dims, tuple) else out_dims
    if len(dims) != len(outs):
        raise RuntimeError(f"{cls.__name__}.vmap returned {len(outs)} outputs but "
                           f"{len(dims)} out_dims")
    batched = []
    for k, (o, d) in enumerate(zip(outs, dims)):
        if d is None or not isinstance(o, Tensor):
            batched.append(o)
            continue
        if not isinstance(d, int) or not -o.ndim <= d < o.ndim or o.shape[d] != B:
            raise RuntimeError(f"{cls.__name__}.vmap: out_dims {d!r} for output {k} of shape "
                               f"{tuple(o.shape)} is not a dim of size {B} (the batch size)")
        batched.append(wrap(VBatched(np.moveaxis(o._data, d, 0))))
    return batched[0] if single else tuple(batched)


def _check_dirty(cls, ctx, outputs):
    """The inputs marked dirty (changed in place by forward) must be returned as outputs,
    as in PyTorch; each gets a new version (so a value saved from it before, by another
    node, is found stale even when forward changed it through ``.data`` or NumPy)."""
    for t in ctx._dirty:
        if not any(o is t for o in outputs):
            raise RuntimeError(f"{cls.__name__}: Some elements marked as dirty during the "
                               "forward method were not returned as output. The inputs that "
                               "are modified inplace must all be outputs of the Function.")
    for t in {id(t): t for t in ctx._dirty}.values():
        if t._vc.__class__ is not InferenceVersion:
            t._vc[0] += 1
    if ctx._saved:  # a dirty tensor saved by forward is saved as the output it becomes
        ctx._versions = tuple((v[0], v[0][0]) if v is not None and any(t is d for d in ctx._dirty)
                              else v for t, v in zip(ctx._saved, ctx._versions))


def _aliases(o, args):
    """Whether forward's output ``o`` shares memory with a Tensor input."""
    d = o._data
    for a in args:
        if isinstance(a, Tensor):
            if a is o or a._data is d:
                return True
            if d.__class__ is np.ndarray and a._data.__class__ is np.ndarray and \
                    np.may_share_memory(d, a._data):
                return True
    return False


def _dirty_output(cls, o):
    """An input that forward changed in place (``ctx.mark_dirty``) and returned: it keeps
    its identity; the caller gives it this Function's node as history."""
    if o._grad_fn is None and o._requires_grad:
        raise RuntimeError(f"{cls.__name__}: a leaf Variable that requires grad is being used "
                           "in an in-place operation.")
    if o._extra is not None and o._extra.get("view_of") is not None:
        raise NotImplementedError(f"{cls.__name__}: an in-place custom Function "
                                  "(mark_dirty) on a view of another tensor is not supported; "
                                  "apply it to a clone() or to the base tensor")
    return o


def _forward_mode(cls, ctx, args, result, single):
    """Attach output tangents from ``cls.jvp(ctx, *input_tangents)`` when inputs are duals,
    at each active dual level (an inner or recorded level runs ``jvp`` on Tensors with the
    outer levels active and grad mode as it is, as the table's rules do)."""
    from . import forward_ad

    levels = STATE.dual_levels
    outs = (result,) if single else result
    fresh = [o if not isinstance(o, Tensor) or any(o is d for d in ctx._dirty)
             else _without_tangents(o) for o in outs]
    for o in fresh:
        if isinstance(o, Tensor):
            o._extra = dict(o._extra or {})
    for k, level in enumerate(levels):
        stored = [_dual.stored_tangent(a, level) for a in args]
        if all(t is None for t in stored):
            continue
        recorded = bool(k) or (level in STATE.dual_recorded and forward_ad._records(args, level))
        if ctx.materialize_grads:  # a tensor input without a tangent gets zeros, as PyTorch
            stored = [_zeros_like_data(a._data) if t is None and isinstance(a, Tensor)
                      and dtype_kind(a.dtype) in "fc" else t for a, t in zip(args, stored)]
        out_t = _jvp_outputs(cls, ctx, _user_jvp(cls, ctx, stored, recorded, levels[:k]),
                             outs, single)
        for o, t in zip(fresh, out_t):
            if not isinstance(o, Tensor) or t is None:
                continue
            if recorded:
                t = t if isinstance(t, Tensor) else wrap(t)
                _dual.set_tangent(o, t if t.dtype == o.dtype else t.to(o.dtype), level)
                continue
            t = t._data if isinstance(t, Tensor) else t
            if isinstance(t, Batched):  # a batch of tangents, as the batched rules give
                _dual.set_tangent(o, Batched(t.rows(np.shape(o._data), o.dtype)), level)
            elif o._data.__class__ is np.ndarray:
                _dual.set_tangent(o, np.array(t, dtype=o.dtype), level)
            else:  # another backend's output (a GPU's): its tangent stays on its device
                b = backend_of(o._data)
                _dual.set_tangent(o, b.xp.astype(b.xp.asarray(t), o._data.dtype), level)
    return fresh[0] if single else tuple(fresh)


class _no_dual_levels:
    """No dual level active (a no-op outside forward mode)."""

    __slots__ = ("saved",)

    def __enter__(self):
        self.saved = STATE.dual_levels
        if self.saved:
            STATE.set_modes(dual_levels=())

    def __exit__(self, *exc):
        if self.saved:
            STATE.set_modes(dual_levels=self.saved)
        return False


def _jvp_outputs(cls, ctx, out_t, outs, single):
    """``jvp``'s result as one tangent (or None) per output of forward, checked as
    PyTorch checks it: one per output, none for an output that is not differentiable, and
    of its output's shape."""
    name = cls.__name__
    if single and isinstance(out_t, (tuple, list)) and len(out_t) == 1:
        out_t = out_t[0]  # a 1-tuple for one output (PyTorch accepts it)
    out_t = (out_t,) if single else out_t
    if not isinstance(out_t, (tuple, list)) or len(out_t) != len(outs):
        got = len(out_t) if isinstance(out_t, (tuple, list)) else 1
        raise RuntimeError(f"{name}.jvp returned an invalid number of forward gradients "
                           f"(expected {len(outs)} but got {got}): one per output of "
                           "forward (None for an output without a tangent)")
    for k, (o, t) in enumerate(zip(outs, out_t)):
        if t is None:
            continue
        if not isinstance(o, Tensor) or id(o) in ctx._non_differentiable \
                or dtype_kind(o.dtype) not in "fc":
            raise RuntimeError(f"{name}.jvp returned a gradient at position {k}, but the "
                               "corresponding forward output is not a differentiable "
                               "Tensor; return None at that position instead")
        data = t._data if isinstance(t, Tensor) else t
        if isinstance(data, Batched) or isinstance(o._data, Batched):
            continue  # a batch of tangents: broadcast to the output's rows where it is set
        shape = tuple(np.shape(data))
        if shape != tuple(o.shape):
            raise RuntimeError(f"{name}.jvp returned a tangent of shape {shape} for output "
                               f"{k}, which has shape {tuple(o.shape)}: a forward gradient "
                               "must have its output's shape")
    return out_t


def _without_tangents(o):
    """An output of forward as a tensor of its own, without tangents: its tangents are
    jvp's alone. (An input returned as it is stays untouched: giving the output jvp's
    tangent must not change the input's.)"""
    t = wrap(o._data)
    t._vc = o._vc  # one version counter: saving o and changing t in place is caught
    if o._extra:
        extra = {k: v for k, v in o._extra.items() if k != "tangent"}
        t._extra = extra or None
    return t


def _user_jvp(cls, ctx, stored, recorded, outer):
    """``cls.jvp(ctx, *tangents)`` for the tangents of one level."""
    from . import forward_ad

    tangents = [t._data if isinstance(t, Tensor) else t for t in stored]
    batch = any(isinstance(t, Batched) for t in tangents)
    if batch and not _batches(cls):
        # A user's jvp takes one tangent per input; chainrule.func then runs one column at a
        # time instead of a batch.
        raise Unbatchable(f"{cls.__name__}.jvp cannot take a batch of tangents")
    if cls.jvp is Function.jvp:  # NotImplementedError (a RuntimeError), as PyTorch
        raise NotImplementedError(
            f"forward-mode AD through {cls.__name__} needs a static method "
            f"jvp(ctx, *tangents) returning the output tangent(s); {cls.__name__} defines only "
            "forward and backward"
        )
    ctx._in_jvp = True  # saved_tensors gives save_for_forward's tensors
    try:
        # the jvp sees only the levels outside this one: its own ops carry no tangent here
        with forward_ad._levels(outer):
            if recorded:
                return cls.jvp(ctx, *[None if t is None else t if isinstance(t, Tensor)
                                      else wrap(t) for t in stored])
            return _plain_jvp(cls, ctx, tangents, batch)
    finally:
        ctx._in_jvp = False


def _plain_jvp(cls, ctx, tangents, batch):
    """``cls.jvp`` on the tangents as plain values (no history), a batch of them at once
    when ``batch``."""
    args = [None if t is None else wrap(t) for t in tangents]
    with _state.no_grad():
        if not batch:
            return cls.jvp(ctx, *args)
        inside_vmap = in_vmap_evaluation()
        try:  # a vmap rule: the jvp takes the whole batch of tangents
            with vmap_evaluation():
                return cls.jvp(ctx, *args)
        except Exception as error:  # noqa: BLE001 - any failure on the batch (an op that
            # meets a batch it does not know): one tangent at a time instead, which gives
            # the answer, or the error, of separate passes
            if inside_vmap and isinstance(error, NotBatchable):
                raise  # vmap's evaluation of the whole batch: vmap goes once per sample
            raise Unbatchable(f"{cls.__name__}.jvp cannot take a batch of tangents: "
                              f"{error}") from error


class InplaceFunction(Function):
    """PyTorch's legacy base class of Functions that may work in place: a :class:`Function`
    with an ``inplace`` attribute (False). Used through ``apply``, as every Function."""

    inplace = False


def once_differentiable(backward):
    """Mark a backward as not differentiable itself (it may leave the library, e.g. call
    NumPy directly). Differentiating it a second time raises instead of returning zeros."""

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        return backward(ctx, *grads)

    wrapper._once_differentiable = True
    return wrapper


def _zeros_like_data(d):
    """Zeros of ``d``'s shape and dtype beside it (NumPy, or ``d``'s library and device)."""
    return np.zeros_like(d) if d.__class__ is np.ndarray else backend_of(d).xp.zeros_like(d)


class _ToDevice(Function):
    """``tensor.to(device)`` of a tensor that requires grad, recorded as PyTorch records
    it: the data is copied to ``device``; the cotangent goes back to the source device
    (VJP: ``g.to(source)``), the tangent along (JVP: ``t.to(device)``)."""

    @staticmethod
    def forward(x, dev):
        CROSS_DEVICE[0] = True  # backward passes now pick each node's namespace (engine)
        return wrap(move_data(x._data, dev))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.source = inputs[0].device
        ctx.dest = inputs[1]
        ctx.set_materialize_grads(False)  # no cotangent: none to move back

    @staticmethod
    def backward(ctx, grad):
        return None if grad is None else grad.to(ctx.source), None

    @staticmethod
    def jvp(ctx, x_t, dev_t):
        return x_t.to(ctx.dest)


RECORDED_MOVE[0] = _ToDevice.apply  # Tensor.to of a tensor that requires grad (_methods)
