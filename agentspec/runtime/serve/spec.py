"""A compiled spec ready to be driven from outside: its module, task tokenizer and data.

:class:`ServedSpec` is what every way of serving a spec stands on (the Python
session, the OpenEnv server, the generated TRL and verifiers packages): it
knows the spec's tools, tool format, reward names and splits, picks the sample
an episode plays (by split and index, sample id, seed, or an explicit sample),
and makes sessions. Responses written as text are encoded with the tokenizer
`agentspec run` and `agentspec test` use for policies without a model of their
own, so the spec's token limits apply exactly as in those commands.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from agentspec.formats import get_format
from agentspec.formats.caps import cap_error
from agentspec.runtime.episode.policy import Generation, SamplingParams
from agentspec.stdlib.data import DataError

__all__ = ["ServedSpec", "SessionError"]

HELD_OUT = "test"
"""The held-out split's name for data without an eval split of its own (its last
`training.eval_samples` samples)."""


class SessionError(ValueError):
    """A request a session cannot take: no such sample, an action before the start or
    after the end, a malformed action. The message says what to send instead."""


class _CallerIsThePolicy:
    """The policy of a served flow: the session's caller answers every turn, so
    nothing may ask this object for a generation."""

    async def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[Generation]:
        raise RuntimeError("a served episode's policy is its caller: answer with act()")


class ServedSpec:
    """A compiled spec (its generated module) and the tokenizer its text is encoded with.

    Args:
        module: the generated module (``import_spec(path)``).
        tokenizer: the task tokenizer (:meth:`load` builds the one `run` uses).
    """

    def __init__(self, module: ModuleType, tokenizer: Any) -> None:
        self.module = module
        self.tokenizer = tokenizer
        self._samples: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._tools: tuple[list[dict[str, Any]], str] | None = None

    @classmethod
    def load(cls, path: str | Path) -> ServedSpec:
        """Compile (cached) and import the spec at ``path``; its task tokenizer is
        built from its data once and kept in the compile cache (as `run` does). A
        spec with errors raises :class:`~agentspec.core.diagnostics.SpecError`."""
        served = cls.unplayed(path)
        served.tokenizer = served.task_tokenizer(path)
        return served

    @classmethod
    def unplayed(cls, path: str | Path) -> ServedSpec:
        """The compiled spec without its tokenizer: what writing a package of it needs.
        Nothing of the spec's own code runs (its hooks load at their first use)."""
        from agentspec.compiler.build import import_spec

        return cls(import_spec(path), None)

    def task_tokenizer(self, path: str | Path) -> Any:
        """The task tokenizer `run` builds from the spec's data (cached)."""
        from agentspec.runtime.compiled.task_text import cached_task_tokenizer

        samples = self.samples() if self.module.DATA_SOURCE else []
        tokenizer, _ = cached_task_tokenizer(path, self.module, samples)
        return tokenizer

    # ------------------------------------------------------------ the spec

    @property
    def name(self) -> str:
        return str(self.module.SPEC_NAME)

    @property
    def description(self) -> str:
        return (self.module.__doc__ or "").partition(": ")[2].strip() or self.name

    @property
    def reward_names(self) -> list[str]:
        """Every declared reward component, in the spec's order."""
        return [c.name for c in self.module.ENV_CLASS.reward_components]

    @property
    def reward_weights(self) -> dict[str, float]:
        """Every declared reward component's weight, in the spec's order."""
        return {c.name: c.weight for c in self.module.ENV_CLASS.reward_components}

    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        """The spec's tools as chat-completions function schemas ([] for an adapter spec)."""
        return self._tool_prompt()[0]

    @property
    def tool_instructions(self) -> str:
        """The tool format's paragraph for clients that write calls as text."""
        return self._tool_prompt()[1]

    @property
    def tool_format(self) -> str:
        return str(getattr(self.module.ENV_CLASS, "tool_format", "text"))

    def _tool_prompt(self) -> tuple[list[dict[str, Any]], str]:
        if self._tools is None:
            classes = getattr(self.module.ENV_CLASS, "tool_classes", ())
            tools = [tool_class() for tool_class in classes]
            fmt = get_format(self.tool_format) if tools else None
            instructions = fmt.instructions(tools) if fmt is not None else ""
            self._tools = ([tool.schema() for tool in tools], instructions)
        return self._tools

    # ------------------------------------------------------------ the data

    @property
    def default_split(self) -> str:
        return "train"

    def splits(self) -> list[str]:
        """The splits an episode can be drawn from: `train`, what `agentspec train` trains
        on, and the held-out split, what `agentspec eval` reports on (the spec's
        `eval_split`, a generator's `test`, else `test`: the data's last
        `training.eval_samples` samples, which `train` leaves out)."""
        if not self.module.DATA_SOURCE:
            return []
        held_out = self.held_out_split
        return ["train"] + ([held_out] if held_out != "train" else [])

    @property
    def held_out_split(self) -> str:
        """The name of the split held out for evaluation."""
        from agentspec.runtime.compiled.samples import eval_split_name

        return eval_split_name(self.module) or HELD_OUT

    def samples(self, split: str | None = None) -> list[dict[str, Any]]:
        """Every sample of ``split`` (default train), loaded once."""
        split = split or self.default_split
        if split not in self.splits():
            known = ", ".join(self.splits()) or "none: the spec declares no data"
            raise SessionError(f"unknown split {split!r}; splits: {known}")
        with self._lock:
            if split not in self._samples:
                self._samples.update(self._load(split))
            return self._samples[split]

    def _load(self, split: str) -> dict[str, list[dict[str, Any]]]:
        """`split`'s samples (and any other split read with them), carved as `agentspec
        train` and `agentspec eval` carve them, so that an outside trainer never trains
        on what `eval` reports on."""
        from agentspec.runtime.compiled.samples import eval_split_name, hold_out_last
        from agentspec.spec.training import TrainingSpec

        if eval_split_name(self.module) is not None:  # a split of its own, never trained on
            return {split: self.module.load_samples(split=None if split == "train" else split)}
        eval_samples = TrainingSpec.model_validate(self.module.TRAINING).eval_samples
        train, held_out = hold_out_last(self.module.load_samples(), eval_samples)
        return {"train": train, HELD_OUT: held_out}

    def task(self, split: str, index: int) -> dict[str, Any]:
        """One sample as a client may see it (the Task API's record): the fields the
        agent sees (:meth:`public_fields`), its id and index."""
        pool = self.samples(split)
        if not 0 <= index < len(pool):
            raise IndexError(f"index {index} is outside split {split!r} (0..{len(pool) - 1})")
        return {**self.public_fields(pool[index]), "id": id_of(pool[index], index), "index": index}

    def public_fields(self, sample: Mapping[str, Any]) -> dict[str, Any]:
        """The fields of ``sample`` the agent's templates read (the prompt, `observe`, guard
        messages, the state summary) and those `data.public` names; never one only the
        grader reads (an answer, an expected database): the compiler lists them
        (`compiler/visibility.py`)."""
        public = self.module.PUBLIC_FIELDS
        if public is None:  # a template the agent sees shows the whole sample
            return dict(sample)
        return {name: sample[name] for name in public if name in sample}

    def public_state(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """The variables of an episode's state (as JSON) the agent's templates read, and
        those declared `public: true`; the grader's are left out."""
        public = self.module.PUBLIC_STATE
        if public is None:  # a template the agent sees shows the whole state
            return dict(state)
        return {name: value for name, value in state.items() if name in public}

    def choose(
        self,
        *,
        split: str | None = None,
        index: int | None = None,
        sample_id: str | None = None,
        sample: Mapping[str, Any] | None = None,
        seed: int | None = None,
    ) -> tuple[str, dict[str, Any]]:
        """The sample an episode plays and its id: an explicit ``sample``, else
        ``sample_id``, else ``split`` + ``index``, else one drawn with ``seed``
        (default: index 0 of the split)."""
        if sample is not None:
            if not isinstance(sample, Mapping):
                raise SessionError("sample must be a JSON object of the spec's fields")
            try:  # as a loaded one: the declared fields checked, the derived ones added
                prepared = self.module.prepare_sample(sample)
            except DataError as exc:
                raise SessionError(str(exc)) from None
            except Exception as exc:  # a derived field's expression failing on this sample
                raise SessionError(
                    f"the sample: {cap_error(f'{type(exc).__name__}: {exc}')}"
                ) from None
            return str(sample.get("id", "sample")), prepared
        if sample_id is not None:
            return self._by_id(str(sample_id), split)
        pool = self.samples(split)
        if not pool:
            raise SessionError(f"split {split or self.default_split!r} has no samples")
        if index is None:
            index = random.Random(seed).randrange(len(pool)) if seed is not None else 0
        if isinstance(index, bool) or not isinstance(index, int):
            raise SessionError(f"index must be an integer, not {index!r}")
        if not 0 <= index < len(pool):
            raise SessionError(
                f"index {index} is outside split {split or self.default_split!r} "
                f"(0..{len(pool) - 1})"
            )
        return id_of(pool[index], index), dict(pool[index])

    def _by_id(self, wanted: str, split: str | None) -> tuple[str, dict[str, Any]]:
        splits = [split] if split else self.splits()
        for name in splits:
            for i, candidate in enumerate(self.samples(name)):
                if id_of(candidate, i) == wanted:
                    return wanted, dict(candidate)
        raise SessionError(f"no sample has id {wanted!r} (looked in {', '.join(splits)})")

    # ------------------------------------------------------------ sessions

    def flow(self) -> Any:
        """The spec's generated flow, with the session's caller as its policy."""
        return self.module.FLOW_CLASS(_CallerIsThePolicy(), self.tokenizer)


def id_of(sample: Mapping[str, Any], index: int) -> str:
    """A sample's id as `agentspec run` names it: its `id` field, else its index."""
    return str(sample.get("id", index))
