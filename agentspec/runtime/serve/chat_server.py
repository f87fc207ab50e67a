"""A small OpenAI-compatible chat-completions server with tool calling, for a local checkpoint.

``python -m agentspec.runtime.serve.chat_server DIR --port 8001`` serves the
model in ``DIR`` at ``http://127.0.0.1:8001/v1``: ``GET /v1/models`` and ``POST
/v1/chat/completions`` (``messages``, ``tools``, ``max_tokens``, ``temperature``,
``top_p``, ``stop``, ``seed``). It does what vLLM does with a chat template and a
tool-call parser, for a model trained on agentspec's own framing:

- the conversation is rendered with :class:`~agentspec.runtime.text.tokenizer.ChatTemplate`
  (ChatML); ``tools`` are described at the end of the system message in the tool
  format's words (the paragraph agentspec's environments write), an assistant
  turn's ``tool_calls`` are written back in that format, and consecutive ``tool``
  messages become one user turn of rendered results;
- the model's output is parsed with the tool format (default ``hermes``): when it
  holds well-formed calls they come back as ``tool_calls`` (``finish_reason``
  ``tool_calls``) and the text around them as ``content``; otherwise the whole
  output is the ``content``, as vLLM's parsers do.

So a model served here sees exactly the prompt the local loop would render for
it. Requests are served one at a time; meant for evaluation and tests.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from agentspec.formats import get_format
from agentspec.runtime.episode.conversation import ChatCall, render_calls
from agentspec.runtime.episode.policy import SamplingParams
from agentspec.runtime.episode.tools import ToolResult
from agentspec.runtime.serve.local_api import (
    LocalAPIServer,
    request_seed,
    serve_until_interrupted,
    server_arguments,
)
from agentspec.runtime.text.tokenizer import ChatTemplate

__all__ = ["ChatCompletionServer", "main"]


class _SchemaTool:
    """A function schema from a request, shaped like a tool for the format's paragraph."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        function = schema.get("function") if isinstance(schema, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise ValueError("each tool must be {'type': 'function', 'function': {'name': ...}}")
        self._schema = {"type": "function", "function": dict(function)}
        self.name = function["name"]
        self.parameters = function.get("parameters") or {"type": "object", "properties": {}}

    def schema(self) -> dict[str, Any]:
        return self._schema

    @property
    def parameter_names(self) -> list[str]:
        return list(self.parameters.get("properties", {}))


class ChatCompletionServer(LocalAPIServer):
    """Serve ``policy`` (an ``HFPolicy``) as a chat-completions API (see :class:`LocalAPIServer`)."""

    route = "/v1/chat/completions"

    def __init__(
        self,
        policy: Any,
        model_name: str = "local",
        tool_format: str = "hermes",
        chat: ChatTemplate | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.format = get_format(tool_format)
        self.chat = chat or ChatTemplate()
        super().__init__(policy, model_name, host, port)

    def render(self, messages: Sequence[Any], tools: Sequence[_SchemaTool]) -> str:
        """The prompt text of a request: ChatML with tools and calls in the tool format."""
        rendered: list[dict[str, str]] = []
        pending: list[ToolResult] = []
        for m in messages:
            if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
                raise ValueError("each message needs a 'role'")
            content = m.get("content") or ""
            if not isinstance(content, str):
                raise ValueError("message content must be text")
            if m["role"] == "tool":
                pending.append(ToolResult(str(m.get("name", "")), content, ok=True))
                continue
            if pending:
                rendered.append({"role": "user", "content": self.format.render_results(pending)})
                pending = []
            if m["role"] == "assistant" and m.get("tool_calls"):
                calls = [_request_call(c) for c in m["tool_calls"]]
                content = render_calls(self.format.name, content, calls)
            rendered.append({"role": m["role"], "content": content})
        if pending:
            rendered.append({"role": "user", "content": self.format.render_results(pending)})
        if tools:
            paragraph = self.format.instructions(list(tools))  # type: ignore[arg-type]
            if rendered and rendered[0]["role"] == "system":
                rendered[0]["content"] = f"{rendered[0]['content']}\n\n{paragraph}"
            else:
                rendered.insert(0, {"role": "system", "content": paragraph})
        return self.chat.render(rendered)

    def complete(self, body: Mapping[str, Any]) -> dict[str, Any]:
        if body.get("n", 1) != 1:
            raise ValueError("only n=1 is supported")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ValueError("'messages' must be a non-empty list")
        tools = [_SchemaTool(t) for t in body.get("tools") or []]
        tok = self.policy.tokenizer
        prompt = tok.encode(self.render(messages, tools), add_special_tokens=False)
        stop = body.get("stop") or ()
        params = SamplingParams(
            max_new_tokens=int(body.get("max_completion_tokens", body.get("max_tokens", 256))),
            temperature=float(body.get("temperature", 1.0)),
            top_p=float(body.get("top_p", 1.0)),
            stop=(stop,) if isinstance(stop, str) else tuple(stop),
            seed=request_seed(body),
        )
        with self._lock:
            (out,) = self.policy.generate_batch([prompt], params)
        text = tok.decode(out.token_ids, skip_special_tokens=True)
        message, finish = self._message(text, tools, out.finish_reason)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model_name,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": len(prompt),
                "completion_tokens": len(out.token_ids),
                "total_tokens": len(prompt) + len(out.token_ids),
            },
        }

    def _message(
        self, text: str, tools: Sequence[_SchemaTool], finish: str
    ) -> tuple[dict[str, Any], str]:
        """The assistant message: parsed calls as ``tool_calls``, else the text as content."""
        parsed = self.format.parse(text, {t.name: t for t in tools})  # type: ignore[misc]
        if not tools or not parsed.ok or not parsed.calls:
            return {"role": "assistant", "content": text}, finish
        calls = [
            {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": json.dumps(call.arguments, ensure_ascii=False),
                },
            }
            for call in parsed.calls
        ]
        message = {"role": "assistant", "content": parsed.content or None, "tool_calls": calls}
        return message, "length" if finish == "length" else "tool_calls"


def _request_call(raw: Any) -> ChatCall:
    function = raw.get("function") if isinstance(raw, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise ValueError("each tool call needs function.name")
    arguments = function.get("arguments", "{}")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return ChatCall(function["name"], arguments, str(raw.get("id", "")))


def main(argv: list[str] | None = None) -> None:
    parser = server_arguments(
        "Serve a local causal LM as an OpenAI-compatible chat-completions API.", port=8001
    )
    parser.add_argument("--tool-format", default="hermes", help="how the model writes calls")
    args = parser.parse_args(argv)
    from agentspec.runtime.policies.hf import HFPolicy
    from agentspec.runtime.text.tiny_model import load_tiny

    model, tokenizer = load_tiny(args.model_dir)
    server = ChatCompletionServer(
        HFPolicy(model, tokenizer),
        args.name or args.model_dir,
        args.tool_format,
        host=args.host,
        port=args.port,
    )
    serve_until_interrupted(server, args.model_dir)


if __name__ == "__main__":
    main()
