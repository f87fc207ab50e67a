"""Every spec in tests/specs/invalid/ reports exactly its golden diagnostics.

The golden file `tests/specs/invalid/expected.json` maps each spec to the
list `"CODE line:column [hint]"` of its diagnostics. Regenerate after an
intended change with `pytest tests/compiler/test_invalid_corpus.py --update-golden`
and review the diff.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentspec.compiler.frontend import check_file
from agentspec.core.diagnostics import CODES, render_text

INVALID = Path(__file__).resolve().parent.parent / "specs" / "invalid"
GOLDEN = INVALID / "expected.json"
SPECS = sorted(INVALID.glob("*.yaml"))


def summarize(path: Path) -> list[str]:
    result = check_file(path)
    lines = []
    for d in result.diagnostics:
        assert d.span is not None, f"{path.name}: {d.code} has no position"
        lines.append(f"{d.code} {d.span.line}:{d.span.column}" + (" hint" if d.hint else ""))
    return lines


def test_corpus_is_large_enough() -> None:
    assert len(SPECS) >= 40


def test_golden_matches(update_golden: bool) -> None:
    actual = {path.name: summarize(path) for path in SPECS}
    if update_golden:
        GOLDEN.write_text(json.dumps(actual, indent=1, sort_keys=True) + "\n")
    expected = json.loads(GOLDEN.read_text())
    assert actual == expected


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_each_invalid_spec_has_an_error_and_renders(path: Path) -> None:
    result = check_file(path)
    assert not result.ok
    assert result.errors, "an invalid spec must produce at least one error"
    for d in result.diagnostics:
        assert d.code in CODES
        text = render_text(d, result.sources)
        assert text.startswith(f"{path}:{d.span.line}:{d.span.column}: ")  # type: ignore[union-attr]
        assert "^" in text, "every diagnostic shows the source line with a caret"


def test_every_category_is_covered() -> None:
    expected = json.loads(GOLDEN.read_text())
    codes = {entry.split()[0] for entries in expected.values() for entry in entries}
    for stage in "12345679":
        assert any(code[1] == stage for code in codes), f"no E{stage}xx case in the corpus"


def test_error_catalogue_is_current() -> None:
    import importlib.util

    root = INVALID.parents[2]
    spec = importlib.util.spec_from_file_location("gen_errors", root / "docs" / "gen_errors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = (root / "docs" / "errors.md").read_text()
    assert page == module.render(), "run `python docs/gen_errors.py`"
    for code in CODES:
        assert f"### {code}:" in page
        assert f"[{code}]" in page, f"{code} has no example in tests/specs/invalid/"
