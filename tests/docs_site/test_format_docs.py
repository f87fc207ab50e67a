"""docs/formats.md: current, complete, and every example on it parsed by the runtime."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from agentspec.formats import ERROR_CODES, available_formats

from .test_docs import DOCS, load_script

PAGE = DOCS / "formats.md"
CORPUS = Path(__file__).resolve().parents[2] / "tests" / "runtime" / "format_corpus"
# Codes whose outputs are too long for a corpus page; tests/runtime/test_hostile_formats.py
# produces each of them.
TESTED_ELSEWHERE = {"number_too_long", "too_many_errors"}


def test_the_formats_page_is_current() -> None:
    module = load_script("gen_formats")
    assert PAGE.read_text(encoding="utf-8") == module.render(), (
        "docs/formats.md is stale: run `python docs/gen_formats.py`"
    )


def test_every_format_code_and_corpus_case_is_on_the_page() -> None:
    page = PAGE.read_text(encoding="utf-8")
    produced: set[str] = set()
    for name in available_formats():
        assert f"\n## `{name}`\n" in page and f"### Edge cases of `{name}`" in page
        cases = yaml.safe_load((CORPUS / f"{name}.yaml").read_text(encoding="utf-8"))["cases"]
        for case in cases:
            assert f"**{case['name']}** → " in page, case["name"]
            produced.add(case.get("error", ""))
    for code in ERROR_CODES:
        assert f"| `{code}` |" in page, code
    assert set(ERROR_CODES) - produced == TESTED_ELSEWHERE


def test_the_worked_examples_parse_to_the_calls_shown() -> None:
    module = load_script("gen_formats")
    page = PAGE.read_text(encoding="utf-8")
    for name, (response, _) in module.EXAMPLES.items():
        section = page.split(f"\n## `{name}`\n", 1)[1].split("\n## `", 1)[0]
        shown = re.search(r"is parsed as the call\(s\):\n\n```json\n(.*?)\n```", section, re.S)
        assert shown is not None, name
        parsed = module.parse(name, response)
        assert parsed.ok
        calls = [{"name": c.name, "arguments": c.arguments} for c in parsed.calls]
        assert yaml.safe_load(shown.group(1)) == calls


def test_the_cross_format_table_names_real_corpus_cases() -> None:
    module = load_script("gen_formats")
    for label, cases in module.SAME_CASE:
        for fmt, case_name in cases.items():
            names = [c["name"] for c in module.load_corpus(fmt)]
            assert case_name in names, (label, fmt, case_name)
