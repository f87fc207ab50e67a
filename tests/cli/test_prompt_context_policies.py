"""`agentspec prompt` shows the first prompt an episode really starts with, for every
context policy, and says whether an episode packs into one row as training decides it.

Each test compares `prompt`'s output with the first prompt of a real episode (the
spec's oracle played by `agentspec run`'s rollout) read back from its token ids.
"""

from __future__ import annotations

import asyncio
import re
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app
from agentspec.compiler.build import import_spec
from agentspec.core.contexts import CONTEXT_POLICIES
from agentspec.core.row_layout import layout_for_template
from agentspec.runtime.commands.run import rollout
from agentspec.runtime.text.byte_tokenizer import ByteTokenizer
from agentspec.runtime.text.chat_templates import chat_for_spec

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "tests" / "runtime" / "data" / "chat_templates"
runner = CliRunner()

CONTEXTS = {
    "full_history": "{policy: full_history}",
    "sliding_window": "{policy: sliding_window, window: 2}",
    "token_budget": "{policy: token_budget, max_prompt_tokens: 4096}",
    "state_summary": (
        '{policy: state_summary, summary: "{{ task }}\\nStep {{ step }} of {{ step.max_steps }};'
        ' {{ state.calls }} calls so far."}'
    ),
    "custom": '{policy: custom, custom: "prompt_context_user:first_prompt"}',
}

USER_MODULE = '''
def first_prompt(view):
    """A custom context: its own system prompt and the task, with the step's number."""
    task = view.initial_messages[-1]["content"]
    return [
        {"role": "system", "content": "Answer as <answer>N</answer>."},
        {"role": "user", "content": f"Step {view.step_index}: {task}"},
    ]
'''


def write_spec(folder: Path, context: str, episode: str = "") -> Path:
    (folder / "prompt_context_user.py").write_text(USER_MODULE, encoding="utf-8")
    spec = folder / "spec.yaml"
    spec.write_text(
        textwrap.dedent(
            """\
            agentspec: 1
            name: contexts
            data:
              source: generator:arithmetic
              params: {min_ops: 1, max_ops: 1, max_value: 50}
              fields: {question: str, expression: str, answer: int}
            prompt:
              system: Use the calculator tool, then answer as <answer>N</answer>.
              user: "{{ sample.question }}"
            state:
              calls: {type: int, initial: 0}
            tools:
              calculator:
                description: Evaluate an arithmetic expression exactly.
                parameters:
                  expression: {type: string}
                effect: [state.calls = state.calls + 1]
                returns: calc(args.expression)
            episode: {max_steps: 4, tool_format: hermes, success: reward.correct == 1.0EPISODE}
            context: CONTEXT
            rewards:
              correct:
                on: final
                value: "1.0 if number(extract(action.text, '<answer>(.*?)</answer>')) == sample.answer else 0.0"
            oracle:
              - '<tool_call>{"name": "calculator", "arguments": {"expression": {{ sample.expression | tojson }}}}</tool_call>'
              - "<answer>{{ sample.answer }}</answer>"
            """
        )
        .replace("CONTEXT", context)
        .replace("EPISODE", episode),
        encoding="utf-8",
    )
    return spec


def episode_first_prompt(spec: Path, chat_template: str | None = None) -> str:
    """The first prompt of the oracle's episode on sample 0, read back from its ids."""
    module = import_spec(spec)
    samples = module.load_samples(limit=1)
    tokenizer = ByteTokenizer()
    if chat_template is not None:
        tokenizer.chat_template = chat_template  # type: ignore[attr-defined]
    (trajectory,) = asyncio.run(rollout(module, samples, "oracle", task_tokenizer=tokenizer))
    assert trajectory.steps, trajectory.info
    return tokenizer.decode(list(trajectory.steps[0].prompt_ids), skip_special_tokens=False)


def prompt_output(spec: Path, *args: str) -> str:
    result = runner.invoke(app, ["prompt", str(spec), *args])
    assert result.exit_code == 0, result.stdout + result.stderr
    return result.stdout


def printed(text: str) -> str:
    """``text`` as the command prints it (a newline after it unless it ends with one)."""
    return text if text.endswith("\n") else text + "\n"


def shown_prompt(report: str) -> str:
    return report.split("─" * 72 + "\n")[1]


def test_every_documented_policy_is_tested() -> None:
    reference = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    row = next(line for line in reference.splitlines() if line.startswith("| `policy` |"))
    choices = re.split(r"(?<!\\)\|", row)[2]  # the column of the choices (`\|` between them)
    documented = set(re.findall(r'`"(\w+)"`', choices))
    assert documented == set(CONTEXT_POLICIES.names()) == set(CONTEXTS)


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSPEC_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("policy", sorted(CONTEXTS))
def test_the_first_prompt_is_the_episodes(tmp_path: Path, policy: str) -> None:
    """In agentspec's ChatML (the built-in model's framing)."""
    spec = write_spec(tmp_path, CONTEXTS[policy])
    seen = episode_first_prompt(spec)
    assert prompt_output(spec, "--raw", "--model", "builtin:tiny") == printed(seen)
    report = prompt_output(spec, "--model", "builtin:tiny")
    assert shown_prompt(report) == printed(seen)
    if policy == "state_summary":
        assert "Step 0 of 4; 0 calls so far." in seen
    if policy == "custom":
        assert "Step 0: " in seen and "Use the calculator tool" not in seen


@pytest.mark.parametrize("policy", sorted(CONTEXTS))
def test_the_first_prompt_in_a_models_template_is_the_episodes(tmp_path: Path, policy: str) -> None:
    """In a model's own template that takes the tools (they leave the system prompt)."""
    source = (TEMPLATES / "qwen25_tools.jinja").read_text(encoding="utf-8")
    model = tmp_path / "model"
    model.mkdir()
    (model / "chat_template.jinja").write_text(source, encoding="utf-8")
    spec = write_spec(tmp_path, CONTEXTS[policy])
    seen = episode_first_prompt(spec, source)
    assert prompt_output(spec, "--raw", "--model", str(model)) == printed(seen)


@pytest.mark.parametrize(
    ("policy", "episode"),
    [(policy, "") for policy in sorted(CONTEXTS)]
    + [("full_history", ", reasoning: {keep_in_history: false}")],
)
def test_prefix_stable_agrees_with_the_layout(tmp_path: Path, policy: str, episode: str) -> None:
    """`yes` exactly where training packs an episode into one row: the compiled
    `LAYOUT` (the context policy) narrowed for the framing the spec's episodes use."""
    spec = write_spec(tmp_path, CONTEXTS[policy], episode)
    module = import_spec(spec)
    layout = layout_for_template(module.LAYOUT, chat_for_spec(module, ByteTokenizer()))
    report = prompt_output(spec, "--model", "builtin:tiny")
    line = next(line for line in report.splitlines() if line.startswith("prefix-stable:"))
    assert line.startswith("prefix-stable: yes") == (layout == "packed"), line
    assert (layout == "packed") == (policy == "full_history" and not episode)
    if policy != "full_history":
        assert f"the {policy} context is not append-only" in line


def test_a_first_prompt_over_the_budget_is_reported(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "{policy: state_summary, max_prompt_tokens: 16, summary: x}")
    report = prompt_output(spec, "--model", "builtin:tiny")
    assert "exceed max_prompt_tokens=16: the episode ends before its first step" in report
