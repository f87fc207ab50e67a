"""The Typer application and what its commands share: path expansion, errors, tables."""

from __future__ import annotations

import glob
import os
from enum import Enum
from pathlib import Path
from typing import Any

import typer

from agentspec.core.source import GENERATED_YAML_MARK

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


def expand_paths(paths: list[str]) -> list[Path]:
    """Files, directories (searched recursively for *.yaml / *.yml, but not in hidden
    folders nor in what agentspec wrote: see `_agentspec_output`) and globs."""
    found: list[Path] = []
    for raw in paths:
        # a file whose name has glob characters (`spec[1].yaml`) is that file
        literal = not glob.has_magic(raw) or os.path.lexists(raw)
        matches = [raw] if literal else sorted(glob.glob(raw, recursive=True))
        if not matches:
            raise typer.BadParameter(f"no file matches {raw!r}", param_hint="PATH")
        for match in matches:
            path = Path(match)
            if path.is_dir():
                found += _spec_files(path)
            elif path.exists():  # a file; a device or a FIFO is refused by the reader (E103)
                found.append(path)
            else:
                raise typer.BadParameter(f"{raw!r} does not exist", param_hint="PATH")
    return list(dict.fromkeys(found))


def _spec_files(folder: Path) -> list[Path]:
    found: list[Path] = []
    for root, dirs, files in os.walk(folder):
        here = Path(root)
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and not _agentspec_output(here / d)
        )
        found += sorted(
            here / f
            for f in files
            if Path(f).suffix in SPEC_SUFFIXES and not _generated_yaml(here / f)
        )
    return found


def _generated_yaml(path: Path) -> bool:
    """A YAML file `agentspec compile` wrote (its first line says so), which is not a spec."""
    try:
        with path.open("rb") as handle:
            first = handle.readline(400)
    except OSError:
        return False  # the reader reports it (E103)
    return GENERATED_YAML_MARK.encode() in first


def _agentspec_output(folder: Path) -> bool:
    """A folder agentspec wrote, whose YAML files are not specs: a training run
    (`config.yaml` beside `checkpoints/` or `metrics.jsonl`), a compiled spec (its
    `manifest.json`) or an OpenEnv package (`openenv.yaml`)."""
    run = (folder / "config.yaml").is_file() and (
        (folder / "checkpoints").is_dir() or (folder / "metrics.jsonl").is_file()
    )
    return run or (folder / "manifest.json").is_file() or (folder / "openenv.yaml").is_file()


def output_path(path: Path, option: str, *, folder: bool) -> Path:
    """`path` if a command can write there: an error naming `option` when it is a file
    where a folder is written, a folder where a file is, or a place that cannot be
    written (a parent that is a file, a read-only or virtual file system) — found
    before any work, not in a traceback after it. Nothing is made here (a refused run
    leaves no folder): the nearest folder that exists is tried with a file written
    and removed."""
    try:
        if path.is_symlink() and not path.exists():  # dangling, or a loop of links
            raise fail(f"{option} {path} is a link that leads to nothing; give a folder", code=2)
        if folder and path.exists() and not path.is_dir():
            raise fail(f"{option} {path} is a file; give a folder to write into", code=2)
        if not folder and path.is_dir():
            raise fail(f"{option} {path} is a folder; give the file to write", code=2)
        if not folder and path.exists():  # an existing file is written over: it must be writable
            if not os.access(path, os.W_OK):
                raise fail(f"{option} {path}: cannot write there (permission denied)", code=2)
            return path
        folders = [path if folder else path.parent, *(path if folder else path.parent).parents]
        nearest = next((p for p in folders if p.exists()), Path("."))
    except OSError as exc:  # a folder on the way that cannot be read
        raise fail(f"{option} {path}: cannot write there ({exc.strerror or exc})", code=2) from None
    if not nearest.is_dir():
        raise fail(f"{option} {path}: {nearest} is a file, not a folder", code=2)
    probe = nearest / f".agentspec-write-test-{os.getpid()}"
    try:
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise fail(f"{option} {path}: cannot write there ({exc.strerror or exc})", code=2) from None
    return path


def fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def print_summary(title: str, summary: Any) -> None:
    """The per-metric table of `run` and `eval` (a `RolloutSummary`)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in summary.rows():
        table.add_row(name, value)
    Console().print(table)


def report_spec_error(exc: Exception) -> typer.Exit:
    from agentspec.core.diagnostics import SpecError, render_text

    assert isinstance(exc, SpecError)
    for d in exc.diagnostics:
        typer.echo(render_text(d, exc.sources), err=True)
        typer.echo("", err=True)
    return typer.Exit(1)
