"""The ``nn.Module`` API surface against torch (differential fuzzing of registration,
traversal, state dicts, hooks, containers and ``functional_call``): each test checks what
PyTorch's documented semantics give, worked out by hand, and where torch is installed runs
the same program on it and compares."""

from __future__ import annotations

import copy
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn

try:
    import torch
except ImportError:  # CI has no torch
    torch = None

LIBS = [cr] if torch is None else [cr, torch]


def _lin(m, w, b):
    layer = m.nn.Linear(len(w[0]), len(w), dtype=m.float64)
    with m.no_grad():
        layer.weight.copy_(m.tensor(w, dtype=m.float64))
        layer.bias.copy_(m.tensor(b, dtype=m.float64))
    return layer


def _both(program):
    """The program's result with chainrule, checked equal to torch's when installed."""
    ours = program(cr)
    if torch is not None:
        assert program(torch) == ours
    return ours


# --- traversal ---------------------------------------------------------------------------
def _shared_tree(m):
    lin = m.nn.Linear(2, 2)
    root = m.nn.Module()
    root.a = m.nn.Sequential(lin, m.nn.BatchNorm1d(2))
    root.b = lin                                 # the same module under a second name
    root.p = m.nn.Parameter(m.ones(1))
    root.q = root.p                              # the same parameter twice in one module
    return root


def _names_program(m):
    r = _shared_tree(m)
    return ([n for n, _ in r.named_parameters(remove_duplicate=False)],
            [n for n, _ in r.named_parameters()],
            [n for n, _ in r.named_parameters(prefix="x", remove_duplicate=False)],
            [n for n, _ in r.named_buffers(remove_duplicate=False)],
            [n for n, _ in r.named_modules(remove_duplicate=False)])


def test_remove_duplicate_false_lists_shared_modules_under_every_name():
    every, once, prefixed, buffers, modules = _both(_names_program)
    # ``b`` is ``a.0``: listed under both names only with remove_duplicate=False
    assert every == ["p", "q", "a.0.weight", "a.0.bias", "a.1.weight", "a.1.bias",
                     "b.weight", "b.bias"]
    assert once == ["p", "a.0.weight", "a.0.bias", "a.1.weight", "a.1.bias"]
    assert prefixed == ["x." + n for n in every]
    assert buffers == ["a.1.running_mean", "a.1.running_var", "a.1.num_batches_tracked"]
    assert modules == ["", "a", "a.0", "a.1", "b"]


def _memo_program(m):
    r = _shared_tree(m)
    skip = {r.a}                                 # PyTorch's memo holds modules
    return [n for n, _ in r.named_modules(memo=skip)]


def test_named_modules_memo_holds_modules():
    assert _both(_memo_program) == ["", "b"]


def _train_program(m):
    log = []

    class Frozen(m.nn.Module):
        def train(self, mode=True):
            log.append(mode)
            return super().train(False)          # always in eval mode

    root = m.nn.Sequential(m.nn.Linear(1, 1), Frozen())
    root.train()
    root.eval()
    root.train(True)
    return log, [c.training for c in root.modules()]


def test_train_goes_through_the_childrens_own_train():
    log, modes = _both(_train_program)
    assert log == [True, False, True]
    assert modes == [True, True, False]


# --- dtypes: parameters keep their identity --------------------------------------------
def _to_program(m):
    model = _lin(m, [[1.0, 2.0]], [0.5])
    model.register_buffer("count", m.tensor([3]))
    opt = m.optim.SGD(model.parameters(), lr=1.0)
    w = model.weight
    model(m.ones(1, 2, dtype=m.float64)).sum().backward()
    model.float()
    same = model.weight is w
    dtypes = (model.weight.dtype == m.float32, model.weight.grad.dtype == m.float32,
              model.count.dtype == m.int64)
    opt.step()                                   # the optimizer made before .float()
    return same, dtypes, model.weight.detach().numpy().tolist()


def test_to_dtype_keeps_parameter_objects_so_an_earlier_optimizer_still_trains():
    same, dtypes, w = _both(_to_program)
    assert same
    assert dtypes == (True, True, True)          # integer buffers keep their dtype
    assert w == [[0.0, 1.0]]                     # w - grad (= x = 1)


def test_module_type_casts_integer_buffers_and_to_rejects_integer_dtypes():
    for m in LIBS:
        model = m.nn.BatchNorm1d(2)
        model.type(m.float32)
        assert model.num_batches_tracked.dtype == m.float32   # every tensor, as PyTorch
        with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
            m.nn.Linear(1, 1).to(m.int32)


def test_zero_grad_without_set_to_none_zeroes_in_place():
    for m in LIBS:
        lin = m.nn.Linear(2, 1)
        lin(m.ones(1, 2)).sum().backward()
        g = lin.weight.grad
        lin.zero_grad(set_to_none=False)
        assert lin.weight.grad is g and not g.requires_grad
        assert np.all(np.asarray(g) == 0)


# --- state dicts -------------------------------------------------------------------------
def _metadata_program(m):
    model = m.nn.Sequential(m.nn.Linear(1, 1), m.nn.BatchNorm1d(1))
    sd = model.state_dict()
    meta = [(k, dict(v)) for k, v in sd._metadata.items()]
    seen = []
    model[0].register_state_dict_post_hook(
        lambda mod, d, prefix, local: seen.append(dict(local)))
    model.state_dict(prefix="p.")
    return meta, seen


def test_state_dict_metadata_carries_module_versions():
    meta, seen = _both(_metadata_program)
    assert meta == [("", {"version": 1}), ("0", {"version": 1}), ("1", {"version": 2})]
    assert seen == [{"version": 1}]


def _old_batchnorm_checkpoint_program(m):
    bn = m.nn.BatchNorm1d(2)
    plain = {"weight": m.ones(2) * 2, "bias": m.zeros(2), "running_mean": m.ones(2),
             "running_var": m.ones(2)}             # saved before num_batches_tracked
    result = bn.load_state_dict(plain)
    new = bn.state_dict()
    del new["num_batches_tracked"]                # version 2 metadata: really missing
    try:
        bn.load_state_dict(new)
        err = None
    except RuntimeError as e:
        err = str(e).split("\n")[1]
    return (result.missing_keys, result.unexpected_keys,
            np.asarray(bn.weight.detach()).tolist(), int(bn.num_batches_tracked), err)


def test_batchnorm_loads_a_checkpoint_from_before_num_batches_tracked():
    missing, unexpected, w, n, err = _both(_old_batchnorm_checkpoint_program)
    assert (missing, unexpected, w, n) == ([], [], [2.0, 2.0], 0)
    assert err == '\tMissing key(s) in state_dict: "num_batches_tracked". '


def test_load_state_dict_refuses_a_longer_vector_for_a_scalar_and_python_numbers():
    for m in LIBS:
        mod = m.nn.Module()
        mod.s = m.nn.Parameter(m.tensor(0.0))
        mod.load_state_dict({"s": m.tensor([5.0])})     # a 1-element vector: PyTorch 0.3
        assert float(mod.s) == 5.0
        with pytest.raises(RuntimeError, match="size mismatch for s"):
            mod.load_state_dict({"s": m.tensor([1.0, 2.0, 3.0])})   # was loaded as [0]
        assert float(mod.s) == 5.0
        with pytest.raises(RuntimeError, match="expected torch.Tensor or Tensor-like object"):
            mod.load_state_dict({"s": 3})


def test_state_dict_hooks_that_return_values():
    for m in LIBS:
        lin = m.nn.Linear(1, 1)
        lin.register_state_dict_post_hook(lambda *a: {"x": 1})
        with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
            lin.state_dict()
        lin2 = m.nn.Linear(1, 1)
        lin2.register_load_state_dict_post_hook(lambda mod, keys: 5)
        with pytest.raises(AssertionError, match="not expected to return new values"):
            lin2.load_state_dict(lin2.state_dict())


# --- hooks -------------------------------------------------------------------------------
def _always_call_program(m):
    class Boom(m.nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    log = []
    b = Boom()
    b.register_forward_hook(lambda mod, a, out: log.append("plain"))
    b.register_forward_hook(lambda mod, a, out: log.append(("always", out)), always_call=True)
    b.register_forward_hook(lambda mod, a, kw, out: log.append(("kw", sorted(kw))),
                            always_call=True, with_kwargs=True)
    with pytest.raises(ValueError, match="boom"):
        b(m.ones(1))
    lin = _lin(m, [[1.0]], [0.0])                 # a forward hook raising after forward
    lin.register_forward_hook(lambda mod, a, out: 1 / 0)
    lin.register_forward_hook(lambda mod, a, out: log.append(("after", float(out))),
                              always_call=True)
    with pytest.raises(ZeroDivisionError):
        lin(m.ones(1, 1, dtype=m.float64))
    return log


def test_always_call_forward_hooks_run_when_forward_raises():
    assert _both(_always_call_program) == [("always", None), ("kw", []), ("after", 1.0)]


def _global_hooks_program(m):
    hooks = m.nn.modules.module
    seq = m.nn.Sequential(_lin(m, [[2.0]], [0.0]), m.nn.Tanh())
    log = []
    handles = [
        hooks.register_module_forward_pre_hook(lambda mod, a: log.append(("pre", _n(mod)))),
        hooks.register_module_forward_hook(lambda mod, a, out: log.append(("fwd", _n(mod)))),
        hooks.register_module_full_backward_hook(
            lambda mod, gi, go: log.append(("bwd", _n(mod), round(float(go[0].sum()), 6)))),
    ]
    seq[0].register_forward_hook(lambda mod, a, out: log.append(("own", _n(mod))))
    x = m.tensor([[0.5]], dtype=m.float64, requires_grad=True)
    try:
        seq(x).sum().backward()
    finally:
        for h in handles:
            h.remove()
    seq(x)                                       # removed: only the module's own hook
    return log


def _n(mod):
    return type(mod).__name__


def test_global_module_hooks_run_for_every_module_before_its_own():
    log = _both(_global_hooks_program)
    g = 1 - np.tanh(1.0) ** 2                    # d tanh(2x)/d(2x) at x = 0.5
    assert log == [("pre", "Sequential"), ("pre", "Linear"), ("fwd", "Linear"),
                   ("own", "Linear"), ("pre", "Tanh"), ("fwd", "Tanh"), ("fwd", "Sequential"),
                   # a full backward hook fires when the module's input gradient is
                   # known: the Sequential's is the Linear's, computed last
                   ("bwd", "Tanh", 1.0), ("bwd", "Linear", round(g, 6)),
                   ("bwd", "Sequential", 1.0), ("own", "Linear")]


def test_global_registration_hooks_and_removal():
    hooks = nn.modules.module
    seen = []
    h = hooks.register_module_parameter_registration_hook(
        lambda mod, name, p: seen.append(name))
    try:
        nn.Linear(1, 1)
    finally:
        h.remove()
    nn.Linear(1, 1)
    assert seen == ["weight", "bias"]


def test_mixing_backward_hook_kinds_raises():
    for m in LIBS:
        lin = m.nn.Linear(1, 1)
        lin.register_full_backward_hook(lambda *a: None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks"):
                lin.register_backward_hook(lambda *a: None)


# --- registration rules --------------------------------------------------------------------
def _registration_program(m):
    out = []
    a = m.nn.Module()
    for call in (lambda: a.register_buffer("forward", m.ones(1)),    # a class attribute
                 lambda: a.register_parameter("", None),
                 lambda: a.register_parameter("a.b", None),
                 lambda: a.add_module("a.b", m.nn.ReLU()),
                 lambda: a.register_buffer("x", 3),
                 lambda: a.get_submodule("nope"),
                 lambda: a.set_submodule("x", 3)):
        try:
            call()
        except Exception as e:  # noqa: BLE001
            out.append((type(e).__name__, str(e)))
    s = m.nn.Sequential(m.nn.Linear(1, 1))
    for call in (lambda: s.get_submodule("0.weight"), lambda: s.get_parameter("0.nope"),
                 lambda: s.set_submodule("0.weight", m.nn.ReLU())):
        try:
            call()
        except AttributeError as e:
            out.append(str(e))

    class Early(m.nn.Module):
        def __init__(self):
            self.register_buffer("b", None)

    try:
        Early()
    except AttributeError as e:
        out.append(str(e))
    return out


def test_registration_and_lookup_errors_as_pytorch():
    out = _both(_registration_program)
    assert out == [
        ("KeyError", "\"attribute 'forward' already exists\""),
        ("KeyError", "'parameter name can\\'t be empty string \"\"'"),
        ("KeyError", "'parameter name can\\'t contain \".\"'"),
        ("KeyError", "'module name can\\'t contain \".\", got: a.b'"),
        ("TypeError", "cannot assign 'int' object to buffer 'x' (torch Tensor or None "
                      "required)"),
        ("AttributeError", "Module has no attribute `nope`"),
        ("ValueError", "`module` is not an nn.Module, found <class 'int'>"),
        "`weight` is not an nn.Module", "Linear has no attribute `nope`",
        "`weight` is not an nn.Module",
        "cannot assign buffer before Module.__init__() call"]


# --- containers ---------------------------------------------------------------------------
def _tags(c):
    return [(k, v.tag) for k, v in c._modules.items()]


def _tagged(m, n):
    out = []
    for i in range(n):
        mod = m.nn.Identity()
        mod.tag = i
        out.append(mod)
    return out


def _sequential_program(m):
    mods = _tagged(m, 3)
    s = m.nn.Sequential(*mods)
    out = []
    try:
        s.insert(0, 5)                            # refused before anything moves
    except AssertionError:
        out.append(_tags(s))
    out.append(_tags(2 * m.nn.Sequential(*mods[:2])))
    t = m.nn.Sequential(*mods[:2])
    t *= 2
    out.append(_tags(t))
    try:
        s["0"]
    except TypeError as e:
        out.append(str(e))
    try:
        s[0] = 3
    except TypeError as e:
        out.append(str(e))
    out.append([k for k in dir(s) if k.isdigit()])
    return out


def test_sequential_insert_mul_and_errors():
    out = _both(_sequential_program)
    assert out == [[("0", 0), ("1", 1), ("2", 2)],
                   [("0", 0), ("1", 1), ("2", 0), ("3", 1)],
                   [("0", 0), ("1", 1), ("2", 0), ("3", 1)],
                   "'str' object cannot be interpreted as an integer",
                   "cannot assign 'int' as child module '0' (torch.nn.Module or None "
                   "expected)", []]


def _modulelist_program(m):
    mods = _tagged(m, 3)
    ml = m.nn.ModuleList(mods[:2])
    out = [_tags(ml + [mods[2]])]
    for bad in (5, mods[0]):
        try:
            ml.extend(bad)
        except TypeError as e:
            out.append(str(e))
    d = m.nn.ModuleDict()
    for bad in (5, [("x",)]):
        try:
            d.update(bad)
        except (TypeError, ValueError) as e:
            out.append(str(e))
    try:
        ml(1)
    except NotImplementedError as e:
        out.append(str(e))
    return out


def test_modulelist_add_extend_and_moduledict_update_errors():
    assert _both(_modulelist_program) == [
        [("0", 0), ("1", 1), ("2", 2)],
        "ModuleList.extend should be called with an iterable, but got int",
        "ModuleList.extend should be called with an iterable, but got Identity",
        "ModuleDict.update should be called with an iterable of key/value pairs, but got int",
        "ModuleDict update sequence element #0 has length 1; 2 is required",
        'Module [ModuleList] is missing the required "forward" function']


def _parameter_containers_program(m):
    pl = m.nn.ParameterList([m.nn.Parameter(m.ones(1)), m.nn.Linear(1, 1), "s"])
    out = [len(pl), [n for n, _ in pl.named_parameters()], list(pl._modules), pl[2]]
    pd = m.nn.ParameterDict({"b": m.ones(1), "a": m.zeros(1)})
    pd["s"] = "text"
    pd.setdefault("c", m.ones(2))
    out += [list(pd.keys()), pd["s"], [n for n, _ in pd.named_parameters()]]
    k, v = pd.popitem()
    out += [k, list(pd.keys()), list(reversed(pd)), list(pd.copy().keys())]
    both = pd | m.nn.ParameterDict({"z": m.ones(1)})
    out += [list(both.keys()), type(both["z"]).__name__]
    for c in (pl, pd):
        try:
            c(1)
        except RuntimeError as e:
            out.append(str(e))
    return out


def test_parameter_list_and_dict_hold_any_value_and_dict_methods():
    assert _both(_parameter_containers_program) == [
        3, ["0", "1.weight", "1.bias"], ["1"], "s", ["a", "b", "s", "c"], "text",
        ["a", "b", "c"], "c", ["a", "b", "s"], ["s", "b", "a"], ["a", "b", "s"],
        ["a", "b", "s", "z"], "Parameter",
        "ParameterList should not be called.", "ParameterDict should not be called."]


# --- functional_call ----------------------------------------------------------------------
def _tied_program(m):
    class Tied(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = _lin(m, [[1.0, 0.0], [0.0, 1.0]], [0.0, 0.0])
            self.b = _lin(m, [[1.0, 0.0], [0.0, 1.0]], [1.0, 1.0])
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    t = Tied()
    x = m.ones(1, 2, dtype=m.float64)
    w = m.full((2, 2), 0.5, dtype=m.float64)
    z = m.zeros(2, dtype=m.float64)
    fc = m.func.functional_call
    # strict: the tied name b.weight counts as given
    y = fc(t, {"a.weight": w, "a.bias": z, "b.bias": z}, (x,), strict=True)
    out = [np.asarray(y.detach()).tolist()]
    try:
        fc(t, {"a.weight": w, "b.weight": w * 2}, (x,))
    except ValueError as e:
        out.append(str(e))
    try:
        fc(t, ({"a.bias": z}, {"a.bias": z}), (x,))
    except ValueError as e:
        out.append(str(e))
    try:
        fc(t, {"a.weight": w}, (x,), strict=True)
    except RuntimeError:
        out.append("RuntimeError")
    out.append(t.a.weight is t.b.weight)
    return out


def test_functional_call_strict_counts_tied_names():
    out = _both(_tied_program)
    # x W^T = [1, 1], then again [1, 1] (biases zero)
    assert out == [[[1.0, 1.0]],
                   "functional_call got multiple values for keys ['a.weight', 'b.weight'], "
                   "which are tied. Consider using tie_weights=False",
                   "['a.bias'] appeared in multiple dictionaries; behavior of functional call "
                   "is ambiguous", "RuntimeError", True]


def test_deepcopy_keeps_tied_modules_and_hooks():
    for m in LIBS:
        lin = m.nn.Linear(2, 2)
        root = m.nn.Sequential(OrderedDict(a=lin))
        root.tied = m.nn.ModuleList([lin])
        log = []
        lin.register_forward_hook(lambda *a, log=log: log.append(1))
        c = copy.deepcopy(root)
        assert c.tied[0] is c.a and c.a.weight is not lin.weight
        c.a(m.ones(1, 2))
        assert log == [1]
