"""What an MCP server sends is bounded: one answer (`max_result_bytes`) and its stderr
(`max_log_bytes`). Real server processes (tests/mcp_tools/flaky_server.py), started
through the spec's `command` as users' specs are.

Reported: a 100 MB result failed 16 of 16 episodes sharing the server (the SDK reads a
line in time quadratic in its length: 10 MB took 9 s, so every answer behind it timed
out), and a chatty server wrote 160 MB of log for 8 calls.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentspec.runtime.mcp.stderr import server_logs

from .helpers import HERE, call, call_outcomes, copy_spec, tool_errors

SHARED = ("sessions: episode", "sessions: shared")


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSPEC_CACHE", str(tmp_path / "cache"))


def flaky(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    return copy_spec(tmp_path, "flaky.yaml", "flaky_server.py", SHARED, *edits)


def play_together(spec: Path, scripts: list[list[str]]) -> list[Any]:
    """One scripted episode per script, all at once (sample i for script i)."""
    from agentspec.compiler.build import import_spec
    from agentspec.runtime import ScriptedPolicy
    from agentspec.runtime.compiled.task_text import task_bpe_tokenizer

    module = import_spec(spec)
    samples = module.load_samples()
    tok = task_bpe_tokenizer(module, samples, spec.parent / "tokenizer")

    async def main() -> list[Any]:
        flows = [module.FLOW_CLASS(ScriptedPolicy(s, tok), tok) for s in scripts]
        return list(await asyncio.gather(*(f.run(samples[i]) for i, f in enumerate(flows))))

    return asyncio.run(main())


ADD = [call("add", a=1, b=2), "<answer>3</answer>"]


def test_an_oversized_result_fails_only_its_own_call(tmp_path: Path) -> None:
    # 10 MB, over the default 1 MiB: before, the SDK took seconds to read it, holding up
    # the answers behind it on the shared server until they timed out too
    spec = flaky(tmp_path, ("timeout: 5", "timeout: 4"))
    started = time.monotonic()
    hog, *honest = play_together(
        spec,
        [
            [call("big", size=10_000_000), *ADD],
            *[[call("add", a=i, b=1), "<answer>0</answer>"] for i in range(3)],
        ],
    )
    took = time.monotonic() - started
    assert call_outcomes(hog) == ["too_large", "ok"]
    ((_, message),) = tool_errors(hog)
    # (the SDK's server sends the text twice: as content and as structured content)
    assert message.startswith("big failed: the server's answer (20,000,")
    assert message.endswith(
        "larger than its max_result_bytes (1,048,576 bytes), and was dropped unread"
    )
    for traj in honest:
        assert call_outcomes(traj) == ["ok"]
    assert took < 60  # the server's start-up, mostly: nothing waited for a timeout


def test_a_per_server_result_limit(tmp_path: Path) -> None:
    spec = flaky(tmp_path, ("timeout: 5", "timeout: 5\n    max_result_bytes: 2048"))
    (small, large) = play_together(
        spec, [[call("big", size=500), *ADD], [call("big", size=3000), *ADD]]
    )
    assert call_outcomes(small) == ["ok", "ok"]
    assert call_outcomes(large) == ["too_large", "ok"]
    assert "max_result_bytes (2,048 bytes)" in tool_errors(large)[0][1]


def _run_with_logs(spec: Path, run_dir: Path, scripts: list[list[str]]) -> list[Any]:
    with server_logs(run_dir):
        return play_together(spec, scripts)


def test_a_chatty_server_log_is_cut_at_the_default(tmp_path: Path) -> None:
    spec = flaky(tmp_path)
    (traj,) = _run_with_logs(spec, tmp_path / "run", [[call("chatty", size=12_000_000), *ADD]])
    assert call_outcomes(traj) == ["ok", "ok"]
    log = (tmp_path / "run" / "mcp" / "flaky.log").read_bytes()
    assert 10_485_760 < len(log) < 10_485_760 + 10_000  # a header and notes beyond the limit
    assert b"not kept: this log reached its max_log_bytes (10,485,760); its last ones:" in log
    assert log.rstrip().endswith(b"flaky: the last chatty line")  # its last lines are kept
    # what the launcher cut counts too: the note said some 4 KB of the 1.5 MB dropped
    (not_kept,) = re.findall(rb"\[agentspec: ([\d,]+) bytes of this process", log)
    assert int(not_kept.replace(b",", b"")) > 1_000_000


def test_a_per_server_log_limit_keeps_the_last_words_of_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLAKY_CRASH_ON", "1")  # the first `add` ends the server
    spec = flaky(tmp_path, ("timeout: 5", "timeout: 5\n    max_log_bytes: 4096"))
    script = [call("chatty", size=1_000_000), call("add", a=1, b=2), "<answer>3</answer>"]
    (traj,) = _run_with_logs(spec, tmp_path / "run", [script])
    assert call_outcomes(traj) == ["ok", "crashed"]
    # the crash is quoted from the server's last lines, though its stderr was cut
    assert "flaky: call 1 of add; exiting" in tool_errors(traj)[0][1]
    log = (tmp_path / "run" / "mcp" / "flaky.log").read_bytes()
    assert len(log) < 4096 + 1000  # a header and a note beyond the limit
    assert b"not kept: this log reached its max_log_bytes (4,096); its last ones:" in log
    assert log.rstrip().endswith(b"flaky: call 1 of add; exiting")


@pytest.fixture(params=["events", "json"])
def http_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """The flaky server over Streamable HTTP, answering with server-sent events or with
    plain JSON bodies (which the SDK reads whole)."""
    import httpx
    from serve.helpers import free_port  # below the ephemeral range: no client takes it

    port = free_port()
    mode = ["--json-response"] if request.param == "json" else []
    process = subprocess.Popen(
        [sys.executable, "flaky_server.py", "--http", str(port), *mode],
        cwd=HERE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        for _ in range(600):  # the server imports the SDK first: wait until it listens
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_server_reached_by_url_is_bounded_too(tmp_path: Path, http_server: str) -> None:
    spec = flaky(
        tmp_path,
        ("command: [python, flaky_server.py]", f"url: {http_server}"),
        ("timeout: 5", "timeout: 5\n    max_result_bytes: 4096"),
    )
    (traj,) = play_together(spec, [[call("big", size=100_000), call("big", size=100), *ADD]])
    assert call_outcomes(traj) == ["too_large", "ok", "ok"]
    assert "larger than its max_result_bytes (4,096 bytes)" in tool_errors(traj)[0][1]


def test_the_sdks_own_event_limit_reads_as_too_large() -> None:
    # an answer sent as server-sent events is cut by the SDK, which reports the stream
    # as closed: it is the answer's size, not a crash of the server
    from mcp import MCPError

    from agentspec.runtime.mcp.session import _too_large

    closed = MCPError(-32000, "SSE stream failed: Server-sent event exceeded the 4096 byte limit.")
    assert _too_large(closed, 4096) == (
        "the server's answer is larger than its max_result_bytes (4,096 bytes), and was dropped unread"
    )
    assert _too_large(MCPError(-32000, "Connection closed"), 4096) is None
