"""An LSTM's forward + backward over sequences of growing length: chainrule vs PyTorch.

``nn.LSTM(64, 128)``, batch 32, float64, lengths 25, 100 and 200; the output summed and
backpropagated. A loop over time steps slices one tensor per step, so this shows whether
the backward pass stays linear in the length (each slice's cotangent is added in place,
see ``chainrule._node.Scattered``). No target; medians of interleaved repeats, one thread.
Run from the repository root:

    .venv/bin/python bench/rnn_lstm.py
"""

import _common  # noqa: F401  (sets one thread before NumPy loads)
from _common import interleaved_medians, torch, torch_cell

import chainrule as cr


def make(m, length):
    m.manual_seed(0)
    lstm = m.nn.LSTM(64, 128)
    if m is torch:
        lstm = lstm.double()
    x = m.randn(length, 32, 64, dtype=m.float64, requires_grad=True)

    def step():
        out, _ = lstm(x)
        out.sum().backward()
    return step


def main():
    print("LSTM(64 -> 128), batch 32, float64, forward + backward, ms")
    print(f"{'length':>7} | {'chainrule':>9} | {'PyTorch':>20} | ratio")
    for length in (25, 100, 200):
        fns = {"chainrule": make(cr, length)}
        if torch is not None:
            fns["torch"] = make(torch, length)
        ms = {k: v * 1e3 for k, v in interleaved_medians(fns, warmup=1, repeats=5).items()}
        ratio = f"{ms['chainrule'] / ms['torch']:.2f}x" if "torch" in ms else ""
        print(f"{length:>7} | {ms['chainrule']:>9.1f} | {torch_cell(ms.get('torch'), '.1f'):>20}"
              f" | {ratio}")


if __name__ == "__main__":
    main()
