"""Score `agentspec explore` on a folder of planted-loophole specs it was not tuned on.

Each spec marks its loophole with a trailing `# planted: CODE` comment on the line of
the expression that decides it; a spec without one is clean (explore must report
nothing of level X or W there). A planted loophole counts as found when explore
reports that code within one line of the mark. Writes one JSON line per spec and
prints the score.

    python benchmarks/explore_blind.py tests/specs/loopholes_blind --out benchmarks/results/explore_blind/first_try.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

from agentspec.runtime.commands.explore.explorer import ExploreSettings, explore
from agentspec.runtime.commands.explore.report import diagnostic

PLANTED = re.compile(r"# planted: (\w+)")


def planted(path: Path) -> list[tuple[int, str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(i + 1, m.group(1)) for i, line in enumerate(lines) if (m := PLANTED.search(line))]


def score(path: Path, seconds: float) -> dict:
    start = time.perf_counter()
    report = explore(path, ExploreSettings(seconds=seconds))
    found = [(diagnostic(report, f).span.line, f.code) for f in report.findings]
    wanted = planted(path)
    hits = [
        [line, code]
        for line, code in wanted
        if any(c == code and abs(at - line) <= 1 for at, c in found)
    ]
    return {
        "spec": path.name,
        "planted": [list(p) for p in wanted],
        "found": [list(f) for f in found],
        "hit": len(hits) == len(wanted) if wanted else not found,
        "seconds": round(time.perf_counter() - start, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=60.0)
    options = parser.parse_args()
    options.out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    with options.out.open("w", encoding="utf-8") as out:
        for path in sorted(options.folder.glob("*.yaml")):
            row = score(path, options.seconds)
            rows.append(row)
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(("HIT " if row["hit"] else "MISS"), row["spec"], row["planted"], row["found"])
    loaded = [r for r in rows if r["planted"]]
    clean = [r for r in rows if not r["planted"]]
    print(
        f"planted found: {sum(r['hit'] for r in loaded)}/{len(loaded)};"
        f" clean quiet: {sum(r['hit'] for r in clean)}/{len(clean)};"
        f" load average {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
