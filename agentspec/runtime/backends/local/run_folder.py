"""A local training run's folder: opening it (new, or resumed with the settings it was
started with), its checkpoints (save, restore) and the settings it resolved."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from agentspec.core.presets import ALGORITHMS, clip_range, critic_warmup, kl_coef
from agentspec.runtime.backends.local.checkpoint import (
    TrainerState,
    latest_checkpoint,
    load_checkpoint_into,
    prune_checkpoints,
    save_checkpoint,
)
from agentspec.runtime.backends.local.config import ConfigError
from agentspec.runtime.backends.local.model_defaults import RunSettings, run_settings
from agentspec.runtime.backends.local.models import (
    Models,
)
from agentspec.runtime.backends.local.runlog import RunLog
from agentspec.runtime.backends.local.warm_start import demonstrator_script
from agentspec.spec.model import TrainingSpec

__all__ = ["open_run", "resolved_defaults", "restore", "save"]


def open_run(
    spec_path: str | Path, out_dir: str | Path, overrides: Mapping[str, Any] | None, resume: bool
) -> tuple[ModuleType, RunSettings, RunLog, dict[str, Any]]:
    """The compiled spec, the resolved settings (with the model's defaults), the run
    directory, and the configuration to write into it (a resumed run's is its own, see
    `_resumed`)."""
    from agentspec.compiler.build import import_spec, spec_sha256
    from agentspec.core.diagnostics import waived_by
    from agentspec.runtime.compiled.samples import no_data
    from agentspec.runtime.compiled.scripts import has_oracle

    module = import_spec(spec_path, waived_by(overrides or {}))
    if module.DATA_SOURCE is None:  # before the run directory is made
        raise no_data(module)
    settings = run_settings(spec_path, module.TRAINING, dict(overrides or {}))
    cfg = settings.cfg
    if cfg.warm_start and not cfg.warm_start_demonstrator and not has_oracle(module):
        where = settings.origins.get("warm_start", str(spec_path))
        raise ConfigError(
            f"{where}: training.warm_start is {cfg.warm_start}, but the spec has no `oracle`"
            " for behaviour cloning to imitate; set warm_start=0, add an `oracle:`, or name"
            " a training.warm_start_demonstrator"
        )
    if cfg.warm_start and cfg.warm_start_demonstrator:
        demonstrator_script(cfg, settings.origins.get("warm_start_demonstrator", str(spec_path)))
    out = Path(out_dir)
    if not resume and ((out / "metrics.jsonl").exists() or (out / "checkpoints").exists()):
        raise ConfigError(
            f"{out} already holds a run; continue it with --resume, or train into another --out"
        )
    if resume and not (out / "config.yaml").is_file():
        raise ConfigError(f"nothing to resume: {out} holds no run; train without --resume")
    run = RunLog(out)
    resolved = {"spec": str(spec_path), "spec_sha256": spec_sha256(spec_path), **cfg.model_dump()}
    if resume:
        resolved = _resumed(run.read_config(), resolved, set(overrides or {}), out_dir, settings)
    return module, settings, run, resolved


def _resumed(
    before: Mapping[str, Any],
    now: dict[str, Any],
    given: set[str],
    out_dir: str | Path,
    settings: RunSettings,
) -> dict[str, Any]:
    """The configuration a resumed run goes on with: the run's own (`before`), of which
    this command may change only `iterations`, upwards (nothing else reads the count);
    any other setting it gives, or a changed spec file, that differs is a ConfigError.
    `settings.cfg` becomes that configuration."""
    refused = [k for k in sorted(given) if k in now and before.get(k) != now[k]]
    more = "iterations" in refused and now["iterations"] > before.get("iterations", 0)
    if more:
        refused.remove("iterations")
    if before.get("spec_sha256") != now["spec_sha256"]:
        refused.insert(0, "spec_sha256")
    if refused:
        differences = _differences(
            {k: before.get(k) for k in refused}, {k: now[k] for k in refused}
        )
        raise ConfigError(
            f"{out_dir} was trained with another configuration ({differences}); "
            "resume with the same one (a larger total, `--set iterations=N`, extends it)"
        )
    own = {k: before[k] for k in TrainingSpec.model_fields if k in before}
    if more:
        own["iterations"] = now["iterations"]
    settings.cfg = TrainingSpec.model_validate(own)
    if more:
        settings.notes.append(
            f"{out_dir}: continuing the run from {before['iterations']} to {now['iterations']} iterations"
        )
    return {"spec": now["spec"], "spec_sha256": now["spec_sha256"], **settings.cfg.model_dump()}


def _differences(before: Mapping[str, Any], now: Mapping[str, Any]) -> str:
    """What changed between a run's configuration and this one's, e.g. `learning_rate
    0.0003 → 0.5`; a changed spec is said as such (its hash is not worth reading)."""
    said = []
    for key in [*before, *(k for k in now if k not in before)]:
        if before.get(key) == now.get(key):
            continue
        if key == "spec_sha256":
            said.append("the spec file changed")
        else:
            said.append(f"{key} {before.get(key)!r} → {now.get(key)!r}")
    return ", ".join(said)


def save(run: RunLog, state: TrainerState, models: Models, cfg: TrainingSpec) -> Path:
    """A checkpoint of the models, their optimisers and the loop's state; then only the
    newest `keep_checkpoints` are kept."""
    root = run.path / "checkpoints"
    path = save_checkpoint(
        root, state, models.policy, models.tokenizer, models.critic, models.optimizers
    )
    if cfg.keep_checkpoints is not None:
        prune_checkpoints(root, cfg.keep_checkpoints)
    return path


def restore(run: RunLog, models: Models, resume: bool, note: Callable[[str], None]) -> TrainerState:
    """The latest checkpoint's state loaded into `models` (a fresh state when the run was
    stopped before its first one); the run's metrics after that checkpoint are dropped,
    to be redone. A checkpoint that is named but missing or unreadable is an error:
    starting again would silently redo (and overwrite) what was trained."""
    if not resume:
        return TrainerState()
    root = run.path / "checkpoints"
    try:
        checkpoint = latest_checkpoint(root)
    except (OSError, UnicodeDecodeError, ValueError):  # `latest` a folder, or not text
        checkpoint = None
    if checkpoint is None and (root / "latest").exists():
        raise ConfigError(
            f"{root / 'latest'} names a checkpoint that is not in {root}; write the name of"
            " one that is (e.g. the newest iter_* folder) into it"
        )
    if checkpoint is None:
        note(f"{run.path} was stopped before its first checkpoint: the run starts again")
        run.truncate_after(-1)
        return TrainerState()
    try:
        state = load_checkpoint_into(checkpoint, models.policy, models.critic, models.optimizers)
    except Exception as exc:  # a damaged folder: transformers, safetensors, torch each raise
        raise ConfigError(
            f"checkpoint {checkpoint} cannot be loaded ({type(exc).__name__}: {exc}); point"
            f" {root / 'latest'} at an earlier iter_* folder, or train into another --out"
        ) from None
    run.truncate_after(state.iteration)
    return state


def resolved_defaults(config: Mapping[str, Any]) -> dict[str, str]:
    """What each unset (`null`) setting of `config` that the algorithm reads resolved
    to, for `config.yaml`'s comments: `kl_coef: null  # resolves to 0.02 (steppo)`."""
    algorithm = ALGORITHMS.get(str(config["algorithm"]))
    low, high = clip_range(algorithm, config)
    values: dict[str, float] = {"kl_coef": kl_coef(algorithm, config)}
    if algorithm.trains_critic:
        values["critic_warmup"] = critic_warmup(algorithm, config)
    if algorithm.clips_steps:
        values |= {"step_clip_low": low, "step_clip_high": high}
    return {
        key: f"resolves to {value:g} ({algorithm.name})"
        for key, value in values.items()
        if key in config and config[key] is None
    }


# ------------------------------------------------------------- the pieces
