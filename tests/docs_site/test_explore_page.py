"""docs/explore.md: the worked example reports what the page shows, its witness
replays as a `tests:` entry, and the fix the page gives leaves nothing to report."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from agentspec.core.diagnostics import render_text
from agentspec.runtime.commands.explore.explorer import explore
from agentspec.runtime.commands.explore.report import diagnostic
from agentspec.runtime.commands.tests import SpecTestRunner
from agentspec.spec.testing import SpecTest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "explore.md"


def blocks(kind: str) -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    return re.findall(rf"```{kind}\n(.*?)```", text, flags=re.S)


class Yaml12Bools(yaml.SafeLoader):
    """YAML with only `true`/`false` as booleans (the spec loader's rule): `on:` stays a key."""


Yaml12Bools.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Yaml12Bools.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|false)$"), list("tf")
)


def merged(base: dict, change: dict) -> dict:
    out = dict(base)
    for key, value in change.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def test_the_worked_example(tmp_path: Path) -> None:
    spec_text, witness, fix, gate = blocks("yaml")
    spec = tmp_path / "calculator_bonus.yaml"
    spec.write_text(spec_text, encoding="utf-8")
    report = explore(spec)
    shown = [line for line in blocks("text")[0].splitlines() if line.strip()]
    got = [
        render_text(diagnostic(report, f), {}).replace(str(spec), spec.name).splitlines()[0]
        for f in report.findings
    ]
    assert got == shown

    (entry,) = yaml.safe_load(witness)
    case = SpecTestRunner(spec, None, 0).scripted(0, SpecTest.model_validate(entry))
    assert case.passed, [f.message for f in case.failures]

    fixed = tmp_path / "fixed.yaml"
    both = [yaml.load(text, Loader=Yaml12Bools) for text in (spec_text, fix)]
    fixed.write_text(yaml.safe_dump(merged(*both)), encoding="utf-8")
    after = explore(fixed)
    assert after.findings == []
    assert yaml.safe_load(gate)["tests"]["explore"]["budget"] == 600
