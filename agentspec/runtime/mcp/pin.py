"""`agentspec mcp pin SPEC`: read each MCP server's tools into the spec (or check them).

For every server of the spec's `mcp:` section, the server is started (or
reached) and asked for its tools (an OpenEnv environment, `openenv: true`, with
a `list_tools` step); their descriptions and input schemas are
written under that server's `tools:` key, replacing the previous pins and
leaving the rest of the file — comments included — as it was. `--check`
writes nothing and lists what differs (for CI: the pins are current).

The edit is textual, located by the YAML parser's marks: a block-style server
gets a block `tools:` entry whose values are one-line JSON (valid YAML); a
flow-style server (`units: {command: ...}`) is rewritten as one JSON mapping.
What a server says is written so that it loads back unchanged
(:func:`yaml_value`): characters YAML refuses or reads as line breaks are
escaped, names YAML would read as something else (`null`, `yes`) are quoted,
and the new text is loaded with the spec's own loader before it is written.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agentspec.core.source import SourceFile
from agentspec.runtime.mcp.server import McpServer
from agentspec.runtime.mcp.tools import list_server_tools
from agentspec.spec.yaml_loader import load_yaml

__all__ = ["PinError", "PinReport", "pin_spec", "pinned_text", "yaml_value"]


class PinError(RuntimeError):
    """The spec has no usable `mcp:` section, or a server could not be listed."""


@dataclass
class PinReport:
    """What pinning found: per server, the pinned tools and the differences from the spec."""

    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    changes: list[str] = field(default_factory=list)


def pin_spec(path: Path, *, check: bool = False) -> PinReport:
    """Pin (or, with ``check``, compare) the tools of every MCP server of the spec at ``path``."""
    text = path.read_text(encoding="utf-8")
    try:
        data = yaml.safe_load(text)
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        raise PinError(f"{path}: not valid YAML ({exc}); run agentspec validate") from None
    servers = data.get("mcp") if isinstance(data, dict) else None
    if not isinstance(servers, dict) or not servers or root is None:
        raise PinError(f"{path} has no `mcp:` servers to pin")
    report = PinReport()
    for name, config in servers.items():
        live = _server_tools(name, config, path.parent)
        report.tools[name] = live
        pinned = config.get("tools") if isinstance(config, dict) else None
        report.changes += _differences(name, pinned or {}, live)
    if not check and report.changes:
        new_text = _rewrite(text, root, report.tools)
        _check_loads_back(path, new_text, report.tools)
        path.write_text(new_text, encoding="utf-8")
    return report


def _server_tools(name: str, config: Any, base_dir: Path) -> dict[str, Any]:
    if not isinstance(config, dict):
        raise PinError(f"mcp.{name} must be a mapping with `command` or `url`")
    command = config.get("command")
    connection = {
        "name": name,
        "command": shlex.split(command) if isinstance(command, str) else command,
        "url": config.get("url"),
        "env": config.get("env") or {},
        "timeout": config.get("timeout", 30.0),
        "openenv": config.get("openenv") is True,
        # the spec's own limits, if any (checked by the schema before pinning)
        **{k: config[k] for k in ("max_result_bytes", "max_log_bytes") if k in config},
    }
    try:
        server = McpServer(connection, base_dir=base_dir)
        tools = asyncio.run(list_server_tools(server))
    except (ValueError, RuntimeError) as exc:
        raise PinError(f"mcp.{name}: {exc}") from None
    include = config.get("include")
    if include is not None:
        missing = [t for t in include if t not in tools]
        if missing:
            raise PinError(
                f"mcp.{name}: the server has no tool {missing[0]!r}; it offers {', '.join(tools)}"
            )
        tools = {t: tools[t] for t in tools if t in include}
    return tools


def _differences(server: str, pinned: dict[str, Any], live: dict[str, Any]) -> list[str]:
    changes = [f"mcp.{server}: new tool {t!r}" for t in live if t not in pinned]
    changes += [f"mcp.{server}: tool {t!r} is gone" for t in pinned if t not in live]
    for tool in live:
        if tool in pinned and pinned[tool] != live[tool]:
            changes.append(f"mcp.{server}: tool {tool!r} changed its description or parameters")
    return changes


def _rewrite(text: str, root: yaml.Node, tools: dict[str, dict[str, Any]]) -> str:
    """``text`` with each server's `tools:` replaced by ``tools[server]`` (edits from the end)."""
    edits: list[tuple[int, int, str]] = []
    servers = _value(root, "mcp")
    assert isinstance(servers, yaml.MappingNode)
    for key, node in servers.value:
        if key.value not in tools or not isinstance(node, yaml.MappingNode):
            continue
        pinned = tools[key.value]
        if node.flow_style:
            config = yaml.safe_load(text[node.start_mark.index : node.end_mark.index])
            config["tools"] = pinned
            edits.append((node.start_mark.index, node.end_mark.index, yaml_value(config)))
            continue
        indent = node.value[0][0].start_mark.column
        block = _tools_block(pinned, indent)
        existing = [(k, v) for k, v in node.value if k.value == "tools"]
        if existing:
            k, v = existing[0]
            edits.append((k.start_mark.index, _end(v), block))
        else:  # after the server's last line, and after the comment that may end it
            end = text.find("\n", _end(node.value[-1][1]))
            end = len(text) if end < 0 else end
            edits.append((end, end, "\n" + " " * indent + block))
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def _tools_block(tools: dict[str, Any], indent: int) -> str:
    if not tools:
        return "tools: {}"
    pad = " " * (indent + 2)
    lines = ["tools:"]
    for name, pin in tools.items():
        lines.append(f"{pad}{_key(name)}:")
        lines.append(f"{pad}  description: {pinned_text(pin['description'])}")
        lines.append(f"{pad}  parameters: {yaml_value(pin['parameters'])}")
    return "\n".join(lines)


def _key(name: str) -> str:
    """A tool's name as a block mapping key: bare when YAML reads it back as that same
    text (not `null`, `yes`, `on` or `1e3`, which YAML 1.1 reads as other things)."""
    if re.fullmatch(r"[A-Za-z_][\w.-]*", name) and yaml.safe_load(f"{name}: 0") == {name: 0}:
        return name
    return pinned_text(name)


# What a double-quoted YAML scalar cannot hold as it is: the characters PyYAML's reader
# refuses (C0 and C1 controls, DEL, surrogates, U+FFFE, U+FFFF), those its scanner folds
# as line breaks (NEL, U+2028, U+2029), and the byte-order mark. JSON escapes only C0.
_NOT_LITERAL_IN_YAML = re.compile(
    "[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|[\u2028\u2029\ufeff]"
)


def pinned_text(text: str) -> str:
    """``text`` as a double-quoted scalar that is JSON and YAML alike and reads back as
    ``text``: JSON's escapes (which YAML shares), with ``\\uXXXX`` for what YAML cannot
    hold literally (JSON would keep a U+0080 or a U+2028 as it is)."""
    quoted = json.dumps(text, ensure_ascii=False)
    return _NOT_LITERAL_IN_YAML.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def yaml_value(value: Any) -> str:
    """A JSON value (a tool's schema, a server's settings) as one line of JSON that YAML
    reads back as the same value. Two things JSON writes differ in YAML 1.1: text (see
    :func:`pinned_text`) and exponents without a point (`1e-05` is a string in YAML), so
    floats keep a point (`1.0e-05`); NaN and infinities have no JSON at all."""
    if isinstance(value, str):
        return pinned_text(value)
    if value is None or isinstance(value, (bool, int)):
        return json.dumps(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise PinError(f"the server sent {value!r}, not a finite number: it cannot be pinned")
        written = repr(value)
        mantissa, exponent = written.partition("e")[::2]
        if exponent and "." not in mantissa:
            written = f"{mantissa}.0e{exponent}"
        return written
    if isinstance(value, dict):
        items = (f"{pinned_text(str(k))}: {yaml_value(v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(yaml_value(v) for v in value) + "]"
    raise PinError(f"the server sent a {type(value).__name__}, which is not JSON")


def _check_loads_back(path: Path, text: str, tools: dict[str, dict[str, Any]]) -> None:
    """Refuse to write pins that the spec's loader would not read back as ``tools``
    (one string over its size limit, say): the file is left as it was."""
    data, _, diagnostics = load_yaml(SourceFile(str(path), text))
    errors = [d for d in diagnostics if d.is_error]
    if errors:
        raise PinError(
            f"{path}: the pinned tools would not load back ({errors[0].code}: {errors[0].message});"
            " nothing was written"
        )
    servers = data.get("mcp") if isinstance(data, dict) else None
    for name, pinned in tools.items():
        server = servers.get(name) if isinstance(servers, dict) else None
        loaded = server.get("tools") if isinstance(server, dict) else None
        if loaded != pinned:
            raise PinError(
                f"{path}: the tools of mcp.{name} would not load back as the server wrote"
                " them; nothing was written"
            )


def _value(mapping: yaml.Node, key: str) -> yaml.Node | None:
    if isinstance(mapping, yaml.MappingNode):
        for k, v in mapping.value:
            if k.value == key:
                return v
    return None


def _end(node: yaml.Node) -> int:
    """Where a node's own text ends (a block collection's mark runs on to the next key)."""
    if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
        return _end(node.value[-1][1])
    if isinstance(node, yaml.SequenceNode) and not node.flow_style and node.value:
        return _end(node.value[-1])
    return int(node.end_mark.index)
