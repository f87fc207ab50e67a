"""The documentation: generated pages are current, the nav lists every page, and
`mkdocs build --strict` passes."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from agentspec.compiler.builtins import BUILTINS, EFFECT_CALLS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def load_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"docs_{name}", DOCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_language_reference_is_current() -> None:
    module = load_script("gen_reference")
    page = (DOCS / "reference.md").read_text(encoding="utf-8")
    assert page == module.render(), "docs/reference.md is stale: run `python docs/gen_reference.py`"


def test_language_reference_covers_every_field_and_function() -> None:
    module = load_script("gen_reference")
    page = (DOCS / "reference.md").read_text(encoding="utf-8")
    for cls, _ in module.SECTIONS:
        section = page.split(f"### {cls.__name__}\n", 1)[1].split("\n### ", 1)[0]
        for name, field in cls.model_fields.items():
            key = field.alias or name  # the key a spec writes (a guard's `if`)
            row = next(line for line in section.splitlines() if line.startswith(f"| `{key}` |"))
            assert (field.description or "").split("`")[0][:30] in row
    for name in [*BUILTINS, *EFFECT_CALLS]:
        assert f"| `{name}` |" in page
    grammar = (ROOT / "agentspec/compiler/grammar.lark").read_text(encoding="utf-8")
    assert grammar.rstrip() in page


def test_recipe_pages_are_current() -> None:
    module = load_script("gen_recipes")
    pages = module.render()
    assert set(pages) == {p.name for p in (DOCS / "recipes").glob("*.md")}, (
        "docs/recipes is stale: run `python docs/gen_recipes.py`"
    )
    for name, text in pages.items():
        current = (DOCS / "recipes" / name).read_text(encoding="utf-8")
        assert current == text, f"docs/recipes/{name} is stale: run `python docs/gen_recipes.py`"


def nav_pages(nav: Any) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [p for item in nav for p in nav_pages(item)]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in nav_pages(value)]
    return []


def test_nav_lists_every_page_and_every_page_exists() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    listed = nav_pages(config["nav"])
    on_disk = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    missing = [p for p in listed if not (DOCS / p).is_file()]
    assert not missing, f"pages in mkdocs.yml's nav that do not exist: {missing}"
    assert sorted(listed) == on_disk, "every page under docs/ must be in mkdocs.yml's nav"
    assert {"errors.md", "reference.md", "verl.md", "recipes/index.md"} <= set(listed)


@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path: Path) -> None:
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    if mkdocs is None:
        pytest.fail("mkdocs is not installed: pip install mkdocs (make docs does this)", False)
    result = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "reference" / "index.html").is_file()
    assert (tmp_path / "site" / "recipes" / "webshop" / "index.html").is_file()


def test_library_page_is_current() -> None:
    module = load_script("gen_library")
    page = (DOCS / "library.md").read_text(encoding="utf-8")
    assert page == module.render(), "docs/library.md is stale: run `python docs/gen_library.py`"


def code_blocks(page: str, heading: str, language: str) -> list[str]:
    import re

    section = page.split(heading + "\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


def test_every_spec_in_the_docs_validates() -> None:
    import re

    from agentspec.compiler.frontend import check_source
    from agentspec.core.source import SourceFile

    found = 0
    for page in sorted(DOCS.rglob("*.md")):
        for i, block in enumerate(re.findall(r"```ya?ml\n(.*?)```", page.read_text(), re.S)):
            if "agentspec: 1" in block:
                found += 1
                result = check_source(SourceFile(f"{page.name}#{i}", block), deep=False)
                assert result.ok, [(d.code, d.message) for d in result.diagnostics]
    assert found >= 8


SPEC_HEAD = """\
agentspec: 1
name: convert
prompt: {user: "How many metres are {{ sample.km }} km?"}
rewards:
  correct: {on: final, value: "1.0 if number(action.text) == sample.m else 0.0"}
"""


def test_the_user_generator_example_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentspec.compiler.build import import_spec
    from agentspec.compiler.frontend import check_file

    page = (DOCS / "library.md").read_text(encoding="utf-8")
    (python,) = code_blocks(page, "### Your own generator", "python")
    (data,) = code_blocks(page, "### Your own generator", "yaml")
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "units.py").write_text(python, encoding="utf-8")
    spec = folder / "convert.yaml"
    spec.write_text(SPEC_HEAD + data, encoding="utf-8")
    result = check_file(spec, import_user_code=True)
    assert result.ok and not result.diagnostics, [d.message for d in result.diagnostics]
    monkeypatch.setenv("AGENTSPEC_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)  # not the spec's folder: the module is still found
    samples = import_spec(spec).load_samples()
    assert len(samples) == 500 and samples[0]["m"] == samples[0]["km"] * 1000


def test_the_library_function_example_validates(tmp_path: Path) -> None:
    from agentspec.compiler.frontend import check_file

    page = (DOCS / "library.md").read_text(encoding="utf-8")
    (functions,) = code_blocks(page, "## Library functions (`impl: stdlib:NAME`)", "yaml")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "corpus.jsonl").write_text(
        '{"title": "Louvre", "text": "A museum in Paris."}\n', encoding="utf-8"
    )
    spec = tmp_path / "wiki.yaml"
    head = SPEC_HEAD.replace(
        "rewards:", "data: {source: jsonl:data/corpus.jsonl, fields: {title: str}}\nrewards:"
    )
    head = head.replace("sample.km", "sample.title").replace("sample.m", "sample.title")
    spec.write_text(
        head.replace(
            "rewards:",
            functions + "tools:\n  search:\n    description: Search.\n"
            "    parameters: {query: {type: string}}\n    returns: search(args.query)\nrewards:",
        ),
        encoding="utf-8",
    )
    result = check_file(spec)
    assert result.ok and not result.errors, [d.message for d in result.diagnostics]


def test_the_scripted_policy_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from typer.testing import CliRunner

    from agentspec.cli import app

    page = (DOCS / "library.md").read_text(encoding="utf-8")
    (script,) = code_blocks(page, "## Scripted policies (`--policy scripted:FILE`)", "text")
    path = tmp_path / "turns.txt"
    path.write_text(script, encoding="utf-8")
    monkeypatch.setenv("AGENTSPEC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "run",
            str(ROOT / "specs" / "calculator.yaml"),
            "--policy",
            f"scripted:{path}",
            "-n",
            "2",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    for line in (out / "trajectories.jsonl").read_text().splitlines():
        steps = json.loads(line)["steps"]
        assert len(steps) == 2 and steps[0]["tool_calls"][0]["name"] == "calculator"
        assert not any(e["kind"] == "parse_error" for s in steps for e in s["events"])


@pytest.mark.parametrize(
    ("page", "left_out"),
    [("README.md", {"description", "tests"}), ("docs/getting-started.md", {"tests"})],
)
def test_the_calculator_spec_shown_is_the_shipped_one(page: str, left_out: set[str]) -> None:
    """The pages show `specs/calculator.yaml` (less what they say they leave out), so a
    reader who copies it gets the recipe's settings, not older ones."""
    import re

    text = (ROOT / page).read_text(encoding="utf-8")
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, re.S)]
    shown = next(b for b in blocks if isinstance(b, dict) and b.get("name") == "calculator")
    shipped = yaml.safe_load((ROOT / "specs" / "calculator.yaml").read_text(encoding="utf-8"))
    assert shown == {k: v for k, v in shipped.items() if k not in left_out}
