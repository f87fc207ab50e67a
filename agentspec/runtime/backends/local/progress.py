"""What the trainer tells whoever watches it, besides each iteration's metrics.

Every phase that can take more than a few seconds — loading (or converting) the
model, behaviour cloning, an evaluation, the RL iterations — is announced with
what it does and how many units it has, and advances unit by unit. After the
first unit of a long phase, the expected time of the whole phase is said; when
that is long, the setting that asked for it is named where the user set it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

__all__ = ["LONG_PHASE_S", "QUICK_PHASE_S", "PhaseSink", "Reporter", "duration"]

QUICK_PHASE_S = 5.0
"""A phase expected to take less than this is not timed aloud."""
LONG_PHASE_S = 600.0
"""A phase expected to take longer than this gets a warning naming its setting."""


class PhaseSink(Protocol):
    """Where the reports go (the CLI: a progress bar on stderr and printed lines)."""

    def phase(self, name: str, total: int | None) -> None:
        """A phase starts: what it does, and how many units (None: unknown)."""

    def advance(self, done: int, detail: str) -> None:
        """`done` units of the current phase are finished; `detail` says how it goes."""

    def note(self, text: str) -> None:
        """A line to keep (a setting chosen for the user, a time estimate, a warning)."""


class Reporter:
    """The trainer's side: forwards to a sink (or nowhere), and turns the first unit's
    time into an estimate of the phase, located at the setting that sized it."""

    def __init__(
        self,
        sink: PhaseSink | None = None,
        origins: Mapping[str, str] | None = None,
        notes: Sequence[str] = (),
    ):
        """`origins`: where each setting the user gave is (`FILE:LINE:COL`, `--set K=V`);
        `notes`: lines to say at once (the settings chosen for the user, warnings)."""
        self.sink = sink
        self.origins = dict(origins or {})
        for text in notes:
            self.note(text)

    def phase(self, name: str, total: int | None = None) -> None:
        if self.sink is not None:
            self.sink.phase(name, total)

    def advance(self, done: int, detail: str = "") -> None:
        if self.sink is not None:
            self.sink.advance(done, detail)

    def note(self, text: str) -> None:
        if self.sink is not None:
            self.sink.note(text)

    def pace(self, what: str, unit: str, seconds: float, count: int, setting: str) -> None:
        """The first of `count` units of `what` took `seconds`: say how long all will take;
        past :data:`LONG_PHASE_S`, as a warning at the place `setting` was given. Nothing
        for a single unit, or a quick phase."""
        total = seconds * count
        if count < 2 or total < QUICK_PHASE_S:
            return
        text = (
            f"{what}: {duration(seconds)} per {unit} (the first): "
            f"about {duration(total)} for {count} {unit}s"
        )
        if total > LONG_PHASE_S and setting in self.origins:
            text = f"{self.origins[setting]}: warning: training.{setting} is {count}: {text}"
        self.note(text)


def duration(seconds: float) -> str:
    """`0.4 s`, `31 s`, `12 min`, `2 h 5 min`."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{hours} h {minutes} min"
