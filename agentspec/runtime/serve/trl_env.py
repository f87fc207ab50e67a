"""A spec as TRL's `environment_factory` (`agentspec compile SPEC --target trl`).

TRL's `GRPOTrainer(environment_factory=Cls)` makes instances with no arguments,
reads every public method but `reset` as a tool (its JSON schema through
`transformers.utils.get_json_schema`: type hints and a Google-style docstring),
calls `reset(**row)` per rollout and a tool method per tool call; a turn without
tool calls ends the rollout, so the final answer never reaches the environment.
The generated class therefore:

- has one typed method per spec tool, which plays that call as a step of the
  episode (a failed call raises, which TRL shows the model as `{"error": ...}`);
- starts the episode in `reset` on the row's sample (the spec's own, by the row's
  `split` and `index`: Arrow rewrites dict fields, so rows never carry the sample whole);
- hands the final answer over when the generated reward functions score the
  rollout (one per declared component, each the episode's total of it): they
  play the completion's last assistant text as the episode's last step.

Its own helpers are private (``_call_tool``, ``_finish``): TRL takes every public
method for a tool.

Nothing here imports TRL: the generated module is plain Python that TRL loads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from agentspec.core.json_value import json_value
from agentspec.formats import get_format
from agentspec.runtime.policies.scripted import encode_head
from agentspec.runtime.serve.session import (
    SERVED_MAX_RESPONSE_TOKENS,
    End,
    SessionError,
    SyncEpisodeSession,
    Turn,
    first_turn,
)
from agentspec.runtime.serve.spec import ServedSpec

__all__ = ["AgentspecTRLEnv", "component_reward", "dataset_rows", "final_text"]

_SPECS: dict[str, ServedSpec] = {}
_NO_PROMPT_LIMIT = 1 << 40


def served(spec_path: str | Path) -> ServedSpec:
    """The spec at ``spec_path``, loaded once per process."""
    key = str(Path(spec_path).resolve())
    if key not in _SPECS:
        _SPECS[key] = ServedSpec.load(key)
    return _SPECS[key]


class AgentspecTRLEnv:
    """One TRL rollout of a spec's episode; generated subclasses add the tool methods."""

    spec_path: ClassVar[str | Path]

    def __init__(self) -> None:
        self.spec = served(self.spec_path)
        self.session = SyncEpisodeSession(self.spec)
        self.end: End | None = None
        # The calls this class writes are its own text, not the model's response: the
        # spec's stop strings must not cut them (no session cuts at the spec's
        # `max_response_tokens`: TRL sampled under its own limits). The final answer
        # keeps the spec's stop strings, as a model's would.
        flow = self.session.session.flow
        # TRL builds and keeps the whole conversation: the spec's prompt budget, counted
        # on prompts nobody here sends, must not end its episodes (`context_overflow`).
        # A budget no prompt reaches, not None: `token_budget` keeps what fits it.
        flow.context.max_prompt_tokens = _NO_PROMPT_LIMIT
        self._answer_config = flow.config
        self._call_config = dataclasses.replace(
            flow.config, sampling=dataclasses.replace(flow.config.sampling, stop=())
        )

    def reset(self, **row: Any) -> str | None:
        """Start the episode on the row's sample: the spec's own sample at the row's
        `split` and `index` (a `dataset()` row), else the row's fields as the sample."""
        self.end = None
        if isinstance(row.get("index"), int) and isinstance(row.get("split"), str):
            turn = self.session.start(split=row["split"], index=row["index"])
        else:
            turn = self.session.start(sample={k: v for k, v in row.items() if k != "prompt"})
        if turn.done:
            self.end = turn  # type: ignore[assignment]
        return None

    def _call_tool(self, name: str, arguments: Mapping[str, Any]) -> str:
        """One tool call as one step; its result text, or an error TRL shows the model."""
        if self.end is not None:
            raise ValueError(f"the episode is over ({self.end.termination}): answer now")
        call = {"name": name, "arguments": dict(arguments)}
        unwritable = self._unwritable(call)
        if unwritable is not None:  # refused before a step: TRL's call is no parse error
            raise ValueError(unwritable)
        flow = self.session.session.flow
        flow.config = self._call_config
        try:
            turn = self.session.act("", [call])
        finally:
            flow.config = self._answer_config
        if turn.done:
            self.end = turn  # type: ignore[assignment]
        results = turn.tool_results
        if not results:  # not run: the call did not parse (the spec's parse error)
            raise ValueError(turn.observation or f"the call of {name} could not be read")
        if len(results) != 1 or results[0].get("name") != name:
            # The written call read back as other calls: never report theirs as this one's.
            ran = ", ".join(str(r.get("name")) for r in results)
            raise ValueError(f"the call of {name} was not run as written (ran: {ran})")
        result = results[0]
        if not result["ok"]:
            raise ValueError(result["text"])
        return str(result["text"])

    def _unwritable(self, call: Mapping[str, Any]) -> str | None:
        """Why `call` cannot be carried by the spec's tool format (it would not read back
        as itself), else None."""
        text = self.session.session.response_text("", [call])
        limit = SERVED_MAX_RESPONSE_TOKENS  # a step's response is cut there (EOS included)
        if len(encode_head(self.session.session.flow.tokenizer, text, limit)) >= limit:
            return (
                f"the call of {call['name']} is too long for one step (more than {limit:,}"
                " tokens as the spec's tool format writes it): shorten its arguments"
            )
        parsed = get_format(self.spec.tool_format).parse(text, None)
        if parsed.errors:
            return f"the call of {call['name']} cannot be written: {parsed.errors[0].message}"
        if [c.name for c in parsed.calls] != [call["name"]]:
            ran = ", ".join(c.name for c in parsed.calls) or "nothing"
            return f"the call of {call['name']} would not be read as written (it reads as: {ran})"
        return None

    def _finish(self, answer: str) -> End:
        """The episode's end: the final answer played as the last step (once). Where the
        answer does not end the episode (`final_answer: continue`), TRL's rollout is over
        all the same: the episode ends there as `agent_stopped`, as verifiers ends it,
        never padded with empty turns that would earn `on: step` rewards."""
        if self.end is None:
            turn = self.session.act(answer)  # a SessionError: the row had no sample
            if not turn.done:
                trajectory = self.session.trajectory
                assert trajectory is not None
                fields = {f.name: getattr(turn, f.name) for f in dataclasses.fields(Turn)}
                turn = End(**fields, termination="agent_stopped", trajectory=trajectory)
                self.session.close()
            self.end = turn  # type: ignore[assignment]
        assert self.end is not None
        return self.end


def final_text(completion: Any) -> str:
    """The last assistant text of a TRL completion (messages, or plain text)."""
    if isinstance(completion, str):
        return completion
    for message in reversed(list(completion or [])):
        if isinstance(message, Mapping) and message.get("role") == "assistant":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):  # content parts
                return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def component_reward(name: str) -> Any:
    """A TRL reward function: the episode's total of reward component ``name``."""

    def reward(
        completions: Sequence[Any], environments: Sequence[AgentspecTRLEnv], **_: Any
    ) -> list[float]:
        return [
            env._finish(final_text(completion)).reward_totals.get(name, 0.0)
            for completion, env in zip(completions, environments, strict=True)
        ]

    reward.__name__ = f"reward_{name}"
    return reward


def dataset_rows(
    spec_path: str | Path, split: str | None = None, limit: int | None = None
) -> list[dict[str, Any]]:
    """TRL dataset rows of a spec: `prompt` (the first messages, tools passed apart by TRL),
    the sample's place (`split`, `index`), by which `reset` starts that very sample, and
    its text, number and boolean fields. Rows survive `Dataset.from_list`: Arrow merges
    the keys of dict fields across rows and fills the missing ones with None (a corrupted
    sample), so dict and list fields are never columns."""
    if limit is not None and limit < 1:  # `[:-1]` would drop the last row instead
        raise SessionError(f"limit must be at least 1, not {limit}")
    spec = served(spec_path)
    split = split or spec.default_split
    return [
        {
            "prompt": first_turn(spec, sample).messages,
            **{k: v for k, v in json_value(sample).items() if _scalar(v) and k not in ROW_KEYS},
            "split": split,
            "index": index,
        }
        for index, sample in enumerate(spec.samples(split)[:limit])
    ]


ROW_KEYS = ("prompt", "split", "index")
"""The columns of a row that are not sample fields."""


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)
