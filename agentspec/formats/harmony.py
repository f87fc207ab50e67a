"""``harmony``: gpt-oss's channels: analysis (reasoning), commentary (calls, preambles), final.

The response continues the prompt's ``<|start|>assistant``, so its first
message may begin directly with ``<|channel|>``; later ones begin with
``<|start|>assistant``. A message is ``HEADER<|message|>CONTENT`` ended by
``<|end|>``, ``<|call|>`` or ``<|return|>`` — or by the end of the text,
since decoders may drop the stop token.

Rules (the docs page lists them with examples):

- ``analysis`` messages are reasoning (:attr:`ParsedResponse.reasoning`),
  never calls; ``<think>`` tags mean nothing here;
- a message addressed ``to=functions.NAME`` (in the role or the channel part
  of its header, usually on ``commentary``, optionally with
  ``<|constrain|>json``) is a call whose content is the arguments' JSON
  object; several calls in one response are allowed; another recipient
  (``browser.search``, ``python``) is ``bad_recipient``;
- ``commentary`` without a recipient is a preamble (``content``), ``final``
  is the final answer; a call and a final answer together are ``mixed_final``;
- only analysis is ``no_action``; an analysis message cut off at the end is
  ``unclosed_reasoning``; a message from another role (the model writing the
  tool's reply itself) and text before the first message are ``extra_text``;
  a response with no harmony token at all is a plain final answer;
- results come back as complete tool messages
  (``<|start|>functions.NAME to=assistant<|channel|>commentary<|message|>…<|end|>``):
  :attr:`HarmonyFormat.frames_observations` tells a chat template to insert
  them as they are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agentspec.formats.base import (
    MAX_LISTED_ERRORS,
    FormatError,
    FormatResult,
    FormatTool,
    ParsedResponse,
    ToolCall,
    ToolCallFormat,
    register_format,
)
from agentspec.formats.harmony_render import functions_namespace, message, tool_message
from agentspec.formats.strict_json import decode_one, json_type

__all__ = ["HarmonyFormat", "HarmonyMessage", "split_messages"]

START, MESSAGE, CHANNEL, CONSTRAIN = "<|start|>", "<|message|>", "<|channel|>", "<|constrain|>"
_TERMINATOR = re.compile(r"<\|(end|call|return)\|>")
_ANY_TOKEN = re.compile(r"<\|(start|end|message|channel|constrain|call|return)\|>")
_RECIPIENT = re.compile(r"(?:^|\s)to=(\S*)")
CHANNELS = ("analysis", "commentary", "final")


@dataclass(frozen=True)
class HarmonyMessage:
    role: str
    """``assistant`` (or empty for the first message, whose role the prompt wrote)."""
    channel: str | None
    recipient: str | None
    content: str
    terminated: bool
    raw: str


def split_messages(text: str) -> list[HarmonyMessage | FormatError]:
    """The messages of a response, or an error for a chunk that is not a message."""
    out: list[HarmonyMessage | FormatError] = []
    for chunk in text.split(START):
        if chunk.strip():
            out.append(_message(chunk))
    return out


def _message(chunk: str) -> HarmonyMessage | FormatError:
    header, found, body = chunk.partition(MESSAGE)
    if not found:
        return FormatError(
            f"a message header without {MESSAGE}: {chunk.strip()[:60]!r}", "missing_message"
        )
    end = _TERMINATOR.search(body)
    content = body[: end.start()] if end else body
    if end and body[end.end() :].strip():
        return FormatError(
            f"text after the end of a message: {body[end.end() :].strip()[:40]!r}", "extra_text"
        )
    role_part, _, channel_part = header.partition(CHANNEL)
    channel_part = channel_part.partition(CONSTRAIN)[0]
    recipient = _RECIPIENT.search(f"{role_part} {channel_part}")
    channel_words = [w for w in channel_part.split() if not w.startswith("to=")]
    role_words = [w for w in role_part.split() if not w.startswith("to=")]
    return HarmonyMessage(
        role=role_words[0] if role_words else "",
        channel=channel_words[0] if channel_words else None,
        recipient=recipient.group(1) if recipient else None,
        content=content,
        terminated=end is not None,
        raw=chunk.strip(),
    )


@register_format("harmony")
class HarmonyFormat(ToolCallFormat):
    frames_observations = True
    """Results and errors are complete harmony messages: insert them without a role wrapper."""

    def __init__(self, reasoning_tags: tuple[str, str] | None = None) -> None:
        super().__init__(reasoning_tags)  # reasoning is the analysis channel

    def usage(self) -> str:
        return (
            "Call a tool with a commentary message to=functions.TOOL: "
            '<|start|>assistant<|channel|>commentary to=functions.TOOL <|constrain|>json<|message|>{"ARG": ...}<|call|>; '
            "answer on the final channel."
        )

    def instructions(self, tools: Sequence[FormatTool]) -> str:
        return functions_namespace(tools)

    def render_result(self, result: FormatResult) -> str:
        return tool_message(result.name, result.text if result.ok else self.error_body(result))

    def render_results(self, results: Sequence[FormatResult]) -> str:
        return "".join(self.render_result(r) for r in results)

    def render_errors(self, errors: Sequence[FormatError]) -> str:
        return message("user", super().render_errors(errors))

    def parse_answer(
        self, text: str, tools: Mapping[str, FormatTool] | None = None
    ) -> ParsedResponse:
        if not _ANY_TOKEN.search(text):
            answer = text.strip()  # no harmony at all: plain text is the final answer
            return ParsedResponse(final_answer=answer, content=answer)
        read = _Reading()
        for item in split_messages(text):
            if len(read.errors) >= MAX_LISTED_ERRORS:
                break
            if isinstance(item, FormatError):
                read.errors.append(item)
            else:
                read.take(item)
        return read.result()


_AUTHORS = ("system", "developer", "user", "tool")


def _not_the_assistants(msg: HarmonyMessage) -> FormatError:
    """A message from another author (the model writing a reply itself), or stray text."""
    if msg.role in _AUTHORS or msg.role.startswith("functions."):
        message = f"do not write the {msg.role!r} message yourself; stop after your call"
    else:
        message = (
            f"text outside a message: {msg.raw[:40]!r}; write every message as "
            "<|channel|>CHANNEL<|message|>TEXT<|end|>"
        )
    return FormatError(message, "extra_text")


class _Reading:
    """What the messages of one response add up to."""

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self.errors: list[FormatError] = []
        self.reasoning: list[str] = []
        self.preambles: list[str] = []
        self.finals: list[str] = []
        self.cut_off_analysis = False
        self.n_calls = 0

    def take(self, msg: HarmonyMessage) -> None:
        if msg.role not in ("", "assistant"):
            self.errors.append(_not_the_assistants(msg))
        elif msg.recipient is not None:
            self.call(msg)
        elif msg.channel == "analysis":
            self.reasoning.append(msg.content.strip())
            self.cut_off_analysis = not msg.terminated
        elif msg.channel == "commentary":
            self.preambles.append(msg.content.strip())
        elif msg.channel == "final":
            self.finals.append(msg.content.strip())
        else:
            channel = "no channel" if msg.channel is None else f"channel {msg.channel!r}"
            self.errors.append(
                FormatError(
                    f"a message on {channel}; use analysis, commentary or final", "bad_channel"
                )
            )

    def call(self, msg: HarmonyMessage) -> None:
        index = self.n_calls
        self.n_calls += 1
        where = f"call {index + 1}"
        namespace, dot, name = (msg.recipient or "").partition(".")
        if namespace != "functions" or not dot:
            self.errors.append(
                FormatError(
                    f"{where}: recipient {msg.recipient!r} is not functions.TOOL",
                    "bad_recipient",
                    index,
                )
            )
            return
        if not name:
            self.errors.append(
                FormatError(f"{where}: no tool name after 'functions.'", "bad_name", index)
            )
            return
        value, error = decode_one(msg.content, where, index)
        if error is None and not isinstance(value, dict):
            error = FormatError(
                f"{where}: the arguments must be a JSON object, got {json_type(value)}",
                "arguments_not_object",
                index,
            )
        if error is not None:
            self.errors.append(error)
        else:
            self.calls.append(ToolCall(name, value, msg.raw))

    def result(self) -> ParsedResponse:
        content = "\n\n".join(p for p in (*self.preambles, *self.finals) if p)
        reasoning = "\n\n".join(r for r in self.reasoning if r) if self.reasoning else None
        errors = self.errors or self._shape_errors()
        if errors:
            return ParsedResponse(errors=errors, content=content, reasoning=reasoning)
        if self.calls:
            return ParsedResponse(calls=self.calls, content=content, reasoning=reasoning)
        return ParsedResponse(
            final_answer="\n\n".join(self.finals), content=content, reasoning=reasoning
        )

    def _shape_errors(self) -> list[FormatError]:
        if self.calls and self.finals:
            return [
                FormatError(
                    "write either tool calls or a final message, not both", "mixed_final", 0
                )
            ]
        if self.calls or self.finals:
            return []
        if self.cut_off_analysis:
            return [
                FormatError(
                    "the analysis message is not ended (was the response cut off?)",
                    "unclosed_reasoning",
                )
            ]
        return [FormatError("no final message and no tool call", "no_action")]
