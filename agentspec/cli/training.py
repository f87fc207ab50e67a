"""`train`: the local trainer or verl, from the spec's `training` section and `--set` overrides."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from agentspec.cli.app import app, fail, output_path, report_spec_error
from agentspec.cli.extras import require
from agentspec.core.presets import ALGORITHMS  # torch-free

# verl's options, named here so `train`'s signature stays one screen
RayAddress = Annotated[
    str | None, typer.Option(help="verl: join this Ray cluster instead of starting one.")
]
SharedStorage = Annotated[
    bool,
    typer.Option(
        help="verl: the run folder (--out) and $AGENTSPEC_DATA are at the same path on every"
        " Ray node; workers read them there instead of the run being shipped to them"
        " (docs/verl.md, Multi-node)."
    ),
]
DryRunFlag = Annotated[
    bool,
    typer.Option(
        help="verl: print the main_ppo command line and the composed config, start nothing "
        "(GPU overrides: --set trainer.device=cuda)."
    ),
]


@dataclass(frozen=True)
class VerlLaunch:
    """How `train --backend verl` starts: the cluster to join, whether the workers read
    the run in place (shared storage) instead of being shipped it, or only a dry run."""

    ray_address: str | None
    shared_storage: bool
    dry_run: bool


@app.command()
def train(
    spec: Annotated[Path, typer.Argument(help="The spec to train.", exists=True, dir_okay=False)],
    algorithm: Annotated[
        str | None,
        typer.Option(help=f"One of {', '.join(ALGORITHMS.names())} (docs/algorithms.md)."),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a training setting: KEY=VALUE (repeatable)."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Run directory (default runs/NAME-ALGORITHM).")
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(
            help="Continue from the run directory's latest checkpoint, with the run's own"
            " settings (more `--set iterations=N` extends a finished run)."
        ),
    ] = False,
    backend: Annotated[
        str | None, typer.Option(help="local or verl (default: the spec's).")
    ] = None,
    ray_address: RayAddress = None,
    shared_storage: SharedStorage = False,
    dry_run: DryRunFlag = False,
) -> None:
    """Train a policy on a spec (settings from its `training` section, overridable with --set)."""
    from agentspec.core.diagnostics import SpecError, waived_by

    overrides = _overrides(set_ or [], algorithm=algorithm, backend=backend)
    try:
        from agentspec.compiler.build import import_spec

        # a setting the file gets wrong (E211, E212) but `--set` replaces is checked as
        # resolved, by the trainer, instead
        module = import_spec(spec, waived_by(overrides))
    except SpecError as exc:
        raise report_spec_error(exc) from None
    _refuse_chat_models(spec, module.TRAINING, overrides)
    name = f"{module.SPEC_NAME}-{overrides.get('algorithm', module.TRAINING['algorithm'])}"
    run_dir = output_path(out or Path("runs") / name, "--out", folder=True)
    if overrides.get("backend", module.TRAINING["backend"]) == "verl":
        require("agentspec train --backend verl", "verl")
        launch = VerlLaunch(ray_address, shared_storage, dry_run)
        _train_verl(spec, module.TRAINING, run_dir, overrides, launch)
        return
    if dry_run:
        raise fail("--dry-run shows a verl run: add --backend verl", code=2)
    require("agentspec train", "train")
    _train_local(spec, run_dir, overrides, resume)


def _overrides(pairs: list[str], *, algorithm: str | None, backend: str | None) -> dict[str, Any]:
    """`--set KEY=VALUE` pairs, with `--algorithm` and `--backend` on top."""
    from agentspec.runtime.backends.local.config import ConfigError, parse_overrides

    try:
        overrides = parse_overrides(pairs)
    except ConfigError as exc:
        raise fail(str(exc), code=2) from None
    if algorithm is not None:
        overrides["algorithm"] = algorithm
    if backend is not None:
        overrides["backend"] = backend
    return overrides


def _refuse_chat_models(spec: Path, training: dict[str, Any], overrides: dict[str, Any]) -> None:
    """A chat-completions API returns text without token ids or log-probs."""
    for key in ("model", "teacher"):
        value = str(overrides.get(key, training.get(key)) or "")
        if value.startswith("chat:"):
            raise fail(
                f"training.{key} {value!r} is a chat-completions API: it returns text without "
                "token ids or log-probs, so it cannot be trained or distilled from; use it as "
                f"a baseline: agentspec run {spec} --policy {value}",
                code=2,
            )


def _train_verl(
    spec: Path,
    training: dict[str, Any],
    run_dir: Path,
    overrides: dict[str, Any],
    launch: VerlLaunch,
) -> None:
    from agentspec.runtime.backends.local.config import ConfigError
    from agentspec.runtime.backends.local.model_defaults import run_settings
    from agentspec.runtime.backends.verl.launcher import VerlSetupError, train_verl

    overrides.pop("backend", None)
    # Plain keys are training settings (checked here like the local backend's, with the
    # same model defaults); dotted keys are Hydra overrides of verl's own config.
    plain = {k: v for k, v in overrides.items() if "." not in k.lstrip("+")}
    try:
        settings = run_settings(spec, training, plain)
    except ConfigError as exc:
        raise fail(str(exc), code=2) from None
    resolved = settings.cfg
    for text in settings.notes:
        typer.echo(f"note: {text}" if ": warning: " not in text else text, err=True)
    overrides.update(settings.model_defaults)
    if resolved.warm_start:
        typer.echo(
            f"note: training.warm_start ({resolved.warm_start} behaviour-cloning steps) runs on the "
            "local backend only; verl trains the model as it is",
            err=True,
        )
    if ALGORITHMS.get(resolved.algorithm).needs_teacher and resolved.opd_topk:
        typer.echo(
            f"note: training.opd_topk ({resolved.opd_topk}, the full-distribution loss) runs on "
            "the local backend only; verl trains OPD on the sampled-token advantage",
            err=True,
        )
    verl_overrides = {k: str(v) for k, v in overrides.items()}
    if launch.dry_run:
        _verl_dry_run(spec, run_dir, verl_overrides, launch)
        return
    try:
        path = train_verl(
            spec, run_dir, verl_overrides, launch.ray_address, shared_storage=launch.shared_storage
        )
    except VerlSetupError as exc:
        raise fail(str(exc), code=2) from None
    typer.echo(f"run directory: {path}")


def _verl_dry_run(
    spec: Path,
    run_dir: Path,
    overrides: dict[str, str],
    launch: VerlLaunch,
) -> None:
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from agentspec.runtime.backends.verl.dry_run import dry_run
    from agentspec.runtime.backends.verl.launcher import VerlSetupError

    try:
        result = dry_run(
            spec, run_dir, overrides, launch.ray_address, shared_storage=launch.shared_storage
        )
    except (HydraException, OmegaConfBaseException) as exc:
        raise fail(f"verl does not accept this configuration: {exc}", code=2) from None
    except VerlSetupError as exc:  # agentspec's own refusals (a ValueError too): said as they are
        raise fail(str(exc), code=2) from None
    except (ValueError, AssertionError) as exc:  # verl's validate_config checks with both
        raise fail(f"verl does not accept this configuration: {exc}", code=2) from None
    typer.echo(result.render(), nl=False)


def _train_local(spec: Path, run_dir: Path, overrides: dict[str, object], resume: bool) -> None:
    from agentspec.runtime.backends.local import ConfigError, TrainingInterrupted
    from agentspec.runtime.backends.local import train as run_training
    from agentspec.runtime.mcp.stderr import server_logs
    from agentspec.runtime.text.model_names import ModelNameError
    from agentspec.stdlib.data import DataError

    phases = _Phases()
    try:
        with server_logs(run_dir):  # MCP servers' stderr: run_dir/mcp/NAME.log
            path = run_training(
                spec, run_dir, overrides, resume=resume, progress=phases.iteration, phases=phases
            )
    except (ConfigError, ModelNameError, DataError, TrainingInterrupted) as exc:
        phases.close()  # before the error, so the bar does not follow it
        raise _stopped(exc) from None
    finally:
        phases.close()
    typer.echo(f"run directory: {path}")
    typer.echo(f"plots: {path / 'plots'}")


def _stopped(exc: Exception) -> typer.Exit:
    """The exit for a run that could not start or was interrupted."""
    from agentspec.runtime.backends.local import TrainingInterrupted
    from agentspec.stdlib.data import DataError

    if isinstance(exc, TrainingInterrupted):
        typer.echo(f"interrupted: checkpoint saved at {exc.path}; continue with --resume", err=True)
        return typer.Exit(130)
    return fail(str(exc), code=1 if isinstance(exc, DataError) else 2)


class _Phases:
    """The trainer's phases on one progress bar on stderr (what it does, how far), started
    with the first phase; each phase's first start and the trainer's notes are lines
    above it (so logs keep them too)."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True, soft_wrap=True, highlight=False)
        self.progress: Any = None
        self.task: Any = None
        self.announced: set[str] = set()

    def phase(self, name: str, total: int | None) -> None:
        self._bar().update(self.task, description=name, total=total, completed=0, detail="")
        if name not in self.announced:
            self.announced.add(name)
            self.console.print(name, markup=False)

    def advance(self, done: int, detail: str) -> None:
        self._bar().update(self.task, completed=done, detail=detail)

    def note(self, text: str) -> None:
        self.console.print(text, markup=False)

    def iteration(self, iteration: int, record: dict[str, float]) -> None:
        """An RL iteration's metrics: success (held-out when evaluated), reward, speed."""
        # held-out greedy success where this iteration evaluated, else the sampled one:
        # labelled, as the rollout's sampled reward beside it can read 1.00 against 0.00
        held_out = record.get("eval/success")
        success = held_out if held_out is not None else record.get("rollout/success")
        errors = int(record.get("rollout/expression_errors", 0))
        which = "held-out" if held_out is not None else "sampled"
        detail = f"{which} success {success:.2f}  " if success is not None else ""
        detail += f"sampled reward {record.get('rollout/reward', float('nan')):.2f}"
        detail += f" ({errors} expression errors)" if errors else ""
        detail += f"  {record.get('perf/tokens_per_s', 0):.0f} tok/s"
        self._bar().update(self.task, completed=iteration, detail=detail)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def _bar(self) -> Any:
        if self.progress is None:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[detail]}"),
                TimeElapsedColumn(),
                console=self.console,
            )
            self.progress.start()
            self.task = self.progress.add_task("", total=None, detail="")
        return self.progress
