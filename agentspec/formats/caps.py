"""Caps on text that goes back into the model's context.

Its own module so that the format parsers (which `validate` uses) can cap
their error messages without importing the tool runtime.
"""

from __future__ import annotations

__all__ = ["MAX_ERROR_CHARS", "cap_error"]

MAX_ERROR_CHARS = 2000
"""Longest error message shown to the model (it goes back into the context)."""


_NOTE_ROOM = 48  # "… [truncated N characters]" for any N a str can have


def cap_error(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters, a visible note of how much was cut
    included, so that a message capped twice (a tool's, then the step's) says it once."""
    if len(text) <= limit:
        return text
    keep = max(limit - _NOTE_ROOM, 0)
    return f"{text[:keep]}… [truncated {len(text) - keep} characters]"
