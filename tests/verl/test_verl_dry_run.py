"""`agentspec train SPEC --backend verl --dry-run`: the command and the composed config.

For every recipe in specs/, on the CPU path and with the GPU overrides
(``--set trainer.device=cuda``, with ``builtin:small``: vLLM does not serve the
default ``builtin:tiny``'s head size), the printed ``main_ppo`` overrides compose
(Hydra, in-process, as ``main_ppo --cfg job`` composes them) to exactly the printed
config; for the calculator, a real ``python -m verl.trainer.main_ppo --cfg job``
subprocess prints the same config. Nothing starts Ray.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner
from verl_helpers import ROOT, SPEC

from agentspec.cli import app
from agentspec.runtime.backends.verl.launcher import compose_config

pytestmark = pytest.mark.slow

RECIPES = sorted((ROOT / "specs").glob("*.yaml"))
DEVICES = ["cpu", "cuda"]
GPU_MODEL = "builtin:small"  # head size 32, which vLLM serves (builtin:tiny's 16 is refused)


def _dry_run(spec: Path, out: Path, device: str, *extra: str) -> str:
    result = CliRunner().invoke(
        app,
        [
            "train",
            str(spec),
            "--backend",
            "verl",
            "--dry-run",
            "--out",
            str(out),
            "--set",
            f"trainer.device={device}",
            *extra,
        ],
    )
    assert result.exit_code == 0, result.output[-3000:]
    return result.stdout


def _parse(output: str) -> tuple[dict[str, str], list[str], dict]:
    """(environment, main_ppo overrides, printed config) of a dry run's output."""
    command, _, config = output.partition("\n\n# composed config")
    lines = [line for line in command.splitlines() if not line.startswith("#")]
    words = shlex.split(" ".join(line.rstrip("\\") for line in lines))
    start = words.index("python")
    assert words[start : start + 3] == ["python", "-m", "verl.trainer.main_ppo"]
    env = dict(w.split("=", 1) for w in words[:start])
    return env, words[start + 3 :], yaml.safe_load(config.split("\n", 1)[1])


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], str]:
    runs = tmp_path_factory.mktemp("dry_runs")
    return {
        (spec.stem, device): _dry_run(
            spec, runs / spec.stem, device, *(["--set", f"model={GPU_MODEL}"] * (device == "cuda"))
        )
        for spec in RECIPES
        for device in DEVICES
    }


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("recipe", [p.stem for p in RECIPES])
def test_dry_run_output_composes_for_every_recipe(
    outputs: dict[tuple[str, str], str], recipe: str, device: str
) -> None:
    from omegaconf import OmegaConf

    env, overrides, printed = _parse(outputs[(recipe, device)])
    pairs = dict(o.split("=", 1) for o in overrides)
    composed = OmegaConf.to_container(compose_config(pairs))
    assert composed == printed
    assert printed["trainer"]["device"] == device
    # one FSDP on both paths: the one the CPU tests run (issue 51 item 4)
    strategies = [printed["actor_rollout_ref"][r]["strategy"] for r in ("actor", "ref")]
    assert [*strategies, printed["critic"]["strategy"]] == ["fsdp2"] * 3
    assert printed["trainer"]["v1"]["trainer_mode"] == "agentspec"
    assert printed["algorithm"]["adv_estimator"].startswith("agentspec_")
    rollout = printed["actor_rollout_ref"]["rollout"]["name"]
    assert rollout == ("agentspec_hf" if device == "cpu" else "vllm")
    assert env["VERL_USE_EXTERNAL_MODULES"] == "agentspec.runtime.backends.verl.plugin"
    assert ("VERL_PLATFORM" in env) == (device == "cpu")
    # the files the command names exist in the folder it ships to the workers, where
    # every worker starts (issue 51: the run is shipped, not named by a driver's path)
    shipped = Path(pairs["+ray_kwargs.ray_init.runtime_env.working_dir"])
    for key in ("data.train_files", "data.val_files", "actor_rollout_ref.model.path"):
        assert not Path(pairs[key]).is_absolute(), key
        assert (shipped / pairs[key]).exists(), key
    assert (shipped / "spec" / f"{recipe}.yaml").is_file()


@pytest.mark.parametrize("device", DEVICES)
def test_main_ppo_cfg_job_prints_the_dry_runs_config(
    outputs: dict[tuple[str, str], str], device: str
) -> None:
    _, overrides, printed = _parse(outputs[("calculator", device)])
    result = subprocess.run(
        [sys.executable, "-m", "verl.trainer.main_ppo", "--cfg", "job", *overrides],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert yaml.safe_load(result.stdout) == printed


def test_the_default_model_on_vllm_is_refused_before_launch(tmp_path: Path) -> None:
    """builtin:tiny's head size (16) is below what vLLM's Triton backend serves."""
    result = CliRunner().invoke(
        app,
        [
            *("train", str(SPEC), "--backend", "verl", "--dry-run", "--out", str(tmp_path)),
            *("--set", "trainer.device=cuda"),
        ],
    )
    assert result.exit_code == 2, result.output[-3000:]
    assert "'builtin:tiny' has attention head size 16" in result.output
    assert "builtin:small (head size 32)" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_ray_address_goes_into_the_standalone_command(tmp_path: Path) -> None:
    output = _dry_run(SPEC, tmp_path, "cpu", "--ray-address", "127.0.0.1:6390")
    _, overrides, printed = _parse(output)
    assert "+ray_kwargs.ray_init.address=127.0.0.1:6390" in overrides
    assert printed["ray_kwargs"]["ray_init"]["address"] == "127.0.0.1:6390"


def test_a_key_verl_does_not_declare_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            *("train", str(SPEC), "--backend", "verl", "--dry-run", "--out", str(tmp_path)),
            *("--set", "trainer.no_such_key=1"),
        ],
    )
    assert result.exit_code == 2
    assert "verl does not accept this configuration" in result.output
    assert "no_such_key" in result.output
    assert isinstance(result.exception, SystemExit)  # a clean exit, no uncaught exception


def test_dry_run_needs_the_verl_backend(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["train", str(SPEC), "--backend", "local", "--dry-run", "--out", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "--backend verl" in result.output


def test_a_value_verls_validation_refuses_is_a_clear_error(tmp_path: Path) -> None:
    # verl's validate_config raises ValueError (here: a batch smaller than its minibatch)
    result = CliRunner().invoke(
        app,
        [
            *("train", str(SPEC), "--backend", "verl", "--dry-run", "--out", str(tmp_path)),
            *("--set", "data.train_batch_size=0"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "verl does not accept this configuration: train_batch_size (0)" in result.output
    assert isinstance(result.exception, SystemExit)


def test_kl_in_the_reward_is_refused_by_the_dry_run(tmp_path: Path) -> None:
    # docs/verl.md: refused — it was only refused at the first update, after Ray and the models
    result = CliRunner().invoke(
        app,
        [
            *("train", str(SPEC), "--backend", "verl", "--dry-run", "--out", str(tmp_path)),
            *("--set", "algorithm.use_kl_in_reward=True"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "algorithm.use_kl_in_reward is not supported" in result.output
