"""The local trainer on a task small enough for a test: repeat the word."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentspec.cli import app
from agentspec.core.presets import ALGORITHMS
from agentspec.runtime.backends.local import (
    ConfigError,
    TrainingInterrupted,
    parse_overrides,
    resolve_config,
    train,
)
from agentspec.spec.model import TrainingSpec

ROOT = Path(__file__).resolve().parents[2]
ECHO = Path(__file__).parent / "echo_word.yaml"
FAST = {"torch_threads": 1, "eval_samples": 4, "trace_samples": 2}


@pytest.fixture(autouse=True)
def private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTSPEC_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def test_overrides_are_validated() -> None:
    base = TrainingSpec()
    assert (
        resolve_config(base, parse_overrides(["learning_rate=0.01", "algorithm=grpo"])).algorithm
        == "grpo"
    )
    with pytest.raises(
        ConfigError, match="unknown training setting 'learnig_rate' \\(did you mean 'learning_rate'"
    ):
        resolve_config(base, parse_overrides(["learnig_rate=0.1"]))
    with pytest.raises(ConfigError, match=r"training\.group_size"):
        resolve_config(base, parse_overrides(["group_size=0"]))
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        parse_overrides(["oops"])
    with pytest.raises(ConfigError, match=r"training\.seed"):  # torch cannot take it
        resolve_config(base, parse_overrides(["seed=99999999999999999999"]))
    result = CliRunner().invoke(app, ["run", str(ECHO), "--seed", str(2**64), "-n", "1"])
    assert result.exit_code == 2 and "--seed" in result.output
    # read as a spec reads them: `1e-4` is a number (YAML 1.1 would make it text)
    assert resolve_config(base, parse_overrides(["learning_rate=1e-4"])).learning_rate == 1e-4
    with pytest.raises(ConfigError, match=r"training\.learning_rate: .*number"):
        resolve_config(base, parse_overrides(["learning_rate=fast"]))
    result = CliRunner().invoke(app, ["train", str(ECHO), "--set", "nope=1"])
    assert result.exit_code == 2 and "unknown training setting 'nope'" in result.output
    verl = ["train", str(ECHO), "--backend", "verl", "--set", "group_size=0"]
    result = CliRunner().invoke(app, verl)
    assert result.exit_code == 2 and "training.group_size" in result.output


@pytest.mark.parametrize(
    "algorithm", ["ppo", "steppo", "grpo", "rloo", "gigpo", "token_gae", "reinforce"]
)
def test_every_algorithm_trains(tmp_path: Path, algorithm: str) -> None:
    run = train(
        ECHO,
        tmp_path / algorithm,
        {**FAST, "algorithm": algorithm, "iterations": 1, "warm_start": 0},
    )
    last = records(run)[-1]
    assert last["iteration"] == 1 and last["rollout/env_steps"] > 0
    assert math.isfinite(last["loss/policy"]) and math.isfinite(last["actor/entropy"])
    critic = algorithm in ("ppo", "steppo", "token_gae")
    assert ("loss/value" in last) == critic
    saved = yaml_load(run / "config.yaml")
    assert saved["algorithm"] == algorithm and len(saved["spec_sha256"]) == 64
    # an unset setting the algorithm reads says what it resolved to
    text = (run / "config.yaml").read_text()
    kl = ALGORITHMS.get(algorithm).kl_coef
    assert saved["kl_coef"] is None and f"kl_coef: null  # resolves to {kl:g} ({algorithm})" in text
    assert ("step_clip_low: null  # resolves to" in text) == (algorithm == "steppo")
    for name in ("success.png", "reward_components.png", "kl_entropy.png"):
        assert (run / "plots" / name).stat().st_size > 1000
    assert list((run / "tensorboard").iterdir())
    assert (run / "checkpoints" / "latest").read_text() == "iter_000001"
    traces = (run / "traces" / "iter_000001.jsonl").read_text().splitlines()
    assert all("advantage" in step["info"] for line in traces for step in json.loads(line)["steps"])


def yaml_load(path: Path) -> dict[str, Any]:
    import yaml

    return dict(yaml.safe_load(path.read_text()))


def test_ctrl_c_saves_a_checkpoint(tmp_path: Path) -> None:
    def interrupt(iteration: int, record: dict[str, float]) -> None:
        if iteration == 1:
            raise KeyboardInterrupt

    with pytest.raises(TrainingInterrupted) as info:
        train(
            ECHO, tmp_path / "run", {**FAST, "iterations": 3, "warm_start": 0}, progress=interrupt
        )
    assert info.value.path is not None and (info.value.path / "policy" / "config.json").is_file()
    assert (tmp_path / "run" / "checkpoints" / "latest").read_text() == "iter_000001"


def test_keep_checkpoints_keeps_the_newest_and_the_warm_start(tmp_path: Path) -> None:
    settings = {**FAST, "iterations": 3, "warm_start": 0, "checkpoint_every": 1}
    settings["keep_checkpoints"] = 1

    def interrupt(iteration: int, record: dict[str, float]) -> None:
        if iteration == 2:
            raise KeyboardInterrupt

    checkpoints = tmp_path / "run" / "checkpoints"
    with pytest.raises(TrainingInterrupted):
        train(ECHO, tmp_path / "run", settings, progress=interrupt)
    assert sorted(p.name for p in checkpoints.iterdir()) == ["iter_000000", "iter_000002", "latest"]
    # the run resumes from what is left (the warm start is its KL reference)
    train(ECHO, tmp_path / "run", settings, resume=True)
    assert sorted(p.name for p in checkpoints.iterdir()) == ["iter_000000", "iter_000003", "latest"]
    assert [r["iteration"] for r in records(tmp_path / "run")] == [0, 1, 2, 3]


def comparable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if not k.startswith("perf/")} for r in rows]


@pytest.mark.slow
def test_resume_after_kill_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    settings = [
        "torch_threads=1",
        "iterations=5",
        "checkpoint_every=1",
        "keep_checkpoints=2",  # pruning must not change what a resumed run does
        "warm_start=40",
        "eval_samples=4",
        "eval_every=2",
    ]
    command = [
        sys.executable,
        "-m",
        "agentspec.cli",
        "train",
        str(ECHO),
        *[a for s in settings for a in ("--set", s)],
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run(
        [*command, "--out", str(tmp_path / "whole")], check=True, env=env, capture_output=True
    )

    victim = subprocess.Popen(
        [*command, "--out", str(tmp_path / "killed")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    latest = tmp_path / "killed" / "checkpoints" / "latest"
    deadline = time.time() + 300
    while time.time() < deadline and not (latest.exists() and latest.read_text() >= "iter_000002"):
        time.sleep(0.05)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert latest.read_text() < "iter_000005", "the run finished before it could be killed"
    subprocess.run(
        [*command, "--out", str(tmp_path / "killed"), "--resume"],
        check=True,
        env=env,
        capture_output=True,
    )

    assert comparable(records(tmp_path / "killed")) == comparable(records(tmp_path / "whole"))


@pytest.mark.slow
def test_opd_student_moves_towards_its_teacher(tmp_path: Path) -> None:
    teacher_run = train(
        ECHO, tmp_path / "teacher", {**FAST, "iterations": 1, "warm_start": 400, "eval_samples": 16}
    )
    assert records(teacher_run)[-1]["eval/success"] >= 0.9
    teacher = teacher_run / "checkpoints" / "iter_000001" / "policy"
    student_run = train(
        ECHO,
        tmp_path / "student",
        {
            **FAST,
            "algorithm": "opd",
            "teacher": str(teacher),
            "warm_start": 100,
            "iterations": 15,
            "learning_rate": 1e-3,
            "eval_every": 15,
            "eval_samples": 16,
            "prompts_per_iteration": 8,
        },
    )
    rows = records(student_run)
    kl = [r["opd/reverse_kl"] for r in rows if "opd/reverse_kl" in r]
    assert sum(kl[-3:]) / 3 < sum(kl[:3]) / 3
    assert rows[-1]["eval/success"] > rows[0]["eval/success"]


def test_eval_command_reads_a_run(tmp_path: Path) -> None:
    run = train(ECHO, tmp_path / "run", {**FAST, "iterations": 1, "warm_start": 0})
    result = CliRunner().invoke(app, ["eval", str(ECHO), "--checkpoint", str(run), "-n", "6"])
    assert result.exit_code == 0, result.output
    assert "success rate" in result.output and "episodes" in result.output
    result = CliRunner().invoke(app, ["eval", str(ECHO), "--checkpoint", str(tmp_path), "-n", "2"])
    assert result.exit_code == 2 and "neither a checkpoint" in result.output  # as `run` says it
    assert (
        "was trained on"
        not in CliRunner()
        .invoke(app, ["eval", str(ECHO), "--checkpoint", str(run), "-n", "1"])
        .output
    )
    # a run of another spec file (or of this one since changed): said, not silently played
    other = tmp_path / "other.yaml"
    other.write_text(ECHO.read_text().replace("name: echo_word", "name: echo_other"))
    shutil.copytree(ECHO.parent / "data", tmp_path / "data")
    for command in (
        ["eval", str(other), "--checkpoint", str(run)],
        ["run", str(other), "--policy", str(run), "--out", str(tmp_path / "r")],
    ):
        result = CliRunner().invoke(app, [*command, "-n", "1"])
        assert result.exit_code == 0, result.output
        assert f"note: {run} was trained on {ECHO}, not on {other}" in result.output


def test_a_finished_run_is_not_overwritten_or_appended_to(tmp_path: Path) -> None:
    run = train(ECHO, tmp_path / "run", {**FAST, "iterations": 1, "warm_start": 0})
    before = (run / "metrics.jsonl").read_text()
    args = ["train", str(ECHO), "--out", str(run), "--set", "iterations=1", "--set", "warm_start=0"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "already holds a run" in result.output and "--resume" in result.output
    assert (run / "metrics.jsonl").read_text() == before
    other = CliRunner().invoke(app, [*args, "--resume", "--set", "learning_rate=0.5"])
    assert other.exit_code == 2 and "another configuration" in other.output
    assert "learning_rate 0.001 → 0.5" in other.output  # what differs is named
    # more iterations continue the finished run from its last checkpoint
    # only what changes is given: the rest is the run's own (set through the API here)
    more = ["train", str(ECHO), "--out", str(run), "--set", "iterations=2", "--resume"]
    extended = CliRunner().invoke(app, more)
    assert extended.exit_code == 0, extended.output
    assert "continuing the run from 1 to 2 iterations" in extended.output
    assert [r["iteration"] for r in records(run)] == [0, 1, 2]
    # the total it has: nothing to do, said so (iterations counts the total, not more)
    again = CliRunner().invoke(app, more)
    assert again.exit_code == 0, again.output
    said = " ".join(again.output.split())
    assert "the run has trained all its 2 iterations: nothing to do" in said
    assert "--set iterations=12 trains 10 more" in said
    assert [r["iteration"] for r in records(run)] == [0, 1, 2]


def test_a_warm_start_without_an_oracle_is_refused_before_the_run(tmp_path: Path) -> None:
    invalid = ROOT / "tests" / "specs" / "invalid" / "schema_warm_start_without_oracle.yaml"
    spec = tmp_path / "no_oracle.yaml"
    spec.write_text(invalid.read_text().replace("warm_start: 200", "warm_start: 0"))
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["train", str(invalid), "--out", str(out)])
    assert result.exit_code != 0 and "E211" in result.output
    result = CliRunner().invoke(
        app, ["train", str(spec), "--out", str(out), "--set", "warm_start=5"]
    )
    assert result.exit_code == 2 and "--set warm_start=5" in result.output
    assert "has no `oracle`" in result.output and not out.exists()
    # the file's warm start, replaced on the command line: the run trains (the user's fix
    # for one run, without editing the spec)
    small = ["--set", "iterations=1", "--set", "eval_samples=2", "--set", "prompts_per_iteration=2"]
    args = ["train", str(invalid), "--out", str(out), "--set", "warm_start=0", *small]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert [r["iteration"] for r in records(out)][-1] == 1
    # and a plain import of the same spec still reports E211 (the waived build is cached apart)
    result = CliRunner().invoke(app, ["train", str(invalid), "--out", str(tmp_path / "again")])
    assert result.exit_code != 0 and "E211" in result.output


def test_resume_never_silently_starts_over(tmp_path: Path) -> None:
    args = ["train", str(ECHO), "--set", "iterations=1", "--set", "warm_start=0"]
    args += ["--set", "eval_samples=4", "--set", "torch_threads=1"]
    nothing = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "typo"), "--resume"])
    assert nothing.exit_code == 2 and "nothing to resume" in nothing.output
    assert not (tmp_path / "typo").exists()
    run = tmp_path / "run"
    assert CliRunner().invoke(app, [*args, "--out", str(run)]).exit_code == 0
    before = (run / "metrics.jsonl").read_text()
    latest = run / "checkpoints" / "latest"
    newest = latest.read_text()
    latest.write_text("iter_000099")
    config = (run / "config.yaml").read_text()
    longer = ["train", str(ECHO), "--out", str(run), "--resume", "--set", "iterations=5"]
    missing = CliRunner().invoke(app, longer)
    assert missing.exit_code == 2 and "names a checkpoint that is not in" in missing.output
    assert (run / "config.yaml").read_text() == config  # a refused resume changed nothing
    latest.write_text(newest)
    for file in (run / "checkpoints" / newest / "policy").iterdir():
        file.write_bytes(b"")  # a damaged checkpoint
    damaged = CliRunner().invoke(app, [*args, "--out", str(run), "--resume"])
    assert damaged.exit_code == 2 and "cannot be loaded" in damaged.output, damaged.output
    assert (run / "metrics.jsonl").read_text() == before  # nothing redone, nothing lost


def test_policy_learning_rate_warms_up_linearly(tmp_path: Path) -> None:
    settings = {**FAST, "iterations": 3, "warm_start": 0, "eval_every": 3}
    run = train(
        ECHO,
        tmp_path / "run",
        {**settings, "algorithm": "grpo", "learning_rate": 0.002, "lr_warmup_iterations": 2},
    )
    lrs = [r["optim/policy_lr"] for r in records(run) if "optim/policy_lr" in r]
    assert lrs == pytest.approx([0.001, 0.002, 0.002])


def test_reward_expression_errors_are_counted_in_training_metrics(tmp_path: Path) -> None:
    # a reward that raises on every final step: each one becomes 0.0 and is counted
    spec = tmp_path / "echo_word.yaml"
    spec.write_text(
        ECHO.read_text().replace(
            "rewards:\n", "rewards:\n  broken: {on: final, value: \"int(action.text + 'x')\"}\n"
        )
    )
    shutil.copytree(ECHO.parent / "data", tmp_path / "data")
    run = train(spec, tmp_path / "run", {**FAST, "iterations": 1, "warm_start": 0})
    first, last = records(run)
    episodes = 4 * 4  # prompts_per_iteration × group_size; one final step each
    assert last["rollout/expression_errors"] == episodes
    assert first["eval/expression_errors"] == last["eval/expression_errors"] == 4
    # the greedy episodes' step count and error rates sit beside them
    assert first["eval/steps"] >= 1
    assert (
        0.0 <= first["eval/parse_error_rate"] <= 1.0 and 0.0 <= first["eval/tool_error_rate"] <= 1.0
    )
    assert last["reward/broken"] == 0.0
    healthy = train(ECHO, tmp_path / "healthy", {**FAST, "iterations": 1, "warm_start": 0})
    assert records(healthy)[-1]["rollout/expression_errors"] == 0


def test_gigpo_trains_when_the_anchor_fails_on_some_states(tmp_path: Path) -> None:
    # `sample.word[4]` raises on the four-letter words: those steps group by their exact
    # prompt instead (as on verl), and the run goes on
    spec = tmp_path / "echo_word.yaml"
    spec.write_text(ECHO.read_text().replace("anchor: \"'start'\"", 'anchor: "sample.word[4]"'))
    assert 'anchor: "sample.word[4]"' in spec.read_text()
    shutil.copytree(ECHO.parent / "data", tmp_path / "data")
    run = train(spec, tmp_path / "run", {**FAST, "algorithm": "gigpo", "iterations": 1})
    last = records(run)[-1]
    assert last["iteration"] == 1 and math.isfinite(last["loss/policy"])


def test_old_log_probs_from_the_update_equal_a_scoring_pass(tmp_path: Path) -> None:
    """With the batch in one minibatch the trainer skips the policy's scoring pass and
    takes the old log-probs from the update's first forward pass: they are the same."""
    import torch

    from agentspec.compiler.build import import_spec
    from agentspec.runtime.backends.local import trainer
    from agentspec.runtime.backends.local.scoring import score
    from agentspec.runtime.backends.local.tensors import build_rollout, response_log_probs
    from agentspec.runtime.backends.local.update import minibatches

    module = import_spec(ECHO)
    cfg = resolve_config(
        TrainingSpec.model_validate(module.TRAINING),
        {**FAST, "minibatch_size": 64, "epochs": 1, "warm_start": 0},
    )
    assert trainer.update_scores_policy(trainer.ALGORITHMS.get("grpo"), cfg, 16)
    assert not trainer.update_scores_policy(trainer.ALGORITHMS.get("opd"), cfg, 16)
    assert not trainer.update_scores_policy(trainer.ALGORITHMS.get("grpo"), cfg, 65)
    samples, _ = trainer.split_samples(module, cfg)
    torch.manual_seed(0)
    models = trainer.build_models(cfg, module, samples, tmp_path)
    episodes = trainer.rollout(module, models, samples[:8], 2, cfg.temperature)
    rollout = build_rollout(episodes, module.LAYOUT == "packed")
    scored = score(rollout, models, cfg.temperature)
    assert scored.old_log_probs is not None
    weights = torch.ones(len(rollout.steps), rollout.width)
    (whole,) = minibatches(rollout, weights, cfg, models)
    with torch.no_grad():
        first = response_log_probs(
            models.policy, whole.ids, whole.attention, whole.index, cfg.temperature
        )
    assert torch.equal(first.log_probs, scored.old_log_probs[whole.steps])
    assert score(rollout, models, cfg.temperature, policy_log_probs=False).old_log_probs is None


def test_an_algorithm_that_needs_an_anchor_says_so_where_it_was_chosen(tmp_path: Path) -> None:
    """GiGPO groups steps by `episode.anchor`: a spec without one is a located error
    before anything loads, on either backend, not a traceback mid-iteration (E212 of
    validate when the spec chose it; a setting error when the command line did)."""
    spec = tmp_path / "no_anchor.yaml"
    text = ECHO.read_text().replace(", anchor: \"'start'\"", "")
    spec.write_text(text.replace("algorithm: grpo", "algorithm: gigpo"))
    shutil.copytree(ECHO.parent / "data", tmp_path / "data")
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "algorithm: grpo" in row)
    for backend in ("local", "verl"):
        result = CliRunner().invoke(
            app,
            ["train", str(spec), "--backend", backend, "--dry-run"]
            if backend == "verl"
            else ["train", str(spec), "--out", str(tmp_path / "run")],
        )
        assert result.exit_code == 1, result.output
        assert f"no_anchor.yaml:{line}:" in result.output and "E212" in result.output
        assert "needs `episode.anchor`" in result.output
    # chosen on the command line: the error names the option as it was typed
    spec.write_text(text)  # grpo in the file; gigpo from --algorithm
    result = CliRunner().invoke(
        app, ["train", str(spec), "--algorithm", "gigpo", "--out", str(tmp_path / "run")]
    )
    assert result.exit_code == 2, result.output
    assert "--algorithm gigpo: training.algorithm 'gigpo' needs `episode.anchor`" in result.output
    # gigpo in the file, another algorithm on the command line: it trains
    spec.write_text(text.replace("algorithm: grpo", "algorithm: gigpo"))
    args = ["train", str(spec), "--algorithm", "grpo", "--out", str(tmp_path / "grpo")]
    result = CliRunner().invoke(app, [*args, "--set", "iterations=1", "--set", "eval_samples=2"])
    assert result.exit_code == 0, result.output
    from agentspec.runtime.backends.local.model_defaults import run_settings

    declared = yaml_load(ECHO)["training"]  # echo_word declares an anchor: accepted
    assert run_settings(ECHO, declared, {"algorithm": "gigpo"}).cfg.algorithm == "gigpo"


def test_opd_beta_weighs_the_topk_distillation_loss(tmp_path: Path) -> None:
    """`opd_beta` is the distillation's weight in both of OPD's forms: in the top-k form
    (the local default) it multiplies the loss, whose value at β = 1 is the reverse KL."""
    import torch

    from agentspec.compiler.build import import_spec
    from agentspec.runtime.backends.local import trainer
    from agentspec.runtime.backends.local.scoring import score
    from agentspec.runtime.backends.local.tensors import build_rollout, response_log_probs
    from agentspec.runtime.backends.local.update import distillation_loss, minibatches

    module = import_spec(ECHO)
    cfg = resolve_config(
        TrainingSpec.model_validate(module.TRAINING),
        {**FAST, "minibatch_size": 64, "epochs": 1, "warm_start": 0},
    )
    samples, _ = trainer.split_samples(module, cfg)
    models = trainer.build_models(cfg, module, samples, tmp_path / "student")
    # a teacher of another initialisation (the model's seed is the run's): the divergence
    # between two copies of one model is 0 up to rounding, of either sign
    other = cfg.model_copy(update={"seed": cfg.seed + 1})
    teacher = trainer.build_models(other, module, samples, tmp_path / "teacher").policy
    episodes = trainer.rollout(module, models, samples[:4], 2, cfg.temperature)
    rollout = build_rollout(episodes, module.LAYOUT == "packed")
    mask = trainer.step_batch(rollout, score(rollout, models, cfg.temperature)).response_mask
    (whole,) = minibatches(rollout, torch.ones(len(rollout.steps), rollout.width), cfg, models)
    with torch.no_grad():
        student = response_log_probs(
            models.policy, whole.ids, whole.attention, whole.index, cfg.temperature
        )
    losses = {
        beta: distillation_loss(
            teacher, whole, student, mask[whole.steps], cfg.model_copy(update={"opd_beta": beta})
        )
        for beta in (1.0, 2.5)
    }
    divergence = losses[1.0].metrics["distill/divergence"]
    assert divergence > 0 and losses[2.5].metrics["distill/divergence"] == divergence
    assert float(losses[1.0].loss) == pytest.approx(divergence)
    assert float(losses[2.5].loss) == pytest.approx(2.5 * divergence)
