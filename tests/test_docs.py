"""The documentation runs: every ```python block in docs/*.md and README.md is executed, and
docs/derivatives.md matches the derivative table.

Blocks of one file run in order in one shared namespace, with the repository root as the
working directory. A block is skipped when its info string says ``python no-run`` or when
the line before its opening fence (blank lines aside) is ``<!-- no-run -->``; keep that for
snippets that only show an API's shape. Code is compiled with the Markdown file's name and
line numbers, so a traceback points at the failing line of the page.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import traceback
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
FILES = PAGES + [ROOT / "README.md"]
PYTHON_INFO = ("python", "py", "python3")
NO_RUN = "<!-- no-run -->"
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


def code_blocks(text):
    """Python code blocks of a Markdown text: a list of ``(index, line, code, run)``.

    ``index`` counts the file's Python blocks from 0 (skipped ones included), ``line`` is the
    1-based line of the first code line, and ``run`` is False for a no-run block.
    """
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None or (m["fence"][0] == "`" and "`" in m["info"]):
            i += 1
            continue
        indent, fence, words = len(m["indent"]), m["fence"], m["info"].split()
        start = i + 1
        end = start
        while end < len(lines):  # the closing fence: same character, at least as long
            close = lines[end].strip()
            if close.startswith(fence) and set(close) == {fence[0]}:
                break
            end += 1
        if words and words[0].lower() in PYTHON_INFO:
            before = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()),
                          "")
            run = "no-run" not in words[1:] and before != NO_RUN
            body = [line[indent:] if line[:indent].strip() == "" else line.lstrip()
                    for line in lines[start:end]]
            blocks.append((len(blocks), start + 1, "\n".join(body) + "\n", run))
        i = end + 1
    return blocks


def _load_generator():
    spec = importlib.util.spec_from_file_location("gen_derivatives",
                                                  ROOT / "tools" / "gen_derivatives.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_derivatives_page_is_up_to_date():
    gen = _load_generator()
    page = DOCS / "derivatives.md"
    assert gen.check(page), (
        f"{page.relative_to(ROOT)} is stale: run `python tools/gen_derivatives.py`.\n"
        + gen.diff(page)[:4000]
    )


def test_index_links_every_page():
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    missing = [p.name for p in PAGES if p.name != "index.md" and f"({p.name})" not in index]
    assert not missing, f"docs/index.md does not link {missing}"


def test_code_block_parser():
    text = "\n".join([
        "```python", "a = 1", "```",
        "```python no-run", "raise SystemExit", "```",
        "<!-- no-run -->", "", "```python", "raise SystemExit", "```",
        "````markdown", "```python", "not a block of this file", "```", "````",
        "- item", "  ```python", "  b = a + 1", "  ```",
        "```", "plain = 'not python'", "```",
    ])
    blocks = code_blocks(text)
    assert [(b[0], b[1], b[3]) for b in blocks] == [
        (0, 2, True), (1, 5, False), (2, 10, False), (3, 19, True)]
    assert blocks[3][2] == "b = a + 1\n"


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_code_blocks_run(path, monkeypatch):
    import chainrule._creation as creation

    monkeypatch.chdir(ROOT)
    # Pages call cr.manual_seed: give the global generator back to the tests that follow.
    monkeypatch.setattr(creation, "default_generator",
                        creation.Generator().set_state(creation.default_generator.get_state()))
    name = str(path.relative_to(ROOT))
    namespace = {"__name__": f"__docs_{path.stem.replace('-', '_')}__"}
    for index, line, code, run in code_blocks(path.read_text(encoding="utf-8")):
        if not run:
            continue
        # Pad with newlines so tracebacks give the Markdown file's own line numbers.
        compiled = compile("\n" * (line - 1) + code, str(path), "exec")
        failure = None
        try:
            exec(compiled, namespace)
        except Exception:
            etype, value, tb = sys.exc_info()
            failure = "".join(traceback.format_exception(etype, value, tb.tb_next))
        if failure is not None:
            pytest.fail(f"{name}: python block {index} (starting at line {line}) failed:\n"
                        f"{failure}", pytrace=False)
