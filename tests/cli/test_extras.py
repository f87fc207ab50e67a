"""A command whose optional install is missing says which, in one line.

Here the missing packages are hidden from a fresh interpreter (`sys.modules[name]
= None` is what Python itself uses for "not importable"), so each command runs
its real code up to the check; `test_install.py` runs the same commands in a
real plain install.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentspec.cli.extras import missing_install

ROOT = Path(__file__).resolve().parents[2]
SPEC = str(ROOT / "specs" / "calculator.yaml")
TRAIN = "needs the train extra: pip install 'agentspec-rl[train]' (torch is not installed)"
VERL = "needs the verl extra: pip install 'agentspec-rl[verl]' (verl is not installed)"

COMMANDS = [
    (["train", SPEC], f"agentspec train {TRAIN}"),
    (["train", SPEC, "--backend", "verl"], f"agentspec train --backend verl {VERL}"),
    (["train", SPEC, "--backend", "verl", "--dry-run"], f"agentspec train --backend verl {VERL}"),
    (["eval", SPEC, "--checkpoint", "runs/x"], f"agentspec eval --checkpoint {TRAIN}"),
    (["eval", SPEC, "--policy", "hf:runs/x"], f"agentspec eval --policy hf:runs/x {TRAIN}"),
    (["run", SPEC, "--policy", "hf:runs/x"], f"agentspec run --policy hf:runs/x {TRAIN}"),
    (["run", SPEC, "--policy", "smollm2"], f"agentspec run --policy smollm2 {TRAIN}"),
]


@pytest.mark.parametrize(
    ("args", "line"), COMMANDS, ids=[" ".join(c[0][:1] + c[0][2:]) for c in COMMANDS]
)
def test_a_missing_extra_is_one_line(args: list[str], line: str, tmp_path: Path) -> None:
    hidden = ["torch", "transformers", "verl", "ray"]
    code = (
        "import sys\n"
        f"for name in {hidden!r}:\n"
        "    sys.modules[name] = None\n"
        f"sys.argv = ['agentspec', *{args!r}]\n"
        "from agentspec.cli import main\n"
        "main()\n"
    )
    env = {**os.environ, "AGENTSPEC_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.splitlines() == [f"error: {line}"]


def test_a_module_no_check_foresaw_still_names_its_install() -> None:
    assert missing_install("agentspec train", "matplotlib.pyplot") == (
        "agentspec train needs the train extra: pip install 'agentspec-rl[train]' "
        "(matplotlib is not installed)"
    )
    assert missing_install("agentspec run", "mcp") == (
        "agentspec run needs the mcp extra: pip install 'agentspec-rl[mcp]' (mcp is not installed)"
    )
    assert missing_install("agentspec run", "my_own_module") is None  # the user's: a real error
