"""Worst-case cost of `agentspec validate` on hostile specs.

Runs a cold `agentspec validate` (a fresh process) on every spec of the
hostile corpus (tests/specs/hostile/*.yaml) and on generated worst cases of
up to 1 MB (1 MB of keys, deep nesting, many aliases, long strings, long
templates and expressions; see tests/specs/hostile/worst_cases.py). Reports
each input's wall time and peak RSS (the child's ru_maxrss), and the
maxima. Goal: under 5 s and 512 MB per input.

    .venv/bin/python benchmarks/validate_worst_case.py
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "tests" / "specs" / "hostile"
sys.path.insert(0, str(HOSTILE))
from worst_cases import worst_cases  # noqa: E402

GOAL_SECONDS = 5.0
GOAL_MB = 512


def measure(path: Path) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB, exit code) of one cold validate."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "agentspec.cli", "validate", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    wall = time.perf_counter() - start
    if "Traceback" in done.stdout + done.stderr:
        raise SystemExit(f"{path.name}: validate printed a traceback")
    # ru_maxrss of children is the largest of all children so far (KB on
    # Linux): the running maximum, whose last value is the peak of any input.
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) / 1024, done.returncode


def main() -> None:
    argparse.ArgumentParser(description=__doc__).parse_args()
    with tempfile.TemporaryDirectory() as folder:
        inputs = sorted(HOSTILE.glob("*.yaml"))
        for name, (_, text) in worst_cases().items():
            path = Path(folder) / name
            path.write_text(text, encoding="utf-8")
            inputs.append(path)
        rows = []
        for path in inputs:
            wall, rss, code = measure(path)
            rows.append((path, wall, rss, code))
            size = path.stat().st_size
            print(
                f"{path.name:40s} {size / 1e6:5.2f} MB  {wall:5.2f} s  max RSS so far {rss:6.1f} MB"
            )
    slowest = max(rows, key=lambda r: r[1])
    peak = max(r[2] for r in rows)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    interpreter = time.perf_counter() - start
    print(f"inputs: {len(rows)}; python -c pass: {interpreter:.2f} s (for scale)")
    print(f"max wall time: {slowest[1]:.2f} s ({slowest[0].name}); goal < {GOAL_SECONDS} s")
    print(f"peak RSS of any validate: {peak:.1f} MB; goal < {GOAL_MB} MB")


if __name__ == "__main__":
    from machine import with_load_average

    with_load_average(main)
