"""Regenerate docs/reference.md: the spec language, from the code that defines it.

Every section and field comes from the pydantic models (agentspec/spec/model.py:
type, default, constraints, description), the expression syntax from the Lark
grammar (agentspec/compiler/grammar.lark), the scopes from the checker (compiler/scopes.py), and
every built-in function from `BUILTINS` (agentspec/compiler/builtins.py). A
test checks that the committed page is current; rerun after changing any of them.

    python docs/gen_reference.py          # write docs/reference.md
    python docs/gen_reference.py --check  # exit 1 if it is stale
"""

from __future__ import annotations

import inspect
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import annotated_types  # noqa: E402
from pydantic import BaseModel  # noqa: E402
from pydantic.fields import FieldInfo  # noqa: E402

from agentspec.compiler import scopes  # noqa: E402
from agentspec.compiler.builtins import BUILTINS, EFFECT_CALLS  # noqa: E402
from agentspec.compiler.user_check import USER_FIELDS  # noqa: E402
from agentspec.spec import model, testing, user  # noqa: E402
from agentspec.spec.schema import SCHEMA_ID  # noqa: E402

OUTPUT = ROOT / "docs" / "reference.md"
GRAMMAR = ROOT / "agentspec" / "compiler" / "grammar.lark"

# Where each model appears in a spec, in the order the reference shows them.
SECTIONS: list[tuple[type[BaseModel], str]] = [
    (model.TaskSpec, "top level"),
    (model.DataSpec, "data"),
    (model.PromptSpec, "prompt"),
    (model.StateVar, "state.NAME"),
    (model.FunctionSpec, "functions.NAME"),
    (model.ToolSpec, "tools.NAME"),
    (model.McpServerSpec, "mcp.NAME"),
    (model.McpToolSpec, "mcp.NAME.tools.TOOL"),
    (model.GuardSpec, "tools.NAME.when, guards.NAME (a guard with a message, or a list entry)"),
    (model.EnvironmentSpec, "environment"),
    (model.EpisodeSpec, "episode"),
    (model.ReasoningSpec, "episode.reasoning"),
    (model.ContextSpec, "context"),
    (model.RewardSpec, "rewards.NAME"),
    (model.OracleEach, "oracle[i] (one step per item)"),
    (model.OracleHook, "oracle (hook or walkthrough)"),
    (user.UserSpec, "user"),
    (user.UserReplySpec, "user.replies.NAME"),
    (user.UserSamplingSpec, "user.sampling"),
    (model.TrainingSpec, "training"),
    (model.TestsSpec, "tests"),
    (model.OracleGateSpec, "tests.oracle"),
    (model.ExploreGateSpec, "tests.explore"),
    (model.SpecTest, "tests.episodes[N]"),
    (model.SpecTestExpect, "tests.episodes[N].expect"),
    (model.TextMatch, "an expected observation given by a pattern"),
    (testing.UserExpect, "tests.episodes[N].expect.user"),
]

# Named string kinds of the language (aliases in model.py).
KINDS: list[tuple[Any, str, str]] = [
    (model.Expression, "expression", "an expression of the language (see below)"),
    (model.Statement, "statement", "an effect statement (see below)"),
    (model.Template, "template", "a Jinja2 template, rendered in a sandbox"),
    (
        model.GuardStepText,
        "guard step",
        "a condition (an expression), `let NAME = EXPR`, or the name of a guard of `guards:` "
        "(see Guards below)",
    ),
    (model.TypeName, "type", "a type name (see Types below)"),
    (model.Identifier, "identifier", "ASCII letters, digits and `_`, not starting with a digit"),
    (
        model.ImportPath,
        "import path",
        "`module.path:attribute` of your own Python code; `validate` reads (never runs) a "
        "module beside the spec: it must parse and define the attribute (E904)",
    ),
    (
        model.RewardEvent,
        "reward event",
        "`step`, `final`, `tool:NAME`, `tool_error`, `tool_error:NAME`, `guard_failed`, "
        "`guard_failed:NAME`, `parse_error` or `truncated` (see [Episode endings](episodes.md))",
    ),
]

PRIMITIVES = {str: "string", int: "integer", float: "number", bool: "boolean", Any: "any"}


def anchor(cls: type[BaseModel]) -> str:
    return cls.__name__.lower()


def type_text(annotation: Any) -> str:
    """A field's type in words, with links to the sections of nested models."""
    for alias, name, _ in KINDS:
        if annotation == alias:
            return name
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_text(args[0])
    if origin is typing.Literal:
        return " \\| ".join(f"`{json.dumps(a)}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        parts = [type_text(a) for a in args if a is not type(None)]
        text = " or ".join(parts)
        return f"{text} or null" if type(None) in args else text
    if origin is list:
        return f"list of {type_text(args[0])}"
    if origin is dict:
        return f"map of {type_text(args[0])} → {type_text(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{anchor(annotation)})"
    if annotation in PRIMITIVES:
        return PRIMITIVES[annotation]
    return str(annotation)  # pragma: no cover - every field type is handled above


def _alias_pattern(alias: Any) -> str | None:
    for item in typing.get_args(alias)[1:]:
        for meta in getattr(item, "metadata", []):
            if getattr(meta, "pattern", None):
                return str(meta.pattern)
    return None


def field_type_text(field: FieldInfo) -> str:
    """Like `type_text`, for a field whose alias pydantic unwrapped into the field."""
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    kind = extra.get("x-agentspec")
    for _, name, _ in KINDS:
        if kind == name:
            return name
    patterns = [getattr(m, "pattern", None) for m in field.metadata]
    for alias, name, _ in KINDS:
        if _alias_pattern(alias) is not None and _alias_pattern(alias) in patterns:
            return name
    return type_text(field.annotation)


def default_text(field: FieldInfo) -> str:
    if field.is_required():
        return "**required**"
    if field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
        if isinstance(value, BaseModel):
            return "all defaults"
    else:
        value = field.default
    return f"`{json.dumps(value, ensure_ascii=False)}`"


def constraints_text(field: FieldInfo) -> str:
    words = []
    for item in field.metadata:
        if isinstance(item, annotated_types.Ge):
            words.append(f"≥ {item.ge}")
        elif isinstance(item, annotated_types.Gt):
            words.append(f"> {item.gt}")
        elif isinstance(item, annotated_types.Le):
            words.append(f"≤ {item.le}")
        elif isinstance(item, annotated_types.Lt):
            words.append(f"< {item.lt}")
        elif getattr(item, "pattern", None):
            words.append(f"matches `{item.pattern}`")
    return f" ({', '.join(words)})" if words else ""


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def yaml_key(name: str, field: FieldInfo) -> str:
    """The key a spec writes for a field: its alias where it has one (a guard's `if`,
    whose Python name `condition` a spec cannot use), else its name."""
    alias = field.validation_alias if isinstance(field.validation_alias, str) else field.alias
    return alias or name


def section(cls: type[BaseModel], where: str) -> list[str]:
    doc = " ".join(inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0].split())  # first paragraph
    lines = [
        f"### {cls.__name__}",
        "",
        f"`{where}` — {doc}",
        "",
        "| key | type | default | description |",
        "|---|---|---|---|",
    ]
    for name, field in cls.model_fields.items():
        description = cell((field.description or "") + constraints_text(field))
        lines.append(
            f"| `{yaml_key(name, field)}` | {field_type_text(field)} | {default_text(field)} "
            f"| {description} |"
        )
    lines.append("")
    return lines


def render() -> str:
    lines = [
        "# Language reference",
        "",
        "<!-- Generated by `python docs/gen_reference.py`; do not edit by hand. -->",
        "",
        "A spec is one YAML file. This page lists every section and field of version "
        f"{model.LANGUAGE_VERSION} of the language (from the pydantic models in "
        "`agentspec/spec/model.py`), the expression syntax (from "
        "`agentspec/compiler/grammar.lark`), the names an expression may read, and every "
        "built-in function (from `agentspec/compiler/builtins.py`). Unknown keys are errors.",
        "",
        "Editors: `agentspec schema` prints the same as JSON Schema (draft 2020-12, "
        f"`$id` `{SCHEMA_ID}`); `agentspec init` writes a copy beside a new spec and "
        "points the spec's first line at it:",
        "",
        "```yaml",
        "# yaml-language-server: $schema=./agentspec-1.schema.json",
        "```",
        "",
        "## Sections and fields",
        "",
    ]
    for cls, where in SECTIONS:
        lines += section(cls, where)
    lines += [
        "## Value kinds",
        "",
        "Strings in a spec are one of these kinds; the checker parses each where it appears.",
        "",
        "| kind | what it is |",
        "|---|---|",
        *[f"| {name} | {cell(what)} |" for _, name, what in KINDS],
        "",
        "## Types",
        "",
        "`str`, `int`, `float`, `bool`, `dict`, `any`, `list[T]` (`list` alone is "
        "`list[any]`), and `T?` for an optional value (`null` allowed). An `int` is accepted "
        "where a `float` is expected. These are the types of `state`, `data.fields` and "
        "`functions`. Tool parameters are JSON Schemas; their types map to these (`string` → "
        "`str`, `integer` → `int`, `number` → `float`, `boolean` → `bool`, `array` → "
        "`list[…]`, `object` → `dict`), but JSON Schema's names are not types elsewhere: "
        "`type: integer` in `state` is an error (E507) whose hint gives `int`.",
        "",
        "## Values and names",
        "",
        "Spec values are JSON's: strings, numbers, booleans, null, lists and mappings. "
        "YAML reads as YAML 1.2 does: an unquoted date (`2024-01-01`) is a string, "
        "`1e-4` a number (YAML 1.1 made it text), and only `true`/`false` are booleans "
        "(`yes`, `no`, `on` are strings); "
        "`!!binary` and `!!timestamp` values are errors (E207), and so is a string with "
        'half of a UTF-16 surrogate pair (`"\\ud83d"`, E208; a whole escaped pair, '
        "as JSON writes it, is the character it spells). Number fields of the schema "
        "(`timeout`, `weight`, a constant reward `value`, `training.*`) must be finite "
        "(E206): a tool always has a time limit, and an infinite or NaN reward poisons "
        'training. A number field takes a number: `max_steps: "3"` (text) and '
        "`max_steps: true` are E203, as the published JSON Schema says. Tool parameter schemas are JSON, so `.inf` and `.nan` are errors there "
        "too. Elsewhere (state initial values, function `config`, `1e999` in an expression) "
        "infinite and NaN floats are ordinary floats.",
        "",
        "Names of state variables, functions and tools may be any identifier except those "
        "starting with `__`, which belong to Python (E413). The generated module keeps your "
        "names where it can and renames only what Python needs, never two names to one: a "
        "state variable whose name without trailing underscores is a Python keyword, soft "
        "keyword, `dataclasses`, `float`, `list`, `dict`, `l`, `I` or `O` gets one more `_` "
        "(`class` → `state.class_`, `class_` → `state.class__`); a function that is not a "
        'plain attribute name is called as `user["class"]`; a tool, environment or flow '
        "class whose name the module already uses gets a number (`SpecTool2` for a tool "
        "named `spec`). Traces, observations and `state_summary` templates always show the "
        "spec's own names.",
        "",
        "## Expressions and statements",
        "",
        "Guards (`when`), `returns`, reward values, `done_when`, `success`, `anchor` and "
        "`data.derived` are expressions; tool effects are statements. The language is "
        "Python-like and closed: literals, lists, dicts, arithmetic, comparisons (chained "
        "as in Python: `0 <= x < n` is `0 <= x and x < n`), `and` / "
        "`or` / `not`, `in` / `not in`, `a if c else b`, indexing, attribute access on the "
        "scopes below only, and calls to built-in or declared functions only. Effects are "
        "`state.x = expr`, `state.x += expr`, `state.x -= expr`, `done()` and `fail(msg)`, "
        "each optionally followed by `if cond`; a target may index into a variable "
        '(`state.db[k]["seats"] -= 1`).',
        "",
        *LANGUAGE_NOTES,
        "",
        "### Scopes",
        "",
        "| name | what it holds | where it can be read |",
        "|---|---|---|",
        *scope_rows(),
        "",
        "### Grammar",
        "",
        "The whole grammar (Lark, LALR), verbatim:",
        "",
        "```text",
        GRAMMAR.read_text(encoding="utf-8").rstrip(),
        "```",
        "",
        "## Built-in functions",
        "",
        "Callable from every expression without declaring them. `= …` marks an optional "
        "parameter, `*T` a variable number of arguments.",
        "",
        "| function | signature | description |",
        "|---|---|---|",
    ]
    for name, sig in sorted(BUILTINS.items()):
        lines.append(f"| `{name}` | `{cell(sig.spelled(name))}` | {cell(sig.doc)} |")
    lines += [
        "",
        "### Effect calls",
        "",
        "Statements in a tool's `effect`, not values.",
        "",
        "| call | signature | description |",
        "|---|---|---|",
    ]
    for name, sig in EFFECT_CALLS.items():
        spelled = sig.spelled(name).rsplit(" -> ", 1)[0]
        lines.append(f"| `{name}` | `{cell(spelled)}` | {cell(sig.doc)} |")
    lines.append("")
    return "\n".join(lines)


LANGUAGE_NOTES = [
    "### Collections and local names",
    "",
    "- **Comprehensions**: `[EXPR for x in LIST if COND …]` and "
    "`{KEY: VALUE for k, v in items(DICT) if COND}`. Iterating a `list[T]` binds `T`, a "
    "dict its keys (`str`), a str its characters; two names unpack pairs. The result "
    "of a list comprehension is `list[T]` of its element's type (E511 when the value "
    "cannot be iterated).",
    "- **`let NAME = EXPR`** in a tool's `effect` names a value for the rest of that "
    "tool call's effects; a name is bound once, and may not hide a scope, a function "
    "or a reserved name (`s`, `fn`, `user`, `self`, names starting with `_`) (E415).",
    "- **Constants**: `constants:` maps names to values, readable as `constants.NAME` "
    "in every expression and template; a constant's type is its value's (E414 for an "
    "unknown one).",
    "- **Method calls are not in the language**: `d.get(k)` or `xs.append(x)` is E311, "
    "whose hint names the built-in to use (`get(d, k, default)`, "
    "`state.xs = state.xs + [x]`, …).",
    "",
    "### Indexing",
    "",
    "A literal index is Python's: `xs[0]`, `xs[-1]` (the last item; a literal negative "
    'index is allowed because it says what it means) and `d["key"]`. A **computed** '
    "index on a list or str must be in `0 … len − 1`: a negative or out-of-range one is "
    "an expression error (IndexError), never a wrap — so `sample.rows[y][x]` with "
    "`x = -1` fails instead of reading the last column. `get(xs, i, default)` returns "
    "the default for any index outside the list. An expression error is recorded on "
    "the step (`info.expression_errors`) with its spec line, e.g. `rewards.goal.value "
    "(specs/grid.yaml:40): IndexError: index -1 is out of range for a list of length 6`; "
    "in a tool the call is a tool error, in a reward the component counts 0.",
    "",
    "### Samples, state and copies",
    "",
    "Every episode works on its own deep copy of the sample, so nothing an episode does "
    "reaches another episode (a GRPO group, a repeated evaluation). A list or dict "
    "assigned to state — from the sample, a constant, a result or another variable — "
    "is copied, so state never aliases them; `state.NAME.initial` may be an expression "
    "over `sample` and `constants`, evaluated and copied when each episode starts. For "
    "a `str` or `any` variable a string is an expression only when it reads `sample` or "
    "`constants` (`initial: sample.goal`, `initial: \"'Dear ' + sample.name\"`); any "
    "other string is the text itself (`initial: search`, `initial: 1 + 2`).",
    "",
    "### Guards",
    "",
    "`when:` is a condition, `{if: COND, message: TEMPLATE}`, the name of a named guard, "
    "or a list of those and `let NAME = EXPR` bindings, checked in order; the first "
    "that fails refuses the call. Guards may read `args`, `state`, `sample`, `step` and "
    "`constants`. A `let` names a value for the steps after it in the same list (their "
    "conditions and messages); a name is bound once (E415).",
    "",
    "`guards:` names guards that tools share. Each is written like a `when` (a "
    "condition, a guard with a message, or a list of steps, which may name other "
    "guards); a tool uses one by its name, alone (`when: signed_in`) or as an entry of "
    "its list. A named guard is checked in every tool that uses it, against that "
    "tool's `args` (E403 names the tool); its `let` names are its own. An unknown name "
    "is E416, and so are a guard that uses itself and one that expands to more than 500 "
    "steps; a named guard no tool uses is W804.",
    "",
    "```yaml",
    "guards:",
    '  signed_in: {if: \'state.user != ""\', message: "Sign in first: call find_user."}',
    "  order_pending:",
    "    - let order = get(state.orders, args.order_id, {})",
    '    - if: \'get(order, "status", "") == "pending"\'',
    "      message: \"Order {{ args.order_id }} is {{ order.status | default('unknown') }};"
    ' only pending orders change."',
    "tools:",
    "  cancel_order:",
    "    when: [signed_in, order_pending]",
    "  modify_order:",
    '    when: [signed_in, order_pending, {if: \'args.item != ""\', message: "Say which item."}]',
    "```",
    "",
    "A refused call is a tool error. Its message is the failing guard's `message` "
    "rendered (with the `let` names before it), or, for a plain condition, "
    "`NAME cannot be used now: it requires CONDITION`; the model sees it as every "
    "tool error, in the tool format's own wrapping: `Error: MESSAGE` inside "
    "`<tool_response>…</tool_response>` (hermes), after `Observation: ` (react, "
    'bracket) or in the tool message (harmony), and `{"name": …, "error": '
    '"MESSAGE"}` (json). Messages longer than 2,000 characters are cut. A refusal '
    "fires the reward events `tool_error`, `tool_error:NAME`, `guard_failed` and "
    "`guard_failed:NAME` — `policy: {on: guard_failed, value: -1.0}` is a "
    "policy-violation penalty. A guard runs before `returns` and the effects, so a "
    "refused call changes nothing. A message that fails to render (a name it reads "
    "is undefined for these arguments: guard it with `| default(…)`) still refuses the "
    "call, as `NAME cannot be used now: its guard refused the call`, and records an "
    "expression error at the guard.",
    "",
    "### Effects and failures",
    "",
    "Effects run in order and change `state` as they go; nothing is rolled back. "
    "`fail(msg)` ends the call as a tool error whose message is `msg` (shown as "
    "above): the effects before it stay, the ones after it do not run, and "
    "`tool:NAME` rewards do not fire. An expression that fails in `returns` or an "
    "effect (an index out of range) is the same: a tool error, with the effects "
    "before it kept. An `observe` template runs after the effects and the "
    "`tool:NAME` rewards: when it fails, the call is a tool error, and its effects "
    "and those rewards stand.",
    "",
    "### Oracles",
    "",
    "`oracle:` lists action templates over `sample` and `constants`, rendered lazily: "
    "one per step, only when the episode gets there. An entry `{each: LIST, action: "
    "TEMPLATE}` gives one step per item (`item`, `index`), so a variable-length expert "
    "needs no Python; an action that renders empty ends the script. A rendering error "
    "names the spec line and the sample id.",
]

SCOPE_TEXT = {
    "constants": "the spec's `constants:`, by name",
    "state": "the episode state declared in `state:` (writable in effects)",
    "args": "the arguments of the tool call",
    "sample": "the current sample's `data.fields` (and `data.derived`)",
    "action": "the model's turn: "
    + ", ".join(f"`{k}` ({t})" for k, t in scopes.ACTION_FIELDS.items()),
    "step": "the step: "
    + ", ".join(f"`{k}` ({t})" for k, t in scopes.STEP_FIELDS.items())
    + "; `index` counts from 0: the step being played (in its tool's guard, effect and"
    " `observe`, its rewards, `done_when`), in `episode.anchor` the step about to be played",
    "result": "the value of the tool's `returns`; for an MCP tool, the text of its result"
    " (what the model sees, `str`)",
    "reward": "each reward component of the episode so far, by name (float)",
    "env": "the environment adapter's facts (`env.score`, `env.done`, …; any attribute)",
    "user": "the simulated user (docs/users.md): "
    + ", ".join(f"`{k}` ({t})" for k, t in USER_FIELDS.items()),
}


def scope_rows() -> list[str]:
    where = scopes.WHERE
    return [f"| `{root}` | {SCOPE_TEXT[root]} | {where[root]} |" for root in scopes.ROOTS]


def main() -> int:
    text = render()
    if "--check" in sys.argv:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print("docs/reference.md is stale: run `python docs/gen_reference.py`")
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print("wrote docs/reference.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
