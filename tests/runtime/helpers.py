"""Hand-written environments for the runtime tests: a calculator ToolEnv and a two-room AgentEnv."""

from __future__ import annotations

import ast
import asyncio
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from agentspec.runtime import (
    Action,
    AgentEnv,
    BaseTool,
    Event,
    EventKind,
    Observation,
    Step,
    StepResult,
    ToolContext,
    ToolEnv,
)

_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
}


def calc(expression: str) -> int:
    """Evaluate + - * // on integers (raises ValueError on anything else)."""

    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return int(_OPS[type(node.op)](ev(node.left), ev(node.right)))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise ValueError(f"unsupported expression {expression!r}")

    return ev(ast.parse(expression, mode="eval"))


class CalculatorTool(BaseTool):
    name = "calculator"
    description = "Evaluate an integer arithmetic expression."
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"expression": {"type": "string", "description": "e.g. 3*(4+5)"}},
        "required": ["expression"],
        "additionalProperties": False,
    }
    timeout = 2.0

    def __init__(self, latency: float = 0.0) -> None:
        super().__init__()
        self.latency = latency

    async def execute(self, args: dict[str, Any], context: ToolContext) -> str:
        if self.latency:
            await asyncio.sleep(self.latency)
        return str(calc(args["expression"]))


class SleepyTool(BaseTool):
    name = "sleepy"
    description = "Sleeps for the given seconds."
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"seconds": {"type": "number"}},
        "required": ["seconds"],
    }
    timeout = 0.05

    async def execute(self, args: dict[str, Any], context: ToolContext) -> str:
        await asyncio.sleep(args["seconds"])
        return "awake"


class CalculatorEnv(ToolEnv):
    """Answer ``sample["question"]`` as ``<answer>N</answer>``; reward ``correct`` on final."""

    def __init__(self, tool_format: str = "hermes", latency: float = 0.0) -> None:
        super().__init__(
            [CalculatorTool(latency), SleepyTool()],
            tool_format,
            system_prompt="Use the calculator, then answer as <answer>N</answer>.",
        )

    def rewards(self, step: Step) -> dict[str, float]:
        out: dict[str, float] = {}
        if step.has_event(EventKind.FINAL):
            m = re.search(r"<answer>(.*?)</answer>", step.action_text)
            out["correct"] = 1.0 if m and m.group(1).strip() == str(self.sample["answer"]) else 0.0
        if step.has_event(EventKind.PARSE_ERROR):
            out["malformed"] = -0.2
        if step.has_event("tool:calculator"):
            out["used_calculator"] = 0.1
        return out

    def success(self, steps: Any, results: Any) -> bool | None:
        return bool(steps) and steps[-1].rewards.get("correct") == 1.0


def calculator_samples(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        a, b, c = (i * 7) % 50 + 1, (i * 13) % 30 + 2, i % 5 + 1
        expr = f"{a}+{b}*{c}" if i % 2 else f"({a}-{b})*{c}"
        out.append({"question": f"What is {expr}?", "expression": expr, "answer": calc(expr)})
    return out


def calculator_oracle(prompt: str) -> str:
    """A scripted expert for CalculatorEnv (hermes): call the tool, then answer with its result."""
    results = re.findall(r"<tool_response>\n(.*?)\n</tool_response>", prompt, re.DOTALL)
    if results:
        return f"The result is {results[-1]}. <answer>{results[-1]}</answer>"
    question = re.findall(r"What is (.*?)\?", prompt)[-1]
    return f'<tool_call>{{"name": "calculator", "arguments": {{"expression": "{question}"}}}}</tool_call>'


@dataclass
class RoomState:
    room: str = "hall"
    has_key: bool = False
    moves: int = 0


class TwoRoomEnv(AgentEnv):
    """Hall (with a key) and a locked vault north of it; reach the vault with the key.

    Commands: ``take key``, ``go north``, ``go south``, ``look``. Anything else is a
    ``parse_error``; going north without the key is refused (``tool_error``).
    """

    def __init__(self) -> None:
        super().__init__()
        self.state = RoomState()

    async def reset(self, sample: Mapping[str, Any]) -> Observation:
        self.sample = sample
        self.state = RoomState()
        return Observation(
            messages=[
                {
                    "role": "system",
                    "content": "You are in a house. Commands: take key, go north, go south, look.",
                },
                {
                    "role": "user",
                    "content": f"Goal: {sample.get('goal', 'enter the vault')}. You are in the hall.",
                },
            ]
        )

    def anchor(self) -> str | None:
        return f"{self.state.room}|key={self.state.has_key}"

    def initial_messages_for_test(self) -> list[dict[str, str]]:
        obs = asyncio.run(self.reset({}))
        return obs.as_messages()

    def describe(self) -> str:
        key = (
            "There is a key here. " if self.state.room == "hall" and not self.state.has_key else ""
        )
        return f"You are in the {self.state.room}. {key}".strip()

    async def step(self, action: Action) -> StepResult:
        command = action.text.strip().lower()
        s = self.state
        s.moves += 1
        if command == "look":
            return StepResult(Observation(self.describe()))
        if command == "take key":
            if s.room == "hall" and not s.has_key:
                s.has_key = True
                return StepResult(Observation("You take the key."), events=[Event.tool_ok("take")])
            return StepResult(
                Observation("There is no key here."),
                events=[Event(EventKind.TOOL_ERROR, tool="take", code="guard")],
            )
        if command == "go north":
            if s.room == "vault":
                return StepResult(
                    Observation("You cannot go north."),
                    events=[Event(EventKind.TOOL_ERROR, tool="go", code="guard")],
                )
            if not s.has_key:
                return StepResult(
                    Observation("The vault door is locked."),
                    events=[Event(EventKind.TOOL_ERROR, tool="go", code="guard")],
                )
            s.room = "vault"
            return StepResult(
                None, done=True, success=True, events=[Event.tool_ok("go"), Event(EventKind.FINAL)]
            )
        if command == "go south":
            if s.room == "vault":
                s.room = "hall"
                return StepResult(Observation(self.describe()), events=[Event.tool_ok("go")])
            return StepResult(
                Observation("You cannot go south."),
                events=[Event(EventKind.TOOL_ERROR, tool="go", code="guard")],
            )
        return StepResult(
            Observation(
                f"Unknown command {command[:30]!r}. Commands: take key, go north, go south, look."
            ),
            events=[
                Event(EventKind.PARSE_ERROR, message="unknown command", code="unknown_command")
            ],
        )

    def rewards(self, step: Step) -> dict[str, float]:
        out = {"step_cost": -0.05}
        if step.has_event(EventKind.FINAL):
            out["reached"] = 1.0
        return out


ROOM_SOLUTION = ["look", "take key", "go north"]


def room_oracle(prompt: str) -> str:
    """Scripted expert for TwoRoomEnv, from what the prompt shows."""
    if "You take the key." in prompt:
        return "go north"
    if "There is a key here." in prompt:
        return "take key"
    return "look"


def corpus_texts() -> list[str]:
    """Text the tiny tokenizer is trained on: both tasks' prompts, answers and formats."""
    texts = []
    for s in calculator_samples(300):
        texts.append(s["question"] + " " + calculator_oracle(s["question"]))
        texts.append(
            f"<tool_response>\n{s['answer']}\n</tool_response> <answer>{s['answer']}</answer>"
        )
    texts += [
        "You are in a house. Commands: take key, go north, go south, look. You take the key. "
        "The vault door is locked. You are in the vault. There is a key here. Unknown command",
        'Action: calculator\nAction Input: {"expression": "1+2"}\nObservation: 3\nFinal Answer: 3',
        "search[red shoes] click[Buy Now] Error: your response could not be parsed; no tool was called.",
        'Call a tool as <tool_call>{"name": "TOOL", "arguments": {...}}</tool_call>. You can call these tools:',
        "system user assistant Use the calculator, then answer as <answer>N</answer>.",
    ] * 20
    return texts


class CharByCharPolicy:
    """Scripted, but tokenises each character on its own: ids a re-encoding would never produce.

    If any code decoded responses and re-encoded them, prompts would hold the
    canonical ids instead of these, so tests with it prove token in, token out.
    """

    def __init__(self, script: Any, tokenizer: Any) -> None:
        self.script = script
        self.tokenizer = tokenizer

    async def generate(self, prompts: Any, params: Any) -> list[Any]:
        from agentspec.runtime import Generation

        out = []
        for p in prompts:
            text = self.script(self.tokenizer.decode(list(p), skip_special_tokens=False))
            ids = [i for ch in text for i in self.tokenizer.encode(ch)]
            ids.append(self.tokenizer.eos_token_id)
            out.append(Generation(ids, [-0.5] * len(ids), "stop"))
        return out


def assert_chained_layout(
    traj: Any, tok: Any, chat: Any, initial_messages: list[dict[str, str]]
) -> None:
    """The documented full_history layout, step by step, and its packed training row."""
    from agentspec.runtime import training_rows

    steps = traj.steps
    assert steps[0].prompt_ids == tok.encode(chat.render(initial_messages))
    for t, step in enumerate(steps):
        assert len(step.response_logprobs) == len(step.response_ids)
        if step.observation is not None:
            ended = step.response_ids[-1] == tok.eos_token_id
            text = chat.continuation([{"role": "user", "content": step.observation}], ended)
            assert step.observation_ids == tok.encode(text)
        if t + 1 < len(steps):
            assert (
                steps[t + 1].prompt_ids
                == step.prompt_ids + step.response_ids + step.observation_ids
            )
    (row,) = training_rows(traj)
    last = steps[-1]
    assert row.input_ids == last.prompt_ids + last.response_ids
    expected_mask = [0] * len(steps[0].prompt_ids)
    for t, step in enumerate(steps):
        expected_mask += [1] * len(step.response_ids)
        if t + 1 < len(steps):
            expected_mask += [0] * len(step.observation_ids)
    assert row.response_mask == expected_mask
    assert [lp for lp, m in zip(row.logprobs, row.response_mask, strict=True) if m] == [
        lp for s in steps for lp in s.response_logprobs
    ]
    assert [ts for ts in row.token_steps if ts >= 0] == [
        s.index for s in steps for _ in s.response_ids
    ]
