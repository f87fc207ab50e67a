"""Caps on text that goes back into the model's context.

Its own module so that the format parsers (which `validate` uses) can cap
their error messages without importing the tool runtime.
"""

from __future__ import annotations

__all__ = ["MAX_ERROR_CHARS", "cap_error"]

MAX_ERROR_CHARS = 2000
"""Longest error message shown to the model (it goes back into the context)."""


def cap_error(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` cut to ``limit`` characters with a visible note of how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [truncated {len(text) - limit} characters]"
