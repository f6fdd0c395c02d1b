"""chainrule.compile: a function traced once per input signature and replayed as the NumPy
calls it made. Each test compares the compiled function with the function itself, call by
call (a replay must give what a run gives, bit for bit), and checks whether it replayed
(``cache``) or ran the function (``why`` says why)."""

import threading

import numpy as np
import pytest

import chainrule as cr
from chainrule import func
from samples import SAMPLES

RNG = np.random.default_rng(7)


def replays(compiled):
    """Whether every signature seen so far replays (none runs the function itself)."""
    return bool(compiled.cache) and not compiled.why


def same(a, b):
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, cr.Tensor):
        return isinstance(b, cr.Tensor) and a.dtype == b.dtype and a.shape == b.shape and \
            np.array_equal(a.numpy(), b.numpy(), equal_nan=True)
    return a == b


def close(a, b):
    """Equal up to rounding (the traced run may take another route through the library
    than a run on NumPy arrays, as svdvals' thin SVD; replays equal runs bit for bit)."""
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and \
            all(close(x, y) for x, y in zip(a, b))
    if isinstance(a, cr.Tensor):
        return isinstance(b, cr.Tensor) and a.dtype == b.dtype and a.shape == b.shape and \
            np.allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-13, equal_nan=True)
    return a == b


def loss(w, x, t):  # one sample's logistic loss
    z = x @ w
    return cr.softplus(z) - t * z


def test_per_sample_gradients_replay_and_match_the_formula():
    X, y, w = RNG.standard_normal((6, 4)), (RNG.random(6) < 0.5) * 1.0, RNG.standard_normal(4)
    per = func.vmap(func.grad(loss), in_dims=(None, 0, 0))
    fast = cr.compile(per)
    expected = (1 / (1 + np.exp(-(X @ w))) - y)[:, None] * X  # d/dw softplus(z) - t z
    for _ in range(4):  # trace, replay beside a run, then replays
        g = fast(cr.tensor(w), cr.tensor(X), cr.tensor(y))
        np.testing.assert_allclose(g.numpy(), expected, rtol=1e-12)
    assert replays(fast)
    # new values, same shapes: the same replay
    X2 = RNG.standard_normal((6, 4))
    g = fast(cr.tensor(w), cr.tensor(X2), cr.tensor(y))
    assert same(g, per(cr.tensor(w), cr.tensor(X2), cr.tensor(y))) and len(fast.cache) == 1
    # another batch size: a second signature
    g = fast(cr.tensor(w), cr.tensor(X[:3]), cr.tensor(y[:3]))
    np.testing.assert_allclose(g.numpy(), expected[:3], rtol=1e-12)
    assert len(fast.cache) == 2


def test_dtype_shape_and_non_tensor_arguments_key_the_cache():
    f = cr.compile(lambda x, k, scale=1.0: (x * scale).pow(k).sum(0))
    x32 = cr.tensor(RNG.standard_normal((3, 2)), dtype=cr.float32)
    for k in (2, 3, 2):
        for x in (x32, x32.double()):
            got = f(x, k, scale=0.5)
            assert got.dtype == x.dtype and same(got, (x * 0.5).pow(k).sum(0))
    assert len(f.cache) == 4 and replays(f)


def test_a_branch_on_a_value_runs_the_function_each_time():
    def f(x):
        return x * 2 if x.sum() > 0 else x - 1

    fast = cr.compile(f)
    for v in ([1.0, 2.0], [-1.0, -2.0], [3.0, 1.0]):
        assert same(fast(cr.tensor(v)), f(cr.tensor(v)))
    assert not fast.cache or all(e == "eager" for e in fast.cache.values())
    assert "read into Python" in next(iter(fast.why.values()))


@pytest.mark.parametrize("draw", ["chainrule", "generator", "numpy"])
def test_random_numbers_are_drawn_anew_each_call(draw):
    g = cr.Generator().manual_seed(3)

    def f(x):
        if draw == "chainrule":
            return x + cr.randn(3)
        if draw == "generator":
            return x + cr.randn(3, generator=g)
        return x + cr.tensor(np.random.default_rng().standard_normal(3))

    fast = cr.compile(f)
    x = cr.zeros(3)
    outs = [fast(x).numpy() for _ in range(4)]
    assert all(not np.array_equal(a, b) for i, a in enumerate(outs) for b in outs[i + 1:])
    assert fast.why  # found at the trace, or (NumPy's own draws) by the replay beside a run


def test_captured_tensors_are_read_at_each_call():
    A = cr.tensor(RNG.standard_normal((3, 3)))

    def f(x):
        return A @ x

    fast = cr.compile(f)
    x = cr.tensor(RNG.standard_normal(3))
    fast(x), fast(x)
    A.mul_(2.0)  # in place: the replay reads the same array
    assert same(fast(x), f(x))
    A.data = cr.tensor(RNG.standard_normal((3, 3)))  # a new array: traced again
    assert same(fast(x), f(x))
    assert replays(fast)


def test_rebound_closure_and_global_names_trace_again():
    scale = 2.0

    def f(x):
        return x * scale + OFFSET

    fast = cr.compile(f)
    x = cr.ones(2)
    assert same(fast(x), x * 2.0 + OFFSET) and same(fast(x), x * 2.0 + OFFSET)
    scale = 5.0
    assert same(fast(x), x * 5.0 + OFFSET)
    globals()["OFFSET"] = 7.0
    try:
        assert same(fast(x), x * 5.0 + 7.0)
    finally:
        globals()["OFFSET"] = 1.0
    assert same(fast(x), x * 5.0 + 1.0)


OFFSET = 1.0


def test_ops_on_captured_tensors_alone_are_not_baked_in():
    A = cr.tensor(RNG.standard_normal((2, 2)))

    def f(x):
        return (A * 2) @ x  # A * 2 involves no argument

    fast = cr.compile(f)
    x = cr.ones(2)
    fast(x)
    A.add_(1.0)
    assert same(fast(x), f(x))
    assert "none of whose data is traced" in next(iter(fast.why.values()))


def test_inputs_written_in_place_are_written_once_per_call():
    def f(x):
        x.add_(1.0)
        return x * 2

    fast = cr.compile(f)
    x = cr.zeros(3)
    outs = [fast(x) for _ in range(4)]
    assert np.array_equal(x.numpy(), np.full(3, 4.0))
    assert [o.numpy()[0] for o in outs] == [2.0, 4.0, 6.0, 8.0]
    assert x._version == 4 or x._version >= 4


def test_outputs_that_need_a_graph_or_alias_inputs_run_the_function():
    x = cr.tensor([1.0, 2.0], requires_grad=True)
    f = cr.compile(lambda v: v * 3)
    y = f(x)
    y.sum().backward()  # the graph is the function's own
    assert np.array_equal(x.grad.numpy(), [3.0, 3.0])

    view = cr.compile(lambda v: v[0])
    z = cr.tensor([1.0, 2.0])
    for _ in range(3):
        r = view(z)
    r.add_(10.0)  # a view, as the function returns: the base sees the write
    assert z.numpy()[0] == 11.0


def test_fullgraph_raises_with_the_reason():
    f = cr.compile(lambda x: x * float(x.sum()), fullgraph=True)
    with pytest.raises(RuntimeError, match="cannot be replayed: a traced value was read into"):
        f(cr.ones(2))


def test_is_compiling_and_nested_compiled_functions():
    seen = []

    def inner(x):
        seen.append(cr.compiler.is_compiling())
        return x.exp()

    inner_c = cr.compile(inner)
    outer = cr.compile(lambda x: inner_c(x) + 1)
    x = cr.tensor([0.5, 1.5])
    for _ in range(3):
        assert same(outer(x), x.exp() + 1)
    assert seen[0] is True and not cr.compiler.is_compiling()
    assert replays(outer)


def test_one_tensor_passed_twice_and_returned_as_it_is():
    f = cr.compile(lambda a, b: (a * b, a))
    x = cr.tensor([1.0, 2.0])
    for _ in range(3):
        prod, same_x = f(x, x)
        assert same_x is x and np.array_equal(prod.numpy(), [1.0, 4.0])
    y = cr.tensor([3.0, 4.0])
    prod, _ = f(x, y)
    assert np.array_equal(prod.numpy(), [3.0, 8.0])


def test_threads_replay_concurrently():
    per = cr.compile(func.vmap(func.grad(loss), in_dims=(None, 0, 0)))
    w = cr.tensor(RNG.standard_normal(4))
    data = [(RNG.standard_normal((5, 4)), (RNG.random(5) < 0.5) * 1.0) for _ in range(4)]
    errors = []

    def work(X, y):
        for _ in range(20):
            got = per(w, cr.tensor(X), cr.tensor(y))
            want = (1 / (1 + np.exp(-(X @ w.numpy()))) - y)[:, None] * X
            if not np.allclose(got.numpy(), want, rtol=1e-12):
                errors.append("wrong")

    threads = [threading.Thread(target=work, args=d) for d in data]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_modes_and_hooks_run_the_function():
    f = cr.compile(lambda x: x.sin())
    x = cr.tensor([0.3])
    f(x), f(x)
    import chainrule.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        d = fwAD.make_dual(x, cr.tensor([1.0]))
        t = fwAD.unpack_dual(f(d)).tangent  # forward mode: the function's own ops
    assert np.allclose(t.numpy(), np.cos(0.3))
    with cr.no_grad():
        assert same(f(x), x.sin())


def test_every_table_sample_compiles_to_what_it_computes():
    """For each primitive's sample: its value and the gradient of its sum (func.grad), on
    the sample's inputs and on inputs scaled a little, equal the function's own."""
    replayed = 0
    for s in SAMPLES:
        floats = [i for i, v in enumerate(s.inputs)
                  if isinstance(v, np.ndarray) and v.dtype.kind == "f"]

        def value(*xs, s=s):
            return s.fn(*xs, **s.kwargs)

        def total(*xs, value=value):
            out = value(*xs)
            outs = out if isinstance(out, (tuple, list)) else (out,)
            return sum(o.sum() for o in outs
                       if isinstance(o, cr.Tensor) and o.is_floating_point())

        fns = [value]
        if floats:
            fns.append(func.grad(total, argnums=tuple(floats)))
        for fn in fns:
            fast = cr.compile(fn)
            for scale in (1.0, 1.0, 1.0, 1.0 + 1e-3):
                def inputs(scale=scale, floats=floats, given=s.inputs):
                    return [cr.tensor(v * scale if i in floats else v)
                            if isinstance(v, np.ndarray) else v for i, v in enumerate(given)]

                mine, theirs = inputs(), inputs()
                want, got = fn(*mine), fast(*theirs)
                assert close(got, want), f"{s.id}: the compiled {fn.__name__} differs"
                assert close(theirs, mine), f"{s.id}: the compiled {fn.__name__} wrote into " \
                    "its inputs"
            replayed += replays(fast)
    # most samples replay (the rest read values, or compute with NumPy only: they run)
    assert replayed > len(SAMPLES)


def test_results_whose_shape_depends_on_values_run_the_function():
    def f(x):
        kept = x[x > 0]
        return kept * cr.ones(kept.shape[0])  # a shape read from a data-dependent result

    fast = cr.compile(f)
    for v in ([1.0, -2.0, 3.0], [1.0, 2.0, 3.0], [-1.0, -2.0, 3.0], [4.0, 5.0, -6.0]):
        assert same(fast(cr.tensor(v)), f(cr.tensor(v)))
    assert "shape depends on values" in next(iter(fast.why.values()))


def test_per_sample_gradients_of_a_module_through_functional_call_replay():
    cr.manual_seed(0)
    model = cr.nn.Sequential(cr.nn.Linear(4, 8), cr.nn.Tanh(), cr.nn.Linear(8, 3))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def sample_loss(p, x, t):
        out = func.functional_call(model, p, (x.unsqueeze(0),))
        return cr.nn.functional.cross_entropy(out, t.unsqueeze(0))

    per = func.vmap(func.grad(sample_loss), in_dims=(None, 0, 0))
    fast = cr.compile(per)
    X, T = cr.tensor(RNG.standard_normal((5, 4))), cr.tensor([0, 2, 1, 1, 0])
    for _ in range(3):
        got, want = fast(params, X, T), per(params, X, T)
        assert all(close(got[k], want[k]) for k in want)
    # each sample's gradient is that of the loss of that sample alone
    one = func.grad(sample_loss)(params, X[2], T[2])
    assert all(np.allclose(got[k][2].numpy(), one[k].numpy(), rtol=1e-12) for k in one)


def test_a_compiled_method_binds_its_instance():
    class Scaled:
        def __init__(self, k):
            self.k = k

        @cr.compile
        def apply(self, x):
            return x * self.k

    x = cr.tensor([1.0, 2.0])
    a, b = Scaled(2.0), Scaled(3.0)
    for _ in range(3):
        assert same(a.apply(x), x * 2.0) and same(b.apply(x), x * 3.0)
