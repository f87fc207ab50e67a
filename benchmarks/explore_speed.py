"""Wall time of `agentspec explore` on every shipped spec at the default budget.

Each spec is explored in a fresh process (`agentspec explore specs/NAME.yaml
--format json`), as a user runs it: the time includes starting Python, checking
and compiling the spec, loading its data and the search itself. Reported per
spec: the wall time, the episodes played, whether the time budget (not the
episode budget) ended the search, and the findings. The target is under 60 s
per spec on the project's 2-core machine. The machine's load average is printed
at the start and the end: a timing is a measurement only on an idle machine.

    .venv/bin/python benchmarks/explore_speed.py [--specs specs/calculator.yaml ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AGENTSPEC = Path(sys.executable).with_name("agentspec")


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def explore(spec: Path) -> dict[str, object]:
    started = time.perf_counter()
    done = subprocess.run(
        [str(AGENTSPEC), "explore", str(spec), "--format", "json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):  # 1: something was found
        raise SystemExit(f"{spec}: agentspec explore failed ({done.returncode}):\n{done.stderr}")
    report = json.loads(done.stdout)
    return {
        "spec": spec.stem,
        "seconds": seconds,
        "episodes": report["episodes"],
        "stopped_by_time": report["stopped_by_time"],
        "findings": len(report["findings"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=Path, nargs="+", default=sorted(ROOT.glob("specs/*.yaml")))
    args = parser.parse_args()
    print(f"load average at start: {load_average()}")
    rows = [explore(spec) for spec in args.specs]
    print("\n| spec | wall s | episodes | ended by | findings |\n|---|---|---|---|---|")
    for row in sorted(rows, key=lambda r: float(r["seconds"])):  # type: ignore[arg-type]
        ended = "time budget" if row["stopped_by_time"] else "episode budget"
        print(
            f"| {row['spec']} | {row['seconds']:.1f} | {row['episodes']} | {ended} | {row['findings']} |"
        )
    slowest = max(float(r["seconds"]) for r in rows)  # type: ignore[arg-type]
    print(f"\nslowest: {slowest:.1f} s (target < 60 s)")
    print(f"load average at end: {load_average()}")


if __name__ == "__main__":
    main()
