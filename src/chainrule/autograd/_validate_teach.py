"""The teaching notes of ``validate(teach=True)``: for small inputs, a walk-through of what
backward must compute, with the user's shapes: the finite-difference Jacobian, the
grad_output backward receives, grad_output^T J side by side with what backward returned,
and a one-hot grad_output picking one row of J."""

from __future__ import annotations

import numpy as np

from ._validate_numerics import _vjp
from ._validate_report import MAX_TEACH, _count, _fmt, _indent, _side_by_side


def _teach(cls, make, diff, names, result, state):
    outs, js = state["outputs"], state["js"]
    n_in = sum(make()[i]._data.size for i in diff)
    n_out = sum(outs[j]._data.size for j in js)
    title = f"Teaching mode: what does {cls.__name__}.backward compute?"
    lines = [title, "=" * len(title)]
    if not result.jacobians or n_in > MAX_TEACH or n_out > MAX_TEACH:
        lines.append(f"The inputs ({n_in} numbers) or outputs ({n_out}) are too large to show "
                     f"the Jacobian (at most {MAX_TEACH} each); use smaller example inputs.")
        return "\n".join(lines)
    xs = make()
    lines.append(f"{cls.__name__}.apply maps the inputs")
    for i in diff:
        lines.append(f"  {names[i]}: shape {tuple(xs[i].shape)}, {_count(xs[i])}")
    lines.append("to the output" + ("s" if len(js) > 1 else ""))
    for j in js:
        lines.append(f"  output {j}: shape {tuple(outs[j].shape)}, {_count(outs[j])}")
    lines += [
        "",
        "1. The Jacobian J. Entry J[r, c] is d output[r] / d input[c]: how fast output entry r",
        "   moves when input entry c is nudged (entries numbered in row-major order). Here it",
        "   is measured by central differences, (f(x + eps e_c) - f(x - eps e_c)) / (2 eps),",
        "   one column per input entry.",
    ]
    for (j, i), J in result.jacobians.items():
        lines.append("")
        lines.append(f"   J of output {j} with respect to {names[i]}, shape {J.shape}:")
        lines += _indent(_fmt(J).splitlines(), 5)
    # A readable cotangent: one decimal, no zeros.
    rng = np.random.default_rng(1)
    u = {}
    for j in js:
        a = np.round(rng.standard_normal(outs[j].shape), 1)
        u[j] = np.where(a == 0, 0.5, a)
    lines += [
        "",
        "2. What backward receives. backward is never given J (for a 1000 x 1000 matrix input",
        "   it would have 10^12 entries). It receives grad_output: the gradient dL/d(output)",
        "   of some final scalar L, shaped like the output. Here a random one, u:",
    ]
    for j in js:
        lines.append(f"   grad_output for output {j}, shape {tuple(outs[j].shape)}:")
        lines += _indent(_fmt(u[j], 1).splitlines(), 5)
    vjps = _vjp(cls, make, diff, {j: u[j].astype(outs[j].dtype) for j in js})
    lines += [
        "",
        "3. What backward returns: for each input, grad_output^T J, the row vector u times J",
        "   (sum_r u[r] J[r, :]), reshaped to that input's shape. This is a vector-Jacobian",
        "   product (VJP); by the chain rule it is dL/d(input).",
    ]
    if len(js) > 1:
        lines.append("   With several outputs, the products of all outputs are added up.")
    for i in diff:
        expect = sum(u[j].reshape(-1) @ result.jacobians[(j, i)] for j in js)
        expect = expect.reshape(xs[i].shape)
        got = vjps[i]
        diff_max = float(np.abs(expect - got).max()) if got.size else 0.0
        lines.append("")
        lines.append(f"   {names[i]} (shape {tuple(xs[i].shape)}):")
        lines += _indent(_side_by_side([("grad_output^T J (from J above)", _fmt(expect)),
                                        ("what backward returned", _fmt(got))]), 5)
        _, atol, rtol = result.tolerances
        agree = np.allclose(got, expect, rtol=rtol, atol=atol)
        lines.append(f"     max |difference| = {diff_max:.1e}: " + (
            "they agree." if agree else "they DISAGREE: backward does not compute u^T J."))
    j0 = js[0]
    onehot = {j: np.zeros(outs[j].shape) for j in js}
    onehot[j0].reshape(-1)[0] = 1.0
    rows = _vjp(cls, make, diff, {j: onehot[j].astype(outs[j].dtype) for j in js})
    lines += [
        "",
        "4. A one-hot grad_output picks one row of J. With grad_output = e_0 (1 at entry 0",
        f"   of output {j0}, 0 elsewhere), u^T J is row 0 of J. gradcheck builds the whole J from",
        "   backward this way, one row per output entry, and compares it with the",
        "   finite-difference J above (results flattened here, to compare with the row).",
    ]
    for i in diff:
        row = result.jacobians[(j0, i)][0]
        lines.append("")
        lines.append(f"   {names[i]}:")
        lines += _indent(_side_by_side([(f"row 0 of J (output {j0})", _fmt(row)),
                                        ("backward with grad_output = e_0",
                                         _fmt(rows[i].reshape(-1)))]), 5)
    gradcheck_ok = all(c.passed for c in result.checks if c.name == "gradcheck")
    if gradcheck_ok:
        lines += [
            "",
            f"So {cls.__name__}.backward never forms J: from grad_output (and what forward "
            "saved)",
            "it computes grad_output^T J directly with a formula. During loss.backward() its",
            "result becomes the grad_output of the operations that produced its inputs, and so",
            "on back to the leaves: that is the chain rule, one vector-Jacobian product per "
            "step.",
        ]
    else:
        lines += [
            "",
            f"So {cls.__name__}.backward does NOT compute grad_output^T J: where the rows above "
            "differ,",
            "its formula is wrong (see gradcheck's diagnosis). It must return, for each input,",
            "the row vector grad_output times the Jacobian J of forward, without forming J.",
        ]
    return "\n".join(lines)
