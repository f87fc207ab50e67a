"""An episode as a chat conversation with native tool calls (for chat-completions policies).

A chat-completions API takes messages and tool schemas, not token ids, and
answers with text and structured ``tool_calls``. This module is the bridge in
both directions, so that such a model plays the same episodes as a local one:

- :func:`conversation_of` turns what a local model would see at a step (the
  context policy's choice of turns) into messages: the first messages, then per
  kept step the assistant's turn — with ``tool_calls`` when it called tools,
  each answered by a ``tool`` message holding that call's result — or, for a
  turn that called nothing or could not be parsed, its text followed by the
  environment's reply as a user message. The spec's tool-format instructions are
  cut from the system prompt: the tools travel as JSON schemas instead.
- :func:`render_calls` writes returned ``tool_calls`` in the spec's tool format,
  so the environment's own parser reads them: unknown tools, arguments that are
  not JSON or fail the schema, and too many calls for ``react`` / ``bracket``
  become the same parse and tool errors a local model gets.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentspec.formats.harmony_render import assistant_turn
from agentspec.runtime.episode.context import (
    ContextPolicy,
    ContextView,
    CustomContext,
    Prompt,
    StateSummary,
)
from agentspec.runtime.episode.envs import ToolEnv
from agentspec.runtime.episode.trajectory import Step, ToolCall
from agentspec.runtime.text.chat_templates import without_tool_instructions

__all__ = [
    "ChatCall",
    "Conversation",
    "ConversationError",
    "bracket_problem",
    "conversation_of",
    "render_calls",
    "tool_message_content",
]


class ConversationError(ValueError):
    """The episode cannot be written as chat messages (e.g. a custom context of raw ids)."""


@dataclass(frozen=True)
class ChatCall:
    """A tool call as a chat API returns it: ``arguments`` is the raw JSON text."""

    name: str
    arguments: str
    id: str = ""


@dataclass
class Conversation:
    """What a chat policy sends for one step: messages and the tools' function schemas."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_format: str = "hermes"


def conversation_of(view: ContextView, prompt: Prompt, context: ContextPolicy) -> Conversation:
    """The conversation a chat model sees at this step: the turns ``context`` kept for ``prompt``."""
    env = view.env
    tools = list(env.tools.values()) if isinstance(env, ToolEnv) else []
    fmt = env.format if isinstance(env, ToolEnv) else None
    initial = without_tool_instructions(view.initial_messages, env)
    if isinstance(context, StateSummary):
        messages = [m for m in initial if m["role"] == "system"][:1]
        messages.append({"role": "user", "content": context.render(view)})
    elif isinstance(context, CustomContext):
        out: list[Any] = list(context.fn(view))
        if out and not isinstance(out[0], Mapping):
            raise ConversationError(
                "a custom context that returns token ids cannot feed a chat-completions policy; "
                "return messages instead"
            )
        messages = [dict(m) for m in out]
    else:
        messages = [dict(m) for m in initial]
        for step in view.steps[prompt.dropped_steps :]:
            messages += _step_messages(step, fmt)
    return Conversation(
        messages=messages,
        tools=[tool.schema() for tool in tools],
        tool_format=fmt.name if fmt is not None else "hermes",
    )


def _step_messages(step: Step, fmt: Any) -> list[dict[str, Any]]:
    results = step.info.get("tool_results", [])
    structured = (
        step.tool_calls
        and len(results) == len(step.tool_calls)
        and all("text" in r for r in results)
    )
    if not structured:
        messages: list[dict[str, Any]] = [{"role": "assistant", "content": step.action_text}]
        if step.observation is not None:
            messages.append({"role": "user", "content": step.observation})
        return messages
    content = fmt.parse(step.action_text).content if fmt is not None else ""
    ids = [f"call_{step.index}_{i}" for i in range(len(step.tool_calls))]
    assistant: dict[str, Any] = {
        "role": "assistant",
        "content": content or None,
        "tool_calls": [
            _call_json(call, call_id) for call, call_id in zip(step.tool_calls, ids, strict=False)
        ],
    }
    messages = [assistant]
    for call, call_id, result in zip(step.tool_calls, ids, results, strict=False):
        messages.append(
            {
                "role": "tool",
                "tool_call_id": call_id,
                "name": call.name,
                "content": tool_message_content(bool(result["ok"]), str(result["text"])),
            }
        )
    return messages


def _call_json(call: ToolCall, call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {
            "name": call.name,
            "arguments": json.dumps(call.arguments, ensure_ascii=False),
        },
    }


def tool_message_content(ok: bool, text: str) -> str:
    """A call's result as a ``tool`` message: the text, or ``Error: ...`` for a failed call."""
    return text if ok else f"Error: {text}"


def _arguments_value(arguments: str) -> Any:
    """The arguments as JSON if they parse (strictly), else the raw string (the parser flags it)."""
    try:
        return json.loads(arguments, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return arguments


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def render_calls(tool_format: str, content: str | None, calls: Sequence[ChatCall]) -> str:
    """``content`` then ``calls`` written in ``tool_format``, as a local model would write them."""
    text = (content or "").strip()
    if not calls:
        return content or ""
    if tool_format == "json":
        items = [{"name": c.name, "arguments": _arguments_value(c.arguments)} for c in calls]
        body = _json_text(items[0] if len(items) == 1 else items)
        # The json format takes only the JSON: prose beside native calls is dropped.
        return body
    if tool_format == "react":
        blocks = [f"Action: {c.name}\nAction Input: {_react_input(c.arguments)}" for c in calls]
        return "\n".join([text, *blocks] if text else blocks)
    if tool_format == "harmony":
        return assistant_turn(
            text,
            [(_harmony_name(c.name), _json_text(_arguments_value(c.arguments))) for c in calls],
        )
    if tool_format == "bracket":
        # One line: the format reads the last line, and two actions there are `multiple_calls`.
        # A call the format cannot carry is written as a parse error, never as another call.
        bad = next(((c, p) for c in calls if (p := bracket_problem(c)) is not None), None)
        if bad is not None:
            name = bad[0].name if _BRACKET_NAME.fullmatch(bad[0].name) else "call"
            line = f"{_UNWRITABLE}\n{name}[...] unwritable: {bad[1]}"
        else:
            line = " ".join(f"{c.name}[{_bracket_argument(c.arguments)}]" for c in calls)
        return f"{text}\n{line}" if text else line
    # hermes, and any format that reads <tool_call> blocks
    blocks = [
        "<tool_call>"
        + _json_text({"name": c.name, "arguments": _arguments_value(c.arguments)})
        + "</tool_call>"
        for c in calls
    ]
    return "\n".join([text, *blocks] if text else blocks)


_JSON_ESCAPES = {ch: f"\\u{ord(ch):04x}" for ch in "<>|`\x85\u2028\u2029\x0b\x0c\x1c\x1d\x1e"}
_JSON_TABLE = {ord(ch): escape for ch, escape in _JSON_ESCAPES.items()}


def _json_text(value: Any) -> str:
    """``value`` as one line of JSON that no format reads a tag, marker or line break in:
    ``<``, ``>``, ``|``, backticks and the line breaks JSON leaves raw are written as
    ``\\uXXXX`` (they occur only inside strings, so the value reads back the same)."""
    text = json.dumps(value, ensure_ascii=False)
    return text.translate(_JSON_TABLE)


def _harmony_name(name: str) -> str:
    """A tool name as harmony's recipient (`to=functions.NAME`), which ends at whitespace:
    whitespace and special-token characters inside the name are written as ``\\uXXXX``, so
    `calculator foo` reads as the unknown tool it is, not as a call of `calculator`."""
    return "".join(
        f"\\u{ord(ch):04x}" if ch.isspace() or ch in "<>|" else ch for ch in name.strip()
    )


def _react_input(arguments: str) -> str:
    value = _arguments_value(arguments)
    if isinstance(value, dict):
        return _json_text(value)
    # Not a JSON object: written so that react's bare-value rule cannot take it
    # for a one-string-parameter call; the parser reports "must be a JSON object".
    return _json_text([value])


_BRACKET_NAME = re.compile(r"[A-Za-z_][\w-]*")
_UNWRITABLE = "unwritable_call[?]"
"""The line above an unwritable bracket call's explanation: with it the bracket parser
reads the response as a parse error (`extra_text`) whichever tools the spec has — the
explanation on the last line names a tool, or an action stands above the last line."""


def bracket_problem(call: ChatCall) -> str | None:
    """Why ``call`` cannot be written as ``name[argument]`` so that the bracket
    parser reads back the same name and the same argument text (``None``: it can).

    The parser takes the last line, the argument between the first ``[`` and the
    last ``]``, stripped: a line break, whitespace at the ends, or ``]`` followed
    by ``word[`` would make it another call, another argument or a final answer."""
    if not _BRACKET_NAME.fullmatch(call.name):
        return "a tool name the format cannot write"
    argument = _bracket_argument(call.arguments)
    if not argument:
        return "an empty argument"
    if len(f"{argument}.".splitlines()) > 1:
        return "a line break in the argument"
    if argument != argument.strip():
        return "whitespace at the argument's ends"
    from agentspec.formats.bracket import BracketFormat

    parsed = BracketFormat().parse_answer(f"{call.name}[{argument}]")
    got = [(c.name, c.arguments) for c in parsed.calls]
    if parsed.errors or got != [(call.name, {"argument": argument})]:
        return "brackets the format would misread"
    return None


def _bracket_argument(arguments: str) -> str:
    value = _arguments_value(arguments)
    if isinstance(value, dict) and len(value) == 1:
        (only,) = value.values()
        return only if isinstance(only, str) else json.dumps(only, ensure_ascii=False)
    return arguments
