"""`agentspec compile --target trl | verifiers | openenv`: the package holds the local files
its spec reads when it runs (its data, its own Python modules), so it works from its own
folder — and installed — with the spec's folder gone. A relative path that leaves the
spec's folder is an error that says what to do; machine paths are read where they are."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app
from agentspec.compiler.package_files import PackageFileError, spec_files

from .helpers import ROOT, checkout_env

SPEC = """\
agentspec: 1
name: {name}
description: Convert an amount to grams.
data:
{data}
  fields: {{id: str, amount: float, unit: str, answer: float}}
prompt:
  system: Convert with the tools, then answer <answer>N</answer>.
  user: "Convert {{{{ sample.amount }}}} {{{{ sample.unit }}}} to grams."
functions:
  convert: {{impl: "unitlib:convert", params: [float, str], returns: int}}
  factor: {{impl: "unitpkg.factors:make", config: {{table: data/rates.json}}, params: [str], returns: float}}
tools:
  convert:
    description: Convert an amount to grams.
    parameters: {{amount: {{type: number}}, unit: {{type: string}}}}
    returns: convert(args.amount, args.unit)
  factor:
    description: Grams per unit.
    parameters: {{unit: {{type: string}}}}
    returns: factor(args.unit)
episode: {{max_steps: 3}}
rewards:
  correct: {{on: final, value: "1.0 if number(action.text) == sample.answer else 0.0"}}
oracle:
  - '<tool_call>{{"name": "convert", "arguments": {{"amount": {{{{ sample.amount }}}}, "unit": "{{{{ sample.unit }}}}"}}}}</tool_call>'
  - "<answer>{{{{ sample.answer }}}}</answer>"
"""

# A spec folder as a user has it: data beside the spec, a function module, a package
# folder whose factory reads a file named in `config`, and a generator that imports a
# helper module of the same folder and reads a file named in `data.params`.
PROJECT = {
    "data/train.jsonl": (
        '{"id": "a", "amount": 2, "unit": "kg", "answer": 2000}\n'
        '{"id": "b", "amount": 3, "unit": "lb", "answer": 1361}\n'
    ),
    "data/rates.json": '{"kg": 1000, "lb": 453.6, "oz": 28.35}\n',
    "data/catalog.json": '[{"amount": 1, "unit": "oz"}, {"amount": 4, "unit": "kg"}]\n',
    "unitlib.py": (
        "RATES = {'kg': 1000, 'lb': 453.6, 'oz': 28.35}\n\n\n"
        "def convert(amount, unit):\n"
        "    return round(amount * RATES[unit])\n"
    ),
    "unitpkg/__init__.py": "",
    "unitpkg/factors.py": (
        "import json\n\n\n"
        "def make(table):\n"
        "    with open(table, encoding='utf-8') as handle:\n"
        "        rates = json.load(handle)\n"
        "    return lambda unit: float(rates[unit])\n"
    ),
    "shophelp.py": (
        "from unitlib import convert\n\n\n"
        "def rows(items, split):\n"
        "    for i, item in enumerate(items):\n"
        "        answer = float(convert(item['amount'], item['unit']))\n"
        "        yield {'id': f'{split}-{i}', **item, 'answer': answer}\n"
    ),
    "shopgen.py": (
        "import json\n\n"
        "import shophelp\n\n\n"
        "def samples(split='train', catalog=''):\n"
        "    with open(catalog, encoding='utf-8') as handle:\n"
        "        yield from shophelp.rows(json.load(handle), split)\n"
    ),
    "file_spec.yaml": SPEC.format(name="shop_file", data='  source: "jsonl:data/train.jsonl"'),
    "gen_spec.yaml": SPEC.format(
        name="shop_gen",
        data='  source: "generator:shopgen:samples"\n  params: {catalog: data/catalog.json}',
    ),
    "notes.txt": "not named by the spec: never copied\n",
}
USER_MODULES = ("unitlib", "unitpkg", "unitpkg.factors", "shopgen", "shophelp")

# What each compiled spec plays: its train split's sample ids, then convert and factor on
# its first sample. The file's two rows are split as `agentspec train` splits them: b is
# held out (the served `test` split).
EXPECTED = {
    "shop_file": {"ids": ["a"], "convert": "2000", "factor": "1000.0"},
    "shop_gen": {"ids": ["train-0", "train-1"], "convert": "28", "factor": "1000.0"},
}
COPIED = {  # the files of the spec's folder each package holds beside its spec
    "shop_file": {
        "file_spec.yaml",
        "data/train.jsonl",
        "data/rates.json",
        "unitlib.py",
        "unitpkg/__init__.py",
        "unitpkg/factors.py",
    },
    "shop_gen": {
        "gen_spec.yaml",
        "data/catalog.json",
        "data/rates.json",
        "unitlib.py",
        "unitpkg/__init__.py",
        "unitpkg/factors.py",
        "shopgen.py",
        "shophelp.py",
    },
}

# Each program uses one compiled package from outside its folder, the way its trainer
# does, and prints what it played as JSON. The user modules of a package are forgotten
# before the next one loads, so each package must bring its own.
PRELUDE = """\
import json, sys
from pathlib import Path

USER_MODULES = {modules!r}


def forget(folder):
    for name in USER_MODULES:
        sys.modules.pop(name, None)
    folder = str(Path(folder).resolve())
    sys.path[:] = [p for p in sys.path if not p.startswith(folder)]


played = {{}}
for name, out in json.loads(sys.argv[1]).items():
    out = Path(out)
"""
PLAY = {
    # TRL: the generated module imported from its folder; dataset() and the tool methods
    "trl": """\
    sys.path.insert(0, str(out))
    module = __import__(name + "_trl")
    rows = module.dataset()
    env = getattr(module, "".join(p.capitalize() for p in name.split("_")) + "Env")()
    env.reset(**rows[0])
    played[name] = {
        "ids": [row["id"] for row in rows],
        "convert": env.convert(rows[0]["amount"], rows[0]["unit"]),
        "factor": env.factor("kg"),
    }
    forget(out)
""",
    # verifiers: the package's spec loaded as its served() does, one episode played
    "verifiers": """\
    from agentspec.runtime.serve.session import SyncEpisodeSession
    from agentspec.runtime.serve.spec import ServedSpec

    (spec,) = (out / (name + "_vf")).glob("*.yaml")
    served = ServedSpec.load(spec)
    session = SyncEpisodeSession(served)
    first = served.samples()[0]
    session.start(index=0)
    calls = [
        {"name": "convert", "arguments": {"amount": first["amount"], "unit": first["unit"]}},
        {"name": "factor", "arguments": {"unit": "kg"}},
    ]
    turn = session.act("", calls)
    played[name] = {
        "ids": [sample["id"] for sample in served.samples()],
        "convert": turn.tool_results[0]["text"],
        "factor": turn.tool_results[1]["text"],
    }
    forget(out)
""",
    # OpenEnv: the package's server/app.py, an episode over its WebSocket
    "openenv": """\
    import importlib.util
    from fastapi.testclient import TestClient

    loader = importlib.util.spec_from_file_location(name + "_app", out / "server" / "app.py")
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    client = TestClient(module.app)
    listed = client.post("/" + name + "/tasks", json={"split": "train"}).json()["tasks"]
    with client.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"index": 0}})
        first = ws.receive_json()["data"]["observation"]
        assert first["sample_id"] == listed[0]["id"], first
        calls = [
            {"name": "convert", "arguments": {"amount": listed[0]["amount"], "unit": listed[0]["unit"]}},
            {"name": "factor", "arguments": {"unit": "kg"}},
        ]
        ws.send_json({"type": "step", "data": {"text": "", "tool_calls": calls}})
        results = ws.receive_json()["data"]["observation"]["tool_results"]
    played[name] = {
        "ids": [task["id"] for task in listed],
        "convert": results[0]["text"],
        "factor": results[1]["text"],
    }
    forget(out)
""",
}
EPILOGUE = "print(json.dumps(played))\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The spec's folder. Compiling here puts it on `sys.path` and imports its modules;
    both are undone afterwards."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    folder = tmp_path / "project"
    for relative, text in PROJECT.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text, encoding="utf-8")
    yield folder
    for name in USER_MODULES:
        sys.modules.pop(name, None)


def compile_spec(spec: Path, target: str, out: Path) -> str:
    result = CliRunner().invoke(app, ["compile", str(spec), "--target", target, "-o", str(out)])
    assert result.exit_code == 0, result.output
    return result.output


def spec_folder(out: Path, target: str, name: str) -> Path:
    """Where a package keeps the spec (its copy's folder)."""
    return {"trl": out, "verifiers": out / f"{name}_vf", "openenv": out / "spec"}[target]


def play(target: str, outs: dict[str, Path], cwd: Path) -> dict[str, object]:
    program = PRELUDE.format(modules=USER_MODULES) + PLAY[target] + EPILOGUE
    ran = subprocess.run(
        [sys.executable, "-c", program, json.dumps({k: str(v) for k, v in outs.items()})],
        cwd=cwd,
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    played: dict[str, object] = json.loads(ran.stdout.splitlines()[-1])
    return played


@pytest.mark.parametrize("target", ["trl", "verifiers", "openenv"])
def test_the_package_works_from_its_own_folder_with_the_spec_folder_gone(
    project: Path, tmp_path: Path, target: str
) -> None:
    outs, written = {}, {}
    for name, spec in (("shop_file", "file_spec.yaml"), ("shop_gen", "gen_spec.yaml")):
        outs[name] = tmp_path / "build" / f"{target}-{name}"
        written[name] = compile_spec(project / spec, target, outs[name])
    shutil.rmtree(project)  # nothing may still read the spec's own folder
    assert play(target, outs, cwd=tmp_path) == EXPECTED
    generated = {"trl": "{}_trl.py", "verifiers": "__init__.py", "openenv": None}[target]
    for name, out in outs.items():
        folder = spec_folder(out, target, name)
        held = {
            p.relative_to(folder).as_posix()
            for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        }
        mine = {generated.format(name)} if generated else set()
        assert held == COPIED[name] | mine  # what the spec reads, no more (not notes.txt)
        for relative in COPIED[name]:  # `compile` names every file it wrote
            assert f"wrote {folder / relative}" in written[name]


@pytest.mark.slow
def test_the_installed_packages_hold_the_files(project: Path, tmp_path: Path) -> None:
    """pip installs the copied files as package data (what the OpenEnv Dockerfile's
    `pip install .` and `pip install build/NAME_vf` do), and the installed spec loads."""
    pytest.importorskip("setuptools")
    site = tmp_path / "site"
    for target in ("verifiers", "openenv"):
        out = tmp_path / "build" / target
        compile_spec(project / "gen_spec.yaml", target, out)
        wheels = tmp_path / "wheels" / target
        pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index"]
        built = subprocess.run(
            [*pip, "--no-build-isolation", "-w", str(wheels), str(out)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert built.returncode == 0, built.stderr[-3000:]
        assert "deprecat" not in built.stderr.lower(), built.stderr[-3000:]
        (wheel,) = wheels.glob("*.whl")
        package = {"verifiers": "shop_gen_vf", "openenv": "shop_gen_env/spec"}[target]
        names = set(zipfile.ZipFile(wheel).namelist())
        assert {f"{package}/{relative}" for relative in COPIED["shop_gen"]} <= names
        with zipfile.ZipFile(wheel) as archive:  # as `pip install --target` lays it out
            archive.extractall(site)
    shutil.rmtree(project)
    shutil.rmtree(tmp_path / "build")
    program = """\
import json, sys
from pathlib import Path
from agentspec.runtime.serve.spec import ServedSpec

site = Path(sys.argv[1])
ids = {}
for spec in (site / "shop_gen_vf" / "gen_spec.yaml", site / "shop_gen_env" / "spec" / "gen_spec.yaml"):
    for name in ("unitlib", "shopgen", "shophelp"):
        sys.modules.pop(name, None)
    served = ServedSpec.load(spec)
    ids[spec.parent.name] = [sample["answer"] for sample in served.samples()]
print(json.dumps(ids))
"""
    ran = subprocess.run(
        [sys.executable, "-c", program, str(site)],
        cwd=tmp_path,
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    assert json.loads(ran.stdout) == {"shop_gen_vf": [28.0, 4000.0], "spec": [28.0, 4000.0]}


@pytest.mark.parametrize("target", ["trl", "verifiers", "openenv"])
def test_a_relative_path_outside_the_spec_folder_is_an_error_that_says_what_to_do(
    project: Path, tmp_path: Path, target: str
) -> None:
    shutil.copy(project / "data" / "train.jsonl", tmp_path / "outside.jsonl")
    spec = project / "file_spec.yaml"
    spec.write_text(
        spec.read_text().replace("jsonl:data/train.jsonl", "jsonl:../outside.jsonl"),
        encoding="utf-8",
    )
    out = tmp_path / "build"
    result = CliRunner().invoke(app, ["compile", str(spec), "--target", target, "-o", str(out)])
    assert result.exit_code == 1
    message = " ".join(result.output.split())
    assert "data.source: ../outside.jsonl is outside the spec's folder" in message
    assert "Move it into the spec's folder" in message and "absolute path" in message
    assert not [p for p in out.rglob("*") if p.is_file()]  # nothing half-written


@pytest.mark.parametrize("target", ["trl", "verifiers", "openenv"])
@pytest.mark.parametrize("linked", ["data/rates.json", "data"])
def test_a_link_out_of_the_spec_folder_is_an_error_not_a_copy(
    project: Path, tmp_path: Path, target: str, linked: str
) -> None:
    # `cfg -> /etc/passwd` beside the spec: the package carried the machine's file
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "rates.json").write_text('{"kg": 1}\n', encoding="utf-8")
    (secret / "train.jsonl").write_text((project / "data" / "train.jsonl").read_text())
    (secret / "catalog.json").write_text((project / "data" / "catalog.json").read_text())
    place = project / linked
    shutil.rmtree(place) if place.is_dir() else place.unlink()
    place.symlink_to(secret / "rates.json" if linked.endswith(".json") else secret)
    out = tmp_path / "build"
    spec = project / "file_spec.yaml"
    result = CliRunner().invoke(app, ["compile", str(spec), "--target", target, "-o", str(out)])
    assert result.exit_code == 1, result.output
    message = " ".join(result.output.split())
    assert f"is a link to {secret.resolve()}" in message and "outside the spec's folder" in message
    assert not list(out.rglob("rates.json"))


def test_a_module_of_gigabytes_is_not_read_to_find_its_imports(tmp_path: Path) -> None:
    from agentspec.compiler.package_files import _imported_modules
    from agentspec.compiler.static_signature import MAX_SOURCE_BYTES

    big = tmp_path / "big.py"
    with big.open("wb") as handle:  # sparse: no disk used, a MemoryError to read whole
        handle.truncate(3 << 30)
    assert big.stat().st_size > MAX_SOURCE_BYTES
    assert _imported_modules(big) == []


def test_machine_paths_are_read_where_they_are_and_not_copied(
    project: Path, tmp_path: Path
) -> None:
    data = tmp_path / "elsewhere" / "train.jsonl"
    data.parent.mkdir()
    shutil.move(project / "data" / "train.jsonl", data)
    spec = project / "file_spec.yaml"
    text = spec.read_text()
    spec.write_text(text.replace("jsonl:data/train.jsonl", f"jsonl:{data}"), encoding="utf-8")
    assert "data/train.jsonl" not in {f.relative.as_posix() for f in spec_files(spec)}
    for source in ("jsonl:${AGENTSPEC_DATA}/x/train.jsonl", "jsonl:~/train.jsonl"):
        spec.write_text(text.replace("jsonl:data/train.jsonl", source), encoding="utf-8")
        fields = {f.field for f in spec_files(spec)}
        assert fields == {
            "functions.convert.impl",
            "functions.factor.impl",
            "functions.factor.config.table",
        }
    spec.write_text(text.replace("jsonl:data/train.jsonl", f"jsonl:{data}"), encoding="utf-8")
    out = tmp_path / "build"
    compile_spec(spec, "trl", out)
    assert not (out / "data" / "train.jsonl").exists()
    shutil.rmtree(project)
    assert play("trl", {"shop_file": out}, cwd=tmp_path)["shop_file"] == EXPECTED["shop_file"]


def test_compiling_into_the_spec_folder_copies_nothing(project: Path) -> None:
    before = sorted(p for p in project.rglob("*") if "__pycache__" not in p.parts)
    written = compile_spec(project / "file_spec.yaml", "trl", project)
    wrote = [project / "file_spec.yaml", project / "shop_file_trl.py"]
    assert written.splitlines() == [f"wrote {path}" for path in wrote]
    after = sorted(p for p in project.rglob("*") if "__pycache__" not in p.parts)
    assert after == sorted([*before, project / "shop_file_trl.py"])


def test_an_mcp_server_command_brings_its_program_and_the_spec_its_data() -> None:
    spec = ROOT / "tests" / "mcp_tools" / "units.yaml"
    found = {f.relative.as_posix(): f.field for f in spec_files(spec)}
    assert found == {
        "data/conversions.jsonl": "data.source",
        "units_server.py": "mcp.units.command",
    }


def test_an_mcp_command_outside_the_spec_folder_is_an_error(project: Path) -> None:
    (project.parent / "server.py").write_text("", encoding="utf-8")
    spec = project / "file_spec.yaml"
    spec.write_text(
        spec.read_text() + "mcp:\n  far:\n    command: [python, ../server.py]\n    tools: {}\n",
        encoding="utf-8",
    )
    with pytest.raises(PackageFileError, match=r"mcp\.far\.command: \.\./server\.py is outside"):
        spec_files(spec)


def test_the_python_target_writes_only_the_module_and_its_manifest(
    project: Path, tmp_path: Path
) -> None:
    out = tmp_path / "build"
    CliRunner().invoke(app, ["compile", str(project / "file_spec.yaml"), "-o", str(out)])
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "shop_file_spec.py"]


def test_every_kind_of_reference_is_found(project: Path) -> None:
    """`module:attr` in every field that takes one (a namespace package too), an MCP
    command's `-m MODULE` and `--option=FILE`, and nothing for `stdlib:` or agentspec."""
    files = {
        "oraclelib.py": "import agentspec\n",
        "ctxns/policy.py": "",  # a namespace package: no __init__.py
        "adapters.py": "",
        "mcpsrv/__init__.py": "",
        "mcpsrv/main.py": "from . import tools\n",
        "mcpsrv/tools.py": "",
        "srv.json": "{}",
    }
    for relative, text in files.items():
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_text(text, encoding="utf-8")
    spec = project / "every_kind.yaml"
    spec.write_text(
        """\
agentspec: 1
name: every_kind
data: {source: "jsonl:data/train.jsonl"}
prompt: {user: Hello.}
functions:
  convert: {impl: "unitlib:convert"}
  exact: {impl: "stdlib:exact_match"}
  ours: {impl: "agentspec.stdlib.text:normalize_answer"}
environment: {adapter: "adapters:Make"}
context: {policy: custom, custom: "ctxns.policy:build"}
oracle: {hook: "oraclelib:solve"}
mcp:
  srv: {command: "python -m mcpsrv.main --config=srv.json ."}
""",
        encoding="utf-8",
    )
    found = {f.relative.as_posix(): f.field for f in spec_files(spec)}
    assert found == {
        "adapters.py": "environment.adapter",
        "ctxns": "context.custom",
        "data/train.jsonl": "data.source",
        "mcpsrv": "mcp.srv.command",
        "oraclelib.py": "oracle.hook",
        "srv.json": "mcp.srv.command",
        "unitlib.py": "functions.convert.impl",
    }
