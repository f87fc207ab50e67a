"""Step-level vs episode-level credit on tasks with a sparse final reward.

Two tasks of one family, both rewarding only the last step:
``specs/keys_and_doors.yaml`` (five correct decisions, two depending on the
sample) and ``specs/keys_and_chests.yaml`` (nine, four depending on the
sample). Every algorithm trains from the same short warm start per seed (the
commands and their order, not which way to go), at its own learning rate.

Per task and algorithm we report, over seeds, the mean and bootstrap 95 %
interval of

- env steps to 90 % greedy success: the environment steps when greedy
  evaluation first reaches 90 %; a run that never does counts with its whole
  budget (a lower bound, marked ``≥``), so slow and failed runs both weigh;
- success AUC: the area under the greedy-success curve over a common budget of
  environment steps, divided by the budget (1.0 = solved from the first step);

and, for StepPO against each other algorithm, the ratio of mean env steps with
its bootstrap interval. A difference is called significant when the 95 %
interval of the difference of means excludes 0.

    .venv/bin/python benchmarks/credit_assignment.py [--tasks keys_and_doors keys_and_chests]
        [--algorithms steppo ppo token_gae grpo gigpo] [--seeds 8] [--jobs 2]
        [--lr steppo=3e-4 ...] [--set KEY=VALUE ...] [--out runs/credit]

    # summarise the finished runs of a benchmark stopped part-way (trains nothing):
    .venv/bin/python benchmarks/credit_assignment.py --report [same arguments]

    # the sweeps that choose the settings (3 seeds on keys_and_doors by default):
    .venv/bin/python benchmarks/credit_assignment.py --sweep step_clip
    .venv/bin/python benchmarks/credit_assignment.py --sweep lr

Runs are independent processes (``--jobs`` at a time, one torch thread each).
The benchmark resumes where it stopped: a finished run is read, an unfinished
one continues from its latest checkpoint.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TASKS = ("keys_and_doors", "keys_and_chests")
ALGORITHMS = ("steppo", "ppo", "token_gae", "grpo", "gigpo")
THRESHOLD = 0.9
# Learning rate of each algorithm (from `--sweep lr`; the spec's 3e-4 until a sweep says otherwise).
LEARNING_RATES = {name: 3e-4 for name in ALGORITHMS}
# The step-clip ranges `--sweep step_clip` compares: (ε_low, ε_high).
STEP_CLIPS = ((3e-4, 4e-4), (1e-3, 1e-3), (1e-2, 1e-2), (0.04, 0.04), (0.2, 0.2))
SWEEP_LRS = (1e-4, 3e-4, 1e-3)

Records = list[dict[str, Any]]


# ----------------------------------------------------------------------------
# running
# ----------------------------------------------------------------------------


def train_one(spec: Path, out: Path, overrides: dict[str, Any], resume: bool) -> Path:
    from agentspec.runtime.backends.local import train

    return train(spec, out, overrides, resume=resume)


def read_records(run: Path) -> Records:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def finished(run: Path, iterations: int) -> bool:
    if not (run / "metrics.jsonl").is_file():
        return False
    return any(r.get("iteration") == iterations for r in read_records(run))


def run_all(jobs: dict[Path, tuple[Path, dict[str, Any]]], workers: int) -> None:
    """Train every unfinished run; one that has a checkpoint continues from it."""
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = []
        for out, (spec, overrides) in jobs.items():
            if finished(out, int(overrides["iterations"])):
                continue
            resume = (out / "checkpoints").is_dir() and any((out / "checkpoints").iterdir())
            if not resume and out.exists():
                shutil.rmtree(out)  # killed before its first checkpoint: start it again
            futures.append(pool.submit(train_one, spec, out, overrides, resume))
        for future in futures:
            future.result()


# ----------------------------------------------------------------------------
# statistics
# ----------------------------------------------------------------------------


def eval_curve(records: Records) -> list[tuple[int, float]]:
    return [(int(r["env_steps"]), r["eval/success"]) for r in records if "eval/success" in r]


def steps_to(records: Records, threshold: float = THRESHOLD) -> tuple[int, bool]:
    """(env steps when greedy success first reached ``threshold``, whether it did).

    A run that never reaches it returns its last logged env steps (a lower bound).
    """
    curve = eval_curve(records)
    for steps, success in curve:
        if success >= threshold:
            return steps, True
    return max((int(r.get("env_steps", 0)) for r in records), default=0), False


def success_auc(records: Records, budget: int) -> float:
    """Area under the greedy-success curve over [0, budget] env steps, divided by ``budget``.

    The curve is a step function: each evaluation's success holds until the
    next evaluation; past the last one, the last value holds to the budget.
    """
    curve = [(s, v) for s, v in eval_curve(records) if s <= budget]
    if not curve or budget <= 0:
        return 0.0
    area = 0.0
    for (start, value), (end, _) in zip(curve, [*curve[1:], (budget, 0.0)], strict=True):
        area += value * (end - start)
    return area / budget


def bootstrap_ci(
    samples: Sequence[float],
    statistic: Callable[[Sequence[float]], float] = statistics.fmean,
    *,
    resamples: int = 10_000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap 95 % interval of ``statistic`` over ``samples``."""
    rng = random.Random(seed)
    n = len(samples)
    values = sorted(
        statistic([samples[rng.randrange(n)] for _ in range(n)]) for _ in range(resamples)
    )
    return values[int(0.025 * resamples)], values[int(0.975 * resamples) - 1]


def bootstrap_difference(
    a: Sequence[float], b: Sequence[float], *, resamples: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    """Bootstrap 95 % interval of mean(a) − mean(b), resampling each side independently."""
    rng = random.Random(seed)
    diffs = sorted(
        statistics.fmean([a[rng.randrange(len(a))] for _ in a])
        - statistics.fmean([b[rng.randrange(len(b))] for _ in b])
        for _ in range(resamples)
    )
    return diffs[int(0.025 * resamples)], diffs[int(0.975 * resamples) - 1]


def final_success(records: Records) -> float:
    """Greedy success at the run's last evaluation."""
    curve = eval_curve(records)
    return curve[-1][1] if curve else 0.0


def largest_kl(records: Records) -> float:
    """The largest per-iteration ``actor/ppo_kl``: how far one update moved the policy."""
    return max((float(r["actor/ppo_kl"]) for r in records if "actor/ppo_kl" in r), default=0.0)


def summarize(runs: dict[str, list[Records]]) -> dict[str, dict[str, Any]]:
    """Per algorithm: env steps to 90 % and success AUC, each as mean and 95 % interval,
    with the final greedy success and the largest per-iteration KL (means over seeds)."""
    budget = min(max(int(r.get("env_steps", 0)) for r in run) for rs in runs.values() for run in rs)
    out: dict[str, dict[str, Any]] = {}
    for algorithm, rs in runs.items():
        reached = [steps_to(r) for r in rs]
        steps = [float(s) for s, _ in reached]
        aucs = [success_auc(r, budget) for r in rs]
        out[algorithm] = {
            "steps": steps,
            "reached": sum(ok for _, ok in reached),
            "steps_mean": statistics.fmean(steps),
            "steps_ci": bootstrap_ci(steps),
            "auc": aucs,
            "auc_mean": statistics.fmean(aucs),
            "auc_ci": bootstrap_ci(aucs),
            "final": statistics.fmean(final_success(r) for r in rs),
            "kl_max": statistics.fmean(largest_kl(r) for r in rs),
            "budget": budget,
        }
    return out


def table(summary: dict[str, dict[str, Any]]) -> str:
    lines = [
        f"| algorithm | env steps to {THRESHOLD:.0%} greedy success: mean [95 % CI] (seeds that reached it) "
        "| success AUC: mean [95 % CI] | final greedy success | largest iteration KL |",
        "|---|---|---|---|---|",
    ]
    for algorithm, s in summary.items():
        censored = "≥ " if s["reached"] < len(s["steps"]) else ""
        lo, hi = s["steps_ci"]
        alo, ahi = s["auc_ci"]
        lines.append(
            f"| `{algorithm}` | {censored}{s['steps_mean']:,.0f} [{lo:,.0f}, {hi:,.0f}] "
            f"({s['reached']}/{len(s['steps'])}) | {s['auc_mean']:.3f} [{alo:.3f}, {ahi:.3f}] "
            f"| {s['final']:.2f} | {s['kl_max']:.3f} |"
        )
    return "\n".join(lines)


def comparisons(summary: dict[str, dict[str, Any]], reference: str = "steppo") -> str:
    """StepPO against every other algorithm: ratio of mean env steps and significance."""
    if reference not in summary:
        return ""
    lines = [
        f"| `{reference}` vs | ratio of mean env steps to {THRESHOLD:.0%} | 95 % CI of the difference "
        "| significant | AUC difference 95 % CI | significant |",
        "|---|---|---|---|---|---|",
    ]
    ref = summary[reference]
    for algorithm, s in summary.items():
        if algorithm == reference:
            continue
        lo, hi = bootstrap_difference(ref["steps"], s["steps"])
        alo, ahi = bootstrap_difference(ref["auc"], s["auc"])
        lines.append(
            f"| `{algorithm}` | {ref['steps_mean'] / s['steps_mean']:.2f}× "
            f"| [{lo:,.0f}, {hi:,.0f}] | {'yes' if lo > 0 or hi < 0 else 'no'} "
            f"| [{alo:+.3f}, {ahi:+.3f}] | {'yes' if alo > 0 or ahi < 0 else 'no'} |"
        )
    return "\n".join(lines)


# ----------------------------------------------------------------------------
# plotting
# ----------------------------------------------------------------------------


def plot(results: dict[str, dict[str, list[Records]]], path: Path) -> None:
    """Greedy success against env steps, one panel per task (mean over seeds, band: 95 % CI)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(results), figsize=(5.5 * len(results), 3.8), sharey=True)
    for axis, (task, runs) in zip(
        [axes] if len(results) == 1 else axes, results.items(), strict=True
    ):
        for algorithm, rs in runs.items():
            curves = [eval_curve(r) for r in rs]
            length = min(len(c) for c in curves)
            xs = [statistics.fmean(c[i][0] for c in curves) for i in range(length)]
            ys = [[c[i][1] for c in curves] for i in range(length)]
            bands = [bootstrap_ci(y, resamples=1000) for y in ys]
            line = axis.plot(xs, [statistics.fmean(y) for y in ys], label=algorithm)[0]
            axis.fill_between(
                xs, [b[0] for b in bands], [b[1] for b in bands], color=line.get_color(), alpha=0.15
            )
        axis.axhline(THRESHOLD, color="grey", linewidth=0.8, linestyle="--")
        axis.set_title(f"{task}: greedy success, held out")
        axis.set_xlabel("environment steps")
    (axes if len(results) == 1 else axes[0]).set_ylabel("success (mean over seeds)")
    (axes if len(results) == 1 else axes[-1]).legend(loc="lower right")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)


# ----------------------------------------------------------------------------
# command line
# ----------------------------------------------------------------------------


def parse_pairs(pairs: Sequence[str], convert: Callable[[str], Any]) -> dict[str, Any]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"expected KEY=VALUE, got {pair!r}")
        out[key] = convert(value)
    return out


def sweep_variants(kind: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """Name → (algorithm, overrides) of each setting a sweep compares."""
    if kind == "step_clip":
        return {
            f"steppo-clip{lo:g}-{hi:g}": ("steppo", {"step_clip_low": lo, "step_clip_high": hi})
            for lo, hi in STEP_CLIPS
        }
    return {
        f"{algorithm}-lr{lr:g}": (algorithm, {"learning_rate": lr})
        for algorithm in ALGORITHMS
        for lr in SWEEP_LRS
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS))
    parser.add_argument("--seeds", type=int, default=None, help="8 (3 with --sweep)")
    parser.add_argument("--iterations", type=int, default=None, help="default: the spec's")
    parser.add_argument("--lr", nargs="*", default=[], help="ALGORITHM=LEARNING_RATE")
    parser.add_argument(
        "--set", nargs="*", default=[], dest="settings", help="KEY=VALUE for every run"
    )
    parser.add_argument("--sweep", choices=("step_clip", "lr"), default=None)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--report",
        action="store_true",
        help="train nothing: summarise the runs that have finished (a benchmark stopped part-way)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "credit")
    parser.add_argument("--figure", type=Path, default=None)
    args = parser.parse_args()

    seeds = args.seeds or (3 if args.sweep else 8)
    tasks = ["keys_and_doors"] if args.sweep and args.tasks == list(TASKS) else args.tasks
    shared = parse_pairs(args.settings, _json_or_text)
    rates = {**LEARNING_RATES, **parse_pairs(args.lr, float)}
    variants = (
        sweep_variants(args.sweep)
        if args.sweep
        else {a: (a, {"learning_rate": rates[a]}) for a in args.algorithms}
    )

    jobs: dict[Path, tuple[Path, dict[str, Any]]] = {}
    layout: dict[str, dict[str, list[Path]]] = {}
    # seed-major order: a benchmark stopped part-way has as many seeds of every variant
    for seed in range(seeds):
        for task in tasks:
            spec = ROOT / "specs" / f"{task}.yaml"
            for name, (algorithm, overrides) in variants.items():
                out = args.out / task / f"{name}-{seed}"
                settings = {**shared, **overrides, "algorithm": algorithm, "seed": seed}
                if args.iterations:
                    settings["iterations"] = args.iterations
                settings.setdefault("iterations", _spec_iterations(spec))
                jobs[out] = (spec, settings)
                if not args.report or finished(out, int(settings["iterations"])):
                    layout.setdefault(task, {}).setdefault(name, []).append(out)
    if not args.report:
        run_all(jobs, args.jobs)

    results = {
        task: {name: [read_records(p) for p in paths] for name, paths in by_name.items()}
        for task, by_name in layout.items()
    }
    for task, runs in results.items():
        summary = summarize(runs)
        counts = sorted({len(rs) for rs in runs.values()})
        print(
            f"\n### {task} ({'/'.join(map(str, counts))} seeds, "
            f"budget {next(iter(summary.values()))['budget']:,} env steps)\n"
        )
        print(table(summary))
        if not args.sweep:
            print("\n" + comparisons(summary))
    figure = args.figure or ROOT / "docs" / "img" / (
        f"credit_sweep_{args.sweep}.png" if args.sweep else "credit_assignment.png"
    )
    plot(results, figure)
    print(f"\nplot: {figure}")


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def _spec_iterations(spec: Path) -> int:
    import yaml

    return int(yaml.safe_load(spec.read_text())["training"]["iterations"])


if __name__ == "__main__":
    main()
