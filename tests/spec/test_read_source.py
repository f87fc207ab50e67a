"""A spec is read from a regular file: a device or a FIFO given as the spec is
refused with E103 (the same for every command), never read or waited on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app
from agentspec.compiler.frontend import check_file
from agentspec.spec.load import read_source

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
needs_dev_null = pytest.mark.skipif(not Path("/dev/null").exists(), reason="no /dev/null")


@needs_fifo
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    # In a child process: reading a FIFO that no one writes would block forever.
    code = (
        "import sys\nfrom agentspec.spec.load import read_source\n"
        "source, problem = read_source(sys.argv[1])\n"
        "print(problem.code, problem.message)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(fifo)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.strip()
        == f"E103 cannot read {fifo}: it is a FIFO (named pipe), not a regular file"
    )


@needs_dev_null
def test_a_character_device_is_refused_like_any_non_file() -> None:
    source, problem = read_source("/dev/null")
    assert source is None and problem is not None
    assert problem.code == "E103"
    assert problem.message == "cannot read /dev/null: it is a character device, not a regular file"
    assert problem.hint == "give the path of a spec file (.yaml)"
    assert [d.code for d in check_file("/dev/null").diagnostics] == ["E103"]


def test_a_directory_and_a_bad_name_are_e103_too(tmp_path: Path) -> None:
    assert [d.code for d in check_file(tmp_path).diagnostics] == ["E103"]
    assert [d.code for d in check_file("bad\0name.yaml").diagnostics] == ["E103"]


@needs_dev_null
def test_compile_and_mcp_pin_say_the_same_of_a_device(tmp_path: Path) -> None:
    runner = CliRunner()
    for command in (
        ["compile", "/dev/null", "--output", str(tmp_path / "out")],
        ["mcp", "pin", "/dev/null"],
    ):
        result = runner.invoke(app, command)
        assert result.exit_code == 1, result.output
        assert "error[E103]: cannot read /dev/null: it is a character device" in result.output
