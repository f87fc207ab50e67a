"""`run`, `eval` and `view`: roll out episodes with a policy or a checkpoint, and look at them."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Annotated, Any

import typer

from agentspec.cli.app import app, fail, output_path, print_summary, report_spec_error
from agentspec.cli.extras import require
from agentspec.core.presets import MAX_SEED

# Options of the served policies (openai:URL, chat:URL), the same for `run` and `eval`.
TokenizerOption = Annotated[
    str | None, typer.Option(help="Tokenizer directory (for openai:URL policies).")
]
ServedModelOption = Annotated[str, typer.Option(help="Model name for openai:URL and chat:URL.")]
ApiKeyEnvOption = Annotated[
    str, typer.Option(help="chat:URL: the environment variable holding the API key.")
]
ConcurrencyOption = Annotated[
    int, typer.Option(min=1, help="chat:URL: requests in flight at once.")
]

PolicyOption = Annotated[
    str,
    typer.Option(
        help="oracle, random (schema-valid random calls and answers), random_tokens (uniform "
        "tokens), scripted:FILE, openai:URL, chat:URL, or a model loaded here "
        "(hf: prefix optional): a checkpoint or run directory, smollm2, a .gguf file."
    ),
]
EpisodesOption = Annotated[
    int,
    typer.Option(
        "-n",
        "--episodes",
        min=1,
        help="Episodes to run: distinct samples in a seeded order; past the number of "
        "samples, the data is played again in the same order.",
    ),
]


@app.command()
def run(
    spec: Annotated[
        Path, typer.Argument(help="The spec to roll out.", exists=True, dir_okay=False)
    ],
    policy: PolicyOption = "oracle",
    episodes: EpisodesOption = 10,
    seed: Annotated[
        int, typer.Option(min=0, max=MAX_SEED, help="Seed of the sampler and of sample order.")
    ] = 0,
    split: Annotated[str | None, typer.Option(help="Data split (default: the spec's).")] = None,
    temperature: Annotated[float, typer.Option(min=0.0, help="Sampling temperature.")] = 1.0,
    out: Annotated[Path | None, typer.Option(help="Directory for trajectories.jsonl.")] = None,
    tokenizer: TokenizerOption = None,
    served_model: ServedModelOption = "default",
    api_key_env: ApiKeyEnvOption = "OPENAI_API_KEY",
    concurrency: ConcurrencyOption = 8,
) -> None:
    """Roll out N episodes of a spec with a policy; print a summary and write the trajectories."""
    from agentspec.runtime.commands.run import policy_model

    model = policy_model(policy)
    if model is not None or policy.startswith("openai:"):
        require(f"agentspec run --policy {policy}", "train")
    from agentspec.runtime.episode.summary import summarize
    from agentspec.runtime.episode.trajectory import write_jsonl
    from agentspec.runtime.mcp.stderr import server_logs

    module, samples = _spec_and_samples(spec, split)
    chosen, repeats = _choose(samples, episodes, seed)
    _say_notes(repeats, model, spec)
    task_tokenizer, tokenizer_source = _task_tokenizer(spec, module, samples, policy, tokenizer)
    settings = {
        "seed": seed,
        "temperature": temperature,
        "tokenizer_dir": tokenizer,
        "served_model": served_model,
        "task_tokenizer": task_tokenizer,
        "api_key_env": api_key_env,
        "max_concurrency": concurrency,
    }
    out_dir = _out_dir(out, module.SPEC_NAME, "hf" if model is not None else policy.split(":")[0])
    with server_logs(out_dir):  # MCP servers' stderr: out_dir/mcp/NAME.log
        trajectories = _roll_out(module, chosen, policy, settings)
    names = [c.name for c in module.ENV_CLASS.reward_components]
    summary = summarize(trajectories, names)
    played = f"{len(trajectories)} episodes" + (f" of {len(samples)} samples" if repeats else "")
    print_summary(f"{module.SPEC_NAME} · policy {policy} · {played}", summary)
    every_one_failed = _say_when_every_episode_failed(summary)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(out_dir / "trajectories.jsonl", trajectories)
    _keep_tokenizer(tokenizer_source, out_dir / "tokenizer")
    typer.echo(f"trajectories: {out_dir / 'trajectories.jsonl'}")
    if every_one_failed:  # kept above for reading; a script must not take it for a result
        raise typer.Exit(1)


def _say_notes(repeats: str, model: Any, spec: Path) -> None:
    """The notes a run starts with: samples played again, a model trained on another spec."""
    if repeats:
        typer.echo(f"note: {repeats}", err=True)
    if model is not None:
        from agentspec.runtime.backends.local.evaluation import other_spec_note

        other = other_spec_note(model, spec)
        if other:
            typer.echo(f"note: {other}", err=True)


def _out_dir(out: Path | None, spec_name: str, kind: str) -> Path:
    """The run's output folder (default runs/SPEC-KIND)."""
    out_dir = output_path(out or Path("runs") / f"{spec_name}-{kind}", "--out", folder=True)
    # what the run writes into it, checked before the episodes rather than after them
    output_path(out_dir / "trajectories.jsonl", "--out", folder=False)
    output_path(out_dir / "tokenizer", "--out", folder=True)
    return out_dir


def _say_when_every_episode_failed(summary: Any) -> bool:
    """One line when episodes ended because their policy or environment failed (a
    server that is down, an oracle turn that fails on a sample, a spec that breaks),
    with how many and the first one's error: the table alone reads as a low success
    rate. True when no episode got past such a failure (`run` and `eval` then exit 1)."""
    from agentspec.runtime.episode.summary import FAILURE_ENDINGS

    if not summary.failed:
        return False
    endings = " or ".join(e for e in sorted(summary.terminations) if e in FAILURE_ENDINGS)
    every = summary.failed == summary.episodes
    share = "every episode" if every else f"{summary.failed} of {summary.episodes} episodes"
    typer.echo(f"note: {share} ended in {endings}, e.g. {summary.first_failure}", err=True)
    return every


def _spec_and_samples(spec: Path, split: str | None) -> tuple[Any, list[Any]]:
    """The compiled spec and its samples; a located error if either fails."""
    from agentspec.compiler.build import import_spec
    from agentspec.core.diagnostics import SpecError
    from agentspec.runtime.compiled.samples import no_data
    from agentspec.stdlib.data import DataError

    try:
        module = import_spec(spec)
        if module.DATA_SOURCE is None:
            raise no_data(module)
        kind = module.DATA_SOURCE.partition(":")[0]
        if split not in (None, "train") and kind in (
            "jsonl",
            "parquet",
        ):  # `train`: the whole file, as data.split
            raise fail(
                f"--split {split}: the spec's data is one `{kind}:` file, without splits (every"
                " split would read all of it); remove --split, or use `hf:./FOLDER` for a"
                " folder of split files",
                code=2,
            )
        try:
            samples = module.load_samples(split=split)
        except ValueError as exc:  # a stdlib source's own refusal (webshop_goals: unknown split)
            if isinstance(exc, DataError) or split is None:
                raise
            raise fail(f"--split {split}: {exc}", code=2) from None
    except SpecError as exc:
        raise report_spec_error(exc) from None
    except DataError as exc:
        raise fail(str(exc)) from None
    if not samples:
        raise fail("the spec's data source yielded no samples")
    return module, samples


def _roll_out(module: Any, samples: list[Any], policy: str, settings: dict[str, Any]) -> list[Any]:
    """The episodes, concurrently, behind a progress bar on stderr."""
    import asyncio

    from rich.console import Console
    from rich.progress import Progress

    from agentspec.runtime.commands.run import rollout
    from agentspec.runtime.compiled.scripts import PolicyError

    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(f"{module.SPEC_NAME}: {policy}", total=len(samples))
        try:
            return asyncio.run(
                rollout(
                    module,
                    samples,
                    policy,
                    on_episode=lambda _: progress.advance(task),
                    **settings,
                )
            )
        except PolicyError as exc:
            raise fail(str(exc), code=2) from None


def _choose(samples: list[Any], episodes: int, seed: int) -> tuple[list[Any], str]:
    """``episodes`` samples in a seeded order, each once while there are enough; past
    that the data is cycled in the same order, so every sample is played as often as any
    other, give or take one. Returns them and, when samples repeat, a line saying so."""
    order = random.Random(seed).sample(samples, len(samples))
    if episodes <= len(samples):
        return order[:episodes], ""
    low, extra = divmod(episodes, len(samples))
    times = f"{low} or {low + 1} times" if extra else f"{low} times"
    note = (
        f"-n {episodes} is more than the {len(samples)} samples: the data is cycled "
        f"in the same seeded order, each sample played {times}"
    )
    return [order[i % len(samples)] for i in range(episodes)], note


def _task_tokenizer(
    spec: Path, module: Any, samples: list[Any], policy: str, tokenizer: str | None
) -> tuple[Any, Path | None]:
    """The tokenizer a policy without one of its own uses (built from the task's
    text, cached per spec), and the folder to keep beside the trajectories."""
    if policy == "oracle" or policy.split(":")[0] in (
        "random",
        "random_tokens",
        "scripted",
        "chat",
    ):
        from agentspec.runtime.compiled.task_text import cached_task_tokenizer

        return cached_task_tokenizer(spec, module, samples)
    from agentspec.runtime.commands.run import policy_model

    model = policy_model(policy)
    if model is not None:
        from agentspec.runtime.backends.local.convert import checkpoint_dir
        from agentspec.runtime.text.model_names import ModelNameError

        try:  # a GGUF model is converted here, once, saying so
            return None, checkpoint_dir(model, lambda line: typer.echo(line, err=True))
        except ModelNameError as exc:
            raise fail(str(exc), code=2) from None
    return None, Path(tokenizer) if tokenizer else None


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


@app.command(name="eval")
def eval_command(
    spec: Annotated[
        Path, typer.Argument(help="The spec to evaluate on.", exists=True, dir_okay=False)
    ],
    checkpoint: Annotated[
        str | None,
        typer.Option(
            help="A checkpoint, a run directory (its latest checkpoint), or any model to load "
            "here: smollm2, a .gguf file."
        ),
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option(
            help="Instead of a checkpoint, any policy of `run`: oracle, random, random_tokens, "
            "scripted:FILE, chat:URL, openai:URL, or a model loaded here."
        ),
    ] = None,
    episodes: Annotated[
        int, typer.Option("-n", "--episodes", min=1, help="Held-out episodes.")
    ] = 200,
    temperature: Annotated[float, typer.Option(min=0.0, help="0 for greedy decoding.")] = 0.0,
    tokenizer: TokenizerOption = None,
    served_model: ServedModelOption = "default",
    api_key_env: ApiKeyEnvOption = "OPENAI_API_KEY",
    concurrency: ConcurrencyOption = 8,
) -> None:
    """Evaluate a checkpoint (or a baseline policy) on held-out samples; print the table of `run`."""
    from agentspec.runtime.commands.run import policy_model

    if (checkpoint is None) == (policy is None):
        raise fail("give exactly one of --checkpoint or --policy", code=2)
    if checkpoint is not None:
        require("agentspec eval --checkpoint", "train")
    elif policy is not None and (policy_model(policy) or policy.startswith("openai:")):
        require(f"agentspec eval --policy {policy}", "train")
    served = {
        "tokenizer_dir": tokenizer,
        "served_model": served_model,
        "api_key_env": api_key_env,
        "max_concurrency": concurrency,
    }
    summary = _evaluate(spec, checkpoint, policy, episodes, temperature, served)
    source = policy if policy is not None else checkpoint
    print_summary(f"{spec.name} · {source} · {summary.episodes} episodes", summary)
    if _say_when_every_episode_failed(summary):  # a CI job must not take it for a result
        raise typer.Exit(1)


def _evaluate(
    spec: Path,
    checkpoint: str | None,
    policy: str | None,
    episodes: int,
    temperature: float,
    served: dict[str, Any],
) -> Any:
    """The summary of `eval`'s episodes; a bad spec, model, data or policy is one line."""
    from agentspec.core.diagnostics import SpecError
    from agentspec.runtime.commands.run import evaluate_policy
    from agentspec.runtime.compiled.scripts import PolicyError
    from agentspec.runtime.text.model_names import ModelNameError
    from agentspec.stdlib.data import DataError

    def note(line: str) -> None:
        typer.echo(f"note: {line}", err=True)

    try:
        if policy is not None:
            return evaluate_policy(spec, policy, episodes, temperature, **served, note=note)
        from agentspec.runtime.backends.local.evaluation import evaluate_checkpoint

        assert checkpoint is not None
        return evaluate_checkpoint(spec, checkpoint, episodes, temperature, note=note)
    except SpecError as exc:
        raise report_spec_error(exc) from None
    except ModelNameError as exc:  # a model named on the command line: as `run` says it
        raise fail(str(exc), code=2) from None
    except (FileNotFoundError, DataError) as exc:
        raise fail(str(exc)) from None
    except PolicyError as exc:
        raise fail(str(exc), code=2) from None


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

    if output is not None:
        output_path(output, "--output", folder=False)
    try:
        path = write_report(source, output, tokenizer=tokenizer, max_trajectories=max_trajectories)
    except ViewerError as exc:
        raise fail(str(exc)) from None
    typer.echo(f"report: {path} ({path.stat().st_size / 1e6:.1f} MB)")
    if open_browser:
        import webbrowser

        webbrowser.open(path.resolve().as_uri())
