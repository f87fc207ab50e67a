from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app
from agentspec.spec.schema import schema_json

ROOT = Path(__file__).resolve().parents[2]
INVALID = ROOT / "tests" / "specs" / "invalid"
runner = CliRunner()

GITHUB = re.compile(
    r"^::(error|warning) file=[^,]+,line=\d+,col=\d+,endLine=\d+,endColumn=\d+,title=[EW]\d{3}::.+$"
)


def test_shipped_and_valid_specs_pass() -> None:
    result = runner.invoke(app, ["validate", str(ROOT / "specs"), str(ROOT / "tests/specs/valid")])
    assert result.exit_code == 0, result.output
    assert "0 invalid" in result.output


def test_invalid_spec_exits_1_and_prints_every_problem() -> None:
    path = INVALID / "schema_training_two_errors.yaml"
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 1
    assert result.output.count("error[E204]") == 2
    assert "^" in result.output and "hint: did you mean 'ppo'?" in result.output


def test_globs_and_directories() -> None:
    result = runner.invoke(app, ["validate", str(INVALID / "yaml_*.yaml")])
    assert result.exit_code == 1
    files = {line.split(":")[0] for line in result.output.splitlines() if "error[E" in line}
    assert len(files) == len(list(INVALID.glob("yaml_*.yaml")))


def test_a_file_named_with_glob_characters_is_that_file(tmp_path: Path) -> None:
    spec = tmp_path / "calculator[1].yaml"
    spec.write_text((ROOT / "specs" / "calculator.yaml").read_text())
    result = runner.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 0, result.output


def test_a_jsonl_source_that_is_a_folder_is_e914(tmp_path: Path) -> None:
    (tmp_path / "rows.jsonl").mkdir()
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "agentspec: 1\nname: t\ndata: {source: 'jsonl:rows.jsonl', fields: {q: str}}\n"
        "prompt: {user: '{{ sample.q }}'}\nrewards: {r: {on: final, value: 1}}\n"
    )
    result = runner.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 1
    assert (
        "error[E914]" in result.output
        and "is a folder: a `jsonl:` source is one file" in result.output
    )


@pytest.mark.parametrize(
    ("source", "content", "said"),
    [
        # the loader reads a `jsonl:` source as JSON lines whatever its name: validate did not
        ("jsonl:rows.txt", "name,answer\n", "rows.txt: line 1 is not JSON"),
        # an unreadable parquet file validated clean and failed the run
        ("parquet:rows.parquet", "not parquet\n", "rows.parquet cannot be read as parquet"),
        ("parquet:rows.txt", '{"q": "a"}\n', "rows.txt cannot be read as parquet"),
    ],
)
def test_data_validate_cannot_read_as_its_kind_is_e914(
    tmp_path: Path, source: str, content: str, said: str
) -> None:
    (tmp_path / source.split(":")[1]).write_text(content)
    spec = tmp_path / "s.yaml"
    spec.write_text(
        f"agentspec: 1\nname: t\ndata: {{source: '{source}', fields: {{q: str}}}}\n"
        "prompt: {user: '{{ sample.q }}'}\nrewards: {r: {on: final, value: 1}}\n"
    )
    result = runner.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 1
    assert "error[E914]" in result.output and said in result.output, result.output


def test_text_output_shows_the_first_200_diagnostics_of_a_spec(tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    rewards = "".join(f"  r{i}: {{on: final, value: 'x{i}'}}\n" for i in range(250))
    spec.write_text("agentspec: 1\nname: t\nprompt: {user: hi}\nrewards:\n" + rewards)
    result = runner.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 1
    assert result.output.count("error[E401]") == 200
    assert "… and 50 more in" in result.output and "(250 errors, 0 warnings)" in result.output
    as_json = runner.invoke(app, ["validate", str(spec), "--format", "json"])
    assert as_json.output.count('"E401"') == 250


def test_usage_errors_exit_2() -> None:
    assert runner.invoke(app, ["validate", "does/not/exist.yaml"]).exit_code == 2
    assert runner.invoke(app, ["validate", "nothing-matches-*.yaml"]).exit_code == 2
    assert runner.invoke(app, ["validate"]).exit_code == 2
    assert runner.invoke(app, ["validate", "--format", "xml", "specs"]).exit_code == 2


def test_github_format() -> None:
    result = runner.invoke(app, ["validate", "--format", "github", str(INVALID)])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line]
    assert len(lines) >= 40
    for line in lines:
        assert GITHUB.match(line), line


def test_json_format() -> None:
    result = runner.invoke(
        app, ["validate", "--format", "json", str(INVALID / "name_unknown_state.yaml")]
    )
    assert result.exit_code == 1
    records = json.loads(result.output)
    assert records[0]["code"] == "E402"
    assert records[0]["line"] == 17 and records[0]["column"] == 17
    assert records[0]["hint"] == "did you mean 'page'?"


def test_strict_turns_warnings_into_failures(tmp_path: Path) -> None:
    spec = (ROOT / "specs" / "calculator.yaml").read_text()
    spec = spec.replace("tools:\n", "state:\n  unused: {type: int}\ntools:\n")
    path = tmp_path / "warn.yaml"
    path.write_text(spec)
    assert runner.invoke(app, ["validate", str(path)]).exit_code == 0
    assert runner.invoke(app, ["validate", "--strict", str(path)]).exit_code == 1


def test_schema_command_and_committed_copy_in_sync(tmp_path: Path) -> None:
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.output)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].startswith("https://")
    committed = ROOT / "schema" / "agentspec-1.schema.json"
    assert committed.read_text() == schema_json(), (
        "run `agentspec schema -o schema/agentspec-1.schema.json`"
    )
    out = tmp_path / "s.json"
    assert runner.invoke(app, ["schema", "-o", str(out)]).exit_code == 0
    assert out.read_text() == schema_json()


def test_schema_accepts_the_shipped_specs() -> None:
    import jsonschema

    from agentspec.core.source import SourceFile
    from agentspec.spec.yaml_loader import load_yaml

    schema = json.loads(schema_json())
    for path in sorted((ROOT / "specs").glob("*.yaml")) + sorted(
        (ROOT / "tests/specs/valid").glob("*.yaml")
    ):
        data, _, _ = load_yaml(SourceFile(str(path), path.read_text()))
        jsonschema.validate(data, schema)


def test_validate_does_not_import_torch() -> None:
    code = (
        "import sys\n"
        "from agentspec.cli import app\n"
        "try:\n"
        f"    app(['validate', {str(ROOT / 'specs')!r}, {str(ROOT / 'tests/specs/valid')!r}, {str(INVALID)!r}])\n"
        "except SystemExit:\n"
        "    pass\n"
        "app_modules = [m for m in ('torch', 'transformers', 'verl', 'numpy') if m in sys.modules]\n"
        "print('HEAVY', app_modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert "HEAVY []" in out.stdout, out.stdout + out.stderr


IMPORTING_SPEC = """agentspec: 1
name: importing
data: {source: "jsonl:d.jsonl", fields: {q: str}}
prompt: {user: "{{ sample.q }}"}
functions:
  shell: {impl: "os:system", params: [str], returns: int}
  score: {impl: "stdlib:numeric_match"}
context: {policy: custom, custom: "mypkg.context:Policy"}
oracle: {hook: "mypkg.experts:solve"}
tools:
  run:
    description: Run.
    parameters: {cmd: {type: string}}
    returns: str(shell(args.cmd))
rewards:
  done: {on: final, value: "1.0"}
"""


def _importing_spec(tmp_path: Path) -> Path:
    """IMPORTING_SPEC beside its data file and the user package it names."""
    (tmp_path / "d.jsonl").write_text('{"q": "hello"}\n', encoding="utf-8")
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "context.py").write_text("class Policy: ...\n", encoding="utf-8")
    (package / "experts.py").write_text("def solve(sample): return []\n", encoding="utf-8")
    path = tmp_path / "importing.yaml"
    path.write_text(IMPORTING_SPEC, encoding="utf-8")
    return path


def test_list_imports_names_every_python_import_with_its_position(tmp_path: Path) -> None:
    path = _importing_spec(tmp_path)
    result = runner.invoke(app, ["validate", "--list-imports", str(path)])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if " imports " in line]
    text_lines = IMPORTING_SPEC.split("\n")

    def column(line: int, target: str) -> int:
        return text_lines[line - 1].index(f'"{target}"') + 1

    assert lines == [
        f"{path}:6:{column(6, 'os:system')}: imports os:system (functions.shell.impl)",
        f"{path}:8:{column(8, 'mypkg.context:Policy')}: imports mypkg.context:Policy"
        " (context.custom)",
        f"{path}:9:{column(9, 'mypkg.experts:solve')}: imports mypkg.experts:solve (oracle.hook)",
    ]
    plain = runner.invoke(app, ["validate", str(path)])
    assert " imports " not in plain.output  # only on request


def test_list_imports_in_json(tmp_path: Path) -> None:
    path = _importing_spec(tmp_path)
    result = runner.invoke(app, ["validate", "--list-imports", "--format", "json", str(path)])
    report = json.loads(result.stdout)
    assert report["diagnostics"] == []
    assert [(i["field"], i["module"], i["line"]) for i in report["imports"]] == [
        ("functions.shell.impl", "os", 6),
        ("context.custom", "mypkg.context", 8),
        ("oracle.hook", "mypkg.experts", 9),
    ]


def test_list_imports_names_server_commands_and_generator_sources() -> None:
    units = ROOT / "tests" / "mcp_tools" / "units.yaml"
    generated = ROOT / "tests" / "specs" / "valid" / "all_reward_events.yaml"
    result = runner.invoke(app, ["validate", "--list-imports", str(units), str(generated)])
    assert result.exit_code == 0, result.output
    assert f"{units}:18:14: runs python units_server.py (mcp.units.command)" in result.output
    assert f"{generated}:5:11: imports my_units.conversions:samples (data.source)" in result.output
    result = runner.invoke(app, ["validate", "--list-imports", "--format", "json", str(units)])
    (command,) = json.loads(result.stdout)["imports"]
    assert command["kind"] == "command" and command["module"] is None
    assert command["target"] == "python units_server.py"


def test_values_of_a_data_file_outside_the_spec_folder_are_not_repeated(tmp_path: Path) -> None:
    # validate runs in CI on specs from anyone: `jsonl:/home/ci/token.json` printed the token
    secret = tmp_path / "machine" / "cred.json"
    secret.parent.mkdir()
    secret.write_text('{"token": "SECRET-abc123"}\n')
    folder = tmp_path / "spec"
    folder.mkdir()
    spec = folder / "s.yaml"
    spec.write_text(
        f"agentspec: 1\nname: t\ndata: {{source: 'jsonl:{secret}', fields: {{token: int}}}}\n"
        "prompt: {user: hi}\nrewards: {r: {on: final, value: 1}}\n"
    )
    for output in ("text", "json"):
        result = runner.invoke(app, ["validate", str(spec), "--format", output])
        assert result.exit_code == 1
        assert "E907" in result.output and "SECRET" not in result.output
    (folder / "cred.json").write_text(secret.read_text())  # the spec's own data: shown
    spec.write_text(spec.read_text().replace(str(secret), "cred.json"))
    assert "'SECRET-abc123'" in runner.invoke(app, ["validate", str(spec)]).output
