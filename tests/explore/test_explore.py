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
from agentspec.runtime.spec.explore.driver import Driver
from agentspec.runtime.spec.explore.explorer import ExploreError, ExploreSettings, explore
from agentspec.runtime.spec.explore.report import diagnostic, witness_entry
from agentspec.runtime.spec.tests import SpecTestRunner

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
