"""Detectors: what the played episodes prove about a spec's rewards, guards and endings.

Each detector reads every episode the search played and reports findings
located at the spec line involved, each with the shortest episode that shows
it (the witness) and its evidence: for a success without the work, how often
the cheapest strategy that shows it succeeds, beside the oracle and chance
(its severity comes from that rate: a lucky guess on a multiple-choice task is
a warning, not a loophole); for a dead guard or reward, what the search tried
(its coverage). Nothing is inferred: a finding is an episode that happened
(or, for dead parts, a count over every episode that did, with the coverage
that makes the count mean something). What the search could not decide is a
coverage note, not a finding.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentspec.runtime.commands.explore.dead_parts import (
    dead_rewards,
    dead_tools,
    reward_ranges,
    state_values,
    values_taken,
)
from agentspec.runtime.commands.explore.driver import Episode
from agentspec.runtime.commands.explore.evidence import Rate, rates, verdict, witness
from agentspec.runtime.commands.explore.findings import (
    CODES,
    TESTS,
    TOLERANCE,
    Finding,
    SpecFacts,
    shortest,
)
from agentspec.runtime.episode.trajectory import EventKind, TerminationReason

__all__ = [
    "CODES",
    "Finding",
    "Rate",
    "SpecFacts",
    "detect",
    "repeatable",
    "reward_ranges",
    "rule_witnesses",
]


def detect(episodes: Sequence[Episode], spec: SpecFacts) -> list[Finding]:
    played = [e for e in episodes if not e.broken()]
    oracle = {e.sample_index: e for e in played if e.origin == "oracle"}
    findings: list[Finding] = []
    findings += prompt_over_budget(played, spec)
    findings += reward_without_success(played, oracle, spec)
    findings += success_without_work(played, oracle, spec)
    findings += farmable(played, spec)
    if not any(f.code == "X107" for f in findings):
        findings += no_ending(played, spec)
    findings += dead_tools(played, spec)
    findings += dead_rewards(played, spec, {f.path[1] for f in findings if f.code == "X111"})
    tested = spec.reading.tested_state if spec.reading is not None else set()
    findings += [
        Finding(
            "W115",
            f"state.{name} is written but nothing reads it (no guard, effect, reward, "
            "observation, prompt or success)",
            ("state", name),
            "use it where it was meant to matter"
            + (" (the spec's tests check it)" if name in tested else ", or remove it"),
            key=True,
        )
        for name in spec.unread_state
    ]
    return findings


def success_rewards(spec: SpecFacts) -> list[str]:
    """The reward components `episode.success` reads (`reward.NAME`)."""
    names = re.findall(r"reward\.(\w+)", spec.success_source or "")
    return [n for n in dict.fromkeys(names) if n in spec.rewards]


def _success_path(spec: SpecFacts) -> tuple[str | int, ...]:
    read = success_rewards(spec)
    return ("rewards", read[0], "value") if read else ("episode", "success")


def reward_without_success(
    played: Sequence[Episode], oracle: dict[int, Episode], spec: SpecFacts
) -> list[Finding]:
    def won(e: Episode) -> bool:
        o = oracle.get(e.sample_index)
        return (
            e.success is False
            and o is not None
            and o.success is True
            and e.total >= o.total - TOLERANCE
            # earning nothing where the oracle earns nothing shows no reward to hack
            and (e.total > TOLERANCE or e.total > o.total + TOLERANCE)
        )

    hits = [e for e in played if e.strategy != TESTS and won(e)]
    if not hits:
        return []
    best = rates(played, set(oracle), won)
    if best and best[0].rate >= 0.5:
        witness = shortest([e for e in hits if e.strategy == best[0].strategy])
    else:
        witness = shortest(hits)
    base = oracle[witness.sample_index]
    got, had = witness.components(), base.components()
    name = max(got, key=lambda n: (got[n] - had.get(n, 0.0), got[n]), default=None)
    path: tuple[str | int, ...] = ("rewards", name, "value") if name else ("episode", "success")
    shown = f"; e.g. {best[0].said(verb='keeps the reward')}" if best else ""
    return [
        Finding(
            "X101",
            f"an episode that fails `episode.success` earns {witness.total:.3f}, the oracle "
            f"{base.total:.3f} on the same sample ({len(hits)} such episodes; most from "
            f"reward.{name}{shown})",
            path,
            "pay the reward only for what success means, or make success require what the "
            "reward pays for",
            witness,
            evidence={
                "episodes": len(hits),
                **({"rate": round(best[0].rate, 4), "strategy": best[0].strategy} if best else {}),
            },
        )
    ]


@dataclass
class SuccessCase:
    """One way success came without the work: its codes (strong, weak), what it says,
    which episodes show it (`won`) and those that did."""

    strong: str
    weak: str
    lead: str
    hint: str
    weak_hint: str
    won: Callable[[Episode], bool]
    wins: list[Episode]


def success_cases(
    played: Sequence[Episode], oracle: dict[int, Episode], spec: SpecFacts
) -> list[SuccessCase]:
    solved = [o for o in oracle.values() if o.success is True]
    if not solved:
        return []
    always = set.intersection(*(o.tools_run() for o in solved))
    candidates = [e for e in played if e.origin != "oracle" and e.strategy != TESTS]
    cases = [_skipped_tool_case(tool, candidates) for tool in sorted(always)]
    if spec.judges_answer or spec.sink_vars:
        cases.append(_other_answer_case(oracle, spec, candidates))
    cases.append(_shorter_case(oracle, candidates))
    return [c for c in cases if c.wins]


def _winning(e: Episode) -> bool:
    # Only episodes a model could play: no turn writes a value its prompt never showed.
    return e.success is True and not e.blind


def _skipped_tool_case(tool: str, candidates: list[Episode]) -> SuccessCase:
    """Success without calling `tool`, which the oracle calls in every episode."""

    def skipped(e: Episode, tool: str = tool) -> bool:
        return _winning(e) and tool not in e.tools_run()

    return SuccessCase(
        "X102",
        "W102",
        f"`episode.success` holds without calling `{tool}`, which the oracle calls in "
        "every episode",
        f"make success depend on what `{tool}` finds (a state it writes), or check "
        "that the answer cannot be read off the prompt",
        "a model guessing among what the prompt shows succeeds this often: fine for "
        "a multiple-choice task, else make the answer depend on the tool",
        skipped,
        [e for e in candidates if skipped(e)],
    )


def _other_answer_case(
    oracle: dict[int, Episode], spec: SpecFacts, candidates: list[Episode]
) -> SuccessCase:
    """Success for an answer (final, or given to a tool) that is not the oracle's."""

    def other(e: Episode) -> bool:
        o = oracle.get(e.sample_index)
        return _winning(e) and (
            (spec.judges_answer and _answer_differs(e, o))
            or (
                bool(spec.sink_vars)
                and _submitted(e, spec.sink_vars) != _submitted(o, spec.sink_vars)
            )
        )

    return SuccessCase(
        "X103",
        "W103",
        "`episode.success` holds for an answer (final, or given to a tool) that is not the oracle's",
        "compare the answer exactly (==) rather than with `contains` or a pattern "
        "that a list of candidates also matches",
        "another answer succeeds about as often as a guess would: if the check "
        "should accept only the sample's answer, compare it exactly (==)",
        other,
        [e for e in candidates if other(e)],
    )


def _shorter_case(oracle: dict[int, Episode], candidates: list[Episode]) -> SuccessCase:
    """Success after fewer steps than the oracle takes."""

    def shorter(e: Episode) -> bool:
        o = oracle.get(e.sample_index)
        return _winning(e) and o is not None and e.steps < o.steps

    return SuccessCase(
        "W104",
        "W104",
        "`episode.success` holds after fewer steps than the oracle takes",
        "if the oracle's steps are all needed, require their effects in success; "
        "otherwise shorten the oracle",
        "if the oracle's steps are all needed, require their effects in success; "
        "otherwise shorten the oracle",
        shorter,
        [e for e in candidates if shorter(e)],
    )


def success_without_work(
    played: Sequence[Episode], oracle: dict[int, Episode], spec: SpecFacts
) -> list[Finding]:
    findings: list[Finding] = []
    candidates = [e for e in played if e.origin != "oracle" and e.strategy != TESTS]
    for case in success_cases(played, oracle, spec):
        v = verdict(case.wins, candidates, oracle, spec, case.won)
        code = case.strong if v.strong else case.weak
        if code == "W104" and not v.strong:  # a shorter win by a guess: said by W102/W103
            spec.notes.append(
                (_success_path(spec), f"{case.lead}, no more often than a guess: {v.said}")
            )
            continue
        if code.startswith("W") and case.strong.startswith("X"):
            message = f"{case.lead}, but no more often than a guess: {v.said}"
            hint = case.weak_hint
        else:
            message, hint = f"{case.lead}: {v.said}", case.hint
        findings.append(
            Finding(
                code,
                message,
                _success_path(spec),
                hint,
                witness(case.wins, v),
                evidence=v.evidence,
            )
        )
    return findings


def rule_witnesses(episodes: Sequence[Episode], spec: SpecFacts, most: int = 4) -> list[Episode]:
    """Winning episodes worth generalising into rules: those of a success-without-work
    case that no strategy a model could learn shows strongly yet, copying the sample's
    values (the oracle's answer without its calls, say), one or two per case."""
    played = [e for e in episodes if not e.broken()]
    oracle = {e.sample_index: e for e in played if e.origin == "oracle"}
    candidates = [e for e in played if e.origin != "oracle" and e.strategy != TESTS]
    out: list[Episode] = []
    for case in success_cases(played, oracle, spec):
        if verdict(case.wins, candidates, oracle, spec, case.won).strong:
            continue
        copied = sorted(
            (e for e in case.wins if e.privileged and e.prompts and e not in out),
            key=lambda e: (e.steps, sum(map(len, e.turns)), e.sample_index),
        )
        samples: set[int] = set()
        for e in copied:
            if e.sample_index not in samples and len(samples) < 2:
                samples.add(e.sample_index)
                out.append(e)
    return out[:most]


def _final_answer(episode: Episode) -> str | None:
    steps = episode.trajectory.steps
    if not steps or steps[-1].tool_calls:
        return None
    finals = [e.message for e in steps[-1].events if e.kind == EventKind.FINAL]
    return finals[0] if finals and finals[0] not in ("terminal tool", "done_when") else None


def _submitted(episode: Episode | None, variables: Sequence[str]) -> list[str]:
    """The answer an episode gave through calls: what the state variables that store a
    call's argument for a check (`SpecFacts.sink_vars`) hold at its end — a value
    filed, then filed again or overwritten, is judged as it ended. A list counts as
    the set of what it holds."""
    if episode is None or not variables:
        return []
    out = []
    for var in variables:
        value = episode.state.get(var)
        if isinstance(value, (list, tuple, set)):
            out.append(repr(sorted({_normal(str(v)) for v in value})))
        elif isinstance(value, dict):
            out.append(repr(sorted((str(k), _normal(str(v))) for k, v in value.items())))
        else:
            out.append(_normal(str(value)))
    return out


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def _answer_differs(episode: Episode, oracle: Episode | None) -> bool:
    mine = _final_answer(episode)
    theirs = _final_answer(oracle) if oracle is not None else None
    if mine is None or theirs is None or _normal(mine) == _normal(theirs):
        return False
    numbers = re.findall(r"-?\d+(?:\.\d+)?", mine), re.findall(r"-?\d+(?:\.\d+)?", theirs)
    same = [float(n) for n in numbers[0]] == [float(n) for n in numbers[1]]
    return not (same and re.sub(r"[\d.\s-]", "", mine) == re.sub(r"[\d.\s-]", "", theirs))


PER_EVENT = ("step", "tool:", "tool_error", "guard_failed", "parse_error")


def repeatable(spec: SpecFacts) -> list[str]:
    """Components paid per step or per call: the ones repetition could farm."""
    return [n for n, on in spec.rewards.items() if on.startswith(PER_EVENT)]


def farmable(played: Sequence[Episode], spec: SpecFacts) -> list[Finding]:
    families: dict[str, list[Episode]] = defaultdict(list)
    for e in played:
        if e.family:
            families[e.family].append(e)
    findings: list[Finding] = []
    for name in repeatable(spec):
        growing = []
        for members in families.values():
            ordered = sorted(members, key=lambda e: e.repeats)
            # what the repeated turn and its copies were paid: the episode's total would
            # also count the turns that the copies displaced (a parse error once the
            # script ran out)
            sums = [e.paid_on_repeats(name) for e in ordered]
            if len(sums) >= 3 and all(b > a + TOLERANCE for a, b in itertools.pairwise(sums)):
                growing.append((ordered, sums))
        if growing:
            ordered, sums = min(growing, key=lambda g: shortest(g[0]).steps)
            shown = ", ".join(
                f"{e.repeats + 1}x: {s:.3f}" for e, s in zip(ordered, sums, strict=False)
            )
            findings.append(
                Finding(
                    "X105",
                    f"reward.{name} (on: {spec.rewards[name]}) grows with repetition: the same "
                    f"turn repeated pays {shown} ({len(growing)} turns grow so)",
                    ("rewards", name, "value"),
                    "pay it once (a state flag set by the first call, `when: not state.paid`), "
                    "or only for progress",
                    ordered[-1],
                )
            )
    return findings


def prompt_over_budget(played: Sequence[Episode], spec: SpecFacts) -> list[Finding]:
    """Every episode ended before its first turn because the first prompt did not fit
    `context.max_prompt_tokens`: no agent can do anything, which is not 'no ending'."""
    if not played or not all(
        e.steps == 0 and e.trajectory.termination == TerminationReason.CONTEXT_OVERFLOW
        for e in played
    ):
        return []
    return [
        Finding(
            "X107",
            f"in all {len(played)} episodes the first prompt (the system and user messages and "
            "the tools' descriptions) was longer than the prompt budget: every episode ended "
            "before the model's first turn",
            spec.budget_path,
            "raise `context.max_prompt_tokens`, or shorten the prompt and tool descriptions",
            shortest(played),
        )
    ]


def no_ending(played: Sequence[Episode], spec: SpecFacts) -> list[Finding]:
    if not played or any(e.ending == "done" for e in played):
        return []
    endings = sorted({e.ending for e in played})
    if spec.done_when:
        path: tuple[str | int, ...] = ("episode", "done_when")
        reads = spec.reading.done_reads if spec.reading is not None else []
        took = "; ".join(
            values_taken(var, vals) for var, vals in state_values(played, reads).items()
        )
        where = f"`done_when` ({spec.done_when_text}) never held" + (
            f" ({took} at the episodes' ends)" if took else ""
        )
        hint = (
            "check `done_when` against the states the tools can reach, or end with a "
            "terminal tool or `done()` in an effect"
        )
    elif spec.final_answer == "continue":
        path = ("episode", "final_answer")
        where = "a final answer does not end an episode (`final_answer: continue`)"
        hint = (
            "end it with a terminal tool, `done()` in an effect, `done_when`, or "
            "`final_answer: end`"
        )
    else:
        path = ("episode", "max_steps")
        where = "nothing the agent did ended one"
        hint = (
            "end it with a terminal tool, `done()` in an effect, `done_when`, or "
            "`final_answer: end`"
        )
    return [
        Finding(
            "X106",
            f"none of {len(played)} episodes ended before a limit (they ended "
            f"{', '.join(endings)}): {where}",
            path,
            hint,
            shortest(played),
        )
    ]
