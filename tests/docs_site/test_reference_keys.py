"""The language reference documents the keys a spec writes: a field with an alias (a
guard's `if`, whose Python name is `condition`) is shown by its alias, for every section."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

from agentspec.compiler.frontend import check_file

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def gen_reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_gen_reference", DOCS / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def documented_keys(page: str, section: str) -> list[str]:
    body = page.split(f"### {section}\n", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    return re.findall(r"^\| `([^`]+)` \|", body, flags=re.M)


def test_every_section_documents_the_keys_a_spec_writes() -> None:
    """The keys of each section's table are the keys its JSON Schema (what editors
    check and the loader accepts) lists: aliases, not Python names."""
    module = gen_reference()
    page = module.render()
    for cls, _ in module.SECTIONS:
        accepted = list(cls.model_json_schema(by_alias=True)["properties"])
        assert documented_keys(page, cls.__name__) == accepted, cls.__name__


def test_the_guard_key_is_if(tmp_path: Path) -> None:
    page = gen_reference().render()
    assert documented_keys(page, "GuardSpec") == ["if", "message"]
    spec = """\
agentspec: 1
name: guarded
data: {source: generator:arithmetic, fields: {question: str, answer: int}}
prompt: {user: "{{ sample.question }}"}
state:
  calls: {type: int, initial: 0}
tools:
  count:
    description: Count.
    parameters: {}
    when: {KEY: state.calls < 3, message: no more}
    effect: [state.calls = state.calls + 1]
rewards:
  done: {on: final, value: "1.0 if state.calls > 0 else 0.0"}
"""
    path = tmp_path / "guarded.yaml"
    path.write_text(spec.replace("KEY", "if"), encoding="utf-8")
    documented = check_file(path)
    assert documented.ok, [d.message for d in documented.diagnostics]
    path.write_text(spec.replace("KEY", "condition"), encoding="utf-8")
    python_name = check_file(path)
    assert {d.code for d in python_name.errors} >= {"E201", "E202"}
