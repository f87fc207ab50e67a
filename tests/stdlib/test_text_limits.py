"""The regex builtins on hostile text: time-limited, and tag extraction in linear time."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentspec.stdlib import text
from agentspec.stdlib.text import _tag_pair, extract, extract_all, regex_match

BOMB = ("(a|aa)+$", "a" * 40 + "!")


@pytest.mark.parametrize("fn", [regex_match, extract, extract_all])
def test_a_catastrophic_pattern_hits_the_time_limit(monkeypatch, fn) -> None:
    monkeypatch.setattr(text, "REGEX_TIMEOUT", 0.05)
    pattern, subject = BOMB
    with pytest.raises(TimeoutError):
        fn(subject, pattern)


def test_tag_pairs_are_recognised() -> None:
    assert _tag_pair("<answer>(.*?)</answer>") == ("<answer>", "</answer>")
    assert _tag_pair(r"\[(.*?)\]") == ("[", "]")
    assert _tag_pair(r"Answer: (.*?)\.") == ("Answer: ", ".")
    for other in ["(.*?)</a>", "<a>(.*)</a>", "<a>(.*?)</a>+", r"<a\d>(.*?)</a>", "a|b(.*?)c"]:
        assert _tag_pair(other) is None


def test_repeated_unclosed_tags_are_linear() -> None:
    # 100k unclosed tags: the backtracking search retries from each; the tag path does not
    # (a quadratic scan here would take minutes).
    assert extract("<answer>" * 100_000, "<answer>(.*?)</answer>") is None
    assert (
        extract("<answer>" * 100_000 + "7</answer>", "<answer>(.*?)</answer>")
        == "<answer>" * 99_999 + "7"
    )


_TAGGY = st.lists(st.sampled_from(["<a>", "</a>", "x", "\n", "<", ">", "a", "/"]), max_size=30).map(
    "".join
)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(subject=_TAGGY, pattern=st.sampled_from(["<a>(.*?)</a>", r"<(.*?)>", r"a(.*?)/", "x(.*?)x"]))
def test_tag_path_agrees_with_re(subject: str, pattern: str) -> None:
    match = re.search(pattern, subject, re.DOTALL)
    assert extract(subject, pattern) == (match.group(1) if match else None)
