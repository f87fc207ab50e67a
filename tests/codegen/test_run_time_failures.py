"""What a spec's own Python and templates can do wrong only when they run
(issue 26, item 15): each is an error naming the spec's key and line, on the
episode it hit, never a traceback that ends the run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentspec.runtime import ScriptedPolicy
from agentspec.runtime.compiled.scripts import PolicyError, hook_script
from agentspec.runtime.episode.loop import run_episodes
from agentspec.runtime.text.byte_tokenizer import ByteTokenizer

from .helpers import build

CONTEXTS = """
from agentspec.runtime.episode.context import ContextPolicy


def messages(view):
    return [{"role": "user", "content": "custom: " + view.sample["q"]}]


def mapping(view):
    return {"role": "user", "content": "one message, not a list"}


def raises(view):
    return view.sample["nothing"]


class Budgeted(ContextPolicy):
    def build(self, view):
        return view.encode_messages([{"role": "user", "content": "class: " + view.sample["q"]}])


class NotAPolicy:
    pass
"""


def play_all(module, samples):
    tokenizer = ByteTokenizer()
    flow = module.FLOW_CLASS(ScriptedPolicy(["end"], tokenizer), tokenizer)
    return asyncio.run(run_episodes(flow, samples))


def custom_spec(target: str) -> str:
    return f"""
    tools:
      t: {{description: x, parameters: {{}}}}
    context: {{policy: custom, custom: "{target}"}}
    rewards:
      r: {{on: final, value: 1.0}}
    """


@pytest.fixture
def contexts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "contexts26.py").write_text(CONTEXTS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.mark.parametrize(("target", "shown"), [("messages", "custom: "), ("Budgeted", "class: ")])
def test_a_custom_context_builds_the_prompt(contexts: Path, target: str, shown: str) -> None:
    # It used to be a TypeError traceback for every spec: `custom` was never passed.
    module = build(custom_spec(f"contexts26:{target}"), contexts)
    (traj,) = play_all(module, [{"q": "question", "n": 1, "items": []}])
    assert traj.termination.value == "done"
    assert f"{shown}question" in ByteTokenizer().decode(traj.steps[0].prompt_ids)


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("mapping", "returned a dict ("),
        ("raises", "failed: KeyError: 'nothing'"),
        ("NotAPolicy", "is a class, not a ContextPolicy subclass"),
        ("nowhere", "cannot be loaded: AttributeError"),
    ],
)
def test_a_custom_context_of_the_wrong_shape_ends_each_episode_located(
    contexts: Path, target: str, words: str
) -> None:
    module = build(custom_spec(f"contexts26:{target}"), contexts)
    trajectories = play_all(module, [{"q": "a", "n": 1, "items": []}] * 2)
    for traj in trajectories:
        assert traj.termination.value == "env_error" and traj.steps == []
        error = traj.info["env_error"]
        assert error.startswith("first prompt: CustomContextError: context.custom (")
        assert ".yaml:" in error and words in error


def test_a_prompt_that_fails_on_one_sample_ends_only_that_episode(tmp_path: Path) -> None:
    module = build(
        """
        tools:
          t: {description: x, parameters: {}}
        rewards:
          r: {on: final, value: 1.0}
        """,
        tmp_path,
        head='agentspec: 1\nname: t\ndata: {source: "jsonl:none.jsonl", fields: {q: str, n: int}}\n'
        'prompt: {user: "{{ sample.q * sample.n }}"}\n',
    )
    huge, fine = play_all(module, [{"q": "ab", "n": 10**8}, {"q": "ab", "n": 2}])
    assert huge.termination.value == "env_error" and huge.steps == []
    assert huge.info["env_error"].startswith(
        "first prompt: PromptError: prompt.user: TemplateLimitError"
    )
    assert fine.termination.value == "done" and fine.total_reward == 1.0


HOOKS = """
def turns(sample):
    return ["a", "b"]


def generated(sample):
    yield "a"


def mapping(sample):
    return {"turns": ["a"]}


def nothing(sample):
    return None


def numbers(sample):
    return ["a", 2]


def raises(sample):
    return sample["nothing"]
"""


@pytest.mark.parametrize(
    ("hook", "result"),
    [
        ("turns", ["a", "b"]),
        ("generated", ["a"]),
        ("mapping", "returned a dict for sample s1; it must return a list of action texts"),
        ("nothing", "returned None for sample s1"),
        ("numbers", "returned a list holding '2' (int) for sample s1"),
        ("raises", "failed for sample s1: KeyError: 'nothing'"),
    ],
)
def test_an_oracle_hook_must_return_a_list_of_turns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hook: str, result: object
) -> None:
    (tmp_path / "hooks26.py").write_text(HOOKS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    script = hook_script(f"hooks26:{hook}", "spec.yaml:12")
    if isinstance(result, list):
        assert script({"id": "s1"}) == result
        return
    with pytest.raises(PolicyError) as caught:
        script({"id": "s1"})
    message = str(caught.value)
    assert message.startswith(f"the oracle hook 'hooks26:{hook}' (oracle.hook, spec.yaml:12) ")
    assert str(result) in message


def test_an_oracle_hook_s_turns_run_out_like_an_oracle_list_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After its last turn the expert says nothing (an empty final answer ends the
    episode), as after the last entry of an `oracle:` list; the hook's one turn was
    played again and again until max_steps."""
    from agentspec.runtime.commands.run import rollout

    (tmp_path / "hooks_once.py").write_text(
        'def one_call(sample):\n    return [\'<tool_call>{"name": "echo", "arguments": {}}</tool_call>\']\n',
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = build(
        """
        tools:
          echo: {description: Say hello., returns: "'hello'"}
        episode: {max_steps: 6}
        rewards:
          r: {on: final, value: 1.0}
        oracle: {hook: "hooks_once:one_call"}
        """,
        tmp_path,
    )
    sample = {"id": "s1", "q": "question", "n": 3, "items": []}
    (trajectory,) = asyncio.run(rollout(module, [sample], "oracle"))
    assert len(trajectory.steps) == 2 and trajectory.termination == "done"
    assert trajectory.steps[-1].action_text == ""


def test_a_scripted_file_writes_a_backslash_n_as_two_backslashes(tmp_path: Path) -> None:
    from agentspec.runtime.compiled.scripts import episode_script

    script = tmp_path / "turns.txt"
    script.write_text('first\\nsecond\n{"q": "a\\\\nb"}\n', encoding="utf-8")
    turns = episode_script(object(), f"scripted:{script}")
    assert turns is not None
    assert turns({}) == ["first\nsecond", '{"q": "a\\nb"}']
