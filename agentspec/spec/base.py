"""The building blocks of the spec model: the section base class, the annotated string
kinds (expressions, statements, templates, types) and the names a spec may choose.

The choosable names come from the registries that implement them, so adding a
tool-call format, a context policy or an algorithm preset adds it to the
language, the JSON Schema and the reference with nothing else to edit. Those
registries are torch-free (``validate`` never imports torch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

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
        description="A type: str, int, float, bool, dict, any, list[T], or T? for optional.",
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
    and number fields are finite (a timeout, weight or learning rate of
    `.inf` or `.nan` is an error, E206)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
