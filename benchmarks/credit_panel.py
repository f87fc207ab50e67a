"""Step-level credit where it is the whole job: the switch panel, two reward arms.

``specs/panel.yaml``: twelve independent decisions per episode (set each switch by
the lamp over it), a warm start that clones a demonstrator of the obvious rule
(red: up, green: down), and three switches wired backwards that only the reward
reveals: RL's only job is to find which three decisions to change. Two arms of one
task: ``per_step`` (``specs/panel.yaml``) pays each switch 1/12 as it is set right;
``at_end`` (``specs/panel_end.yaml``, the control) pays the same total when the
panel is done. Everything the model sees is the same in both, so per seed both arms
and every algorithm start from the same warm start (paired by seed).

Settings compared (each at the spec's learning rate, 1e-3, with its preset's KL
penalty to the warm start): ``grpo``, ``token_gae``, ``steppo`` (step-level GAE at
λ = 0.95), ``steppo_lam0`` (λ = 0: each step's advantage is its own TD error, the
setting that isolates each decision) and ``ppo`` (step-level GAE, token clip).

Metric, per arm, over seeds, with every run cut at one **common budget** of
environment steps (3× GRPO's median steps to 90 % on the pilot's per-step arm; runs
train past it, so no run is cut off before it):

- env steps to 90 % greedy success on the held-out colourings (32 of the 1,024 the
  generator holds out, evaluated every 2 iterations), a run that does not reach it
  within the budget counting as the budget (censored, ``≥``); compared on the log
  scale, paired by seed: the ratio is exp(mean of per-seed log differences), with a
  paired bootstrap 95 % interval;
- success AUC at the common budget (the area under the greedy-success step curve
  over [0, budget], divided by the budget);
- informative seeds: a seed where both runs of a pair reach 90 % at the same
  evaluation (both at the warm start) or neither within the budget ties by
  construction and carries no information about the ratio; they are counted, and
  the ratio is also given on the informative seeds alone, with the ceiling the
  metric allows there (the ratio if the first run reached 90 % at its first
  evaluation on every seed where it reached it at all).

    .venv/bin/python benchmarks/credit_panel.py --pilot          # 3 seeds, the pilot
    .venv/bin/python benchmarks/credit_panel.py --seeds 10       # the main runs (resumable)
    .venv/bin/python benchmarks/credit_panel.py --report         # report.md, summary.json and
                                                                 # the figure, from the results alone

Every finished run is one JSON file,
``benchmarks/results/panel/<arm>/<setting>/seed<N>.json`` (settings, seed, and per
iteration the env steps, greedy and sampled success, KL, entropy), committed with the
code. A run whose result is there (same spec, settings and ``BENCHMARK_VERSION``,
and a curve that reaches the runs' iterations) is not trained again; an unfinished
one continues from its checkpoint under ``--out``. Runs go one at a time, one torch
thread each (``nice`` them on a shared machine). Pilot runs train
``PILOT_ITERATIONS``; main runs train until the common budget is covered, and a
pilot run counts as the main run of its seed (the curve is the same run's, longer).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import credit_assignment as credit  # noqa: E402  (the sibling script: runs and statistics)

RESULTS = ROOT / "benchmarks" / "results" / "panel"
BENCHMARK_VERSION = 1
ARMS = {"per_step": "panel", "at_end": "panel_end"}
"""Reward arm → spec name (specs/NAME.yaml)."""
WARM_START_SPEC = ROOT / "specs" / "panel.yaml"
SETTINGS: dict[str, dict[str, Any]] = {
    "grpo": {"algorithm": "grpo"},
    "token_gae": {"algorithm": "token_gae"},
    "steppo": {"algorithm": "steppo", "lam": 0.95},
    "steppo_lam0": {"algorithm": "steppo", "lam": 0.0},
    "ppo": {"algorithm": "ppo"},
}
REFERENCE = "grpo"
THRESHOLD = 0.9
PILOT_SEEDS = 3
PILOT_ITERATIONS = 128
"""Seed 0 at 64 iterations: only token-level GAE reached 90 % (StepPO at λ = 0 was at 84 %
sampled success, GRPO at 0), so 64 could not set a budget from GRPO's steps to 90 %."""
BUDGET_FACTOR = 3.0
STEPS_PER_ITERATION = 8 * 4 * 12
"""Env steps of an iteration where every episode sets its twelve switches: 8 prompts ×
4 episodes × 12 (an episode can be shorter, ended by a response with no command, or
longer, up to 14 steps, with bad commands)."""
EVAL_EVERY = 4
"""The spec's `training.eval_every`: a run's iterations are a multiple of it."""
CURVE_KEYS = credit.CURVE_KEYS

Records = list[dict[str, Any]]


@dataclass(frozen=True)
class Job:
    """One run: a reward arm, a setting, a seed, trained for ``iterations``."""

    arm: str
    setting: str
    seed: int
    iterations: int
    budget: int = 0
    """Env steps the run must cover (main runs: the common budget; 0 for the pilot's,
    which run their iterations)."""

    @property
    def task(self) -> str:
        return ARMS[self.arm]

    @property
    def spec(self) -> Path:
        return ROOT / "specs" / f"{self.task}.yaml"

    @property
    def result(self) -> Path:
        return RESULTS / self.arm / self.setting / f"seed{self.seed}.json"

    @property
    def settings(self) -> dict[str, Any]:
        """The overrides of the spec's training section (the iterations and the warm
        start's checkpoint apart): the setting's algorithm and λ, the spec's learning
        rates (given, as a checkpoint would otherwise take a pretrained model's)."""
        return {**SETTINGS[self.setting], **learning_rates(self.spec), "seed": self.seed}

    def identity(self) -> dict[str, Any]:
        """What a committed result must match to count (any number of iterations at
        least this job's: a longer run's curve holds this one's)."""
        return {
            "benchmark_version": BENCHMARK_VERSION,
            "spec_content_sha256": _sha256(self.spec),
            "warm_start": warm_start_identity(self.seed),
            "settings": json.loads(json.dumps(self.settings, sort_keys=True)),
        }


def _sha256(path: Path) -> str:
    """The spec's content, not its text: comments and layout may change without
    invalidating results, any value may not."""
    import yaml

    def keyed(value: Any) -> Any:  # YAML 1.1 reads a key `on:` as True: every key as text
        if isinstance(value, dict):
            return {str(k): keyed(v) for k, v in value.items()}
        return [keyed(v) for v in value] if isinstance(value, list) else value

    content = keyed(yaml.safe_load(path.read_text(encoding="utf-8")))
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def learning_rates(spec: Path) -> dict[str, float]:
    import yaml

    training = yaml.safe_load(spec.read_text(encoding="utf-8"))["training"]
    return {
        "learning_rate": float(training.get("learning_rate", 1e-3)),
        "critic_learning_rate": float(training.get("critic_learning_rate", 1e-3)),
    }


def warm_start_identity(seed: int) -> dict[str, Any]:
    """Every run of a seed, on either arm, starts from one warm start: behaviour cloning
    of ``WARM_START_SPEC``'s demonstrator with that seed (both arms show the model the
    same text, so their own cloning would give the same policy; cloning once makes the
    pairing exact and saves the cloning's time on every other run)."""
    return {
        "spec": WARM_START_SPEC.name,
        "spec_content_sha256": _sha256(WARM_START_SPEC),
        "seed": seed,
    }


def warm_start(seed: int, out: Path) -> Path:
    """The policy checkpoint of ``seed``'s warm start under ``out`` (cloned once: a run of
    one iteration, whose iteration-0 checkpoint is the cloned policy)."""
    import shutil

    from agentspec.runtime.backends.local import train
    from agentspec.runtime.backends.local.checkpoint import WARM_START

    run = out / "warm_start" / f"seed{seed}"
    policy = run / "checkpoints" / WARM_START / "policy"
    stamp = run / "benchmark_warm_start.json"
    identity = json.dumps(warm_start_identity(seed), sort_keys=True)
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == identity and policy.is_dir():
        return policy
    if run.exists():
        shutil.rmtree(run)
    run.mkdir(parents=True)
    settings = {"seed": seed, "iterations": 1, "algorithm": "grpo", "eval_every": 1}
    train(WARM_START_SPEC, run / "run", settings)
    (run / "run" / "checkpoints").rename(run / "checkpoints")
    stamp.write_text(identity, encoding="utf-8")
    return policy


def read_result(job: Job) -> Records | None:
    """The job's committed curve when it matches the job and runs at least its iterations."""
    if not job.result.is_file():
        return None
    data = json.loads(job.result.read_text(encoding="utf-8"))
    identity = job.identity()
    if {k: data.get(k) for k in identity} != identity:
        return None
    curve = list(data["curve"])
    return curve if covers(job, curve) else None


def covers(job: Job, curve: Records) -> bool:
    """Whether ``curve`` runs as far as ``job`` asks: past its budget of env steps (a main
    run), else through its iterations (a pilot run)."""
    if job.budget:
        return max((int(r.get("env_steps", 0)) for r in curve), default=0) >= job.budget
    return max((int(r.get("iteration", 0)) for r in curve), default=0) >= job.iterations


def write_result(job: Job, records: Records) -> None:
    curve = [{k: r[k] for k in CURVE_KEYS if k in r} for r in records]
    data = {"arm": job.arm, "setting": job.setting, "seed": job.seed, **job.identity()}
    data["iterations"] = max(int(r.get("iteration", 0)) for r in curve)
    data["curve"] = curve
    job.result.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=None, separators=(",", ":"), sort_keys=False)
    job.result.write_text(text.replace("},{", "},\n{") + "\n", encoding="utf-8")


def train_job(job: Job, out: Path) -> Records:
    """Train ``job`` from its seed's warm start (continuing from a checkpoint under
    ``out`` of this very job), returning its metrics. A checkpoint another job left
    there (other settings, another version) is not resumed: the run starts again."""
    import shutil

    from agentspec.runtime.backends.local import train

    policy = warm_start(job.seed, out.parent.parent)
    run = out
    stamp = run / "benchmark_job.json"
    identity = json.dumps({"arm": job.arm, "setting": job.setting, **job.identity()})
    mine = stamp.is_file() and stamp.read_text(encoding="utf-8") == identity
    checkpoints = run / "checkpoints"
    resume = mine and checkpoints.is_dir() and any(checkpoints.iterdir())
    if not resume and run.exists():
        shutil.rmtree(run)
    run.mkdir(parents=True, exist_ok=True)
    stamp.write_text(identity, encoding="utf-8")
    iterations = job.iterations
    if resume and (run / "metrics.jsonl").is_file():
        iterations = max(iterations, max(int(r["iteration"]) for r in credit.read_records(run)))
    while True:
        settings = {**job.settings, "model": str(policy), "warm_start": 0, "iterations": iterations}
        # a resumed run with more iterations than its first extends it (the same run)
        train(job.spec, run, settings, resume=resume)
        records = credit.read_records(run)
        if covers(job, records):
            return records
        # episodes that end early (a response with no command ends one) make an
        # iteration shorter: go on, an evaluation interval at a time, to the budget
        iterations += EVAL_EVERY
        resume = True


def run_jobs(jobs: Sequence[Job], out: Path, on_result: Callable[[Job], None] | None) -> int:
    """Train every job without a result, one at a time, writing each as it finishes
    (``on_result`` hears of it: the command line commits it); returns the failures."""
    pending = [job for job in jobs if read_result(job) is None]
    print(f"{len(jobs) - len(pending)} of {len(jobs)} runs have results; training {len(pending)}")
    failed = 0
    for job in pending:
        print(
            f"training: {job.arm} {job.setting} seed {job.seed} ({job.iterations} iterations)",
            flush=True,
        )
        try:
            records = train_job(job, out / job.arm / f"{job.setting}-{job.seed}")
        except Exception as exc:
            print(f"failed: {job.arm} {job.setting} seed {job.seed}: {type(exc).__name__}: {exc}")
            failed += 1
            continue
        write_result(job, records)
        print(f"result: {job.result.relative_to(ROOT)}", flush=True)
        if on_result is not None:
            on_result(job)
    return failed


# ----------------------------------------------------------------------------
# the budget
# ----------------------------------------------------------------------------


def pilot_jobs() -> list[Job]:
    """The pilot: every arm and setting on seeds 0..PILOT_SEEDS-1, seed-major."""
    return [
        Job(arm, setting, seed, PILOT_ITERATIONS)
        for seed in range(PILOT_SEEDS)
        for arm in ARMS
        for setting in SETTINGS
    ]


def budget_parts() -> tuple[float, int] | None:
    """(GRPO's median env steps to 90 % over the pilot's seeds on the per-step arm — a
    run that never reached it counting with its whole run —, the env steps every pilot
    run covers), or None before the pilot is complete."""
    steps, covered = [], []
    for job in pilot_jobs():
        curve = read_result(job)
        if curve is None:
            return None
        covered.append(max(int(r.get("env_steps", 0)) for r in curve))
        if job.arm == "per_step" and job.setting == REFERENCE:
            steps.append(credit.steps_to(curve, THRESHOLD)[0])
    return statistics.median(steps), min(covered)


def common_budget() -> int | None:
    """BUDGET_FACTOR × GRPO's pilot median env steps to 90 %, at most the env steps every
    pilot run covers (so the pilot's runs are their seeds' main runs, and a GRPO that
    never reached 90 % in the pilot does not set a budget no run was trained to);
    None before the pilot is complete."""
    parts = budget_parts()
    if parts is None:
        return None
    median, covered = parts
    return min(int(BUDGET_FACTOR * median), covered)


def budget_iterations(budget: int) -> int:
    """Iterations expected to cover ``budget`` env steps (a multiple of the evaluation
    interval, so the last is an evaluation on the same schedule as the others'); a
    run whose episodes end early goes on past them to the budget (`train_job`)."""
    n = math.ceil(budget / STEPS_PER_ITERATION)
    return EVAL_EVERY * math.ceil(n / EVAL_EVERY)


def main_jobs(seeds: int, budget: int) -> list[Job]:
    iterations = budget_iterations(budget)
    return [
        Job(arm, setting, seed, iterations, budget)
        for seed in range(seeds)
        for arm in ARMS
        for setting in SETTINGS
    ]


# ----------------------------------------------------------------------------
# statistics
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """One run cut at the budget: env steps to 90 % (the budget when censored), whether it
    reached 90 % within the budget, the AUC over [0, budget], the first evaluation's env
    steps after the warm start (the earliest a run can reach 90 % by learning)."""

    steps: int
    reached: bool
    auc: float
    first_eval: int


def outcome(records: Records, budget: int) -> Outcome:
    curve = [(s, v) for s, v in credit.eval_curve(records) if s <= budget]
    hit = next((s for s, v in curve if v >= THRESHOLD), None)
    first_eval = next((s for s, _ in curve if s > 0), budget)
    return Outcome(
        steps=hit if hit is not None else budget,
        reached=hit is not None,
        auc=credit.success_auc(records, budget),
        first_eval=first_eval,
    )


def log_steps(o: Outcome) -> float:
    return math.log(max(o.steps, 1))


def ties_by_construction(a: Outcome, b: Outcome) -> bool:
    """Both at the warm start (0 env steps), or neither within the budget: whatever the
    algorithms do, the metric gives the pair the same value."""
    return (a.reached and b.reached and a.steps == b.steps == 0) or (
        not a.reached and not b.reached
    )


def geometric_ratio(a: Sequence[float], b: Sequence[float]) -> float:
    """exp(mean(log a − log b)) of per-seed log env steps."""
    return math.exp(statistics.fmean(x - y for x, y in zip(a, b, strict=True)))


def paired_interval(
    a: Sequence[float], b: Sequence[float], resamples: int = 10_000
) -> tuple[float, float]:
    return credit.paired_bootstrap(a, b, lambda x, y: geometric_ratio(x, y), resamples=resamples)


def seeds_needed(a: Sequence[float], b: Sequence[float], ratio: float) -> int | None:
    """Seeds a paired two-sided test (α = 0.05, power 0.8) on log env steps needs to
    detect a ``ratio`` at the spread of the per-seed log differences seen here."""
    if len(a) < 2:
        return None
    spread = statistics.stdev(x - y for x, y in zip(a, b, strict=True))
    effect = abs(math.log(ratio))
    return max(2, math.ceil(((1.959964 + 0.841621) * spread / effect) ** 2))


def compare(a: dict[int, Outcome], b: dict[int, Outcome]) -> dict[str, Any]:
    """``a`` against ``b`` over the seeds both have, on log env steps (paired)."""
    seeds = sorted(set(a) & set(b))
    la, lb = [log_steps(a[s]) for s in seeds], [log_steps(b[s]) for s in seeds]
    informative = [s for s in seeds if not ties_by_construction(a[s], b[s])]
    row: dict[str, Any] = {"seeds": len(seeds), "informative": len(informative)}
    if seeds:
        row["ratio"] = geometric_ratio(la, lb)
        row["ratio_ci"] = paired_interval(la, lb)
        aucs_a, aucs_b = [a[s].auc for s in seeds], [b[s].auc for s in seeds]
        row["auc_diff"] = statistics.fmean(aucs_a) - statistics.fmean(aucs_b)
        row["auc_ci"] = credit.paired_bootstrap(aucs_a, aucs_b, credit._difference_of_means)
        row["seeds_for_0.7"] = seeds_needed(la, lb, 0.7)
    if informative:
        ia = [log_steps(a[s]) for s in informative]
        ib = [log_steps(b[s]) for s in informative]
        row["ratio_informative"] = geometric_ratio(ia, ib)
        row["ratio_informative_ci"] = paired_interval(ia, ib)
        # the best `a` could have done on them: its first evaluation wherever it reached
        # 90 % at all (where it did not, its budget stays)
        best = [
            math.log(max(a[s].first_eval if a[s].reached else a[s].steps, 1)) for s in informative
        ]
        row["ceiling"] = geometric_ratio(best, ib)
    return row


def outcomes(
    arm: str, seeds: Sequence[int], budget: int, iterations: int
) -> dict[str, dict[int, Outcome]]:
    """Setting → seed → outcome, for the runs of ``arm`` with results."""
    found: dict[str, dict[int, Outcome]] = {}
    for setting in SETTINGS:
        for seed in seeds:
            curve = read_result(Job(arm, setting, seed, iterations, budget))
            if curve is not None:
                found.setdefault(setting, {})[seed] = outcome(curve, budget)
    return found


def summary(budget: int, seeds: Sequence[int], iterations: int) -> dict[str, Any]:
    """Everything the report says, as data: per arm, per setting the outcomes, and every
    setting against GRPO."""
    data: dict[str, Any] = {"budget": budget, "threshold": THRESHOLD, "arms": {}}
    for arm in ARMS:
        found = outcomes(arm, seeds, budget, iterations)
        settings: dict[str, Any] = {}
        for setting, runs in found.items():
            steps = [float(o.steps) for o in runs.values()]
            aucs = [o.auc for o in runs.values()]
            settings[setting] = {
                "seeds": sorted(runs),
                "steps": {s: o.steps for s, o in runs.items()},
                "reached": {s: o.reached for s, o in runs.items()},
                "auc": {s: o.auc for s, o in runs.items()},
                "geomean_steps": math.exp(statistics.fmean(math.log(max(x, 1)) for x in steps)),
                "reached_count": sum(o.reached for o in runs.values()),
                "auc_mean": statistics.fmean(aucs),
                "auc_ci": credit.bootstrap_ci(aucs),
            }
        common = sorted(set.intersection(*(set(r) for r in found.values()))) if found else []
        all_tie = [
            s
            for s in common
            if all(found[x][s].reached and found[x][s].steps == 0 for x in found)
            or all(not found[x][s].reached for x in found)
        ]
        rows = {
            setting: compare(found[setting], found[REFERENCE])
            for setting in found
            if setting != REFERENCE and REFERENCE in found
        }
        data["arms"][arm] = {
            "settings": settings,
            "seeds_all_settings": common,
            "seeds_all_tie": all_tie,
            "vs_reference": rows,
        }
    return data


# ----------------------------------------------------------------------------
# the report
# ----------------------------------------------------------------------------


def _interval(ci: Sequence[float], fmt: str) -> str:
    return f"[{format(ci[0], fmt)}, {format(ci[1], fmt)}]"


def report_text(data: dict[str, Any]) -> str:
    budget = data["budget"]
    parts = data.get("budget_parts")
    if parts is None:
        lines = []  # write_report says the budget is provisional
    else:
        median, covered = parts
        lines = [
            f"Common budget: {budget:,} env steps, the smaller of {BUDGET_FACTOR:g}× GRPO's "
            f"median steps to {THRESHOLD:.0%} on the pilot's per-step arm ({median:,.0f}"
            f"{', a run that never reached it counting with its whole run' if median >= covered else ''}"
            f") and the env steps every pilot run covers ({covered:,}); every run is cut there."
        ]
    for arm, block in data["arms"].items():
        settings = block["settings"]
        if not settings:
            continue
        n = len(block["seeds_all_settings"])
        lines += [
            "",
            f"#### {arm} ({ARMS[arm]}.yaml): {n} seed{'s' if n != 1 else ''} with every "
            f"setting; on {len(block['seeds_all_tie'])} of them every setting ties by "
            "construction",
            "",
            f"| setting | seeds | reached {THRESHOLD:.0%} within the budget | env steps to "
            f"{THRESHOLD:.0%}: geometric mean | success AUC at the budget: mean [95 % CI] |",
            "|---|---|---|---|---|",
        ]
        for setting, s in settings.items():
            censored = "≥ " if s["reached_count"] < len(s["seeds"]) else ""
            lines.append(
                f"| `{setting}` | {len(s['seeds'])} | {s['reached_count']}/{len(s['seeds'])} "
                f"| {censored}{s['geomean_steps']:,.0f} | {s['auc_mean']:.3f} "
                f"{_interval(s['auc_ci'], '.3f')} |"
            )
        seeds = sorted({seed for x in settings.values() for seed in x["seeds"]})
        lines += [
            "",
            f"Per seed, env steps to {THRESHOLD:.0%} (≥ budget: not within it):",
            "",
            "| seed | " + " | ".join(f"`{name}`" for name in settings) + " |",
            "|---|" + "---|" * len(settings),
        ]
        for seed in seeds:
            cells = []
            for x in settings.values():
                if seed not in x["steps"]:
                    cells.append("")
                elif x["reached"][seed]:
                    cells.append(f"{x['steps'][seed]:,}")
                else:
                    cells.append(f"≥ {x['steps'][seed]:,}")
            lines.append(f"| {seed} | " + " | ".join(cells) + " |")
        rows = block["vs_reference"]
        if rows:
            lines += [
                "",
                f"Against `{REFERENCE}`, paired by seed (log env steps; ratio < 1: fewer steps):",
                "",
                "| setting | seeds | informative | ratio of env steps [paired 95 % CI] "
                "| on informative seeds [95 % CI] | ceiling there | AUC difference [95 % CI] "
                "| seeds to show 0.7× at this spread |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for setting, r in rows.items():
                if "ratio" not in r:
                    continue
                informative = (
                    f"{r['ratio_informative']:.2f}× {_interval(r['ratio_informative_ci'], '.2f')}"
                    if "ratio_informative" in r
                    else "—"
                )
                ceiling = f"{r['ceiling']:.2f}×" if "ceiling" in r else "—"
                lines.append(
                    f"| `{setting}` | {r['seeds']} | {r['informative']} "
                    f"| {r['ratio']:.2f}× {_interval(r['ratio_ci'], '.2f')} | {informative} "
                    f"| {ceiling} | {r['auc_diff']:+.3f} {_interval(r['auc_ci'], '+.3f')} "
                    f"| {r['seeds_for_0.7'] or '—'} |"
                )
    return "\n".join(lines)


def plot(data: dict[str, Any], seeds: Sequence[int], iterations: int, path: Path) -> None:
    """Greedy held-out success against env steps up to the budget, one panel per arm
    (mean over seeds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    budget = data["budget"]
    figure, axes = plt.subplots(1, len(ARMS), figsize=(5.5 * len(ARMS), 3.8), sharey=True)
    for axis, arm in zip(axes, ARMS, strict=True):
        for setting in SETTINGS:
            curves = []
            for seed in seeds:
                records = read_result(Job(arm, setting, seed, iterations, budget))
                if records is not None:
                    curves.append([(s, v) for s, v in credit.eval_curve(records) if s <= budget])
            if not curves:
                continue
            length = min(len(c) for c in curves)
            xs = [statistics.fmean(c[i][0] for c in curves) for i in range(length)]
            ys = [statistics.fmean(c[i][1] for c in curves) for i in range(length)]
            axis.plot(xs, ys, label=f"{setting} ({len(curves)})")
        axis.axhline(THRESHOLD, color="grey", linewidth=0.8, linestyle="--")
        axis.set_title(f"{arm}: greedy success, held-out colourings")
        axis.set_xlabel("environment steps")
    axes[0].set_ylabel("success (mean over seeds)")
    for axis in axes:
        if axis.get_legend_handles_labels()[0]:
            axis.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def provisional_budget() -> int | None:
    """Before the pilot is complete: the env steps every committed run covers (None
    when there is none), so a partial pilot can be read at a budget no run is cut at."""
    covered = [
        max(int(r.get("env_steps", 0)) for r in json.loads(p.read_text())["curve"])
        for p in RESULTS.glob("*/*/seed*.json")
    ]
    return min(covered) if covered else None


def write_report(seeds: Sequence[int] | None = None, figure: bool = True) -> str | None:
    """report.md, summary.json and curves.png under RESULTS, from the committed results
    alone (None when there are none). Before the pilot is complete the budget is
    provisional (`provisional_budget`), and the report says so."""
    common = common_budget()
    provisional = common is None
    budget = provisional_budget() if common is None else common
    if budget is None:
        return None
    iterations = budget_iterations(budget)
    seeds = list(seeds) if seeds is not None else committed_seeds()
    data = summary(budget, seeds, iterations)
    data["provisional"] = provisional
    data["budget_parts"] = budget_parts()
    text = report_text(data)
    if provisional:
        text = (
            f"**Provisional: the pilot is not complete**, so the common budget is not set; "
            f"read at {budget:,} env steps, which every run so far covers.\n\n" + text
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "report.md").write_text(text + "\n", encoding="utf-8")
    (RESULTS / "summary.json").write_text(
        json.dumps(data, indent=1, sort_keys=True, default=list) + "\n", encoding="utf-8"
    )
    if figure:
        plot(data, seeds, iterations, RESULTS / "curves.png")
    return text


def committed_seeds() -> list[int]:
    return sorted({int(p.stem.removeprefix("seed")) for p in RESULTS.glob("*/*/seed*.json")})


README_BEGIN = "<!-- credit-panel:begin (benchmarks/credit_panel.py --report --write-readme) -->"
README_END = "<!-- credit-panel:end -->"


def write_readme(text: str, readme: Path = ROOT / "README.md") -> None:
    """Replace the README's block between the markers with ``text`` (the figure's
    link is the README's own, outside the block)."""
    content = readme.read_text(encoding="utf-8")
    head, sep, rest = content.partition(README_BEGIN)
    _, sep2, tail = rest.partition(README_END)
    if not sep or not sep2:
        raise SystemExit(f"{readme}: the credit-panel markers are missing")
    readme.write_text(f"{head}{README_BEGIN}\n{text}\n{README_END}{tail}", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--pilot", action="store_true", help="the pilot's runs (3 seeds)")
    parser.add_argument("--seeds", type=int, default=None, help="main runs on seeds 0..N-1")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--report", action="store_true", help="train nothing: the report")
    parser.add_argument(
        "--write-readme", action="store_true", help="with --report: update README.md's block"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "credit_panel")
    parser.add_argument(
        "--commit",
        action="store_true",
        help="git-commit each result file as its run finishes (only that file)",
    )
    args = parser.parse_args(argv)
    if args.report:
        text = write_report()
        if text is None:
            raise SystemExit(f"no results yet under {RESULTS}: nothing to report")
        print(text)
        if args.write_readme:
            write_readme(text)
        return
    if args.pilot:
        jobs = pilot_jobs()
    else:
        budget = common_budget()
        if budget is None:
            raise SystemExit("the main runs need the pilot's GRPO runs (the common budget)")
        if args.seeds is None:
            raise SystemExit("--seeds N: the main runs' seeds")
        jobs = [j for j in main_jobs(args.seeds, budget) if j.seed >= args.first_seed]
    jobs = [j for j in jobs if j.arm in args.arms and j.setting in args.settings]
    failed = run_jobs(jobs, args.out, commit if args.commit else None)
    if failed:
        raise SystemExit(f"{failed} runs failed (above); the others' results are written")


def commit(job: Job) -> None:
    """Commit the one result file (never anything else: others commit to this branch)."""
    import subprocess

    path = str(job.result.relative_to(ROOT))
    message = f"credit_panel: {job.arm} {job.setting} seed {job.seed}"
    for attempt in range(3):
        add = subprocess.run(["git", "add", "--", path], cwd=ROOT)
        done = subprocess.run(["git", "commit", "-m", message, "--", path], cwd=ROOT)
        if add.returncode == 0 and done.returncode == 0:
            return
        # another commit holding the index lock: try again shortly
        import time

        time.sleep(5 + 5 * attempt + random.random())
    print(f"could not commit {path}; it is written", flush=True)


if __name__ == "__main__":
    main()
