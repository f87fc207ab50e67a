"""Training defaults follow the model: a pretrained model does not get the tiny one's.

`builtin:*` models are built here with random weights and keep `TrainingSpec`'s
defaults; a model loaded from files gets `PRETRAINED_DEFAULTS` for every
setting nobody set, and a learning rate the user did set at 1e-3 or above is a
warning at the line (or the `--set`) that set it. No torch is imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentspec.runtime.backends.local.config import ConfigError
from agentspec.runtime.backends.local.model_defaults import PRETRAINED_DEFAULTS, run_settings

ROOT = Path(__file__).resolve().parents[2]
CALCULATOR = ROOT / "specs" / "calculator.yaml"


@pytest.fixture
def pretrained(tmp_path: Path) -> Path:
    """A directory that names a model loaded from files (its weights are not read here)."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
    return folder


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSPEC_CACHE", str(tmp_path / "cache"))


def _training(spec: Path) -> dict[str, object]:
    """The compiled spec's `training` section (every setting, defaults included)."""
    from agentspec.compiler.build import import_spec

    return dict(import_spec(spec).TRAINING)


def test_the_builtin_model_keeps_the_defaults() -> None:
    settings = run_settings(CALCULATOR, _training(CALCULATOR), {})
    assert settings.cfg.warm_start_lr == 3e-3 and settings.cfg.warm_start_batch == 16
    assert settings.model_defaults == {} and settings.notes == []


def test_a_pretrained_model_gets_its_own_defaults_for_what_nobody_set(pretrained: Path) -> None:
    settings = run_settings(CALCULATOR, _training(CALCULATOR), {"model": str(pretrained)})
    cfg = settings.cfg
    assert cfg.warm_start_lr == PRETRAINED_DEFAULTS["warm_start_lr"] == 5e-5
    assert cfg.warm_start_batch == 4 and cfg.critic_learning_rate == 1e-5
    assert cfg.learning_rate == 1e-4  # the spec sets it (line 50): kept
    assert set(settings.model_defaults) == {
        "critic_learning_rate",
        "warm_start_lr",
        "warm_start_batch",
    }
    assert settings.notes == [
        f"{pretrained} is a pretrained model: critic_learning_rate=1e-05, warm_start_lr=5e-05, "
        "warm_start_batch=4 (the built-in model's defaults would wreck it; "
        "docs/models.md#training-a-pretrained-model)"
    ]
    assert settings.origins["learning_rate"] == f"{CALCULATOR}:50:18"
    assert settings.origins["model"] == f"--set model={pretrained}"


def test_a_rate_that_wrecks_a_pretrained_model_is_a_located_warning(
    pretrained: Path, tmp_path: Path
) -> None:
    settings = run_settings(
        CALCULATOR, _training(CALCULATOR), {"model": str(pretrained), "warm_start_lr": 0.003}
    )
    assert settings.cfg.warm_start_lr == 0.003  # the user's choice stands
    assert settings.notes[-1] == (
        "--set warm_start_lr=0.003: warning: training.warm_start_lr 0.003 is a rate for a "
        f"model built here; it wrecks a pretrained model such as {pretrained} in a few steps "
        "(its default there: 5e-05)"
    )

    spec = tmp_path / "calculator.yaml"
    text = CALCULATOR.read_text().replace("learning_rate: 0.0001", "learning_rate: 0.002")
    spec.write_text(text.replace("model: builtin:tiny", f"model: {pretrained}"))
    settings = run_settings(spec, _training(spec), {})
    assert settings.cfg.learning_rate == 0.002
    assert settings.notes[-1].startswith(
        f"{spec}:50:18: warning: training.learning_rate 0.002 is a rate for a model built here"
    )


def test_a_bad_teacher_is_named_where_it_was_given() -> None:
    with pytest.raises(ConfigError, match=r"^--set teacher=nowhere: training.teacher: 'nowhere'"):
        run_settings(CALCULATOR, _training(CALCULATOR), {"algorithm": "opd", "teacher": "nowhere"})


def test_settings_do_not_import_torch(pretrained: Path, tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from agentspec.compiler.build import import_spec\n"
        "from agentspec.runtime.backends.local.model_defaults import run_settings\n"
        f"module = import_spec({str(CALCULATOR)!r})\n"
        f"run_settings({str(CALCULATOR)!r}, module.TRAINING, {{'model': {str(pretrained)!r}}})\n"
        "print('HEAVY', [m for m in ('torch', 'transformers') if m in sys.modules])\n"
    )
    env = {**os.environ, "AGENTSPEC_CACHE": str(tmp_path / "cache")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env
    )
    assert "HEAVY []" in out.stdout, out.stdout + out.stderr


def test_a_setting_the_algorithm_does_not_read_is_said_where_it_was_given() -> None:
    overrides = {"omega": 3, "opd_beta": 5, "step_clip_ratio": 0.1, "algorithm": "grpo"}
    notes = run_settings(CALCULATOR, _training(CALCULATOR), overrides).notes
    assert "--set omega=3: training.omega is not read by algorithm 'grpo' (only by gigpo)" in (
        " ".join(notes)
    )
    assert any(n.startswith("--set opd_beta=5:") and "(only by opd)" in n for n in notes)
    assert any("step_clip_ratio" in n and "(only by steppo)" in n for n in notes)
    # read by the chosen algorithm: nothing said
    read = run_settings(CALCULATOR, _training(CALCULATOR), {"step_clip_ratio": 0.1}).notes
    assert not any("is not read by" in n for n in read)
