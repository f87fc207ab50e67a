"""The generated flow inside verl's agent loop.

:class:`SpecAgentLoop` is a verl ``AgentLoopBase``: for one dataset row it plays
one episode of the generated flow (``FLOW_CLASS``) with verl's rollout servers as
the policy (:class:`ServerPolicy`, token in, token out) and returns one
``AgentLoopOutput`` per training row of the trajectory: one per step
(``per_step``), or one per chain of steps whose prompts extend each other
(``packed``, observation tokens masked).

What verl 0.9.1 does to a multi-output loop, and how each is handled here:

- **reward overwrite**: once the last output has a ``reward_score``, verl copies
  it onto every earlier output. Every output carries the episode's total reward
  (so the copy changes nothing), and each step's own reward travels in
  ``extra_fields["agentspec"]`` (:class:`~.layout.RowSteps`), which the
  ``agentspec`` trainer reads.
- **reward_extra_info**: verl reads ``extra_fields["reward_extra_info"]`` of the
  last output and copies it to all; every output gets the same keys (each
  declared reward component summed over the episode, and ``success``).
- **teacher log-probs** (on-policy distillation) are computed for the last output
  only: with distillation enabled, an episode must be one row (``packed`` with an
  append-only context), else :func:`check_distillation` fails the rollout loudly.

A compiled verl target subclasses :class:`SpecAgentLoop` and sets ``spec`` (the
generated module) and ``layout``.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
)

from agentspec.core.row_layout import layout_for_template
from agentspec.runtime.backends.verl.layout import EXTRA_KEY, row_steps
from agentspec.runtime.episode.policy import Generation, SamplingParams
from agentspec.runtime.episode.rows import training_rows
from agentspec.runtime.episode.trajectory import Trajectory

__all__ = [
    "ServerPolicy",
    "SpecAgentLoop",
    "check_distillation",
    "episode_outputs",
    "record_error",
]


class ServerPolicy:
    """agentspec's :class:`~agentspec.runtime.Policy` on verl's server manager.

    Each prompt goes to ``server_manager.generate`` (token ids in, token ids and
    log-probs out); one request id per episode keeps its turns on one server.
    ``defaults`` are verl's rollout sampling settings (temperature, top-p, top-k);
    the flow's own ``max_new_tokens`` bounds each response.
    """

    def __init__(
        self, server_manager: Any, defaults: Mapping[str, Any], eos_token_id: int | None
    ) -> None:
        self.server_manager = server_manager
        self.defaults = dict(defaults)
        self.eos_token_id = eos_token_id
        self.request_id = uuid.uuid4().hex
        self.generate_seconds = 0.0
        self.weight_versions: list[int] = []
        """verl's ``global_steps`` of the weights that produced each response."""
        self.routed_experts: dict[tuple[int, ...], Any] = {}
        """vLLM's routed experts of each generation (MoE models with router replay on), by
        prompt: ``(prompt + response tokens, layers, top-k)``."""

    async def generate(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[Generation]:
        out = []
        for prompt in prompts:
            sampling = {
                **self.defaults,
                "max_tokens": params.max_new_tokens,
                "logprobs": True,
            }
            start = time.perf_counter()
            result = await self.server_manager.generate(
                self.request_id, prompt_ids=list(prompt), sampling_params=sampling
            )
            self.generate_seconds += time.perf_counter() - start
            version = (result.extra_fields or {}).get("global_steps")
            if version is not None:
                self.weight_versions.append(int(version))
            ids = list(result.token_ids)[: params.max_new_tokens]
            _check_output(result)
            if result.routed_experts is not None:  # MoE router replay: the experts per token
                self.routed_experts[tuple(prompt)] = result.routed_experts
            logprobs = [float(x) for x in result.log_probs][: len(ids)]
            ended = bool(ids) and ids[-1] == self.eos_token_id
            finish = "length" if len(ids) >= params.max_new_tokens and not ended else "stop"
            out.append(Generation(ids, logprobs, finish))
        return out


def _check_output(result: Any) -> None:
    """A rollout server's answer is usable: not aborted, with the sampler's log-probs."""
    if result.stop_reason == "aborted":
        raise RuntimeError(
            "verl's rollout server aborted the request (stop_reason 'aborted', "
            f"{len(result.token_ids)} tokens): the server was paused or its weights updated while "
            "the episode ran; the episode fails and verl retries its prompt group"
        )
    if result.log_probs is None:
        raise RuntimeError(
            "verl's rollout server returned no log-probs; agentspec needs the sampler's "
            "log-prob of every generated token (actor_rollout_ref.rollout.calculate_log_probs)"
        )


def check_distillation(config: Any, num_outputs: int) -> None:
    """Fail if on-policy distillation is on and an episode spans more than one verl row.

    verl 0.9.1 computes teacher log-probs for the last output of an agent loop only,
    so every earlier row would train without a teacher signal.
    """
    distillation = config.get("distillation") if hasattr(config, "get") else None
    enabled = bool(distillation is not None and distillation.get("enabled", False))
    if enabled and num_outputs > 1:
        raise ValueError(
            f"on-policy distillation needs one verl row per episode, but this episode has "
            f"{num_outputs}: verl 0.9.1 scores only an agent loop's last output with the "
            "teacher. Use the packed layout with an append-only context (full_history)."
        )


def episode_outputs(
    traj: Trajectory,
    *,
    pack: bool,
    components: Sequence[str] = (),
    generate_seconds: float = 0.0,
    weight_versions: Sequence[int] = (),
    routed_experts: Mapping[tuple[int, ...], Any] | None = None,
) -> list[AgentLoopOutput]:
    """verl outputs of one episode (see the module docstring for the reward fields).

    ``weight_versions``: verl's ``global_steps`` of the weights behind each response;
    their min and max go to ``extra_fields`` (verl's staleness tags read them).
    ``routed_experts``: vLLM's routed experts by prompt (:class:`ServerPolicy`); a row gets
    those of its last step's generation, whose prompt holds the row's earlier tokens.
    """
    versions = (
        {"min_global_steps": min(weight_versions), "max_global_steps": max(weight_versions)}
        if weight_versions
        else {}
    )
    totals = {name: 0.0 for name in components}
    totals.update(traj.reward_components())
    reward_extra_info: dict[str, Any] = {
        **{f"reward/{k}": float(v) for k, v in sorted(totals.items())},
        "success": float(bool(traj.success)),
        "num_steps": float(len(traj.steps)),
    }
    outputs = []
    rows = training_rows(traj, pack=pack)
    steps = {step.index: step for step in traj.steps}
    for row in rows:
        p = row.prompt_length
        experts = (routed_experts or {}).get(tuple(steps[row.step_indices[-1]].prompt_ids))
        outputs.append(
            AgentLoopOutput(
                prompt_ids=row.input_ids[:p],
                response_ids=row.input_ids[p:],
                response_mask=row.response_mask[p:],
                response_logprobs=row.logprobs[p:],
                routed_experts=None if experts is None else experts[: len(row.input_ids)],
                reward_score=traj.total_reward,
                num_turns=2 * len(row.step_indices) + 1,
                metrics=AgentLoopMetrics(generate_sequences=generate_seconds / max(len(rows), 1)),
                extra_fields={
                    EXTRA_KEY: row_steps(traj, row).to_dict(),
                    "reward_extra_info": dict(reward_extra_info),
                    "termination": traj.termination.value,
                    **versions,
                },
            )
        )
    return outputs


def record_error(config: Any, exc: BaseException) -> None:
    """Append the traceback of a failed episode to ``trainer.v1.agentspec.error_file``.

    verl only logs an agent loop's exception in the worker and retries the prompt
    group with fresh prompts; the ``agentspec`` trainer stops after too many failed
    groups and raises with this file's contents, so the error reaches the caller.
    The file is in the driver's run folder: a worker on another node, which does not
    see it, writes the traceback to its stderr instead, which Ray forwards to the
    driver's console.
    """
    path = (config.trainer.v1.get("agentspec", {}) or {}).get("error_file")
    if not path:
        return
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if not Path(str(path)).parent.is_dir():
        print(f"agentspec: a failed episode on this node:\n{text}", file=sys.stderr)
        return
    with Path(str(path)).open("a", encoding="utf-8") as f:
        f.write(text + "\n")


def _flow_tokenizer(model_path: str, fallback: Any) -> Any:
    """The task tokenizer of a ``builtin:tiny`` checkpoint, loaded as trained
    (``AutoTokenizer`` would rebuild it from the model type); else verl's tokenizer."""
    if (Path(model_path) / "agentspec_tiny.json").exists():
        from transformers import PreTrainedTokenizerFast

        return PreTrainedTokenizerFast.from_pretrained(model_path)
    return fallback


class SpecAgentLoop(AgentLoopBase):
    """Runs the generated flow of ``spec`` for each dataset row.

    A row's ``extra_info["sample"]`` is the sample as JSON (see
    :mod:`.compile_target`); ``uid`` (verl's prompt id) is the episode's group.
    """

    spec: ClassVar[ModuleType | None] = None
    layout: ClassVar[str] = "per_step"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.spec is None:
            raise TypeError(f"{type(self).__name__} sets no generated spec module (`spec`)")
        self.flow_tokenizer = _flow_tokenizer(
            str(self.config.actor_rollout_ref.model.path), self.tokenizer
        )

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> list[AgentLoopOutput]:  # type: ignore[override]
        try:
            return await self._episode(sampling_params, **kwargs)
        except Exception as exc:
            record_error(self.config, exc)
            raise

    async def _episode(
        self, sampling_params: dict[str, Any], **kwargs: Any
    ) -> list[AgentLoopOutput]:
        assert self.spec is not None
        extra = kwargs.get("extra_info") or {}
        sample = json.loads(extra["sample"]) if isinstance(extra.get("sample"), str) else extra
        defaults: dict[str, Any] = {
            k: sampling_params[k] for k in ("temperature", "top_p", "top_k") if k in sampling_params
        }
        policy = ServerPolicy(self.server_manager, defaults, self.flow_tokenizer.eos_token_id)
        flow = self.spec.FLOW_CLASS(
            policy, self.flow_tokenizer, temperature=float(defaults.get("temperature", 1.0)) or 1.0
        )
        group = str(kwargs.get("uid", ""))
        traj = await flow.run(sample, sample_id=group, group_id=group)
        components = [c.name for c in getattr(self.spec.ENV_CLASS, "reward_components", ())]
        outputs = episode_outputs(
            traj,
            pack=layout_for_template(self.layout, flow.chat) == "packed",
            components=components,
            generate_seconds=policy.generate_seconds,
            weight_versions=policy.weight_versions,
            routed_experts=policy.routed_experts,
        )
        if not outputs:
            raise RuntimeError(
                f"episode ended before its first step ({traj.termination.value}): "
                "the first prompt does not fit the context policy's limit"
            )
        check_distillation(self.config, len(outputs))
        return outputs
