"""Saved-tensor hooks (``autograd.graph.saved_tensors_hooks``, ``save_on_cpu``,
``disable_saved_tensors_hooks``), inference tensors (``inference_mode``), the top-level
anomaly queries, and custom Functions with non-tensor inputs (one edge per Tensor input).

Each test checks values derived without PyTorch (call counts and order, gradients by hand
or without hooks); where PyTorch is installed, the same programs also run on it and are
compared."""

import contextlib
import threading
import warnings

import numpy as np
import pytest

import chainrule as cr
from chainrule import _state
from chainrule._node import OpNode, PackedOpNode
from chainrule.autograd.graph import (
    disable_saved_tensors_hooks,
    save_on_cpu,
    saved_tensors_hooks,
)

try:
    import torch
except ImportError:  # CI has no torch
    torch = None


def _logging_hooks(lib, log, tag=""):
    def pack(t):
        log.append("pack" + tag)
        return t

    def unpack(t):
        log.append("unpack" + tag)
        return t

    return lib.autograd.graph.saved_tensors_hooks(pack, unpack)


def _counts_program(lib):
    """pack/unpack counts of a small graph: a * b saves both, b.exp() its result."""
    log = []
    a = lib.ones(3, requires_grad=True)
    b = a * 2
    with _logging_hooks(lib, log):
        c = a * b
        e = b.exp()
    packs = log.count("pack")
    (c.sum() + e.sum()).backward()
    return packs, log.count("unpack"), a.grad.detach().numpy().copy()


def test_pack_at_forward_unpack_at_backward():
    packs, unpacks, grad = _counts_program(cr)
    assert (packs, unpacks) == (3, 3)
    # c = 2 a^2, e = exp(2 a): dc/da + de/da = 4 a + 2 exp(2 a) at a = 1
    np.testing.assert_allclose(grad, np.full(3, 4 + 2 * np.exp(2.0)))
    if torch is not None:
        theirs = _counts_program(torch)
        assert (packs, unpacks) == theirs[:2]
        np.testing.assert_allclose(grad, theirs[2], rtol=1e-6)


def test_pack_receives_the_input_under_no_grad():
    seen = []
    a = cr.ones(3, requires_grad=True)
    b = a * 2

    def pack(t):
        seen.append((t is a, t is b, cr.is_grad_enabled(), t.requires_grad))
        return t

    with saved_tensors_hooks(pack, lambda t: t):
        a * b
        e = b.exp()
    assert sorted(seen[:2]) == [(False, True, False, True), (True, False, False, True)]
    assert seen[2][:3] == (False, False, False)  # the saved result: a tensor of its own
    assert isinstance(e.grad_fn, PackedOpNode)


def test_no_hooks_no_cost_path():
    flags = _state.STATE.flags
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        assert _state.STATE.flags & _state.SLOW
    assert _state.STATE.flags == flags
    x = cr.ones(2, requires_grad=True)
    assert type(x.exp().grad_fn) is OpNode  # recorded by the plain path again


def test_unpack_hook_changes_the_gradient_by_the_formula():
    x = cr.tensor([1.0, 2.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: t * 1, lambda t: t * 2):
        y = x ** 3
    g, = cr.autograd.grad(y.sum(), x, create_graph=True)
    # the VJP 3 s^2 reads the saved s = 2 x
    np.testing.assert_allclose(g.detach().numpy(), 3 * (2 * np.array([1.0, 2.0])) ** 2)
    # the unpacked tensor keeps x's history (d s / d x = 1 through the hooks): 6 s = 12 x
    g2, = cr.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(g2.numpy(), [12.0, 24.0])


def _modified_unpack_program(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t * 2):
        y = (x ** 3).sin()
    g, = lib.autograd.grad(y.sum(), x, create_graph=True)
    g2, = lib.autograd.grad(g.sum(), x)
    return g.detach().numpy(), g2.numpy()


def test_modified_unpack_and_double_backward_match_torch():
    g, g2 = _modified_unpack_program(cr)
    # pow saved x, sin saved p = x^3; each unpacks as twice its value, keeping the saved
    # tensor's history (as above): s_x = 2 x with ds_x/dx = 1, s_p = 2 x^3 with ds_p/dx =
    # pow's VJP 3 s_x^2 = 12 x^2 (that VJP unpacks x again).
    # g = cos(s_p) 3 s_x^2 = 12 x^2 cos(2 x^3)
    # dg/dx = -sin(s_p) 12 x^2 3 s_x^2 + cos(s_p) 6 s_x = -144 x^4 sin(2 x^3) + 12 x cos(2 x^3)
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(g, 12 * x ** 2 * np.cos(2 * x ** 3), rtol=1e-12)
    np.testing.assert_allclose(g2, -144 * x ** 4 * np.sin(2 * x ** 3)
                               + 12 * x * np.cos(2 * x ** 3), rtol=1e-12)
    if torch is not None:
        for ours, theirs in zip((g, g2), _modified_unpack_program(torch)):
            np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_gradients_equal_without_hooks_across_ops():
    rng = np.random.default_rng(0)
    cases = [
        lambda x, y: (x @ y).sum(),
        lambda x, y: x.max(dim=1)[0].sum() + y.sum(),       # a saved output of several
        lambda x, y: (cr.sort(x, dim=1)[0] * y).sum(),
        lambda x, y: cr.cat([x, y]).prod(),                  # variadic input
        lambda x, y: (x[[0, 2]] * y[1]).sum(),
        lambda x, y: cr.where(x > 0, x * y, y.exp()).sum(),
        lambda x, y: (cr.softmax(x, dim=1) * y).sum(),
        lambda x, y: (x.float() * y.sum()).sum(),            # promoted dtypes
    ]
    packs = [0]

    def pack(t):
        packs[0] += 1
        return ("box", t.detach().clone())

    for f in cases:
        a, b = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
        grads = []
        for hooked in (False, True):
            x = cr.tensor(a, requires_grad=True)
            y = cr.tensor(b, requires_grad=True)
            if hooked:
                with saved_tensors_hooks(pack, lambda p: p[1]):
                    loss = f(x, y)
            else:
                loss = f(x, y)
            gx, gy = cr.autograd.grad(loss, (x, y), create_graph=True)
            h, = cr.autograd.grad((gx * gx).sum() + (gy * gy).sum() + (x * x).sum(), x)
            grads.append([gx.detach().numpy(), gy.detach().numpy(), h.numpy()])
        for p, q in zip(*grads):
            np.testing.assert_allclose(p, q, rtol=1e-12)
    assert packs[0] > len(cases)


def test_hooks_nest_innermost_wins():
    log = []
    a = cr.ones(3, requires_grad=True)
    with _logging_hooks(cr, log, "1"):
        with _logging_hooks(cr, log, "2"):
            y = a.sin()
        z = a.cos()
    assert log == ["pack2", "pack1"]
    y.sum().backward()
    z.sum().backward()
    assert log == ["pack2", "pack1", "unpack2", "unpack1"]
    np.testing.assert_allclose(a.grad.numpy(), np.cos(1.0) - np.sin(1.0))


def test_saved_accessors_unpack_each_time():
    log = []
    a = cr.tensor([0.5, 1.5], requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: (log.append("u"), t * 10)[1]):
        e = a.exp()
        m = a * e
    np.testing.assert_allclose(e.grad_fn._saved_result.detach().numpy(),
                               10 * np.exp([0.5, 1.5]))
    assert m.grad_fn._saved_self is not a  # a new tensor, as PyTorch's with hooks
    np.testing.assert_allclose(m.grad_fn._saved_self.detach().numpy(), [5.0, 15.0])
    assert log == ["u", "u", "u"]  # one unpack per access


def test_retain_graph_unpacks_per_backward_and_frees_after():
    log = []
    a = cr.ones(2, requires_grad=True)
    with _logging_hooks(cr, log):
        y = a.exp()
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert log == ["pack", "unpack", "unpack"]
    np.testing.assert_allclose(a.grad.numpy(), 2 * np.e)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        _ = y.grad_fn._saved_result


def test_versions_not_checked_through_hooks():
    x = cr.tensor([1.0, 2.0])
    w = cr.tensor([3.0, 4.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        y = w * x
    with cr.no_grad():
        x.mul_(10)  # the hook kept x itself: backward sees its new value, as PyTorch's
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [10.0, 20.0])
    z = w * x
    with cr.no_grad():
        x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_hook_errors():
    a = cr.ones(3, requires_grad=True)
    with saved_tensors_hooks(lambda t: 1, lambda t: 5):
        y = a.exp()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor but got result "
                                        "of type int"):
        y.sum().backward()
    c = a * 1

    def bad(t):
        t.add_(1)
        return t

    with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
        with saved_tensors_hooks(bad, lambda t: t):
            c.exp()


def test_pack_result_need_not_be_a_tensor():
    a = cr.tensor([1.0, 2.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: None, lambda t: cr.ones(2)):
        y = a.exp()
    y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [1.0, 1.0])  # exp' read as ones


def test_save_on_cpu_gives_the_same_gradients():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(3, 2))

    def run(ctx):
        x = cr.tensor(a, requires_grad=True)
        w = cr.tensor(b, requires_grad=True)
        with ctx:
            loss = (x @ w).tanh().pow(2).sum()
        loss.backward()
        return x.grad.numpy(), w.grad.numpy(), loss.grad_fn

    plain = run(contextlib.nullcontext())
    cpu = run(save_on_cpu(pin_memory=True))
    for p, q in zip(plain[:2], cpu[:2]):
        np.testing.assert_allclose(p, q, rtol=1e-12)


def test_disable_saved_tensors_hooks():
    with disable_saved_tensors_hooks("hooks are off here"):
        with pytest.raises(RuntimeError, match="hooks are off here"):
            with save_on_cpu():
                pass
        with disable_saved_tensors_hooks("inner"):
            with pytest.raises(RuntimeError, match="inner"):
                saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
        with pytest.raises(RuntimeError, match="hooks are off here"):
            saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
    with saved_tensors_hooks(lambda t: t, lambda t: t):  # enabled again after the block
        with pytest.raises(RuntimeError, match="already active"):
            with disable_saved_tensors_hooks("already active"):
                pass
    assert _state.STATE.saved_hooks_disabled is None and not _state.STATE.saved_hooks


def test_hooks_are_per_thread():
    log = []
    a = cr.ones(2, requires_grad=True)

    def other():
        a.exp()

    with _logging_hooks(cr, log):
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert log == []


class _Scale(cr.autograd.Function):
    @staticmethod
    def forward(ctx, u, k, v):
        ctx.log.append("forward")
        ctx.save_for_backward(u, v)
        ctx.k = k
        return u * k * v

    @staticmethod
    def backward(ctx, g):
        u, v = ctx.saved_tensors
        u, v = ctx.saved_tensors
        return g * ctx.k * v, None, g * ctx.k * u


def _function_program(lib, Scale):
    log = []
    u = lib.tensor([1.0, 2.0], requires_grad=True)
    v = lib.tensor([3.0, 4.0])

    def pack(t):
        log.append("pack")
        return t

    def unpack(t):
        log.append("unpack")
        return t * 2

    with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
        Scale.log = log
        out = Scale.apply(u, 2.0, v)
    got = []
    out.grad_fn.register_hook(lambda gi, go: got.append(len(gi)))
    nexts = [n is None for n, _ in out.grad_fn.next_functions]
    out.sum().backward()
    return log, got, nexts, u.grad.numpy()


def test_custom_function_saved_tensors_through_hooks():
    class Scale(_Scale):
        @staticmethod
        def forward(ctx, u, k, v):
            ctx.log = Scale.log
            return _Scale.forward(ctx, u, k, v)

    log, got, nexts, grad = _function_program(cr, Scale)
    # packed after forward, unpacked at every ctx.saved_tensors
    assert log == ["forward", "pack", "pack", "unpack", "unpack", "unpack", "unpack"]
    assert got == [2] and nexts == [False, True]  # one entry per Tensor input
    np.testing.assert_allclose(grad, 2.0 * 2 * np.array([3.0, 4.0]))  # v unpacked as 2 v
    if torch is not None:
        class Theirs(torch.autograd.Function):
            @staticmethod
            def forward(ctx, u, k, v):
                ctx.log = Theirs.log
                return _Scale.forward(ctx, u, k, v)

            backward = staticmethod(_Scale.backward)

        theirs = _function_program(torch, Theirs)
        assert (log, got, nexts) == theirs[:3]
        np.testing.assert_allclose(grad, theirs[3])


def test_function_with_number_input_edges_and_gradients():
    class AddK(cr.autograd.Function):
        @staticmethod
        def forward(ctx, k, x, m, y):
            return x * k + y * m

        @staticmethod
        def backward(ctx, g):
            return None, g * 3.0, None, g * 5.0

    x = cr.ones(2, requires_grad=True)
    y = cr.ones(2, requires_grad=True)
    out = AddK.apply(3.0, x, 5.0, y)
    assert len(out.grad_fn.next_functions) == 2
    got = []
    out.grad_fn.register_hook(lambda gi, go: got.append([g.numpy().tolist() for g in gi]))
    out.sum().backward()
    assert got == [[[3.0, 3.0], [5.0, 5.0]]]
    np.testing.assert_allclose(x.grad.numpy(), 3.0)
    np.testing.assert_allclose(y.grad.numpy(), 5.0)

    class Bad(AddK):
        @staticmethod
        def backward(ctx, g):
            return g, g, None, g

    with pytest.raises(RuntimeError, match="input 0, but that forward input was not a Tensor"):
        Bad.apply(3.0, x, 5.0, y).sum().backward()


# --- inference mode -------------------------------------------------------------------------


INFERENCE_SAVED = "Inference tensors cannot be saved for backward"
INFERENCE_INPLACE = "Inplace update to inference tensor outside InferenceMode is not allowed"


def test_inference_tensors_are_marked():
    n = cr.ones(3)
    with cr.inference_mode():
        a = cr.ones(3)
        b = a * 2
        v = a[1:]
        nv = n[1:]  # a view of a normal tensor stays normal
        assert cr.is_inference_mode_enabled()
        with cr.inference_mode(False):
            assert not cr.is_inference_mode_enabled() and cr.is_grad_enabled()
            assert not cr.ones(1).is_inference()
    assert a.is_inference() and b.is_inference() and v.is_inference()
    assert cr.is_inference(a) and not nv.is_inference() and not n.is_inference()
    assert a[0].is_inference() and a.detach().is_inference()
    assert not a.clone().is_inference() and not (a * 2).is_inference()
    with pytest.raises(RuntimeError, match="do not track version counter"):
        _ = a._version


def test_inference_tensor_errors_outside_inference_mode():
    with cr.inference_mode():
        a = cr.ones(3)
        a.add_(1)  # allowed inside
    np.testing.assert_allclose(a.numpy(), 2.0)
    w = cr.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=INFERENCE_SAVED):
        w * a
    with pytest.raises(RuntimeError, match=INFERENCE_SAVED):
        cr.mul(a, w)
    s = w + a  # nothing saved: allowed
    s.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 1.0)
    with pytest.raises(RuntimeError, match=INFERENCE_INPLACE):
        a.add_(1)
    with pytest.raises(RuntimeError, match=INFERENCE_INPLACE):
        a[1:].mul_(2)
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor"):
        a.requires_grad_()
    a.requires_grad_(False)
    c = a.clone().requires_grad_()  # the documented way out
    (c * a.clone()).sum().backward()
    np.testing.assert_allclose(c.grad.numpy(), a.numpy())

    class Save(cr.autograd.Function):
        @staticmethod
        def forward(ctx, u, k):
            ctx.save_for_backward(k)
            return u * 2

        @staticmethod
        def backward(ctx, g):
            return g, None

    with pytest.raises(RuntimeError, match=INFERENCE_SAVED):
        Save.apply(w, a)
    Save.apply(cr.ones(3), a)  # not recorded: nothing saved


def _inference_program(lib):
    out = []
    with lib.inference_mode():
        a = lib.ones(3)
        v = a[1:]
    w = lib.ones(3, requires_grad=True)
    out.append((a.is_inference(), v.is_inference(), a.clone().is_inference()))
    for f in (lambda: w * a, lambda: w + a, lambda: a.add_(1), lambda: a.requires_grad_(),
              lambda: (a * 2).is_inference()):
        try:
            r = f()
            out.append(r if isinstance(r, bool) else "ok")
        except RuntimeError as e:  # (chainrule names the op first)
            out.append(str(e).split(": ", 1)[-1].split(".")[0])
    return out


def test_inference_matches_torch():
    # made in inference mode: a and its view are inference tensors; outside it, a clone
    # and a * 2 are normal tensors. w * a would save a (refused), w + a saves nothing; an
    # in-place update or requires_grad_() outside inference mode is refused
    ours = _inference_program(cr)
    assert ours == [(True, True, False), INFERENCE_SAVED, "ok", INFERENCE_INPLACE,
                    "Setting requires_grad=True on inference tensor outside InferenceMode "
                    "is not allowed", False]
    if torch is not None:
        assert ours == _inference_program(torch)


def test_anomaly_queries_at_top_level():
    assert not cr.is_anomaly_enabled() and cr.is_anomaly_check_nan_enabled()
    with cr.autograd.detect_anomaly(check_nan=False):
        assert cr.is_anomaly_enabled() and not cr.is_anomaly_check_nan_enabled()
    cr.set_anomaly_enabled(True)
    try:
        assert cr.is_anomaly_enabled() and cr.is_anomaly_check_nan_enabled()
    finally:
        cr.set_anomaly_enabled(False)
    assert not cr.is_anomaly_enabled() and cr.is_anomaly_check_nan_enabled()
    # set_anomaly_enabled(mode, check_nan=True): the second argument sets check_nan, and
    # leaving it out sets it back to its default True
    ours = _anomaly_program(cr)
    assert ours == [False, True, True, False, False, True]
    if torch is not None:
        assert ours == _anomaly_program(torch)


def _anomaly_program(lib):
    out = [lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lib.set_anomaly_enabled(True, False)
        out += [lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()]
        lib.set_anomaly_enabled(False)
    return out + [lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()]


def test_inplace_update_of_an_inference_tensor_raises_before_writing():
    # the error came after the data was written; now nothing changes
    with cr.inference_mode():
        t = cr.ones(3)
    for update in (lambda: t.add_(1), lambda: t.mul_(2.0), lambda: t.fill_(3.0),
                   lambda: t.zero_(), lambda: t.copy_(cr.zeros(3))):
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
            update()
        assert t.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
        t[0] = 5.0
    assert t.tolist() == [1.0, 1.0, 1.0]
    with cr.inference_mode():  # inside inference mode it is allowed
        t.add_(1)
    assert t.tolist() == [2.0, 2.0, 2.0]


# --- allow_mutation_on_saved_tensors --------------------------------------------------------

A3 = np.array([0.3, -1.2, 0.7])


def test_saved_tensors_may_change_in_place_inside_allow_mutation_on_saved_tensors():
    from chainrule.autograd.graph import allow_mutation_on_saved_tensors

    with allow_mutation_on_saved_tensors():
        a = cr.tensor(A3, requires_grad=True)
        b = a * 1
        y = (b ** 2).sum()  # saves b
        b.sin_()  # unary update
        b[0].mul_(3)  # through a view
        b.add_(1)  # the binary fast path
        y.backward()  # d/da sum(a^2) at the saved value: 2a
        np.testing.assert_allclose(a.grad.numpy(), 2 * A3)
        # second order through the saved copy, linked to the history it had when saved:
        # z = sum(sin(a)^3 * a), z'' = 6 s c^2 a - 3 s^3 a + 6 s^2 c (s = sin a, c = cos a)
        a2 = cr.tensor(A3, requires_grad=True)
        c = a2.sin()
        z = (c ** 3 * a2).sum()
        c.mul_(3)
        (g,) = cr.autograd.grad(z, a2, create_graph=True)
        (h,) = cr.autograd.grad(g.sum(), a2)
        s, co = np.sin(A3), np.cos(A3)
        np.testing.assert_allclose(g.detach().numpy(), 3 * s ** 2 * co * A3 + s ** 3)
        np.testing.assert_allclose(h.numpy(), 6 * s * co ** 2 * A3 - 3 * s ** 3 * A3
                                   + 6 * s ** 2 * co)
        # an optimizer's step on a saved parameter
        p = cr.nn.Parameter(cr.tensor(A3))
        opt = cr.optim.SGD([p], lr=0.1)
        loss = (p ** 2).sum()
        p.grad = cr.ones(3)
        opt.step()
        loss.backward()
        np.testing.assert_allclose(p.grad.numpy(), 1 + 2 * A3)
        np.testing.assert_allclose(p.detach().numpy(), A3 - 0.1)
    # outside the block a saved tensor changed in place raises again, as ever
    d = cr.tensor(A3, requires_grad=True) * 1
    w = (d ** 2).sum()
    d.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.backward()
    if torch is not None:
        with torch.autograd.graph.allow_mutation_on_saved_tensors():
            ta = torch.tensor(A3, requires_grad=True)
            tb = ta * 1
            ty = (tb ** 2).sum()
            tb.sin_()
            ty.backward()
            np.testing.assert_allclose(ta.grad.numpy(), 2 * A3)


def test_a_write_allow_mutation_does_not_see_still_raises():
    from chainrule.autograd.graph import allow_mutation_on_saved_tensors, increment_version

    with allow_mutation_on_saved_tensors():
        a = cr.tensor(A3, requires_grad=True)
        b = a * 1
        y = (b ** 2).sum()
        increment_version(b)  # a change no copy was taken for
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()
