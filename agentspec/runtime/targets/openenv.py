"""`agentspec compile SPEC --target openenv -o DIR`: the spec as an OpenEnv package.

The package has OpenEnv's layout (``openenv.yaml``, ``models.py``, ``client.py``,
``server/app.py`` with ``app`` and ``main()``, ``pyproject.toml`` with the
``server`` script, a ``Dockerfile``, ``README.md``), the spec itself in ``spec/``
with the local files it reads at run time (:mod:`agentspec.compiler.package_files`: package data,
and in the Docker image) and ``oracle/solve.py``. Its server is agentspec's
(`agentspec serve --openenv`), so the package holds no copy of the runtime.

The ``validation:`` block of ``openenv.yaml`` is derived from the spec: its
tools, the task count of each split, and a reward range measured by playing the
spec's oracle and a random policy on the first samples (the oracle's lowest
episode reward sets ``oracle_tolerance``; the gap above the random policy's best
sets ``floor_margin``). Playing runs every tool, hook and MCP server of the spec:
without ``measure`` the range is not written, and a task count that only the
spec's own code can give (a user generator) is left out.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from agentspec.compiler.package_files import (
    copy_spec_files,
    package_data,
    package_folders,
)
from agentspec.core.source import GENERATED_YAML_MARK
from agentspec.runtime.compiled.scripts import has_oracle
from agentspec.runtime.serve.spec import ServedSpec
from agentspec.runtime.targets import TargetRequest, Written
from agentspec.runtime.targets.dependency import agentspec_requirement
from agentspec.stdlib.user import SpecCodeRefused

__all__ = ["write_openenv_package"]

MEASURED_SAMPLES = 8


def write_openenv_package(spec_path: Path, out: Path, *, measure: bool = True) -> list[Path]:
    """Write the package into ``out``; the paths written. ``measure``: play episodes
    to measure the reward range (runs the spec's tools and hooks)."""
    served = ServedSpec.unplayed(spec_path)
    name = served.name
    out.mkdir(parents=True, exist_ok=True)
    spec_dir = out / "spec"
    spec_dir.mkdir(exist_ok=True)
    copied = copy_spec_files(spec_path, spec_dir, exclude=[out])
    spec_copy = spec_dir / spec_path.name
    if spec_copy.resolve() != spec_path.resolve():
        shutil.copyfile(spec_path, spec_copy)
    package = _package(name)
    # spec/ (and its folders) and oracle/ are package data in packages of their own
    folders = package_folders(out, [spec_copy, *copied, out / "oracle" / "solve.py"])
    data = [f"spec/{f}" for f in package_data(spec_dir, [spec_copy, *copied])]
    files = {
        "openenv.yaml": _manifest(served, spec_path, measure=measure),
        "pyproject.toml": PYPROJECT.format(
            name=name,
            package=package,
            packages=json.dumps(
                [package, f"{package}.server", *(f"{package}.{f}" for f in folders)]
            ),
            data=json.dumps([*data, "oracle/*", "openenv.yaml"]),
            agentspec=json.dumps(agentspec_requirement(("openenv",))),
        ),
        "__init__.py": INIT.format(name=name, cls=_class_name(name)),
        "models.py": MODELS,
        "client.py": CLIENT.format(cls=_class_name(name)),
        "server/__init__.py": '"""The OpenEnv server of this package."""\n',
        # the file name as a literal: a name is text from anyone, never source
        "server/app.py": APP.format(name=name, spec=repr(spec_path.name)),
        "oracle/solve.py": SOLVE.format(spec=repr(spec_path.name)),
        "Dockerfile": DOCKERFILE,
        "README.md": README.format(name=name, description=served.description),
    }
    written = [spec_copy, *copied]
    for relative, text in files.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    (out / "outputs").mkdir(exist_ok=True)
    return written


def _manifest(served: ServedSpec, spec_path: Path, *, measure: bool) -> str:
    capabilities: dict[str, Any] = {
        "verifier": {"kind": "reward_channel"},
        "task_api": True,
        "declared_tools": [t["function"]["name"] for t in served.tool_schemas],
    }
    counts = _task_counts(served)
    if counts is not None:
        capabilities["declared_task_count"] = counts
    if has_oracle(served.module):
        capabilities["oracle"] = {"form": "script", "location": "oracle/solve.py"}
    manifest = {
        "spec_version": 1,
        "name": served.name,
        "version": "0.1.0",
        "type": "space",
        "runtime": "fastapi",
        "app": "server.app:app",
        "port": 8000,
        "validation": {
            "resources": {
                "cpu": 1.0,
                "memory_mb": 2048,
                "disk_mb": 2048,
                "episode_timeout_s": 600.0,
            },
            "network": {"mode": "no-network"},
            "capabilities": capabilities,
            "types": {"tags": ["agentspec", f"agentspec:{served.name}"]},
        },
    }
    if measure:
        served.tokenizer = served.task_tokenizer(spec_path)
        low, high, tolerance, margin = _reward_declaration(served)
        reward = {"range": [low, high], "oracle_tolerance": tolerance, "floor_margin": margin}
        manifest["validation"] = {"reward": reward, **manifest["validation"]}
        measured = (
            "# The reward range is measured: the oracle and a random policy on "
            f"{MEASURED_SAMPLES} samples.\n"
        )
    else:
        measured = (
            "# No reward range: measuring it plays the spec, which runs its own code;"
            " compile with --run-spec-code to measure it.\n"
        )
    header = (
        f"# OpenEnv manifest of the agentspec spec `{served.name}` "
        f"({GENERATED_YAML_MARK} --target openenv`).\n"
    ) + measured
    return header + yaml.safe_dump(manifest, sort_keys=False)


def _task_counts(served: ServedSpec) -> dict[str, int] | None:
    """The number of tasks of each split, or None where only the spec's code can say."""
    try:
        return {split: len(served.samples(split)) for split in served.splits()}
    except SpecCodeRefused:
        return None


def _reward_declaration(served: ServedSpec) -> tuple[float, float, float, float]:
    """(low, high, oracle_tolerance, floor_margin) from episodes played here."""
    from agentspec.runtime.commands.run import rollout

    samples = served.samples()[:MEASURED_SAMPLES] if served.splits() else []
    if not samples:
        return 0.0, 1.0, 0.0, 0.0
    module, tokenizer = served.module, served.tokenizer
    randoms = asyncio.run(rollout(module, samples, "random", task_tokenizer=tokenizer))
    random_totals = [t.total_reward for t in randoms]
    oracle_totals: list[float] = []
    if has_oracle(served.module):
        oracles = asyncio.run(rollout(module, samples, "oracle", task_tokenizer=tokenizer))
        oracle_totals = [t.total_reward for t in oracles]
    every = random_totals + oracle_totals
    low = round(min(0.0, *every), 6)
    high = round(max(oracle_totals or every), 6)
    if high <= low:
        high = low + 1.0
    tolerance = round(high - min(oracle_totals), 6) if oracle_totals else 0.0
    margin = round(max(0.0, high - max(random_totals)), 6)
    return low, high, tolerance, margin


def _class_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("-", "_").split("_")) + "Env"


def _package(name: str) -> str:
    return f"{name.replace('-', '_')}_env"


PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "openenv-agentspec-{name}"
version = "0.1.0"
description = "The agentspec spec `{name}` as an OpenEnv environment"
requires-python = ">=3.10"
dependencies = [{agentspec}, "openenv-core>=0.2.0"]

[project.scripts]
server = "{package}.server.app:main"

[tool.setuptools]
packages = {packages}
package-dir = {{ "{package}" = ".", "{package}.server" = "server" }}
include-package-data = true

[tool.setuptools.package-data]
"{package}" = {data}
"""

INIT = '''"""The agentspec spec `{name}` as an OpenEnv environment."""

from .client import {cls}
from .models import AgentspecAction, AgentspecObservation, AgentspecState

__all__ = ["AgentspecAction", "AgentspecObservation", "AgentspecState", "{cls}"]
'''

MODELS = '''"""The wire models: agentspec's own (docs/openenv.md describes every field)."""

from agentspec.runtime.serve.openenv_server import (
    AgentspecAction,
    AgentspecObservation,
    AgentspecState,
)

__all__ = ["AgentspecAction", "AgentspecObservation", "AgentspecState"]
'''

CLIENT = '''"""The typed OpenEnv client of this environment."""

from agentspec.runtime.serve.openenv_client import AgentspecEnvClient


class {cls}(AgentspecEnvClient):
    """A session of this environment: `reset(split=, index=)`, then `step(AgentspecAction(...))`."""


__all__ = ["{cls}"]
'''

APP = '''"""The OpenEnv server of the agentspec spec `{name}`.

    server --port 8000                      # this machine only (127.0.0.1)
    server --host 0.0.0.0 --port 8000       # every interface: see agentspec's docs/security.md
    uvicorn server.app:app --port 8000
"""

import argparse
from pathlib import Path

from agentspec.runtime.serve.openenv_server import build_app
from agentspec.runtime.serve.spec import ServedSpec
from agentspec.core.source import GENERATED_YAML_MARK

SPEC = Path(__file__).resolve().parent.parent / "spec" / {spec}

app = build_app(ServedSpec.load(SPEC))


def main(argv: list[str] | None = None) -> None:
    """The `server` command: serve on --host (default 127.0.0.1) and --port (8000)."""
    import uvicorn

    parser = argparse.ArgumentParser(prog="server", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="0.0.0.0: every interface")
    parser.add_argument("--port", type=int, default=8000)
    options = parser.parse_args(argv)
    uvicorn.run(app, host=options.host, port=options.port)


if __name__ == "__main__":
    main()
'''

SOLVE = '''"""The spec's oracle, played through a running server of this package.

    python oracle/solve.py --url http://localhost:8000 [--split train] [--samples 8]

Prints one line per episode; exits 1 unless every episode succeeded, 2 when it
cannot play (a split the spec does not have, no server at the URL).
"""

import argparse
import asyncio
import sys
from pathlib import Path

from agentspec.runtime.serve.openenv_client import play_oracle
from agentspec.runtime.serve.spec import ServedSpec, SessionError

SPEC = Path(__file__).resolve().parent.parent / "spec" / {spec}


def at_least_one(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{{value}}: play at least 1 sample")
    return value


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="http://localhost:8000")
    parser.add_argument("--split", default="train")
    parser.add_argument("--samples", type=at_least_one, default=8)
    options = parser.parse_args()
    ok = True
    try:
        # at most the split's samples (`--samples 8` of a split of 5 plays 5)
        count = min(options.samples, len(ServedSpec.load(SPEC).samples(options.split)))
        for index in range(count):
            last = asyncio.run(play_oracle(options.url, SPEC, options.split, index))
            print(f"{{last.sample_id}}: success={{last.success}} ending={{last.termination}}")
            ok = ok and last.success is not False
    except (SessionError, OSError) as exc:  # a bad split, a server that is not there
        print(f"error: {{exc}}", file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
'''

DOCKERFILE = """\
FROM python:3.11-slim
WORKDIR /app
COPY . /app
RUN pip install --no-cache-dir .
EXPOSE 8000
CMD ["uvicorn", "server.app:app", "--host", "0.0.0.0", "--port", "8000"]
"""

README = """\
# {name}: an agentspec spec as an OpenEnv environment

{description}

Written by `agentspec compile --target openenv`; the spec is in `spec/`, with the
files of its folder it reads when it runs (data, its own Python modules).

    pip install .
    uvicorn server.app:app --port 8000        # or: server --port 8000

Connect with any OpenEnv client (`GenericEnvClient`, or this package's typed
client), `reset(split="train", index=0)`, then `step({{"text": ...}})`. The wire
contract (actions, observations, named rewards, the Task API) is agentspec's
docs/openenv.md. `python oracle/solve.py --url http://localhost:8000` plays the
spec's oracle against a running server.
"""


def write(request: TargetRequest) -> Written:
    # playing episodes runs every tool: only where the spec has no code, or it may run
    measure = request.run_spec_code or not request.compiled.spec_code
    written = Written(write_openenv_package(request.spec, request.out, measure=measure))
    if not measure:
        written.notes.append(
            "the reward range in openenv.yaml is not measured: measuring plays the oracle"
            " and random episodes, which runs the spec's code; pass --run-spec-code to"
            " measure it"
        )
    return written
