"""Cold-start time of `agentspec validate` on the shipped specs.

Each run is a fresh process (what a user or a pre-commit hook pays). Reports
the median wall time over `--runs` runs for the shipped specs (`specs/`) and
for those plus the valid test specs, the same for `python -c pass`, and their
ratio. The package's bytecode is compiled first, as `pip install` does: an
editable checkout under PYTHONDONTWRITEBYTECODE would otherwise recompile
every module on every run, which no installed user pays.

    .venv/bin/python benchmarks/validate_speed.py [--runs 15]
"""

from __future__ import annotations

import argparse
import compileall
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
    compileall.compile_dir(ROOT / "agentspec", quiet=1)
    baseline = [sys.executable, "-c", "pass"]
    t_python = median_time(baseline, args.runs)
    print(f"python -c pass (median):     {t_python:.3f} s")
    for label, dirs in (("specs/", SPEC_DIRS[:1]), ("specs/ + tests/specs/valid/", SPEC_DIRS)):
        specs = sorted(p for d in dirs for p in d.glob("*.yaml"))
        validate = [sys.executable, "-m", "agentspec.cli", "validate", *map(str, specs)]
        t_validate = median_time(validate, args.runs)
        print(
            f"validate {label} ({len(specs)} specs): {t_validate:.3f} s median,"
            f" {t_validate / t_python:.1f}x the interpreter,"
            f" {t_validate - t_python:.3f} s over it"
        )


if __name__ == "__main__":
    from machine import with_load_average

    with_load_average(main)
