"""`agentspec test`: every shipped spec passes its scripted episodes and oracle
gate; a wrong expectation, an oracle with tool errors and an oracle below
success 1.0 each fail with a located message and exit 1."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "specs").glob("*.yaml"))
runner = CliRunner()

SPEC = """\
agentspec: 1
name: doors
data: {source: generator:keys_and_doors, fields: {key_room: str}}
prompt: {user: "The key is in the {{ sample.key_room }} room."}
state:
  room: {type: str, initial: middle}
  has_key: {type: bool}
tools:
  take:
    description: Take the key.
    parameters: {item: {type: string}}
    effect:
      - 'fail("no " + args.item + " here") if args.item != "key" or state.room != sample.key_room'
      - state.has_key = True
    observe: "You take the key."
  go:
    description: Walk.
    parameters: {direction: {type: string}}
    effect:
      - 'state.room = args.direction if state.room == "middle" else "middle"'
      - done() if state.room == "north" and state.has_key
    observe: "You are in the {{ state.room }} room."
episode: {max_steps: 6, tool_format: bracket, success: reward.win == 1.0}
rewards:
  win: {on: final, value: "1.0 if state.room == 'north' else 0.0"}
oracle:
  - "go[{{ sample.key_room }}]"
  - "take[key]"
  - "go[middle]"
  - "go[north]"
tests:
  oracle: {samples: 4}
  episodes:
    - name: fetch the key, then go north
      sample: {id: a, key_room: west}
      turns: ["go[west]", "take[key]", "go[middle]", "go[north]"]
      expect:
        observations: ["Observation: You are in the west room.", {pattern: "take"}]
        state: {room: north, has_key: true}
        rewards: {win: 1.0}
        success: true
        ending: done
"""


@pytest.fixture(autouse=True)
def cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    if "AGENTSPEC_CACHE" not in os.environ:
        monkeypatch.setenv("AGENTSPEC_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "doors.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize("spec", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_spec_passes_its_tests(spec: Path) -> None:
    result = runner.invoke(app, ["test", str(spec)])
    assert result.exit_code == 0, result.output
    assert " failed" not in result.output
    assert "episodes[0]" in result.output, "every shipped spec has scripted episodes"
    assert "oracle gate" in result.output and "PASSED" in result.output


def test_a_passing_spec_exits_0(tmp_path: Path) -> None:
    result = runner.invoke(app, ["test", str(write(tmp_path, SPEC))])
    assert result.exit_code == 0, result.output
    assert "2 passed" in result.output


def test_a_wrong_expectation_fails_at_its_line(tmp_path: Path) -> None:
    text = SPEC.replace(
        '"Observation: You are in the west room."', '"Observation: You are in the east room."'
    )
    path = write(tmp_path, text)
    result = runner.invoke(app, ["test", str(path)])
    assert result.exit_code == 1
    line = line_of(text, "You are in the east room.")
    assert re.search(
        rf"doors\.yaml:{line}:\d+: episodes\[0\] .*observation 1: expected", result.output
    )
    assert "1 failed" in result.output


def test_a_backtracking_pattern_fails_its_case_instead_of_hanging(tmp_path: Path) -> None:
    text = SPEC.replace('"go[west]", "take[key]"', '"go[west]", "take[' + "a" * 40 + 'b]"').replace(
        '{pattern: "take"}', "{pattern: '(a|aa)+$'}"
    )
    result = runner.invoke(app, ["test", str(write(tmp_path, text))])
    assert result.exit_code == 1, result.output
    line = line_of(text, "(a|aa)+$")
    assert re.search(rf"doors\.yaml:{line}:\d+: .*took over 1 s", result.output), result.output


def test_a_mismatch_is_explained_by_the_errors_of_its_own_turn(tmp_path: Path) -> None:
    # Turn 1 is a tool error; turn 2's observation is expected wrong. The observation's
    # failure must not blame turn 1's error, the reward's names the turn it came from.
    text = (
        SPEC.replace(
            'turns: ["go[west]", "take[key]", "go[middle]", "go[north]"]',
            'turns: ["take[sword]", "go[west]", "take[key]", "go[middle]", "go[north]"]',
        )
        .replace(
            '{pattern: "take"}]',
            '"Observation: You are in the east room."]\n        rewards: {win: 0.5}',
        )
        .replace("        rewards: {win: 1.0}\n", "")
    )
    result = runner.invoke(app, ["test", str(write(tmp_path, text))])
    assert result.exit_code == 1, result.output
    flat = " ".join(result.output.split())
    observation = re.search(r"observation 2: expected [^\n]*", flat)
    assert observation is not None, result.output
    assert "no sword here" not in observation.group(0).split("reward.win")[0]
    assert re.search(
        r"reward\.win: expected 0\.5, got 1\.0 \(turn 1 tool_error: [^)]*no sword", flat
    )


def test_a_turn_cut_at_max_response_tokens_is_named_as_the_cause(tmp_path: Path) -> None:
    text = SPEC.replace(
        "episode: {max_steps: 6,", "episode: {max_steps: 6, max_response_tokens: 2,"
    )
    assert "max_response_tokens: 2" in text
    result = runner.invoke(app, ["test", str(write(tmp_path, text))])
    assert result.exit_code == 1, result.output
    flat = " ".join(result.output.split())
    assert "(turn 1 was cut at episode.max_response_tokens (2)" in flat  # a scripted episode
    assert re.search(  # the oracle gate
        r"oracle gate \(4 samples\): samples \S+, \S+, \S+ and 1 more: turn 1 \(oracle entry 1\):"
        r" the turn is longer"
        r" than episode.max_response_tokens \(2 tokens\) and was cut there",
        flat,
    ), flat


def test_an_oracle_with_tool_errors_fails_at_the_oracle_turn(tmp_path: Path) -> None:
    text = SPEC.replace(
        '"take[key]"\n  - "go[middle]"', '"take[sword]"\n  - "take[key]"\n  - "go[middle]"'
    )
    path = write(tmp_path, text)
    result = runner.invoke(app, ["test", str(path)])
    assert result.exit_code == 1
    line = line_of(text, '"take[sword]"')
    assert re.search(
        rf"doors\.yaml:{line}:\d+: oracle gate .*tool error in take: no sword here", result.output
    )


def test_an_oracle_may_declare_the_tool_errors_it_means(tmp_path: Path) -> None:
    """The oracle gate refused every tool error, with no way to declare an intended one
    (an oracle that shows a guard refusing): `tests.oracle.tool_errors` names the tools."""
    text = SPEC.replace(
        '"take[key]"\n  - "go[middle]"', '"take[sword]"\n  - "take[key]"\n  - "go[middle]"'
    ).replace("oracle: {samples: 4}", "oracle: {samples: 4, tool_errors: [take]}")
    result = runner.invoke(app, ["test", str(write(tmp_path, text))])
    assert result.exit_code == 0, result.output
    other = text.replace("tool_errors: [take]", "tool_errors: [go]")
    assert runner.invoke(app, ["test", str(write(tmp_path, other))]).exit_code == 1


def test_a_failing_turn_after_an_each_entry_is_blamed_on_its_own_entry(tmp_path: Path) -> None:
    # Issue 26: turn 3 comes from the second entry (the `each` gives turns 1
    # and 2); it used to be blamed on the third entry, `take[key]`.
    text = SPEC.replace(
        '  - "go[{{ sample.key_room }}]"\n  - "take[key]"',
        "  - {each: \"['middle', sample.key_room]\", action: 'go[{{ item }}]'}\n"
        '  - "take[sword]"\n  - "take[key]"',
    )
    path = write(tmp_path, text)
    result = runner.invoke(app, ["test", str(path)])
    assert result.exit_code == 1
    line = line_of(text, '"take[sword]"')
    assert re.search(
        rf"doors\.yaml:{line}:\d+: oracle gate .*turn 3 \(oracle entry 2\): tool error in take",
        result.output,
    ), result.output


def test_a_failing_each_turn_names_its_item(tmp_path: Path) -> None:
    text = SPEC.replace(
        '  - "take[key]"', "  - {each: \"['sword', 'key']\", action: 'take[{{ item }}]'}"
    )
    result = runner.invoke(app, ["test", str(write(tmp_path, text))])
    assert result.exit_code == 1
    line = line_of(text, "action: 'take[{{ item }}]'")
    assert re.search(
        rf"doors\.yaml:{line}:\d+: oracle gate .*turn 2 \(oracle entry 2, item 1\): tool error",
        result.output,
    ), result.output


def test_an_oracle_that_does_not_succeed_fails(tmp_path: Path) -> None:
    # Never goes north: no tool error, but no episode succeeds.
    text = SPEC.replace('  - "go[north]"\ntests:', "tests:")
    path = write(tmp_path, text)
    result = runner.invoke(app, ["test", str(path)])
    assert result.exit_code == 1
    assert re.search(r"doors\.yaml:\d+:\d+: oracle gate .*did not succeed", result.output)
    assert "oracle success 0.000 is below 1.0" in result.output


def test_a_prompt_that_fails_to_render_is_blamed_on_the_prompt(tmp_path: Path) -> None:
    text = SPEC.replace("{{ sample.key_room }} room.", "{{ sample.key_room }} room {{ 1 // 0 }}.")
    path = write(tmp_path, text)
    result = runner.invoke(app, ["test", str(path)])
    assert result.exit_code == 1
    line = text.splitlines().index(next(r for r in text.splitlines() if r.startswith("prompt:")))
    assert f"doors.yaml:{line + 1}:" in result.output, result.output
    assert "PromptError: prompt.user: ZeroDivisionError" in result.output


def test_github_format_annotates_the_failing_line(tmp_path: Path) -> None:
    text = SPEC.replace("rewards: {win: 1.0}", "rewards: {win: 0.5}")
    path = write(tmp_path, text)
    result = runner.invoke(app, ["test", "--format", "github", str(path)])
    assert result.exit_code == 1
    line = line_of(text, "rewards: {win: 0.5}")
    assert re.search(
        rf"^::error file=[^,]+doors\.yaml,line={line},col=\d+,endLine=\d+,endColumn=\d+,title=agentspec test::episodes\[0\] .*reward\.win: expected 0\.5, got 1\.0$",
        result.output,
        re.MULTILINE,
    )


def test_json_format_is_one_document_of_cases(tmp_path: Path) -> None:
    text = SPEC.replace("rewards: {win: 1.0}", "rewards: {win: 0.5}")
    failing = write(tmp_path, text)
    invalid = tmp_path / "invalid.yaml"
    invalid.write_text(SPEC.replace("state.has_key = True", "state.has_keys = True"))
    result = runner.invoke(app, ["test", "--format", "json", str(failing), str(invalid)])
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["failed"] == 2 and document["passed"] >= 1
    wrong = next(c for c in document["cases"] if c["failures"] and c["name"] != "validate")
    assert wrong["status"] == "failed" and wrong["name"].startswith("episodes[0]")
    (failure,) = wrong["failures"]
    assert failure["line"] == line_of(text, "rewards: {win: 0.5}")
    assert "reward.win: expected 0.5, got 1.0" in failure["message"]
    validate = next(c for c in document["cases"] if c["name"] == "validate")
    assert validate["spec"] == str(invalid)
    assert "E402" in [d["code"] for d in validate["failures"]]
    (tmp_path / "ok").mkdir()
    passing = runner.invoke(app, ["test", "-f", "json", str(write(tmp_path / "ok", SPEC))])
    assert passing.exit_code == 0 and json.loads(passing.stdout)["failed"] == 0


def test_an_invalid_spec_fails_with_its_diagnostics(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC.replace("state.has_key = True", "state.has_keys = True"))
    result = runner.invoke(app, ["test", str(path)])
    assert result.exit_code == 1
    assert "E402" in result.output


def test_turns_must_cover_the_episode(tmp_path: Path) -> None:
    text = SPEC.replace(
        'turns: ["go[west]", "take[key]", "go[middle]", "go[north]"]', 'turns: ["go[west]"]'
    )
    result = runner.invoke(app, ["test", "--no-oracle", str(write(tmp_path, text))])
    assert result.exit_code == 1
    assert "went on after the 1 scripted turns" in result.output


BUDGET = """\
agentspec: 1
name: shop
data: {source: generator:keys_and_doors, fields: {key_room: str}}
prompt: {user: "Buy things."}
constants: {budget: 5}
state:
  spent: {type: int}
tools:
  buy:
    description: Buy something.
    parameters: {price: {type: string, pattern: "^[0-9]$"}}
    when:
      - let price = int(args.price)
      - if: state.spent + price <= constants.budget
        message: "Over budget: {{ constants.budget - state.spent }} left."
    effect: ["state.spent += int(args.price)"]
    observe: "Spent {{ state.spent }} of {{ constants.budget }} by step {{ step.max_steps }}."
episode: {max_steps: 6, tool_format: bracket, final_answer: continue}
rewards:
  spent: {on: final, value: "state.spent"}
tests:
  episodes:
    - name: a smaller budget, for this episode only
      constants: {budget: 2}
      max_steps: 2
      turns: ["buy[1]", "buy[2]"]
      expect:
        observations: ["Observation: Spent 1 of 2 by step 2.", "Observation: Error: Over budget: 1 left."]
        state: {spent: 1}
        ending: max_steps
        steps: 2
    - name: the spec's own budget and step limit
      turns: ["buy[1]", "buy[2]", "buy[2]", "buy[1]", "buy[1]", "buy[1]"]
      expect:
        observations: ["Observation: Spent 1 of 5 by step 6."]
        state: {spent: 5}
        ending: max_steps
        steps: 6
        tool_errors: 3
"""


def test_a_scripted_episode_overrides_max_steps_and_constants(tmp_path: Path) -> None:
    # Issue 26: a budget rule is tested with its own budget and step limit.
    path = tmp_path / "shop.yaml"
    path.write_text(BUDGET, encoding="utf-8")
    result = runner.invoke(app, ["test", "--no-oracle", str(path)])
    assert result.exit_code == 0, result.output
    assert "2 passed" in result.output


@pytest.mark.parametrize(
    "change",
    [
        ("constants: {budget: 2}", "constants: {budgt: 2}"),
        ("constants: {budget: 2}", "constants: {budget: two}"),
        ("max_steps: 2\n", "max_steps: 0\n"),
    ],
)
def test_overrides_are_checked_by_validate(tmp_path: Path, change: tuple[str, str]) -> None:
    path = tmp_path / "shop.yaml"
    path.write_text(BUDGET.replace(*change), encoding="utf-8")
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 1
    line = line_of(BUDGET.replace(*change), change[1].strip())
    assert re.search(rf"shop\.yaml:{line}:\d+: error\[(E414|E508|E204|E203)\]", result.output), (
        result.output
    )


def test_a_sample_index_past_the_data_fails_at_its_line(tmp_path: Path) -> None:
    """`agentspec test` loads only the samples a test needs; an index past the data still
    says how many there are."""
    (tmp_path / "rooms.jsonl").write_text(
        "".join(f'{{"id": "{i}", "key_room": "west"}}\n' for i in range(3)), encoding="utf-8"
    )
    played = SPEC.replace("source: generator:keys_and_doors", "source: jsonl:rooms.jsonl")
    text = played.replace("      sample: {id: a, key_room: west}\n", "      sample_index: 2\n")
    assert (
        write(tmp_path, text)
        and runner.invoke(app, ["test", str(tmp_path / "doors.yaml")]).exit_code == 0
    )
    text = played.replace("      sample: {id: a, key_room: west}\n", "      sample_index: 5\n")
    result = runner.invoke(app, ["test", str(write(tmp_path, text))])
    assert result.exit_code == 1
    line = line_of(text, "sample_index: 5")
    assert f"doors.yaml:{line}:" in result.output
    assert "sample_index 5 is past the data's 3 samples" in result.output


def test_a_sample_index_counts_only_the_samples_data_limit_keeps(tmp_path: Path) -> None:
    # reference.md, data.limit: "Use at most this many samples" — index 4 played row 4
    (tmp_path / "rooms.jsonl").write_text(
        "".join(f'{{"id": "{i}", "key_room": "west"}}\n' for i in range(6)), encoding="utf-8"
    )
    limited = SPEC.replace(
        "data: {source: generator:keys_and_doors,", "data: {source: jsonl:rooms.jsonl, limit: 3,"
    )
    text = limited.replace("      sample: {id: a, key_room: west}\n", "      sample_index: 4\n")
    result = runner.invoke(app, ["test", str(write(tmp_path, text))])
    assert result.exit_code == 1
    assert "sample_index 4 is past the data's 3 samples" in result.output


NAMES = """\
agentspec: 1
name: names
prompt: {user: hi}
state: {class: {type: int}, class_: {type: int}, list: {type: "list[str]"}}
tools:
  spec:
    description: d
    parameters: {from: {type: integer}}
    effect: ["state.class = args.from", "state.class_ += 1", "state.list = state.list + ['x']"]
rewards: {r: {on: final, value: "float(state.class + state.class_)"}}
tests:
  episodes:
    - name: keywords keep their spec names
      sample: {}
      turns: ['<tool_call>{"name": "spec", "arguments": {"from": 3}}</tool_call>', ok]
      expect: {state: {class: 3, class_: 1, list: [x]}, rewards: {r: 4.0}}
"""


def test_expect_state_reads_the_specs_names_of_renamed_fields(tmp_path: Path) -> None:
    # the generated state renames `class` to `class_` (and `class_` to `class__`):
    # `expect.state` is written in the spec's names
    result = runner.invoke(app, ["test", str(write(tmp_path, NAMES))])
    assert result.exit_code == 0, result.output


def test_a_script_that_runs_out_is_not_replayed(tmp_path: Path) -> None:
    # one `spec` call, then an empty answer (the final one): `class_` is 1, not one
    # per step of a replayed call; the extra step is the test's one failure
    text = NAMES.replace(", ok]", "]").replace("rewards: {r: 4.0}", "steps: 2")
    result = runner.invoke(app, ["test", str(write(tmp_path, text))])
    assert result.exit_code == 1, result.output
    assert "went on after the 1 scripted turns (ended done after 2 steps" in result.output
    assert "state." not in result.output and "1 failed" in result.output


def test_a_crashed_episode_fails_with_its_cause(tmp_path: Path) -> None:
    (tmp_path / "broken_context.py").write_text("def view_of(view):\n    return view.task\n")
    text = NAMES.replace(
        "rewards: {r:",
        "context: {policy: custom, custom: 'broken_context:view_of'}\nrewards: {r:",
        1,
    )
    text = text.replace(
        "expect: {state: {class: 3, class_: 1, list: [x]}, rewards: {r: 4.0}}", "expect: {}"
    )
    result = runner.invoke(app, ["test", str(write(tmp_path, text))])
    assert result.exit_code == 1, result.output
    assert "ended with an environment error after 0 steps" in result.output
    assert "AttributeError" in result.output


def test_a_wrong_reward_names_the_expression_error_behind_it(tmp_path: Path) -> None:
    text = NAMES.replace(
        'value: "float(state.class + state.class_)"', 'value: "1.0 / (len(state.list) - 1)"'
    )
    text = text.replace("rewards: {r: 4.0}", "rewards: {r: 1.0}")
    result = runner.invoke(app, ["test", str(write(tmp_path, text))])
    assert result.exit_code == 1, result.output
    assert re.search(
        r"reward\.r: expected 1\.0, got 0\.0 \(turn \d+ expression error: .*ZeroDivisionError",
        result.output,
    ), result.output


def test_unreadable_data_is_blamed_on_the_data_source(tmp_path: Path) -> None:
    # validate reads the first row; the loader finds row 2 broken when the gate plays it
    (tmp_path / "rows.jsonl").write_text('{"q": "a"}\n{"q": "b",,}\n', encoding="utf-8")
    text = """\
agentspec: 1
name: rows
data: {source: "jsonl:rows.jsonl", fields: {q: str}}
prompt: {user: "{{ sample.q }}"}
rewards: {r: {on: final, value: "1.0 if action.text == sample.q else 0.0"}}
oracle: ["{{ sample.q }}"]
"""
    result = runner.invoke(app, ["test", str(write(tmp_path, text))])
    assert result.exit_code == 1, result.output
    assert re.search(r"doors\.yaml:3:\d+: oracle gate .*DataError: .*rows\.jsonl:2", result.output)


def test_an_oracle_whose_prompt_does_not_fit_fails_at_the_budget(tmp_path: Path) -> None:
    text = SPEC.replace(
        "rewards:\n", "context: {max_prompt_tokens: 16, overflow: truncate}\nrewards:\n", 1
    )
    result = runner.invoke(app, ["test", str(write(tmp_path, text))])
    assert result.exit_code == 1, result.output
    line = line_of(text, "max_prompt_tokens: 16")
    assert re.search(
        rf"doors\.yaml:{line}:\d+: oracle gate .*ended after 0 steps: its first prompt did not fit",
        result.output,
    ), result.output


def test_the_documented_custom_context_runs(tmp_path: Path) -> None:
    # docs/episodes.md's example policy, taken from the page: the task and the last two exchanges
    page = (ROOT / "docs" / "episodes.md").read_text(encoding="utf-8")
    section = page.split("## Your own context policy", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "my_context.py").write_text(code, encoding="utf-8")
    call = '<tool_call>{"name": "inc", "arguments": {}}</tool_call>'
    spec = f"""\
agentspec: 1
name: counter
prompt: {{user: "Count to three."}}
state: {{n: {{type: int}}}}
tools:
  inc: {{description: Add one., effect: ["state.n += 1"], observe: "n is {{{{ state.n }}}}"}}
context: {{policy: custom, custom: "my_context:prompt"}}
rewards: {{r: {{on: final, value: "1.0 if state.n == 3 else 0.0"}}}}
tests:
  episodes:
    - name: three increments
      sample: {{}}
      turns: ['{call}', '{call}', '{call}', done]
      expect: {{state: {{n: 3}}, rewards: {{r: 1.0}}, steps: 4}}
"""
    result = runner.invoke(app, ["test", str(write(tmp_path, spec))])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("room", ["east", "west"])
def test_an_oracle_turn_that_fails_on_a_sample_is_said_at_its_entry(
    tmp_path: Path, room: str
) -> None:
    """The oracle's third turn fails to render on samples whose key is in `room`: those
    samples fail at that entry's line, with the template's error (the episode ends with
    `policy_error`; it used to end the whole `agentspec test`)."""
    entry = f"  - \"{{{{ ['go[middle]'][(sample.key_room == '{room}') | int] }}}}\""
    text = SPEC.replace('  - "go[middle]"', entry)
    path = write(tmp_path, text)
    result = runner.invoke(app, ["test", str(path)])
    assert result.exit_code == 1, result.output
    line = line_of(text, "['go[middle]']")
    assert re.search(
        rf"doors\.yaml:{line}:\d+: oracle gate .*turn 3: the oracle's turn could not be made:"
        rf" oracle for sample .*doors\.yaml:{line}: UndefinedError",
        result.output,
    ), result.output
