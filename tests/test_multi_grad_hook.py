"""autograd.graph.register_multi_grad_hook: which gradients "all" mode sees in each pass,
"any" mode's one call; compared with PyTorch when it is installed."""

import pytest

import chainrule as cr

try:
    import torch
except ImportError:
    torch = None

MODULES = [cr] + ([torch] if torch is not None else [])


def _script(m):
    G = m.autograd.graph
    a = m.ones(2, 3, requires_grad=True)
    b = m.ones(2, 3, requires_grad=True)
    c, d = a * b, a * b
    log = []
    h = G.register_multi_grad_hook((a, b, c, d), lambda gs: log.append(
        [None if g is None else g.sum().item() for g in gs]))
    c.sum().backward(retain_graph=True)
    c.sum().backward(inputs=(a,), retain_graph=True)
    (c.sum() + 2 * d.sum()).backward(retain_graph=True)
    h.remove()
    e = c * 2
    h = G.register_multi_grad_hook((c, e, d), lambda gs: log.append(
        [g is not None for g in gs]))
    m.autograd.grad(e.sum(), [c], retain_graph=True)
    m.autograd.grad((e.sum(), d.sum()), [a], retain_graph=True)
    h.remove()
    c.sum().backward(retain_graph=True)  # removed: no more calls
    any_log = []
    G.register_multi_grad_hook((a, b, m.ones(2)), lambda g: any_log.append(g.sum().item()),
                               mode="any")
    (3 * c.sum()).backward(retain_graph=True)
    c.sum().backward()
    return log, any_log


def test_multi_grad_hook_all_and_any():
    # a = b = ones(2, 3) and c = d = a * b, so dc/da = b and dc/db = a are ones. "all" mode
    # calls once per pass with each tensor's gradient, None where the pass gave it none:
    #   c.sum(): a, b, c get ones (sums 6); d is not in the graph
    #   inputs=(a,): b is not asked for; c lies on the way to a
    #   c.sum() + 2 d.sum(): a and b get 1 + 2 = 3 per entry (18), c ones, d twos (12)
    # then on (c, e, d) with e = 2 c: grad of e.sum() for c reaches c and e only; grad of
    # (e.sum(), d.sum()) for a passes all three. After remove(), no more calls.
    # "any" mode calls once per pass with the first gradient of a or b: 3 b (18), then b (6)
    log, any_log = _script(cr)
    assert log == [[6.0, 6.0, 6.0, None], [6.0, None, 6.0, None],
                   [18.0, 18.0, 6.0, 12.0], [True, True, False], [True, True, True]]
    assert any_log == [18.0, 6.0]
    if torch is not None:
        assert (log, any_log) == _script(torch)


@pytest.mark.parametrize("m", MODULES)
def test_multi_grad_hook_errors(m):
    G = m.autograd.graph
    a = m.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match=r"Expects mode to be one of \('all', 'any'\) but "
                                         "got some"):
        G.register_multi_grad_hook((a,), print, mode="some")
    with pytest.raises(AssertionError, match="Expected gradient function to be set"):
        G.register_multi_grad_hook((a, m.ones(2)), print)
