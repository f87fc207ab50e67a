"""The contract between a generated module and the runtime it stands on.

A module generated from a spec (`agentspec compile`) provides what
:class:`GeneratedModule` lists; its environment class subclasses
`SpecToolEnv` or `SpecAdapterEnv` and declares its compiled expressions as
data the runtime reads — never as method names looked up by string, never as
overrides detected by comparing functions:

* `reward_components`: one :class:`RewardComponent` per spec reward, holding
  the function that computes it (and the one that guards it);
* `rules`: the :class:`EpisodeRules` (initial state, success, `done_when`,
  anchor), each `None` where the spec has none;
* each tool class's `rules`: its :class:`ToolRules` (`when`, guards with
  messages, `returns`, effects).

Every compiled expression is an :data:`Expression`: a function of one `Scope`.
`tests/codegen/test_contract.py` runs mypy over the generated module of every
shipped spec against these types, so a rename on either side fails there, not
only in the golden files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agentspec.runtime.compiled.scope import Scope

if TYPE_CHECKING:
    from agentspec.runtime.compiled.env import SpecEnvMixin
    from agentspec.runtime.episode.loop import AgentEnvLoop
    from agentspec.runtime.policies import Policy
    from agentspec.runtime.text.tokenizer import ChatTemplate, Tokenizer

__all__ = [
    "EpisodeRules",
    "Expression",
    "FlowFactory",
    "GeneratedModule",
    "HookOracleModule",
    "RewardComponent",
    "ToolRules",
    "TurnOracleModule",
    "WalkthroughOracleModule",
]

Expression = Callable[[Scope], Any]
"""A compiled spec expression: reads (and, for effects, writes) one scope."""


@dataclass(frozen=True)
class RewardComponent:
    """One named reward: evaluated when `on` is among the step's event keys."""

    name: str
    on: str
    weight: float
    value: Callable[[Scope], float]
    when: Callable[[Scope], bool] | None = None  # the reward counts only where this holds


@dataclass(frozen=True)
class EpisodeRules:
    """An environment's episode-level expressions; `None` where the spec has none."""

    initial_values: tuple[tuple[str, Expression], ...] = ()
    """(State field, value) of the state variables computed from the sample at reset."""
    success: Callable[[Scope], bool | None] | None = None
    done_when: Callable[[Scope], bool] | None = None
    anchor: Expression | None = None


@dataclass(frozen=True)
class ToolRules:
    """A spec tool's expressions; `None` where the spec has none."""

    available: Callable[[Scope], bool] | None = None  # `when`
    failed_guard: Callable[[Scope], int | None] | None = None  # index of a failed `guards` entry
    returns: Expression | None = None
    effects: Callable[[Scope], None] | None = None

    @property
    def guarded(self) -> bool:
        return self.available is not None or self.failed_guard is not None


class FlowFactory(Protocol):
    """`FLOW_CLASS`: builds the episode loop of the spec for a policy."""

    def __call__(
        self,
        policy: Policy,
        tokenizer: Tokenizer,
        chat: ChatTemplate | None = None,
        temperature: float = 1.0,
        seed: int | None = None,
    ) -> AgentEnvLoop: ...


class GeneratedModule(Protocol):
    """What every generated module provides (read-only)."""

    @property
    def SPEC_NAME(self) -> str: ...
    @property
    def SPEC_FILE(self) -> str: ...
    @property
    def SPEC_SHA256(self) -> str: ...
    @property
    def SPEC_DIR(self) -> Path | None: ...
    @property
    def LAYOUT(self) -> str: ...
    @property
    def TRAINING(self) -> Mapping[str, Any]: ...
    @property
    def DATA_SOURCE(self) -> str | None: ...
    @property
    def EVAL_SPLIT(self) -> str | None: ...
    @property
    def PUBLIC_FIELDS(self) -> tuple[str, ...] | None: ...
    @property
    def PUBLIC_STATE(self) -> tuple[str, ...] | None: ...
    @property
    def ENV_CLASS(self) -> type[SpecEnvMixin]: ...
    @property
    def FLOW_CLASS(self) -> FlowFactory: ...

    def load_samples(
        self, split: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]: ...


class TurnOracleModule(GeneratedModule, Protocol):
    """A module whose spec lists the oracle's turns as templates."""

    def oracle_actions(self, sample: dict[str, Any]) -> Iterator[str]: ...


class HookOracleModule(GeneratedModule, Protocol):
    """A module whose oracle is a Python function (`module:function`)."""

    @property
    def ORACLE_HOOK(self) -> str: ...


class WalkthroughOracleModule(GeneratedModule, Protocol):
    """A module whose oracle is the environment adapter's walkthrough."""

    @property
    def ORACLE_WALKTHROUGH(self) -> bool: ...
