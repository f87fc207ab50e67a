"""docs/openenv.md: its Python examples print what the page says, its commands run."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import openenv  # noqa: F401 (the openenv extra installs it: a missing install fails)
import pytest
from serve.helpers import checkout_env, free_port, serving

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "openenv.md").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE, re.S)


def printed(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/openenv.md", "exec"), {"__name__": "__docs__"})
    return out.getvalue()


def test_the_session_example_prints_what_the_page_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert printed(blocks("python")[0]) == blocks("text")[0]


def test_the_serve_command_and_the_client_example(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    command = shlex.split(blocks("console")[0])
    assert command[:2] == ["agentspec", "serve"] and command[-2:] == ["--port", "8000"]
    port = free_port()
    with serving(["agentspec.cli", *command[1:-1], str(port)], port, cwd=ROOT):
        client = blocks("python")[1].replace("127.0.0.1:8000", f"127.0.0.1:{port}")
        assert printed(client) == blocks("text")[1]


def test_the_compile_command_writes_the_package(tmp_path: Path) -> None:
    command = shlex.split(blocks("console")[1])
    assert command[:2] == ["agentspec", "compile"] and command[-2] == "-o"
    out = tmp_path / "calculator_env"
    done = subprocess.run(
        [sys.executable, "-m", "agentspec.cli", *command[1:-1], str(out)],
        cwd=ROOT,
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    for name in ("openenv.yaml", "models.py", "client.py", "server/app.py", "oracle/solve.py"):
        assert (out / name).is_file(), name
    assert os.access(out / "pyproject.toml", os.R_OK)


def test_the_mcp_style_environment_spec_pins_and_validates(tmp_path: Path) -> None:
    """The page's MCP-style spec and its commands, against OpenEnv's `MCPEnvironment`
    (tests/serve/openenv_mcp_server.py)."""
    commands = [shlex.split(line) for line in blocks("console")[2].splitlines()]
    # the page's one spec with an `mcp:` section (its other YAML blocks come before it)
    page_spec = next(block for block in blocks("yaml") if "\nmcp:\n" in block)
    assert [c[:2] for c in commands] == [["agentspec", "mcp"], ["agentspec", "validate"]]
    (tmp_path / "guesses.jsonl").write_text('{"id": "a", "secret": 7}\n')
    spec = tmp_path / commands[0][-1]
    port = free_port()
    server = ["uvicorn", "openenv_mcp_server:app", "--port", str(port)]
    with serving(server, port, cwd=ROOT / "tests" / "serve") as url:
        spec.write_text(page_spec.replace("http://127.0.0.1:8002", url))
        for command in commands:
            done = subprocess.run(
                [sys.executable, "-m", "agentspec.cli", *command[1:]],
                cwd=tmp_path,
                env=checkout_env(),
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, done.stdout + done.stderr
    assert spec.read_text() == page_spec.replace("http://127.0.0.1:8002", url), (
        "the page's pins are not what `agentspec mcp pin` reads from the environment"
    )
