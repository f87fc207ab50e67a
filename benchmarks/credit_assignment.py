"""Step-level vs episode-level credit on a task with a sparse final reward.

specs/keys_and_doors.yaml needs five correct decisions in a row, two of them
depending on the sample (which way to the key, which way back), and rewards
only the last step. Each algorithm trains from the same short warm start per
seed (150 behaviour-cloning steps: the commands and their order, not which way
to go). We report the environment steps until greedy evaluation first reaches
90 % success (mean ± spread over the seeds that reached it), the final greedy
success and the sampled success of the last iterations, and plot greedy and
sampled success against environment steps (mean over seeds).

    .venv/bin/python benchmarks/credit_assignment.py [--seeds 3] [--iterations 60]
        [--algorithms steppo ppo grpo token_gae] [--jobs 2] [--out runs/credit]
        [--figure docs/img/credit_assignment.png]

Runs are independent processes (`--jobs` at a time, one torch thread each);
a run directory that already holds a finished run is read, not retrained.
"""

from __future__ import annotations

import argparse
import json
import statistics
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "specs" / "keys_and_doors.yaml"
THRESHOLD = 0.9


def train_one(out: Path, overrides: dict[str, Any]) -> Path:
    from agentspec.runtime.backends.local import train

    return train(SPEC, out, overrides)


def read_records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def finished(run: Path, iterations: int) -> bool:
    if not (run / "metrics.jsonl").is_file():
        return False
    return any(r.get("iteration") == iterations for r in read_records(run))


def steps_to(records: list[dict[str, Any]], threshold: float) -> int | None:
    """Environment steps when greedy success first reached `threshold` (None: never)."""
    for record in records:
        if record.get("eval/success") is not None and record["eval/success"] >= threshold:
            return int(record["env_steps"])
    return None


def eval_curve(records: list[dict[str, Any]]) -> list[tuple[int, float]]:
    return [(int(r["env_steps"]), r["eval/success"]) for r in records if "eval/success" in r]


def late_rollout_success(records: list[dict[str, Any]], last: int = 5) -> float:
    """Mean success of the sampled (temperature 1) rollouts of the last iterations."""
    values = [r["rollout/success"] for r in records if "rollout/success" in r][-last:]
    return statistics.mean(values)


def table(results: dict[str, list[list[dict[str, Any]]]]) -> str:
    lines = [
        f"| algorithm | env steps to {THRESHOLD:.0%} greedy success (mean ± sd; seeds that reached it) "
        "| final greedy success (mean; per seed) | sampled success, last 5 iterations (mean; per seed) |",
        "|---|---|---|---|",
    ]
    for algorithm, runs in results.items():
        reached = [s for s in (steps_to(r, THRESHOLD) for r in runs) if s is not None]
        spread = (
            f"{statistics.mean(reached):,.0f} ± {statistics.pstdev(reached):,.0f}"
            if reached
            else "never"
        )
        finals = [eval_curve(r)[-1][1] for r in runs]
        per_seed = ", ".join(f"{f:.2f}" for f in finals)
        sampled = [late_rollout_success(r) for r in runs]
        sampled_per_seed = ", ".join(f"{f:.2f}" for f in sampled)
        lines.append(
            f"| `{algorithm}` | {spread} ({len(reached)}/{len(runs)}) "
            f"| {statistics.mean(finals):.2f} ({per_seed}) "
            f"| {statistics.mean(sampled):.2f} ({sampled_per_seed}) |"
        )
    return "\n".join(lines)


def mean_curve(curves: list[list[tuple[int, float]]]) -> tuple[list[float], list[list[float]]]:
    """Seeds log at the same iterations but reach different env steps: average both."""
    length = min(len(c) for c in curves)
    xs = [statistics.mean(c[i][0] for c in curves) for i in range(length)]
    ys = [[c[i][1] for c in curves] for i in range(length)]
    return xs, ys


def plot(results: dict[str, list[list[dict[str, Any]]]], path: Path) -> None:
    """Greedy (held-out) and sampled (training rollouts) success against env steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (greedy, sampled) = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    for algorithm, runs in results.items():
        xs, ys = mean_curve([eval_curve(r) for r in runs])
        line = greedy.plot(xs, [statistics.mean(y) for y in ys], marker="o", markersize=3)[0]
        greedy.fill_between(xs, [min(y) for y in ys], [max(y) for y in ys], alpha=0.15)
        rollout = [
            [(int(r["env_steps"]), r["rollout/success"]) for r in run if "rollout/success" in r]
            for run in runs
        ]
        xs, ys = mean_curve(rollout)
        sampled.plot(xs, [statistics.mean(y) for y in ys], color=line.get_color(), label=algorithm)
    greedy.axhline(THRESHOLD, color="grey", linewidth=0.8, linestyle="--")
    greedy.set_title("greedy success, held out (band: min..max over seeds)")
    sampled.set_title("sampled success of the training rollouts")
    for axis in (greedy, sampled):
        axis.set_xlabel("environment steps")
    greedy.set_ylabel(f"success (mean of {len(next(iter(results.values())))} seeds)")
    sampled.legend(loc="upper left")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--warm-start", type=int, default=150)
    parser.add_argument("--algorithms", nargs="+", default=["steppo", "ppo", "grpo", "token_gae"])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "credit")
    parser.add_argument(
        "--figure", type=Path, default=ROOT / "docs" / "img" / "credit_assignment.png"
    )
    args = parser.parse_args()

    runs = {
        (algorithm, seed): args.out / f"{algorithm}-{seed}"
        for algorithm in args.algorithms
        for seed in range(args.seeds)
    }
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [
            pool.submit(
                train_one,
                path,
                {
                    "algorithm": algorithm,
                    "seed": seed,
                    "iterations": args.iterations,
                    "warm_start": args.warm_start,
                },
            )
            for (algorithm, seed), path in runs.items()
            if not finished(path, args.iterations)
        ]
        for future in futures:
            future.result()

    results: dict[str, list[list[dict[str, Any]]]] = {}
    for (algorithm, _), path in runs.items():
        results.setdefault(algorithm, []).append(read_records(path))
    print(table(results))
    plot(results, args.figure)
    print(f"\nplot: {args.figure}")


if __name__ == "__main__":
    main()
