"""A run's training settings: the spec's, `--set`'s, and defaults that follow the model.

`TrainingSpec`'s defaults are the built-in model's: a small transformer with
random weights, built here, that behaviour cloning teaches from scratch at a
learning rate of 3e-3. A pretrained model (any model loaded from files:
`smollm2`, a `.gguf` file, a checkpoint directory) is wrecked by such rates in a
few steps, and a batch of 16 episodes is slow for it on a CPU. So for a
pretrained model every setting of :data:`PRETRAINED_DEFAULTS` that neither the
spec nor `--set` gives takes the value there, and a learning rate that the user
did set at :data:`WRECKING_LEARNING_RATE` or above is warned about, pointing at
where it was set. Nothing torch here: `train --backend verl` uses it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentspec.core.presets import unread_setting_note
from agentspec.runtime.backends.local.config import ConfigError, resolve_config
from agentspec.runtime.text.model_names import ModelNameError, ModelRef, resolve_model
from agentspec.spec.training import TrainingSpec

__all__ = [
    "PRETRAINED_DEFAULTS",
    "WRECKING_LEARNING_RATE",
    "RunSettings",
    "run_settings",
    "setting_origins",
]

PRETRAINED_DEFAULTS: dict[str, Any] = {
    "learning_rate": 1e-5,
    "critic_learning_rate": 1e-5,
    "warm_start_lr": 5e-5,
    "warm_start_batch": 4,
}
"""A pretrained model's defaults where the built-in model's (1e-3, 1e-3, 3e-3, 16) differ."""

WRECKING_LEARNING_RATE = 1e-3
"""Learning rates at or above this (the built-in model's) destroy a pretrained model."""

LEARNING_RATES = ("learning_rate", "critic_learning_rate", "warm_start_lr")

OPTION_SETTINGS = ("algorithm", "backend")
"""Settings that `agentspec train` takes as options of their own (`--algorithm`, `--backend`)."""


@dataclass
class RunSettings:
    """The resolved configuration, where each setting the user gave came from, and
    what to tell them about it (model defaults applied, settings out of range)."""

    cfg: TrainingSpec
    origins: dict[str, str] = field(default_factory=dict)
    """Setting → `FILE:LINE:COL` in the spec, or `--set KEY=VALUE` (`--algorithm X`);
    defaults are absent."""
    model_defaults: dict[str, Any] = field(default_factory=dict)
    """The settings that took the pretrained model's default."""
    notes: list[str] = field(default_factory=list)


def run_settings(
    spec_path: str | Path, training: Mapping[str, Any], overrides: Mapping[str, Any]
) -> RunSettings:
    """`training` (the compiled spec's section) with `overrides`, validated; for a
    pretrained model, its defaults for what nobody set. Raises ConfigError, located."""
    origins = setting_origins(spec_path, overrides)
    cfg = resolve_config(TrainingSpec.model_validate(dict(training)), dict(overrides))
    check_spec_provides(spec_path, cfg.algorithm, origins)
    check_teacher(cfg, origins, spec_path)
    model = _model(cfg.model, "model", origins)
    if cfg.teacher is not None:
        _model(cfg.teacher, "teacher", origins, loadable=True)
    settings = RunSettings(cfg, origins)
    for key, origin in origins.items():
        unread = unread_setting_note(key, cfg.algorithm)
        if unread is not None:
            settings.notes.append(f"{origin}: {unread}")
    if not model.pretrained:
        return settings
    defaults = {k: v for k, v in PRETRAINED_DEFAULTS.items() if k not in origins}
    if defaults:
        settings.cfg = cfg.model_copy(update=defaults)
        settings.model_defaults = defaults
        chosen = ", ".join(f"{k}={v:g}" for k, v in defaults.items())
        settings.notes.append(
            f"{cfg.model} is a pretrained model: {chosen} (the built-in model's defaults "
            "would wreck it; docs/models.md#training-a-pretrained-model)"
        )
    for key in LEARNING_RATES:
        value = getattr(settings.cfg, key)
        if key in origins and value >= WRECKING_LEARNING_RATE:
            settings.notes.append(
                f"{origins[key]}: warning: training.{key} {value:g} is a rate for a model built "
                f"here; it wrecks a pretrained model such as {cfg.model} in a few steps "
                f"(its default there: {PRETRAINED_DEFAULTS[key]:g})"
            )
    return settings


def setting_origins(spec_path: str | Path, overrides: Mapping[str, Any]) -> dict[str, str]:
    """Where each setting the user gave is: `--set KEY=VALUE` (`--algorithm X`, `--backend
    X`), else `FILE:LINE:COL` of its value in the spec's `training:` section."""
    from agentspec.spec.load import read_source
    from agentspec.spec.yaml_loader import load_yaml

    origins: dict[str, str] = {}
    source, _ = read_source(spec_path)
    data, source_map, _ = load_yaml(source) if source is not None else (None, None, [])
    section = data.get("training") if isinstance(data, dict) else None
    if isinstance(section, dict) and source_map is not None:
        for key in section:
            span = source_map.value_span(("training", key))
            origins[str(key)] = f"{span.file}:{span.line}:{span.column}"
    for key, value in overrides.items():
        # `train --algorithm X` and `--set algorithm=X` are one override: say it the way
        # the command line spells it first
        origins[key] = f"--{key} {value}" if key in OPTION_SETTINGS else f"--set {key}={value}"
    return origins


def check_spec_provides(spec_path: str | Path, algorithm: str, origins: Mapping[str, str]) -> None:
    """A ConfigError, located where the algorithm was chosen, when its estimator needs
    a part of the spec that the spec does not declare (GiGPO's `episode.anchor`)."""
    from agentspec.core.presets import ALGORITHMS, SPEC_NEEDS  # names only: no torch here
    from agentspec.spec.load import read_source
    from agentspec.spec.yaml_loader import load_yaml

    needs = ALGORITHMS.get(algorithm).spec_needs
    if not needs:
        return
    source, _ = read_source(spec_path)
    data = load_yaml(source)[0] if source is not None else None
    for path in needs:
        what = SPEC_NEEDS[path]
        node: Any = data
        for key in path.split("."):
            node = node.get(key) if isinstance(node, dict) else None
        if node is None:
            where = origins.get("algorithm", str(spec_path))
            raise ConfigError(
                f"{where}: training.algorithm {algorithm!r} needs `{path}` in the spec: {what}"
            )


def check_teacher(cfg: TrainingSpec, origins: Mapping[str, str], spec_path: str | Path) -> None:
    """A ConfigError, located where the algorithm was chosen, when it distils and no
    teacher is named (found before the run directory is made, not when models load)."""
    from agentspec.core.presets import ALGORITHMS

    if ALGORITHMS.get(cfg.algorithm).needs_teacher and cfg.teacher is None:
        where = origins.get("algorithm", str(spec_path))
        raise ConfigError(
            f"{where}: training.algorithm {cfg.algorithm!r} distils a teacher: name it with "
            "`training.teacher` (a checkpoint or run directory, or a model such as smollm2), "
            "e.g. --set teacher=runs/teacher"
        )


def _model(name: str, key: str, origins: Mapping[str, str], loadable: bool = False) -> ModelRef:
    """The model `training.<key>` names (one to load from files where `loadable`, or
    where it is not built here); a ConfigError saying where it was named if none."""
    try:
        ref = resolve_model(name)
        return ref.loadable() if loadable or ref.pretrained else ref
    except ModelNameError as exc:
        where = origins.get(key)
        raise ConfigError(f"{where}: training.{key}: {exc}" if where else str(exc)) from None
