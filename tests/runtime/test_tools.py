from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

from agentspec.runtime import BaseTool, ToolContext, ToolOutput

from .helpers import CalculatorTool, SleepyTool


def _run(tool: BaseTool, args: Any, context: ToolContext | None = None) -> Any:
    return asyncio.run(tool.run(args, context))


def test_valid_call() -> None:
    r = _run(CalculatorTool(), {"expression": "2*(3+4)"})
    assert (r.ok, r.text, r.code) == (True, "14", "")


def test_schema_errors_are_all_listed_before_execute() -> None:
    calls: list[Any] = []

    class Strict(BaseTool):
        name = "strict"
        parameters: ClassVar[dict[str, Any]] = {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 1},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["n"],
        }

        async def execute(self, args: dict[str, Any], context: ToolContext) -> str:
            calls.append(args)
            return "ran"

    r = _run(Strict(), {"n": 0, "tags": ["a", 3]})
    assert not r.ok and r.code == "invalid_arguments"
    assert (
        r.text
        == "invalid arguments for strict: n: 0 is less than the minimum of 1; tags.1: 3 is not of type 'string'"
    )
    assert calls == []


def test_a_left_out_argument_takes_its_schema_default() -> None:
    seen: list[dict[str, Any]] = []

    class Paged(BaseTool):
        name = "paged"
        parameters: ClassVar[dict[str, Any]] = {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "page": {"type": "integer", "default": 1},
                "tags": {"type": "array", "default": []},
            },
            "required": ["query"],
        }

        async def execute(self, args: dict[str, Any], context: ToolContext) -> str:
            seen.append(args)
            args["tags"].append("seen")  # a default is the tool's own copy, every call
            return "ran"

    given = {"query": "q"}
    assert _run(Paged(), given).ok and _run(Paged(), {"query": "r", "page": 3}).ok
    assert seen[0] == {"query": "q", "page": 1, "tags": ["seen"]}
    assert seen[1] == {"query": "r", "page": 3, "tags": ["seen"]}
    assert given == {"query": "q"}  # the model's arguments as it wrote them


def test_a_backtracking_pattern_refuses_in_bounded_time() -> None:
    # `re` would take hours on this (nested alternatives that all match `a`);
    # arguments are matched under json_schema.PATTERN_SECONDS, keys too
    import time

    class Coded(BaseTool):
        name = "coded"
        parameters: ClassVar[dict[str, Any]] = {
            "type": "object",
            "properties": {"code": {"type": "string", "pattern": "^(a|aa)+$"}},
            "patternProperties": {"^(a|aa)+$": {"type": "integer"}},
            "additionalProperties": False,
        }

        async def execute(self, args: dict[str, Any], context: ToolContext) -> str:
            return "ran"

    start = time.perf_counter()
    r = _run(Coded(), {"code": "a" * 60 + "!", "a" * 60 + "!": 1})
    assert not r.ok and r.code == "invalid_arguments"
    assert "took more than 0.5 s" in r.text
    assert time.perf_counter() - start < 10
    assert _run(Coded(), {"code": "aaaa", "aa": 2}).ok


def test_timeout_and_exception_and_guard() -> None:
    r = _run(SleepyTool(), {"seconds": 1})
    assert (r.ok, r.code, r.text) == (False, "timeout", "sleepy timed out after 0.05 s")
    r = _run(CalculatorTool(), {"expression": "a+1"})
    assert (r.ok, r.code) == (False, "exception") and "ValueError: unsupported expression" in r.text

    class Guarded(CalculatorTool):
        name = "guarded"

        def guard(self, args: dict[str, Any], context: ToolContext) -> str | None:
            return None if context.env == "open" else "the door is closed"

    assert _run(Guarded(), {"expression": "1"}, ToolContext(env="open")).ok
    r = _run(Guarded(), {"expression": "1"}, ToolContext(env="shut"))
    assert (r.ok, r.code, r.text) == (
        False,
        "guard",
        "guarded cannot be used now: the door is closed",
    )


def test_tool_output_and_schema() -> None:
    class Finish(BaseTool):
        name = "finish"
        description = "End the episode."
        parameters: ClassVar[dict[str, Any]] = {
            "type": "object",
            "properties": {"answer": {"type": "string"}},
        }

        async def execute(self, args: dict[str, Any], context: ToolContext) -> ToolOutput:
            return ToolOutput("bye", done=True, success=args.get("answer") == "42", info={"k": 1})

    r = _run(Finish(), {"answer": "42"})
    assert (r.ok, r.text, r.done, r.success, r.info) == (True, "bye", True, True, {"k": 1})
    assert Finish().schema()["function"] == {
        "name": "finish",
        "description": "End the episode.",
        "parameters": Finish.parameters,
    }


def test_bad_tool_definitions_fail_at_construction() -> None:
    class Nameless(BaseTool):
        pass

    with pytest.raises(TypeError, match="must set the class attribute 'name'"):
        Nameless()

    class BadSchema(BaseTool):
        name = "bad"
        parameters: ClassVar[dict[str, Any]] = {
            "type": "object",
            "properties": {"x": {"type": "strnig"}},
        }

    with pytest.raises(Exception, match="strnig"):
        BadSchema()


def test_tool_context_carries_env_and_step_index(tok: Any) -> None:
    from agentspec.runtime import AgentEnvLoop, ScriptedPolicy, ToolEnv, run_episodes

    seen: list[tuple[Any, int]] = []

    class Probe(BaseTool):
        name = "probe"

        async def execute(self, args: dict[str, Any], context: ToolContext) -> str:
            seen.append((context.env.sample["prompt"], context.step_index))
            return "ok"

    call = '<tool_call>{"name": "probe", "arguments": {}}</tool_call>'
    policy = ScriptedPolicy(lambda p: call if p.count("ok") < 2 else "bye", tok)
    loop = AgentEnvLoop(lambda: ToolEnv([Probe()]), policy, tok)
    asyncio.run(run_episodes(loop, [{"prompt": "hi"}]))
    assert seen == [("hi", 0), ("hi", 1)]
