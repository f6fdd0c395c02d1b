"""vmap's fallbacks: an op or a derivative rule without a batched version runs once per
sample inside the one batched evaluation (as PyTorch's per-op fallback), so ``func`` runs
once; where chainrule must still evaluate ``func`` once per sample, an in-place update of
a tensor from outside ``func`` would happen once per sample instead of once (PyTorch's
vmap runs ``func`` once): vmap puts the tensor back and raises instead."""

import numpy as np
import pytest

import chainrule as cr
from chainrule import func

try:
    import torch
except ImportError:  # pragma: no cover - torch is optional
    torch = None

X0 = np.arange(6.0).reshape(3, 2)


def _counted(fn):
    calls = []

    def f(*args):
        calls.append(1)
        return fn(*args)
    return f, calls


@pytest.mark.parametrize("op", [
    lambda x: x.cumsum(0),
    lambda x: x.sort().values,
    lambda x: x.argsort(),
    lambda x: cr.hypot(x, x + 1),
    lambda x: cr.special.zeta(x + 2, cr.tensor(1.5)),
    lambda x: x.arcsinh() + x.cosh(),
])
def test_ops_without_a_batched_version_keep_one_evaluation(op):
    f, calls = _counted(op)
    X = cr.tensor(X0 * 0.3 + 0.1)
    out = func.vmap(f)(X)
    assert len(calls) == 1  # one evaluation of func for the whole batch
    for b in range(3):
        np.testing.assert_allclose(out.numpy()[b], op(cr.tensor(X0[b] * 0.3 + 0.1)).numpy())


def test_a_rule_without_a_batched_version_runs_per_sample_in_the_backward():
    # eigh's VJP looks at the cotangent's numbers (its gauge check): per sample, inside the
    # one evaluation of func
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 4, 4))
    A = A + A.transpose(0, 2, 1)
    loss = lambda a: (cr.linalg.eigh(a).eigenvectors[:, 0] ** 4).sum()  # noqa: E731
    f, calls = _counted(loss)
    g = func.vmap(func.grad(f))(cr.tensor(A))
    assert len(calls) == 1
    for b in range(3):
        np.testing.assert_allclose(g.numpy()[b], func.grad(loss)(cr.tensor(A[b])).numpy(),
                                   rtol=1e-10, atol=1e-12)
    # and the sum of squared eigenvalues, ||A||_F^2, has gradient 2A
    g2 = func.vmap(func.grad(lambda a: cr.linalg.eigh(a).eigenvalues.pow(2).sum()))(
        cr.tensor(A))
    np.testing.assert_allclose(g2.numpy(), 2 * A, rtol=1e-10, atol=1e-12)


def test_an_update_of_a_captured_tensor_happens_once_as_in_pytorch():
    counter = cr.zeros(())

    def f(x):
        counter.add_(1)
        return x.cumsum(0)  # no batched kernel: it used to restart func per sample

    out = func.vmap(f)(cr.tensor(X0))
    assert counter.item() == 1.0
    np.testing.assert_allclose(out.numpy(), np.cumsum(X0, axis=1))
    if torch is not None:
        tc = torch.zeros(())

        def tf(x):
            tc.add_(1)
            return x.cumsum(0)
        torch.func.vmap(tf)(torch.tensor(X0))
        assert tc.item() == counter.item()


def test_a_captured_update_then_a_value_read_raises_and_leaves_the_tensor():
    counter = cr.zeros(())
    buffer = cr.ones(2)
    before = counter._version

    def f(x):
        counter.add_(1)
        buffer.mul_(3)
        return x * x.sum().item()  # a value read: only one evaluation per sample can do it

    with pytest.raises(RuntimeError, match="left as it was before the call"):
        func.vmap(f)(cr.tensor(X0))
    assert counter.item() == 0.0 and counter._version == before
    np.testing.assert_array_equal(buffer.numpy(), [1.0, 1.0])


def test_an_update_of_the_mapped_input_then_a_value_read_writes_each_row_once():
    X = cr.tensor(X0.copy())

    def f(x):
        x.mul_(2)
        return x * x.sum().item()

    out = func.vmap(f)(X)
    np.testing.assert_array_equal(X.numpy(), 2 * X0)  # doubled once, not twice
    rows = 2 * X0
    np.testing.assert_allclose(out.numpy(), rows * rows.sum(1, keepdims=True))


def test_per_sample_evaluation_refuses_a_captured_update():
    # randomness="different" evaluates once per sample: an update of a tensor func closed
    # over would happen three times (PyTorch: once)
    counter = cr.zeros(())

    def f(x):
        counter.add_(1)
        return x + cr.rand(2)

    with pytest.raises(RuntimeError, match="would repeat that update"):
        func.vmap(f, randomness="different")(cr.tensor(X0))
    assert counter.item() == 0.0


def test_per_sample_evaluation_allows_updates_of_its_own_temporaries():
    # a mapped input that requires grad: one evaluation per sample; tensors func makes and
    # updates in place are its own, and the gradient is d/dx sum((2h + 1) h), h = 3x
    W = cr.tensor(X0.copy(), requires_grad=True)

    def f(x):
        h = x.clone()
        h.mul_(2)
        h.add_(x)
        y = h * 2
        y.add_(1)
        return (y * h).sum()

    out = func.vmap(f)(W)
    h = 3 * X0
    np.testing.assert_allclose(out.detach().numpy(), ((2 * h + 1) * h).sum(1))
    out.sum().backward()
    np.testing.assert_allclose(W.grad.numpy(), 3 * (4 * h + 1))


def test_setitem_into_a_batched_value_keeps_one_evaluation():
    X = cr.tensor(X0.copy())

    def g(x):
        y = x * 1.0
        y[0] = 5.0
        return y

    f, calls = _counted(g)
    out = func.vmap(f)(X)
    assert len(calls) == 1
    expected = X0.copy()
    expected[:, 0] = 5.0
    np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_array_equal(X.numpy(), X0)  # the input untouched (y is a new tensor)


def test_an_empty_batch_gives_empty_results_on_every_path():
    # size-0 batches: PyTorch returns empty results; the per-sample path (an input that
    # requires grad, randomness="different") had no sample to learn the output from
    cases = [(lambda x: x * 2, cr.zeros(0, 3, requires_grad=True), {}, (0, 3)),
             (lambda x: x * 2, cr.zeros(0, 3), {"randomness": "different"}, (0, 3)),
             (lambda x: x.sum(), cr.zeros(3, 0, requires_grad=True), {"in_dims": 1}, (0,)),
             (lambda x: x @ x.T, cr.zeros(0, 2, 3), {}, (0, 2, 2))]
    for f, x, kwargs, shape in cases:
        assert tuple(func.vmap(f, **kwargs)(x).shape) == shape
        if torch is not None:
            t = torch.zeros(tuple(x.shape), requires_grad=x.requires_grad)
            assert tuple(torch.func.vmap(f, **kwargs)(t).shape) == shape
