"""Peak memory (resident set size) of `agentspec train` on the demo config and of a rollout.

Each command runs in a fresh child process; the peak is that child's (and its own
children's) largest resident set, read with `resource.getrusage(RUSAGE_CHILDREN)`
after it exits. Each command is measured from its own intermediate process, so
one measurement's peak never carries into the next (RUSAGE_CHILDREN keeps the
maximum over every child a process has waited for).

    train     `agentspec train specs/calculator.yaml` (the demo's training run,
              `make demo`), by default shortened with `--set iterations=2` (the
              warm start and the per-iteration work are the demo's; `--iterations
              40` runs the whole demo)
    rollout   `agentspec run specs/calculator.yaml --policy oracle -n 256`
              (256 episodes, all started at once, trajectories written)

    .venv/bin/python benchmarks/memory.py [--iterations 2] [--episodes 256] [--only rollout]
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=2, help="training iterations (demo: 40)")
    parser.add_argument("--episodes", type=int, default=256, help="rollout episodes")
    parser.add_argument("--only", choices=["train", "rollout"], help="measure one command")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # internal: one command as JSON
    options = parser.parse_args(argv)
    if options.measure:
        print(json.dumps(measure_child(json.loads(options.measure))))
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
