"""The Jinja environment model chat templates render in.

Chat templates are written for Hugging Face's ``apply_chat_template``: blocks
trimmed (``trim_blocks``, ``lstrip_blocks``), loop controls, a ``tojson``
filter that does not escape HTML or non-ASCII text, ``raise_exception(msg)``,
``strftime_now(fmt)`` and ``{% generation %}`` blocks. This environment gives
them the same, inside agentspec's resource-limited sandbox (a template comes
with a checkpoint: it must not reach Python internals or run without bound).
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache
from typing import Any

from jinja2 import nodes
from jinja2.ext import Extension

__all__ = ["ChatTemplateError", "environment"]


class ChatTemplateError(ValueError):
    """A chat template that does not compile or cannot render a conversation."""


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    # As chat templates expect it (Hugging Face's filter): no HTML escaping, keys in order.
    # `json.dumps(value, **options)` is `JSONEncoder(**options).encode(value)`; the
    # encoder keeps nothing between calls, so one per option set serves every call.
    try:
        encoder = _encoder(ensure_ascii, indent, separators, sort_keys)
    except TypeError:  # an option that cannot be a cache key (separators as a list)
        return json.dumps(
            value,
            ensure_ascii=ensure_ascii,
            indent=indent,
            separators=separators,
            sort_keys=sort_keys,
        )
    return encoder.encode(value)


@lru_cache(maxsize=64, typed=True)
def _encoder(
    ensure_ascii: bool, indent: int | None, separators: tuple[str, str] | None, sort_keys: bool
) -> json.JSONEncoder:
    return json.JSONEncoder(
        ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


class _GenerationBlock(Extension):
    """``{% generation %}…{% endgeneration %}``: how some templates mark the assistant's
    own text (for Hugging Face's assistant masks); rendered as is."""

    tags = {"generation"}  # noqa: RUF012 (a Jinja extension declares its tags so)

    def parse(self, parser: Any) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body).set_lineno(lineno)


def _raise(message: str) -> None:
    raise ChatTemplateError(f"the chat template refused the conversation: {message}")


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def environment() -> Any:
    """A fresh sandboxed environment for one model's chat template."""
    from agentspec.core.sandbox import LimitedSandbox

    env = LimitedSandbox(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.loopcontrols", _GenerationBlock],
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = _strftime_now
    return env
