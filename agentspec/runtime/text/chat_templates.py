"""Prompts in the model's own chat template, token in and token out.

A model is trained on one prompt framing: ChatML, Llama 3 headers, Mistral's
``[INST]``, Gemma's turns, harmony, ... Its tokenizer carries that framing as a
Jinja ``chat_template`` (a GGUF file as ``tokenizer.chat_template`` metadata).
:class:`ModelTemplate` renders every prompt with it, the tools passed as
``tools=`` where the template writes calls in the spec's tool format; the
built-in :class:`~agentspec.runtime.text.tokenizer.ChatTemplate` (ChatML as Python
strings) serves only a tokenizer without a template (:func:`chat_for`).

Token in, token out. A response is never re-encoded: the ids after it are the
template's rendering of the extended conversation minus the rendering of the
current one, checked to extend it. The responses inside those renderings are
placeholders, so the template can neither see nor reformat what the model
wrote::

    current  = render(first messages, A_0, obs_0, …, A_{t-1}, obs_{t-1})    # + generation prompt
    extended = render(…, A_t, obs_t)
    extended == current + [model-written header] + A_t + tail   →   observation ids = tokens(tail)

(the model's end-of-turn token, if the response ended with it, is cut from the
tail's start). That is exact only for a *prefix-stable* template, one that
never rewrites an earlier turn. Templates that do — Qwen3 and gpt-oss drop the
reasoning of past turns — are found at start-up by rendering a probe
conversation turn by turn (:func:`probe`), and are handled explicitly: each
step's prompt is the template's rendering of the conversation so far (per-step
rows, never packed; :func:`agentspec.core.row_layout.layout_for_template`).

Contents are text: when a message holds special-token text (``<|im_start|>``
written by a tool), that content is encoded with
:func:`~agentspec.runtime.text.tokenizer.encode_text` and only the framing around it
with special tokens, so no tool can forge a turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from jinja2 import TemplateError

from agentspec.runtime.text.chat_reasoning import assistant_message, split_reasoning
from agentspec.runtime.text.fast_codec import codec
from agentspec.runtime.text.jinja_chat import ChatTemplateError, environment
from agentspec.runtime.text.template_probe import (
    _HOLE,
    _refuses_system,
    _stability,
    writes_calls_in,
)
from agentspec.runtime.text.tokenizer import (
    ChatTemplate,
    Tokenizer,
    encode_text,
    special_pattern,
)

__all__ = [
    "ChatTemplateError",
    "ModelTemplate",
    "assistant_message",
    "chat_for",
    "chat_for_spec",
    "split_reasoning",
]

TURN_NOTE = "chat_template"
"""The key of a step's ``info`` that says the template could not simply append its turn."""


class ModelTemplate:
    """A model's Jinja chat template, rendered the way Hugging Face's ``apply_chat_template`` does.

    Args:
        source: the Jinja template.
        bos_token, eos_token: the texts templates may write as ``bos_token`` / ``eos_token``.
        tokenizer: when given, :func:`probe` checks prefix-stability on its tokens too.
        name: where the template came from (for messages).
    """

    def __init__(
        self,
        source: str,
        *,
        bos_token: str = "",
        eos_token: str = "",
        tokenizer: Tokenizer | None = None,
        name: str = "chat template",
        keep_reasoning: bool | None = None,
    ) -> None:
        from agentspec.core import sandbox

        self.source = source
        self.name = name
        self.bos_token = bos_token
        self.eos_token = eos_token
        try:
            self._template = environment().from_string(source)
        except TemplateError as exc:
            raise ChatTemplateError(f"{name} does not compile: {exc}") from None
        self._render_limited = sandbox.render
        self._native: dict[str, bool] = {}
        self.keep_reasoning = keep_reasoning
        self.merges_system = False
        """The template refuses a system turn (Gemma 2's, say): the system prompt opens
        the first user turn instead."""
        self.stability = _stability(self, tokenizer, keep_reasoning)
        if not self.prefix_stable and _refuses_system(self):
            self.merges_system = True
            self.stability = _stability(self, tokenizer, keep_reasoning)

    @property
    def prefix_stable(self) -> bool:
        return self.stability.prefix_stable

    @property
    def takes_tools(self) -> bool:
        """Whether the template reads a ``tools`` variable at all."""
        return "tools" in self.source

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = True,
    ) -> str:
        """The conversation's text (``tools``: OpenAI-style function schemas)."""
        if self.merges_system:
            messages = _system_into_first_user(messages)
        variables = {
            "messages": [dict(m) for m in messages],
            "tools": list(tools) if tools else None,
            "add_generation_prompt": add_generation_prompt,
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
        }
        try:
            return str(self._render_limited(self._template, variables))
        except ChatTemplateError:
            raise
        except Exception as exc:  # a template bug or limit: the caller reports where
            raise ChatTemplateError(f"{self.name} failed to render: {exc}") from None

    # --- What the context policies call (see agentspec.runtime.episode.context) ---------------

    def conversation_start(
        self, env: Any, messages: Sequence[Mapping[str, Any]]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
        """The first messages and the ``tools=`` the template gets: where the tools go
        to the template, the spec's own tool paragraph is cut from the system prompt."""
        tools = self.tools_for(env)
        out = [dict(m) for m in messages]
        if tools is not None:
            out = without_tool_instructions(out, env)
        return out, tools

    def encode_messages(self, view: Any, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        """Prompt ids of ``messages`` (first messages, a state summary): with the tools, if native."""
        if messages is view.initial_messages:
            start, tools = self._start(view)
        else:
            start, tools = self.conversation_start(view.env, messages)
        if _risky_contents(view.tokenizer, start):
            return self.encode_conversation(view.tokenizer, start, tools)
        text = self.render(start, tools, True)
        view.last_rendering = (start, tools, text)  # where the first observation starts
        return codec(view.tokenizer).encode_rendered(text)

    def rerenders(self, steps: Sequence[Any]) -> bool:
        """Whether the prompt after ``steps`` is rendered whole (:meth:`prompt_ids`) rather
        than assembled from ids: for a template that is not prefix-stable, and from a
        step on whose turn the template could not append (noted in its ``info``)."""
        return not self.prefix_stable or any(TURN_NOTE in step.info for step in steps)

    def prompt_ids(self, view: Any, steps: Sequence[Any]) -> list[int]:
        """The prompt after ``steps``, rendered whole (for a template that is not prefix-stable).

        Raises :class:`ChatTemplateError` where the template cannot render the
        conversation (the loop ends that episode with ``env_error``)."""
        messages = self._first_messages(view)
        for step in steps:
            message = assistant_message(_response_text(view.tokenizer, step))
            if self.keep_reasoning is False:
                message = {"role": "assistant", "content": message["content"]}
            messages.append(message)
            if step.observation is not None:
                messages.append(
                    {"role": step.info.get("observation_role", "user"), "content": step.observation}
                )
        return self.encode_conversation(view.tokenizer, messages, self.tools_for(view.env))

    def observation_ids(self, view: Any, step: Any, text: str, role: str) -> list[int]:
        """The ids that follow ``step``'s response: the rest of its turn, the observation,
        the next generation prompt (see the module docstring).

        Where the template rewrites an earlier turn here, or cannot render this one,
        the step's ``info[TURN_NOTE]`` says so and later prompts are rendered whole
        (:meth:`rerenders`): never an exception out of the episode's loop.
        """
        if role != "user":
            step.info["observation_role"] = role
        try:
            return self._turn_ids(view, step, text, role)
        except ChatTemplateError as exc:
            step.info[TURN_NOTE] = str(exc)
            return []

    def _turn_ids(self, view: Any, step: Any, text: str, role: str) -> list[int]:
        start, tools = self._start(view)
        history = list(start)
        for i, past in enumerate(view.steps):
            history.append({"role": "assistant", "content": _HOLE.format(i)})
            if past.observation is not None:
                history.append(
                    {"role": past.info.get("observation_role", "user"), "content": past.observation}
                )
        hole = _HOLE.format(len(view.steps))
        # Observation text holding special-token text is spliced in as text (no forged turns).
        risky = special_pattern(view.tokenizer).search(text) is not None
        shown = _HOLE.format("OBS") if risky else text
        current = self._render_again(view, history, tools)
        extended = [
            *history,
            {"role": "assistant", "content": hole},
            {"role": role, "content": shown},
        ]
        full = self.render(extended, tools, True)
        view.last_rendering = (extended, tools, full)
        at = full.find(hole, len(current))
        if not full.startswith(current) or at < 0:
            step.info[TURN_NOTE] = "the template rewrote an earlier turn at this step"
            at = max(full.find(hole), 0)
        tail = full[at + len(hole) :]
        ended = _ended_with(view.tokenizer, step.response_ids, tail)
        if ended:
            tail = tail[len(ended) :]
        if risky:
            return _splice(view.tokenizer, tail, [shown], [text])
        return codec(view.tokenizer).encode_rendered(tail)

    def _render_again(
        self, view: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> str:
        """``render(messages, tools)``, taken from the episode's last rendering when that
        was of the same conversation (the step before extended it to exactly this)."""
        last = view.last_rendering
        if last is not None and last[0] == messages and last[1] == tools:
            return last[2]
        return self.render(messages, tools, True)

    # --- Tools -----------------------------------------------------------------------

    def tools_for(self, env: Any) -> list[dict[str, Any]] | None:
        """The tool schemas to pass as ``tools=``: only where the template writes a call
        the way the environment's tool format parses it (else the spec's own tool
        instructions stay in the system prompt)."""
        tools = list(getattr(env, "tools", {}).values())
        fmt = getattr(env, "format", None)
        if not tools or fmt is None or not self.takes_tools:
            return None
        name = str(getattr(fmt, "name", type(fmt).__name__))
        if name not in self._native:
            self._native[name] = writes_calls_in(self, fmt)
        return [t.schema() for t in tools] if self._native[name] else None

    # --- Encoding --------------------------------------------------------------------

    def _first_messages(self, view: Any) -> list[dict[str, Any]]:
        return list(self._start(view)[0])

    def _start(self, view: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
        """:meth:`conversation_start` of the episode's first messages, worked out once
        per episode (its environment's tools and first messages stay; the list is the
        caller's to copy, not to change)."""
        kept = view.template_start
        if kept is None or kept[0] != view.initial_messages:
            first = [dict(m) for m in view.initial_messages]
            kept = view.template_start = (first, *self.conversation_start(view.env, first))
        return kept[1], kept[2]

    def encode_conversation(
        self,
        tokenizer: Tokenizer,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        add_generation_prompt: bool = True,
    ) -> list[int]:
        """The rendering's ids; contents holding special-token text are encoded as text."""
        risky = _risky_contents(tokenizer, messages)
        if not risky:
            text = self.render(messages, tools, add_generation_prompt)
            return codec(tokenizer).encode_rendered(text)
        # Render with placeholders for the risky contents, then encode them as text.
        marked = [
            {**m, "content": _HOLE.format(f"C{i}")} if i in risky else m
            for i, m in enumerate(messages)
        ]
        text = self.render(marked, tools, add_generation_prompt)
        contents = [str(messages[i]["content"]) for i in risky]
        holes = [_HOLE.format(f"C{i}") for i in risky]
        return _splice(tokenizer, text, holes, contents)


def _risky_contents(tokenizer: Tokenizer, messages: Sequence[Mapping[str, Any]]) -> list[int]:
    """Indexes of the messages whose content holds special-token text."""
    pattern = special_pattern(tokenizer)
    return [i for i, m in enumerate(messages) if pattern.search(str(m.get("content") or ""))]


def _splice(
    tokenizer: Tokenizer, text: str, holes: Sequence[str], contents: Sequence[str]
) -> list[int]:
    """``text`` encoded with each hole replaced by its content encoded as text."""
    ids: list[int] = []
    pos = 0
    for hole, content in zip(holes, contents, strict=True):
        at = text.find(hole, pos)
        if at < 0:  # the template dropped this content
            continue
        if at > pos:
            ids.extend(tokenizer.encode(text[pos:at], add_special_tokens=False))
        ids.extend(encode_text(tokenizer, content))
        pos = at + len(hole)
    if pos < len(text):
        ids.extend(tokenizer.encode(text[pos:], add_special_tokens=False))
    return ids


def _ended_with(tokenizer: Tokenizer, response_ids: Sequence[int], tail: str) -> str:
    """The text of the response's last token if it is a special token that starts ``tail``."""
    if not response_ids:
        return ""
    last = codec(tokenizer).special_text(response_ids[-1])
    if last and tail.startswith(last):
        return last
    return ""


def _response_text(tokenizer: Tokenizer, step: Any) -> str:
    """A response as text with its special tokens, without the end-of-turn token it stopped on."""
    ids = list(step.response_ids)
    if ids and ids[-1] == tokenizer.eos_token_id:
        ids = ids[:-1]
    return str(tokenizer.decode(ids, skip_special_tokens=False))


def _system_into_first_user(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A leading system message moved into the first user message (``system\n\nuser``)."""
    out = [dict(m) for m in messages]
    if len(out) >= 2 and out[0].get("role") == "system" and out[1].get("role") == "user":
        system = out.pop(0)
        out[0]["content"] = f"{system.get('content') or ''}\n\n{out[0].get('content') or ''}"
    elif out and out[0].get("role") == "system":
        out[0]["role"] = "user"
    return out


# --- Choosing the framing -------------------------------------------------------------

_CACHE: dict[tuple[int, str, bool | None], tuple[Any, ModelTemplate]] = {}


def chat_for(
    tokenizer: Any, source: str | None = None, keep_reasoning: bool | None = None
) -> ChatTemplate | ModelTemplate:
    """The framing of ``tokenizer``'s model: its chat template (or ``source``), else
    agentspec's ChatML (a tokenizer without a template, or the built-in tiny model's).

    ``keep_reasoning`` is the spec's ``episode.reasoning.keep_in_history``; with
    ``False`` even agentspec's ChatML re-renders each prompt without past reasoning.
    """
    if source is None:
        source = getattr(tokenizer, "chat_template", None)
    builtin = not isinstance(source, str) or not source.strip() or source == _builtin_jinja()
    if builtin and keep_reasoning is not False:
        return ChatTemplate()
    if not isinstance(source, str) or builtin:
        source = _builtin_jinja()
    key = (id(tokenizer), source, keep_reasoning)
    cached = _CACHE.get(key)
    if cached is not None and cached[0] is tokenizer:
        return cached[1]
    template = ModelTemplate(
        source,
        bos_token=str(getattr(tokenizer, "bos_token", None) or ""),
        eos_token=str(getattr(tokenizer, "eos_token", None) or ""),
        tokenizer=tokenizer,
        name=f"the chat template of {getattr(tokenizer, 'name_or_path', '') or 'the tokenizer'}",
        keep_reasoning=keep_reasoning,
    )
    _CACHE[key] = (tokenizer, template)
    return template


@cache
def _builtin_jinja() -> str:
    """agentspec's ChatML as a Jinja chat template (asked each time a flow is made)."""
    return ChatTemplate().jinja()


def chat_for_spec(module: Any, tokenizer: Any) -> ChatTemplate | ModelTemplate:
    """The framing a generated spec module's flow uses with ``tokenizer`` (its
    ``episode.reasoning`` setting applied): what the row layout must be decided on."""
    return chat_for(tokenizer, keep_reasoning=getattr(module.ENV_CLASS, "keep_reasoning", None))


def without_tool_instructions(messages: Sequence[Mapping[str, str]], env: Any) -> list[dict]:
    """The first messages with the format's tool paragraph cut from the system prompt."""
    out = [dict(m) for m in messages]
    tools = list(getattr(env, "tools", {}).values())
    fmt = getattr(env, "format", None)
    if not tools or fmt is None or not out or out[0]["role"] != "system":
        return out
    # An environment that keeps its format's paragraph (a spec's, built once per class)
    # gives it; the same text as `fmt.instructions(tools)`.
    kept = getattr(env, "tool_instructions", None)
    paragraph = kept() if callable(kept) else fmt.instructions(tools)
    system = out[0]["content"]
    if system == paragraph:
        return out[1:]
    if system.endswith("\n\n" + paragraph):
        out[0]["content"] = system[: -len(paragraph) - 2]
    return out
