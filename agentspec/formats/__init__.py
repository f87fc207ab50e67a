"""Tool-call formats: parse a response into calls or a final answer; render observations.

Five formats, registered by name in :data:`FORMATS` (:func:`get_format`):
``hermes`` (``<tool_call>`` JSON blocks), ``json`` (the whole response is the
call), ``react`` (``Action:`` / ``Action Input:`` / ``Final Answer:``),
``bracket`` (WebShop's ``name[argument]``) and ``harmony`` (gpt-oss's
channels). Each module states its format's rules; ``docs/formats.md`` shows
them with examples checked by the tests.

Parsing never raises on model output: a malformed response yields a
:class:`ParsedResponse` whose ``errors`` say which call is wrong and how; the
environment shows :meth:`ToolCallFormat.render_errors` to the model. A response
with any error runs none of its calls. Reasoning (``<think>…</think>``, or
harmony's analysis channel) is never parsed for calls and comes back on
``ParsedResponse.reasoning``.

Hostile output is bounded: JSON is strict (NaN, ±Infinity, a float that
overflows and an integer of more than :data:`MAX_INT_DIGITS` digits are parse
errors), every parser runs in linear time in the response's length
(``benchmarks/parse_worst_case.py``), at most :data:`MAX_LISTED_ERRORS`
problems are listed, and error observations are capped with a visible
``… [truncated N characters]`` note.

Importing this package is cheap (no torch, no tool runtime): ``validate`` uses it.
"""

from __future__ import annotations

from agentspec.formats.base import (
    ERROR_CODES,
    FORMATS,
    MAX_ERROR_LINE_CHARS,
    MAX_LISTED_ERRORS,
    FormatError,
    ParsedResponse,
    ToolCallFormat,
    available_formats,
    get_format,
    register_format,
)
from agentspec.formats.bracket import BracketFormat
from agentspec.formats.harmony import HarmonyFormat
from agentspec.formats.hermes import HermesFormat
from agentspec.formats.json_calls import JsonFormat
from agentspec.formats.react import ReactFormat
from agentspec.formats.reasoning import DEFAULT_REASONING_TAGS, split_reasoning
from agentspec.formats.strict_json import MAX_INT_DIGITS, strict_json_loads

__all__ = [
    "DEFAULT_REASONING_TAGS",
    "ERROR_CODES",
    "FORMATS",
    "MAX_ERROR_LINE_CHARS",
    "MAX_INT_DIGITS",
    "MAX_LISTED_ERRORS",
    "BracketFormat",
    "FormatError",
    "HarmonyFormat",
    "HermesFormat",
    "JsonFormat",
    "ParsedResponse",
    "ReactFormat",
    "ToolCallFormat",
    "available_formats",
    "get_format",
    "register_format",
    "split_reasoning",
    "strict_json_loads",
]
