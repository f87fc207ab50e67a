"""Checker behaviour beyond the invalid corpus: the IR it produces, and the
cases that must *not* be errors."""

from __future__ import annotations

import textwrap

from agentspec.compiler.frontend import FrontendResult, check_source
from agentspec.compiler.types import BOOL, FLOAT, INT, STR, ListOf, Optional
from agentspec.core.source import SourceFile

HEAD = """\
agentspec: 1
name: t
data: {source: "jsonl:x.jsonl", fields: {q: str, n: int, tags: "list[str]"}}
prompt: {user: "{{ sample.q }}"}
"""


def check(body: str) -> FrontendResult:
    return check_source(SourceFile("t.yaml", HEAD + textwrap.dedent(body)), deep=False)


def codes(result: FrontendResult) -> list[str]:
    return [d.code for d in result.diagnostics]


def test_types_flow_from_returns_to_effects_and_rewards() -> None:
    result = check(
        """
        state:
          total: {type: float}
          seen: {type: "list[str]"}
        tools:
          add:
            description: Add.
            parameters: {x: {type: number}, label: {type: string}}
            returns: args.x + sample.n
            effect:
              - state.total += result
              - state.seen = state.seen + [args.label]
              - done() if state.total > 10
        rewards:
          big: {on: "tool:add", value: "1.0 if result > 5 else 0.0", when: "args.label != ''"}
        episode: {success: "reward.big > 0 and 'a' in state.seen"}
        """
    )
    assert result.ok, [d.message for d in result.diagnostics]
    checked = result.checked
    assert checked is not None
    assert checked.result_types["add"] == FLOAT
    assert checked.arg_types["add"] == {"x": FLOAT, "label": STR}
    assert checked.expressions[("episode", "success")].type == BOOL
    assert checked.expressions[("rewards", "big", "value")].type == FLOAT
    assert len(checked.statements) == 3


def test_derived_fields_join_the_sample_scope() -> None:
    spec = """\
agentspec: 1
name: t
data:
  source: jsonl:x.jsonl
  fields: {q: str}
  derived: {length: len(sample.q), upper_q: upper(sample.q)}
prompt: {user: "{{ sample.upper_q }}"}
state:
  letters: {type: int, initial: sample.length}
rewards:
  r: {on: final, value: "1.0 if sample.length > 3 and state.letters > 0 else 0.0"}
"""
    # state's initial values read them too (they are computed when the data loads)
    result = check_source(SourceFile("d.yaml", spec))
    assert result.ok, [d.message for d in result.diagnostics]
    assert result.checked is not None
    assert result.checked.sample_types["length"] == INT
    assert result.checked.state_types["letters"] == INT


def test_optional_and_numeric_widening_are_accepted() -> None:
    result = check(
        """
        state:
          best: {type: "float?"}
          count: {type: int}
        tools:
          t:
            description: x
            parameters: {v: {type: integer}}
            effect:
              - state.best = args.v
              - state.best = None if args.v < 0
              - state.count = state.count + 1
        rewards:
          r: {on: final, value: "state.best if state.best != None else 0"}
        """
    )
    assert result.ok, [d.message for d in result.diagnostics]
    assert result.checked is not None
    assert result.checked.state_types["best"] == Optional(FLOAT)


def test_all_errors_in_one_run() -> None:
    result = check(
        """
        state:
          page: {type: str}
        tools:
          t:
            description: x
            when: state.pgae == 1
            effect: ["state.page = 1", "state.nope = 2", "done(1, 2)"]
        rewards:
          r: {on: final, value: "sampel.q"}
        """
    )
    assert codes(result) == ["E402", "E504", "E402", "E503", "E401"]


def test_state_usage_warnings() -> None:
    result = check(
        """
        state:
          const: {type: int, initial: 3}
          unused: {type: str}
          ok: {type: "list[str]"}
        tools:
          t:
            description: x
            effect: ["state.ok = state.ok + ['x'] if state.const > 1"]
        """
    )
    assert result.ok  # warnings do not fail a spec
    assert sorted(codes(result)) == ["W801", "W802"]


def test_read_only_state_copied_from_the_sample_says_to_read_the_sample() -> None:
    # "make it a constant" cannot be done for a value that differs per sample
    result = check(
        """
        state:
          q: {type: str, initial: "sample.question"}
        tools:
          t:
            description: x
            returns: state.q
        """
    )
    (warning,) = [d for d in result.diagnostics if d.code == "W801"]
    assert (
        warning.hint is not None and "read `sample.question` where state.q is read" in warning.hint
    )


def test_an_observe_template_reading_a_field_of_a_list_result_is_e411() -> None:
    # it validated, and every call of the tool failed at run time
    result = check(
        """
        tools:
          search:
            description: x
            parameters: {q: {type: string}}
            returns: "[args.q]"
            observe: "Hits: {{ result.titles }} {{ result.count('x') }}"
        """
    )
    (error,) = [d for d in result.diagnostics if d.code == "E411"]
    assert "'result' is a value of type list[str]; it has no attribute 'titles'" in error.message


def test_assigning_an_item_names_the_item_not_the_list() -> None:
    # "cannot assign int to state.hist of type str": state.hist is a list[str]
    result = check(
        """
        state:
          hist: {type: "list[str]"}
        tools:
          t:
            description: x
            effect: ["state.hist[0] = 5"]
        """
    )
    (error,) = [d for d in result.diagnostics if d.code == "E504"]
    assert error.message == "cannot assign int to state.hist[…] of type str"


def test_env_scope_only_with_an_environment() -> None:
    result = check(
        """
        rewards:
          r: {on: final, value: "env.score"}
        """
    )
    assert codes(result) == ["E407"]
    result = check(
        """
        environment: {adapter: textworld}
        rewards:
          r: {on: final, value: "env.score"}
        """
    )
    assert result.ok


def test_list_typed_parameters_and_indexing() -> None:
    result = check(
        """
        state:
          picked: {type: str}
        tools:
          pick:
            description: x
            parameters: {options: {type: array, items: {type: string}}}
            effect: ["state.picked = args.options[0]"]
        rewards:
          r: {on: final, value: "1.0 if sample.tags[0] == state.picked else 0.0"}
        """
    )
    assert result.ok, [d.message for d in result.diagnostics]
    assert result.checked is not None
    assert result.checked.arg_types["pick"]["options"] == ListOf(STR)


def test_len_and_contains_need_something_with_members() -> None:
    result = check(
        """
        state:
          n: {type: int}
          words: {type: "list[str]"}
          seen: {type: dict}
        tools:
          t:
            description: x
            parameters: {w: {type: string}}
            effect:
              - state.n = len(state.words) + len(args.w) + len(state.seen)
              - state.n = len(state.n)
              - state.n = 1 if contains(state.n, 3) or contains(state.seen, args.w) else 0
        rewards:
          r: {on: final, value: "float(state.n)"}
        """
    )
    errors = [d.message for d in result.diagnostics if d.is_error]
    assert errors == [
        "argument 1 of len() must be str|list|dict, not int",
        "argument 1 of contains() must be str|list|dict, not int",
    ]
