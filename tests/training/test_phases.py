"""What `agentspec train` says before and between its RL iterations.

Loading the model, behaviour cloning and the first evaluation each announce
themselves and advance on the progress bar; the first step of a long phase
gives its expected time, as a warning at the setting that sized it when long.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app
from agentspec.runtime.backends.local.progress import Reporter, duration

ECHO = Path(__file__).parent / "echo_word.yaml"


@pytest.fixture(autouse=True)
def private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTSPEC_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


class Heard:
    """A sink that keeps what it hears."""

    def __init__(self) -> None:
        self.events: list[tuple[str, ...]] = []

    def phase(self, name: str, total: int | None) -> None:
        self.events.append(("phase", name, str(total)))

    def advance(self, done: int, detail: str) -> None:
        self.events.append(("advance", str(done), detail))

    def note(self, text: str) -> None:
        self.events.append(("note", text))


def test_train_announces_each_phase_before_the_iterations(tmp_path: Path) -> None:
    settings = {
        "warm_start": 3,
        "warm_start_samples": 8,
        "iterations": 1,
        "eval_samples": 2,
        "trace_samples": 1,
        "torch_threads": 1,
    }
    sets = [arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")]
    result = CliRunner().invoke(app, ["train", str(ECHO), *sets, "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    announced = [
        "loading builtin:tiny",
        "behaviour cloning: the oracle plays 8 samples",
        "behaviour cloning: 3 steps of 8 oracle episodes, lr 0.003",
        "evaluating on 2 held-out samples",
        "training: 1 iteration",
    ]
    assert [line for line in lines if line in announced] == announced
    assert "Traceback" not in result.output
    # iteration 0's row keeps what cloning did: its loss fell, on the 8 oracle episodes
    first = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])
    assert first["iteration"] == 0 and first["warm_start/episodes"] == 8
    assert 0 < first["warm_start/loss_last"] < first["warm_start/loss_first"]


def test_the_first_step_gives_the_phase_its_expected_time() -> None:
    heard = Heard()
    reporter = Reporter(heard, {"warm_start": "specs/calculator.yaml:46:15"})
    reporter.pace("behaviour cloning", "step", 31.0, 60, "warm_start")
    reporter.pace("behaviour cloning", "step", 0.05, 2000, "warm_start")
    reporter.pace("training", "iteration", 2.0, 30, "iterations")  # not set by the user
    reporter.pace("training", "iteration", 0.01, 30, "iterations")  # too quick to mention
    assert heard.events == [
        (
            "note",
            "specs/calculator.yaml:46:15: warning: training.warm_start is 60: behaviour "
            "cloning: 31 s per step (the first): about 31 min for 60 steps",
        ),
        ("note", "behaviour cloning: 0.1 s per step (the first): about 2 min for 2000 steps"),
        ("note", "training: 2.0 s per iteration (the first): about 60 s for 30 iterations"),
    ]
    Reporter().pace("training", "iteration", 100.0, 30, "iterations")  # no sink: silent


def test_durations_read_like_a_person_would_say_them() -> None:
    assert [duration(s) for s in (0.42, 31, 600, 7500)] == ["0.4 s", "31 s", "10 min", "2 h 5 min"]


def test_behaviour_cloning_says_which_oracle_episodes_it_leaves_out(tmp_path: Path) -> None:
    """An oracle turn that fails on some samples (words of even length) ends those episodes
    (`policy_error`): cloning goes on with the others and says how many it left out, and
    why (it used to stop the run at the first such sample)."""
    spec = tmp_path / "echo.yaml"
    text = ECHO.read_text()
    oracle = '- "<answer>{{ sample.word }}</answer>"'
    assert oracle in text
    spec.write_text(
        text.replace(
            oracle, '- "<answer>{{ [sample.word][((sample.word | length) + 1) % 2] }}</answer>"'
        )
    )
    (tmp_path / "data").symlink_to(ECHO.parent / "data")
    settings = {"warm_start": 2, "warm_start_samples": 8, "iterations": 1, "eval_samples": 2}
    sets = [arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")]
    result = CliRunner().invoke(app, ["train", str(spec), *sets, "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    said = [line for line in result.stderr.splitlines() if "are not cloned" in line]
    assert len(said) == 1 and "ended `policy_error`); e.g. oracle for sample" in said[0], said
    assert "UndefinedError: list object has no element 1" in said[0]
