"""Diagnostics about names: unknown ones (with a "did you mean"), scopes not
available at a site, missing fields, and names reserved for Python.

Functions of the checker (`checker` is the running check, a `CheckState`); the hint
builders are plain functions, shared by every "unknown NAME" diagnostic of
the compiler.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from agentspec.compiler.scopes import WHERE
from agentspec.compiler.types import Type
from agentspec.core.diagnostics import Diagnostic
from agentspec.core.source import Span, dotted

if TYPE_CHECKING:
    from agentspec.compiler.check_state import CheckState

MAX_LISTED = 12  # known names listed in a hint when none is close


def did_you_mean(
    name: str, candidates: Iterable[str], prefix: str = "", list_known: bool = True
) -> str | None:
    """`did you mean 'X'?` for the closest candidate; else, for a short list,
    every known name (`list_known`); else None."""
    options = list(candidates)
    close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{prefix}{close[0]}'?"
    if list_known and options and len(options) <= MAX_LISTED:
        return "known: " + ", ".join(prefix + o for o in sorted(options))
    return None


def close_match_hint(name: str, candidates: Iterable[str], fields: Sequence[str]) -> str | None:
    """A hint for a bare `name` that is the field of a scope (`question` →
    `sample.question`), or else as :func:`did_you_mean`."""
    exact = [f for f in fields if f.split(".", 1)[1] == name]
    return f"did you mean '{exact[0]}'?" if exact else did_you_mean(name, candidates)


def unknown(
    checker: CheckState,
    code: str,
    message: str,
    span: Span,
    name: str,
    candidates: Iterable[str],
    prefix: str = "",
) -> None:
    checker.error(code, message, span, did_you_mean(name, candidates, prefix))


def reserved(checker: CheckState, name: str, span: Span) -> bool:
    """Report a name starting with `__` (E410): such names belong to Python."""
    if not name.startswith("__"):
        return False
    checker.error("E410", f"names starting with '__' are not allowed: '{name}'", span)
    return True


def unavailable(checker: CheckState, root: str, span: Span) -> None:
    site = checker.site
    where = dotted(site.path) if site else "here"
    hint = f"'{root}' is available {WHERE[root]}"
    if root == "result" and site is not None and site.tool in checker.spec.tools:
        hint = f"declare `returns:` on tool '{site.tool}' to give it a result"
    checker.error("E407", f"'{root}' is not available in {where}", span, hint)


_FIELD_CODES = {
    "state": "E402",
    "args": "E403",
    "sample": "E404",
    "reward": "E406",
    "constants": "E414",
}
_FIELD_NOUNS = {
    "state": "state variable",
    "args": "tool argument",
    "sample": "sample field",
    "reward": "reward component",
    "constants": "constant",
}


def missing_field(
    checker: CheckState, root: str, name: str, span: Span, record: dict[str, Type]
) -> None:
    code = _FIELD_CODES.get(root, "E411")
    message = f"unknown {_FIELD_NOUNS.get(root, f'field of {root!r}')} '{name}'"
    site = checker.site
    if root == "args" and site is not None and site.via is not None:
        message += f" of tool '{site.tool}', which uses guard '{site.via}'"
    if code == "E404" and checker.spec.data is None:
        checker.diagnostics.append(
            Diagnostic(code, message, span, "declare sample fields under `data.fields`")
        )
        return
    unknown(checker, code, message, span, name, record)
