"""The `agentspec` command line.

Start-up stays fast: each command imports what it needs inside its function,
and `validate`, `compile` and `schema` never import torch. Each module below
registers its commands on the one Typer `app`.
"""

from __future__ import annotations

import sys

from agentspec.cli import (  # noqa: F401 (registers commands)
    check,
    episodes,
    explore,
    project,
    prompt,
    serve,
    training,
)
from agentspec.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
    except ModuleNotFoundError as exc:  # a path no `require` guards: still one line
        from agentspec.cli.extras import missing_install

        command = " ".join(["agentspec", *[a for a in sys.argv[1:2] if not a.startswith("-")]])
        line = missing_install(command, exc.name)
        if line is None:
            raise
        print(f"error: {line}", file=sys.stderr)
        sys.exit(1)
