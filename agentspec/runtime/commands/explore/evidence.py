"""Evidence: how often a strategy succeeds beside the oracle and chance (`Rate`), the
threshold a rate must pass to be a loophole rather than a lucky guess, and the verdict
(severity and witness) a success-without-the-work finding gets from it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentspec.runtime.commands.explore.driver import Episode
from agentspec.runtime.commands.explore.findings import (
    TESTS,
    TOLERANCE,
    SpecFacts,
    shortest,
)

__all__ = ["Rate", "Verdict", "rates", "threshold", "verdict", "witness"]


@dataclass
class Rate:
    """How often one strategy showed a finding, over the samples it was played on."""

    strategy: str
    wins: int
    played: int
    privileged: bool
    size: float = 0.0  # its episodes' mean steps and text: of two as good, the simpler
    samples: int = 0  # the samples its episodes played

    @property
    def rate(self) -> float:
        return self.wins / self.played if self.played else 0.0

    def said(self, base: str = "", verb: str = "succeeds") -> str:
        extra = f"; {base}" if base else ""
        unit = "samples" if self.played == self.samples else "episodes"
        where = "on" if unit == "samples" else "in"
        return (
            f"{self.strategy!r} {verb} {where} {self.wins} of {self.played} {unit} "
            f"({self.rate:.2f}{extra})"
        )


def rates(
    episodes: Sequence[Episode], samples: set[int], won: Callable[[Episode], bool]
) -> list[Rate]:
    """Each strategy's rate of `won` over its episodes on the oracle's samples,
    best first (a strategy that won nowhere is left out)."""
    played: dict[str, list[Episode]] = defaultdict(list)
    for e in episodes:
        if e.sample_index in samples and e.strategy != TESTS:
            played[e.strategy].append(e)
    out = []
    for strategy, members in played.items():
        wins = sum(1 for e in members if won(e))
        if wins:
            privileged = any(e.privileged for e in members)
            size = sum(e.steps * 1000 + sum(map(len, e.turns)) for e in members) / len(members)
            seen = len({e.sample_index for e in members})
            out.append(Rate(strategy, wins, len(members), privileged, size, seen))
    return sorted(out, key=lambda r: (-r.rate, -r.wins, r.size, r.strategy))


def threshold(chance: float | None, oracle_rate: float) -> float:
    """The rate at which a cheap strategy is a loophole: at least half the samples,
    and at least halfway from chance to the oracle."""
    floor = chance or 0.0
    return max(0.5, floor + (oracle_rate - floor) / 2)


@dataclass
class Verdict:
    strong: bool
    best: Rate | None  # the best strategy a model could learn (not copying the sample)
    copied: Rate | None  # the best of those that copy what only the oracle knew
    said: str
    evidence: dict[str, Any]


def verdict(
    wins: Sequence[Episode],
    played: Sequence[Episode],
    oracle: dict[int, Episode],
    spec: SpecFacts,
    won: Callable[[Episode], bool],
) -> Verdict:
    samples = set(oracle)
    oracle_rate = sum(1 for o in oracle.values() if o.success) / max(1, len(oracle))
    every = rates(played, samples, won)
    learnable = [r for r in every if not r.privileged]
    copied = [r for r in every if r.privileged]
    best = learnable[0] if learnable else None
    need = threshold(spec.chance, oracle_rate)
    enough = min(2, len(samples))
    strong = best is not None and best.rate >= need - TOLERANCE and best.wins >= enough
    chance = f", chance 1/{round(1 / spec.chance)}" if spec.chance else ""
    base = f"the oracle {oracle_rate:.2f}{chance}"
    if best is not None:
        said = best.said(base)
    else:
        said = f"no strategy a model could learn from the prompt ({base})"
    if not strong and copied:
        said += (
            f"; the {len(wins)} winning episodes copy what the oracle knew, e.g."
            f" {copied[0].said()}, and no rule a model could learn from the prompt"
            " generalises them beyond chance"
        )
    evidence = {
        "strategy": best.strategy if best else None,
        "wins": best.wins if best else 0,
        "played": best.played if best else 0,
        "rate": round(best.rate, 4) if best else 0.0,
        "oracle_rate": round(oracle_rate, 4),
        "chance": spec.chance,
        "needed": round(need, 4),
        "episodes": len(wins),
    }
    return Verdict(strong, best, copied[0] if copied else None, said, evidence)


def witness(wins: Sequence[Episode], v: Verdict) -> Episode:
    if v.best is not None:
        mine = [e for e in wins if e.strategy == v.best.strategy]
        if mine:
            return shortest(mine)
    return shortest(wins)
