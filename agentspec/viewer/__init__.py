"""`agentspec view`: one self-contained HTML report of a training run or of traces.

    from agentspec.viewer import write_report
    write_report(Path("runs/calculator"), Path("report.html"))

Importing this package does not import torch (nor transformers).
"""

from __future__ import annotations

from pathlib import Path

from agentspec.viewer.load import RunData, ViewerError, load_run
from agentspec.viewer.report import build_payload, render_html

__all__ = [
    "RunData",
    "ViewerError",
    "build_payload",
    "default_output",
    "load_run",
    "render_html",
    "write_report",
]


def default_output(source: Path) -> Path:
    """`RUN/report.html` for a directory, `NAME.html` beside a traces file."""
    source = Path(source)
    return source / "report.html" if source.is_dir() else source.with_suffix(".html")


def write_report(
    source: Path,
    output: Path | None = None,
    *,
    tokenizer: Path | None = None,
    max_trajectories: int = 5000,
) -> Path:
    """Build the report of `source` (run dir, traces dir or .jsonl) and write it."""
    data = load_run(Path(source), tokenizer=tokenizer)
    payload = build_payload(data, max_trajectories=max_trajectories)
    target = Path(output) if output is not None else default_output(Path(source))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_html(payload), encoding="utf-8")
    return target
