"""libyaml's parser (the fast path of `load_yaml`) composes exactly what PyYAML's does.

The node graph — tags, values, styles and every mark's index, line and
column — must match for every YAML file the tests and shipped specs hold;
where libyaml rejects a file, `load_yaml` re-reads it with PyYAML, so the
diagnostics never depend on which parser ran.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agentspec.core.source import SourceFile
from agentspec.spec import yaml_loader

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(
    {
        *ROOT.glob("specs/**/*.yaml"),
        *ROOT.glob("tests/**/*.yaml"),
        *ROOT.glob("docs/**/*.yaml"),
    }
)


def _graph(loader_class, text):
    root = yaml_loader._compose_with(loader_class, text)
    seen: list = []

    def walk(node):
        if node is None:
            return
        seen.append(
            (
                type(node).__name__,
                node.tag,
                node.value if isinstance(node.value, str) else None,
                getattr(node, "style", None),
                node.start_mark.index,
                node.start_mark.line,
                node.start_mark.column,
                node.end_mark.index,
                node.end_mark.line,
                node.end_mark.column,
            )
        )
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                walk(key)
                walk(value)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                walk(item)

    walk(root)
    return seen


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_libyaml_composes_the_same_graph(path):
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    if len(text) > yaml_loader.MAX_FILE_CHARS:
        pytest.skip("over the file-size limit: never composed")
    try:
        python = _graph(yaml_loader._Loader, text)
    except (yaml.YAMLError, yaml_loader.LimitExceeded) as exc:
        python = type(exc).__name__
    try:
        fast = _graph(yaml_loader._FastLoader, text)
    except (yaml.YAMLError, UnicodeError):
        return  # load_yaml falls back to PyYAML for the diagnostic
    except yaml_loader.LimitExceeded as exc:
        fast = type(exc).__name__
    assert fast == python


def test_a_file_libyaml_rejects_is_reported_by_pyyaml():
    # A lone surrogate escape: libyaml refuses it, PyYAML reads it (and the
    # checker reports E208 on the value), so the fallback keeps that behaviour.
    text = 'agentspec: 1\nname: "\\ud800"\n'
    with pytest.raises(yaml.YAMLError):
        yaml_loader._compose_with(yaml_loader._FastLoader, text)
    value, _, diagnostics = yaml_loader.load_yaml(SourceFile("t.yaml", text))
    assert value == {"agentspec": 1, "name": "\ud800"}
    assert diagnostics == []
