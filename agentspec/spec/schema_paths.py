"""Where a YAML path of a spec lands in the spec model: the value there, the types
the model allows there, the keys a mapping there may hold, and the field's description
(what schema errors are said in terms of)."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel

from agentspec.spec.model import TaskSpec
from agentspec.spec.yaml_loader import Path

__all__ = [
    "NAME_HINT",
    "allowed_keys",
    "candidate_types",
    "data_path",
    "field_description",
    "model_field",
    "types_at",
    "value_at",
]

NAME_HINT = (
    "names must be identifiers: ASCII letters (a-z, A-Z), digits and '_', not starting with a digit"
)


def data_path(loc: tuple[Any, ...], data: Any) -> Path:
    """Drop the parts of a pydantic `loc` that name union branches, not data."""
    path: list[Any] = []
    current = data
    for part in loc:
        key = own_key(current, part) if isinstance(current, dict) else NO_KEY
        if key is not NO_KEY:
            path.append(key)
            current = current[key]
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            path.append(part)
            current = current[part]
        elif isinstance(current, dict) and isinstance(part, str) and not is_branch_tag(part):
            path.append(part)  # a missing or extra key: not in the data (yet)
            current = None
    return tuple(path)


NO_KEY = object()


def own_key(mapping: dict[Any, Any], part: Any) -> Any:
    """The key of `mapping` that pydantic's `loc` part names, as YAML wrote it: pydantic
    gives a key that is not a string as its text (`~` as 'None', `3.5` as '3.5') or
    as an equal number (`true` as 1). `NO_KEY` when there is none."""
    same = [k for k in mapping if type(k) is type(part) and k == part]
    if same:
        return same[0]
    equal = [k for k in mapping if not isinstance(k, str) and (k == part or str(k) == part)]
    return equal[0] if equal else NO_KEY


def is_branch_tag(part: str) -> bool:
    # pydantic names union branches after their types: 'str', 'list[str]',
    # 'OracleHook', 'function-after[...]'.
    return part[:1].isupper() or "[" in part or part in {"str", "int", "float", "bool", "none"}


def value_at(data: Any, path: Path) -> Any:
    for part in path:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and part < len(data):
            data = data[part]
        else:
            return None
    return data


def candidate_types(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return candidate_types(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(annotation) for t in candidate_types(arg)]
    return [annotation]


def types_at(path: Path) -> list[Any]:
    """The annotation(s) the schema expects at `path`, following dicts, lists and unions."""
    candidates: list[Any] = [TaskSpec]
    for part in path:
        following: list[Any] = []
        for candidate in candidates:
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                field = model_field(candidate, str(part))
                if field is not None:
                    following += candidate_types(field.annotation)
            elif typing.get_origin(candidate) in (dict, list):
                following += candidate_types(typing.get_args(candidate)[-1])
        candidates = following
    return candidates


def model_field(model: type[BaseModel], key: str) -> Any:
    """The field a spec's `key` names (its name, or its alias: `if` of a guard)."""
    return next((f for n, f in model.model_fields.items() if key in (n, f.alias)), None)


def allowed_keys(path: Path) -> list[str]:
    """Keys of the model at `path` as a spec spells them (for "did you mean" hints)."""
    for candidate in types_at(path):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return [f.alias or name for name, f in candidate.model_fields.items()]
    return []


def field_description(path: Path) -> str | None:
    if not path:
        return None
    for candidate in types_at(path[:-1]):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            field = model_field(candidate, str(path[-1]))
            if field is not None and field.description:
                return f"expected {field.description[0].lower()}{field.description[1:]}"
        if typing.get_origin(candidate) is dict:
            return NAME_HINT
    return None
