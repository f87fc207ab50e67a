"""Size and opening time of the `agentspec view` report for a 1,000-trajectory run.

Builds a run directory the way `agentspec train` lays it out (config.yaml,
metrics.jsonl with 100 iterations, ten traces files of 100 trajectories,
tokenizer/), from real `agentspec run` rollouts of the calculator spec (half
oracle, half random policy) whose steps get the per-step and per-token
advantages the trainer records. Then writes the report (prompts decoded with
the tokenizer: the largest form) and opens it in headless Chromium, timing
navigation until the page has drawn its curves and first trajectory, and a
filter change.

    .venv/bin/python benchmarks/report_size.py [--trajectories 1000] [--keep DIR]

`--long` adds a synthetic long-horizon run (15 turns of a chained
full-history context per trajectory, WebShop-sized turns) as a stress test.

Targets (issue 9): under 20 MB, opens in under 3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from typer.testing import CliRunner  # noqa: E402
from viewer.browser import browser_page  # noqa: E402

from agentspec.cli import app  # noqa: E402

SPEC = ROOT / "specs" / "calculator.yaml"
MAX_MB = 20.0
MAX_OPEN_S = 3.0


def build_run(run: Path, n: int) -> None:
    """A run directory with `n` trajectories over ten traces files, metrics and a tokenizer."""
    rng = random.Random(0)
    lines: list[str] = []
    for policy, count in (("oracle", n // 2), ("random", n - n // 2)):
        out = run.parent / f"rollout-{policy}"
        result = CliRunner().invoke(
            app, ["run", str(SPEC), "--policy", policy, "-n", str(count), "--out", str(out)]
        )
        if result.exit_code != 0:
            raise SystemExit(result.output)
        for line in (out / "trajectories.jsonl").read_text(encoding="utf-8").split("\n"):
            if not line:
                continue
            record = json.loads(line)
            for step in record["steps"]:
                token_adv = [round(rng.gauss(0, 1), 4) for _ in step["response_ids"]]
                step["info"]["token_advantages"] = token_adv
                step["info"]["advantage"] = sum(token_adv) / max(len(token_adv), 1)
            lines.append(json.dumps(record, separators=(",", ":")))
    rng.shuffle(lines)
    (run / "traces").mkdir(parents=True)
    per_file = max(len(lines) // 10, 1)
    for k in range(10):
        chunk = lines[k * per_file : (k + 1) * per_file if k < 9 else None]
        path = run / "traces" / f"iter_{(k + 1) * 10:06d}.jsonl"
        path.write_text("\n".join(chunk) + "\n", encoding="utf-8")
    keys = ["rollout/success", "rollout/reward", "reward/correct", "reward/malformed"]
    keys += ["loss/policy", "loss/value", "actor/kl", "actor/entropy", "actor/clip_fraction"]
    keys += ["perf/tokens_per_s", "eval/success"] + [f"extra/metric_{i}" for i in range(30)]
    with (run / "metrics.jsonl").open("w") as f:
        for it in range(1, 101):
            f.write(json.dumps({"iteration": it, **{k: rng.random() for k in keys}}) + "\n")
    (run / "config.yaml").write_text(SPEC.read_text(encoding="utf-8"), encoding="utf-8")
    cache = Path(os.environ["AGENTSPEC_CACHE"])
    tokenizer = next(cache.glob("*/tokenizer"))
    (run / "tokenizer").mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (run / "tokenizer" / name).write_bytes((tokenizer / name).read_bytes())


def build_long_run(run: Path, n: int, steps: int = 15) -> None:
    """`n` long-horizon trajectories (WebShop-like: `steps` turns of a chained
    full-history context, responses of ~40 words, observations of ~150), in
    pseudo-words that compress about as badly as product listings; each step
    has the step advantage the local trainer records."""
    from tokenizers import Tokenizer

    from agentspec.runtime.episode.trajectory import Step, Trajectory, write_jsonl

    rng = random.Random(1)
    syllables = [a + b for a in "bcdfghklmnprstvz" for b in "aeiou"] + [str(d) for d in range(10)]

    def words(k: int) -> str:
        return " ".join("".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(k))

    cache = Path(os.environ["AGENTSPEC_CACHE"])
    tok = Tokenizer.from_file(str(next(cache.glob("*/tokenizer")) / "tokenizer.json"))
    (run / "traces").mkdir(parents=True)
    per_file = n // 10
    for k in range(10):
        trajectories = []
        for i in range(per_file):
            prompt = tok.encode("You are shopping. " + words(60)).ids
            episode = []
            for t in range(steps):
                action, observation = words(40), words(150)
                response = tok.encode(action).ids
                obs_ids = tok.encode(observation).ids
                episode.append(
                    Step(
                        t,
                        list(prompt),
                        response,
                        [0.0] * len(response),
                        action_text=action,
                        observation=observation,
                        observation_ids=obs_ids,
                        rewards={"progress": rng.random()},
                        info={"advantage": rng.gauss(0, 1)},  # what the local trainer records
                    )
                )
                prompt = prompt + response + obs_ids
            trajectories.append(
                Trajectory(
                    episode,
                    sample_id=f"s{k}-{i}",
                    group_id=f"g{k}-{i // 4}",
                    success=rng.random() < 0.5,
                )
            )
        write_jsonl(run / "traces" / f"iter_{(k + 1) * 10:06d}.jsonl", trajectories)
    with (run / "metrics.jsonl").open("w") as f:
        for it in range(1, 101):
            f.write(json.dumps({"iteration": it, "rollout/success": rng.random()}) + "\n")
    (run / "tokenizer").mkdir()
    (run / "tokenizer" / "tokenizer.json").write_bytes(
        (next(cache.glob("*/tokenizer")) / "tokenizer.json").read_bytes()
    )


def measure(run: Path, report: Path, label: str) -> bool:
    """Write the report of `run`, open it in Chromium, print the figures; True if on target."""
    started = time.perf_counter()
    result = CliRunner().invoke(app, ["view", str(run), "-o", str(report)])
    if result.exit_code != 0:
        raise SystemExit(result.output)
    write_s = time.perf_counter() - started
    size_mb = report.stat().st_size / 1e6
    traces_mb = sum(p.stat().st_size for p in (run / "traces").glob("*.jsonl")) / 1e6
    with browser_page() as (page, errors):
        started = time.perf_counter()
        page.goto(report.resolve().as_uri())
        page.wait_for_selector('body[data-ready="1"]', timeout=30_000)
        open_s = time.perf_counter() - started
        started = time.perf_counter()
        page.select_option("#filter-success", "fail")
        page.wait_for_selector("#traj-list tbody tr.traj-row")
        filter_s = time.perf_counter() - started
        started = time.perf_counter()
        page.click("#traj-list tbody tr.traj-row >> nth=0")
        page.wait_for_selector("#detail .step")
        select_s = time.perf_counter() - started
        shown = page.inner_text("#filter-count")
    print(f"== {label}")
    print(f"traces on disk:      {traces_mb:6.2f} MB")
    print(f"report size:         {size_mb:6.2f} MB   (target < {MAX_MB:.0f} MB)")
    print(f"agentspec view:      {write_s:6.2f} s")
    print(f"open in Chromium:    {open_s:6.2f} s    (target < {MAX_OPEN_S:.0f} s)")
    print(f"filter change:       {filter_s * 1000:6.0f} ms")
    print(f"open a trajectory:   {select_s * 1000:6.0f} ms")
    print(f"after filter:        {shown}")
    print(f"console errors:      {len(errors)}")
    return size_mb < MAX_MB and open_s < MAX_OPEN_S and not errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trajectories", type=int, default=1000)
    parser.add_argument("--keep", type=Path, help="Write the run and report here.")
    parser.add_argument(
        "--long", action="store_true", help="Also a synthetic 15-step long-horizon run."
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        os.environ.setdefault("AGENTSPEC_CACHE", str(base / "cache"))
        run = base / "run"
        started = time.perf_counter()
        build_run(run, args.trajectories)
        print(
            f"built a {args.trajectories}-trajectory run in {time.perf_counter() - started:.1f} s"
        )
        ok = measure(run, base / "report.html", f"calculator, {args.trajectories} trajectories")
        if args.long:
            long_run = base / "long-run"
            build_long_run(long_run, args.trajectories)
            label = f"long horizon (15 steps, chained context), {args.trajectories} trajectories"
            ok = measure(long_run, base / "long-report.html", label) and ok
        print("PASS" if ok else "FAIL")
        return 0 if ok else 1


if __name__ == "__main__":
    from machine import with_load_average

    raise SystemExit(with_load_average(main))
