"""conv2d + relu + max_pool2d forward and backward: chainrule vs PyTorch.

Batch 32, 16 -> 32 channels, 28x28, 3x3 kernel with padding 1, 2x2 max pooling, float32;
the output summed and backpropagated. No target (convolution and pooling are compositions
of strided slices, a stack and one GEMM here). Medians of interleaved repeats, one thread.
Run from the repository root:

    .venv/bin/python bench/conv_pool.py
"""

import _common  # noqa: F401  (sets one thread before NumPy loads)
from _common import interleaved_medians, torch, torch_cell

import chainrule as cr


def make(m):
    m.manual_seed(0)
    x = m.randn(32, 16, 28, 28, dtype=m.float32, requires_grad=True)
    w = m.randn(32, 16, 3, 3, dtype=m.float32, requires_grad=True)
    F = m.nn.functional

    def step():
        y = F.max_pool2d(F.relu(F.conv2d(x, w, padding=1)), 2)
        y.sum().backward()
    return step


def main():
    fns = {"chainrule": make(cr)}
    if torch is not None:
        fns["torch"] = make(torch)
    ms = {k: v * 1e3 for k, v in interleaved_medians(fns, warmup=2, repeats=7).items()}
    print("conv2d(16 -> 32, 3x3) + relu + max_pool2d(2), batch 32, 28x28, float32, "
          "forward + backward, ms")
    print(f"{'chainrule':>10} | {'PyTorch':>20}")
    print(f"{ms['chainrule']:>10.1f} | {torch_cell(ms.get('torch'), '.1f'):>20}")


if __name__ == "__main__":
    main()
