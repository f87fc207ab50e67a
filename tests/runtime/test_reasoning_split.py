"""Reasoning text is split off before a format's rules run, with configurable tags."""

from __future__ import annotations

import pytest

from agentspec.formats import (
    DEFAULT_REASONING_TAGS,
    HarmonyFormat,
    HermesFormat,
    JsonFormat,
    ReactFormat,
    split_reasoning,
)

CALL = '<tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>'


@pytest.mark.parametrize(
    ("text", "answer", "reasoning", "unclosed"),
    [
        ("no reasoning", "no reasoning", None, False),
        ("<think>a</think>b", "b", "a", False),
        ("<think> a </think>b<think>c</think>d", "bd", "a\n\nc", False),
        ("a</think>b", "b", "a", False),  # the prompt opened the block
        ("a</think>b</think>c", "b</think>c", "a", False),  # a later stray close stays
        ("<think>a<think>b</think>c", "c", "a<think>b", False),  # an open inside is text
        ("x<think>cut off", "x", "cut off", True),
        ("<think></think>b", "b", "", False),
    ],
)
def test_split_reasoning(text: str, answer: str, reasoning: str | None, unclosed: bool) -> None:
    split = split_reasoning(text, DEFAULT_REASONING_TAGS)
    assert (split.answer, split.reasoning, split.unclosed) == (answer, reasoning, unclosed)


def test_other_tags_and_no_tags() -> None:
    custom = HermesFormat(reasoning_tags=("<reasoning>", "</reasoning>"))
    parsed = custom.parse(f"<reasoning>plan</reasoning>{CALL}")
    assert parsed.reasoning == "plan" and [c.name for c in parsed.calls] == ["search"]
    assert custom.parse("<think>t</think>hi").final_answer == "<think>t</think>hi"
    off = JsonFormat(reasoning_tags=None)
    assert off.parse("<think>t</think>hi").final_answer == "<think>t</think>hi"
    assert off.parse("<think>t</think>hi").reasoning is None


def test_the_unclosed_reasoning_error_tells_the_model_what_to_do() -> None:
    parsed = ReactFormat().parse("<think>Action: search")
    assert [e.code for e in parsed.errors] == ["unclosed_reasoning"]
    assert "close your reasoning" in parsed.errors[0].message
    observation = ReactFormat().render_errors(parsed.errors)
    assert "no tool was called" in observation and "Action Input" in observation


def test_harmony_ignores_think_tags_by_default() -> None:
    assert HarmonyFormat().reasoning_tags is None
    parsed = HarmonyFormat().parse("<|channel|>final<|message|><think>x</think>7<|return|>")
    assert parsed.final_answer == "<think>x</think>7" and parsed.reasoning is None
