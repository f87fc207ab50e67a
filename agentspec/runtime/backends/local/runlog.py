"""The run directory: resolved config, metrics (JSONL + TensorBoard), traces, plots.

RUN/config.yaml            the resolved training configuration and the spec's hash
RUN/metrics.jsonl          one JSON object per iteration: `iteration`, `env_steps`,
                           `rollout/…`, `reward/<component>`, `loss/…`, `actor/…`,
                           `eval/…`, `perf/…`
RUN/tensorboard/           the same scalars as TensorBoard event files
RUN/traces/iter_N.jsonl    sampled training trajectories (steps carry `advantage`)
RUN/traces/eval_N.jsonl    evaluation trajectories
RUN/plots/*.png            curves written at the end
RUN/checkpoints/iter_N/    see checkpoint.py
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml


def read_run_config(run_dir: Path) -> dict[str, Any]:
    """RUN/config.yaml as written by :meth:`RunLog.write_config`; ``{}`` when there is none."""
    file = run_dir / "config.yaml"
    return dict(yaml.safe_load(file.read_text(encoding="utf-8"))) if file.exists() else {}


class RunLog:
    def __init__(self, path: Path):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        (path / "traces").mkdir(exist_ok=True)
        self._tensorboard: Any = None

    @property
    def metrics_file(self) -> Path:
        return self.path / "metrics.jsonl"

    def write_config(
        self, config: Mapping[str, Any], notes: Mapping[str, str] | None = None
    ) -> None:
        """`config.yaml`; `notes` are comments after top-level keys (what an unset
        setting, `null`, resolved to)."""
        notes = notes or {}
        lines = yaml.safe_dump(dict(config), sort_keys=False).splitlines()
        for i, line in enumerate(lines):
            key = line.partition(":")[0]
            if not line.startswith(" ") and key in notes:
                lines[i] = f"{line}  # {notes[key]}"
        (self.path / "config.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")

    def read_config(self) -> dict[str, Any]:
        return read_run_config(self.path)

    def log(self, record: Mapping[str, Any]) -> None:
        clean = {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in record.items()
        }
        with self.metrics_file.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(clean, sort_keys=True) + "\n")
        writer = self._writer()
        step = int(record.get("iteration", 0))
        for key, value in record.items():
            if (
                key != "iteration"
                and isinstance(value, (int, float))
                and not isinstance(value, bool)
            ):
                writer.add_scalar(key, value, step)
        writer.flush()

    def _writer(self) -> Any:
        if self._tensorboard is None:
            from torch.utils.tensorboard import SummaryWriter

            self._tensorboard = SummaryWriter(str(self.path / "tensorboard"))
        return self._tensorboard

    def records(self) -> list[dict[str, Any]]:
        if not self.metrics_file.exists():
            return []
        lines = self.metrics_file.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def truncate_after(self, iteration: int) -> None:
        """Drop records of iterations after `iteration` (a resumed run redoes them)."""
        kept = [r for r in self.records() if int(r.get("iteration", 0)) <= iteration]
        tmp = self.metrics_file.with_suffix(".tmp")
        tmp.write_text(
            "".join(json.dumps(r, sort_keys=True) + "\n" for r in kept), encoding="utf-8"
        )
        tmp.replace(self.metrics_file)

    def close(self) -> None:
        if self._tensorboard is not None:
            self._tensorboard.close()

    def plot(self) -> list[Path]:
        """Success, reward components and KL/entropy curves as PNG files."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        records = self.records()
        out = self.path / "plots"
        out.mkdir(exist_ok=True)
        panels = {
            "success.png": ("success", ["rollout/success", "eval/success"]),
            "reward_components.png": (
                "reward per episode",
                [
                    "rollout/reward",
                    *sorted({k for r in records for k in r if k.startswith("reward/")}),
                ],
            ),
            "kl_entropy.png": (
                "policy statistics",
                ["actor/kl", "actor/entropy", "actor/clip_fraction"],
            ),
            "losses.png": ("losses", ["loss/policy", "loss/value"]),
        }
        written = []
        for name, (title, keys) in panels.items():
            figure, axis = plt.subplots(figsize=(6, 3.5))
            drawn = False
            for key in keys:
                points = [(r["env_steps"], r[key]) for r in records if r.get(key) is not None]
                if points:
                    xs, ys = zip(*points, strict=True)
                    axis.plot(
                        xs,
                        ys,
                        marker="o" if key.startswith("eval/") else None,
                        label=key,
                        markersize=3,
                    )
                    drawn = True
            axis.set_title(title)
            axis.set_xlabel("environment steps")
            if drawn:
                axis.legend(fontsize=7)
            figure.tight_layout()
            figure.savefig(out / name, dpi=100)
            plt.close(figure)
            written.append(out / name)
        return written
