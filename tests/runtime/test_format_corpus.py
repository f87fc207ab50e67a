"""The per-format corpus of malformed and tricky outputs (tests/runtime/format_corpus/*.yaml).

Each case is a model output and its decided result: the calls with their
arguments, a final answer, or a parse-error code; optionally the reasoning and
content. The parsers are the runtime's own, with real tools.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from agentspec.formats import available_formats, get_format
from agentspec.runtime.episode.tools import BaseTool, ToolContext

CORPUS_DIR = Path(__file__).parent / "format_corpus"
MIN_CASES = 30


def _tool(tool_name: str, **properties: str) -> BaseTool:
    class Tool(BaseTool):
        name = tool_name
        description = f"The {tool_name} tool."
        parameters: ClassVar[dict[str, Any]] = {
            "type": "object",
            "properties": {key: {"type": kind} for key, kind in properties.items()},
            "required": list(properties),
        }

        async def execute(self, args: dict, context: ToolContext) -> str:
            return "ok"

    return Tool()


TOOLS = {
    tool.name: tool
    for tool in (
        _tool("search", query="string"),
        _tool("lookup", title="string", section="integer"),
        _tool("count", n="integer"),
        _tool("move", x="string", y="string"),
    )
}


def _load(fmt: str) -> list[dict[str, Any]]:
    data = yaml.safe_load((CORPUS_DIR / f"{fmt}.yaml").read_text(encoding="utf-8"))
    assert data["format"] == fmt
    return data["cases"]


CASES = [(fmt, case) for fmt in available_formats() for case in _load(fmt)]


@pytest.mark.parametrize("fmt", available_formats())
def test_every_format_has_a_corpus_of_at_least_30_cases(fmt: str) -> None:
    cases = _load(fmt)
    assert len(cases) >= MIN_CASES
    assert len({c["name"] for c in cases}) == len(cases), "case names must be unique"
    assert any("reasoning" in c for c in cases), "the corpus must cover reasoning"


@pytest.mark.parametrize(("fmt", "case"), CASES, ids=[f"{f}: {c['name']}" for f, c in CASES])
def test_corpus_case(fmt: str, case: dict[str, Any]) -> None:
    expected = [key for key in ("calls", "final", "error") if key in case]
    assert len(expected) == 1, f"a case expects exactly one of calls/final/error, got {expected}"
    parsed = get_format(fmt).parse(case["output"], TOOLS)
    if "error" in case:
        assert not parsed.calls and parsed.final_answer is None
        assert parsed.errors and parsed.errors[0].code == case["error"], parsed.errors
        assert parsed.errors[0].message
    elif "final" in case:
        assert not parsed.errors and not parsed.calls, parsed.errors
        assert parsed.final_answer == case["final"]
    else:
        assert not parsed.errors, parsed.errors
        assert [{"name": c.name, "arguments": c.arguments} for c in parsed.calls] == case["calls"]
    if "reasoning" in case:
        assert parsed.reasoning == case["reasoning"]
    if "content" in case:
        assert parsed.content == case["content"]
