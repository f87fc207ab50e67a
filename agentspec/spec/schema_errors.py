"""Pydantic's schema errors as diagnostics at their spec lines.

Schema errors arrive with a `loc` such as ``('tools', 'search', 'parameters')``;
each is mapped to the node's span in the file and turned into a `Diagnostic` with a
stable code and a hint: a key in the wrong section, a misspelt key, a value of the
wrong type (said in the spec's own words), an infinite number where one cannot be.
"""

from __future__ import annotations

import difflib
import math
import re
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from agentspec.core.diagnostics import Diagnostic
from agentspec.core.source import Span, dotted
from agentspec.spec.model import LANGUAGE_VERSION, TaskSpec
from agentspec.spec.schema_paths import (
    NAME_HINT,
    allowed_keys,
    data_path,
    field_description,
    model_field,
    types_at,
    value_at,
)
from agentspec.spec.yaml_loader import Path, SourceMap

__all__ = ["MAX_SCHEMA_DIAGNOSTICS", "NAME_HINT", "describe", "schema_diagnostics"]

# Keys people put in the wrong section (often following older examples).
_RELOCATED: dict[Path, str] = {
    ("success",): "episode.success",
    ("max_steps",): "episode.max_steps",
    ("tool_format",): "episode.tool_format",
    ("done_when",): "episode.done_when",
    ("anchor",): "episode.anchor",
    ("algorithm",): "training.algorithm",
    ("model",): "training.model",
    ("system",): "prompt.system",
    ("user",): "prompt.user",
}


# Why a field needs a finite number, where "infinite" could look meaningful.
_FINITE_HINTS = {
    "timeout": "a tool always has a time limit: leave `timeout` out for the default (30 s)",
    "weight": "a reward weight multiplies every value of its component: use a finite number",
    "value": "a reward must be finite, or one step's reward swamps training: use a finite number",
}

MAX_SCHEMA_DIAGNOSTICS = 200


def schema_diagnostics(
    exc: ValidationError, data: dict[str, Any], source_map: SourceMap
) -> list[Diagnostic]:
    located = [(data_path(error["loc"], data), error) for error in exc.errors()]
    # A non-finite number is the one problem of its value, whatever other
    # branches of a union (`value: Expression | float`) said about it.
    infinite = {path for path, error in located if error["type"] == "finite_number"}
    located = [(p, e) for p, e in located if p not in infinite or e["type"] == "finite_number"]
    # A union tries each branch; when one branch got inside the value, its
    # errors are the useful ones and the others' "wrong type" errors are noise.
    # (Proper prefixes of every path, computed once: thousands of errors stay linear.)
    ancestors = {path[:cut] for path, _ in located for cut in range(len(path))}
    colon = _colon_mappings(located, data, source_map)
    result = [_colon_mapping(path, data, source_map) for path in colon]
    misread = {d.span for d in result}
    # The branches of a union each reject a value of the wrong type: one message
    # names every type the value could have had (`a number or an expression string`).
    type_kinds: dict[Path, list[str]] = {}
    for path, error in located:
        if _is_type_error(error["type"]):
            type_kinds.setdefault(path, []).append(error["type"])
    seen: set[tuple[Path, str]] = set()
    for path, error in located:
        kind = error["type"]
        if any(source_map.value_span(path[:cut]) in misread for cut in range(len(path) + 1)):
            continue  # reported as one value YAML misread
        deeper = path in ancestors
        if deeper and kind not in ("missing", "extra_forbidden", "value_error"):
            continue
        diagnostic = _one_diagnostic(path, error, data, source_map, type_kinds.get(path))
        key = (path, diagnostic.code)
        if key in seen:
            continue
        seen.add(key)
        result.append(diagnostic)
        if len(result) == MAX_SCHEMA_DIAGNOSTICS:
            break
    if len(result) == MAX_SCHEMA_DIAGNOSTICS and len(located) > len(result):
        # Thousands of unknown keys are one mistake; listing them all costs
        # seconds and helps no one.
        last = result[-1]
        more = f"{len(located) - len(result):,} more schema problems are not shown"
        hint = f"{last.hint}; {more}" if last.hint else more
        result[-1] = Diagnostic(last.code, last.message, last.span, hint)
    return result


def _colon_mappings(
    located: list[tuple[Path, Any]], data: dict[str, Any], source_map: SourceMap
) -> list[Path]:
    """Values that may be strings but that YAML read as a mapping: a one-key mapping
    whose key is no name (`- let m = {k: v}`: the `: ` inside made it a mapping), or
    a value written `{…}` (`observe: {{ x }}`: YAML's inline mapping)."""
    found = []
    for path, error in located:
        if error["type"] != "string_type" or path in found:
            continue
        value = value_at(data, path)
        if not isinstance(value, dict):
            continue
        key = next(iter(value), None)
        colon = len(value) == 1 and isinstance(key, str) and not key.isidentifier()
        # A `{…}` that a mapping branch looked inside (a guard's `{if: …}`, a tool's
        # `{description: …}` under a bad name) was meant as one.
        inline = _raw_text(source_map, path).startswith("{") and all(
            p == path and e["type"].endswith("_type") and e["loc"][-1:] != ("[key]",)
            for p, e in located
            if p[: len(path)] == path
        )
        if colon or inline:
            found.append(path)
    return found


def _raw_text(source_map: SourceMap, path: Path) -> str:
    """The text of the value at `path` as written, on its first line."""
    span = source_map.value_span(path)
    line = source_map.source.line_text(span.line) or ""
    end = span.end_column - 1 if span.end_line == span.line else len(line)
    return line[span.column - 1 : end].strip()


def _colon_mapping(path: Path, data: dict[str, Any], source_map: SourceMap) -> Diagnostic:
    span = source_map.value_span(path)
    if _raw_text(source_map, path).startswith("{"):
        cause = "it starts with '{' (YAML's inline mapping, even for `{{ … }}`)"
    else:
        cause = f"the ': ' inside made the key '{next(iter(value_at(data, path)))}'"
    quoted = _quoted_value(source_map, span)
    hint = f"quote the whole value: {quoted}" if quoted else "quote the whole value"
    mapping = value_at(data, path)
    key, value = next(iter(mapping.items())) if len(mapping) == 1 else (None, None)
    if "effect" in path and isinstance(key, str) and re.fullmatch(r"state\.[\w.]+", key):
        hint = f"an assignment is written with '=': `{key} = {value}`"  # `- state.x: 1`
    return Diagnostic(
        "E203",
        f"{dotted(path)}: YAML read this value as a mapping, not as text, because {cause}",
        span,
        hint,
    )


def _quoted_value(source_map: SourceMap, span: Span) -> str | None:
    """The value starting at `span` as written, in single quotes (YAML's escape for a
    quote inside is two); None when it goes on past its line. A plain value ends
    where ` #` starts a comment."""
    source = source_map.source
    line = (source.line_text(span.line) or "")[span.column - 1 :]
    following = source.line_text(span.line + 1) or ""
    indent = len(following) - len(following.lstrip())
    inline = line.startswith("{")  # its span is all of it; a block mapping's, its first key
    if (inline and span.end_line > span.line) or (following.strip() and indent >= span.column):
        return None  # it goes on over the next line
    raw = line.partition(" #")[0].strip()
    return "'" + raw.replace("'", "''") + "'" if raw else None


def _one_diagnostic(
    path: Path,
    error: Any,
    data: dict[str, Any],
    source_map: SourceMap,
    type_kinds: list[str] | None = None,
) -> Diagnostic:
    """The located diagnostic of one pydantic error: about a key, else about a value.
    `type_kinds`: every wrong-type error at this path (one per union branch)."""
    kind: str = error["type"]
    keyed = _key_diagnostic(path, kind, error, source_map)
    if keyed is not None:
        return keyed
    value, span = value_at(data, path), source_map.value_span(path)
    return _value_diagnostic(path, kind, error, value, span, type_kinds or [kind])


def _key_diagnostic(path: Path, kind: str, error: Any, source_map: SourceMap) -> Diagnostic | None:
    """An unknown, missing or badly named key (E201, E202, E204), else None."""
    if kind == "extra_forbidden":
        key = str(path[-1])
        allowed = allowed_keys(path[:-1])
        hint = None
        elsewhere = _RELOCATED.get(path[:1]) if len(path) == 1 else _other_section(path)
        if elsewhere is not None:
            hint = f"this key belongs in another section: did you mean `{elsewhere}`?"
        else:
            close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
            if close:
                hint = f"did you mean '{close[0]}'?"
            elif allowed:
                hint = "allowed keys here: " + ", ".join(allowed)
        section = dotted(path[:-1]) or "the top level"
        split = key.count(")") > key.count("(") or key.count("]") > key.count("[")
        if split and len(path) > 1 and _raw_text(source_map, path[:-1]).startswith("{"):
            hint = (  # `{if: f(a, b)}`: the ', ' ended the value, `b)` became a key
                "inside `{…}` a ', ' ends a value: quote the value it belongs to as a whole,"
                " e.g. `{if: 'f(a, b)', message: …}`"
            )
        return Diagnostic(
            "E201", f"unknown key '{key}' in {section}", source_map.key_span(path), hint
        )
    if kind == "missing":
        parent = path[:-1]
        section = dotted(parent) or "the spec"
        span = source_map.key_span(parent) if parent else source_map.value_span(())
        field = str(path[-1])
        return Diagnostic(
            "E202",
            f"missing required key '{field}' in {section}",
            span,
            hint=f"add `{field}:`" + (f" under `{section}`" if parent else " at the top level"),
        )
    if error["loc"] and error["loc"][-1] == "[key]":
        section = dotted(path[:-1]) or "the top level"
        return Diagnostic(
            "E204",
            f"{_as_yaml_key(path[-1])} is not a valid name in {section}",
            source_map.key_span(path),
            hint=_name_hint(path[-1]),
        )
    return None


def _as_yaml_key(key: object) -> str:
    """A key as the user reads it: text quoted, YAML's null and booleans as YAML spells them."""
    if key is None:
        return "null (`~`)"
    if isinstance(key, bool):
        return f"the boolean `{str(key).lower()}`"
    return repr(key) if isinstance(key, str) else f"the number {key}"


def _name_hint(name: object) -> str:
    """How names are spelled, and which character of `name` is not ASCII, if one is."""
    other = next((c for c in str(name) if not c.isascii()), None)
    return NAME_HINT if other is None else f"{NAME_HINT}; {other!r} is not ASCII"


def _is_type_error(kind: str) -> bool:
    return kind.endswith("_type") or kind.endswith("_parsing")


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _type_diagnostic(path: Path, kinds: list[str], value: Any, span: Span) -> Diagnostic:
    """A value of the wrong type (E203): every type it could have had (the
    branches of a union), with the YAML slip that usually causes it."""
    where = dotted(path)
    expected = _expected_types(path, kinds)
    hint = None
    if "string_type" in kinds and isinstance(value, dict) and len(value) == 1:
        hint = "YAML read this as a mapping because it contains ': '; quote the whole value"
    elif expected == "a mapping" and isinstance(value, str):
        glued = re.match(r"([A-Za-z_][\w-]*):(\S.*)", value)
        if glued:
            hint = f"YAML needs a space after a key's colon: `{glued[1]}: {glued[2]}`"
    elif isinstance(value, str) and {"int_type", "float_type"} & set(kinds) and _is_number(value):
        hint = f"the quotes make it text: write `{value.strip()}` without them"
    elif expected.endswith(("expression string", "template string")) and isinstance(
        value, (bool, int, float)
    ):
        hint = "YAML read it as a value, not as the text of one: put it in quotes"
    return Diagnostic(
        "E203", f"{where or 'the spec'}: expected {expected}, got {describe(value)}", span, hint
    )


def _value_diagnostic(
    path: Path, kind: str, error: Any, value: Any, span: Span, type_kinds: list[str]
) -> Diagnostic:
    """A value of the wrong type, outside its allowed set, or out of range (E203–E206)."""
    where = dotted(path)
    if kind == "finite_number":
        return Diagnostic(
            "E206",
            f"{where}: {value} is not a finite number",
            span,
            hint=_FINITE_HINTS.get(str(path[-1]), "use a finite number") if path else None,
        )
    if path == ("agentspec",):
        return Diagnostic(
            "E205",
            f"unsupported language version {value!r}",
            span,
            hint=f"this agentspec reads version {LANGUAGE_VERSION}: write `agentspec: {LANGUAGE_VERSION}`",
        )
    if _is_type_error(kind):
        return _type_diagnostic(path, type_kinds, value, span)
    if kind == "literal_error":
        expected = str(error.get("ctx", {}).get("expected", ""))
        suggestion: str | None = None
        if isinstance(value, str):
            options = [o.strip().strip("'") for o in expected.replace(" or ", ", ").split(",")]
            matches = difflib.get_close_matches(value, options, n=1, cutoff=0.5)
            suggestion = f"did you mean '{matches[0]}'?" if matches else None
        return Diagnostic(
            "E204",
            f"{where}: {value!r} is not one of {expected}",
            span,
            hint=suggestion,
        )
    if kind == "string_pattern_mismatch":
        description = field_description(path)
        event = _reward_event_meant(value) if path[-1:] == ("on",) else None
        return Diagnostic(
            "E204",
            f"{where}: {value!r} is not valid here",
            span,
            hint=f"did you mean '{event}'?" if event else description,
        )
    message = str(error["msg"]).removeprefix("Value error, ").removeprefix("Input ")
    if kind in (
        "greater_than",
        "greater_than_equal",
        "less_than",
        "less_than_equal",
        "too_short",
        "too_long",
    ):
        message = f"{message}, got {describe(value)}"
    return Diagnostic("E204", f"{where or 'the spec'}: {message}" if where else message, span)


_REWARD_EVENTS = ("step", "final", "tool", "tool_error", "guard_failed", "parse_error", "truncated")


def _reward_event_meant(value: Any) -> str | None:
    """`guard_failed:wait` for `guard_fail:wait`: a reward's event with its kind misspelt."""
    if not isinstance(value, str):
        return None
    kind, colon, tool = value.partition(":")
    close = difflib.get_close_matches(kind, _REWARD_EVENTS, n=1, cutoff=0.6)
    if not close or (colon and close[0] in ("step", "final", "parse_error", "truncated")):
        return None
    return f"{close[0]}{colon}{tool}"


def _other_section(path: Path) -> str | None:
    """`episode.max_response_tokens` for a misplaced `training.max_response_tokens`:
    the one other top-level section that has a key of this name, if any."""
    if len(path) != 2 or path[1] in allowed_keys(path[:1]):
        return None
    homes = [
        section
        for section in TaskSpec.model_fields
        if section != path[0] and path[1] in allowed_keys((section,))
    ]
    return f"{homes[0]}.{path[1]}" if len(homes) == 1 else None


def _expected_types(path: Path, kinds: list[str]) -> str:
    """`a number or an expression string`: what the schema accepts at `path`, from
    the wrong-type errors of its union's branches."""
    named: list[str] = []
    for kind in kinds:
        if kind == "string_type":
            text = _string_kind(path)
        elif kind in ("bool_type", "bool_parsing") and len(kinds) > 1:
            text = "a boolean"
        else:
            text = _expected(kind)
        if text not in named:
            named.append(text)
    # strings last: "a number or an expression string"
    named.sort(key=lambda text: text.endswith("string"))
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " or " + named[-1]


# What a string of each of the language's kinds is called in a message.
_STRING_KINDS = {
    "expression": "an expression string",
    "statement": "a statement string",
    "template": "a template string",
}


def _string_kind(path: Path) -> str:
    """`an expression string` where the schema wants an expression, else `a string`."""
    for candidate in types_at(path[:-1]) if path else []:
        tag: str | None = None
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            field = model_field(candidate, str(path[-1]))
            if field is not None:
                tag = _tag(field.json_schema_extra) or _annotation_tag(field.annotation)
        elif typing.get_origin(candidate) in (dict, list):
            tag = _annotation_tag(typing.get_args(candidate)[-1])
        if tag in _STRING_KINDS:
            return _STRING_KINDS[tag]
    return "a string"


def _annotation_tag(annotation: Any) -> str | None:
    """The language kind (`x-agentspec`) of the string branch of an annotation."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        for meta in typing.get_args(annotation)[1:]:
            tag = _tag(getattr(meta, "json_schema_extra", None))
            if tag is not None:
                return tag
        return _annotation_tag(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            tag = _annotation_tag(arg)
            if tag is not None:
                return tag
    return None


def _tag(extra: Any) -> str | None:
    if isinstance(extra, dict) and isinstance(extra.get("x-agentspec"), str):
        return str(extra["x-agentspec"])
    return None


def _expected(kind: str) -> str:
    base = kind.removesuffix("_type").removesuffix("_parsing")
    return {
        "string": "a string",
        "int": "an integer",
        "float": "a number",
        "bool": "true or false",
        "dict": "a mapping",
        "list": "a list",
        "model": "a mapping",
        "model_attributes": "a mapping",
    }.get(base, base)


def describe(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"the boolean {value}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}" if len(value) < 40 else "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__
