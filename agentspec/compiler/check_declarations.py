"""Checking a spec's declarations: types, state, data fields, functions, tool
parameters (as JSON Schema), reward events, and how state is used.

Functions of the checker (`checker` is the running check, a `CheckState`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentspec.compiler import check_names, sections
from agentspec.compiler.builtins import BUILTINS, EFFECT_CALLS, Signature
from agentspec.compiler.mcp import mcp_tools
from agentspec.compiler.scopes import ROOTS
from agentspec.compiler.types import (
    ANY,
    Type,
    TypeSyntaxError,
    assignable,
    json_schema_spelling_fixed,
    json_schema_type,
    parse_type,
    python_value_type,
)
from agentspec.core.contexts import CONTEXT_POLICIES
from agentspec.core.json_schema import DATA_KEYWORDS, schema_problems
from agentspec.core.presets import ALGORITHMS, SPEC_NEEDS, unread_setting_note
from agentspec.core.source import dotted
from agentspec.spec.yaml_loader import Path

if TYPE_CHECKING:
    from agentspec.compiler.check_state import CheckState

_JSON_TYPES = ["string", "integer", "number", "boolean", "array", "object", "null"]


def type_at(checker: CheckState, path: Path, spelled: str) -> Type:
    try:
        return parse_type(spelled)
    except TypeSyntaxError as exc:
        checker.error("E507", str(exc), checker.map.value_span(path), _type_hint(spelled))
        return ANY


def _type_hint(spelled: str) -> str | None:
    """The type meant by an unknown spelling: JSON Schema's names (`integer`) in the
    spec's spelling (`int`), a parametrised dict (`dict[str, int]`: `dict`), or a
    close name (`strng`: `str`)."""
    bare = spelled.strip().removesuffix("?")
    if re.fullmatch(r"(?i)(dict|mapping|typing\.dict)\s*\[.*\]", bare):
        optional = "?" if spelled.strip().endswith("?") else ""
        return (
            f"write 'dict{optional}': a dict's keys and values are not typed (a value read"
            " from one is `any`; convert it where a type matters, e.g. `int(d[k])`)"
        )
    fixed = json_schema_spelling_fixed(spelled)
    if fixed is not None:
        return (
            f"did you mean '{fixed}'? JSON Schema's type names (string, integer, number, "
            "boolean, array, object) are for a tool's parameters only"
        )
    close = difflib.get_close_matches(
        spelled, ["str", "int", "float", "bool", "dict", "any", "list"], n=1
    )
    return f"did you mean '{close[0]}'?" if close else None


def reserved_names(checker: CheckState) -> None:
    """Declared names starting with `__` belong to Python: `__init__` or
    `__post_init__` as a state variable would break the generated
    dataclass, and no expression may mention such a name (E410)."""
    for section in ("state", "functions", "tools"):
        for name in getattr(checker.spec, section):
            if name.startswith("__"):
                kind = {"state": "state variable", "functions": "function", "tools": "tool"}
                checker.error(
                    "E413",
                    f"{kind[section]} '{name}': names starting with '__' are reserved for Python",
                    checker.map.key_span((section, name)),
                    hint=f"rename it, e.g. '{name.strip('_') or 'value'}'",
                )


def declare(checker: CheckState) -> None:
    spec = checker.spec
    checker.constant_types = {
        name: python_value_type(value) for name, value in spec.constants.items()
    }
    reserved_names(checker)
    for name, var in spec.state.items():
        path = ("state", name)
        declared = type_at(checker, (*path, "type"), var.type)
        checker.state_types[name] = declared
        if sections.initial_is_expression(checker, name):
            continue
        if var.initial is not None and not assignable(
            python_value_type(var.initial), declared, bool_is_number=False
        ):
            checker.error(
                "E508",
                f"initial value of state.{name} is {python_value_type(var.initial)}, but its type is {declared}",
                checker.map.value_span((*path, "initial")),
                hint=f"give an initial value of type {declared}, or change `type`",
            )
    if spec.data is not None:
        for name, spelled in spec.data.fields.items():
            checker.sample_types[name] = type_at(checker, ("data", "fields", name), spelled)
        for name in spec.data.derived:
            if name in spec.data.fields:
                checker.error(
                    "E412",
                    f"derived field '{name}' has the name of a declared field",
                    checker.map.key_span(("data", "derived", name)),
                    hint="rename one of them",
                )
    for name, function in spec.functions.items():
        path = ("functions", name)
        if name in BUILTINS or name in EFFECT_CALLS or name in ROOTS:
            kind = "scope" if name in ROOTS else "built-in function"
            checker.error(
                "E412",
                f"function '{name}' has the name of a {kind}",
                checker.map.key_span(path),
                hint="choose another name",
            )
        params = (
            tuple(type_at(checker, (*path, "params", i), p) for i, p in enumerate(function.params))
            if function.params is not None
            else ()
        )
        returns = type_at(checker, (*path, "returns"), function.returns)
        variadic = ANY if function.params is None else None
        checker.functions[name] = Signature(
            params, returns, function.description, variadic=variadic
        )
    for tool_name, tool in spec.tools.items():
        checker.arg_types[tool_name] = {
            arg: json_schema_type(schema) for arg, schema in tool.parameters.items()
        }


def _references(schema: Any, path: Path) -> Iterator[Path]:
    """Where a parameter schema holds `$ref` or `$dynamicRef` (not inside data: an enum's
    values may hold any key)."""
    if isinstance(schema, list):
        for i, item in enumerate(schema):
            yield from _references(item, (*path, i))
    elif isinstance(schema, dict):
        for key, value in schema.items():
            if key in ("$ref", "$dynamicRef"):
                yield (*path, key)
            elif key not in DATA_KEYWORDS:
                yield from _references(value, (*path, key))


def tool_schemas(checker: CheckState) -> None:
    for tool_name, tool in checker.spec.tools.items():
        base: Path = ("tools", tool_name, "parameters")
        for arg, schema in tool.parameters.items():
            references = list(_references(schema, (*base, arg)))
            for where in references:
                checker.error(
                    "E701",
                    f"parameter '{arg}' of tool '{tool_name}': a `$ref` cannot be resolved here",
                    checker.map.key_span(where),
                    hint="write the referenced schema inline: the model and the runtime read each"
                    " parameter inside the tool's object schema, where `#/…` points elsewhere",
                )
            for problem in [] if references else schema_problems(schema):
                where = (*base, arg, *problem.absolute_path)
                message = problem.message
                hint = "parameters are JSON Schema, e.g. {type: string, description: …}"
                if where[-1] == "type" and isinstance(problem.instance, str):
                    message = f"{problem.instance!r} is not a JSON Schema type"
                    close = difflib.get_close_matches(problem.instance, _JSON_TYPES, n=1)
                    hint = (
                        f"did you mean '{close[0]}'?"
                        if close
                        else "types: " + ", ".join(_JSON_TYPES)
                    )
                checker.error(
                    "E701",
                    f"parameter '{arg}' of tool '{tool_name}': {message}",
                    checker.map.value_span(where),
                    hint=hint,
                )
        for i, required in enumerate(tool.required or []):
            if required not in tool.parameters:
                check_names.unknown(
                    checker,
                    "E403",
                    f"required argument '{required}' is not a parameter of tool '{tool_name}'",
                    checker.map.value_span(("tools", tool_name, "required", i)),
                    required,
                    tool.parameters,
                )


def something_to_learn(checker: CheckState) -> None:
    """A spec without tools, MCP servers, an environment or rewards gives the model
    nothing to act with and nothing to be paid for: training it cannot teach anything.
    A checker error (not the schema's) so the spec's other errors are reported with it."""
    spec = checker.spec
    if spec.tools or spec.mcp or spec.environment is not None or spec.rewards:
        return
    checker.error(
        "E209",
        "the spec declares no `tools`, `mcp`, `environment` or `rewards`: the model has"
        " nothing to act with and nothing to be rewarded for",
        checker.map.value_span(()),
        "add `rewards:` (e.g. `correct: {on: final, value: …}` for a final answer),"
        " or the `tools:` the model may call",
    )


def answer_without_tools(checker: CheckState) -> None:
    """W805: `final_answer: continue` in a spec without tools. A turn without a tool call
    is then a parse error ("call one of: ." with nothing listed), so no episode can end
    before `max_steps` and `on: final` rewards never fire."""
    spec = checker.spec
    if spec.episode.final_answer != "continue" or spec.tools or spec.mcp or spec.environment:
        return
    checker.error(
        "W805",
        "episode.final_answer is `continue`, but the spec has no tools: every turn is a"
        " parse error and every episode runs to `max_steps` (`on: final` rewards never fire)",
        checker.map.value_span(("episode", "final_answer")),
        "use `final_answer: end` (a turn without a tool call is the answer), or declare tools",
    )


def unused_context_settings(checker: CheckState) -> None:
    """W806 for a `context` setting that only another policy reads (`window` under
    `full_history`): the user meant a policy they did not choose."""
    context = checker.spec.context
    owners = {
        kind.spec_setting: kind.name
        for kind in map(CONTEXT_POLICIES.get, CONTEXT_POLICIES.names())
        if kind.spec_setting is not None
    }
    for key, owner in owners.items():
        if getattr(context, key, None) is not None and owner != context.policy:
            checker.error(
                "W806",
                f"context.{key} is set, but policy `{context.policy}` does not read it"
                f" (only `{owner}` does)",
                checker.map.value_span(("context", key)),
                f"use `policy: {owner}`, or remove `{key}`",
            )


def public_fields(checker: CheckState) -> None:
    """E404 for a `data.public` entry that names no field: it would make nothing public,
    silently (a served spec gives its clients only the fields the agent sees)."""
    data = checker.spec.data
    if data is None:
        return
    known = [*data.fields, *data.derived]
    for i, name in enumerate(data.public):
        if name not in known:
            check_names.unknown(
                checker,
                "E404",
                f"data.public names '{name}', but the samples have no such field",
                checker.map.value_span(("data", "public", i)),
                name,
                known,
            )


def data_splits(checker: CheckState) -> None:
    """E210 for a split of a `jsonl:` or `parquet:` file (`data.split`, `eval_split`, a
    test's `split`): one file has no splits, so the loader reads all of it whatever the
    split says, and an `eval_split` would evaluate on the rows training learns from."""
    data = checker.spec.data
    if data is None or not data.source.startswith(("jsonl:", "parquet:")):
        return
    kind = data.source.partition(":")[0]
    named: list[tuple[Path, str]] = []
    named += [(("data", "split"), data.split)] if data.split != "train" else []
    named += [(("data", "eval_split"), data.eval_split)] if data.eval_split is not None else []
    named += [  # a test's split naming the spec's own split reads what it reads
        (("tests", "episodes", i, "split"), test.split)
        for i, test in enumerate(checker.spec.tests.episodes)
        if test.split is not None and test.split != data.split
    ]
    for path, value in named:
        key = str(path[-1])
        checker.error(
            "E210",
            f"{dotted(path)} is {value!r}, but a `{kind}:` source is one file, without splits:"
            f" every split reads all of it",
            checker.map.value_span(path),
            f"remove `{key}`"
            + (
                " (`train` and `eval` then hold out the file's last `training.eval_samples`"
                " rows, which training never sees)"
                if key == "eval_split"
                else ""
            )
            + ", or use `hf:./FOLDER` for a folder of split files (train.jsonl, test.jsonl)",
        )


def warm_start_needs_an_oracle(checker: CheckState) -> None:
    """E211: `training.warm_start` clones the oracle's episodes; without an `oracle:`
    (or a hook or walkthrough) or a `warm_start_demonstrator` the run would stop when
    its warm start begins."""
    spec = checker.spec
    demonstrator = spec.training.warm_start_demonstrator
    if spec.training.warm_start and spec.oracle is None and demonstrator is None:
        checker.error(
            "E211",
            f"training.warm_start is {spec.training.warm_start}, but the spec has no"
            " `oracle`: behaviour cloning imitates the oracle's episodes",
            checker.map.value_span(("training", "warm_start")),
            "add an `oracle:` (the turns of an expert episode), name a"
            " `training.warm_start_demonstrator`, or set `warm_start: 0`"
            " (for one run: `agentspec train --set warm_start=0`)",
        )


def algorithm_needs(checker: CheckState) -> None:
    """E212: the spec's `training.algorithm` reads a part of the spec it does not declare
    (GiGPO's `episode.anchor`); W807: it distils a teacher the spec does not name (OPD;
    a warning, as a teacher is often a path given with `--set teacher=` on the machine
    that trains). `train` refuses either run; `validate` says so first."""
    training = checker.spec.training
    algorithm = ALGORITHMS.get(training.algorithm)
    where = checker.map.value_span(("training", "algorithm"))
    for path in algorithm.spec_needs:
        node: object = checker.spec
        for key in path.split("."):
            node = getattr(node, key, None)
        if node is None:
            checker.error(
                "E212",
                f"training.algorithm `{training.algorithm}` needs `{path}`: {SPEC_NEEDS[path]}",
                where,
                f"declare `{path}`, or choose another algorithm"
                " (for one run: `agentspec train --algorithm NAME`)",
            )
    if algorithm.needs_teacher and training.teacher is None:
        checker.error(
            "W807",
            f"training.algorithm `{training.algorithm}` distils a teacher, and"
            " `training.teacher` names none: `agentspec train` refuses to start without one",
            where,
            "set `training.teacher` (a checkpoint, run directory or model such as smollm2),"
            " or pass `--set teacher=…` to `agentspec train`",
        )


def unread_settings(checker: CheckState) -> None:
    """W808 for a `training` setting the spec's algorithm does not read (`omega` under
    grpo): the user tuned something that has no effect, or meant another algorithm."""
    training = checker.spec.training
    for key in sorted(training.model_fields_set):
        unread = unread_setting_note(key, training.algorithm)
        if unread is not None:
            checker.error(
                "W808",
                unread,
                checker.map.value_span(("training", key)),
                f"remove `{key}`, or choose an algorithm that reads it",
            )


def reward_events(checker: CheckState) -> None:
    """E409 for a reward on an event of an unknown tool; W809 for one on
    `guard_failed:TOOL` where TOOL has no guard, so no call is ever refused."""
    for name, reward in checker.spec.rewards.items():
        if ":" in reward.on:
            event, _, tool = reward.on.partition(":")
            known = [*checker.spec.tools, *(t.name for t in mcp_tools(checker.spec))]
            span = checker.map.value_span(("rewards", name, "on"))
            if tool not in known:
                check_names.unknown(
                    checker,
                    "E409",
                    f"reward '{name}' is on unknown tool '{tool}'",
                    span,
                    tool,
                    known,
                )
            elif (
                event == "guard_failed"
                and tool in checker.spec.tools
                and getattr(checker.spec.tools[tool], "when", False) is None
            ):
                checker.error(
                    "W809",
                    f"reward '{name}' is on {reward.on}, but tool '{tool}' has no guard"
                    " (`when:`): no call is refused, so it never fires",
                    span,
                    f"add a `when:` to tool '{tool}', or put the reward on `tool_error:{tool}`",
                )


def state_usage(checker: CheckState) -> None:
    for name in checker.state_types:
        path = ("state", name)
        if name in checker.usage.reads and name not in checker.usage.writes:
            initial = getattr(checker.spec.state.get(name), "initial", None)
            from_sample = isinstance(initial, str) and re.search(r"\bsample\b", initial)
            checker.error(
                "W801",
                f"state.{name} is read but no tool ever writes it: it keeps its initial value",
                checker.usage.reads[name],
                hint=f"read `{initial}` where state.{name} is read (a sample's value needs no"
                " state), or assign it in a tool's effect"
                if from_sample
                else f"assign it in a tool's effect (`state.{name} = …`) or make it a constant",
            )
        elif (
            name not in checker.usage.reads
            and name not in checker.usage.writes
            and not name.startswith("__")  # already an error (E413)
        ):
            checker.error(
                "W802",
                f"state.{name} is never used",
                checker.map.key_span(path),
                hint="remove it, or read it in a guard, reward or observation",
            )
