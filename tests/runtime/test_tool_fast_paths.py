"""The tool call's fast paths decide as the slow ones: the flat-schema check never
accepts what jsonschema refuses, and a blocking tool's timer times out like
`asyncio.wait_for` did."""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from typing import Any, ClassVar

import jsonschema
import pytest

from agentspec.runtime.episode.blocking import run_blocking
from agentspec.runtime.episode.tools import BaseTool, ToolContext, _flat_check

SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "object",
        "properties": {"expression": {"type": "string", "description": "e.g. 3*(4+5)"}},
        "required": ["expression"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number", "title": "x"},
            "flag": {"type": "boolean"},
            "anything": {"description": "no type"},
        },
        "required": ["n", "flag"],
    },
    {"type": "object", "properties": {}},
]
VALUES: list[Any] = [0, 1, -3, 2.0, 2.5, float("nan"), True, False, None, "", "7", [], {}, [1]]


def random_args(rng: random.Random) -> Any:
    if rng.random() < 0.05:
        return rng.choice([None, [], "x", 3])
    keys = ["expression", "n", "x", "flag", "anything", "extra"]
    return {k: rng.choice(VALUES) for k in rng.sample(keys, rng.randint(0, len(keys)))}


@pytest.mark.parametrize("schema", SCHEMAS)
def test_the_flat_check_accepts_only_what_jsonschema_accepts(schema: dict[str, Any]) -> None:
    check = _flat_check(json.dumps(schema, sort_keys=True))
    assert check is not None  # these schemas take the fast path
    validator = jsonschema.validators.validator_for(schema)(schema)
    rng, accepted = random.Random(0), 0
    for _ in range(3000):
        args = random_args(rng)
        if check(args):
            accepted += 1
            assert validator.is_valid(args), args
    assert accepted > 0


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string", "enum": ["x"]}}},
        {"type": "object", "properties": {"a": {"type": ["string", "null"]}}},
        {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}},
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 2}}},
    ],
)
def test_other_schemas_are_left_to_jsonschema(schema: dict[str, Any]) -> None:
    assert _flat_check(json.dumps(schema, sort_keys=True)) is None


class Adder(BaseTool):
    name = "add"
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }

    async def execute(self, args: dict[str, Any], context: ToolContext) -> str:
        return str(args["a"] + args["b"])


def test_refused_arguments_get_jsonschemas_messages() -> None:
    tool = Adder()
    assert tool.validate({"a": 1, "b": 2}) == []
    assert tool.validate({"a": 2.0, "b": 2}) == []  # jsonschema's verdict, past the quick check
    errors = tool.validate({"a": "1", "c": 0})
    assert any("'b' is a required property" in e for e in errors)
    assert any("a: '1' is not of type 'integer'" in e for e in errors)
    assert any("Additional properties are not allowed" in e for e in errors)
    result = asyncio.run(tool.run({"a": True, "b": 1}))
    assert not result.ok and result.code == "invalid_arguments" and "boolean" not in result.text
    assert "True is not of type 'integer'" in result.text


def test_a_blocking_call_past_its_limit_times_out_and_the_loop_goes_on() -> None:
    release = threading.Event()  # the worker runs until the test lets it go
    finished = threading.Event()

    def worker() -> str:
        try:
            release.wait(10.0)
            return "late"
        finally:  # reached whether the worker returns or is interrupted
            finished.set()

    async def main() -> str:
        slow = asyncio.ensure_future(run_blocking(worker, 0.05))
        fast = await run_blocking(lambda: "fast", 5.0)
        with pytest.raises(asyncio.TimeoutError):
            await slow
        # The caller got its timeout while the worker still ran: it did not wait for it.
        assert not finished.is_set()
        return fast

    try:
        assert asyncio.run(main()) == "fast"
    finally:
        release.set()
    assert finished.wait(10.0)


def test_a_cancelled_caller_leaves_no_pending_timer() -> None:
    async def main() -> None:
        task = asyncio.ensure_future(run_blocking(lambda: time.sleep(0.2), 10.0))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not [h for h in asyncio.get_running_loop()._scheduled if not h.cancelled()]

    asyncio.run(main())


def test_the_fifo_semaphore_bounds_serves_in_order_and_survives_cancellation() -> None:
    from agentspec.runtime.episode.blocking import FifoSemaphore

    async def main() -> tuple[list[int], int]:
        sem, order, running, peak = FifoSemaphore(2), [], [0], [0]

        async def worker(i: int) -> None:
            async with sem:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
                order.append(i)
                await asyncio.sleep(0.001)
                running[0] -= 1

        tasks = [asyncio.ensure_future(worker(i)) for i in range(10)]
        await asyncio.sleep(0)
        tasks[5].cancel()  # a waiter gives up: its turn passes to the next one
        await asyncio.gather(*tasks, return_exceptions=True)
        assert not sem.locked()
        return order, peak[0]

    order, peak = asyncio.run(main())
    assert order == [0, 1, 2, 3, 4, 6, 7, 8, 9]
    assert peak == 2


def test_an_interrupt_goes_only_to_a_live_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    # A dead thread's id can be a new thread's (a library's pool worker just started);
    # an interrupt sent there would kill that thread before it signals its start and
    # leave its starter waiting for ever, holding the library's locks.
    from agentspec.runtime.episode import blocking

    sent: list[tuple[int, Any]] = []
    monkeypatch.setattr(blocking, "_raise_in_thread", lambda tid, exc: sent.append((tid, exc)))
    ended = threading.Thread(target=lambda: None)
    ended.start()
    ended.join()

    async def main() -> None:
        job = blocking._Job(lambda: None)
        job._thread, job._thread_id = ended, ended.ident  # its worker died inside the job
        job.stop()
        live = blocking._Job(lambda: None)
        live._thread, live._thread_id = threading.current_thread(), threading.get_ident()
        live.stop()

    asyncio.run(main())
    assert sent == [(threading.get_ident(), blocking.Interrupted)]
