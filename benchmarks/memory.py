"""Peak memory (resident set size) of `agentspec train` on the calculator and of a rollout.

Each command runs in a fresh child process; the peak is that child's (and its own
children's) largest resident set, read with `resource.getrusage(RUSAGE_CHILDREN)`
after it exits. Each command is measured from its own intermediate process, so
one measurement's peak never carries into the next (RUSAGE_CHILDREN keeps the
maximum over every child a process has waited for).

    train     `agentspec train specs/calculator.yaml` (the calculator's training
              run, the previous `make demo`'s), by default shortened with `--set
              iterations=2` (the warm start and the per-iteration work are the
              whole run's; `--iterations 30` runs all of it)
    rollout   `agentspec run specs/calculator.yaml --policy oracle -n 256`
              (256 episodes, all started at once, trajectories written)
    held      the memory that 256 played oracle episodes of
              specs/keys_and_chests.yaml (9 steps each, `full_history`) hold
              as trajectories: allocated (tracemalloc) while they are kept
              and freed when they are dropped, in a fresh process. The prompts
              of an episode share one token list, so this grows with the
              episode's length, not with its square.

    .venv/bin/python benchmarks/memory.py [--iterations 2] [--episodes 256] [--only rollout|held]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "specs" / "calculator.yaml"
LONG_SPEC = ROOT / "specs" / "keys_and_chests.yaml"


def agentspec_command() -> list[str]:
    """`agentspec` of the running interpreter's environment (the CLI's module)."""
    return [sys.executable, "-m", "agentspec.cli"]


def measure_child(command: list[str]) -> dict[str, float]:
    """Run `command`; its peak RSS in MiB (Linux reports ru_maxrss in KiB) and wall time."""
    started = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-4000:]}")
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"peak_rss_mib": peak_kib / 1024, "seconds": seconds}


def peak_rss(command: list[str]) -> dict[str, float]:
    """`measure_child(command)` from a fresh intermediate process."""
    done = subprocess.run(
        [sys.executable, __file__, "--measure", json.dumps(command)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr[-4000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def held_by_trajectories(spec: Path, episodes: int) -> dict[str, float]:
    """MiB that `episodes` oracle trajectories of `spec` hold (freed when dropped)."""
    import asyncio
    import gc
    import itertools
    import tracemalloc

    from agentspec.compiler.build import import_spec
    from agentspec.runtime.commands.run import rollout
    from agentspec.runtime.compiled.task_text import task_bpe_tokenizer

    module = import_spec(spec)
    data = module.load_samples()
    samples = list(itertools.islice(itertools.cycle(data), episodes))
    tokenizer = task_bpe_tokenizer(module, data[:50])
    asyncio.run(rollout(module, samples[:2], "oracle", task_tokenizer=tokenizer))  # warm caches
    # tracing makes every allocation of the process several times slower: stopped however
    # this ends (left on, it slowed whatever ran after it in the same process)
    tracemalloc.start()
    try:
        trajectories = asyncio.run(rollout(module, samples, "oracle", task_tokenizer=tokenizer))
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0]
        steps = sum(len(t.steps) for t in trajectories)
        tokens = sum(len(s.prompt_ids) + len(s.response_ids) for t in trajectories for s in t.steps)
        del trajectories
        gc.collect()
        freed = kept - tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return {"held_mib": freed / 2**20, "steps": steps, "step_tokens": tokens}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=2, help="training iterations (demo: 30)")
    parser.add_argument("--episodes", type=int, default=256, help="rollout episodes")
    parser.add_argument("--only", choices=["train", "rollout", "held"], help="measure one thing")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # internal: one command as JSON
    parser.add_argument("--held", action="store_true", help=argparse.SUPPRESS)  # internal
    options = parser.parse_args(argv)
    if options.measure:
        print(json.dumps(measure_child(json.loads(options.measure))))
        return 0
    if options.held:
        print(json.dumps(held_by_trajectories(LONG_SPEC, options.episodes)))
        return 0
    if options.only in (None, "held"):
        done = subprocess.run(
            [sys.executable, __file__, "--held", "--episodes", str(options.episodes)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(done.stderr[-4000:])
        held = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"{options.episodes} oracle trajectories of {LONG_SPEC.relative_to(ROOT)} "
            f"({held['steps']} steps, {held['step_tokens']:,} prompt + response tokens over "
            f"the steps) hold {held['held_mib']:.1f} MiB\n"
        )
        if options.only == "held":
            return 0

    with tempfile.TemporaryDirectory() as tmp:
        commands = {
            "train": [
                *agentspec_command(),
                "train",
                str(SPEC),
                "--out",
                str(Path(tmp) / "train"),
                "--set",
                f"iterations={options.iterations}",
            ],
            "rollout": [
                *agentspec_command(),
                "run",
                str(SPEC),
                "--policy",
                "oracle",
                "-n",
                str(options.episodes),
                "--out",
                str(Path(tmp) / "rollout"),
            ],
        }
        print("| command | peak RSS | wall time |")
        print("|---|---|---|")
        for name, command in commands.items():
            if options.only and name != options.only:
                continue
            result = peak_rss(command)
            shown = " ".join(["agentspec", *command[3:]])
            shown = shown.replace(tmp, "$TMP").replace(f"{ROOT}/", "")
            print(
                f"| `{shown}` | {result['peak_rss_mib']:,.0f} MiB | {result['seconds']:.0f} s |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
