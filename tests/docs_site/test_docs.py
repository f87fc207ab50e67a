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
            row = next(line for line in section.splitlines() if line.startswith(f"| `{name}` |"))
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
