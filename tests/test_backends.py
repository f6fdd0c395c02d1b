"""The same code on other array libraries: Dask (lazily, one chunk and several chunks) and
array-api-strict on its non-default device, which refuses host conversion exactly where
CuPy would, so no hidden NumPy call survives in what runs there.

Every table sample runs forward and backward (a VJP with a random cotangent) on each
backend and is compared with NumPy; on Dask a callback fails on any compute. Known gaps
live in one table (tests/backend_gaps.py) with their reasons: a listed sample that starts
working, or an unlisted one that fails, fails this test.
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
from backend_gaps import KNOWN_GAPS
from backends import converters, run_sample
from samples import SAMPLES

BACKENDS = sorted(converters())
CASES = [(b, s) for b in BACKENDS for s in SAMPLES]


def test_the_backends_run_here():
    # the test extra installs both, so CI runs the backend tests
    assert {"dask-1chunk", "dask-chunks", "array-api-strict"} <= set(BACKENDS)


@pytest.mark.parametrize("backend,sample", CASES,
                         ids=[f"{b}-{s.id}" for b, s in CASES])
def test_table_sample_on_backend(backend, sample):
    err = run_sample(sample, backend)
    gap = KNOWN_GAPS.get(backend, {}).get(sample.id)
    if gap is None:
        assert err is None, f"{sample.id} fails on {backend}: {type(err).__name__}: {err}"
    else:
        assert err is not None, (f"{sample.id} now works on {backend}: remove it from "
                                 f"KNOWN_GAPS (it was: {gap})")


def test_gaps_name_real_samples():
    ids = {s.id for s in SAMPLES}
    for backend, gaps in KNOWN_GAPS.items():
        assert backend in {"dask-1chunk", "dask-chunks", "array-api-strict", "cupy"}
        assert set(gaps) <= ids, sorted(set(gaps) - ids)


def test_a_majority_of_elementwise_and_reduction_samples_run_on_every_backend():
    core = [s for s in SAMPLES if s.op in {"add", "sub", "mul", "div", "exp", "log", "sin",
                                           "cos", "tanh", "sum", "mean", "matmul", "mm"}]
    for backend in BACKENDS:
        ok = [s.id for s in core if s.id not in KNOWN_GAPS.get(backend, {})]
        assert len(ok) >= len(core) - 2, (backend, ok)


def test_dask_stays_lazy_through_a_long_chain_and_gradient():
    da = pytest.importorskip("dask.array")
    from backends import _dask_guard

    x0 = np.random.default_rng(0).standard_normal((40, 5))
    x = cr.tensor(da.from_array(x0, chunks=(10, 5)), requires_grad=True)
    with _dask_guard():
        y = x
        for _ in range(1000):  # a 1,000-op chain: no recursion in the walk
            y = y * 1.0001 + 0.0
        loss = (y.tanh() ** 2).mean()
        loss.backward()
        assert x.grad.backend == "dask" and loss.backend == "dask"
    xn = cr.tensor(x0, requires_grad=True)
    yn = xn
    for _ in range(1000):
        yn = yn * 1.0001 + 0.0
    (yn.tanh() ** 2).mean().backward()
    (g,) = cr.compute(x.grad)
    np.testing.assert_allclose(g.numpy(), xn.grad.numpy(), rtol=1e-10)


def test_tensor_keeps_foreign_arrays_and_reports_device():
    da = pytest.importorskip("dask.array")
    xps = pytest.importorskip("array_api_strict")
    d = da.ones((4, 3), chunks=2)
    t = cr.tensor(d)
    assert t._data is d and t.backend == "dask" and t.device == "cpu"
    assert cr.as_tensor(d)._data is d
    assert "dask array" in repr(t)
    s = cr.as_tensor(xps.asarray([1.0, 2.0], device=xps.Device("device1")))
    assert s.backend == "array_api_strict"
    assert str(s.device) == "array_api_strict.device1"
    with pytest.raises(RuntimeError, match="Can't convert"):
        np.asarray(s)  # an implicit host conversion is refused, as CuPy refuses it
    np.testing.assert_array_equal(s.numpy(), [1.0, 2.0])  # .numpy() is the explicit copy
    np.testing.assert_array_equal(t.numpy(), np.ones((4, 3)))  # explicit: computes


def test_two_backends_in_one_op_raise_naming_both():
    da = pytest.importorskip("dask.array")
    a = cr.tensor(da.ones(3, chunks=3))
    # a NumPy constant beside Dask data joins Dask lazily (both on the CPU, as PyTorch
    # mixes tensors of one device) ...
    mixed = a + cr.ones(3)
    assert mixed.backend == "dask"
    np.testing.assert_array_equal(mixed.numpy(), np.full(3, 2.0))
    # ... but a NumPy tensor that requires grad would get a Dask gradient: refused
    w = cr.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="dask on cpu and numpy on cpu"):
        a + w
    assert w.grad is None
    c = a * 2.0 + 1  # Python scalars mix with any backend
    assert c.backend == "dask"
    xps = pytest.importorskip("array_api_strict")
    s = cr.tensor(xps.ones(3, device=xps.Device("device1")))
    with pytest.raises(RuntimeError, match="array_api_strict on array_api_strict.device1 "
                                           "and numpy on cpu"):
        s + cr.ones(3)


def test_compute_runs_one_shared_dask_compute():
    da = pytest.importorskip("dask.array")
    from dask.callbacks import Callback

    starts = []

    class Count(Callback):
        def _start(self, dsk):
            starts.append(1)

    x = cr.tensor(da.arange(6.0, chunks=3), requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with Count():
        yv, gv = cr.compute(y, x.grad)
    assert len(starts) == 1
    assert float(yv.numpy()) == 55.0
    np.testing.assert_array_equal(gv.numpy(), 2 * np.arange(6.0))


def test_device_api():
    t = cr.ones(2)
    assert t.device == "cpu" and t.device == cr.device("cpu") and not t.is_cuda
    assert repr(cr.device("cuda:1")) == "device(type='cuda', index=1)"
    assert cr.device("cuda", 0) == "cuda:0"
    assert t.to("cpu") is t and t.cpu() is t
    with pytest.raises(RuntimeError, match="not available"):
        cr.zeros(2, device="tpu")
    d = cr.from_dlpack(np.arange(3.0))
    np.testing.assert_array_equal(d.numpy(), [0.0, 1.0, 2.0])
    with pytest.raises(TypeError, match="from_dlpack"):
        cr.from_dlpack([1.0])


def test_dask_cotangents_keep_the_inputs_chunks():
    # the VJP of a sum broadcasts the cotangent back in the input's chunks, so the
    # gradient of a row-chunked least-squares loss needs no rechunk
    da = pytest.importorskip("dask.array")
    X = da.random.default_rng(0).random((400, 5), chunks=(100, 5))
    y = da.random.default_rng(1).random(400, chunks=100)
    w = cr.tensor(da.zeros(5, chunks=-1), requires_grad=True)
    r = cr.tensor(X) @ w - cr.tensor(y)
    ((r * r).sum() / 400).backward()
    layers = list(w.grad._data.dask.layers)
    assert not [k for k in layers if "rechunk" in k], layers
    Xn, yn = X.compute(), y.compute()
    np.testing.assert_allclose(w.grad.numpy(), 2 * Xn.T @ (-yn) / 400, rtol=1e-12)
    # the other reductions' VJPs too, and a second-order pass (create_graph)
    for loss in (lambda t: t.amax(0).sum(), lambda t: t.var(0).sum(),
                 lambda t: cr.logsumexp(t, 0).sum(), lambda t: t.mean(0).sum()):
        x = cr.tensor(X, requires_grad=True)
        (g,) = cr.autograd.grad(loss(x), x, create_graph=True)
        assert g._data.chunks == X.chunks
        assert not [k for k in g._data.dask.layers if "rechunk" in k]


def test_constructors_and_to_reach_an_array_api_device():
    xps = pytest.importorskip("array_api_strict")
    name = "array_api_strict.device1"
    z = cr.zeros(2, 3, device=name, requires_grad=True)
    assert z.device == name and z.requires_grad and z.shape == (2, 3)
    e = cr.eye(3, dtype=z.dtype, device=z.device)  # a dtype and device of that library
    assert e.device == name and e.dtype == xps.float64
    assert cr.ones(2).to(name).device == name
    with pytest.raises(RuntimeError, match="zeros: device 'nowhere' is not available"):
        cr.zeros(2, device="nowhere")


def test_degenerate_decompositions_give_nan_off_the_host_where_numpy_raises():
    # eigh of a matrix with a repeated eigenvalue, with a loss on its eigenvectors: NumPy
    # raises (naming them); Dask cannot raise without computing, so the gradient is NaN
    # there (never a finite wrong value), as PyTorch returns on every device
    da = pytest.importorskip("dask.array")
    A = np.diag([1.0, 1.0, 3.0])
    x = cr.tensor(A, requires_grad=True)
    with pytest.raises(RuntimeError, match="eigenvalues 0 and 1 are \\(nearly\\) equal"):
        cr.linalg.eigh(x)[1][:, 0].sum().backward()
    xd = cr.tensor(da.from_array(A, chunks=-1), requires_grad=True)
    cr.linalg.eigh(xd)[1][:, 0].sum().backward()
    g = xd.grad.numpy()
    assert np.isnan(g).any()
    # the eigenvalues alone keep their exact, finite gradient: V diag(1) V^T = I
    xd = cr.tensor(da.from_array(A, chunks=-1), requires_grad=True)
    cr.linalg.eigh(xd)[0].sum().backward()
    np.testing.assert_allclose(xd.grad.numpy(), np.eye(3), atol=1e-12)


def test_distributed_regression_example_runs_small():
    pytest.importorskip("dask.distributed")
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "examples" / "distributed_regression.py"
    spec = importlib.util.spec_from_file_location("distributed_regression", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # the gradient on Dask equals NumPy's and the by-hand formula (checked inside)
    assert module.check_against_numpy(module.ridge_loss) < 1e-10
    assert module.main(["--small", "--steps", "2"]) == 0  # a LocalCluster, stopped after


def _example(name):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gpu_mlp_example_logic_runs_on_numpy():
    # the same script with NumPy arrays: its gradient check (against backprop by hand) and
    # its training loop run everywhere; the GPU run below needs CuPy and a GPU
    pytest.importorskip("sklearn")
    module = _example("gpu_mlp")
    assert module.main(["--device", "cpu", "--small"]) == 0


def test_gpu_mlp_example_on_the_gpu():
    pytest.importorskip("cupy")
    pytest.importorskip("sklearn")
    module = _example("gpu_mlp")
    if module.gpu_problem() is not None:
        pytest.skip(module.gpu_problem())
    assert module.main(["--small"]) == 0


def test_jacobians_of_tensors_on_another_device_are_vmap_of_vjp_and_jvp():
    # jacrev/jacfwd of tensors whose data is not NumPy's (a GPU's; here array-api-strict's
    # device, which refuses host copies as CuPy would) compose vmap with vjp/jvp
    xps = pytest.importorskip("array_api_strict")
    from chainrule import func

    dev, host = xps.Device("device1"), xps.Device("CPU_DEVICE")
    rng = np.random.default_rng(4)
    X, w = rng.standard_normal((5, 3)), rng.standard_normal(3)
    Xd, wd = (cr.tensor(xps.asarray(a, device=dev)) for a in (X, w))

    def on_host(t):
        assert t.device == "array_api_strict.device1"
        return np.asarray(xps.asarray(t._data, device=host))

    jac = np.cos(X @ w)[:, None] * X  # d sin(X w) / dw
    hess = X.T @ (np.exp(X @ w)[:, None] * X)  # d^2 sum(exp(X w)) / dw^2
    for jacobian in (func.jacrev, func.jacfwd):
        np.testing.assert_allclose(on_host(jacobian(lambda w: (Xd @ w).sin())(wd)), jac,
                                   rtol=1e-12)
        got, aux = jacobian(lambda w: ((Xd @ w).sin(), w.sum()), has_aux=True)(wd)
        np.testing.assert_allclose(on_host(got), jac, rtol=1e-12)
        np.testing.assert_allclose(on_host(aux), w.sum(), rtol=1e-12)
        # pytree output, two argnums: d cos(A w) / dA and / dw
        blocks = jacobian(lambda A, w: {"y": (A @ w).cos()}, argnums=(0, 1))(Xd, wd)["y"]
        s = -np.sin(X @ w)
        np.testing.assert_allclose(on_host(blocks[0]),
                                   np.einsum("i,ik,j->ijk", s, np.eye(5), w).transpose(0, 2, 1),
                                   rtol=1e-12)
        np.testing.assert_allclose(on_host(blocks[1]), s[:, None] * X, rtol=1e-12)
    for outer in (func.jacrev, func.jacfwd):
        for inner in (func.jacrev, func.jacfwd):
            H = outer(inner(lambda w: (Xd @ w).exp().sum()))(wd)
            np.testing.assert_allclose(on_host(H), hess, rtol=1e-12)
    np.testing.assert_allclose(on_host(func.hessian(lambda w: (Xd @ w).exp().sum())(wd)), hess,
                               rtol=1e-12)
    # forward over reverse and reverse over forward (the double-backward trick's seeds and
    # the zeros of unused tangents are made on the device too)
    v = cr.tensor(xps.asarray(np.ones(3), device=dev))
    (hv,) = func.hvp(lambda w: (Xd @ w).exp().sum(), (wd,), (v,))[1]
    np.testing.assert_allclose(on_host(hv), hess @ np.ones(3), rtol=1e-12)
    g = func.grad(lambda w: func.jvp(lambda u: (Xd @ u).exp().sum(), (w,), (v,))[1])(wd)
    np.testing.assert_allclose(on_host(g), hess @ np.ones(3), rtol=1e-12)
    assert func.jvp(lambda a, b: a * 2, (wd, wd), (v, v))[1].device == "array_api_strict.device1"


def test_device_tensors_move_copy_deepcopy_and_pickle():
    pytest.importorskip("array_api_strict")
    import copy
    import pickle

    from chainrule.autograd import forward_ad as fwAD

    dev = "array_api_strict.device1"
    a = np.arange(3.0)
    x = cr.tensor(a, device=dev)
    assert x.cpu().device == "cpu" and x.cpu().tolist() == a.tolist()  # (was x itself)
    host = cr.zeros(3)
    host.copy_(x)  # from the device: an explicit host copy
    assert host.tolist() == a.tolist()
    back = cr.zeros(3, device=dev).copy_(cr.tensor(a))
    assert back.device == dev and back.cpu().tolist() == a.tolist()
    assert [10, 20, 30][cr.tensor(np.array([2]), device=dev)] == 30  # __index__
    model = cr.nn.Sequential(cr.nn.Linear(3, 2), cr.nn.BatchNorm1d(2)).double().to(dev)
    twin = copy.deepcopy(model)
    assert all(t.device == dev for t in list(twin.parameters()) + list(twin.buffers()))
    # pickling (chainrule.save) keeps the values, on the host
    state = pickle.loads(pickle.dumps(model.state_dict()))
    assert all(v.device == "cpu" for v in state.values())
    twin.load_state_dict(state)  # copied back onto the device
    for p, q in zip(model.parameters(), twin.parameters()):
        assert q.device == dev
        np.testing.assert_array_equal(q.detach().cpu().numpy(), p.detach().cpu().numpy())
    with fwAD.dual_level(), pytest.raises(RuntimeError, match="tangent on the primal's device"):
        fwAD.make_dual(x, cr.ones(3))


def test_moving_a_tensor_that_requires_grad_is_differentiable():
    # x.to(device), x.cpu() of a tensor in a graph (a loss moved to the host, a parameter
    # moved to the input's device): recorded as PyTorch records it, in both modes
    pytest.importorskip("array_api_strict")
    from chainrule import func
    from chainrule.autograd import forward_ad as fwAD

    dev = "array_api_strict.device1"
    a = np.array([0.5, 1.0, 2.0])
    w = cr.tensor(a, requires_grad=True)
    y = (w.to(dev) * 2).sin().sum().cpu()
    assert y.device == "cpu" and y.grad_fn is not None
    y.backward()
    assert w.grad.device == "cpu"
    np.testing.assert_allclose(w.grad.numpy(), 2 * np.cos(2 * a), rtol=1e-12)  # d sin(2w)
    v = cr.tensor(a, device=dev, requires_grad=True)
    (v.cpu() ** 2).sum().backward()
    assert v.grad.device == dev and v.grad.cpu().tolist() == (2 * a).tolist()
    with cr.no_grad():
        assert not w.to(dev).requires_grad
    (g,) = cr.autograd.grad((w.to(dev) ** 3).sum(), w, create_graph=True)
    (h,) = cr.autograd.grad(g.sum(), w)  # d/dw sum(3 w^2) = 6 w
    np.testing.assert_allclose(h.numpy(), 6 * a, rtol=1e-12)
    with fwAD.dual_level():
        d = fwAD.make_dual(cr.tensor(a), cr.tensor(np.ones(3)))
        t = fwAD.unpack_dual((d.to(dev) * 3).cpu()).tangent  # (was dropped by the move)
        assert t.tolist() == [3.0, 3.0, 3.0]
    np.testing.assert_allclose(func.jacfwd(lambda x: (x.to(dev) ** 2).cpu())(cr.tensor(a))
                               .numpy(), np.diag(2 * a), rtol=1e-12)
    assert cr.autograd.gradcheck(lambda x: (x.to(dev) ** 2).cpu(),
                                 (cr.tensor(a, requires_grad=True),), check_forward_ad=True)


def test_function_known_by_its_jvp_differentiates_on_a_device():
    # a custom Function with forward and jvp only: its VJP transposes the jvp, with zero
    # tangents made on the cotangents' device (they were NumPy arrays: it raised there)
    pytest.importorskip("array_api_strict")
    from chainrule.autograd import Function

    class Cube(Function):
        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_forward(inputs[0])

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return 3 * x * x * t

    dev = "array_api_strict.device1"
    a = np.array([1.0, 2.0, -0.5])
    x = cr.tensor(a, device=dev, requires_grad=True)
    (g,) = cr.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    assert g.device == dev
    np.testing.assert_allclose(g.detach().cpu().numpy(), 3 * a ** 2, rtol=1e-12)  # d x^3 = 3 x^2
    (h,) = cr.autograd.grad(g.sum(), x)
    assert h.device == dev
    np.testing.assert_allclose(h.cpu().numpy(), 6 * a, rtol=1e-12)


def test_layers_made_with_device_live_there():
    pytest.importorskip("array_api_strict")
    nn, dev = cr.nn, "array_api_strict.device1"
    layers = [nn.Linear(4, 3, device=dev), nn.Conv2d(2, 3, 3, device=dev),
              nn.BatchNorm1d(3, device=dev), nn.LSTM(3, 4, device=dev),
              nn.Embedding(5, 2, device=dev), nn.TransformerEncoderLayer(8, 2, device=dev)]
    for layer in layers:  # PyTorch's factory keyword: parameters and buffers made there
        assert {str(t.device) for t in [*layer.parameters(), *layer.buffers()]} == {dev}
    assert nn.Linear(4, 3).weight.device == "cpu"
    x = cr.tensor(np.ones((2, 4)), device=dev)
    assert layers[0](x).device == dev


def _gpu():
    """CuPy, or skip the test where no GPU can run it (CI has none)."""
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy
    except Exception:  # no driver
        pass
    pytest.skip("CuPy finds no GPU")


def test_gpu_tensors_move_compute_and_differentiate():
    _gpu()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 3))
    x = cr.tensor(a, device="cuda", requires_grad=True)
    assert x.is_cuda and x.device == "cuda:0" and type(x._data).__module__.startswith("cupy")
    y = (x.sin() * x).sum()
    y.backward()
    # d/dx sum(x sin x) = sin x + x cos x, computed on the GPU
    assert isinstance(y.item(), float)
    np.testing.assert_allclose(y.item(), (np.sin(a) * a).sum(), rtol=1e-12)
    assert x.grad.is_cuda
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.sin(a) + a * np.cos(a), rtol=1e-12)
    assert x.detach().tolist() == a.tolist() and "cuda:0" in repr(x)
    # float32 stays float32 through forward and backward
    x32 = cr.tensor(a.astype(np.float32), device="cuda", requires_grad=True)
    (x32 @ x32.t()).sum().backward()
    assert x32.grad.dtype == cr.float32
    # d/dX sum(X X^T) = 2 * 1 1^T X (1 the ones vector of length 4)
    np.testing.assert_allclose(x32.grad.cpu().numpy(), 2 * np.ones((4, 4)) @ a, rtol=1e-5)
    with pytest.raises(RuntimeError, match="cuda:0"):
        x.detach() + cr.tensor(a)  # a CPU tensor beside a GPU one, as PyTorch refuses


def test_gpu_transforms_and_double_backward():
    _gpu()
    from chainrule import func

    rng = np.random.default_rng(1)
    X, w = rng.standard_normal((5, 3)), rng.standard_normal(3)
    Xg, wg = cr.tensor(X, device="cuda"), cr.tensor(w, device="cuda")
    # per-sample gradients of (x . w)^2 / 2 in w: (x . w) x
    per_sample = func.vmap(func.grad(lambda w, x: (x @ w) ** 2 / 2), in_dims=(None, 0))(wg, Xg)
    assert per_sample.is_cuda
    np.testing.assert_allclose(per_sample.cpu().numpy(), (X @ w)[:, None] * X, rtol=1e-12)
    # Hessian of sum(exp(X w)) in w: X^T diag(exp(X w)) X, by jacfwd(jacrev)
    H = func.jacfwd(func.jacrev(lambda w: (Xg @ w).exp().sum()))(wg)
    np.testing.assert_allclose(H.cpu().numpy(), X.T @ (np.exp(X @ w)[:, None] * X),
                               rtol=1e-12)
    # double backward: grad of the gradient's norm, against the same code on NumPy
    def gradient_penalty(v):
        (g,) = cr.autograd.grad((v.tanh() ** 2).sum(), v, create_graph=True)
        (gg,) = cr.autograd.grad((g ** 2).sum(), v)
        return gg

    on_gpu = gradient_penalty(cr.tensor(w, device="cuda", requires_grad=True))
    on_cpu = gradient_penalty(cr.tensor(w, requires_grad=True))
    np.testing.assert_allclose(on_gpu.cpu().numpy(), on_cpu.numpy(), rtol=1e-12)


def test_gpu_module_training_step_matches_cpu():
    _gpu()
    import copy

    rng = np.random.default_rng(2)
    X, y = rng.standard_normal((8, 4)), rng.integers(0, 3, 8)
    cr.manual_seed(0)
    cpu_model = cr.nn.Sequential(cr.nn.Linear(4, 5), cr.nn.Tanh(), cr.nn.Linear(5, 3)).double()
    gpu_model = copy.deepcopy(cpu_model).cuda()
    assert all(p.is_cuda for p in gpu_model.parameters())
    for model, dev in ((cpu_model, "cpu"), (gpu_model, "cuda")):
        opt = cr.optim.Adam(model.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            loss = cr.nn.functional.cross_entropy(model(cr.tensor(X, device=dev)),
                                                  cr.tensor(y, device=dev))
            loss.backward()
            opt.step()
    # the same three Adam steps on both devices: the same parameters
    for p, q in zip(cpu_model.parameters(), gpu_model.cpu().parameters()):
        assert not q.is_cuda
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-10)


def test_gpu_functional_layers_match_cpu():
    _gpu()
    F = cr.nn.functional
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, 3, 4)) for _ in range(3))
    mask = np.array([[True, False, True], [True, True, False], [False, True, True]])
    x, y = rng.standard_normal((5, 4)), np.array([0, 3, 1, 3, 2])

    def run(dev):
        t = {n: cr.tensor(a, device=dev, requires_grad=True)
             for n, a in (("q", q), ("k", k), ("v", v), ("x", x))}
        cr.manual_seed(7)  # the dropout masks come from chainrule's generator on the host
        out = (F.scaled_dot_product_attention(t["q"], t["k"], t["v"],
                                              attn_mask=cr.tensor(mask, device=dev)).sum()
               + F.dropout(t["x"], 0.5).sum()
               + F.cross_entropy(t["x"], cr.tensor(y, device=dev), label_smoothing=0.1)
               + F.nll_loss(F.log_softmax(t["x"], 1), cr.tensor(y, device=dev)))
        onehot = F.one_hot(cr.tensor(y, device=dev), 4)
        assert onehot.device.type == ("cuda" if dev == "cuda" else "cpu")
        out.backward()
        return [out.item()] + [t[n].grad.cpu().numpy() for n in ("q", "k", "v", "x")]

    for a, b in zip(run("cuda"), run("cpu")):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _cnn_and_lstm_against_cpu(dev, embedding):
    """A conv net (conv, batch norm, relu, max pool, linear) and an LSTM (over an embedding
    when ``embedding``): forward, backward and batch norm's running mean on ``dev`` equal
    the CPU's, parameters copied across with ``Module.to``."""
    import copy

    nn = cr.nn
    rng = np.random.default_rng(5)
    images, tokens = rng.standard_normal((4, 2, 8, 8)), rng.integers(0, 10, (4, 6))
    cr.manual_seed(1)
    cnn = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(48, 5)).double()
    emb, lstm = nn.Embedding(10, 4).double(), nn.LSTM(4, 5, batch_first=True).double()
    sequence = rng.standard_normal((4, 6, 4))

    def run(models, d):
        cnn, emb, lstm = models
        x = cr.tensor(images, device=d, requires_grad=True)
        seq = emb(cr.tensor(tokens, device=d)) if embedding else cr.tensor(sequence, device=d)
        out = cnn(x).sum() + lstm(seq)[0].pow(2).sum()
        out.backward()
        used = (cnn, emb, lstm) if embedding else (cnn, lstm)
        return [out.item(), x.grad.cpu().numpy(), cnn[1].running_mean.cpu().numpy()] + [
            p.grad.cpu().numpy() for m in used for p in m.parameters()]

    moved = tuple(copy.deepcopy(m).to(dev) for m in (cnn, emb, lstm))
    assert all(p.device == dev for m in moved for p in m.parameters())
    for a, b in zip(run(moved, dev), run((cnn, emb, lstm), "cpu"), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_cnn_and_lstm_on_a_device_that_refuses_host_copies():
    pytest.importorskip("array_api_strict")
    # (no embedding: array-api-strict's integer indexing is too narrow for its gather)
    _cnn_and_lstm_against_cpu("array_api_strict.device1", embedding=False)
    dev = "array_api_strict.device1"
    assert cr.randn(3, device=dev).device == dev
    x = cr.zeros(2, 3, device=dev)
    # the *_like constructors and new_tensor keep the input's device, as PyTorch's
    for made in (cr.rand_like(x), cr.randn_like(x), cr.randint_like(x, 5), cr.zeros_like(x),
                 cr.full_like(x, 2.0), x.new_tensor([1.0, 2.0]), x.new_zeros(4)):
        assert made.device == dev


def test_gpu_cnn_lstm_and_embedding_match_cpu():
    _gpu()
    _cnn_and_lstm_against_cpu("cuda:0", embedding=True)
    assert cr.randn(3, device="cuda").is_cuda


def test_gpu_cuda_queries():
    cupy = _gpu()
    assert cr.cuda.is_available() and cr.cuda.device_count() >= 1
    assert cr.cuda.current_device() == 0 and isinstance(cr.cuda.get_device_name(0), str)
    before = cr.cuda.memory_allocated()
    x = cr.zeros(1 << 20, device="cuda")  # 8 MiB of float64 held by the tensor
    assert cr.cuda.memory_allocated() >= before + (8 << 20)
    del x
    cr.cuda.synchronize()
    assert cr.cuda.memory_allocated() <= before  # its block went back to CuPy's pool
    cr.cuda.empty_cache()
    # and the pool let the 8 MiB go (it keeps only blocks that share a chunk with live ones)
    assert cupy.get_default_memory_pool().free_bytes() < (8 << 20)
