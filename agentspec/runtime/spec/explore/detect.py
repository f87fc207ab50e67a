"""Detectors: what the played episodes prove about a spec's rewards, guards and endings.

Each detector reads every episode the search played and reports findings
located at the spec line involved, each with the shortest episode that shows
it (the witness). Nothing is inferred: a finding is an episode that happened
(or, for dead parts, a count over every episode that did).
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from agentspec.runtime.episode.trajectory import EventKind
from agentspec.runtime.spec.explore.driver import Episode

__all__ = ["CODES", "Finding", "detect"]

TOLERANCE = 1e-9
MIN_CALLS = 20  # calls of a guarded tool before "its guard never fails" is said
MIN_EPISODES = 20  # episodes before "this reward always fires" is said

CODES: dict[str, str] = {
    "X101": "reward without success",
    "X102": "success without a tool the oracle always calls",
    "X103": "success with an answer that is not the sample's",
    "W104": "success in fewer steps than the oracle",
    "X105": "farmable reward",
    "X106": "no ending but max_steps",
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


def shortest(episodes: Sequence[Episode]) -> Episode:
    return min(episodes, key=lambda e: (e.steps, sum(map(len, e.turns)), e.sample_index))


def detect(episodes: Sequence[Episode], spec: SpecFacts) -> list[Finding]:
    played = [e for e in episodes if not e.broken()]
    oracle = {e.sample_index: e for e in played if e.origin == "oracle"}
    findings: list[Finding] = []
    findings += reward_without_success(played, oracle, spec)
    findings += success_without_work(played, oracle, spec)
    findings += farmable(played, spec)
    findings += no_ending(played, spec)
    findings += dead_tools(played, spec)
    findings += dead_rewards(played, spec)
    findings += [
        Finding(
            "W115",
            f"state.{name} is written but nothing reads it (no guard, effect, reward, "
            "observation, prompt or success)",
            ("state", name),
            "remove it, or use it where it was meant to matter",
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
    hits = [
        e
        for e in played
        if e.success is False
        and (o := oracle.get(e.sample_index)) is not None
        and o.success is True
        and e.total >= o.total - TOLERANCE
    ]
    if not hits:
        return []
    witness = shortest(hits)
    base = oracle[witness.sample_index]
    got, had = witness.components(), base.components()
    name = max(got, key=lambda n: (got[n] - had.get(n, 0.0), got[n]), default=None)
    path: tuple[str | int, ...] = ("rewards", name, "value") if name else ("episode", "success")
    return [
        Finding(
            "X101",
            f"an episode that fails `episode.success` earns {witness.total:.3f}, the oracle "
            f"{base.total:.3f} on the same sample ({len(hits)} such episodes; most from "
            f"reward.{name})",
            path,
            "pay the reward only for what success means, or make success require what the "
            "reward pays for",
            witness,
        )
    ]


def success_without_work(
    played: Sequence[Episode], oracle: dict[int, Episode], spec: SpecFacts
) -> list[Finding]:
    solved = [o for o in oracle.values() if o.success is True]
    if not solved:
        return []
    always = set.intersection(*(o.tools_run() for o in solved))
    # Only episodes a model could play: no turn writes a value its prompt never showed.
    wins = [e for e in played if e.success is True and e.origin != "oracle" and not e.blind]
    findings: list[Finding] = []
    for tool in sorted(always):
        skipped = [e for e in wins if tool not in e.tools_run()]
        if skipped:
            findings.append(
                Finding(
                    "X102",
                    f"`episode.success` holds without calling `{tool}`, which the oracle "
                    f"calls in every episode ({len(skipped)} such episodes)",
                    _success_path(spec),
                    f"make success depend on what `{tool}` finds (a state it writes), or check "
                    "that the answer cannot be guessed from the prompt",
                    shortest(skipped),
                )
            )
    other = [e for e in wins if _answer_differs(e, oracle.get(e.sample_index))]
    if not spec.judges_answer:
        other = []
    if other:
        findings.append(
            Finding(
                "X103",
                "`episode.success` holds for a final answer that is not the oracle's "
                f"({len(other)} such episodes): the check accepts more than the sample's answer",
                _success_path(spec),
                "compare the answer exactly (==) rather than with `contains` or a pattern "
                "that a list of candidates also matches",
                shortest(other),
            )
        )
    shorter = [e for e in wins if (o := oracle.get(e.sample_index)) and e.steps < o.steps]
    if shorter:
        findings.append(
            Finding(
                "W104",
                f"`episode.success` holds after fewer steps than the oracle takes "
                f"({len(shorter)} such episodes)",
                _success_path(spec),
                "if the oracle's steps are all needed, require their effects in success; "
                "otherwise shorten the oracle",
                shortest(shorter),
            )
        )
    return findings


def _final_answer(episode: Episode) -> str | None:
    steps = episode.trajectory.steps
    if not steps or steps[-1].tool_calls:
        return None
    finals = [e.message for e in steps[-1].events if e.kind == EventKind.FINAL]
    return finals[0] if finals and finals[0] not in ("terminal tool", "done_when") else None


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
                    f"turn repeated pays {shown}",
                    ("rewards", name, "value"),
                    "pay it once (a state flag set by the first call, `when: not state.paid`), "
                    "or only for progress",
                    ordered[-1],
                )
            )
    return findings


def no_ending(played: Sequence[Episode], spec: SpecFacts) -> list[Finding]:
    if not played or any(e.ending == "done" for e in played):
        return []
    if spec.final_answer == "continue":
        path: tuple[str | int, ...] = ("episode", "final_answer")
    else:
        path = ("episode", "done_when") if spec.done_when else ("episode", "max_steps")
    return [
        Finding(
            "X106",
            f"none of {len(played)} episodes ended before a limit (max_steps, a turn or "
            "context cut off): nothing the agent does ends an episode",
            path,
            "end it with a terminal tool, `done()` in an effect, `done_when`, or "
            "`final_answer: end`",
            shortest(played),
        )
    ]


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
    findings: list[Finding] = []
    for tool in spec.tools:
        refused, failed = refusals[tool], failures[tool]
        if runs[tool] == 0 and (refused or failed):
            where = ("tools", tool, "when") if refused else ("tools", tool, "effect")
            findings.append(
                Finding(
                    "X111",
                    f"tool `{tool}` never ran: of its {len(refused) + len(failed)} calls, "
                    f"{len(refused)} were refused by its guard and {len(failed)} failed",
                    where,
                    "a guard or effect that can never pass makes the tool dead weight in the "
                    "prompt: fix the condition, or remove the tool",
                    shortest([e for e, _ in refused] or failed),
                )
            )
        elif tool in spec.guarded and probes[tool] >= MIN_CALLS and not refused:
            findings.append(
                Finding(
                    "W112",
                    f"the guard of `{tool}` never refused a call ({probes[tool]} calls ran)",
                    ("tools", tool, "when"),
                    "a guard that always passes guards nothing: tighten it or remove it",
                )
            )
    return findings


def dead_rewards(played: Sequence[Episode], spec: SpecFacts) -> list[Finding]:
    findings: list[Finding] = []
    for name, on in spec.rewards.items():
        sums = [e.components().get(name, 0.0) for e in played]
        if played and all(abs(s) <= TOLERANCE for s in sums):
            findings.append(
                Finding(
                    "W113",
                    f"reward.{name} (on: {on}) was 0 in all {len(played)} episodes played",
                    ("rewards", name, "value"),
                    "its event never happens or its value is always 0: check `on`, `when` and "
                    "the expression against the states tools can reach",
                )
            )
        elif on == "final" and (value := _constant(played, name)) is not None:
            findings.append(
                Finding(
                    "W114",
                    f"reward.{name} (on: final) was {value:.3f} at the end of every one of the "
                    "episodes that gave an answer: it cannot tell one answer from another",
                    ("rewards", name, "value"),
                    "make it depend on what the agent did, or remove it",
                )
            )
    return findings


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
