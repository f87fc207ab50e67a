"""Messages that used to mislead (issue 15): each case says what is wrong, where.

Every case is a spec of tests/specs/invalid/; these tests pin the words and
the position, which the golden corpus (code, line, column) does not.
"""

from __future__ import annotations

from pathlib import Path

from agentspec.compiler.frontend import check_file
from agentspec.core.diagnostics import Diagnostic, render_text

INVALID = Path(__file__).resolve().parent.parent / "specs" / "invalid"


def only(name: str) -> Diagnostic:
    result = check_file(INVALID / name)
    assert len(result.diagnostics) == 1, [d.message for d in result.diagnostics]
    return result.diagnostics[0]


def where(d: Diagnostic) -> tuple[int, int]:
    assert d.span is not None
    return d.span.line, d.span.column


def test_failed_returns_parse_does_not_cause_a_false_e407() -> None:
    d = only("name_result_after_bad_returns.yaml")
    assert d.code == "E303" and where(d) == (9, 26)


def test_power_operator_is_named_as_not_in_the_language() -> None:
    d = only("expr_power.yaml")
    assert d.code == "E301"
    assert "'**' is not an operator" in d.message
    assert where(d) == (6, 28) and d.span is not None and d.span.end_column == 30


def test_key_of_another_section_suggests_that_section() -> None:
    d = only("schema_key_in_other_section.yaml")
    assert d.code == "E201"
    assert d.hint is not None and "episode.max_response_tokens" in d.hint


def test_unclosed_single_quote_is_reported_at_the_opening_quote() -> None:
    d = only("yaml_unclosed_single_quote.yaml")
    assert d.code == "E101" and where(d) == (8, 9)
    assert d.hint is not None and "''" in d.hint


def test_quotes_in_a_block_scalar_are_not_openers() -> None:
    # Issue 26: the error is PyYAML's own, on line 15 ("Search for: an item:
    # here"); it used to be blamed on the quote that starts line 10.
    d = only("yaml_quotes_in_block_scalar.yaml")
    assert d.code == "E101" and where(d) == (15, 28)
    assert "mapping values are not allowed" in d.message
    assert d.hint is not None and "must be quoted" in d.hint


def test_double_quoted_apostrophe_and_plain_dont_are_not_openers() -> None:
    from agentspec.core.source import SourceFile
    from agentspec.spec.yaml_loader import load_yaml

    bad = "b: x: y: z\n"  # the error: a plain scalar with two ': '
    for before in ('a: "don\'t"\n', "a: don't stop\n", "a: 'it''s'\n", 'a: "x \\" y"\n'):
        _, _, (d,) = load_yaml(SourceFile("t.yaml", before + bad))
        assert d.span is not None and (d.span.line, d.span.column) == (2, 5), before
        assert "quoted string" not in d.message


def test_a_quote_read_past_its_line_is_still_blamed_on_its_opener() -> None:
    from agentspec.core.source import SourceFile
    from agentspec.spec.yaml_loader import load_yaml

    _, _, (d,) = load_yaml(SourceFile("t.yaml", 'a: "open\nb: 1\nc: "x" y\n'))
    assert d.span is not None and (d.span.line, d.span.column) == (1, 4)
    assert "not closed" in d.message


def test_empty_and_comment_only_files_have_a_position() -> None:
    empty = only("yaml_empty.yaml")
    comments = only("yaml_comments_only.yaml")
    assert empty.code == comments.code == "E104"
    assert where(empty) == where(comments) == (1, 1)
    assert "only comments" in comments.message


def test_missing_space_after_colon_points_at_the_colon() -> None:
    d = only("yaml_no_space_after_colon.yaml")
    assert d.code == "E101" and where(d) == (3, 5)
    assert d.hint is not None and "`name: calc`" in d.hint and "quote" not in d.hint


def test_nbsp_indentation_is_named() -> None:
    d = only("yaml_nbsp_indent.yaml")
    assert d.code == "E101" and where(d) == (5, 1)
    assert "U+00A0" in d.message and d.hint is not None and "quote" not in d.hint


def test_pyyaml_internal_position_does_not_leak() -> None:
    result = check_file(INVALID / "yaml_control_character.yaml")
    (d,) = result.diagnostics
    text = render_text(d, result.sources)
    assert "<unicode string>" not in text and "position" not in text
    assert d.code == "E101" and where(d) == (4, 19) and "U+0007" in d.message


def test_a_guard_step_yaml_read_as_a_mapping_is_one_error_and_keys_are_spelled_as_written() -> None:
    # Issue 26: an unquoted `let` with ': ' in a `when` list was three schema
    # errors about keys; a guard's keys were listed as `condition, message`.
    result = check_file(INVALID / "schema_yaml_colon_in_guard_step.yaml")
    misread, missing, unknown = result.diagnostics
    assert misread.code == "E203" and where(misread) == (17, 9)
    assert "YAML read this value as a mapping" in misread.message
    assert "the ': ' inside made the key 'let seen = {k'" in misread.message
    assert misread.hint == (
        "quote the whole value: 'let seen = {k: v for k, v in items(state.counts) if v > 0}'"
    )
    assert (missing.code, unknown.code) == ("E202", "E201") and where(unknown) == (18, 10)
    assert unknown.hint == "did you mean 'if'?"


def test_an_unquoted_template_read_as_an_inline_mapping_says_so_and_quotes_it() -> None:
    d = only("schema_yaml_brace_template.yaml")
    assert d.code == "E203" and where(d) == (17, 14)
    assert "tools.count.observe: YAML read this value as a mapping" in d.message
    assert "it starts with '{'" in d.message
    assert d.hint == "quote the whole value: '{{ fmt(args.word, 1) }}'"


def test_a_comma_inside_an_inline_mapping_value_says_to_quote_the_value() -> None:
    split = only("schema_yaml_comma_in_inline_guard.yaml")
    assert split.code == "E201" and where(split) == (17, 36)
    assert split.message == "unknown key 'k)' in tools.count.when[0]"
    assert split.hint is not None and "inside `{…}` a ', ' ends a value" in split.hint
    quoted = only("yaml_quote_in_inline_guard.yaml")
    assert quoted.code == "E101" and where(quoted) == (17, 39)
    assert quoted.hint is not None and "must be quoted as a whole" in quoted.hint


def test_a_literal_oracle_value_outside_the_enum_is_an_error_whatever_the_data() -> None:
    # derived fields keep validate from reading a sample; a literal turn needs none
    d = only("deep_oracle_constant_enum.yaml")
    assert d.code == "E910" and where(d) == (20, 42)  # `mode`, not the end of `set_mode`
    assert d.message.endswith(
        "argument 'mode' of 'set_mode': 'warm' is not one of ['heat', 'cool', 'off']"
    )


def test_a_name_the_user_module_does_not_define_is_reported_at_impl() -> None:
    d = only("deep_user_module_no_attribute.yaml")
    assert d.code == "E904" and where(d) == (7, 19)
    assert d.message == "module 'unitlib_defs' (unitlib_defs.py) does not define 'convrt'"
    assert d.hint == "did you mean 'unitlib_defs:convert'?"


def test_a_user_module_that_does_not_parse_names_its_line() -> None:
    d = only("deep_user_module_syntax_error.yaml")
    assert d.code == "E904" and where(d) == (7, 19)
    assert "does not parse" in d.message and "unitlib_broken.py:4:" in d.message
    assert d.hint == "fix line 4 of unitlib_broken.py"


def test_a_data_value_of_the_wrong_type_names_row_field_and_file() -> None:
    d = only("deep_field_wrong_type.yaml")
    assert d.code == "E907" and where(d) == (4, 66)  # the declared type
    assert d.message == (
        "row 1 of data.jsonl: field 'answer' is the number 5, but data.fields declares it str"
    )
    assert d.hint == "fix the data, or declare it `int`"


def test_a_wrong_type_in_a_union_names_every_allowed_type() -> None:
    d = only("schema_reward_value_list.yaml")
    assert d.code == "E203" and where(d) == (7, 31)
    assert (
        d.message == "rewards.correct.value: expected a number or an expression string, got a list"
    )


def test_a_non_ascii_name_says_names_are_ascii() -> None:
    d = only("schema_name_not_ascii.yaml")
    assert d.code == "E204" and where(d) == (7, 3)
    assert d.hint is not None and "ASCII letters" in d.hint and "'é' is not ASCII" in d.hint


def test_a_key_yaml_reads_as_null_a_number_or_a_boolean_is_named_where_it_is(
    tmp_path: Path,
) -> None:
    # pydantic names such keys 'None', '3.5' and 1: each error was at `tools:` or spoke of 1
    spec = tmp_path / "keys.yaml"
    spec.write_text(
        "agentspec: 1\nname: k\nprompt: {user: hi}\ntools:\n"
        "  ~: {description: x}\n  3.5: {description: y}\n  true: {description: z}\n"
        "rewards: {r: {on: final, value: 1.0}}\n"
    )
    found = sorted((d.span.line, d.message) for d in check_file(spec).diagnostics if d.span)
    assert found == [
        (5, "null (`~`) is not a valid name in tools"),
        (6, "the number 3.5 is not a valid name in tools"),
        (7, "the boolean `true` is not a valid name in tools"),
    ]


def test_a_duplicate_key_that_is_not_text_is_named_as_written(tmp_path: Path) -> None:
    spec = tmp_path / "dup.yaml"
    spec.write_text(
        "agentspec: 1\nname: k\nprompt: {user: hi}\nconstants:\n  ~: 1\n  null: 2\n"
        "rewards: {r: {on: final, value: 1.0}}\n"
    )
    (d,) = [d for d in check_file(spec).diagnostics if d.code == "E102"]
    assert d.message == "duplicate key `null`"  # was "duplicate key None"
    assert d.hint is not None and d.hint.startswith("the same key is on line 5")


YAML_SLIP = """\
agentspec: 1
name: g
data: {source: jsonl:data.jsonl, fields: {question: str, answer: str}}
prompt: {user: "{{ sample.question }}"}
state:
  mode: {type: str, initial: "off"}
tools:
  wait:
    description: Wait.
    parameters: {}
    when:
      - {if: "state.mode != 'x'", message: no}
    effect: ["state.mode = 'on'"]
rewards:
  correct: {on: final, value: "1.0"}
"""


def _slip(tmp_path: Path, old: str, new: str) -> Diagnostic:
    assert old in YAML_SLIP
    spec = tmp_path / "slip.yaml"
    spec.write_text(YAML_SLIP.replace(old, new), encoding="utf-8")
    (d,) = check_file(spec).diagnostics
    return d


def test_yaml_slips_a_new_user_made_get_the_fix_in_the_hint(tmp_path: Path) -> None:
    # `!=` after a quoted text: YAML takes `!` for a tag
    tag = _slip(
        tmp_path, """- {if: "state.mode != 'x'", message: no}""", """- if: "off" != state.mode"""
    )
    assert tag.code == "E101" and tag.hint is not None
    assert tag.hint.endswith("""quote the whole expression: `if: '"off" != state.mode'`""")
    # a comment inside `{…}` hides its closing brace
    comment = _slip(tmp_path, 'value: "1.0"}', "value: -0.1 #per step}")
    assert comment.code == "E101" and "'{' is not closed" in comment.message
    assert comment.hint is not None and comment.hint.startswith("' #' starts a comment")
    # `- state.x: v` in an effect is an assignment
    colon = _slip(
        tmp_path, """effect: ["state.mode = 'on'"]""", "effect:\n      - state.mode: args.mode"
    )
    assert (
        colon.code == "E203"
        and colon.hint == "an assignment is written with '=': `state.mode = args.mode`"
    )
    # ': ' inside an unquoted value of `{…}`
    inner = _slip(tmp_path, "message: no}", "message: Nothing happens: it is off.}")
    assert (
        inner.code == "E101"
        and inner.hint is not None
        and "quote a value that contains ': '" in inner.hint
    )


def test_an_unknown_oracle_argument_gets_the_parameter_meant() -> None:
    result = check_file(INVALID / "deep_oracle_unknown_argument.yaml")
    unknown = [d for d in result.diagnostics if "unknown argument 'expr'" in d.message]
    assert [d.hint for d in unknown] == ["did you mean 'expression'?"]


def test_a_render_field_the_corpus_lacks_is_named_with_the_fields_there() -> None:
    result = check_file(INVALID / "warn_render_field_not_in_corpus.yaml")
    (warning,) = [d for d in result.diagnostics if d.code == "W902"]  # `question` is there
    assert warning.message.startswith("render field 'titel' is not in the first row of data.jsonl")
    assert warning.hint == "fields there: answer, question" and where(warning) == (11, 73)
