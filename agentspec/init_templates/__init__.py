"""`agentspec init`: commented starter specs that validate and run out of the box.

Three templates: ``tools`` (tool calls and a terminal answer tool),
``state-machine`` (typed state, guarded tools with effects) and
``environment`` (an external environment adapter). Each starts with a
``# yaml-language-server: $schema=…`` line so editors complete and check keys.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["TEMPLATES", "InitError", "render_starter", "write_starter"]

TEMPLATES = ("tools", "state-machine", "environment")
SCHEMA_FILE = "agentspec-1.schema.json"
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


class InitError(ValueError):
    """A bad name or template, or a file that would be overwritten."""


def schema_line(schema: str) -> str:
    return f"yaml-language-server: $schema={schema}"


def render_starter(name: str, template: str = "tools", schema: str = f"./{SCHEMA_FILE}") -> str:
    """The starter spec's text for `name` (a valid spec name) and `template`."""
    if not _NAME.match(name):
        raise InitError(
            f"{name!r} is not a valid task name: use letters, digits, '_' and '-', "
            "starting with a letter"
        )
    if template not in TEMPLATES:
        raise InitError(f"unknown template {template!r}; choose one of: {', '.join(TEMPLATES)}")
    text = (Path(__file__).parent / f"{template}.yaml.j2").read_text(encoding="utf-8")
    return text.replace("__SCHEMA_LINE__", schema_line(schema)).replace("__NAME__", name)


def write_starter(
    name: str,
    template: str = "tools",
    directory: Path = Path("."),
    *,
    force: bool = False,
    schema_url: str | None = None,
) -> Path:
    """Write ``DIRECTORY/NAME.yaml``; beside it the language's JSON Schema for editors.

    The spec's first line points editors at the schema: the local copy written
    here (kept current on every `init`), or `schema_url` if given.
    """
    from agentspec.spec.schema import schema_json

    text = render_starter(name, template, schema_url or f"./{SCHEMA_FILE}")
    directory = Path(directory)
    target = directory / f"{name}.yaml"
    if target.exists() and not force:
        raise InitError(f"{target} already exists (use --force to overwrite it)")
    directory.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    if schema_url is None:
        (directory / SCHEMA_FILE).write_text(schema_json(), encoding="utf-8")
    return target
