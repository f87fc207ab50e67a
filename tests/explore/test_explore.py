"""`agentspec explore`: every planted loophole of tests/specs/loopholes is found at
its line, the clean spec reports nothing, witnesses replay as `tests:` entries,
the search is deterministic for a seed, and the CLI's formats and exit codes."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from agentspec.cli import app
from agentspec.runtime.commands.explore.driver import Driver
from agentspec.runtime.commands.explore.explorer import ExploreError, ExploreSettings, explore
from agentspec.runtime.commands.explore.report import diagnostic, witness_entry
from agentspec.runtime.commands.tests import SpecTestRunner

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "specs" / "loopholes"
PLANTED = sorted(p for p in CORPUS.glob("*.yaml") if p.stem != "clean")
runner = CliRunner()


def planted(path: Path) -> list[tuple[int, str]]:
    """(line, code) of each `# planted: CODE` comment."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [
        (i + 1, m.group(1))
        for i, line in enumerate(lines)
        if (m := re.search(r"# planted: (\w+)", line))
    ]


def found(path: Path, settings: ExploreSettings | None = None) -> list[tuple[int, str]]:
    # only the episode budget stops these searches: a loaded machine gets all it needs
    report = explore(path, settings or ExploreSettings(seconds=600.0))
    return [(diagnostic(report, f).span.line, f.code) for f in report.findings]


def test_the_corpus_plants_at_least_twelve_loopholes() -> None:
    assert len(PLANTED) >= 12
    assert all(planted(p) for p in PLANTED)


@pytest.mark.slow
@pytest.mark.parametrize("path", PLANTED, ids=lambda p: p.stem)
def test_every_planted_loophole_is_found_at_its_line(path: Path) -> None:
    got = found(path)
    for line_and_code in planted(path):
        assert line_and_code in got, f"{path.name}: {line_and_code} not in {got}"


def test_a_farmable_step_reward_is_found_at_its_line() -> None:
    path = CORPUS / "farm_step_reward.yaml"
    assert set(planted(path)) <= set(found(path))


def test_the_clean_spec_reports_nothing() -> None:
    assert found(CORPUS / "clean.yaml") == []


def test_a_number_inside_a_shown_number_was_not_shown() -> None:
    """The code 7 is no loophole where the prompt shows only 17 and 70."""
    assert found(Path(__file__).parent / "numbers_inside_numbers.yaml") == []


def test_a_guard_that_allows_ten_calls_is_seen_to_refuse_the_eleventh() -> None:
    """Random actions rarely call one tool eleven times in a row: the budget guard was
    reported as never refusing (W112) and its penalty as never paid (W113)."""
    assert found(Path(__file__).parent / "budget_guard.yaml") == []


def test_a_guard_nothing_probed_is_not_said_to_never_refuse(tmp_path: Path) -> None:
    """Without an oracle the search plays random actions only, and they call a tool
    only where its guard passes: W112 was reported about a guard never tested."""
    text = (CORPUS / "guard_never_fails.yaml").read_text(encoding="utf-8")
    spec = tmp_path / "no_oracle.yaml"
    spec.write_text(text.split("oracle:")[0], encoding="utf-8")
    (tmp_path / "quiz.jsonl").write_text((CORPUS / "quiz.jsonl").read_text(encoding="utf-8"))
    assert "W112" not in {code for _, code in found(spec)}
    assert "W112" in {code for _, code in found(CORPUS / "guard_never_fails.yaml")}


def test_a_success_reward_seen_only_at_wins_does_not_always_fire(tmp_path: Path) -> None:
    """The environment starter's `1.0 if env.won else 0.0`: every ending the search saw
    was a win (losing takes three wrong codes), which shows nothing about the reward."""
    result = runner.invoke(
        app, ["init", "game", "--template", "environment", "--dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert found(tmp_path / "game.yaml") == []


def test_turns_that_repetition_displaces_are_not_farming() -> None:
    """Repeating a turn leaves fewer parse errors after the script ends: the episode's
    penalty shrinks, but the repeated turn itself earns nothing more."""
    assert found(Path(__file__).parent / "paid_once_react.yaml") == []


def test_the_random_baseline_does_not_know_the_oracles_arguments(tmp_path: Path) -> None:
    """The oracle calls `check(word=ANSWER)`; random actions drawing from its arguments
    answered right 43 % of the time. The baseline draws from what the prompt showed."""
    spec = Path(__file__).parent / "answer_in_oracle_call.yaml"
    args = ["run", str(spec), "--policy", "random", "-n", "30", "--out", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = (tmp_path / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == 30 and not any(json.loads(line)["success"] for line in lines)
    assert explore(spec, ExploreSettings(seconds=600.0)).random_success == 0.0


def test_witnesses_replay_as_tests_entries() -> None:
    """Each witness, played by `agentspec test`'s runner, gives what it says."""
    path = CORPUS / "reward_on_guard_failure.yaml"
    report = explore(path)
    entries = [witness_entry(f) for f in report.findings if f.witness is not None]
    assert entries
    test_runner = SpecTestRunner(path, None, 0)
    from agentspec.spec.testing import SpecTest

    for entry in entries:
        assert entry is not None
        case = test_runner.scripted(0, SpecTest.model_validate(entry))
        assert case.passed, [f.message for f in case.failures]


def test_the_search_is_deterministic_for_a_seed() -> None:
    settings = ExploreSettings(samples=3, episodes=150, seconds=60, seed=7)
    path = CORPUS / "contains_all_options.yaml"
    first, second = explore(path, settings), explore(path, settings)
    assert [witness_entry(f) for f in first.findings] == [witness_entry(f) for f in second.findings]
    assert first.episodes == second.episodes <= 150


def test_cli_exit_codes_and_formats() -> None:
    clean = runner.invoke(app, ["explore", str(CORPUS / "clean.yaml")])
    assert clean.exit_code == 0, clean.output
    assert "0 loophole(s), 0 warning(s)" in clean.output
    hacked = runner.invoke(
        app, ["explore", str(CORPUS / "farm_step_reward.yaml"), "--format", "json"]
    )
    assert hacked.exit_code == 1
    record = json.loads(hacked.output)
    (farm,) = [f for f in record["findings"] if f["code"] == "X105"]
    assert farm["line"] == 22 and farm["witness"]["turns"]
    github = runner.invoke(app, ["explore", str(CORPUS / "farm_step_reward.yaml"), "-f", "github"])
    assert github.output.startswith("::error file=") and "title=X105" in github.output


def test_warnings_fail_only_with_strict() -> None:
    path = str(CORPUS / "guard_never_fails.yaml")
    assert runner.invoke(app, ["explore", path]).exit_code == 0
    assert runner.invoke(app, ["explore", path, "--strict"]).exit_code == 1


def test_the_text_report_writes_the_witness_as_yaml() -> None:
    result = runner.invoke(app, ["explore", str(CORPUS / "no_ending.yaml")])
    assert result.exit_code == 1
    assert "error[X106]" in result.output
    block = result.output.split("as a `tests:` entry:\n", 1)[1].split("\n\n", 1)[0]
    (entry,) = yaml.safe_load(block)
    assert entry["expect"]["ending"] != "done" and entry["turns"]


def test_an_invalid_spec_is_reported_not_raised(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "agentspec: 1\nname: bad\nprompt: {user: hi}\nrewards: {r: {on: final, value: state.nope}}\n"
    )
    result = runner.invoke(app, ["explore", str(bad)])
    assert result.exit_code == 1 and "E40" in result.output


@pytest.mark.parametrize(("name", "exit_code"), [("clean", 0), ("farm_step_reward", 1)])
def test_agentspec_test_runs_explore_when_the_spec_asks(
    tmp_path: Path, name: str, exit_code: int
) -> None:
    (tmp_path / "quiz.jsonl").write_text((CORPUS / "quiz.jsonl").read_text())
    spec = tmp_path / f"{name}.yaml"
    text = (CORPUS / f"{name}.yaml").read_text()
    spec.write_text(text + "tests:\n  oracle: {samples: 4}\n  explore: {samples: 4, budget: 300}\n")
    result = runner.invoke(app, ["test", str(spec)])
    assert result.exit_code == exit_code, result.output
    assert "explore (" in result.output
    if exit_code:
        assert f"{spec}:22:" in result.output and "X105" in result.output


def test_a_search_that_played_nothing_is_no_pass(tmp_path: Path) -> None:
    # the budget ran out while the samples were prepared: "nothing found" would be a lie
    (tmp_path / "quiz.jsonl").write_text((CORPUS / "quiz.jsonl").read_text())
    spec = tmp_path / "clean.yaml"
    gate = "tests:\n  oracle: {samples: 4}\n  explore: {samples: 4, seconds: 0.001}\n"
    spec.write_text((CORPUS / "clean.yaml").read_text() + gate)
    with pytest.raises(ExploreError, match="no episode was played within the time budget"):
        explore(spec, ExploreSettings(samples=4, seconds=0.001))
    result = runner.invoke(app, ["test", str(spec)])
    assert result.exit_code == 1, result.output
    assert "no episode was played" in result.output and f"{spec}:" in result.output


def test_a_penalty_under_a_negative_weight_is_not_a_farm(tmp_path: Path) -> None:
    # the same per-call component, weighted -1: a cost per lookup, which repetition
    # only makes worse for the agent; X105 reads what a step paid after its weight
    text = (CORPUS / "farm_tool_reward.yaml").read_text(encoding="utf-8")
    text = text.replace("value: 0.3}  # planted: X105", "value: 0.3, weight: -1.0}")
    assert "weight: -1.0" in text
    spec = tmp_path / "lookup_cost.yaml"
    spec.write_text(text, encoding="utf-8")
    (tmp_path / "quiz.jsonl").write_text((CORPUS / "quiz.jsonl").read_text(encoding="utf-8"))
    assert "X105" not in {code for _, code in found(spec)}


def test_the_random_baseline_is_reported_when_the_search_spends_the_budget() -> None:
    # keys_and_chests' mutations take the whole budget: random actions came too late
    report = explore(
        ROOT / "specs" / "keys_and_chests.yaml", ExploreSettings(episodes=200, seconds=600.0)
    )
    assert report.random_success is not None
    assert report.episodes <= 200 + ExploreSettings().samples


def test_the_random_baseline_is_reported_when_time_stops_the_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The clock runs out right after the first round (the oracle's), whatever the
    # machine's speed: a real 1 s budget could end before any episode on a cold cache.
    play = Driver.play

    def play_then_time_is_up(self: Driver, jobs: Any) -> Any:
        done = play(self, jobs)
        self.deadline = min(self.deadline, time.monotonic())
        return done

    monkeypatch.setattr(Driver, "play", play_then_time_is_up)
    report = explore(ROOT / "specs" / "gridworld.yaml", ExploreSettings(seconds=600.0))
    assert report.stopped_by_time and report.random_success is not None


# ------------------------------------------- issue 49: a search guided by the spec

HERE = Path(__file__).parent


def codes(path: Path, settings: ExploreSettings | None = None) -> dict[str, Any]:
    """Each finding by its code (the last of a code wins)."""
    report = explore(path, settings or ExploreSettings(seconds=600.0))
    return {f.code: f for f in report.findings}


def test_a_multiple_choice_guess_is_a_warning_with_its_rate_not_a_loophole() -> None:
    """The oracle's answer without its lookup is one of the four options on screen:
    X102 was raised on every multiple-choice task. The best strategy a model could
    learn without the tool wins one time in four, as a guess does: W102, with the rate,
    the oracle's and chance."""
    found = codes(HERE / "multiple_choice.yaml")
    assert not [c for c in found if c.startswith("X")], found
    guess = found["W102"]
    assert guess.evidence["chance"] == 0.25 and guess.evidence["rate"] == 0.25
    assert (
        guess.evidence["oracle_rate"] == 1.0 and guess.evidence["rate"] < guess.evidence["needed"]
    )
    assert "succeeds on 2 of 8 samples (0.25; the oracle 1.00, chance 1/4)" in guess.message


def test_a_keyword_answer_is_a_loophole_with_its_rate() -> None:
    """Saying "cancelled" without the tool succeeds on every sample: X102, at the
    success line, with the strategy, its rate and the oracle's."""
    found = codes(CORPUS / "keyword_without_tool.yaml")
    skipped = found["X102"]
    assert skipped.evidence["rate"] == 1.0 and skipped.evidence["played"] == 6
    assert "'cancelled'" in skipped.evidence["strategy"]
    assert skipped.witness is not None and skipped.witness.steps == 1


@pytest.mark.parametrize("with_tests", [True, False], ids=["with its tests", "without"])
def test_a_budget_guard_is_not_said_to_never_refuse(tmp_path: Path, with_tests: bool) -> None:
    """The allowance (250 pages, a constant the prompt does not show) is past every
    number the search drew: W112 and W113 were reported although the spec's own tests
    show the guard refusing. The tests are played as probes, and the guard probe asks
    the guard about the allowance ±1 at each state, so a refusal is played either way."""
    spec = HERE / "print_budget.yaml"
    if not with_tests:
        text = spec.read_text(encoding="utf-8").split("tests:")[0]
        spec = tmp_path / "print_budget.yaml"
        spec.write_text(text, encoding="utf-8")
        (tmp_path / "print_jobs.jsonl").write_text(
            (HERE / "print_jobs.jsonl").read_text(encoding="utf-8"), encoding="utf-8"
        )
    report = explore(spec, ExploreSettings(seconds=600.0))
    assert report.findings == []
    refusals = [
        e.origin
        for e in report_episodes(spec)
        for s in e.trajectory.steps
        for ev in s.events
        if ev.kind == "tool_error" and ev.code == "guard"
    ]
    assert refusals


def report_episodes(path: Path) -> list[Any]:
    """The episodes an exploration played (the detectors' input)."""
    from agentspec.runtime.commands.explore import explorer as module

    kept: list[Any] = []
    detect = module.detect

    def spy(played: Any, facts: Any) -> Any:
        kept.extend(played)
        return detect(played, facts)

    module.detect = spy
    try:
        explore(path, ExploreSettings(seconds=600.0))
    finally:
        module.detect = detect
    return kept


def test_a_guard_that_never_fails_states_its_coverage() -> None:
    """W112 says what the guard probe tried: the argument up to the schema's maximum,
    and the comparison seen true every time, never false."""
    (w112,) = [f for f in explore(CORPUS / "guard_past_schema.yaml").findings if f.code == "W112"]
    assert "from 1 to 200" in w112.message and "maximum 200" in w112.message
    assert "false 0" in w112.message and w112.evidence["refused"] == 0
    assert w112.evidence["states"] > 0


def test_hints_do_not_advise_removing_what_the_specs_tests_exercise(tmp_path: Path) -> None:
    text = (CORPUS / "guard_past_schema.yaml").read_text(encoding="utf-8")
    test = (
        "tests:\n  episodes:\n    - name: a hint is bought\n      turns:\n"
        '        - \'<tool_call>{"name": "buy", "arguments": {"credits": 5}}</tool_call>\'\n'
        "        - <answer>blue</answer>\n      expect: {success: true}\n"
    )
    spec = tmp_path / "tested.yaml"
    spec.write_text(text + test, encoding="utf-8")
    (tmp_path / "quiz.jsonl").write_text((CORPUS / "quiz.jsonl").read_text(encoding="utf-8"))
    (w112,) = [f for f in explore(spec).findings if f.code == "W112"]
    assert "remove" not in w112.hint and "tests call" in w112.hint
    (untested,) = [
        f for f in explore(CORPUS / "guard_past_schema.yaml").findings if f.code == "W112"
    ]
    assert "remove" in untested.hint


def test_a_never_holding_done_when_is_located_at_it() -> None:
    """X106 was located at `final_answer: continue`, suggesting the `done_when` the
    spec already has; it points at the `done_when` and says it never held."""
    (x106,) = [f for f in explore(CORPUS / "done_when_never.yaml").findings if f.code == "X106"]
    assert x106.path == ("episode", "done_when") and "never held" in x106.message
    assert "done_when`, or `final_answer" not in x106.hint


def test_a_prompt_over_its_budget_is_its_own_finding() -> None:
    found = codes(CORPUS / "over_budget.yaml", ExploreSettings(episodes=60, seconds=600.0))
    assert set(found) == {"X107"}
    assert found["X107"].path == ("context", "max_prompt_tokens")


def test_random_calls_satisfy_their_schema(tmp_path: Path) -> None:
    """`pattern: ^[1-6]{4}$`, a range, an enum and string lengths: every call the random
    policy writes is valid (35 % of its calls were tool errors on such a spec)."""
    spec = HERE / "schema_args.yaml"
    args = ["run", str(spec), "--policy", "random", "-n", "30", "--out", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    calls = errors = 0
    for line in (tmp_path / "trajectories.jsonl").read_text().splitlines():
        for step in json.loads(line)["steps"]:
            for event in step.get("events", []):
                calls += event.get("kind") in ("tool", "tool_error")
                errors += event.get("kind") == "tool_error"
    assert calls >= 20 and errors == 0


def test_another_entitys_call_inserted_into_the_oracle_keeps_the_reward() -> None:
    """Cancelling the guest's other booking too keeps a reward that reads only the
    requested one: the search inserts calls on other entities before the oracle's
    last turn."""
    (x101,) = [f for f in explore(CORPUS / "other_entity.yaml").findings if f.code == "X101"]
    assert x101.witness is not None and "another entity" in x101.witness.strategy
    assert x101.evidence["rate"] == 1.0


def test_a_free_closing_message_is_no_other_answer_where_the_answer_is_an_argument() -> None:
    """The checks read the code `file` stored, not the closing message: answering ''
    after the oracle's calls differs from the oracle's message and succeeds, and is
    no X103 (it was, on airline_service, once answers in arguments were searched)."""
    assert found(HERE / "stored_exactly.yaml") == []


def test_a_reply_listing_every_id_passes_a_contains_check_on_the_stored_reply() -> None:
    got = found(CORPUS / "contains_in_reply.yaml")
    assert planted(CORPUS / "contains_in_reply.yaml")[0] in got


def test_a_length_guard_is_asked_about_a_string_just_past_its_length() -> None:
    """`len(args.text) <= 80`: no drawn string was longer, and W112 was reported."""
    assert found(HERE / "length_guard.yaml") == []


def test_an_argument_filed_again_or_overwritten_is_judged_as_it_ended() -> None:
    """`file(reference=…)` stored in state, compared exactly: filing a wrong word and
    then the right reference, or the right one twice, ends with the sample's answer —
    the same answer, not another (X103 was reported comparing the calls' arguments)."""
    assert found(HERE / "stored_twice.yaml") == []
