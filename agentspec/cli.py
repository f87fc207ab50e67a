"""The `agentspec` command line.

Start-up stays fast: each command imports what it needs inside its function,
and `validate`, `compile` and `schema` never import torch.
"""

from __future__ import annotations

import glob
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(
    name="agentspec",
    help="Define an LLM agent task in one YAML file; check it, compile it, train it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

SPEC_SUFFIXES = (".yaml", ".yml")


class OutputFormat(str, Enum):
    text = "text"
    json = "json"
    github = "github"


def _expand(paths: list[str]) -> list[Path]:
    """Files, directories (searched recursively for *.yaml / *.yml) and globs."""
    found: list[Path] = []
    for raw in paths:
        matches = sorted(glob.glob(raw, recursive=True)) if glob.has_magic(raw) else [raw]
        if not matches:
            raise typer.BadParameter(f"no file matches {raw!r}", param_hint="PATH")
        for match in matches:
            path = Path(match)
            if path.is_dir():
                found += sorted(
                    p for p in path.rglob("*") if p.suffix in SPEC_SUFFIXES and p.is_file()
                )
            elif path.is_file():
                found.append(path)
            else:
                raise typer.BadParameter(f"{raw!r} does not exist", param_hint="PATH")
    return list(dict.fromkeys(found))


@app.command()
def validate(
    paths: Annotated[list[str], typer.Argument(help="Spec files, directories or globs.")],
    output_format: Annotated[
        OutputFormat,
        typer.Option("--format", "-f", help="text, json, or github (Actions annotations)."),
    ] = OutputFormat.text,
    strict: Annotated[bool, typer.Option(help="Treat warnings as errors.")] = False,
    list_imports: Annotated[
        bool,
        typer.Option(
            "--list-imports",
            help="Also list every Python `module:attribute` the spec imports at run"
            " (functions, adapter, oracle hook, custom context): code outside the sandbox.",
        ),
    ] = False,
    import_user_code: Annotated[
        bool,
        typer.Option(
            "--import",
            help="Also import the spec's own Python modules (functions, hooks, adapters) and check their signatures. Runs their import-time code.",
        ),
    ] = False,
) -> None:
    """Check specs without running anything. Exit 0 if valid, 1 if not, 2 on usage errors."""
    import json

    from agentspec.compiler.diagnostics import render_github, render_json, render_text
    from agentspec.compiler.frontend import check_file
    from agentspec.spec import imports

    files = _expand(paths)
    if not files:
        raise typer.BadParameter("no .yaml or .yml files found", param_hint="PATH")
    results = [check_file(f, import_user_code=import_user_code) for f in files]
    failed = [r for r in results if not r.ok or (strict and r.warnings)]
    diagnostics = [d for r in results for d in r.diagnostics]
    found = [
        item
        for r in results
        if list_imports and r.checked is not None
        for item in imports.python_imports(r.checked.loaded)
    ]
    if output_format is OutputFormat.json and list_imports:
        report = {
            "diagnostics": json.loads(render_json(diagnostics)),
            "imports": [imports.to_json(item) for item in found],
        }
        typer.echo(json.dumps(report, indent=2, ensure_ascii=False))
    elif output_format is OutputFormat.json:
        typer.echo(render_json(diagnostics))
    elif output_format is OutputFormat.github:
        for d in diagnostics:
            typer.echo(render_github(d))
        for item in found:
            span = item.span
            typer.echo(
                f"::notice file={span.file},line={span.line},col={span.column}"
                f"::imports {item.target} ({item.field})"
            )
    else:
        for item in found:
            typer.echo(imports.render_import(item))
        if found:
            typer.echo("")
        sources = {k: v for r in results for k, v in r.sources.items()}
        for d in diagnostics:
            typer.echo(render_text(d, sources), err=False)
            typer.echo("")
        errors = sum(len(r.errors) for r in results)
        warnings = sum(len(r.warnings) for r in results)
        summary = (
            f"{len(results)} spec{'s' if len(results) != 1 else ''} checked: "
            f"{len(results) - len(failed)} valid, {len(failed)} invalid "
            f"({errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''})"
        )
        typer.echo(summary, err=True)
    raise typer.Exit(1 if failed else 0)


@app.command(name="test")
def test_command(
    paths: Annotated[list[str], typer.Argument(help="Spec files, directories or globs.")],
    output_format: Annotated[
        OutputFormat,
        typer.Option("--format", "-f", help="text, or github (Actions annotations)."),
    ] = OutputFormat.text,
    oracle_samples: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Samples the oracle gate plays (the first N of the data; default: the spec's tests.oracle.samples).",
        ),
    ] = None,
    oracle: Annotated[bool, typer.Option(help="Run the oracle gate.")] = True,
    seed: Annotated[int, typer.Option(help="Seed of the random policy.")] = 0,
) -> None:
    """Run each spec's scripted episodes (`tests:`) and its oracle gate. Exit 0 if all pass, 1 if not."""
    from agentspec.runtime.spec_tests import report_results, run_spec_tests

    files = _expand(paths)
    if not files:
        raise typer.BadParameter("no .yaml or .yml files found", param_hint="PATH")
    outcomes = [
        run_spec_tests(f, oracle_samples=oracle_samples, seed=seed, gate=oracle) for f in files
    ]
    ok = report_results(outcomes, github=output_format is OutputFormat.github, echo=typer.echo)
    raise typer.Exit(0 if ok else 1)


@app.command()
def schema(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file.")
    ] = None,
) -> None:
    """Print the JSON Schema (draft 2020-12) of the spec language."""
    from agentspec.spec.schema import schema_json

    text = schema_json()
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {output}", err=True)


def _fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _print_summary(title: str, summary: Any) -> None:
    """The per-metric table of `run` and `eval` (a `RolloutSummary`)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in summary.rows():
        table.add_row(name, value)
    Console().print(table)


def _report_spec_error(exc: Exception) -> typer.Exit:
    from agentspec.compiler.diagnostics import SpecError, render_text

    assert isinstance(exc, SpecError)
    for d in exc.diagnostics:
        typer.echo(render_text(d, exc.sources), err=True)
        typer.echo("", err=True)
    return typer.Exit(1)


@app.command(name="compile")
def compile_command(
    spec: Annotated[Path, typer.Argument(help="The spec to compile.", exists=True, dir_okay=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="Output directory.")] = Path(
        "build"
    ),
    target: Annotated[
        str, typer.Option(help="python (the module) or verl (plus agent loop, parquet, overrides).")
    ] = "python",
) -> None:
    """Generate the Python module (ToolEnv/AgentEnv, tools, flow, rewards) and manifest of a spec."""
    from agentspec.compiler.codegen import compile_spec, write_compiled
    from agentspec.compiler.diagnostics import SpecError

    if target not in ("python", "verl"):
        raise _fail(f"unknown target {target!r}: use python or verl", code=2)
    try:
        compiled = compile_spec(spec)
    except SpecError as exc:
        raise _report_spec_error(exc) from None
    if target == "verl":
        from agentspec.runtime.backends.verl.compile_target import write_verl_target

        paths = write_verl_target(spec, output)
    else:
        paths = write_compiled(compiled, output)
    for path in paths:
        typer.echo(f"wrote {path}")


@app.command()
def run(
    spec: Annotated[
        Path, typer.Argument(help="The spec to roll out.", exists=True, dir_okay=False)
    ],
    policy: Annotated[
        str,
        typer.Option(help="oracle, random, scripted:FILE, hf:PATH, openai:URL or chat:URL."),
    ] = "oracle",
    episodes: Annotated[int, typer.Option("-n", "--episodes", min=1, help="Episodes to run.")] = 10,
    seed: Annotated[int, typer.Option(help="Seed of the sampler and of sample order.")] = 0,
    split: Annotated[str | None, typer.Option(help="Data split (default: the spec's).")] = None,
    temperature: Annotated[float, typer.Option(min=0.0, help="Sampling temperature.")] = 1.0,
    out: Annotated[Path | None, typer.Option(help="Directory for trajectories.jsonl.")] = None,
    tokenizer: Annotated[
        str | None, typer.Option(help="Tokenizer directory (for openai:URL policies).")
    ] = None,
    served_model: Annotated[
        str, typer.Option(help="Model name for openai:URL and chat:URL.")
    ] = "default",
    api_key_env: Annotated[
        str, typer.Option(help="chat:URL: the environment variable holding the API key.")
    ] = "OPENAI_API_KEY",
    concurrency: Annotated[
        int, typer.Option(min=1, help="chat:URL: requests in flight at once.")
    ] = 8,
) -> None:
    """Roll out N episodes of a spec with a policy; print a summary and write the trajectories."""
    import asyncio
    import random

    from rich.console import Console
    from rich.progress import Progress

    from agentspec.compiler.codegen import import_spec
    from agentspec.compiler.diagnostics import SpecError
    from agentspec.runtime.spec_run import PolicyError, rollout
    from agentspec.runtime.summary import summarize
    from agentspec.runtime.trajectory import write_jsonl
    from agentspec.stdlib.data import DataError

    console = Console(stderr=True)
    try:
        module = import_spec(spec)
        samples = module.load_samples(split=split)
    except SpecError as exc:
        raise _report_spec_error(exc) from None
    except DataError as exc:
        raise _fail(str(exc)) from None
    if not samples:
        raise _fail("the spec's data source yielded no samples")
    rng = random.Random(seed)
    chosen = (
        [samples[rng.randrange(len(samples))] for _ in range(episodes)]
        if len(samples) < episodes
        else rng.sample(samples, episodes)
    )
    task_tokenizer = None
    tokenizer_source: Path | None = Path(tokenizer) if tokenizer else None
    if policy == "oracle" or policy.split(":")[0] in ("random", "scripted", "chat"):
        from agentspec.compiler.codegen import cache_dir, cache_key
        from agentspec.runtime.task_text import task_bpe_tokenizer as build_task_tokenizer

        directory = cache_dir() / cache_key(spec)[:16] / "tokenizer"
        task_tokenizer = build_task_tokenizer(module, samples[:2000], directory)
        tokenizer_source = directory
    elif policy.startswith("hf:"):
        tokenizer_source = Path(policy.removeprefix("hf:"))
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task(f"{module.SPEC_NAME}: {policy}", total=len(chosen))
        try:
            trajectories = asyncio.run(
                rollout(
                    module,
                    chosen,
                    policy,
                    seed=seed,
                    temperature=temperature,
                    on_episode=lambda _: progress.advance(task),
                    tokenizer_dir=tokenizer,
                    served_model=served_model,
                    task_tokenizer=task_tokenizer,
                    api_key_env=api_key_env,
                    max_concurrency=concurrency,
                )
            )
        except PolicyError as exc:
            raise _fail(str(exc), code=2) from None
    names = [c.name for c in module.ENV_CLASS.reward_components]
    summary = summarize(trajectories, names)
    _print_summary(f"{module.SPEC_NAME} · policy {policy} · {len(trajectories)} episodes", summary)
    out_dir = out or Path("runs") / f"{module.SPEC_NAME}-{policy.split(':')[0]}"
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(out_dir / "trajectories.jsonl", trajectories)
    _keep_tokenizer(tokenizer_source, out_dir / "tokenizer")
    typer.echo(f"trajectories: {out_dir / 'trajectories.jsonl'}")


def _keep_tokenizer(source: Path | None, target: Path) -> None:
    """Copy the rollout's tokenizer beside the trajectories, so that `agentspec view`
    shows every prompt and response as the exact text the policy saw (not ids)."""
    import shutil

    if source is None or not (source / "tokenizer.json").is_file():
        return
    target.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (source / name).is_file():
            shutil.copyfile(source / name, target / name)


@app.command()
def train(
    spec: Annotated[Path, typer.Argument(help="The spec to train.", exists=True, dir_okay=False)],
    algorithm: Annotated[
        str | None,
        typer.Option(help="ppo, steppo, grpo, rloo, gigpo, token_gae, reinforce or opd."),
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
    from agentspec.runtime.backends.local.config import (
        ConfigError,
        parse_overrides,
        resolve_config,
    )
    from agentspec.spec.model import TrainingSpec

    try:
        overrides = parse_overrides(set_ or [])
    except ConfigError as exc:
        raise _fail(str(exc), code=2) from None
    if algorithm is not None:
        overrides["algorithm"] = algorithm
    if backend is not None:
        overrides["backend"] = backend
    try:
        from agentspec.compiler.codegen import import_spec

        module = import_spec(spec)
    except SpecError as exc:
        raise _report_spec_error(exc) from None
    for key in ("model", "teacher"):
        value = str(overrides.get(key, module.TRAINING.get(key)) or "")
        if value.startswith("chat:"):
            raise _fail(
                f"training.{key} {value!r} is a chat-completions API: it returns text without "
                "token ids or log-probs, so it cannot be trained or distilled from; use it as "
                f"a baseline: agentspec run {spec} --policy {value}",
                code=2,
            )
    chosen_backend = overrides.get("backend", module.TRAINING["backend"])
    name = f"{module.SPEC_NAME}-{overrides.get('algorithm', module.TRAINING['algorithm'])}"
    run_dir = out or Path("runs") / name
    if chosen_backend == "verl":
        from agentspec.runtime.backends.verl.launcher import VerlSetupError, train_verl

        overrides.pop("backend", None)
        # Plain keys are training settings (checked here like the local backend's);
        # dotted keys are Hydra overrides of verl's own config, which verl checks.
        settings = {k: v for k, v in overrides.items() if "." not in k.lstrip("+")}
        try:
            resolved = resolve_config(TrainingSpec.model_validate(module.TRAINING), settings)
        except ConfigError as exc:
            raise _fail(str(exc), code=2) from None
        if resolved.warm_start:
            typer.echo(
                f"note: training.warm_start ({resolved.warm_start} behaviour-cloning steps) runs on the "
                "local backend only; verl trains the model as it is",
                err=True,
            )
        if resolved.algorithm == "opd" and resolved.opd_topk:
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
            raise _fail(str(exc), code=2) from None
        typer.echo(f"run directory: {path}")
        return
    if dry_run:
        raise _fail("--dry-run shows a verl run: add --backend verl", code=2)
    iterations = int(str(overrides.get("iterations", module.TRAINING["iterations"])))
    _train_local(spec, run_dir, overrides, resume, iterations)


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
        raise _fail(f"verl does not accept this configuration: {exc}", code=2) from None
    except VerlSetupError as exc:
        raise _fail(str(exc), code=2) from None
    typer.echo(result.render(), nl=False)


def _train_local(
    spec: Path, run_dir: Path, overrides: dict[str, object], resume: bool, iterations: int
) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from agentspec.runtime.backends.local import ConfigError, TrainingInterrupted
    from agentspec.runtime.backends.local import train as run_training
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
            path = run_training(spec, run_dir, overrides, resume=resume, progress=report)
        except ConfigError as exc:
            raise _fail(str(exc), code=2) from None
        except DataError as exc:
            raise _fail(str(exc)) from None
        except TrainingInterrupted as exc:
            typer.echo(
                f"interrupted: checkpoint saved at {exc.path}; continue with --resume", err=True
            )
            raise typer.Exit(130) from None
    typer.echo(f"run directory: {path}")
    typer.echo(f"plots: {path / 'plots'}")


@app.command(name="eval")
def eval_command(
    spec: Annotated[
        Path, typer.Argument(help="The spec to evaluate on.", exists=True, dir_okay=False)
    ],
    checkpoint: Annotated[
        Path | None, typer.Option(help="A checkpoint or run directory (latest checkpoint).")
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option(help="Instead of a checkpoint, a baseline policy: chat:URL, openai:URL, ..."),
    ] = None,
    episodes: Annotated[
        int, typer.Option("-n", "--episodes", min=1, help="Held-out episodes.")
    ] = 200,
    temperature: Annotated[float, typer.Option(min=0.0, help="0 for greedy decoding.")] = 0.0,
    served_model: Annotated[str, typer.Option(help="Model name for chat:URL.")] = "default",
    api_key_env: Annotated[
        str, typer.Option(help="chat:URL: the environment variable holding the API key.")
    ] = "OPENAI_API_KEY",
    concurrency: Annotated[
        int, typer.Option(min=1, help="chat:URL: requests in flight at once.")
    ] = 8,
) -> None:
    """Evaluate a checkpoint (or a baseline policy) on held-out samples; print the table of `run`."""

    from agentspec.runtime.spec_run import PolicyError, evaluate_policy

    if (checkpoint is None) == (policy is None):
        raise _fail("give exactly one of --checkpoint or --policy", code=2)
    try:
        if policy is not None:
            summary = evaluate_policy(
                spec,
                policy,
                episodes,
                temperature,
                served_model=served_model,
                api_key_env=api_key_env,
                max_concurrency=concurrency,
            )
        else:
            from agentspec.runtime.backends.local.evaluation import evaluate_checkpoint

            assert checkpoint is not None
            summary = evaluate_checkpoint(spec, checkpoint, episodes, temperature)
    except FileNotFoundError as exc:
        raise _fail(str(exc)) from None
    except PolicyError as exc:
        raise _fail(str(exc), code=2) from None
    source = policy if policy is not None else checkpoint
    _print_summary(f"{spec.name} · {source} · {summary.episodes} episodes", summary)


@app.command()
def view(
    source: Annotated[
        Path,
        typer.Argument(
            help="A run directory, a traces .jsonl, or a directory with one.", exists=True
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="HTML file (default RUN/report.html or TRACES.html)."),
    ] = None,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the report in the default browser.")
    ] = False,
    tokenizer: Annotated[
        Path | None,
        typer.Option(help="Tokenizer directory to decode prompts (default RUN/tokenizer/)."),
    ] = None,
    max_trajectories: Annotated[
        int, typer.Option(min=1, help="Most trajectories to embed, spread over trace files.")
    ] = 5000,
) -> None:
    """Write one self-contained HTML report: config, learning curves, trajectory browser."""
    from agentspec.viewer import ViewerError, write_report

    try:
        path = write_report(source, output, tokenizer=tokenizer, max_trajectories=max_trajectories)
    except ViewerError as exc:
        raise _fail(str(exc)) from None
    typer.echo(f"report: {path} ({path.stat().st_size / 1e6:.1f} MB)")
    if open_browser:
        import webbrowser

        webbrowser.open(path.resolve().as_uri())


mcp_app = typer.Typer(help="MCP servers a spec takes tools from.", no_args_is_help=True)
app.add_typer(mcp_app, name="mcp")


@mcp_app.command("pin")
def mcp_pin(
    spec: Annotated[Path, typer.Argument(help="The spec.", exists=True, dir_okay=False)],
    check: Annotated[
        bool, typer.Option(help="Write nothing; exit 1 if the pins differ from the servers.")
    ] = False,
) -> None:
    """Read the tools of the spec's MCP servers into its `mcp.NAME.tools` pins."""
    from agentspec.runtime.mcp_pin import PinError, pin_spec

    try:
        report = pin_spec(spec, check=check)
    except PinError as exc:
        raise _fail(str(exc)) from None
    for server, tools in report.tools.items():
        typer.echo(f"mcp.{server}: {len(tools)} tools ({', '.join(tools) or 'none'})")
    for change in report.changes:
        typer.echo(f"  {change}")
    if check and report.changes:
        raise _fail(f"{spec}: the MCP pins are out of date; run agentspec mcp pin {spec}")
    if not report.changes:
        typer.echo("pins are up to date")
    elif not check:
        typer.echo(f"pinned into {spec}")


@app.command()
def init(
    name: Annotated[str, typer.Argument(help="Task name; the spec is written to NAME.yaml.")],
    template: Annotated[str, typer.Option(help="tools, state-machine or environment.")] = "tools",
    directory: Annotated[Path, typer.Option("--dir", help="Where to write the spec.")] = Path("."),
    force: Annotated[bool, typer.Option(help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented starter spec that validates and runs with the oracle out of the box."""
    from agentspec.init_templates import InitError, write_starter

    try:
        path = write_starter(name, template, directory, force=force)
    except InitError as exc:
        raise _fail(str(exc), code=2) from None
    typer.echo(f"wrote {path}")
    typer.echo(f"next: agentspec validate {path} && agentspec run {path} --policy oracle -n 5")


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
