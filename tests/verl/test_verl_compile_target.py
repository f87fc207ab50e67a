"""`agentspec compile --target verl`: files, rows, and overrides `main_ppo --cfg job` accepts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from verl_helpers import ROOT, SPEC, anchored_calculator

from agentspec.runtime.backends.verl.run_folder import (
    build_verl_target,
    cpu_overrides,
    format_overrides,
    gpu_overrides,
    write_verl_target,
)


@pytest.fixture(scope="module")
def target_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("verl_target")
    # with bytecode writes on, as in a user's Python: the generated module the
    # compile imports must still leave no __pycache__ in the output directory
    writes_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, False
    try:
        write_verl_target(SPEC, out, train_rows=16)
    finally:
        sys.dont_write_bytecode = writes_bytecode
    return out


def test_writes_module_loop_yaml_rows_and_overrides(target_dir: Path) -> None:
    names = sorted(p.name for p in target_dir.iterdir())
    assert names == [
        "agent_loop.yaml",
        "calculator_spec.py",
        "calculator_verl.py",
        "manifest.json",
        "overrides.cpu.txt",
        "overrides.txt",
        "spec",
        "train.parquet",
        "val.parquet",
    ]
    # the spec's copy, which the agent loop binds: what a run ships to its workers
    assert sorted(p.name for p in (target_dir / "spec").iterdir()) == ["calculator.yaml"]
    loop = (target_dir / "calculator_verl.py").read_text()
    assert "class CalculatorAgentLoop(SpecAgentLoop):" in loop
    assert 'layout = "per_step"' in loop  # steppo: one verl row per step
    (entry,) = yaml.safe_load((target_dir / "agent_loop.yaml").read_text())
    assert entry == {"name": "calculator", "_target_": "calculator_verl.CalculatorAgentLoop"}


def test_rows_carry_agent_name_raw_prompt_and_sample(target_dir: Path) -> None:
    train = pd.read_parquet(target_dir / "train.parquet")
    assert len(train) == 16
    row = train.iloc[0]
    assert row["agent_name"] == "calculator"
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    sample = json.loads(row["extra_info"]["sample"])
    assert sample["question"] == row["prompt"][1]["content"]
    assert {"answer", "expression"} <= set(sample)
    eval_samples = yaml.safe_load(Path(SPEC).read_text())["training"]["eval_samples"]
    assert len(pd.read_parquet(target_dir / "val.parquet")) == eval_samples


def test_layout_follows_the_loss(tmp_path: Path) -> None:
    anchored = anchored_calculator(tmp_path / "spec")
    gigpo, _ = build_verl_target(anchored, tmp_path / "g", training={"algorithm": "gigpo"})
    steppo, _ = build_verl_target(SPEC, tmp_path / "s")
    assert (gigpo.layout, steppo.layout) == ("packed", "per_step")
    o = gpu_overrides(gigpo)
    assert o["algorithm.adv_estimator"] == "agentspec_gigpo"
    assert o["actor_rollout_ref.actor.policy_loss.loss_mode"] == "agentspec_ppo_clip"
    assert o["critic.enable"] == "False"
    o = gpu_overrides(steppo)
    assert o["algorithm.adv_estimator"] == "agentspec_step_gae"
    assert o["actor_rollout_ref.actor.policy_loss.loss_mode"] == "agentspec_steppo"
    assert o["critic.enable"] == "True"
    assert o["trainer.v1.trainer_mode"] == "agentspec"
    assert o["actor_rollout_ref.actor.optim.lr_warmup_steps"] == "-1"  # verl's "no warm-up"


def test_lr_warmup_maps_to_verls_warmup_steps(tmp_path: Path) -> None:
    target, _ = build_verl_target(SPEC, tmp_path, training={"lr_warmup_iterations": 5})
    assert gpu_overrides(target)["actor_rollout_ref.actor.optim.lr_warmup_steps"] == "5"


@pytest.mark.parametrize(("iterations", "verl"), [(0, "0"), (1, "2"), (3, "4")])
def test_critic_warmup_counts_iterations_as_the_local_backend(
    tmp_path: Path, iterations: int, verl: str
) -> None:
    """The local backend trains the policy from iteration N + 1 (iterations count from 1);
    verl updates the actor once ``trainer.critic_warmup <= global_steps``, its steps
    counting from 1 too (verl/trainer/ppo/v1/trainer_base.py): N + 1 is the same rule."""
    training = {"algorithm": "steppo", "critic_warmup": iterations}
    target, _ = build_verl_target(SPEC, tmp_path, training=training)
    warmup = int(gpu_overrides(target)["trainer.critic_warmup"])
    verl_critic_only = [step for step in range(1, 10) if not warmup <= step]
    local_critic_only = [it for it in range(1, 10) if not it - iterations > 0]
    assert str(warmup) == verl and verl_critic_only == local_critic_only


@pytest.mark.parametrize(
    "paper",
    [{"step_clip_low": 3e-4, "step_clip_high": 4e-4}, {"step_clip_preset": "steppo_paper"}],
    ids=["sides", "preset"],
)
def test_step_clip_range_maps_to_verls_asymmetric_clip(
    tmp_path: Path, paper: dict[str, object]
) -> None:
    target, _ = build_verl_target(SPEC, tmp_path / "s", training=paper)
    o = gpu_overrides(target)
    assert (
        o["actor_rollout_ref.actor.clip_ratio_low"],
        o["actor_rollout_ref.actor.clip_ratio_high"],
    ) == ("0.0003", "0.0004")
    # a token-level loss ignores the step range and uses clip_ratio on both sides
    grpo, _ = build_verl_target(SPEC, tmp_path / "g", training={**paper, "algorithm": "grpo"})
    o = gpu_overrides(grpo)
    assert (
        o["actor_rollout_ref.actor.clip_ratio_low"],
        o["actor_rollout_ref.actor.clip_ratio_high"],
    ) == ("0.2", "0.2")


def test_gigpo_without_an_anchor_is_refused(tmp_path: Path) -> None:
    # as `agentspec train` refuses it (README: GiGPO needs `episode.anchor`)
    with pytest.raises(ValueError, match=r"'gigpo' needs `episode\.anchor` in the spec"):
        build_verl_target(SPEC, tmp_path, training={"algorithm": "gigpo"})


def test_compile_says_where_gigpo_was_chosen_without_an_anchor(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agentspec.cli import app

    spec = tmp_path / "calculator.yaml"
    text = SPEC.read_text(encoding="utf-8")
    spec.write_text(text.replace("algorithm: steppo", "algorithm: gigpo"), encoding="utf-8")
    line = 1 + text.split("algorithm: steppo")[0].count("\n")
    result = CliRunner().invoke(
        app, ["compile", str(spec), "--target", "verl", "-o", str(tmp_path / "o")]
    )
    assert result.exit_code == 1, result.output  # E212: validate refuses it first
    assert f"{spec}:{line}:" in result.output and "E212" in result.output
    assert "needs `episode.anchor`" in result.output
    assert "Traceback" not in result.output


def test_unknown_training_setting_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown training settings"):
        build_verl_target(SPEC, tmp_path, training={"algoritm": "grpo"})


def _cfg_job(overrides: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "verl.trainer.main_ppo", "--cfg", "job", *overrides],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=180,
    )


def test_main_ppo_cfg_job_accepts_the_generated_overrides(target_dir: Path) -> None:
    gpu = (target_dir / "overrides.txt").read_text().splitlines()
    cpu = (target_dir / "overrides.cpu.txt").read_text().splitlines()
    result = _cfg_job(gpu + cpu)
    assert result.returncode == 0, result.stderr[-3000:]
    config = yaml.safe_load(result.stdout)
    assert config["algorithm"]["adv_estimator"] == "agentspec_step_gae"
    assert config["actor_rollout_ref"]["actor"]["policy_loss"]["loss_mode"] == "agentspec_steppo"
    assert config["actor_rollout_ref"]["rollout"]["name"] == "agentspec_hf"
    assert config["actor_rollout_ref"]["rollout"]["agent"]["agent_loop_config_path"] == str(
        target_dir / "agent_loop.yaml"
    )
    assert config["trainer"]["v1"]["trainer_mode"] == "agentspec"
    assert config["trainer"]["v1"]["agentspec"]["omega"] == 1.0
    assert config["critic"]["enable"] is True
    # the local critic's value clip, not verl's default 0.5
    assert config["critic"]["cliprange_value"] == 0.2
    assert config["actor_rollout_ref"]["actor"]["optim"]["lr_warmup_steps"] == -1
    for model in (config["actor_rollout_ref"]["model"], config["critic"]["model"]):
        assert model["override_config"]["attn_implementation"] == "sdpa"
        assert model["use_remove_padding"] is False


def test_main_ppo_cfg_job_rejects_a_bad_override(target_dir: Path) -> None:
    # the check above means something: a key verl does not declare is refused
    result = _cfg_job(["trainer.no_such_key=1"])
    assert result.returncode != 0


def test_override_files_round_trip(target_dir: Path) -> None:
    cpu = (target_dir / "overrides.cpu.txt").read_text().splitlines()
    assert set(format_overrides(cpu_overrides()).splitlines()) <= set(cpu)
    assert "actor_rollout_ref.model.override_config.attn_implementation=sdpa" in cpu
    assert "critic.model.override_config.attn_implementation=sdpa" in cpu
    lines = (target_dir / "overrides.txt").read_text().splitlines()
    assert all("=" in line for line in lines)
    assert "actor_rollout_ref.rollout.name=vllm" in lines
    # attention is named for every model verl builds, not left to verl's defaults
    assert "+actor_rollout_ref.model.override_config.attn_implementation=flash_attention_2" in lines
    assert "+critic.model.override_config.attn_implementation=flash_attention_2" in lines


def test_compiling_imports_no_verl() -> None:
    code = (
        "import sys\n"
        "import agentspec.runtime\n"
        "assert 'verl' not in sys.modules and 'torch' not in sys.modules\n"
        "import agentspec.runtime.backends.verl, agentspec.runtime.backends.verl.run_folder\n"
        "assert 'verl' not in sys.modules, 'compile_target imported verl'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def test_algorithm_settings_come_from_the_preset(tmp_path: Path) -> None:
    teacher = tmp_path / "teacher"
    opd, _ = build_verl_target(
        SPEC, tmp_path / "o", training={"algorithm": "opd", "teacher": str(teacher)}
    )
    o = gpu_overrides(opd)
    assert o["+trainer.v1.agentspec.teacher_path"] == str(teacher.resolve())
    assert o["+trainer.v1.agentspec.task_estimator"] == "agentspec_grpo"  # opd's task_estimator
    assert o["actor_rollout_ref.actor.loss_agg_mode"] == "token-mean"
    steppo, _ = build_verl_target(SPEC, tmp_path / "s")
    o = gpu_overrides(steppo)
    assert o["actor_rollout_ref.actor.loss_agg_mode"] == "seq-mean-token-mean"  # verl_overrides
    assert not any("teacher" in key or "task_estimator" in key for key in o)


def test_the_same_bytes_for_any_spelling_of_the_spec_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/library.md: the agent loop's first line named the spec's path as typed
    out = tmp_path / "out"
    write_verl_target(SPEC, out, train_rows=4)
    first = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    monkeypatch.chdir(SPEC.parent)
    write_verl_target(Path("..") / SPEC.parent.name / "." / SPEC.name, out, train_rows=4)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == first
    loop = next(name for name in first if name.endswith("_verl.py"))
    assert first[loop].startswith(f"# Generated by agentspec from {SPEC.name}.".encode())
