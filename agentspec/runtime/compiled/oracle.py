"""Oracle scripts from a spec's `oracle:` list, rendered lazily.

A generated module lists its oracle as `OracleStep`s; `oracle_turns` yields
one rendered action at a time, so an action is rendered only when the
episode reaches it (an episode that ends early never renders the rest), and
an `each` step yields one action per item of a list computed from the
sample. A rendering error becomes an `OracleError` naming the spec line —
never a Jinja traceback. An action that renders to nothing ends the script.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["OracleError", "OracleStep", "OracleTurn", "oracle_turns"]


class OracleError(Exception):
    """An oracle action could not be rendered; the message names the spec line."""


@dataclass(frozen=True)
class OracleStep:
    """One entry of `oracle:`: an action template, maybe repeated `each` item."""

    template: Any  # a SpecTemplate
    location: str  # spec file:line
    each: Callable[[Any], Any] | None = None  # scope → the items


class OracleTurn(str):
    """One rendered oracle action, and the `oracle:` entry it came from (its
    position in the list, and the item's for an `each` entry), so a failing
    turn is blamed on the entry that wrote it."""

    entry: int
    item: int | None

    def __new__(cls, text: str, entry: int, item: int | None = None) -> OracleTurn:
        turn = super().__new__(cls, text)
        turn.entry, turn.item = entry, item
        return turn


def oracle_turns(steps: tuple[OracleStep, ...], s: Any) -> Iterator[OracleTurn]:
    """The oracle's actions for the sample in scope `s`, rendered one at a time."""
    for entry, step in enumerate(steps):
        if step.each is None:
            text = _render(step, {"sample": s.sample, "constants": s.constants})
            if not text.strip():
                return
            yield OracleTurn(text, entry)
            continue
        try:
            items = list(step.each(s))
        except Exception as exc:
            raise OracleError(
                f"{step.location}: `each` failed: {type(exc).__name__}: {exc}"
            ) from None
        for index, item in enumerate(items):
            variables = {"sample": s.sample, "constants": s.constants, "item": item, "index": index}
            text = _render(step, variables)
            if not text.strip():
                return
            yield OracleTurn(text, entry, index)


def _render(step: OracleStep, variables: dict[str, Any]) -> str:
    try:
        return str(step.template.render(**variables))
    except Exception as exc:
        raise OracleError(f"{step.location}: {type(exc).__name__}: {exc}") from None
