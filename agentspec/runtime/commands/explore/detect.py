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
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentspec.runtime.commands.explore.driver import Episode
from agentspec.runtime.episode.trajectory import EventKind, TerminationReason

__all__ = ["CODES", "Finding", "Rate", "detect", "rule_witnesses"]

TOLERANCE = 1e-9
MIN_CALLS = 20  # calls of a guarded tool before "its guard never fails" is said
MIN_EPISODES = 20  # episodes before "this reward always fires" is said
TESTS = "the spec's tests"

CODES: dict[str, str] = {
    "X101": "reward without success",
    "X102": "success without a tool the oracle always calls",
    "W102": "success without a tool, no more often than a guess",
    "X103": "success with an answer that is not the sample's",
    "W103": "another answer succeeds, no more often than a guess",
    "W104": "success in fewer steps than the oracle",
    "X105": "farmable reward",
    "X106": "no ending but max_steps",
    "X107": "the first prompt does not fit its budget",
    "X111": "tool that never runs",
    "W112": "guard that never fails",
    "W113": "reward component that never fires",
    "W114": "reward component that always fires",
    "W115": "state variable never read",
}


@dataclass
class Finding:
    """One thing the search showed, where in the spec, and the episode that shows it."""

    code: str
    message: str
    path: tuple[str | int, ...]
    hint: str
    witness: Episode | None = None
    key: bool = False  # point at the key (a section's name) rather than its value
    evidence: dict[str, Any] = field(default_factory=dict)  # rates, coverage (JSON)


@dataclass
class SpecFacts:
    """What the detectors read from the spec besides the episodes."""

    rewards: dict[str, str]  # component → its `on`
    guarded: set[str]  # tools with a `when`
    tools: list[str]
    success_source: str | None
    final_answer: str
    done_when: bool
    unread_state: list[str]
    judges_answer: bool = False  # success reads the final answer (`action`), itself or via rewards
    chance: float | None = None  # 1/k where the answer space is finite (k options)
    reading: Any = None  # `reading.Reading`
    coverage: Mapping[str, Any] = field(default_factory=dict)  # tool → `probe.GuardCoverage`
    schemas: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # tool → properties
    done_when_text: str = ""
    budget_path: tuple[str | int, ...] = ("context", "max_prompt_tokens")
    notes: list[tuple[tuple[str | int, ...], str]] = field(default_factory=list)  # coverage
    sinks: list[tuple[str, str]] = field(default_factory=list)  # answers given as arguments
    sink_vars: list[str] = field(default_factory=list)  # the state they are stored in
    gated: set[str] = field(default_factory=set)  # components whose `when` decides (constant value)


def shortest(episodes: Sequence[Episode]) -> Episode:
    return min(episodes, key=lambda e: (e.steps, sum(map(len, e.turns)), e.sample_index))


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


# ------------------------------------------------------------ evidence


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


def _witness(wins: Sequence[Episode], v: Verdict) -> Episode:
    if v.best is not None:
        mine = [e for e in wins if e.strategy == v.best.strategy]
        if mine:
            return shortest(mine)
    return shortest(wins)


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

    def winning(e: Episode) -> bool:
        # Only episodes a model could play: no turn writes a value its prompt never showed.
        return e.success is True and not e.blind

    cases: list[SuccessCase] = []
    for tool in sorted(always):

        def skipped(e: Episode, tool: str = tool) -> bool:
            return winning(e) and tool not in e.tools_run()

        cases.append(
            SuccessCase(
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
        )

    def other(e: Episode) -> bool:
        o = oracle.get(e.sample_index)
        return winning(e) and (
            (spec.judges_answer and _answer_differs(e, o))
            or (
                bool(spec.sink_vars)
                and _submitted(e, spec.sink_vars) != _submitted(o, spec.sink_vars)
            )
        )

    if spec.judges_answer or spec.sink_vars:
        cases.append(
            SuccessCase(
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
        )

    def shorter(e: Episode) -> bool:
        o = oracle.get(e.sample_index)
        return winning(e) and o is not None and e.steps < o.steps

    cases.append(
        SuccessCase(
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
    )
    return [c for c in cases if c.wins]


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
                _witness(case.wins, v),
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
        took = "; ".join(_took(var, vals) for var, vals in _state_values(played, reads).items())
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


def _coverage_said(spec: SpecFacts, tool: str) -> str:
    """What the guard probe asked `tool`'s guard: states, arguments, comparison sides."""
    coverage = spec.coverage.get(tool)
    if coverage is None or not coverage.states:
        return ""
    reading = spec.reading.guards.get(tool) if spec.reading is not None else None
    parts = [
        f"at {coverage.states} states reached the guard probe asked it about "
        f"{coverage.asked} argument sets ({coverage.passed} passed, {coverage.refused} refused)"
    ]
    if reading is not None:
        tried = []
        for arg in reading.args:
            values = coverage.tried.get(arg, [])
            if values:
                tried.append(_values_said(arg, values, spec.schemas.get(tool, {}).get(arg, {})))
        if tried:
            parts.append("tried " + "; ".join(tried))
        sides = []
        for atom, (true, false, error) in zip(reading.atoms, coverage.sides, strict=False):
            sides.append(
                f"`{atom.text}` true {true}, false {false}" + (f", failed {error}" if error else "")
            )
        if sides:
            parts.append("; ".join(sides))
    return "; ".join(parts)


def _values_said(arg: str, values: list[Any], schema: Mapping[str, Any]) -> str:
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    bounds = [
        f"{k} {schema[k]}"
        for k in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")
        if k in schema
    ]
    if numbers and len(numbers) == len(values):
        said = f"args.{arg} from {min(numbers):g} to {max(numbers):g} ({len(numbers)} values"
        return said + (f"; the schema's {', '.join(bounds)})" if bounds else ")")
    if isinstance(schema.get("enum"), list):
        return f"args.{arg}: all {len(schema['enum'])} enum values"
    ordered = sorted(values, key=lambda v: (type(v).__name__, repr(v)))
    shown = ", ".join(repr(v) for v in ordered[:6]) + (", …" if len(values) > 6 else "")
    return f"args.{arg}: {len(values)} values ({shown})"


def dead_tools(played: Sequence[Episode], spec: SpecFacts) -> list[Finding]:
    runs: dict[str, int] = defaultdict(int)
    # calls a guard could have refused: random actions call only tools whose guard
    # passes (`RandomActions.available_calls`), so they never test it
    probes: dict[str, int] = defaultdict(int)
    refusals: dict[str, list[tuple[Episode, str]]] = defaultdict(list)
    failures: dict[str, list[Episode]] = defaultdict(list)
    for e in played:
        probing = not e.origin.startswith("random actions")
        for step in e.trajectory.steps:
            for event in step.events:
                if event.kind == EventKind.TOOL and event.tool:
                    runs[event.tool] += 1
                    probes[event.tool] += probing
                elif event.kind == EventKind.TOOL_ERROR and event.tool in spec.tools:
                    if event.code == "guard":
                        refusals[event.tool].append((e, event.message))
                    elif event.code != "invalid_arguments":
                        failures[event.tool].append(e)
    tested = spec.reading.tested_tools if spec.reading is not None else set()
    findings: list[Finding] = []
    for tool in spec.tools:
        refused, failed = refusals[tool], failures[tool]
        coverage = spec.coverage.get(tool)
        said = _coverage_said(spec, tool)
        if runs[tool] == 0 and (refused or failed):
            if refused and coverage is not None and coverage.passed:
                spec.notes.append(
                    (
                        ("tools", tool, "when"),
                        f"`{tool}` never ran in the episodes played, but its guard passes "
                        f"some calls the guard probe asked about ({said})",
                    )
                )
                continue
            where = ("tools", tool, "when") if refused else ("tools", tool, "effect")
            findings.append(
                Finding(
                    "X111",
                    f"tool `{tool}` never ran: of its {len(refused) + len(failed)} calls, "
                    f"{len(refused)} were refused by its guard and {len(failed)} failed"
                    + (f"; {said}" if said else ""),
                    where,
                    "a guard or effect that can never pass makes the tool dead weight in the "
                    "prompt: fix the condition"
                    + (" (the spec's tests call it)" if tool in tested else ", or remove the tool"),
                    shortest([e for e, _ in refused] or failed),
                    evidence=_coverage_evidence(coverage),
                )
            )
        elif tool in spec.guarded and not refused:
            if probes[tool] < MIN_CALLS:
                if probes[tool]:
                    spec.notes.append(
                        (
                            ("tools", tool, "when"),
                            f"the guard of `{tool}` refused none of {probes[tool]} calls: too few "
                            f"to say it never fails (at least {MIN_CALLS})"
                            + (f"; {said}" if said else ""),
                        )
                    )
                continue
            if coverage is not None and (coverage.refused or not coverage.states):
                spec.notes.append(
                    (
                        ("tools", tool, "when"),
                        f"the guard of `{tool}` refused none of the {probes[tool]} calls played, "
                        + (
                            f"but refuses some the guard probe asked about ({said})"
                            if coverage.states
                            else "and the guard probe reached no state to ask it about"
                        ),
                    )
                )
                continue
            findings.append(
                Finding(
                    "W112",
                    f"the guard of `{tool}` never refused a call ({probes[tool]} calls ran"
                    + (f"; {said}" if said else "")
                    + ")",
                    ("tools", tool, "when"),
                    "a guard that always passes guards nothing: tighten it"
                    + (
                        " (the spec's tests call this tool: keep it, and make the guard "
                        "compare with what it is meant to limit)"
                        if tool in tested
                        else " so it refuses what it was meant to, or remove it"
                    ),
                    evidence=_coverage_evidence(coverage),
                )
            )
    return findings


def _coverage_evidence(coverage: Any) -> dict[str, Any]:
    if coverage is None:
        return {}
    return {
        "states": coverage.states,
        "asked": coverage.asked,
        "passed": coverage.passed,
        "refused": coverage.refused,
        "sides": [list(s) for s in coverage.sides],
    }


def _event_keys(episode: Episode) -> set[str]:
    from agentspec.runtime.compiled.env import event_keys

    keys: set[str] = set()
    for step in episode.trajectory.steps:
        keys |= event_keys(step.events)
    return keys


def dead_rewards(
    played: Sequence[Episode], spec: SpecFacts, dead_tools: Collection[Any] = ()
) -> list[Finding]:
    findings: list[Finding] = []
    reading = spec.reading
    tested = reading.tested_rewards if reading is not None else set()
    for name, on in spec.rewards.items():
        sums = [e.components().get(name, 0.0) for e in played]
        if played and all(abs(s) <= TOLERANCE for s in sums):
            reached = [e for e in played if on in _event_keys(e)]
            seen = _state_values(played, reading.reward_reads.get(name, []) if reading else [])
            values = "; ".join(_took(var, vals) for var, vals in seen.items())
            if not reached:
                if not (on.startswith("tool:") and on[5:] in dead_tools):
                    spec.notes.append(
                        (
                            ("rewards", name, "value"),
                            f"reward.{name} never fired, but its event `{on}` never happened in "
                            f"the {len(played)} episodes played: not said to be dead",
                        )
                    )
                continue
            unknown = [
                var
                for var in (reading.reward_reads.get(name, []) if reading else [])
                if not _domain_seen(reading.domains.get(var), seen.get(var, []))
                and not _driven(played, var, on)
            ]
            if unknown:
                spec.notes.append(
                    (
                        ("rewards", name, "value"),
                        f"reward.{name} was 0 in all {len(played)} episodes ({len(reached)} "
                        f"reached its event `{on}`), but the search cannot say it saw every "
                        f"value of state.{', state.'.join(unknown)} ({values})",
                    )
                )
                continue
            findings.append(
                Finding(
                    "W113",
                    f"reward.{name} (on: {on}) was 0 in all {len(played)} episodes played; "
                    f"{len(reached)} reached its event"
                    + (f", in which {values}" if values else ""),
                    ("rewards", name, "when" if name in spec.gated else "value"),
                    "its event never pays or its value is always 0: check `on`, `when` and "
                    "the expression against the states tools can reach",
                    evidence={"episodes": len(played), "reached": len(reached)},
                )
            )
        elif on == "final" and (value := _constant(played, name)) is not None:
            findings.append(
                Finding(
                    "W114",
                    f"reward.{name} (on: final) was {value:.3f} at the end of every one of the "
                    "episodes that gave an answer, failed ones too: it cannot tell one answer "
                    "from another",
                    ("rewards", name, "value"),
                    "make it depend on what the agent did"
                    + ("" if name in tested else ", or remove it"),
                )
            )
    return findings


def _took(var: str, values: list[Any]) -> str:
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(values) > 6 and len(numbers) == len(values):
        return f"state.{var} took {len(values)} values from {min(numbers):g} to {max(numbers):g}"
    ordered = sorted(values, key=lambda v: (type(v).__name__, repr(v)))
    return f"state.{var} took {', '.join(map(repr, ordered[:6]))}" + (
        ", …" if len(values) > 6 else ""
    )


def _driven(played: Sequence[Episode], var: str, on: str) -> bool:
    """Whether the search pushed a computed state variable as far as an episode can
    (each tool that writes it called until the step limit) and the event still came."""
    return any(
        e.origin.startswith(f"state.{var} driven by") and on in _event_keys(e) for e in played
    )


def _state_values(played: Sequence[Episode], names: Sequence[str]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for var in names:
        values: list[Any] = []
        for e in played:
            value = e.state.get(var)
            if not isinstance(value, (str, int, float, bool)):
                shown = repr(value)
                value = _Shown(shown if len(shown) <= 40 else shown[:39] + "…")
            if value not in values:
                values.append(value)
                if len(values) >= 50:
                    break
        out[var] = values
    return out


class _Shown(str):
    """A container value as its (cut) text: shown as it is, not quoted again."""

    def __repr__(self) -> str:
        return str(self)


def _domain_seen(domain: list[Any] | None, seen: list[Any]) -> bool:
    """Whether every value the effects can write was seen (an unknown domain: no)."""
    if domain is None:
        return False
    return all(v in seen for v in domain if isinstance(v, (str, int, float, bool)))


def _constant(played: Sequence[Episode], name: str) -> float | None:
    """The one nonzero value a component took at every final answer (a turn without
    a call), if at least `MIN_EPISODES` answers were given, failed episodes' among
    them (where every answer seen won, one value is what a success reward should
    take). An ending a tool makes (`done()` at a goal) is left out: there a constant
    reward is the goal's."""
    answers = [
        (round(s.rewards[name], 9), e.success is True)
        for e in played
        for s in e.trajectory.steps
        if name in s.rewards and not s.tool_calls
    ]
    values = {value for value, _ in answers}
    if len(answers) < MIN_EPISODES or len(values) != 1 or all(won for _, won in answers):
        return None
    (value,) = values
    return None if abs(value) <= TOLERANCE else value


def reward_ranges(
    played: Sequence[Episode], names: Sequence[str]
) -> dict[str, tuple[float, float]]:
    """The smallest and largest per-episode sum of each component over the search."""
    out: dict[str, tuple[float, float]] = {}
    for name in names:
        sums = [e.components().get(name, 0.0) for e in played if not e.broken()]
        if sums:
            out[name] = (min(sums), max(sums))
    return out
