"""What the model sees at step t under each context policy, and what overflow does."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentspec.core.contexts import CONTEXT_POLICIES, ContextPolicyKind
from agentspec.core.registry import UnknownNameError
from agentspec.runtime import (
    AgentEnvLoop,
    ChatTemplate,
    ContextView,
    CustomContext,
    FullHistory,
    LoopConfig,
    SlidingWindow,
    StateSummary,
    TerminationReason,
    TokenBudget,
    available_context_policies,
    make_context_policy,
    run_episodes,
    training_rows,
)
from agentspec.runtime.episode.context import POLICY_CLASSES, register_context_policy

from .helpers import CharByCharPolicy, TwoRoomEnv, assert_chained_layout, room_oracle

CHAT = ChatTemplate()
INITIAL = TwoRoomEnv().initial_messages_for_test()
# The oracle's run: look → take key → go north (3 steps, 2 observations in between).
OBS = ["You are in the hall. There is a key here.", "You take the key."]


def _play(context: Any, tok: Any, max_steps: int = 8, script: Any = room_oracle) -> Any:
    loop = AgentEnvLoop(
        TwoRoomEnv,
        CharByCharPolicy(script, tok),
        tok,
        context=context,
        config=LoopConfig(max_steps=max_steps),
    )
    (traj,) = asyncio.run(run_episodes(loop, [{}]))
    return traj


def _turn(tok: Any, text: str) -> list[int]:
    """The observation's tokens after a response that ended with EOS."""
    return tok.encode(CHAT.continuation([{"role": "user", "content": text}], True))


def _resp(tok: Any, text: str) -> list[int]:
    """CharByCharPolicy's response ids: one token per character, then EOS."""
    return [i for ch in text for i in tok.encode(ch)] + [tok.eos_token_id]


def test_registry() -> None:
    assert available_context_policies() == [
        "custom",
        "full_history",
        "sliding_window",
        "state_summary",
        "token_budget",
    ]
    assert isinstance(make_context_policy("sliding_window", k=2), SlidingWindow)
    with pytest.raises(ValueError, match="valid names: custom, full_history"):
        make_context_policy("everything")
    with pytest.raises(UnknownNameError, match="Did you mean 'sliding_window'"):
        make_context_policy("sliding_windw")
    assert FullHistory.append_only and not SlidingWindow.append_only
    assert [n for n in CONTEXT_POLICIES if CONTEXT_POLICIES.get(n).append_only] == ["full_history"]


def test_every_declared_context_policy_has_a_class_with_the_same_facts() -> None:
    """The spec and compiler read the declarations (agentspec.core.contexts); the runtime's
    classes must say the same, or the compiled row layout would be wrong."""
    assert POLICY_CLASSES.names() == CONTEXT_POLICIES.names()
    for name in POLICY_CLASSES:
        cls = POLICY_CLASSES.get(name)
        assert CONTEXT_POLICIES.get(name) == ContextPolicyKind(
            name, cls.append_only, cls.spec_setting
        )


def test_a_class_that_contradicts_its_declaration_is_refused() -> None:
    class Appending(SlidingWindow):
        append_only = True

    with pytest.raises(ValueError, match="'sliding_window' is declared as"):
        register_context_policy("sliding_window")(Appending)


def test_full_history_step_t(tok: Any) -> None:
    traj = _play(FullHistory(), tok)
    init = tok.encode(CHAT.render(INITIAL))
    r = [_resp(tok, a) for a in ["look", "take key", "go north"]]
    assert traj.steps[0].prompt_ids == init
    assert traj.steps[1].prompt_ids == init + r[0] + _turn(tok, OBS[0])
    assert traj.steps[2].prompt_ids == init + r[0] + _turn(tok, OBS[0]) + r[1] + _turn(tok, OBS[1])
    # The responses' non-canonical ids are in later prompts: nothing was re-encoded.
    assert r[1] != [*tok.encode("take key"), tok.eos_token_id]
    assert [s.response_ids for s in traj.steps] == r
    assert_chained_layout(traj, tok, CHAT, INITIAL)
    assert tok.decode(traj.steps[2].prompt_ids) == (
        CHAT.render(INITIAL)
        + "look<|im_end|>\n<|im_start|>user\n"
        + OBS[0]
        + "<|im_end|>\n<|im_start|>assistant\ntake key<|im_end|>\n<|im_start|>user\n"
        + OBS[1]
        + "<|im_end|>\n<|im_start|>assistant\n"
    )


def test_sliding_window_step_t(tok: Any) -> None:
    traj = _play(SlidingWindow(k=1), tok)
    init = tok.encode(CHAT.render(INITIAL))
    r = [_resp(tok, a) for a in ["look", "take key", "go north"]]
    assert traj.steps[1].prompt_ids == init + r[0] + _turn(tok, OBS[0])
    assert traj.steps[2].prompt_ids == init + r[1] + _turn(tok, OBS[1])
    assert [s.context_truncated for s in traj.steps] == [False, False, True]
    rows = training_rows(traj)  # the chain breaks at step 2
    assert [row.step_indices for row in rows] == [[0, 1], [2]]
    assert rows[1].input_ids == traj.steps[2].prompt_ids + r[2]


def test_token_budget_keeps_what_fits(tok: Any) -> None:
    init = tok.encode(CHAT.render(INITIAL))
    r = [_resp(tok, a) for a in ["look", "take key", "go north"]]
    one_step = len(init) + max(
        len(r[0]) + len(_turn(tok, OBS[0])), len(r[1]) + len(_turn(tok, OBS[1]))
    )
    traj = _play(TokenBudget(max_prompt_tokens=one_step), tok)
    assert traj.steps[1].prompt_ids == init + r[0] + _turn(tok, OBS[0])
    assert traj.steps[2].prompt_ids == init + r[1] + _turn(tok, OBS[1])
    assert traj.steps[2].context_truncated and not traj.steps[1].context_truncated
    assert all(len(s.prompt_ids) <= one_step for s in traj.steps)
    assert traj.termination is TerminationReason.DONE


def test_token_budget_overflow_when_last_step_does_not_fit(tok: Any) -> None:
    init = tok.encode(CHAT.render(INITIAL))
    traj = _play(TokenBudget(max_prompt_tokens=len(init) + 3), tok)
    assert traj.termination is TerminationReason.CONTEXT_OVERFLOW
    assert len(traj.steps) == 1 and traj.steps[0].has_event("truncated")
    failed = _play(TokenBudget(max_prompt_tokens=len(init) + 3, overflow="error"), tok)
    assert failed.termination is TerminationReason.ENV_ERROR
    assert "ContextOverflowError" in (failed.env_error or "") and "token_budget" in failed.env_error


def test_state_summary_step_t(tok: Any) -> None:
    template = "Room: {{ state.room }}. Key: {{ 'yes' if state.has_key else 'no' }}. Step {{ step }}. {{ last_observation }}"
    traj = _play(StateSummary(template), tok)
    system = INITIAL[:1]
    expected = [
        "Room: hall. Key: no. Step 0. ",
        f"Room: hall. Key: no. Step 1. {OBS[0]}",
        f"Room: hall. Key: yes. Step 2. {OBS[1]}",
    ]
    for step, text in zip(traj.steps, expected, strict=True):
        assert step.prompt_ids == tok.encode(
            CHAT.render([*system, {"role": "user", "content": text}])
        )
        assert tok.decode(step.prompt_ids).count("<|im_start|>") == 3
    assert traj.success is True
    assert [row.step_indices for row in training_rows(traj)] == [[0], [1], [2]]


def test_custom_context_ids_and_messages(tok: Any) -> None:
    def fn(view: ContextView) -> Any:
        if view.step_index == 1:  # token ids used as they are
            return view.initial_ids + view.steps[-1].response_ids + view.steps[-1].observation_ids
        return [
            {"role": "user", "content": f"step {view.step_index}: {view.sample.get('goal', '')}"}
        ]

    traj = _play(CustomContext(fn), tok)
    assert traj.steps[0].prompt_ids == tok.encode(
        CHAT.render([{"role": "user", "content": "step 0: "}])
    )
    s0 = traj.steps[0]
    assert (
        traj.steps[1].prompt_ids
        == tok.encode(CHAT.render(INITIAL)) + s0.response_ids + s0.observation_ids
    )
    assert traj.steps[2].prompt_ids == tok.encode(
        CHAT.render([{"role": "user", "content": "step 2: "}])
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda n: FullHistory(n, "end"),
        lambda n: SlidingWindow(5, n, "end"),
        lambda n: StateSummary("{{ last_observation }}" * 20, n, "end"),
        lambda n: CustomContext(lambda v: [v.initial_ids[0]] * (n + v.step_index), n, "end"),
    ],
    ids=["full_history", "sliding_window", "state_summary", "custom"],
)
def test_overflow_end_is_explicit(make: Any, tok: Any) -> None:
    init = tok.encode(CHAT.render(INITIAL))
    traj = _play(make(len(init) + 12), tok, script=lambda p: "look")
    assert traj.termination is TerminationReason.CONTEXT_OVERFLOW
    assert traj.steps and traj.steps[-1].done and traj.steps[-1].has_event("truncated")
    assert "overflow_tokens" in traj.info


def test_overflow_error_ends_the_episode_as_an_error_not_the_run(tok: Any) -> None:
    """A model that writes long answers must not end a run: `overflow: error` is that
    episode's `env_error` (it raised out of `run`, `eval` and `explore`)."""
    init = tok.encode(CHAT.render(INITIAL))
    traj = _play(FullHistory(len(init) + 12, "error"), tok, script=lambda p: "look")
    assert traj.termination is TerminationReason.ENV_ERROR
    assert "exceeds max_prompt_tokens" in (traj.env_error or "")


def test_overflow_truncate_drops_oldest_steps(tok: Any) -> None:
    init = tok.encode(CHAT.render(INITIAL))
    limit = len(init) + 40
    traj = _play(FullHistory(limit, "truncate"), tok, max_steps=6, script=lambda p: "look")
    assert traj.termination is TerminationReason.MAX_STEPS and len(traj.steps) == 6
    assert all(len(s.prompt_ids) <= limit for s in traj.steps)
    flags = [s.context_truncated for s in traj.steps]
    assert not flags[0] and flags[-1]
    last, before = traj.steps[-1], traj.steps[-2]
    assert last.prompt_ids[: len(init)] == init  # system + task are always kept
    assert (
        last.prompt_ids[-len(before.response_ids + before.observation_ids) :]
        == before.response_ids + before.observation_ids
    )
    rows = training_rows(traj)
    assert sum(len(r.step_indices) for r in rows) == 6 and len(rows) > 1


def test_initial_prompt_overflow_has_no_steps(tok: Any) -> None:
    traj = _play(FullHistory(5, "truncate"), tok)
    assert traj.termination is TerminationReason.CONTEXT_OVERFLOW and traj.steps == []


@pytest.mark.parametrize(
    "make",
    [
        lambda: FullHistory(),
        lambda: SlidingWindow(k=1),
        lambda: TokenBudget(max_prompt_tokens=120),
        lambda: StateSummary("Room {{ state.room }}; {{ last_observation }}"),
        lambda: CustomContext(
            lambda v: [
                *v.initial_ids,
                *(i for s in v.steps[-1:] for i in s.response_ids + s.observation_ids),
            ]
        ),
    ],
    ids=["full_history", "sliding_window", "token_budget", "state_summary", "custom"],
)
def test_training_rows_hold_exactly_the_sampled_ids(make: Any, tok: Any) -> None:
    """Token in, token out for every policy: rows carry the policy's own (non-canonical) ids."""
    traj = _play(make(), tok)
    assert traj.success is True
    sampled = [_resp(tok, a) for a in ["look", "take key", "go north"]]
    assert [s.response_ids for s in traj.steps] == sampled
    for row in training_rows(traj):
        responses = [
            [tid for tid, ts in zip(row.input_ids, row.token_steps, strict=True) if ts == i]
            for i in row.step_indices
        ]
        assert responses == [sampled[i] for i in row.step_indices]
        assert sum(row.response_mask) == sum(len(sampled[i]) for i in row.step_indices)
        assert row.logprobs == [-0.5 if m else 0.0 for m in row.response_mask]
        first = traj.steps[row.step_indices[0]]
        assert row.input_ids[: len(first.prompt_ids)] == first.prompt_ids
