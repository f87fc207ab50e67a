"""The `tests` section of the spec model: scripted episodes and the oracle gate."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from agentspec.core.presets import MAX_SEED
from agentspec.spec.base import Section


class TextMatch(Section):
    """An expected text given by a pattern instead of exactly."""

    pattern: str | None = Field(
        None,
        description="A regular expression that must match somewhere in the text (`re.search`).",
    )
    contains: str | None = Field(None, description="A substring the text must contain.")

    @model_validator(mode="after")
    def _one_kind(self) -> TextMatch:
        if (self.pattern is None) == (self.contains is None):
            raise ValueError("an expected text needs exactly one of `pattern` or `contains`")
        return self


Ending = Literal[
    "done",
    "max_steps",
    "context_overflow",
    "response_truncated",
    "parse_error_limit",
    "tool_timeout",
    "tool_error_limit",
]


class UserExpect(Section):
    """What the spec's simulated user did in a scripted episode (docs/users.md)."""

    replies: list[str | TextMatch | None] | None = Field(
        None,
        description="Every reply of the user, in order, the last one too (which the agent never sees): exact text, `{pattern: REGEX}`, `{contains: TEXT}`, or null to skip one.",
    )
    rules: list[str] | None = Field(
        None,
        description="The names of the rules that replied, in order (`user.replied`: `otherwise`, `leave`, `model` too).",
    )
    ended: bool | None = Field(None, description="Whether the user ended the conversation.")


class SpecTestExpect(Section):
    """What a scripted episode must produce; every key is optional."""

    observations: list[str | TextMatch | None] | None = Field(
        None,
        description="What the model sees after each turn, in order: exact text, `{pattern: REGEX}`, `{contains: TEXT}`, or null to skip a turn.",
    )
    state: dict[str, Any] | None = Field(
        None, description="State variables at the end of the episode (only those listed)."
    )
    rewards: dict[str, float] | None = Field(
        None,
        description="Reward components summed over the episode, each before its weight (only those listed).",
    )
    reward: float | None = Field(None, description="The episode's total (weighted) reward.")
    success: bool | None = Field(None, description="The episode's `episode.success`.")
    ending: Ending | None = Field(
        None,
        description="Why the episode ended: `done` (a final answer, a terminal tool, `done()`), `max_steps`, `context_overflow`, `response_truncated`, `parse_error_limit`, `tool_timeout` or `tool_error_limit`.",
    )
    steps: int | None = Field(None, ge=0, description="Number of steps the episode took.")
    tool_errors: int | None = Field(None, ge=0, description="Number of tool errors.")
    parse_errors: int | None = Field(None, ge=0, description="Number of malformed turns.")
    user: UserExpect | None = Field(
        None, description="What the simulated user replied and whether it ended the dialogue."
    )


class SpecTest(Section):
    """A scripted episode: the model's turns as text, and what they must produce."""

    name: str = Field(description="What the test shows (printed by `agentspec test`).")
    sample: dict[str, Any] | None = Field(
        None,
        description="The sample to play, written out (derived fields are not computed: give them too). Default: a sample of the spec's data (`sample_index`).",
    )
    sample_index: int = Field(
        0,
        ge=0,
        description="Which sample of the data (`split`) to play when `sample` is not given.",
    )
    split: str | None = Field(
        None,
        description="Data split of `sample_index` (default: the spec's); `hf:` sources and"
        " generators only (a `jsonl:` or `parquet:` file has no splits, E210).",
    )
    turns: list[str] = Field(
        min_length=1,
        description="The model's responses, one per step, exactly as the model would write them; past the last, the model answers with nothing (no turn is played twice), and a test whose episode goes on fails.",
    )
    max_steps: int | None = Field(
        None,
        ge=1,
        le=1000,
        description="`episode.max_steps` for this episode only (test a step budget without a long script).",
    )
    constants: dict[str, Any] = Field(
        default_factory=dict,
        description="Values of `constants` for this episode only, by name (each of a declared constant, with its type).",
    )
    expect: SpecTestExpect = Field(
        default_factory=SpecTestExpect, description="What the episode must produce."
    )


class OracleGateSpec(Section):
    """The oracle gate of `agentspec test`: the oracle must solve its task."""

    samples: int = Field(
        16, ge=1, description="How many samples (the first of the data) the oracle plays."
    )
    min_success: float = Field(
        1.0,
        ge=0,
        le=1,
        description="Least share of oracle episodes that must succeed (1.0 unless the oracle is known to be imperfect).",
    )
    random_below: bool = Field(
        True, description="Also require a random policy to score below the oracle."
    )
    tool_errors: list[str] = Field(
        default_factory=list,
        description="Tools whose errors the oracle means to cause (a call it expects a guard"
        " to refuse): their tool errors do not fail the gate. Any other tool error does.",
    )


class ExploreGateSpec(Section):
    """`agentspec explore` as part of `agentspec test`: the spec must show no loophole."""

    samples: int = Field(8, ge=1, description="How many samples (the first of the data) to play.")
    budget: int = Field(600, ge=1, description="Most episodes the search plays.")
    seconds: float = Field(
        40.0,
        gt=0,
        le=3600,
        description="Most seconds the search takes (a safety stop; an hour at most, so a spec"
        " cannot hold `agentspec test` forever).",
    )
    depth: int = Field(
        4, ge=1, le=50, description="Longest sequence breadth-first search enumerates."
    )
    seed: int = Field(
        0, ge=0, le=MAX_SEED, description="Seed of every random choice of the search."
    )
    strict: bool = Field(False, description="Warnings (dead guards, rewards, state) fail too.")


class TestsSpec(Section):
    """What `agentspec test` runs: scripted episodes and the oracle gate."""

    episodes: list[SpecTest] = Field(
        default_factory=list,
        description="Scripted episodes: the model's turns as text, and what they must produce.",
    )
    oracle: OracleGateSpec = Field(
        default_factory=OracleGateSpec, description="Settings of the oracle gate."
    )
    explore: ExploreGateSpec | None = Field(
        None,
        description="Also run `agentspec explore` (reward without success, success without the work, farmable rewards, dead parts, no ending); each loophole found fails the test at its spec line. See docs/explore.md.",
    )
