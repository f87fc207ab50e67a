from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app
from agentspec.runtime.episode.trajectory import read_jsonl

ROOT = Path(__file__).resolve().parents[2]
CALCULATOR = ROOT / "specs" / "calculator.yaml"
runner = CliRunner()


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSPEC_CACHE", str(tmp_path / "cache"))


def test_compile_writes_module_and_manifest(tmp_path: Path) -> None:
    result = runner.invoke(app, ["compile", str(CALCULATOR), "-o", str(tmp_path / "build")])
    assert result.exit_code == 0, result.output
    assert "calculator_spec.py" in result.output and "manifest.json" in result.output
    manifest = json.loads((tmp_path / "build" / "manifest.json").read_text())
    assert manifest["classes"]["flow"] == "CalculatorFlow"


def test_compile_reports_an_invalid_spec(tmp_path: Path) -> None:
    bad = ROOT / "tests" / "specs" / "invalid" / "name_unknown_state.yaml"
    result = runner.invoke(app, ["compile", str(bad), "-o", str(tmp_path)])
    assert result.exit_code == 1
    assert "error[E402]" in result.output and "Traceback" not in result.output


def test_run_oracle_succeeds_and_random_fails(tmp_path: Path) -> None:
    out = tmp_path / "oracle"
    result = runner.invoke(
        app, ["run", str(CALCULATOR), "--policy", "oracle", "-n", "100", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    trajectories = list(read_jsonl(out / "trajectories.jsonl"))
    assert len(trajectories) == 100
    assert all(t.success for t in trajectories)
    assert "success rate" in result.output and "1.000" in result.output

    out = tmp_path / "random"
    result = runner.invoke(
        app, ["run", str(CALCULATOR), "--policy", "random", "-n", "30", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    trajectories = list(read_jsonl(out / "trajectories.jsonl"))
    assert sum(bool(t.success) for t in trajectories) <= 1


def test_run_scripted_policy_file(tmp_path: Path) -> None:
    script = tmp_path / "script.txt"
    script.write_text(
        '<tool_call>{"name": "calculator", "arguments": {"expression": "1+1"}}</tool_call>\n<answer>2</answer>\n'
    )
    result = runner.invoke(
        app,
        [
            "run",
            str(CALCULATOR),
            "--policy",
            f"scripted:{script}",
            "-n",
            "3",
            "--out",
            str(tmp_path / "s"),
        ],
    )
    assert result.exit_code == 0, result.output
    steps = [len(t.steps) for t in read_jsonl(tmp_path / "s" / "trajectories.jsonl")]
    assert steps == [2, 2, 2]


def test_run_bad_policy_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["run", str(CALCULATOR), "--policy", "nonsense", "-n", "1", "--out", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "unknown policy" in result.output


def test_run_keeps_its_tokenizer_so_view_shows_the_exact_prompt_text(tmp_path: Path) -> None:
    from agentspec.viewer.load import load_run
    from agentspec.viewer.report import build_payload

    out = tmp_path / "run"
    spec = ROOT / "specs" / "keys_and_doors.yaml"
    result = runner.invoke(app, ["run", str(spec), "-n", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "tokenizer" / "tokenizer.json").is_file()
    payload = json.dumps(build_payload(load_run(out)))
    # The system prompt and the oracle's first action, as text rather than ids.
    assert "You are in the middle room of a house" in payload
    assert "go[west]" in payload or "go[east]" in payload


def test_run_past_the_number_of_samples_cycles_the_data_and_says_so(tmp_path: Path) -> None:
    """-n 8 over 3 samples: every sample is played 2 or 3 times (not drawn with
    replacement, which can leave one out), and the output says the data was cycled."""
    spec = tmp_path / "echo_word.yaml"
    spec.write_text((ROOT / "tests" / "training" / "echo_word.yaml").read_text())
    (tmp_path / "data").mkdir()
    words = ["apple", "berry", "cherry"]
    (tmp_path / "data" / "words.jsonl").write_text(
        "".join(json.dumps({"id": f"w{i}", "word": w}) + "\n" for i, w in enumerate(words))
    )
    out = tmp_path / "run"
    for seed in ("0", "1", "2"):
        result = runner.invoke(
            app, ["run", str(spec), "-n", "8", "--seed", seed, "--out", str(out)]
        )
        assert result.exit_code == 0, result.output
        played = [t.sample_id for t in read_jsonl(out / "trajectories.jsonl")]
        assert sorted(played.count(f"w{i}") for i in range(3)) == [2, 3, 3]
        assert played[3:6] == played[:3]  # the same order, again
        assert "-n 8 is more than the 3 samples: the data is cycled" in result.stderr
        assert "8 episodes of 3 samples" in " ".join(result.stdout.split())  # the table's title
