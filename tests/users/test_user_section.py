"""The `user:` section: checked where it is written, compiled, and played.

A rule-based user replies to the agent's text turns; tool calls go to the
tools; `user.ended` and `user.said` are readable by rewards and success."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from codegen.helpers import build, call, play

from agentspec.compiler.frontend import check_file

DESK = """\
state:
  done: {type: bool}
tools:
  finish:
    description: Finish the request.
    effect: [state.done = true]
user:
  instructions: "You want {{ sample.q }}; your number is {{ sample.n }}."
  replies:
    number: {when: "'number' in lower(action.text)", say: "It is {{ sample.n }}."}
    thanks: {when: state.done, say: "Thanks, bye! ###STOP###"}
    refuse: {when: "'cancel' in lower(action.text)", say: "No, do not cancel.", end: true}
  otherwise: "Can you help me with {{ sample.q }}?"
rewards:
  served: {on: final, value: "1.0 if user.ended and state.done and 'number' in user.replied else 0.0"}
episode:
  max_steps: 6
  success: reward.served == 1.0
"""


def test_text_turns_go_to_the_user_and_tool_turns_to_the_tools(tmp_path: Path) -> None:
    module = build(DESK, tmp_path)
    traj, env = play(module, ["Hello! What is your number?", call("finish"), "Done."])
    assert traj.steps[0].observation == "It is 3."  # the reply, as the next observation
    assert traj.steps[1].tool_calls and "user" not in traj.steps[1].info
    assert traj.steps[0].info["user"] == {"rule": "number", "reply": "It is 3.", "ended": False}
    last = traj.steps[-1]
    assert last.info["user"] == {"rule": "thanks", "reply": "Thanks, bye!", "ended": True}
    assert len(traj.steps) == 3 and traj.termination.value == "done"
    assert last.rewards["served"] == 1.0 and traj.success is True
    assert env.user.turns == 2 and env.user.said == "Thanks, bye!"
    # the user's own view of the dialogue: its turns are the assistant's
    assert [m["role"] for m in env.dialogue] == [
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]


def test_an_agent_that_never_asks_is_not_served(tmp_path: Path) -> None:
    module = build(DESK, tmp_path)
    traj, _ = play(module, [call("finish"), "Done."])
    assert traj.steps[-1].info["user"]["ended"] and traj.success is False


def test_otherwise_and_an_ending_rule(tmp_path: Path) -> None:
    module = build(DESK, tmp_path)
    traj, env = play(module, ["Hi.", "Shall I cancel it?"])
    assert traj.steps[0].observation == "Can you help me with question?"
    assert traj.steps[1].info["user"]["rule"] == "refuse" and env.user.ended
    assert traj.success is False


def test_without_otherwise_an_unanswered_message_ends_the_dialogue(tmp_path: Path) -> None:
    body = DESK.replace('  otherwise: "Can you help me with {{ sample.q }}?"\n', "")
    module = build(body, tmp_path)
    traj, env = play(module, ["Hi."])
    assert traj.steps[0].info["user"] == {"rule": "leave", "reply": "", "ended": True}
    assert env.user.ended and len(traj.steps) == 1


def test_a_failing_reply_ends_only_its_episode(tmp_path: Path) -> None:
    body = DESK.replace("It is {{ sample.n }}.", "It is {{ sample.n / 0 }}.")
    module = build(body, tmp_path)
    traj, _ = play(module, ["What is your number?"])
    assert traj.termination.value == "env_error"
    assert "user.replies.number" in traj.steps[0].info["env_error"]


HEAD = """\
agentspec: 1
name: t
data: {source: "jsonl:none.jsonl", fields: {q: str, n: int}}
prompt: {user: "{{ sample.q }}"}
tools:
  finish: {description: Finish.}
"""


def _diagnostics(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "spec.yaml"
    path.write_text(HEAD + textwrap.dedent(body), encoding="utf-8")
    result = check_file(path)
    return [
        f"{d.code} {d.span.line}:{d.span.column}" for d in result.diagnostics if d.code[1] != "9"
    ]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # reading `user` without a user section: located at the name
        ('rewards:\n  r: {on: final, value: "1.0 if user.ended else 0.0"}\n', ["E407 8:33"]),
        # a rule and a model at once: the section's schema error, at `user`
        ("user:\n  model: chat:http://127.0.0.1:1/v1\n  replies: {a: {say: hi}}\n", ["E204 8:3"]),
        # an unknown name in a guard, a field the user lacks in a reply
        (
            'user:\n  replies:\n    a: {when: "\'x\' in action.txt", say: "{{ user.said2 }}", end: true}\n',
            ["E411 9:30", "E411 9:50"],
        ),
    ],
)
def test_checker_locates_problems_in_the_user_section(
    tmp_path: Path, body: str, expected: list[str]
) -> None:
    assert _diagnostics(tmp_path, body) == expected


def test_agentspec_test_reports_a_wrong_user_reply_where_it_is_written(tmp_path: Path) -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    text = (root / "specs" / "retail_desk.yaml").read_text(encoding="utf-8")
    wrong = text.replace('- "That\'s all I needed, thank you!"', '- "Bye."', 1)
    assert wrong != text
    path = tmp_path / "desk.yaml"
    path.write_text(wrong, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "agentspec.cli", "test", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1
    line = 1 + wrong.splitlines().index('            - "Bye."')
    assert f"{path}:{line}:15: episodes[0]" in result.stdout, result.stdout[-1500:]
    assert "user reply 4: expected 'Bye.', got \"That's all I needed, thank you!\"" in result.stdout
