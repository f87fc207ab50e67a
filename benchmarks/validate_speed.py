"""Cold-start time of `agentspec validate` on the shipped specs.

Each run is a fresh process (what a user or a pre-commit hook pays). Reports
the median wall time over `--runs` runs, the same for `python -c pass`, and
their ratio.

    .venv/bin/python benchmarks/validate_speed.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC_DIRS = [ROOT / "specs", ROOT / "tests" / "specs" / "valid"]


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - start


def median_time(command: list[str], runs: int) -> float:
    timed(command)  # warm the OS file cache, not the interpreter
    return statistics.median(timed(command) for _ in range(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    specs = sorted(p for d in SPEC_DIRS for p in d.glob("*.yaml"))
    validate = [sys.executable, "-m", "agentspec.cli", "validate", *map(str, specs)]
    baseline = [sys.executable, "-c", "pass"]
    t_validate = median_time(validate, args.runs)
    t_python = median_time(baseline, args.runs)
    print(f"specs validated:             {len(specs)}")
    print(f"agentspec validate (median): {t_validate:.3f} s")
    print(f"python -c pass (median):     {t_python:.3f} s")
    print(f"ratio:                       {t_validate / t_python:.1f}x")
    print(f"validate minus interpreter:  {t_validate - t_python:.3f} s")


if __name__ == "__main__":
    main()
