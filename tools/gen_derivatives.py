"""Generate docs/derivatives.md from the derivative table (``chainrule.TABLE``).

Usage::

    python tools/gen_derivatives.py            # rewrite docs/derivatives.md
    python tools/gen_derivatives.py --check    # exit 1 when docs/derivatives.md is stale

The page has one section per primitive: its op name, graph node name, inputs, attributes,
the VJP formula of each input, the JVP formula and the source of the rule. Ops are grouped
by the module that declares them (``chainrule.ops.*`` first, then ``chainrule.linalg.*``)
and sorted by name within a module, so the output does not depend on import order.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import pkgutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "derivatives.md"
PACKAGES = ("chainrule.ops", "chainrule.linalg")  # every submodule is imported
COMMAND = "python tools/gen_derivatives.py"


def _import_all():
    """Import chainrule and every submodule of PACKAGES, so that every op is declared."""
    src = ROOT / "src"
    if (src / "chainrule").is_dir() and str(src) not in sys.path:
        sys.path.insert(0, str(src))  # document the working tree, not another install
    import chainrule

    for name in PACKAGES:
        package = importlib.import_module(name)
        for info in pkgutil.iter_modules(package.__path__, name + "."):
            importlib.import_module(info.name)
    return chainrule


def _rule_modules(op):
    """Modules that define op's rule functions (the module that declared the op)."""
    mods = set()
    for table in (op.vjp_rules, op.jvp_rules):
        for fn, _params in table.values():
            for f in (fn, getattr(fn, "deriv", None)):
                mod = getattr(f, "__module__", None)
                if mod and mod.startswith("chainrule.") and mod != "chainrule._table":
                    mods.add(mod)
    return mods


def _module_of(op, holders):
    """The module that declares ``op``: one of the modules holding it as a global that also
    defines its rules; else a holder in PACKAGES; else a rule's module; else 'other'."""
    held = holders.get(id(op), set())
    rules = _rule_modules(op)
    for candidates in (held & rules, {m for m in held if m.startswith(PACKAGES)}, held, rules):
        if candidates:
            return sorted(candidates)[0]
    return "other"


def _family_key(module):
    for rank, prefix in enumerate(PACKAGES):
        if module.startswith(prefix + "."):
            return (rank, module)
    return (len(PACKAGES), module)


def collect():
    """``[(module, summary, [op, ...]), ...]`` in page order."""
    chainrule = _import_all()
    from chainrule._table import Op

    holders = {}
    for name, module in list(sys.modules.items()):
        if name == "chainrule" or name.startswith("chainrule."):
            for value in list(vars(module).values()):
                if isinstance(value, Op):
                    holders.setdefault(id(value), set()).add(name)
    families = {}
    for op in chainrule.TABLE.values():
        families.setdefault(_module_of(op, holders), []).append(op)
    result = []
    for module in sorted(families, key=_family_key):
        doc = getattr(sys.modules.get(module), "__doc__", None) or ""
        summary = " ".join(doc.strip().split("\n\n")[0].split())
        result.append((module, summary, sorted(families[module], key=lambda op: op.name)))
    return result


def _code(text):
    """``text`` as an inline code span (longer fences when it contains backticks)."""
    text = " ".join(str(text).split())
    run, longest = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _escape(text):
    for ch in "\\*_<":
        text = text.replace(ch, "\\" + ch)
    return text


def _plain(text):
    """Prose for Markdown on one line: RST ``code`` becomes `code`, and outside code spans
    the characters that would format (backslash, *, _, <) are escaped."""
    text = " ".join(str(text).split()).replace("``", "`")
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code spans
        return _escape(text).replace("`", "\\`")
    return "`".join(p if i % 2 else _escape(p) for i, p in enumerate(parts))


def _names(names):
    return ", ".join(_code(n) for n in names) if names else "none"


def _op_section(op):
    lines = [f"### {_code(op.name)}", ""]
    facts = [f"Graph node {_code(op.node_name)}", f"inputs {_names(op.inputs)}",
             f"attrs {_names(op.attrs)}"]
    if op.variadic:
        facts.append(f"{_code(op.inputs[0])} is a sequence of tensors")
    if op.nout > 1:
        diff = ("all differentiable" if len(op.out_diff) == op.nout else
                "differentiable: " + ", ".join(str(i) for i in op.out_diff))
        facts.append(f"{op.nout} outputs ({diff})")
    if op.view:
        facts.append("the output is a view of the first input")
    lines.append("; ".join(facts) + ".")
    lines.append("")
    for name in op.inputs:
        lines.append(f"- VJP {_code(name)}: {_code(op.math.get(name, '(no formula text)'))}")
    extra = [k for k in op.math if k not in op.inputs and k != "out"]
    for key in extra:
        lines.append(f"- note {_code(key)}: {_code(op.math[key])}")
    no_jvp = [n for n in op.inputs if n not in op.jvp_rules]
    if len(no_jvp) == len(op.inputs):
        lines.append("- JVP: no rule (forward mode through this op raises)")
    else:
        lines.append(f"- JVP: {_code(op.math.get('out', '(no formula text)'))}")
        if no_jvp:
            lines.append(f"- no JVP rule for {_names(no_jvp)}")
    for name, sing in getattr(op, "singular", {}).items():
        lines.append(f"- derivative in {_code(name)} {sing.kind} where {_plain(sing.where)}; "
                     f"fix: {_code(sing.fix)}")
    lines.append(f"- Source: {_plain(op.source)}")
    lines.append("")
    return lines


def render():
    """The text of docs/derivatives.md."""
    families = collect()
    count = sum(len(ops) for _, _, ops in families)
    lines = [
        "<!-- Generated by tools/gen_derivatives.py from chainrule.TABLE; do not edit. -->",
        "",
        "# The derivative table",
        "",
        "Generated from the derivative table (`chainrule.TABLE`) by `tools/gen_derivatives.py`;",
        "do not edit it by hand. Regenerate it with",
        "",
        f"    {COMMAND}",
        "",
        f"and check it with `{COMMAND} --check`, which exits 1 when the page is stale (the",
        "test suite runs that check, `tests/test_docs.py`).",
        "",
        f"{count} primitives, grouped by the module that declares them with `defop`. For each:",
        "the graph node (`y.grad_fn.name()`), the differentiable inputs (PyTorch's names) and",
        "the non-tensor attributes, the VJP of each input (`grad` is the cotangent of the",
        "output, `grad_<input>` the cotangent returned for that input), the JVP (`d<input>`",
        "are input tangents, the formula gives the output tangent) and where the rule comes",
        "from. Broadcast inputs get their VJP summed back to their shape by the engine.",
        "",
        "## Contents",
        "",
    ]
    for module, _, ops in families:
        links = ", ".join(f"[{op.name}](#{op.name.lower()})" for op in ops)
        lines.append(f"- {_code(module)}: {links}")
    lines.append("")
    for module, summary, ops in families:
        lines += [f"## {_code(module)}", ""]
        if summary:
            lines += [_plain(summary), ""]
        for op in ops:
            lines += _op_section(op)
    return "\n".join(lines).rstrip("\n") + "\n"


def check(path=OUTPUT):
    """True when ``path`` holds exactly what :func:`render` produces."""
    path = Path(path)
    return path.is_file() and path.read_text(encoding="utf-8") == render()


def diff(path=OUTPUT, context=2):
    """A unified diff from ``path`` to the freshly rendered page ('' when up to date)."""
    path = Path(path)
    old = path.read_text(encoding="utf-8").splitlines(True) if path.is_file() else []
    return "".join(difflib.unified_diff(old, render().splitlines(True), str(path),
                                        "rendered", n=context))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 (printing a diff) when the page is stale; write nothing")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="the page to write")
    args = parser.parse_args(argv)
    if args.check:
        if check(args.output):
            print(f"{args.output} is up to date")
            return 0
        print(diff(args.output), end="")
        print(f"{args.output} is stale: run `{COMMAND}`", file=sys.stderr)
        return 1
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(render(), encoding="utf-8", newline="\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
