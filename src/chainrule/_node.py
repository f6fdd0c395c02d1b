"""Graph nodes (``grad_fn``): what made a tensor, what it saved, and where its inputs came from.

- :class:`OpNode` is the node of a primitive from the derivative table.
- :class:`AccumulateGrad` stands for a leaf: the engine adds the cotangent into ``.grad``.
- ``chainrule.autograd.function.FunctionNode`` is the node of a user's ``Function``.

All share ``name()``, ``next_functions`` (pairs ``(node, output_nr)``; ``(None, 0)`` for an
input that needs no grad) and ``__call__(*grad_outputs)``, which returns the input
cotangents without touching any ``.grad``.
"""

from __future__ import annotations

import weakref

import numpy as np

from ._dual import node_tangents, with_tangent
from ._ns import BATCHING, NotBatchable
from ._tensor import Tensor, _fill, wrap

_new = object.__new__
_NUMBERS = (int, float, bool, complex)

FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


class _EngineHooks:
    """Filled by higher layers: ``sum_to`` undoes broadcasting (the engine);
    ``pack_tensor`` packs a saved value through saved-tensor hooks
    (``chainrule.autograd.graph``)."""

    sum_to = None
    pack_tensor = None


ENGINE = _EngineHooks()


class _Handle:
    __slots__ = ("hooks", "hook")

    def __init__(self, hooks, hook):
        self.hooks, self.hook = hooks, hook

    def remove(self):
        if self.hook in self.hooks:
            self.hooks.remove(self.hook)


class Node:
    """Base class of graph nodes.

    ``_vjp(g, F, graph)`` receives the output cotangent (a list of them, ``None`` for zero,
    when the node has several outputs) and returns one input cotangent per edge, computed
    in namespace ``F``; ``graph`` (``create_graph=True``) records the computation. It is
    the node's one backward path, for every order.
    """

    __slots__ = ("next_functions", "shapes", "pre_hooks", "_metadata", "__weakref__")
    nout = 1
    runs_on_undefined = False  # a custom Function's backward runs even on no cotangent
    batches_cotangents = False  # a custom Function's backward that takes a batch of them

    def name(self):
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"

    def _add_pre_hook(self, output_nr, hook):
        if self.pre_hooks is None:
            self.pre_hooks = {}
        hooks = self.pre_hooks.setdefault(output_nr, [])
        hooks.append(hook)
        return _Handle(hooks, hook)

    def register_prehook(self, fn):
        """``fn(grad_outputs) -> tuple or None`` runs before this node's backward, after
        the hooks of the tensors it made; a returned tuple replaces ``grad_outputs``
        (``torch.autograd.graph.Node.register_prehook``). Returns a handle."""
        return self._add_pre_hook("node", fn)

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs) -> tuple or None`` runs after this node's
        backward; ``grad_inputs`` has one entry per ``next_functions`` edge (None where
        nothing flows), and a returned tuple of that length replaces it. Returns a handle."""
        return self._add_pre_hook("post", fn)

    @property
    def metadata(self):
        """A dict kept on the node, for the user's notes (empty at first)."""
        try:
            return self._metadata
        except AttributeError:
            self._metadata = {}
            return self._metadata

    def _vjp(self, g, F, graph=False):  # pragma: no cover - abstract
        raise NotImplementedError

    def _release(self):
        pass

    def __call__(self, *grad_outputs):
        """Apply this node's VJP: input cotangents for the given output cotangents.

        Arguments are Tensors or arrays (one per output, ``None`` for zero); the result is a
        tuple with one Tensor (or None) per entry of ``next_functions``.
        """
        from ._ns import RAW

        if len(grad_outputs) != self.nout:
            raise TypeError(f"{self.name()} expects {self.nout} grad_outputs, "
                            f"got {len(grad_outputs)}")
        grads = [None if g is None else np.asarray(g._data if isinstance(g, Tensor) else g)
                 for g in grad_outputs]
        for i, (g, shape) in enumerate(zip(grads, self._output_shapes())):
            if g is not None and shape is not None and g.shape != tuple(shape):
                raise RuntimeError(
                    f"{self.name()}: grad_outputs[{i}] has shape {tuple(g.shape)} but output "
                    f"{i} of this node has shape {tuple(shape)}")
        if all(g is None for g in grads) and not self.runs_on_undefined:
            return tuple(None for _ in self.next_functions)  # undefined in, undefined out
        out = self._vjp(grads[0] if self.nout == 1 else grads, RAW)
        return tuple(None if g is None else wrap(np.array(
            ENGINE.sum_to(np.asarray(g), tuple(s)) if s is not None else g))
            for g, s in zip(out, self.shapes))

    def _output_shapes(self):
        """The shapes of this node's outputs (None where unknown)."""
        return [None] * self.nout


class OpNode(Node):
    """The node of one primitive call: its op, the saved values, their versions."""

    __slots__ = ("plan", "saved", "checks", "out_shape")

    def _output_shapes(self):
        if self.nout == 1:
            return [self.out_shape]
        saved = self.saved
        if saved and "out" in self.plan.names:
            return [o.shape if o.__class__ is PackedValue else np.shape(o)
                    for o in saved[self.plan.names.index("out")]]
        return [None] * self.nout

    @property
    def op(self):
        return self.plan.op

    def name(self):
        return self.plan.op.node_name

    def _vjp(self, g, F, graph=False):
        """The input cotangents for output cotangent ``g``, computed by the op's rules in
        namespace ``F``: one path for every order.

        With ``graph`` (``create_graph=True``) ``g`` is a Tensor, ``F`` the differentiable
        namespace, and the saved values are unpacked with their history (as PyTorch's
        SavedVariable.unpack): saved inputs as Tensors whose grad_fn is the edge's node, and
        ``out`` as a Tensor whose grad_fn is this node, so the derivative of the VJP flows
        on through the first-order graph.
        """
        saved = self.saved
        if saved is None:
            raise RuntimeError(FREED)
        if self.checks:
            self._check_versions()
        return self._apply_rules(g, F, graph, saved)

    def _apply_rules(self, g, F, graph, saved):
        """The op's rules on the saved values ``saved`` (arrays; see :meth:`_vjp`)."""
        plan = self.plan
        if graph:
            saved = self._unpack(saved)
        if plan.variadic:
            rule, args = plan.rules[0]
            needs = [node is not None for node, _ in self.next_functions]
            vjp = lambda F, g, saved: rule(F, g, needs, *args(saved))  # noqa: E731
        else:
            vjp = plan.vjp
        if graph:
            return _linked(vjp(F, g, saved), g, saved)
        try:
            return vjp(F, g, saved)
        except NotBatchable:  # inside vmap: a rule without a batched version
            return BATCHING.per_sample(vjp, g, saved)

    def _unpack(self, saved, linked=False):
        """The saved values as Tensors with their history (see :meth:`_vjp`). ``linked``:
        values given back by an unpack hook, which may differ from a leaf input's data (see
        :func:`_with_history`)."""
        plan = self.plan
        n_inputs = 1 if plan.variadic else len(plan.op.inputs)
        tangents = node_tangents(self)  # forward-over-reverse: saved values keep tangents
        args = []
        for slot, value in zip(plan.slots, saved):
            if slot < n_inputs:
                if plan.variadic:
                    value = [_with_history(v, e, tangents and tangents[0][j], linked)
                             for j, (v, e) in enumerate(zip(value, self.next_functions))]
                else:
                    value = _with_history(value, self.next_functions[slot],
                                          tangents and tangents[0][slot], linked)
            elif slot == n_inputs:
                value = self._outputs_with_history(value, tangents and tangents[1])
            args.append(value)
        return tuple(args)

    def _outputs_with_history(self, out, tangents=None):
        if self.nout == 1:
            return with_tangent(_fill(_new(Tensor), out, self, 0), tangents and tangents[0])
        diff = self.plan.op.out_diff
        return tuple(with_tangent(_fill(_new(Tensor), o, self if i in diff else None, i),
                                 tangents and tangents[i]) for i, o in enumerate(out))

    def __dir__(self):
        # the saved values are attributes too (grad_fn._saved_self), as in PyTorch
        names = ["_saved_" + ("result" if n == "out" else n) for n in self.plan.names]
        names += ["_raw" + n for n in names]
        return sorted(set(super().__dir__()) | set(names))

    def _check_versions(self):
        for k, vc, version, *position in self.checks:
            if vc[0] != version:
                value = self.saved[k]
                name = self.plan.names[k]
                if position and position[0] is not None:  # an input of a variadic op
                    value, name = value[position[0]], f"{name}[{position[0]}]"
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified "
                    f"by an inplace operation: [{value.dtype} {list(np.shape(value))}], saved "
                    f"by {self.name()} as '{name}', is at version {vc[0]}; expected version "
                    f"{version} instead. Hint: the tensor was changed in place after it was "
                    "used; change a clone() of it instead, or make the change after backward."
                )

    def _release(self):
        if self.saved and self.plan.frees:  # only saved arrays are freed (see Plan.frees)
            self.saved = None

    def __getattr__(self, attr):
        # grad_fn._raw_saved_<name>: the saved value as a SavedTensor, to register hooks on
        if attr.startswith("_raw_saved_"):
            key = attr[len("_raw_saved_"):]
            key = "out" if key == "result" else key
            if key in self.plan.names:
                return SavedTensor(self, self.plan.names.index(key))
            raise AttributeError(
                f"{self.name()} has no saved value {key!r}; it saved {list(self.plan.names)}"
            )
        # grad_fn._saved_<name>: the saved value, as PyTorch exposes it.
        if attr.startswith("_saved_"):
            key = attr[len("_saved_"):]
            if key == "result":
                key = "out"
            if key in self.plan.names:
                if self.saved is None:
                    raise RuntimeError(FREED)
                k = self.plan.names.index(key)
                value = self.saved[k]
                packed = isinstance(self, PackedSaved)
                if packed:  # saved through saved_tensors_hooks: its unpack hook runs now
                    value = unpack_value(value)
                slot = self.plan.slots[k]
                n_inputs = 1 if self.plan.variadic else len(self.plan.op.inputs)
                if not self.plan.variadic and slot < n_inputs:
                    # a saved input: the input tensor itself when it is a leaf (as PyTorch's
                    # unpacking gives back the same object), else a tensor with its history
                    return _with_history(value, self.next_functions[slot], None, packed)
                if slot == n_inputs:  # the result, with this node as its grad_fn
                    return self._outputs_with_history(value)
                return wrap(value) if isinstance(value, np.ndarray) else value
            raise AttributeError(
                f"{self.name()} has no saved value {key!r}; it saved {list(self.plan.names)}"
            )
        raise AttributeError(f"{self.name()!r} object has no attribute {attr!r}")


REGISTER_FREED = (
    "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate "
    "values of the graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or if you "
    "need to access saved variables after calling backward."
)


class SavedTensor:
    """``grad_fn._raw_saved_<name>`` (PyTorch's ``torch._C._autograd.SavedTensor``): saved
    value ``k`` of ``node``. ``register_hooks(pack_hook, unpack_hook)`` packs it at once (a
    tensor of the saved data, without history) and has backward (and ``_saved_<name>``) use
    what ``unpack_hook`` gives back, as ``saved_tensors_hooks`` does for every saved value;
    its version is no longer checked. Raises RuntimeError when hooks are set already, when
    the graph was freed, or (from the pack hook) on an in-place change of the tensor;
    TypeError when a hook is not callable; NotImplementedError for a saved list or tuple."""

    __slots__ = ("node", "k")

    def __init__(self, node, k):
        self.node, self.k = node, k

    def register_hooks(self, pack_hook, unpack_hook):
        if not (callable(pack_hook) and callable(unpack_hook)):
            raise TypeError("register_hooks(): incompatible function arguments: "
                            "pack_hook and unpack_hook must be callable")
        node, k = self.node, self.k
        if node.saved is None:
            raise RuntimeError(REGISTER_FREED)
        value = node.saved[k]
        if value.__class__ is PackedValue:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have "
                               "already been set. Hint: only one pair of hooks is allowed "
                               "at a time.")
        if not isinstance(value, np.ndarray):
            raise NotImplementedError(
                f"register_hooks on {node.name()}'s saved {node.plan.names[k]!r}: only a "
                "single saved tensor takes hooks here")
        checks = node.checks or ()
        vc = next((c[1] for c in checks if c[0] == k), None)
        packed = ENGINE.pack_tensor(_fill(object.__new__(Tensor), value, vc=vc), value,
                                    (pack_hook, unpack_hook))
        saved = list(node.saved)
        saved[k] = packed
        node.saved = tuple(saved)
        node.checks = tuple(c for c in checks if c[0] != k) or None
        if node.__class__ in PACKED:
            node.__class__ = PACKED[node.__class__]


def _linked(result, g, saved):
    """PyTorch's rule for a recorded backward: a cotangent it computes requires grad when
    the backward read a tensor that does (the cotangent, or a saved value), even where its
    derivative is zero (relu's VJP only selects entries of a constant cotangent). Such a
    cotangent is linked to those tensors through a :class:`ZeroDerivative` node, so that
    differentiating it again gives zeros, as PyTorch's, rather than "does not require
    grad"."""
    live = None
    out = []
    for r in result:
        if r.__class__ is Tensor and not r._requires_grad:
            if live is None:
                live = [t for t in _tensors((g, *saved)) if t._requires_grad]
            if live:
                node = ZeroDerivative.__new__(ZeroDerivative)
                node.next_functions = tuple((t._grad_fn or accumulator(t), t._output_nr)
                                            for t in live)
                node.shapes = tuple(t.shape for t in live)
                node.dtypes = tuple(t.dtype for t in live)
                node.pre_hooks = None
                r = _fill(object.__new__(Tensor), r._data, node)
        out.append(r)
    return tuple(out) if isinstance(result, tuple) else out


def _tensors(values):
    for v in values:
        if v.__class__ is Tensor:
            yield v
        elif isinstance(v, list):
            yield from (x for x in v if x.__class__ is Tensor)


class ZeroDerivative(Node):
    """The node of a recorded cotangent that does not depend on the tensors its backward
    read (see :func:`_linked`): their cotangents are zeros."""

    __slots__ = ("dtypes",)

    def name(self):
        return "ZeroDerivativeBackward"

    def _vjp(self, g, F, graph=False):
        return [F.zeros(tuple(shape), dtype) for shape, dtype in zip(self.shapes, self.dtypes)]


class Scattered:
    """A cotangent that is zero but at a basic-slice ``index``, where it is ``g``: the VJP
    of ``x[index]``, kept as ``(shape, index, g)``. The engine adds it into another
    cotangent in place (``out[index] += g``) and makes it an array only when a rule, hook
    or leaf needs one, so a loop over ``x[t]`` costs O(size of x) in the backward pass
    rather than O(T * size of x)."""

    __slots__ = ("shape", "index", "g")
    __array_ufunc__ = None  # never mixed into NumPy arithmetic unnoticed

    def __init__(self, shape, index, g):
        self.shape, self.index, self.g = tuple(shape), index, g

    @property
    def dtype(self):
        return self.g.dtype

    @property
    def ndim(self):
        return len(self.shape)

    def materialize(self):
        """A fresh array: zeros with ``g`` at ``index``."""
        out = np.zeros(self.shape, dtype=self.g.dtype)
        out[self.index] = self.g
        return out

    def __array__(self, dtype=None, copy=None):
        out = self.materialize()
        return out if dtype is None else out.astype(dtype)


class SliceNode(OpNode):
    """The node of a basic slice (``x[1:3]``, ``x[t]``): its first-order VJP on a NumPy
    cotangent is a :class:`Scattered`; every other pass (recorded, batched, another
    backend) runs the table's rule."""

    __slots__ = ()
    batches_cotangents = True  # a table primitive: the batched rules apply

    def _apply_rules(self, g, F, graph, saved):
        if graph or g.__class__ is not np.ndarray:
            return OpNode._apply_rules(self, g, F, graph, saved)
        return (Scattered(self.shapes[0], saved[self.plan.names.index("index")], g),)


class MultiOpNode(OpNode):
    """The node of a primitive with several outputs (its rules receive a tuple ``g``)."""

    __slots__ = ("nout",)

    def _apply_rules(self, g, F, graph, saved):
        return OpNode._apply_rules(self, tuple(g), F, graph, saved)


UNPACK_NOT_TENSOR = ("Output of saved tensor unpack_hook expected to be a Tensor but got "
                     "result of type {}")


class PackedValue:
    """A saved tensor value that went through a ``saved_tensors_hooks`` pack hook at forward
    time: ``obj`` is what the pack hook returned, ``unpack`` the hook that gives the tensor
    back when backward (or ``grad_fn._saved_*``) needs it, ``shape`` the saved shape."""

    __slots__ = ("obj", "unpack", "shape")

    def __init__(self, obj, unpack, shape):
        self.obj, self.unpack, self.shape = obj, unpack, shape

    def __repr__(self):
        return f"<PackedValue {self.obj!r}>"


def unpack_value(value):
    """A saved value as an array again: a :class:`PackedValue` through its unpack hook
    (lists and tuples of them, as variadic inputs and several outputs are saved, element by
    element); anything else as it is. Raises TypeError, as PyTorch, when the unpack hook
    returns something other than a Tensor."""
    cls = value.__class__
    if cls is PackedValue:
        t = value.unpack(value.obj)
        if not isinstance(t, Tensor):
            raise TypeError(UNPACK_NOT_TENSOR.format(type(t).__name__))
        return t._data
    if cls is list or cls is tuple:
        if any(v.__class__ is PackedValue for v in value):
            return cls(unpack_value(v) for v in value)
    return value


class PackedSaved:
    """Mixed into the node classes whose saved tensors went through pack hooks (see
    ``chainrule.autograd.graph.saved_tensors_hooks``): each backward unpacks them first.
    Their versions are not checked (PyTorch: the hooks may store anything). The engine
    runs these nodes on its general path, so the common case pays nothing for them."""

    __slots__ = ()
    batches_cotangents = True  # a table primitive: the batched rules apply

    def _vjp(self, g, F, graph=False):
        saved = self.saved
        if saved is None:
            raise RuntimeError(FREED)
        from ._state import set_grad_enabled

        with set_grad_enabled(graph):  # PyTorch unpacks in the backward's grad mode
            raw = tuple(unpack_value(v) for v in saved)
        return self._apply_rules(g, F, graph, raw)

    def _unpack(self, saved, linked=True):
        return OpNode._unpack(self, saved, True)


class PackedOpNode(PackedSaved, OpNode):
    __slots__ = ()


class PackedSliceNode(PackedSaved, SliceNode):
    __slots__ = ()


class PackedMultiOpNode(PackedSaved, MultiOpNode):
    __slots__ = ()


# the packed variant of each node class a primitive records
PACKED = {OpNode: PackedOpNode, SliceNode: PackedSliceNode, MultiOpNode: PackedMultiOpNode}


def _with_history(data, edge, tangent=None, linked=False):
    """A Tensor holding saved ``data`` whose history is ``edge`` = (node, output_nr).

    A leaf's saved value is the leaf itself; with ``linked`` (a value given back by an
    unpack hook, PyTorch's SavedVariable with hooks) it is a new tensor of that data whose
    gradient flows into the leaf."""
    node, nr = edge
    if node is None:
        if tangent is None and data.__class__ in _NUMBERS:
            return data  # a number input stays a number (as in the first-order rules)
        return with_tangent(wrap(data), tangent)
    if type(node) is AccumulateGrad:
        if linked:
            t = _fill(_new(Tensor), data, requires_grad=True)
            t._acc = weakref.ref(node)  # its edge is the leaf's AccumulateGrad node
            return with_tangent(t, tangent)
        return node.variable
    return with_tangent(_fill(_new(Tensor), data, node, nr), tangent)


class DelayedError(Node):
    """Stands for a gradient that cannot be differentiated again: backpropagating through
    it raises ``message`` (a ``once_differentiable`` backward, or one that left the
    library)."""

    __slots__ = ("message",)

    def __init__(self, message, next_functions=()):
        self.message = message
        self.next_functions = next_functions  # where a derivative would have gone
        self.shapes = [None] * len(next_functions)
        self.pre_hooks = None

    def _vjp(self, g, F, graph=False):
        raise RuntimeError(self.message)


class AccumulateGrad(Node):
    """The node of a leaf: the engine adds the incoming cotangent into ``variable.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()
        self.shapes = ()
        self.pre_hooks = None

    def _vjp(self, g, F, graph=False):
        return ()


def accumulator(t):
    """The (cached) AccumulateGrad node of leaf ``t``; held weakly so no cycle is made."""
    acc = t._acc() if t._acc is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        if t._extra is not None and t._extra.get("hooks"):
            acc.pre_hooks = {0: t._extra["hooks"], ("dtype", 0): t.dtype}
        t._acc = weakref.ref(acc)
    return acc


class _TensorGraphMethods:
    """Tensor methods that reach into the graph (installed on Tensor below: the tensor
    layer does not import the node layer)."""

    def retain_grad(self):
        """Keep ``.grad`` for this non-leaf tensor after backward (leaves always keep it)."""
        if self._grad_fn is None:
            if not self._requires_grad:
                raise RuntimeError("can't retain_grad on a tensor that has requires_grad=False")
            return
        if self.retains_grad:
            return
        ref = weakref.ref(self)

        def keep(grad):
            t = ref()
            if t is None:
                return None
            if grad._requires_grad:  # backward(create_graph=True): .grad keeps its history
                t._grad = grad.clone() if t._grad is None else t._grad + grad
            else:
                t._grad = (wrap(np.array(grad._data)) if t._grad is None
                           else wrap(t._grad._data + grad._data))
            return None

        keep.retains_grad = True  # run after the other hooks, as PyTorch 2 does
        handle = []

        def attach(t):
            # Called again when an in-place update gives t a new grad_fn: .grad is then
            # the gradient of t's current value, as in PyTorch.
            if handle:
                handle.pop().remove()
            handle.append(t._grad_fn._add_pre_hook(t._output_nr, keep))
            t._grad_fn.pre_hooks[("dtype", t._output_nr)] = t.dtype

        attach(self)
        self._extra_set("retains_grad", attach)

    @property
    def retains_grad(self):
        return bool(self._extra and self._extra.get("retains_grad"))

    def register_hook(self, hook):
        """Register ``hook(grad) -> Tensor or None`` to run when this tensor's gradient is
        computed; a returned tensor replaces the gradient. Returns a handle with ``remove()``.
        """
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is None:
            # Kept on the leaf itself: its AccumulateGrad node is rebuilt for each graph.
            if self._extra is None or "hooks" not in self._extra:
                self._extra_set("hooks", [])
            hooks = self._extra["hooks"]
            hooks.append(hook)
            # the hooks see a gradient of this tensor's dtype, as PyTorch's
            accumulator(self).pre_hooks = {0: hooks, ("dtype", 0): self.dtype}
            return _Handle(hooks, hook)
        handle = self._grad_fn._add_pre_hook(self._output_nr, hook)
        # the gradient a hook sees (and .grad of retain_grad) has this tensor's dtype, as
        # PyTorch's: a float32 tensor used with float64 ones gets a float32 gradient
        self._grad_fn.pre_hooks[("dtype", self._output_nr)] = self.dtype
        return handle


for _name in ("retain_grad", "retains_grad", "register_hook"):
    setattr(Tensor, _name, _TensorGraphMethods.__dict__[_name])
