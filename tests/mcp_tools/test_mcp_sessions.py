"""MCP servers that crash, stall, fail to start or outlive the run: tests/mcp_tools/flaky_server.py
(the official SDK, over stdio), started through the spec's `command` as users' specs are.

Nothing is mocked: every test runs real server processes and checks what the
episodes saw, what the server wrote on stderr, and which processes are left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentspec.cli import app

from .helpers import call, call_outcomes, copy_spec, play, play_oracle, tool_errors

runner = CliRunner()
SESSIONS = "sessions: episode"


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSPEC_CACHE", str(tmp_path / "cache"))


def flaky(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    return copy_spec(tmp_path, "flaky.yaml", "flaky_server.py", *edits)


def running(pid: int) -> bool:
    """Whether process ``pid`` is alive (a zombie, dead but not yet reaped, is not)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return fields[0] != "Z"


def started(pids: Path) -> list[int]:
    return [int(line) for line in pids.read_text().split()] if pids.exists() else []


def wait_for(condition: object, what: str, limit: float = 120.0) -> None:
    """Poll ``condition()`` until it holds (the limit only stops a broken test)."""
    deadline = time.monotonic() + limit
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.05)


def test_a_crash_costs_only_the_call_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLAKY_CRASH_ON", "3")  # each server process dies on its third call
    spec = flaky(tmp_path, (SESSIONS, "sessions: shared"))
    traj = play(spec, [call("add", a=1, b=i) for i in range(6)] + ["<answer>1</answer>"])
    assert call_outcomes(traj) == ["ok", "ok", "crashed", "ok", "ok", "crashed"]
    (_, message), *_ = tool_errors(traj)
    assert message.startswith("add failed: MCP server 'flaky' (python flaky_server.py) stopped")
    assert "flaky: call 3 of add; exiting" in message  # the server's own words, from its stderr
    assert traj.steps[3].observation == "<tool_response>\n4\n</tool_response>"
    assert traj.termination.value == "done"


def test_a_crash_with_calls_of_many_episodes_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server dies once 7 calls are in flight together: one per episode.
    pids = tmp_path / "pids"
    monkeypatch.setenv("FLAKY_CRASH_IN_FLIGHT", "7")
    monkeypatch.setenv("FLAKY_CRASH_MARK", str(tmp_path / "crashed-once"))
    monkeypatch.setenv("FLAKY_PIDS", str(pids))
    spec = flaky(tmp_path, (SESSIONS, "sessions: shared"))
    trajectories = play_oracle(spec, first=1)  # the samples that do not stall
    assert len(trajectories) == 7
    for traj in trajectories:  # the call in flight failed; the next one ran on a new server
        assert call_outcomes(traj) == ["crashed", "ok"]
        assert traj.success
    assert len(started(pids)) == 2


@pytest.mark.parametrize("sessions", ["episode", "2"])
def test_a_stalled_call_stalls_only_its_own_episode(tmp_path: Path, sessions: str) -> None:
    # Sample 0 calls `hang`, which blocks its whole server for good; the others add.
    spec = flaky(tmp_path, (SESSIONS, f"sessions: {sessions}"), ("timeout: 5", "timeout: 3"))
    stalled, *others = play_oracle(spec, count=4)
    assert call_outcomes(stalled) == ["timeout", "ok"]  # its server was restarted
    assert stalled.success
    for traj in others:
        assert call_outcomes(traj) == ["ok", "ok"] and traj.success


def test_a_timeout_restarts_a_shared_server(tmp_path: Path) -> None:
    # `hang` blocks the one server all calls share; left running, it timed out every
    # later call (mcp-server-duckdb on a long query: 30 of 30)
    spec = flaky(tmp_path, (SESSIONS, "sessions: shared"), ("timeout: 5", "timeout: 2"))
    traj = play(spec, [call("hang"), call("add", a=1, b=2), "<answer>3</answer>"])
    assert call_outcomes(traj) == ["timeout", "ok"]
    assert traj.success


def test_a_shared_server_restarted_after_a_timeout_fails_only_the_calls_in_flight(
    tmp_path: Path,
) -> None:
    # Sample 0 calls `hang` while the others add: their calls in flight on the wedged
    # server end with it (as for a crash, or at their own timeout); every next call runs.
    spec = flaky(tmp_path, (SESSIONS, "sessions: shared"), ("timeout: 5", "timeout: 2"))
    stalled, *others = play_oracle(spec, count=4)
    assert call_outcomes(stalled) == ["timeout", "ok"]
    assert stalled.success
    for traj in others:
        first, second = call_outcomes(traj)
        assert first in ("ok", "crashed", "timeout") and second == "ok"
        assert traj.success
    for code, message in (e for traj in others for e in tool_errors(traj)):
        if code == "crashed":
            assert "was restarted during the call: another call on it timed out" in message


def test_episode_sessions_start_one_server_per_episode_and_stop_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = tmp_path / "pids"
    monkeypatch.setenv("FLAKY_PIDS", str(pids))
    trajectories = play_oracle(flaky(tmp_path), first=1, count=3)
    assert all(traj.success for traj in trajectories)
    assert len(set(started(pids))) == 3
    assert not any(running(pid) for pid in started(pids))


def _terminal_sigint() -> None:
    """Ctrl-C as in a terminal: a test runner started in the background may ignore SIGINT,
    and its children would inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "agentspec.cli", *args],
        cwd=cwd,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_terminal_sigint,
    )


def test_a_run_keeps_server_stderr_in_its_directory_and_leaves_nothing_running(
    tmp_path: Path,
) -> None:
    spec = flaky(tmp_path)
    pids, out = tmp_path / "pids", tmp_path / "run"
    command = _cli(
        "run", str(spec), "-n", "3", "--out", str(out), env={"FLAKY_PIDS": str(pids)}, cwd=tmp_path
    )
    stdout, stderr = command.communicate(timeout=600)
    assert command.returncode == 0, stderr
    assert "flaky: ready" not in stdout + stderr  # not mixed into agentspec's output...
    log = (out / "mcp" / "flaky.log").read_text()
    for pid in started(pids):  # one block per server process, under its command and pid
        assert f"--- python flaky_server.py (pid {pid}) ---" in log
    assert len(started(pids)) >= 2
    assert "flaky: ready" in log  # ...but kept beside the trajectories
    assert not any(running(pid) for pid in started(pids))


@pytest.mark.slow
def test_ctrl_c_stops_the_servers(tmp_path: Path) -> None:
    spec = flaky(tmp_path, ("timeout: 5", "timeout: 60"))  # the `hang` call stays in flight
    pids = tmp_path / "pids"
    command = _cli(
        "run",
        str(spec),
        "-n",
        "8",
        "--out",
        str(tmp_path / "run"),
        env={"FLAKY_PIDS": str(pids)},
        cwd=tmp_path,
    )
    wait_for(lambda: len(started(pids)) == 8, "a server per episode")
    command.send_signal(signal.SIGINT)
    _, stderr = command.communicate(timeout=120)
    assert command.returncode == 130 and "Traceback" not in stderr, stderr
    assert not any(running(pid) for pid in started(pids))


def stuck_rollout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Path]:
    """The oracle rollout of the flaky spec (8 episodes, a server each, one call stuck in
    every server), not started yet, and the file where its servers write their pids."""
    from agentspec.compiler.build import import_spec
    from agentspec.runtime.commands.run import rollout
    from agentspec.runtime.compiled.task_text import task_bpe_tokenizer

    pids = tmp_path / "pids"
    monkeypatch.setenv("FLAKY_PIDS", str(pids))
    module = import_spec(flaky(tmp_path, ("timeout: 5", "timeout: 60")))
    samples = module.load_samples()
    tok = task_bpe_tokenizer(module, samples, tmp_path / "tokenizer")
    return rollout(module, samples, "oracle", task_tokenizer=tok), pids


async def every_server_started(pids: Path) -> None:
    import asyncio

    deadline = time.monotonic() + 120  # only stops a broken test
    while len(started(pids)) < 8 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


def test_an_error_in_the_run_stops_the_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    episodes, pids = stuck_rollout(tmp_path, monkeypatch)

    async def run_then_fail() -> None:
        running_episodes = asyncio.ensure_future(episodes)
        await every_server_started(pids)
        assert not running_episodes.done()
        raise RuntimeError("the program around the rollout failed")

    with pytest.raises(RuntimeError, match="around the rollout"):
        asyncio.run(run_then_fail())
    assert len(started(pids)) == 8
    assert not any(running(pid) for pid in started(pids))


START_FAILURES = [
    ("command: [python, flaky_server.py, --verbose]", "unrecognized arguments: --verbose"),
    (
        "command: [python, flaky_server.py, --database, shop.db]",
        "flaky: cannot open the database 'shop.db': no such file",
    ),
    (
        "command: [flaky-server-not-installed]",
        "cannot start 'flaky-server-not-installed': No such file or directory",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("command", "cause"), START_FAILURES, ids=["flag", "database", "program"])
def test_a_server_that_cannot_start_says_why(tmp_path: Path, command: str, cause: str) -> None:
    spec = flaky(
        tmp_path, ("command: [python, flaky_server.py]", command), (SESSIONS, "sessions: shared")
    )
    traj = play(spec, [call("add", a=1, b=2), call("add", a=1, b=2), "<answer>3</answer>"])
    assert call_outcomes(traj) == ["unavailable", "unavailable"]  # each call tried again
    assert cause in tool_errors(traj)[0][1]
    assert traj.termination.value == "done"

    result = runner.invoke(app, ["mcp", "pin", str(spec)])
    assert result.exit_code == 1
    assert cause in result.output and "Traceback" not in result.output

    result = runner.invoke(app, ["test", str(spec)])
    assert result.exit_code == 1
    assert cause in result.output and "Traceback" not in result.output


def test_sessions_must_be_a_mode_or_a_pool_size(tmp_path: Path) -> None:
    for wrong in ("pool", "0", "true", '"4"'):
        spec = flaky(tmp_path / wrong, (SESSIONS, f"sessions: {wrong}"))
        result = runner.invoke(app, ["validate", str(spec)])
        assert result.exit_code == 1
        assert "error[E204]: mcp.flaky.sessions:" in result.output
        assert "use `shared`, `episode`, or a pool size from 1 to 256" in result.output


def test_a_shutdown_cut_short_leaves_no_server_behind_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelled again while its servers stop (a second Ctrl-C, or `asyncio.run` cancelling
    what is left), the run still ends every server before the event loop closes: a server
    that exits after it leaves its transport to the garbage collector, which closes it on
    the closed loop ("Event loop is closed" tracebacks at Ctrl-C, seen on a loaded machine)."""
    import asyncio
    import gc

    episodes, pids = stuck_rollout(tmp_path, monkeypatch)

    async def cancel_twice() -> None:
        running_episodes = asyncio.ensure_future(episodes)
        await every_server_started(pids)
        running_episodes.cancel()
        for _ in range(3):  # into the servers' shutdown, then cut it short
            await asyncio.sleep(0)
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()
        await asyncio.wait([running_episodes])

    unraisable: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(repr(u.exc_value)))
    asyncio.run(cancel_twice())
    assert len(started(pids)) == 8
    assert not any(running(pid) for pid in started(pids))
    gc.collect()
    assert unraisable == []
