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

from agentspec.core.contexts import CONTEXT_POLICIES
from agentspec.core.presets import ALGORITHMS, STEP_CLIP_PRESETS
from agentspec.formats import available_formats

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
DOTTED_NAME = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
"""`a.b.c`: names joined by single dots (`f.` and `f..g` name nothing)."""
ImportPath = Annotated[
    str,
    Field(
        pattern=rf"^{DOTTED_NAME}:{DOTTED_NAME}$",
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


# The validation context of a spec file (`spec.load`), where a number field takes no text.
SPEC_DOCUMENT = {"spec_document": True}


class Section(BaseModel):
    """Base of every section: unknown keys are errors, values are immutable,
    number fields are finite (a timeout, weight or learning rate of `.inf` or
    `.nan` is an error, E206), and a number field takes no boolean. In a spec file
    (validated with `SPEC_DOCUMENT`) it takes no text either (`max_steps: "3"` is
    E203, as the published JSON Schema says; the YAML loader reads `1e-4` as the
    number it looks like); values from Python (`train(spec, out, {"iterations":
    "2"})`) are converted as pydantic's lax mode converts them."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _a_number_is_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        # Lax mode reads `max_steps: true` as 1 and `max_steps: "3"` as 3; YAML's
        # `true` is never meant as a number, and text in a spec file is refused by
        # every tool that reads the spec with its JSON Schema.
        if info.field_name is None or not isinstance(value, (bool, str)):
            return value
        if isinstance(value, str) and not (info.context or {}).get("spec_document"):
            return value
        takes = _scalar_kinds(cls.model_fields[info.field_name].annotation)
        number = "float_type" if "float" in takes else "int_type" if "int" in takes else None
        if number is None or type(value).__name__ in takes:
            return value
        if isinstance(value, bool):
            raise PydanticCustomError(number, "a boolean is not a number")
        raise PydanticCustomError(number, "text is not a number")


def _scalar_kinds(annotation: Any) -> set[str]:
    """The scalar types a field takes (`bool`, `int`, `float`, `str`; `Any` takes all)."""
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
            takes.update(type(v).__name__ for v in typing.get_args(kind))
        elif kind is Any:
            takes.update(("bool", "int", "float", "str"))
        elif kind in (bool, int, float, str):
            takes.add(kind.__name__)
    return takes
