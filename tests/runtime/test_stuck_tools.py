"""Blocking tools stuck in a C call past their timeout take threads from their own
episode only: 96 stuck calls of one session once filled the 64-thread pool, and another
session's ordinary tool waited behind them until it timed out (run, train and serve alike).

A smaller pool (MAX_WORKERS = 4) shows the same mechanism in a fraction of the time."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, ClassVar

import pytest

from agentspec.runtime.episode import blocking
from agentspec.runtime.episode.tools import BaseTool, ToolContext


class StuckTool(BaseTool):
    """Waits on an event: a C call no interrupt reaches, until the test sets it."""

    name = "stuck"
    description = "Never returns in time."
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}
    timeout = 0.1
    blocking = True
    release = threading.Event()

    def execute_blocking(self, args: dict[str, Any], context: ToolContext) -> str:
        type(self).release.wait()
        return "late"


class QuickTool(BaseTool):
    name = "quick"
    description = "Answers at once."
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}
    timeout = 2.0
    blocking = True

    def execute_blocking(self, args: dict[str, Any], context: ToolContext) -> str:
        return "ok"


class Episode:
    """Stands for an episode's environment: whom its calls' threads count against."""


@pytest.fixture
def small_pool(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(blocking, "MAX_WORKERS", 4)
    StuckTool.release = threading.Event()
    yield
    StuckTool.release.set()  # the stuck threads return, and the pool shrinks back
    deadline = time.monotonic() + 10
    while blocking.held_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert blocking.held_threads() == 0


def test_stuck_calls_of_one_episode_leave_the_others_their_threads(small_pool: Any) -> None:
    hog, other = Episode(), Episode()

    async def main() -> tuple[list[Any], Any, float]:
        stuck = StuckTool()
        # twice the pool's size, one after another as an episode's blocking calls run
        results = [await stuck.run({}, ToolContext(env=hog)) for _ in range(8)]
        started = time.monotonic()
        quick = await QuickTool().run({}, ToolContext(env=other))
        return results, quick, time.monotonic() - started

    results, quick, took = asyncio.run(main())
    assert quick.ok and quick.text == "ok" and took < 1.0  # it timed out after 2 s before
    cap = blocking.MAX_HELD_PER_OWNER
    assert [r.code for r in results] == ["timeout"] * 8
    assert all("timed out after 0.1 s" in r.text for r in results[:cap])
    # past the cap the episode's calls fail at once, without taking a thread
    assert all("earlier calls of this episode timed out" in r.text for r in results[cap:])
    assert blocking.held_threads(hog) == cap and blocking.held_threads(other) == 0


def test_many_episodes_stuck_at_once_do_not_starve_a_new_one(small_pool: Any) -> None:
    episodes = [Episode() for _ in range(6)]  # more stuck calls at once than the pool's size

    async def main() -> tuple[list[Any], Any]:
        stuck = StuckTool()
        results = await asyncio.gather(*(stuck.run({}, ToolContext(env=e)) for e in episodes))
        return list(results), await QuickTool().run({}, ToolContext(env=Episode()))

    results, quick = asyncio.run(main())
    assert quick.ok
    # each ran and timed out; the two beyond the pool's size ran on threads started in
    # place of held ones (before, they waited in the queue and never started)
    assert all(r.code == "timeout" and "timed out after" in r.text for r in results)
    assert blocking.held_threads() == 6


def test_a_stuck_call_that_returns_frees_its_place(small_pool: Any) -> None:
    hog = Episode()

    async def main() -> list[str]:
        stuck = StuckTool()
        for _ in range(blocking.MAX_HELD_PER_OWNER):
            await stuck.run({}, ToolContext(env=hog))
        refused = await stuck.run({}, ToolContext(env=hog))
        StuckTool.release.set()  # the C calls return
        while blocking.held_threads(hog):
            await asyncio.sleep(0.01)
        again = await stuck.run({}, ToolContext(env=hog))
        return [refused.text, again.text]

    refused, again = asyncio.run(main())
    assert "earlier calls of this episode timed out" in refused
    assert again == "late"
