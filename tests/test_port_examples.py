"""What porting pytorch/examples (``import chainrule as torch``) needed: the modules those
scripts import at the top (``torch.onnx``, ``torch.serialization``, ``torch.cuda``), the
class PyTorch gives ``MultiheadAttention.out_proj`` (word_language_model's safe_globals
list names it), and ``torch.spmm`` on dense matrices (gcn's GraphConv). Expected values
are derived by hand; where torch is installed they are also compared with its."""

from __future__ import annotations

import importlib
import io

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn

try:
    import torch
except ImportError:  # the comparisons with torch are skipped; the rest runs
    torch = None


# --- modules imported at the top of the examples -------------------------------------------

@pytest.mark.parametrize("name", ["onnx", "cuda", "cuda.amp", "jit", "serialization", "random"])
def test_namespaces_import_as_modules(name):
    # word_language_model/main.py and fast_neural_style start with ``import torch.onnx``;
    # ``from torch.serialization import safe_globals`` is the weights_only allowlist
    module = importlib.import_module(f"chainrule.{name}")
    parent = cr
    for part in name.split("."):
        parent = getattr(parent, part)
    assert module is parent
    if torch is not None:
        assert importlib.import_module(f"torch.{name}") is not None


def test_from_serialization_import_safe_globals_and_jit_script():
    from chainrule.cuda.amp import GradScaler
    from chainrule.jit import script
    from chainrule.serialization import add_safe_globals, safe_globals

    assert GradScaler is cr.amp.GradScaler
    f = lambda x: x  # noqa: E731
    assert script(f) is f
    assert callable(safe_globals) and callable(add_safe_globals)


def test_onnx_is_importable_but_export_raises():
    import chainrule.onnx

    assert chainrule.onnx.is_in_onnx_export() is False
    with pytest.raises(RuntimeError, match="no ONNX exporter"):
        chainrule.onnx.export(nn.Linear(2, 2), (cr.ones(1, 2),), io.BytesIO())
    if torch is not None:
        assert torch.onnx.is_in_onnx_export() is False


# --- MultiheadAttention.out_proj's class ---------------------------------------------------

def test_non_dynamically_quantizable_linear_is_mha_out_proj():
    from chainrule.nn.modules.linear import NonDynamicallyQuantizableLinear

    assert issubclass(NonDynamicallyQuantizableLinear, nn.Linear)
    mha = nn.MultiheadAttention(4, 2)
    assert type(mha.out_proj) is NonDynamicallyQuantizableLinear
    assert "(out_proj): NonDynamicallyQuantizableLinear(in_features=4, out_features=4" \
        in repr(mha)
    # the same layer as Linear: y = x W^T + b
    lin = NonDynamicallyQuantizableLinear(3, 2, dtype=cr.float64)
    x = np.arange(6.0).reshape(2, 3)
    W, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    np.testing.assert_allclose(lin(cr.tensor(x)).detach().numpy(), x @ W.T + b, rtol=1e-14)
    if torch is not None:
        tm = torch.nn.MultiheadAttention(4, 2)
        assert type(tm.out_proj).__name__ == type(mha.out_proj).__name__
        assert issubclass(torch.nn.modules.linear.NonDynamicallyQuantizableLinear,
                          torch.nn.Linear)


class _Encoder(nn.Module):
    """A Transformer language model as word_language_model's TransformerModel (small)."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16,
                                           dropout=0.0, dtype=cr.float64)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.emb = nn.Embedding(11, 8, dtype=cr.float64)

    def forward(self, src):
        return self.encoder(self.emb(src))


def test_word_language_model_save_and_load_with_its_safe_globals(tmp_path):
    # word_language_model/main.py: torch.save(model, f), then torch.load(f) under
    # torch.serialization.safe_globals([... torch.nn.modules.linear.
    # NonDynamicallyQuantizableLinear, ...])
    cr.manual_seed(0)
    model = _Encoder().eval()
    path = tmp_path / "model.pt"
    with open(path, "wb") as f:
        cr.save(model, f)
    safe = [
        _Encoder,
        cr.nn.functional.relu,
        cr.nn.modules.activation.MultiheadAttention,
        cr.nn.modules.container.ModuleList,
        cr.nn.modules.dropout.Dropout,
        cr.nn.modules.linear.Linear,
        cr.nn.modules.linear.NonDynamicallyQuantizableLinear,
        cr.nn.modules.normalization.LayerNorm,
        cr.nn.modules.sparse.Embedding,
        cr.nn.modules.transformer.TransformerEncoder,
        cr.nn.modules.transformer.TransformerEncoderLayer,
    ]
    from chainrule.serialization import safe_globals

    with open(path, "rb") as f, safe_globals(safe):
        loaded = cr.load(f)
    src = cr.tensor([[1, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(loaded(src).detach().numpy(), model(src).detach().numpy())
    assert type(loaded.encoder.layers[0].self_attn.out_proj).__name__ == \
        "NonDynamicallyQuantizableLinear"


# --- torch.spmm on dense matrices ----------------------------------------------------------

def test_spmm_dense_is_mm_with_its_gradient():
    # gcn/main.py GraphConv: output = torch.spmm(adj_mat, support), support = input @ kernel
    A = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.25], [0.0, 0.25, 1.0]])
    B = np.array([[1.0, -2.0], [0.5, 3.0], [-1.0, 0.0]])
    a = cr.tensor(A, requires_grad=True)
    b = cr.tensor(B, requires_grad=True)
    out = cr.spmm(a, b)
    expected = np.array([[1.25, -0.5], [0.75, 2.0], [-0.875, 0.75]])
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=0, atol=1e-15)
    G = np.array([[1.0, 2.0], [0.0, -1.0], [3.0, 0.5]])
    out.backward(cr.tensor(G))
    np.testing.assert_allclose(a.grad.numpy(), G @ B.T, rtol=0, atol=1e-15)   # G B^T
    np.testing.assert_allclose(b.grad.numpy(), A.T @ G, rtol=0, atol=1e-15)   # A^T G
    with pytest.raises(RuntimeError):
        cr.spmm(cr.ones(3), cr.ones(3))
    if torch is not None:
        ta = torch.tensor(A, requires_grad=True)
        tb = torch.tensor(B, requires_grad=True)
        tout = torch.spmm(ta, tb)
        tout.backward(torch.tensor(G))
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-15)
        np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-15)
        np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-15)


def test_gcn_graph_conv_layer_with_dense_adjacency():
    # GCN's two GraphConv layers, a dense normalised adjacency D^-1/2 (A + I) D^-1/2
    adj = np.array([[0, 1, 0, 0], [1, 0, 1, 1], [0, 1, 0, 0], [0, 1, 0, 0]], dtype=float)
    adj = adj + np.eye(4)
    d = 1 / np.sqrt(adj.sum(1))
    norm = d[:, None] * adj * d[None, :]
    X = np.arange(12.0).reshape(4, 3) / 10
    W = np.array([[0.2, -0.1], [0.4, 0.3], [-0.5, 0.1]])
    kernel = nn.Parameter(cr.tensor(W))
    out = cr.spmm(cr.tensor(norm), cr.mm(cr.tensor(X), kernel))
    np.testing.assert_allclose(out.detach().numpy(), norm @ (X @ W), rtol=1e-14)
    out.sum().backward()
    # d sum(N X W) / dW = X^T N^T 1
    np.testing.assert_allclose(kernel.grad.numpy(), X.T @ norm.T @ np.ones((4, 2)),
                               rtol=1e-14)
