"""benchmarks/explore_speed.py runs and reports every spec it is given."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_explore_benchmark_reports_each_spec() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "explore_speed.py"),
            "--specs",
            str(ROOT / "specs" / "keys_and_doors.yaml"),
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert "load average at start" in done.stdout and "load average at end" in done.stdout
    assert "| keys_and_doors |" in done.stdout and "episode budget" in done.stdout
