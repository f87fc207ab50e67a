from __future__ import annotations

import pytest

from agentspec.compiler.builtins import BUILTINS
from agentspec.stdlib.functions import BUILTIN_FUNCTIONS
from agentspec.stdlib.metrics import exact_match, f1, f1_at_all, normalize_answer
from agentspec.stdlib.text import extract, extract_all, number, pattern_problem, regex_match


def test_every_builtin_has_an_implementation() -> None:
    assert set(BUILTIN_FUNCTIONS) == set(BUILTINS)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("42", 42.0),
        ("1,234", 1234.0),
        ("$5", 5.0),
        ("42.", 42.0),
        ("Janet sells 9 eggs.\n#### 18", 18.0),
        ("I think it is 3, no, 5", 5.0),
        ("-2.5", -2.5),
        ("no digits", None),
        (None, None),
        (7, 7.0),
        (True, 1.0),
        # an independent reference of the documented rule found these read wrong:
        ("#### 42 (because 6*7)", 42.0),  # the number right after ####, not the last
        ("#### 7\nExplanation: 3 apples", 7.0),
        ("answer #### 7 then 9", 7.0),
        ("#### nothing", None),
        ("pages 10-20", 20.0),  # a hyphen after a digit is no minus sign
        ("2024-01-01", 1.0),
        ("x -3", -3.0),
        ("(-3)", -3.0),
        ("x 1e-3", 0.001),  # an exponent belongs to its number
        ("x 1.5e3", 1500.0),
        ("\u22125", -5.0),  # the Unicode minus sign
        ("#### \u22125", -5.0),
        ("so \u22122.5 it is", -2.5),
    ],
)
def test_number(value: object, expected: float | None) -> None:
    assert number(value) == expected


def test_number_keeps_whole_numbers_beyond_float_precision_exact() -> None:
    big = 2**53 + 1
    assert number(str(big)) == big
    assert number(f"so the answer is {big:,}") == big
    assert number(f"#### {-big}") == -big
    assert number(big) == big
    assert number(str(big)) != big + 1  # a float would round both to 2**53
    assert number("9" * 5000) == float("inf")  # past int()'s digit limit: read as a float


def test_numeric_match_is_relative_at_every_size() -> None:
    from agentspec.stdlib.metrics import numeric_match

    # library.md: "within a relative `tolerance`" — it was absolute below 1
    assert numeric_match(0.005, 0.001, 0.01) == 0.0
    assert numeric_match(0.0099, 0, 0.01) == 0.0 and numeric_match("0", 0) == 1.0
    assert numeric_match(5e-7, 1e-7) == 0.0
    assert numeric_match(0.001009, 0.001, 0.01) == 1.0
    assert numeric_match("1,000,000.5", 1_000_000) == 1.0  # 5e-7 relative: within 1e-6
    assert numeric_match("pages 10-20", 20) == 1.0
    assert numeric_match("#### 42 (because 6*7)", "#### 42") == 1.0


def test_extract_and_regex() -> None:
    text = "think... <answer> 12 </answer> more <answer>13</answer>"
    assert extract(text, r"<answer>(.*?)</answer>") == " 12 "
    assert extract(text, r"\d+") == "12"
    assert extract("nothing", r"<answer>(.*?)</answer>") is None
    assert extract_all(text, r"<answer>\s*(\d+)\s*</answer>") == ["12", "13"]
    assert regex_match("Final Answer: x", r"Final Answer:\s*\w")


def test_squad_normalisation_and_scores() -> None:
    assert normalize_answer("The  Eiffel Tower!") == "eiffel tower"
    assert exact_match("the eiffel tower", "Eiffel Tower.") == 1.0
    assert exact_match("Paris", "London") == 0.0
    # precision 2/3, recall 2/2 → F1 = 2·(2/3)·1 / (2/3 + 1) = 0.8
    assert f1("eiffel tower paris", "the Eiffel Tower") == pytest.approx(0.8)
    assert f1("yes", "no") == 0.0 and f1("yes", "Yes.") == 1.0
    # retrieved {a, b, c}, relevant {b, c, d, e}: P = 2/3, R = 2/4 → F1 = 4/7
    assert f1_at_all(["a", "b", "c"], ["b", "c", "d", "e"]) == pytest.approx(4 / 7)


def test_min_max_accept_a_list_or_arguments() -> None:
    assert BUILTIN_FUNCTIONS["min"]([3, 1, 2]) == 1
    assert BUILTIN_FUNCTIONS["max"](3, 1, 2) == 3
    assert BUILTIN_FUNCTIONS["get"]({"a": 1}, "b", 0) == 0
    assert BUILTIN_FUNCTIONS["int"]("1,200") == 1200


def test_patterns_are_checked_by_the_engine_that_runs_them() -> None:
    assert pattern_problem(r"\p{L}+") is None  # `regex` syntax, which `re` refuses
    assert regex_match("été", r"^\p{L}+$")
    assert "repeat count" in (pattern_problem("a{99999999999}") or "")
    assert pattern_problem("(" * 2000 + ")" * 2000) == "groups are nested too deeply"
    assert "position" in (pattern_problem("[") or "")


def test_f1_of_two_empty_answers_is_1_as_in_squad() -> None:
    assert f1("", "") == 1.0 == exact_match("", "")
    assert f1("the", "") == 1.0  # both empty after normalisation (articles are dropped)
    assert f1("Paris", "") == 0.0 == f1("", "Paris")


@pytest.mark.parametrize(
    ("name", "args", "position"),
    [
        ("extract", (None, r"\d"), 1),
        ("regex_match", (None, "x"), 1),
        ("lower", (None,), 1),
        ("split", (None, ","), 1),
        ("startswith", ("abc", None), 2),
        ("replace", ("abc", "a", None), 3),
    ],
)
def test_text_functions_name_a_missing_value(name: str, args: tuple, position: int) -> None:
    # `extract(action.answer, …)` without an answer said "a bytes-like object is required"
    from agentspec.stdlib.functions import BUILTIN_FUNCTIONS

    with pytest.raises(TypeError, match=rf"{name}\(\): argument {position} is none, not text"):
        BUILTIN_FUNCTIONS[name](*args)
    assert BUILTIN_FUNCTIONS["split"]("a b") == ["a", "b"]  # a none separator stays allowed
