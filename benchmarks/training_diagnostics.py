"""What a local training run did, iteration by iteration: the diagnostic panels.

Reads a run's ``metrics.jsonl`` (or a compact copy committed under
``benchmarks/results/diagnostics/``) and plots, against environment steps:
greedy and sampled success, the KL to the warm-started policy and the policy
entropy, the advantages' spread and the share of groups whose episodes all
returned the same, the critic's explained variance, the gradient norm, and the
clip fractions (StepPO clips steps; the token-level fraction is what a token
clip at the same range would have cut).

    .venv/bin/python benchmarks/training_diagnostics.py RUN_OR_JSONL [...] --out docs/img/diag.png
    # keep a run's diagnostics as data (the plot can be redrawn from it alone):
    .venv/bin/python benchmarks/training_diagnostics.py runs/x --save benchmarks/results/diagnostics/x.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

PANELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("success (greedy, held out / sampled, rollouts)", ("eval/success", "rollout/success")),
    ("KL to the warm start", ("actor/kl",)),
    ("policy entropy (per token)", ("actor/entropy",)),
    ("advantages: std / share of all-equal groups", ("adv/std", "rollout/all_equal_groups")),
    ("critic explained variance", ("critic/explained_variance",)),
    ("policy grad norm (before clipping)", ("actor/grad_norm",)),
    ("clip fraction (step / token)", ("actor/clipfrac", "actor/token_clipfrac")),
)
KEPT = ("iteration", "env_steps", *(k for _, keys in PANELS for k in keys))


def read(source: Path) -> list[dict[str, Any]]:
    path = source / "metrics.jsonl" if source.is_dir() else source
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def compact(records: list[dict[str, Any]]) -> str:
    """One JSON line per iteration with the metrics the panels read."""
    rows = [{k: r[k] for k in KEPT if k in r} for r in records]
    return "".join(json.dumps(row, separators=(",", ":")) + "\n" for row in rows)


def plot(runs: dict[str, list[dict[str, Any]]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(
        len(PANELS), 1, figsize=(7.5, 2.0 * len(PANELS)), sharex=True, squeeze=False
    )
    for axis, (title, keys) in zip(axes[:, 0], PANELS, strict=True):
        for (name, records), colour in zip(runs.items(), ("C0", "C3", "C2", "C1"), strict=False):
            for key, style in zip(keys, ("-", ":"), strict=False):
                points = [
                    (r["env_steps"], r[key]) for r in records if key in r and "env_steps" in r
                ]
                if points:
                    xs, ys = zip(*points, strict=True)
                    axis.plot(xs, ys, style, color=colour, label=f"{name}: {key}", linewidth=1.2)
        axis.set_title(title, fontsize=9)
        axis.tick_params(labelsize=8)
    axes[0, 0].legend(fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("environment steps")
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=100)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("runs", nargs="+", type=Path, help="run directories or metrics JSONL files")
    parser.add_argument("--names", nargs="*", default=None, help="a legend name per run")
    parser.add_argument("--out", type=Path, default=None, help="the plot (PNG)")
    parser.add_argument(
        "--save", type=Path, default=None, help="write the first run's compact metrics here"
    )
    args = parser.parse_args()
    names = args.names or [p.stem if p.is_file() else p.name for p in args.runs]
    runs = {name: read(path) for name, path in zip(names, args.runs, strict=True)}
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        args.save.write_text(compact(next(iter(runs.values()))), encoding="utf-8")
        print(f"saved: {args.save}")
    if args.out:
        plot(runs, args.out)
        print(f"plot: {args.out}")


if __name__ == "__main__":
    main()
