"""Virtual environments of their own, for packages that cannot share the project's.

TRL (its own transformers), `openenv` 0.10 (pins `mcp<2`) and verifiers 0.4
(pins `mcp==2.0.0`) each get a venv under `runs/bench-venvs/NAME`, created on
first use and reused while the installs it was made with stay the same (a stamp
file lists them). torch, when asked for, is the same local CPU build as the
project's; nothing is installed into the project's own environment. The
benchmarks and the slow interop tests share this one mechanism.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENVS = ROOT / "runs" / "bench-venvs"
CONSTRAINTS = ROOT / "constraints.txt"


def side_python(name: str, installs: Sequence[Sequence[str]], venv: Path | None = None) -> Path:
    """The Python of venv `name`, made on first use: one `pip install` per entry of
    `installs` (each under the project's constraints file). A venv made with other
    installs is made again. Two processes asking at once (two test workers) make it
    once: the second waits on a lock, then finds it made."""
    venv = venv or VENVS / name
    python = venv / "bin" / "python"
    stamp = venv / ".agentspec-installed"
    wanted = "\n".join(" ".join(step) for step in installs) + "\n"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if stamp.is_file() and stamp.read_text(encoding="utf-8") == wanted and python.is_file():
            return python
        print(f"creating the {name} virtual environment in {venv} (once)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        for step in installs:
            pip = [str(python), "-m", "pip", "install", "-q", "-c", str(CONSTRAINTS)]
            subprocess.run([*pip, *step], check=True)
        stamp.write_text(wanted, encoding="utf-8")
    return python


def agentspec_requirements() -> list[str]:
    """agentspec's own dependencies (no extras): a side venv runs this checkout's code
    from `PYTHONPATH`, so it needs them, not an installed agentspec."""
    import tomllib  # Python 3.11+, as the benchmarks and the slow tests run on

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return list(project["dependencies"])


def trl_installs() -> list[list[str]]:
    """TRL's venv: the project's torch build, then TRL, transformers and what this
    checkout's agentspec needs (the generated TRL environments import it)."""
    return [["torch==2.13.0"], ["trl", "transformers", *agentspec_requirements()]]


def verifiers_installs() -> list[list[str]]:
    """verifiers 0.4's venv (it pins mcp==2.0.0, which agentspec's [mcp] cannot share):
    verifiers, uv (its harness programs run under uv) and agentspec's own needs."""
    return [["verifiers==0.4.*", "uv", *agentspec_requirements()]]
