"""Step-level vs episode-level credit on a task with a sparse final reward.

specs/keys_and_doors.yaml needs four correct decisions in a row and rewards
only the last step. Each algorithm trains from the same short warm start
(behaviour cloning that teaches the action format, not the solution) with
several seeds; we report the environment steps until greedy evaluation
first reaches 90 % success (mean ± spread over seeds; "—" when a seed never
did) and the final greedy success.

    .venv/bin/python benchmarks/credit_assignment.py [--seeds 3] [--iterations 40]
        [--algorithms steppo ppo grpo token_gae] [--out runs/credit]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "specs" / "keys_and_doors.yaml"


def steps_to(records: list[dict[str, float]], threshold: float) -> int | None:
    for record in records:
        if record.get("eval/success") is not None and record["eval/success"] >= threshold:
            return int(record["env_steps"])
    return None


def main() -> None:
    from agentspec.runtime.backends.local import train

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--warm-start", type=int, default=20)
    parser.add_argument("--algorithms", nargs="+", default=["steppo", "ppo", "grpo", "token_gae"])
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "credit")
    args = parser.parse_args()

    results: dict[str, list[tuple[int | None, float]]] = {}
    for algorithm in args.algorithms:
        for seed in range(args.seeds):
            run = train(
                SPEC,
                args.out / f"{algorithm}-{seed}",
                {
                    "algorithm": algorithm,
                    "seed": seed,
                    "iterations": args.iterations,
                    "warm_start": args.warm_start,
                },
            )
            records = [
                json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()
            ]
            final = [r["eval/success"] for r in records if r.get("eval/success") is not None][-1]
            results.setdefault(algorithm, []).append((steps_to(records, 0.9), final))
            print(
                f"{algorithm} seed {seed}: steps to 90% {results[algorithm][-1][0]}, final {final:.2f}",
                flush=True,
            )

    print(
        "\n| algorithm | env steps to 90 % greedy success (mean ± sd, seeds reaching it) | final greedy success |"
    )
    print("|---|---|---|")
    for algorithm, rows in results.items():
        reached = [s for s, _ in rows if s is not None]
        spread = (
            f"{statistics.mean(reached):.0f} ± {statistics.pstdev(reached):.0f}" if reached else "—"
        )
        finals = [f for _, f in rows]
        print(
            f"| {algorithm} | {spread} ({len(reached)}/{len(rows)}) | {statistics.mean(finals):.2f} |"
        )


if __name__ == "__main__":
    main()
