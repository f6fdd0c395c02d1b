"""Ops whose PyTorch result is contiguous return a row-major (C-contiguous) tensor in
chainrule too, so that ``.view`` of the result works on transposed, permuted and expanded
inputs (NumPy would keep the input's layout). One table: (name, call) pairs."""

import numpy as np
import pytest

import chainrule

try:
    import torch
except ImportError:  # pragma: no cover - PyTorch is optional
    torch = None


def _long(m, t):
    return m.zeros(tuple(t.shape), dtype=m.long)


CALLS = [
    ("sum", lambda m, t: t.sum(0)),
    ("sum_keepdim", lambda m, t: t.sum(-1, keepdim=True)),
    ("mean", lambda m, t: t.mean(0)),
    ("prod", lambda m, t: t.prod(0)),
    ("amax", lambda m, t: t.amax(0)),
    ("amin", lambda m, t: t.amin(-1)),
    ("max_dim", lambda m, t: t.max(0)[0]),
    ("max_dim_indices", lambda m, t: t.max(0)[1]),
    ("var", lambda m, t: t.var(0)),
    ("std", lambda m, t: t.std(0)),
    ("logsumexp", lambda m, t: t.logsumexp(0)),
    ("vector_norm", lambda m, t: m.linalg.vector_norm(t, dim=0)),
    ("median_dim", lambda m, t: t.median(0)[0]),
    ("all", lambda m, t: (t > 0.3).all(0)),
    ("count_nonzero", lambda m, t: m.count_nonzero(t, 0)),
    ("cumsum", lambda m, t: t.cumsum(0)),
    ("cumprod", lambda m, t: t.cumprod(-1)),
    ("logcumsumexp", lambda m, t: t.logcumsumexp(0)),
    ("cummax", lambda m, t: t.cummax(0)[0]),
    ("cummin_indices", lambda m, t: t.cummin(-1)[1]),
    ("softmax", lambda m, t: t.softmax(-1)),
    ("log_softmax", lambda m, t: t.log_softmax(0)),
    ("F.softmax", lambda m, t: m.nn.functional.softmax(t, dim=1)),
    ("gather", lambda m, t: t.gather(0, _long(m, t))),
    ("scatter", lambda m, t: t.scatter(0, _long(m, t), 1.0)),
    ("scatter_add", lambda m, t: t.scatter_add(0, _long(m, t), t)),
    ("scatter_reduce", lambda m, t: t.scatter_reduce(0, _long(m, t), t, "amax")),
    ("index_reduce", lambda m, t: t.index_reduce(0, m.tensor([0]), t[:1], "prod")),
    ("tril", lambda m, t: t.tril()),
    ("triu", lambda m, t: t.triu(1)),
    ("repeat", lambda m, t: t.repeat(*([1] * t.dim()))),
    ("tile", lambda m, t: t.tile((1,))),
    ("masked_fill", lambda m, t: t.masked_fill(t > 0.5, 1.0)),
    ("masked_fill_tensor", lambda m, t: t.masked_fill(t > 0.5, m.tensor(1.0))),
    ("masked_scatter",
     lambda m, t: t.masked_scatter(t > 0.5, m.zeros(tuple(t.shape), dtype=t.dtype))),
    ("index_add", lambda m, t: t.index_add(0, m.tensor([0]), t[:1])),
    ("index_copy", lambda m, t: t.index_copy(0, m.tensor([0]), t[:1])),
]

# index_put / index_fill keep a transposed (dense) input's layout in PyTorch
# (clone(preserve_format)) but make an expanded one contiguous
EXPANDED_CALLS = [
    ("index_put", lambda m, t: t.index_put((m.tensor([0]),), m.tensor(1.0, dtype=t.dtype))),
    ("index_put_accumulate",
     lambda m, t: t.index_put((m.tensor([0]),), m.tensor(1.0, dtype=t.dtype),
                             accumulate=True)),
    ("index_fill", lambda m, t: t.index_fill(0, m.tensor([0]), 2.0)),
] + CALLS


def _base(m, shape):
    return m.tensor(np.linspace(0.1, 0.9, int(np.prod(shape))).reshape(shape))


LAYOUTS = {
    "transposed_2d": lambda m: _base(m, (3, 4)).t(),
    "transposed_3d": lambda m: _base(m, (2, 3, 4)).transpose(0, 2),
    "permuted_4d": lambda m: _base(m, (2, 3, 4, 5)).permute(2, 0, 3, 1),
}


def _check(m, layout, call):
    t = layout(m)
    y = call(m, t)
    assert y.is_contiguous()
    flat = y.view(-1)  # raises for a non-contiguous result
    np.testing.assert_array_equal(np.asarray(flat.numpy()), np.asarray(y.reshape(-1).numpy()))
    return y


@pytest.mark.filterwarnings("ignore:index_reduce")
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name,call", CALLS, ids=[n for n, _ in CALLS])
def test_result_is_row_major(name, call, layout):
    y = _check(chainrule, LAYOUTS[layout], call)
    if torch is not None:
        with torch.no_grad():
            ref = call(torch, LAYOUTS[layout](torch).double())
        assert ref.is_contiguous() == y.is_contiguous()
        np.testing.assert_allclose(np.asarray(y.numpy(), dtype=float),
                                   ref.double().numpy(), rtol=1e-12)


@pytest.mark.parametrize("name,call", EXPANDED_CALLS, ids=[n for n, _ in EXPANDED_CALLS])
def test_result_of_expanded_input_is_row_major(name, call):
    def layout(m):
        return _base(m, (2, 3, 4))[:1].expand(3, 3, 4)

    _check(chainrule, layout, call)
    if torch is not None:
        assert call(torch, layout(torch).double()).is_contiguous()


def test_index_put_keeps_a_transposed_layout_as_pytorch():
    t = _base(chainrule, (2, 3, 4)).transpose(0, 2)
    y = t.index_put((chainrule.tensor([0]),), chainrule.tensor(1.0, dtype=t.dtype))
    assert y.stride() == t.stride()
    if torch is not None:
        tt = _base(torch, (2, 3, 4)).transpose(0, 2)
        ref = tt.index_put((torch.tensor([0]),), torch.tensor(1.0, dtype=tt.dtype))
        assert tuple(ref.stride()) == tuple(tt.stride())


def test_views_stay_views():
    t = _base(chainrule, (2, 3, 4))
    for v in (t.transpose(0, 2), t.permute(2, 0, 1), t[:1].expand(3, 3, 4), t[:, ::2],
              t.diagonal(0, 1, 2)):
        assert np.shares_memory(v.numpy(), t.numpy())
        assert not v.is_contiguous()


def test_gradients_flow_through_row_major_results():
    x = _base(chainrule, (3, 4)).requires_grad_()
    y = x.t().cumsum(0).softmax(-1).masked_fill(x.t() > 0.5, 0.0).sum(0)
    y.view(-1).sum().backward()
    assert x.grad.shape == (3, 4)
