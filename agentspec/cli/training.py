"""`train`: the local trainer or verl, from the spec's `training` section and `--set` overrides."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agentspec.cli.app import app, fail, report_spec_error
from agentspec.runtime.algorithms.presets import ALGORITHMS  # torch-free


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
        bool, typer.Option(help="Continue from the run directory's latest checkpoint.")
    ] = False,
    backend: Annotated[
        str | None, typer.Option(help="local or verl (default: the spec's).")
    ] = None,
    ray_address: Annotated[
        str | None, typer.Option(help="verl: join this Ray cluster instead of starting one.")
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            help="verl: print the main_ppo command line and the composed config, start nothing "
            "(GPU overrides: --set trainer.device=cuda)."
        ),
    ] = False,
) -> None:
    """Train a policy on a spec (settings from its `training` section, overridable with --set)."""
    from agentspec.compiler.diagnostics import SpecError

    overrides = _overrides(set_ or [], algorithm=algorithm, backend=backend)
    try:
        from agentspec.compiler.build import import_spec

        module = import_spec(spec)
    except SpecError as exc:
        raise report_spec_error(exc) from None
    _refuse_chat_models(spec, module.TRAINING, overrides)
    name = f"{module.SPEC_NAME}-{overrides.get('algorithm', module.TRAINING['algorithm'])}"
    run_dir = out or Path("runs") / name
    if overrides.get("backend", module.TRAINING["backend"]) == "verl":
        _train_verl(spec, module.TRAINING, run_dir, overrides, ray_address, dry_run=dry_run)
        return
    if dry_run:
        raise fail("--dry-run shows a verl run: add --backend verl", code=2)
    iterations = int(str(overrides.get("iterations", module.TRAINING["iterations"])))
    _train_local(spec, run_dir, overrides, resume, iterations)


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
    ray_address: str | None,
    *,
    dry_run: bool,
) -> None:
    from agentspec.runtime.backends.local.config import ConfigError, resolve_config
    from agentspec.runtime.backends.verl.launcher import VerlSetupError, train_verl
    from agentspec.spec.model import TrainingSpec

    overrides.pop("backend", None)
    # Plain keys are training settings (checked here like the local backend's);
    # dotted keys are Hydra overrides of verl's own config, which verl checks.
    settings = {k: v for k, v in overrides.items() if "." not in k.lstrip("+")}
    try:
        resolved = resolve_config(TrainingSpec.model_validate(training), settings)
    except ConfigError as exc:
        raise fail(str(exc), code=2) from None
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
    if dry_run:
        _verl_dry_run(spec, run_dir, verl_overrides, ray_address)
        return
    try:
        path = train_verl(spec, run_dir, verl_overrides, ray_address)
    except VerlSetupError as exc:
        raise fail(str(exc), code=2) from None
    typer.echo(f"run directory: {path}")


def _verl_dry_run(
    spec: Path, run_dir: Path, overrides: dict[str, str], ray_address: str | None
) -> None:
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from agentspec.runtime.backends.verl.dry_run import dry_run
    from agentspec.runtime.backends.verl.launcher import VerlSetupError

    try:
        result = dry_run(spec, run_dir, overrides, ray_address)
    except (HydraException, OmegaConfBaseException) as exc:
        raise fail(f"verl does not accept this configuration: {exc}", code=2) from None
    except VerlSetupError as exc:
        raise fail(str(exc), code=2) from None
    typer.echo(result.render(), nl=False)


def _train_local(
    spec: Path, run_dir: Path, overrides: dict[str, object], resume: bool, iterations: int
) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from agentspec.runtime.backends.local import ConfigError, TrainingInterrupted
    from agentspec.runtime.backends.local import train as run_training
    from agentspec.runtime.mcp.stderr import server_logs
    from agentspec.stdlib.data import DataError

    console = Console(stderr=True)
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TextColumn(
            "success {task.fields[success]}  reward {task.fields[reward]}  {task.fields[tps]} tok/s"
        ),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("training", total=None, success="-", reward="-", tps="-")

        def report(iteration: int, record: dict[str, float]) -> None:
            success = record.get("eval/success", record.get("rollout/success"))
            errors = int(record.get("rollout/expression_errors", 0))
            progress.update(
                task,
                completed=iteration,
                success=f"{success:.2f}" if success is not None else "-",
                reward=f"{record.get('rollout/reward', float('nan')):.2f}"
                + (f" ({errors} expression errors)" if errors else ""),
                tps=f"{record.get('perf/tokens_per_s', 0):.0f}",
            )

        try:
            progress.update(task, total=iterations)
            with server_logs(run_dir):  # MCP servers' stderr: run_dir/mcp/NAME.log
                path = run_training(spec, run_dir, overrides, resume=resume, progress=report)
        except ConfigError as exc:
            raise fail(str(exc), code=2) from None
        except DataError as exc:
            raise fail(str(exc)) from None
        except TrainingInterrupted as exc:
            typer.echo(
                f"interrupted: checkpoint saved at {exc.path}; continue with --resume", err=True
            )
            raise typer.Exit(130) from None
    typer.echo(f"run directory: {path}")
    typer.echo(f"plots: {path / 'plots'}")
