"""Scalars a spec may hold: JSON's, and nothing a generated module cannot carry.

YAML can express values JSON cannot: binary (`!!binary`), timestamps
(`!!timestamp`; unquoted dates are plain strings, as in YAML 1.2), strings
with lone UTF-16 surrogates (`"\\ud800"`: not Unicode text, so no file,
tokenizer or trace can encode them), and infinite or NaN floats. This pass
runs between YAML and the schema: it rejects the first three wherever they
are, each with its own located diagnostic, and joins escaped surrogate
pairs (`"\\ud83d\\ude00"`, as JSON writes them) into the character they
spell. Non-finite floats are fine where Python takes them (state, function
config) and are rejected where the value must be JSON (tool parameter
schemas, sent to the model and to jsonschema); the schema's own number
fields reject them in `agentspec.spec.load`.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

from agentspec.core.diagnostics import Diagnostic
from agentspec.core.source import dotted
from agentspec.spec.yaml_loader import Path, SourceMap

# Paths whose values are JSON (a pattern of keys; "*" matches any one key).
_JSON_PATHS: tuple[tuple[str, ...], ...] = (("tools", "*", "parameters"),)


def clean_scalars(data: Any, source_map: SourceMap) -> tuple[Any, list[Diagnostic]]:
    """`data` with surrogate pairs joined, and a diagnostic per value no module can hold."""
    diagnostics: list[Diagnostic] = []
    return _clean(data, (), source_map, diagnostics), diagnostics


def _clean(value: Any, path: Path, source_map: SourceMap, out: list[Diagnostic]) -> Any:
    if isinstance(value, dict):
        cleaned = {}
        for key, item in value.items():
            problem = _problem(key, (*path, key), source_map, key=True)
            if problem is not None:
                out.append(problem)
                continue
            new_key = _join_surrogates(key) if isinstance(key, str) else key
            cleaned[new_key] = _clean(item, (*path, key), source_map, out)
        return cleaned
    if isinstance(value, list):
        return [_clean(item, (*path, i), source_map, out) for i, item in enumerate(value)]
    problem = _problem(value, path, source_map, key=False)
    if problem is not None:
        out.append(problem)
        return None
    return _join_surrogates(value) if isinstance(value, str) else value


def _problem(value: Any, path: Path, source_map: SourceMap, *, key: bool) -> Diagnostic | None:
    span = source_map.key_span(path) if key else source_map.value_span(path)
    where = dotted(path[:-1] if key else path) or "the spec"
    what = "a key" if key else "the value"
    if isinstance(value, (datetime.date, datetime.datetime)):
        return Diagnostic(
            "E207",
            f"{where}: {what} tagged as a timestamp has no JSON equivalent",
            span,
            hint="drop the `!!timestamp` tag: a date written plainly is a string",
        )
    if isinstance(value, (bytes, bytearray, set)):
        return Diagnostic(
            "E207",
            f"{where}: {what} of type {type(value).__name__} has no JSON equivalent",
            span,
            hint="spec values are strings, numbers, booleans, null, lists and mappings",
        )
    if isinstance(value, str) and _join_surrogates(value) is None:
        return Diagnostic(
            "E208",
            f"{where}: {what} contains a lone UTF-16 surrogate (a \\u escape of half a character)",
            span,
            hint="write the character itself, or escape it whole: \\U0001F600, not \\uD83D",
        )
    if isinstance(value, float) and not math.isfinite(value) and _in_json(path):
        return Diagnostic(
            "E206",
            f"{where}: {value} is not a JSON number",
            span,
            hint="tool parameter schemas are JSON: use a finite number, or leave the bound out",
        )
    return None


def _join_surrogates(text: str) -> Any:
    """`text` with escaped surrogate pairs joined; None if a surrogate is alone."""
    if not any("\ud800" <= ch <= "\udfff" for ch in text):
        return text
    try:
        return text.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:
        return None


def _in_json(path: Path) -> bool:
    return any(
        len(path) >= len(pattern)
        and all(p == "*" or p == part for p, part in zip(pattern, path, strict=False))
        for pattern in _JSON_PATHS
    )
