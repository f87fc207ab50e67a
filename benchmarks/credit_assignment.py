"""Step-level vs episode-level credit: three tasks of one family.

Two reward only the last step: ``specs/keys_and_doors.yaml`` (five correct
decisions, two depending on the sample) and ``specs/keys_and_chests.yaml``
(nine, four depending on the sample). The third, ``specs/switches.yaml``,
rewards every step on its own: four independent decisions (set each switch as
its lamp asks), where the episode's return says how many were right but not
which. Every algorithm trains from the same short warm start per seed (the
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

    .venv/bin/python benchmarks/credit_assignment.py [--tasks keys_and_doors keys_and_chests switches]
        [--algorithms steppo ppo token_gae grpo gigpo] [--seeds 8] [--jobs 1]
        [--lr steppo=3e-4 ...] [--set KEY=VALUE ...] [--out runs/credit]

    # the README's table and plot from the committed results alone (trains nothing):
    .venv/bin/python benchmarks/credit_assignment.py --report [--write-readme]   # every committed seed

    # the sweeps that choose the settings (3 seeds on keys_and_doors by default):
    .venv/bin/python benchmarks/credit_assignment.py --sweep lr
    .venv/bin/python benchmarks/credit_assignment.py --sweep step_clip

Results are data. Every finished run writes a compact summary (its settings,
seed, and per iteration the env steps, greedy and sampled success, the KL to
the warm start and the policy entropy) to
``benchmarks/results/credit/<task>/<variant>/seed<N>.json``, committed with the
code. A run whose result is there (for the same spec, settings and
``BENCHMARK_VERSION``) is not trained again, on any machine; an unfinished one
continues from its checkpoint under ``--out``. A run at a rate the sweep chose is
the sweep's run of that rate and seed (the same settings), so it is read from the
sweep's result instead of being trained twice. The measures are environment
steps, not seconds, so the benchmark can run on one core beside other work
(``--jobs 1``; every run uses one torch thread) and accumulate across sessions.
Bump ``BENCHMARK_VERSION`` when the trainer's behaviour changes: results of
another version are kept in the file but no longer count.

Each algorithm runs at its own learning rate: the best mean success AUC of its
``--sweep lr`` results on the task when they are there, else on keys_and_doors
(the sweep's default task), else the spec's. Every algorithm
starts a seed from the same warm start (the spec's behaviour cloning, seeded),
so algorithms are compared per seed (paired).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import shutil
import statistics
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "credit"
BENCHMARK_VERSION = 3
"""3: the held-out set is balanced over key side and colour, and every reward-driven
algorithm has a KL penalty of 0.02 to the warm-started policy by default (its preset).
2: the critic starts from the warm-started policy, the reference is the warm-started
policy, per-iteration diagnostics (results of version 1 were never committed)."""
TASKS = ("keys_and_doors", "keys_and_chests", "switches")
ALGORITHMS = ("steppo", "ppo", "token_gae", "grpo", "gigpo")
THRESHOLD = 0.9
# The step-clip ranges `--sweep step_clip` compares: (ε_low, ε_high).
STEP_CLIPS = ((3e-4, 4e-4), (1e-3, 1e-3), (1e-2, 1e-2), (0.04, 0.04), (0.2, 0.2))
SWEEP_LRS = (1e-4, 3e-4, 1e-3)
# What a result keeps of each iteration's metrics (the curve the report reads).
CURVE_KEYS = (
    "iteration",
    "env_steps",
    "eval/success",
    "rollout/success",
    "actor/kl",
    "actor/entropy",
    "actor/ppo_kl",
)

Records = list[dict[str, Any]]


@dataclass(frozen=True)
class Job:
    """One training run of the benchmark: a task, a named variant, a seed."""

    task: str
    variant: str
    seed: int
    settings: dict[str, Any]  # the overrides of the spec's training section

    @property
    def spec(self) -> Path:
        return ROOT / "specs" / f"{self.task}.yaml"

    @property
    def result(self) -> Path:
        return RESULTS / self.task / self.variant / f"seed{self.seed}.json"

    @property
    def sweep_twin(self) -> Path | None:
        """Where ``--sweep lr`` keeps the run of this job's algorithm, learning rate and
        seed. A run at a swept rate is that very run when their settings agree, so it
        is read from there rather than trained twice."""
        algorithm, lr = self.settings.get("algorithm"), self.settings.get("learning_rate")
        if not isinstance(algorithm, str) or not isinstance(lr, (int, float)):
            return None
        return RESULTS / self.task / f"{algorithm}-lr{lr:g}" / f"seed{self.seed}.json"

    def identity(self) -> dict[str, Any]:
        """What a committed result must match to count for this job."""
        return {
            "benchmark_version": BENCHMARK_VERSION,
            "spec_sha256": hashlib.sha256(self.spec.read_bytes()).hexdigest(),
            "settings": json.loads(json.dumps(self.settings, sort_keys=True)),
        }


# ----------------------------------------------------------------------------
# results
# ----------------------------------------------------------------------------


def read_result(job: Job) -> Records | None:
    """The job's committed curve: its own result, else its sweep twin's; either counts
    only if it matches the job (spec, settings, version)."""
    identity = job.identity()
    for path in (job.result, job.sweep_twin):
        if path is not None and path.is_file():
            data = json.loads(path.read_text(encoding="utf-8"))
            if {k: data.get(k) for k in identity} == identity:
                return list(data["curve"])
    return None


def write_result(job: Job, records: Records) -> None:
    """A compact summary of a finished run: identity, then one entry per iteration."""
    curve = [{k: r[k] for k in CURVE_KEYS if k in r} for r in records]
    data = {"task": job.task, "variant": job.variant, "seed": job.seed, **job.identity()}
    data["curve"] = curve
    job.result.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=None, separators=(",", ":"), sort_keys=False)
    job.result.write_text(text.replace("},{", "},\n{") + "\n", encoding="utf-8")


# ----------------------------------------------------------------------------
# running
# ----------------------------------------------------------------------------


def train_one(job: Job, out: Path) -> Records:
    """Train the job (continuing from a checkpoint under ``out`` of this very job);
    returns its metrics."""
    from agentspec.runtime.backends.local import train

    stamp = out / "benchmark_job.json"
    identity = json.dumps({"task": job.task, "variant": job.variant, **job.identity()})
    mine = stamp.is_file() and stamp.read_text(encoding="utf-8") == identity
    resume = mine and (out / "checkpoints").is_dir() and any((out / "checkpoints").iterdir())
    if not resume and out.exists():
        # killed before its first checkpoint, or another version's or setting's run
        # (an older benchmark's checkpoint must not finish this job): start again
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    stamp.write_text(identity, encoding="utf-8")
    train(job.spec, out, job.settings, resume=resume)
    return read_records(out)


def read_records(run: Path) -> Records:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def run_all(jobs: Sequence[Job], out: Path, workers: int) -> list[Job]:
    """Train every job without a matching result; each result is written as it finishes.
    A run that fails is reported and left out, and the others go on (an exception
    leaving the loop would stop every later result from being written, while the pool
    went on training them); returns the failed jobs."""
    pending = [job for job in jobs if read_result(job) is None]
    print(f"{len(jobs) - len(pending)} of {len(jobs)} runs have results; training {len(pending)}")
    failed: list[Job] = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {
            pool.submit(train_one, job, out / job.task / f"{job.variant}-{job.seed}"): job
            for job in pending
        }
        for future in as_completed(futures):
            job = futures[future]
            try:
                records = future.result()
            except Exception as exc:
                print(
                    f"failed: {job.task} {job.variant} seed {job.seed}: {type(exc).__name__}: {exc}"
                )
                failed.append(job)
                continue
            write_result(job, records)
            print(f"result: {job.result.relative_to(ROOT)}", flush=True)
    return failed


def swept_learning_rate(task: str, algorithm: str, seeds: int = 3) -> float | None:
    """The learning rate of ``algorithm`` with the best mean success AUC in the committed
    ``--sweep lr`` results on ``task`` (all of its rates × ``seeds`` needed), else None."""
    found: dict[float, Records] = {}
    for lr in SWEEP_LRS:
        jobs = [
            Job(task, f"{algorithm}-lr{lr:g}", s, sweep_settings(task, algorithm, lr, s))
            for s in range(seeds)
        ]
        curves = [read_result(j) for j in jobs]
        if any(c is None for c in curves):
            return None
        found[lr] = curves  # type: ignore[assignment]
    budget = min(max(int(r.get("env_steps", 0)) for r in c) for cs in found.values() for c in cs)
    return max(found, key=lambda lr: statistics.fmean(success_auc(c, budget) for c in found[lr]))


def sweep_settings(task: str, algorithm: str, lr: float, seed: int) -> dict[str, Any]:
    return {
        "learning_rate": lr,
        "algorithm": algorithm,
        "seed": seed,
        "iterations": _spec_iterations(ROOT / "specs" / f"{task}.yaml"),
    }


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
            "fall": largest_fall(rs),
            "budget": budget,
        }
    return out


def largest_fall(runs: list[Records]) -> float:
    """How far mean greedy success (over seeds) ever fell below its value at the warm
    start, over the evaluations every run has (0 when it never fell)."""
    curves = [eval_curve(r) for r in runs]
    length = min(len(c) for c in curves)
    means = [statistics.fmean(c[i][1] for c in curves) for i in range(length)]
    return max((means[0] - m for m in means), default=0.0)


def table(summary: dict[str, dict[str, Any]]) -> str:
    lines = [
        f"| algorithm | env steps to {THRESHOLD:.0%} greedy success: mean [95 % CI] (seeds that reached it) "
        "| success AUC: mean [95 % CI] | final greedy success | largest fall below the warm start "
        "| largest iteration KL |",
        "|---|---|---|---|---|---|",
    ]
    for algorithm, s in summary.items():
        censored = "≥ " if s["reached"] < len(s["steps"]) else ""
        lo, hi = s["steps_ci"]
        alo, ahi = s["auc_ci"]
        lines.append(
            f"| `{algorithm}` | {censored}{s['steps_mean']:,.0f} [{lo:,.0f}, {hi:,.0f}] "
            f"({s['reached']}/{len(s['steps'])}) | {s['auc_mean']:.3f} [{alo:.3f}, {ahi:.3f}] "
            f"| {s['final']:.2f} | {s['fall']:.2f} | {s['kl_max']:.3f} |"
        )
    return "\n".join(lines)


COMPARISON_HEADER = (
    f"| `{{reference}}` vs | seeds paired | ratio of mean env steps to {THRESHOLD:.0%} "
    "[paired 95 % CI] | significant | AUC difference [paired 95 % CI] | significant "
    "| seeds to show 0.7× at this spread |\n|---|---|---|---|---|---|---|"
)


def comparisons(summary: dict[str, dict[str, Any]], reference: str = "steppo") -> str:
    """StepPO against every other algorithm, paired by seed (each seed's runs start from
    the same warm start): the ratio of mean env steps to 90 % with its bootstrap interval
    (seeds resampled together), the AUC difference, and the seeds a 0.7× effect needs."""
    if reference not in summary:
        return ""
    lines = [COMPARISON_HEADER.format(reference=reference)]
    ref = summary[reference]
    for algorithm, s in summary.items():
        if algorithm == reference or len(s["steps"]) != len(ref["steps"]):
            continue
        ratio = ref["steps_mean"] / s["steps_mean"]
        rlo, rhi = paired_bootstrap(ref["steps"], s["steps"], _ratio_of_means)
        alo, ahi = paired_bootstrap(ref["auc"], s["auc"], _difference_of_means)
        lines.append(
            f"| `{algorithm}` | {len(s['steps'])} | {ratio:.2f}× [{rlo:.2f}, {rhi:.2f}] "
            f"| {'yes' if rlo > 1 or rhi < 1 else 'no'} "
            f"| {statistics.fmean(ref['auc']) - statistics.fmean(s['auc']):+.3f} "
            f"[{alo:+.3f}, {ahi:+.3f}] | {'yes' if alo > 0 or ahi < 0 else 'no'} "
            f"| {seeds_for_effect(ref['steps'], s['steps'], 0.7)} |"
        )
    return "\n".join(lines)


def _ratio_of_means(a: Sequence[float], b: Sequence[float]) -> float:
    return statistics.fmean(a) / max(statistics.fmean(b), 1e-12)


def _difference_of_means(a: Sequence[float], b: Sequence[float]) -> float:
    return statistics.fmean(a) - statistics.fmean(b)


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    statistic: Callable[[Sequence[float], Sequence[float]], float],
    *,
    resamples: int = 10_000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap 95 % interval of ``statistic(a, b)``, resampling seeds: the
    same indices on both sides, so each seed's pair stays together."""
    rng = random.Random(seed)
    n = len(a)
    values = []
    for _ in range(resamples):
        picks = [rng.randrange(n) for _ in range(n)]
        values.append(statistic([a[i] for i in picks], [b[i] for i in picks]))
    values.sort()
    return values[int(0.025 * resamples)], values[int(0.975 * resamples) - 1]


def seeds_for_effect(a: Sequence[float], b: Sequence[float], ratio: float) -> str:
    """Seeds a paired two-sided test (α = 0.05, power 0.8) needs to detect mean(a) =
    ``ratio`` × mean(b), given the spread of the per-seed differences seen here."""
    if len(a) < 2:
        return "—"
    spread = statistics.stdev(x - y for x, y in zip(a, b, strict=True))
    effect = (1.0 - ratio) * statistics.fmean(b)
    if effect <= 0:
        return "—"
    z_alpha, z_power = 1.959964, 0.841621
    return str(max(2, math.ceil(((z_alpha + z_power) * spread / effect) ** 2)))


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


def benchmark_jobs(args: argparse.Namespace) -> list[Job]:
    """Every run the arguments ask for, seed-major (a benchmark stopped part-way has as
    many seeds of every variant)."""
    seeds = args.seeds or (3 if args.sweep else 8)
    tasks = ["keys_and_doors"] if args.sweep and args.tasks == list(TASKS) else args.tasks
    shared = parse_pairs(args.settings, _json_or_text)
    given = parse_pairs(args.lr, float)
    jobs = []
    for seed in range(seeds):
        for task in tasks:
            spec = ROOT / "specs" / f"{task}.yaml"
            if args.sweep:
                variants = sweep_variants(args.sweep)
            else:
                variants = {
                    a: (a, {"learning_rate": given.get(a) or _rate(task, a)})
                    for a in args.algorithms
                }
            for name, (algorithm, overrides) in variants.items():
                settings = {**shared, **overrides, "algorithm": algorithm, "seed": seed}
                settings.setdefault("iterations", args.iterations or _spec_iterations(spec))
                jobs.append(Job(task, name, seed, settings))
    return jobs


def _rate(task: str, algorithm: str) -> float:
    """The swept learning rate on ``task`` where its sweep's results are committed, else
    the one swept on keys_and_doors, else the spec's."""
    for swept_on in (task, "keys_and_doors"):
        swept = swept_learning_rate(swept_on, algorithm)
        if swept is not None:
            return swept
    import yaml

    spec = yaml.safe_load((ROOT / "specs" / f"{task}.yaml").read_text())
    return float(spec["training"].get("learning_rate", 1e-3))


def committed_seeds() -> set[int]:
    """Every seed some committed result is of (the report reads them all: an algorithm
    may have more seeds than another)."""
    return {int(p.stem.removeprefix("seed")) for p in RESULTS.glob("*/*/seed*.json")}


def paired_rows(variants: dict[str, dict[int, Records]], reference: str = "steppo") -> list[str]:
    """One comparison row per algorithm against ``reference``, each over the seeds the two
    share (an algorithm run on more seeds than another is paired on all of its own)."""
    if reference not in variants:
        return []
    rows = []
    for name, seeds in variants.items():
        both = sorted(set(seeds) & set(variants[reference]))
        if name == reference or not both:
            continue
        pair = {reference: [variants[reference][s] for s in both], name: [seeds[s] for s in both]}
        rows += comparisons(summarize(pair), reference).splitlines()[2:]
    return rows


def report(jobs: Sequence[Job], sweep: bool, figure: Path) -> str:
    """The markdown tables and the plot, from the committed results of ``jobs`` alone."""
    by_seed: dict[str, dict[str, dict[int, Records]]] = {}
    for job in jobs:
        curve = read_result(job)
        if curve is not None:
            by_seed.setdefault(job.task, {}).setdefault(job.variant, {})[job.seed] = curve
    results = {
        task: {name: [seeds[s] for s in sorted(seeds)] for name, seeds in variants.items()}
        for task, variants in by_seed.items()
    }
    sections = []
    for task, variants in by_seed.items():
        counts = sorted({len(seeds) for seeds in variants.values()})
        summary = summarize(results[task])
        sections.append(
            f"#### {task} ({'/'.join(map(str, counts))} seeds; budget "
            f"{next(iter(summary.values()))['budget']:,} env steps)\n\n" + table(summary)
        )
        rows = [] if sweep else paired_rows(variants)
        if rows:
            sections[-1] += "\n\nPaired by seed, each row over the seeds both algorithms have:\n\n"
            sections[-1] += "\n".join([COMPARISON_HEADER.format(reference="steppo"), *rows])
            budget = next(iter(summary.values()))["budget"]
            limits = limit_rows(variants, budget)
            if limits:
                sections[-1] += (
                    f"\n\nWhat the metric can show, every run cut at the common budget "
                    f"({budget:,} env steps; a run that did not reach {THRESHOLD:.0%} within it "
                    "counts as the budget):\n\n"
                )
                sections[-1] += "\n".join([LIMITS_HEADER, *limits])
    if results:
        plot(results, figure)
    return "\n\n".join(sections)


LIMITS_HEADER = (
    "| `steppo` vs | seeds | tie by construction: both at the warm start / neither within "
    "the budget | informative | ratio of mean env steps [paired 95 % CI] | ceiling "
    "| on informative seeds [paired 95 % CI] | ceiling on informative seeds |\n"
    "|---|---|---|---|---|---|---|---|"
)


def cut_at(records: Records, budget: int) -> tuple[int, bool, int]:
    """(env steps to 90 % within ``budget`` — the budget when not reached —, whether it
    was reached, the first evaluation after the warm start: the soonest a run can reach
    it by learning)."""
    curve = [(s, v) for s, v in eval_curve(records) if s <= budget]
    hit = next((s for s, v in curve if v >= THRESHOLD), None)
    first = next((s for s, _ in curve if s > 0), budget)
    return (hit if hit is not None else budget), hit is not None, first


def limit_rows(
    variants: dict[str, dict[int, Records]], budget: int, reference: str = "steppo"
) -> list[str]:
    """Per algorithm against ``reference``, over the seeds both have, every run cut at the
    common ``budget``: how many seeds tie by construction (both reach 90 % at the warm
    start, or neither within the budget: no algorithm can change the pair's value), the
    ratio of mean env steps over all seeds and over the informative ones alone, each with
    its ceiling: the ratio if ``reference`` had reached 90 % at its first evaluation on
    every seed where it reached it at all after the warm start (the smallest ratio the
    metric allows these runs)."""
    if reference not in variants:
        return []
    rows = []
    for name, seeds in variants.items():
        both = sorted(set(seeds) & set(variants[reference]))
        if name == reference or not both:
            continue
        ref = {s: cut_at(variants[reference][s], budget) for s in both}
        other = {s: cut_at(seeds[s], budget) for s in both}
        at_start = [s for s in both if ref[s][:2] == other[s][:2] == (0, True)]
        never = [s for s in both if not ref[s][1] and not other[s][1]]
        informative = [s for s in both if s not in at_start and s not in never]
        a, b = [float(ref[s][0]) for s in both], [float(other[s][0]) for s in both]
        lo, hi = paired_bootstrap(a, b, _ratio_of_means)
        # the best the reference could have done on every seed: its first evaluation
        # wherever it reached 90 % after the warm start (a tie stays a tie)
        best_all = [float(ref[s][2] if ref[s][1] and ref[s][0] > 0 else ref[s][0]) for s in both]
        row = (
            f"| `{name}` | {len(both)} | {len(at_start)} / {len(never)} | {len(informative)} "
            f"| {_ratio_of_means(a, b):.2f}× [{lo:.2f}, {hi:.2f}] "
            f"| {_ratio_of_means(best_all, b):.2f}× "
        )
        if informative:
            ia = [float(ref[s][0]) for s in informative]
            ib = [float(other[s][0]) for s in informative]
            best = [float(ref[s][2] if ref[s][1] else ref[s][0]) for s in informative]
            ilo, ihi = paired_bootstrap(ia, ib, _ratio_of_means)
            row += (
                f"| {_ratio_of_means(ia, ib):.2f}× [{ilo:.2f}, {ihi:.2f}] "
                f"| {_ratio_of_means(best, ib):.2f}× |"
            )
        else:
            row += "| — | — |"
        rows.append(row)
    return rows


README_BEGIN = (
    "<!-- credit-assignment:begin (benchmarks/credit_assignment.py --report --write-readme) -->"
)
README_END = "<!-- credit-assignment:end -->"


def write_readme(text: str, readme: Path = ROOT / "README.md") -> None:
    """Replace the README's block between the markers with ``text``."""
    content = readme.read_text(encoding="utf-8")
    head, sep, rest = content.partition(README_BEGIN)
    _, sep2, tail = rest.partition(README_END)
    if not sep or not sep2:
        raise SystemExit(f"{readme}: the credit-assignment markers are missing")
    readme.write_text(f"{head}{README_BEGIN}\n{text}\n{README_END}{tail}", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS))
    parser.add_argument(
        "--seeds",
        type=int,
        default=None,
        help="8 (3 with --sweep); with --report, every seed that has results",
    )
    parser.add_argument("--iterations", type=int, default=None, help="default: the spec's")
    parser.add_argument("--lr", nargs="*", default=[], help="ALGORITHM=LEARNING_RATE")
    parser.add_argument(
        "--set", nargs="*", default=[], dest="settings", help="KEY=VALUE for every run"
    )
    parser.add_argument("--sweep", choices=("step_clip", "lr"), default=None)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument(
        "--report",
        action="store_true",
        help="train nothing: the tables and plot from the committed results",
    )
    parser.add_argument(
        "--write-readme", action="store_true", help="with --report: update README.md's block"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "credit")
    parser.add_argument("--figure", type=Path, default=None)
    args = parser.parse_args()
    if args.report and args.seeds is None:
        args.seeds = max(committed_seeds(), default=-1) + 1 or None

    jobs = benchmark_jobs(args)
    failed = [] if args.report else run_all(jobs, args.out, args.jobs)
    figure = args.figure or ROOT / "docs" / "img" / (
        f"credit_sweep_{args.sweep}.png" if args.sweep else "credit_assignment.png"
    )
    text = report(jobs, bool(args.sweep), figure)
    if not text:
        # an empty report must not replace the README's tables (nor claim a plot)
        raise SystemExit(
            f"no results yet for these {len(jobs)} runs (benchmark version "
            f"{BENCHMARK_VERSION}, the current specs): nothing to report"
        )
    print(text)
    print(f"\nplot: {figure}")
    if args.write_readme:
        write_readme(text)
    if failed:
        raise SystemExit(f"{len(failed)} runs failed (above); the others' results are written")


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
