"""verl's metrics in the run directory's format: ``RUN/metrics.jsonl``, one object per step.

:func:`convert_metrics` maps one record of verl's file logger
(``RUN/verl_metrics.jsonl``) to agentspec's names (``loss/policy``,
``rollout/success``, ``eval/<metric>``, ...; every verl metric also as
``verl/<name>``); :class:`MetricsStream` tails verl's file while the run goes
and appends the converted records.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["MetricsStream", "convert_metrics"]


_RENAMES = {
    "actor/pg_loss": "loss/policy",
    "critic/vf_loss": "loss/value",
    "actor/kl_loss": "actor/kl",
    "actor/entropy": "actor/entropy",
    "actor/pg_clipfrac": "actor/clipfrac",
    "perf/throughput": "perf/tokens_per_s",
    "critic/score/mean": "reward/total",
    "timing_s/step": "perf/step_s",
}


def convert_metrics(step: int, data: Mapping[str, Any]) -> dict[str, Any]:
    """One verl log record in the run-directory format (see the module docstring)."""
    out: dict[str, Any] = {"iteration": int(step)}
    for key, value in data.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if not math.isfinite(number):
            number = float("nan")
        out[f"verl/{key}"] = number
        if key in _RENAMES:
            out[_RENAMES[key]] = number
        elif key.startswith(("reward/", "rollout/", "opd/")):  # the agentspec trainer's own
            out[key] = number
        elif key.startswith(("val-core/", "val-aux/")):
            # val-core/<source>/<metric>/mean@1 -> eval/<metric>
            parts = key.split("/")
            if len(parts) >= 4 and parts[-1].startswith("mean@"):
                name = "/".join(parts[2:-1]).removeprefix("reward/")
                name = "success" if name == "success" else name
                out.setdefault(f"eval/{name}", number)
    if "actor/kl" not in out and "actor/ppo_kl" in data:
        out["actor/kl"] = float(data["actor/ppo_kl"])
    return out


class MetricsStream:
    """Tails verl's file logger and appends converted records to ``RUN/metrics.jsonl``."""

    def __init__(self, source: Path, dest: Path) -> None:
        self.source, self.dest = source, dest
        self.stop = threading.Event()
        self.offset = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> MetricsStream:
        self.dest.write_text("")
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.flush()

    def _run(self) -> None:
        while not self.stop.wait(1.0):
            self.flush()

    def flush(self) -> None:
        if not self.source.exists():
            return
        with self.source.open("rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        with self.dest.open("a", encoding="utf-8") as out:
            for line in complete.decode("utf-8").splitlines():
                if line.strip():
                    record = json.loads(line)
                    out.write(json.dumps(convert_metrics(record["step"], record["data"])) + "\n")
