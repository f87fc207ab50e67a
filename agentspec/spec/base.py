"""The building blocks of the spec model: the section base class, the annotated string
kinds (expressions, statements, templates, types) and the names a spec may choose.

The choosable names come from the registries that implement them, so adding a
tool-call format, a context policy or an algorithm preset adds it to the
language, the JSON Schema and the reference with nothing else to edit. Those
registries are torch-free (``validate`` never imports torch).
"""

from __future__ import annotations

import types
import typing
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from agentspec.contexts import CONTEXT_POLICIES
from agentspec.formats import available_formats
from agentspec.presets import ALGORITHMS, STEP_CLIP_PRESETS

LANGUAGE_VERSION = 1

Expression = Annotated[
    str,
    Field(
        description="An expression of the agentspec language (Python-like).",
        json_schema_extra={"x-agentspec": "expression"},
    ),
]
Statement = Annotated[
    str,
    Field(
        description="An effect statement: `state.x = expr`, `state.x += expr`, `done()` or `fail(msg)`, optionally followed by `if cond`.",
        json_schema_extra={"x-agentspec": "statement"},
    ),
]
GuardStepText = Annotated[
    str,
    Field(
        description="One step of a guard list: a condition, `let NAME = EXPR`, or the name of a guard of `guards:`.",
        json_schema_extra={"x-agentspec": "guard step"},
    ),
]
Template = Annotated[
    str,
    Field(
        description="A Jinja2 template, rendered in a sandbox.",
        json_schema_extra={"x-agentspec": "template"},
    ),
]
TypeName = Annotated[
    str,
    Field(
        description="A type: str, int, float, bool, dict, any, list[T] (list alone: list[any]), or T? for optional.",
        json_schema_extra={"x-agentspec": "type"},
    ),
]
Identifier = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
ImportPath = Annotated[
    str,
    Field(
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$",
        description="A Python object as `module.path:attribute`.",
    ),
]

if TYPE_CHECKING:  # a Literal of registered names is only known at run time
    ToolFormat = str
    ContextPolicyName = str
    Algorithm = str
    StepClipPreset = str
else:
    ToolFormat = Literal[tuple(available_formats())]
    ContextPolicyName = Literal[CONTEXT_POLICIES.names()]
    Algorithm = Literal[ALGORITHMS.names()]
    StepClipPreset = Literal[STEP_CLIP_PRESETS.names()]


class Section(BaseModel):
    """Base of every section: unknown keys are errors, values are immutable,
    number fields are finite (a timeout, weight or learning rate of `.inf` or
    `.nan` is an error, E206) and a boolean is not a number (E203).

    Numbers are otherwise converted as pydantic's lax mode converts them: YAML 1.1
    reads `1e-4` as text, and `learning_rate: 1e-4` is a common spelling."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _boolean_is_not_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        # Lax mode reads `max_steps: true` as 1; YAML's `true`/`yes` is never meant as one.
        if isinstance(value, bool) and info.field_name is not None:
            kind = _number_kind(cls.model_fields[info.field_name].annotation)
            if kind is not None:
                raise PydanticCustomError(kind, "a boolean is not a number")
        return value


def _number_kind(annotation: Any) -> str | None:
    """``int_type`` or ``float_type`` for a field that takes a number but no boolean;
    None for any other field (one that takes a boolean, or no number)."""
    takes: set[str] = set()
    pending = [annotation]
    while pending:
        kind = pending.pop()
        origin = typing.get_origin(kind)
        if origin is Annotated:
            pending.append(typing.get_args(kind)[0])
        elif origin in (typing.Union, types.UnionType):
            pending.extend(typing.get_args(kind))
        elif origin is Literal:
            takes.update("bool" for v in typing.get_args(kind) if isinstance(v, bool))
        elif kind is bool or kind is Any:
            takes.add("bool")
        elif kind in (int, float):
            takes.add(kind.__name__)
    if "bool" in takes:
        return None
    return "float_type" if "float" in takes else "int_type" if "int" in takes else None
