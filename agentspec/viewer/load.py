"""Find and read what `agentspec view` shows: a run directory or trajectory traces.

Accepted inputs:

- a run directory of `agentspec train`: ``config.yaml``, ``metrics.jsonl``,
  ``traces/*.jsonl``, ``plots/*.png``, ``tokenizer/`` (every part optional but
  at least one trace or the metrics);
- a directory holding ``trajectories.jsonl`` (what `agentspec run --out DIR` writes);
- a single traces ``.jsonl`` file.

Records are kept as plain dicts: the viewer is tolerant of optional keys a
producer left out, and never fills in values it was not given.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentspec.runtime.episode.trajectory import FORMAT_NAME, FORMAT_VERSION

__all__ = ["RunData", "TraceFile", "ViewerError", "load_run"]

_ITERATION = re.compile(r"(\d+)")


class ViewerError(ValueError):
    """The input cannot be shown (not found, not a run, unreadable trace)."""


@dataclass
class TraceFile:
    """One traces file: its label, the training iteration it came from, its records."""

    path: Path
    iteration: int | None
    trajectories: list[dict[str, Any]]
    split: str = "train"
    """``train`` (sampled for training, or `agentspec run` traces) or ``eval``."""


@dataclass
class RunData:
    """Everything a report is built from."""

    source: Path
    kind: str
    """``train`` (a run directory) or ``traces`` (trajectories only)."""
    config_text: str | None = None
    metrics: list[dict[str, Any]] = field(default_factory=list)
    traces: list[TraceFile] = field(default_factory=list)
    plots: list[Path] = field(default_factory=list)
    tokenizer_dir: Path | None = None
    notes: list[str] = field(default_factory=list)
    """Things the reader should know (a skipped partial line, trajectories left out)."""


def _iteration_of(path: Path) -> int | None:
    match = _ITERATION.search(path.stem)
    return int(match.group(1)) if match and path.stem.startswith(("iter", "eval")) else None


def _split_of(path: Path) -> str:
    """``eval`` for evaluation traces (``eval_N.jsonl``), else ``train``."""
    return "eval" if path.stem.startswith("eval") else "train"


def read_traces(path: Path, notes: list[str]) -> list[dict[str, Any]]:
    """Trajectory records of a JSONL file; a bad line names its number.

    A last line without its newline that does not parse is a write in progress:
    it is skipped with a note instead of failing the report.
    """
    records: list[dict[str, Any]] = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ViewerError(f"{path}: cannot read: {exc}") from None
    lines = text.split("\n")
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if lineno == len(lines):
                notes.append(f"{path.name}:{lineno}: skipped an incomplete last line")
                continue
            raise ViewerError(f"{path}:{lineno}: not JSON: {exc.msg}") from None
        if not isinstance(record, dict) or record.get("format") != FORMAT_NAME:
            raise ViewerError(f"{path}:{lineno}: not an agentspec trajectory record")
        if record.get("version") != FORMAT_VERSION:
            raise ViewerError(
                f"{path}:{lineno}: trajectory format version {record.get('version')!r} "
                f"is not supported (this viewer reads version {FORMAT_VERSION})"
            )
        if not isinstance(record.get("steps"), list):
            raise ViewerError(f"{path}:{lineno}: trajectory record without a `steps` list")
        problem = _record_problem(record)
        if problem is not None:
            raise ViewerError(f"{path}:{lineno}: {problem}")
        records.append(record)
    return records


# The shape of what the report reads from a record and each step, when present (the
# viewer tolerates a key left out, not a value of another kind: `rewards: "abc"`).
_RECORD_FIELDS: dict[str, tuple[type, ...]] = {
    "trajectory_id": (str,),
    "sample_id": (str, int),
    "group_id": (str, int),
    "termination": (str,),
    "success": (bool, type(None)),
    "info": (dict,),
}
_STEP_FIELDS: dict[str, tuple[type, ...]] = {
    "index": (int,),
    "action_text": (str,),
    "observation": (str, type(None)),
    "finish_reason": (str,),
    "rewards": (dict,),
    "events": (list,),
    "tool_calls": (list,),
    "info": (dict,),
    "done": (bool,),
    "context_truncated": (bool,),
}
_TOKEN_LISTS = ("prompt_ids", "response_ids", "observation_ids")
_MAX_TOKEN_ID = 2**31 - 1  # what a tokenizer's vocabulary index can be


def _record_problem(record: dict[str, Any]) -> str | None:
    """What in a trajectory record is not of the kind the format writes, else None."""
    for key, kinds in _RECORD_FIELDS.items():
        if key in record and not isinstance(record[key], kinds):
            return f"`{key}` is {_kind(record[key])}, not {_kinds(kinds)}"
    for number, step in enumerate(record["steps"]):
        where = f"steps[{number}]"
        if not isinstance(step, dict):
            return f"{where} is {_kind(step)}, not an object"
        for key, kinds in _STEP_FIELDS.items():
            if key in step and step[key] is not None and not isinstance(step[key], kinds):
                return f"{where}.{key} is {_kind(step[key])}, not {_kinds(kinds)}"
        for key in ("events", "tool_calls"):
            if any(not isinstance(item, dict) for item in step.get(key) or []):
                return f"{where}.{key} holds an item that is not an object"
        for key in _TOKEN_LISTS:
            ids = step.get(key)
            if ids is None:
                continue
            if not isinstance(ids, list) or not all(
                type(i) is int and 0 <= i <= _MAX_TOKEN_ID for i in ids
            ):
                return f"{where}.{key} is not a list of token ids (integers 0 … {_MAX_TOKEN_ID:,})"
    return None


_KIND_NAMES: dict[type, str] = {
    dict: "an object",
    list: "a list",
    str: "text",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    type(None): "null",
}


def _kind(value: Any) -> str:
    return _KIND_NAMES.get(type(value), type(value).__name__)


def _kinds(kinds: tuple[type, ...]) -> str:
    return " or ".join(dict.fromkeys(_KIND_NAMES.get(k, k.__name__) for k in kinds))


def read_metrics(path: Path, notes: list[str]) -> list[dict[str, Any]]:
    """The rows of ``metrics.jsonl`` with their numeric values (others dropped)."""
    rows: list[dict[str, Any]] = []
    lines = path.read_text(encoding="utf-8").split("\n")
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            if lineno == len(lines):
                notes.append(f"metrics.jsonl:{lineno}: skipped an incomplete last line")
                continue
            raise ViewerError(f"{path}:{lineno}: not JSON: {exc.msg}") from None
        if not isinstance(raw, dict):
            raise ViewerError(f"{path}:{lineno}: a metrics row must be a JSON object")
        row = {
            k: v
            for k, v in raw.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        }
        if "iteration" not in row:
            row["iteration"] = len(rows)
        rows.append(row)
    return rows


def load_run(source: Path, tokenizer: Path | None = None) -> RunData:
    """Read a run directory, a directory with ``trajectories.jsonl``, or a traces file."""
    source = Path(source)
    if not source.exists():
        raise ViewerError(f"{source} does not exist")
    notes: list[str] = []
    if source.is_file():
        if source.suffix != ".jsonl":
            raise ViewerError(f"{source}: expected a traces .jsonl file or a run directory")
        data = RunData(source=source, kind="traces", notes=notes)
        data.traces = [
            TraceFile(source, _iteration_of(source), read_traces(source, notes), _split_of(source))
        ]
    else:
        trace_dir = source / "traces"
        metrics = source / "metrics.jsonl"
        is_run = trace_dir.is_dir() or metrics.is_file() or (source / "config.yaml").is_file()
        data = RunData(source=source, kind="train" if is_run else "traces", notes=notes)
        files: list[Path] = []
        if trace_dir.is_dir():
            files = sorted(
                trace_dir.glob("*.jsonl"),
                key=lambda p: (_split_of(p), _iteration_of(p) or 0, p.name),
            )
        if (source / "trajectories.jsonl").is_file():
            files.append(source / "trajectories.jsonl")
        if not files and not is_run:
            raise ViewerError(
                f"{source}: no run here (expected metrics.jsonl, traces/*.jsonl "
                "or trajectories.jsonl)"
            )
        data.traces = [
            TraceFile(p, _iteration_of(p), read_traces(p, notes), _split_of(p)) for p in files
        ]
        if metrics.is_file():
            data.metrics = read_metrics(metrics, notes)
        if (source / "config.yaml").is_file():
            data.config_text = (source / "config.yaml").read_text(encoding="utf-8")
        if (source / "plots").is_dir():
            data.plots = sorted((source / "plots").glob("*.png"))
        if tokenizer is None and (source / "tokenizer" / "tokenizer.json").is_file():
            tokenizer = source / "tokenizer"
    if tokenizer is not None:
        if not (Path(tokenizer) / "tokenizer.json").is_file():
            raise ViewerError(f"{tokenizer}: no tokenizer.json in this directory")
        data.tokenizer_dir = Path(tokenizer)
    return data
