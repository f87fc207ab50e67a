"""Checking a template site (a prompt, an observation, an oracle turn…).

Functions of the checker (`checker` is the running check, a `CheckState`): the template
is parsed by Jinja (`compiler/templates.py`); its syntax errors (E601), its
limits (E603 and the template findings), its unknown names (E602, E407) and
its unknown fields (E402–E414) are reported at their own place in the text.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from agentspec.compiler.builtins import BUILTINS
from agentspec.compiler.check_names import close_match_hint, missing_field, unavailable
from agentspec.compiler.scopes import ROOTS
from agentspec.compiler.types import BOOL, FLOAT, INT, STR, ListOf, Type, strip_optional

if TYPE_CHECKING:
    from agentspec.compiler.check_state import CheckState
    from agentspec.compiler.scopes import Site
    from agentspec.compiler.templates import ParsedTemplate


def check_template(checker: CheckState, site: Site, text: str) -> None:
    _expression_meant(checker, site, text)
    parsed = _parse(checker, text)
    if parsed is None:
        return
    template, undeclared = parsed
    for finding in template.problems():
        checker.error(
            finding.code, finding.message, checker.span(finding.start, finding.end), finding.hint
        )
    _check_names(checker, site, template, undeclared)
    _check_fields(checker, site, template)


def _expression_meant(checker: CheckState, site: Site, text: str) -> None:
    """W810 for a template that is only a name of its scope (`observe: state.mode`): it
    renders as those words, not as the value they name."""
    found = re.fullmatch(r"\s*([a-z]+)((?:\.[A-Za-z_]\w*)+)\s*", text)
    if found is None or found.group(1) not in site.scope.roots:
        return
    name = found.group(1) + found.group(2)
    checker.error(
        "W810",
        f"this template is the text '{name}': the model sees those words, not the value",
        checker.span(found.start(1), found.end(2)),
        f"to show the value, write '{{{{ {name} }}}}'",
    )


def _parse(checker: CheckState, text: str) -> tuple[ParsedTemplate, set[str]] | None:
    """The parsed template and the names it reads, or None after reporting
    why it does not parse."""
    from jinja2 import TemplateSyntaxError

    from agentspec.compiler import templates

    try:
        parsed = templates.parse(text)
        unknown = list(parsed.unknown_filters_and_tests())
        for finding in unknown:
            span = checker.span(finding.start, finding.end)
            checker.error(finding.code, finding.message, span, finding.hint)
        if unknown:
            return None  # Jinja's name analysis would stop at the first of them
        return parsed, parsed.undeclared()  # the name analysis can fail like the parse
    except TemplateSyntaxError as exc:
        offset = _line_offset(text, exc.lineno or 1)
        named = re.search(r"named '(\w+)'", exc.message or "")
        if named and named.group(1) in text:
            offset = _word_offset(text, named.group(1))
        checker.error(
            "E601",
            f"template syntax error: {exc.message}",
            checker.span(offset, offset + 1),
            hint="Jinja2 syntax: {{ sample.x }}, {% if … %}…{% endif %}",
        )
    except RecursionError:
        checker.error(
            "E603",
            "the template is nested too deeply to check",
            checker.span(0, 1),
            hint="split the expression into {% set %} steps",
        )
    return None


def _check_names(
    checker: CheckState, site: Site, parsed: ParsedTemplate, undeclared: set[str]
) -> None:
    """Each name the template reads that its site does not provide (E602, E407)."""
    allowed = dict(site.scope.roots)
    for name in sorted(undeclared):
        if name in allowed:
            continue
        offset = parsed.unset_read_offset(name) if parsed.sets(name) else parsed.name_offset(name)
        span = checker.span(offset, offset + len(name))
        if name in ROOTS:
            unavailable(checker, name, span)
            continue
        fields = [
            f"{root}.{f}" for root, rec in allowed.items() if isinstance(rec, dict) for f in rec
        ]
        hint: str | None
        if parsed.sets(name):
            message = f"template variable '{name}' is read where its {{% set %}} may not have run"
            hint = "set it before this point on every path (in each branch, with an {% else %})"
            checker.error("E602", message, span, hint)
            continue
        message = f"undefined template variable '{name}'"
        if site.tool is not None and name in _effect_lets(checker, site.tool):
            hint = (  # a `let` lives for the effect's statements, not the observation after
                f"'{name}' is a `let` of the tool's effect, which ends with the effect: keep"
                f" the value in state (`state.{name} = …`) and show `{{{{ state.{name} }}}}`"
            )
        elif name in checker.functions or name in BUILTINS:
            hint = (  # `{{ fmt(state.temp) }}`: templates render, they call nothing
                f"a template cannot call '{name}': compute the value in the tool's"
                " `returns:` and show `{{ result }}`, or use a Jinja filter (`| round`)"
            )
        else:
            hint = close_match_hint(name, [*allowed, *fields], fields)
        checker.error("E602", message, span, hint)


def _check_fields(checker: CheckState, site: Site, parsed: ParsedTemplate) -> None:
    """Each `root.field` the template reads whose record has no such field."""
    from jinja2 import nodes

    allowed: dict[str, Any] = dict(site.scope.roots)
    for getattr_node in parsed.find(nodes.Getattr):
        if getattr_node.attr.startswith("_"):
            continue  # reported among the problems
        target = getattr_node.node
        if not isinstance(target, nodes.Name) or target.name not in allowed:
            continue
        record = allowed[target.name]
        if target.name in site.scope.open_roots:
            continue
        if isinstance(record, Type):
            _check_value_attribute(checker, parsed, getattr_node, target.name, record)
            continue
        if not isinstance(record, dict):
            continue
        if getattr_node.attr not in record:
            offset = parsed.attr_offset(getattr_node)
            span = checker.span(offset, offset + len(getattr_node.attr))
            missing_field(checker, target.name, getattr_node.attr, span, record)
        elif target.name == "state":
            checker.usage.reads.setdefault(getattr_node.attr, checker.span(0, 1))


def _check_value_attribute(
    checker: CheckState, parsed: ParsedTemplate, node: Any, root: str, typ: Type
) -> None:
    """E411 for `{{ result.titles }}` where `result` is a list, a text or a number: Jinja
    reads a dict's key as an attribute, and a text's method (`result.upper()`) is one,
    but a list has no `titles` (it failed every call at run time)."""
    inner = strip_optional(typ)
    python_type = list if isinstance(inner, ListOf) else _PYTHON_TYPES.get(inner)
    if python_type is None or hasattr(python_type, node.attr):
        return
    offset = parsed.attr_offset(node)
    checker.error(
        "E411",
        f"'{root}' is a value of type {typ}; it has no attribute '{node.attr}'",
        checker.span(offset, offset + len(node.attr)),
        hint="return a dict from the tool to read fields of it, or show the value as it is",
    )


_PYTHON_TYPES: dict[Type, type] = {STR: str, INT: int, FLOAT: float, BOOL: bool}


def _line_offset(text: str, line: int) -> int:
    offset = 0
    for _ in range(line - 1):
        nxt = text.find("\n", offset)
        if nxt == -1:
            break
        offset = nxt + 1
    return offset


def _word_offset(text: str, word: str) -> int:
    match = re.search(r"\b" + re.escape(word) + r"\b", text)
    return 0 if match is None else match.start()


def _effect_lets(checker: CheckState, tool: str) -> set[str]:
    """The names `let NAME = …` binds in ``tool``'s effect."""
    spec_tool = checker.spec.tools.get(tool)
    if spec_tool is None:
        return set()
    effect = spec_tool.effect
    statements = [effect] if isinstance(effect, str) else list(effect or [])
    return {m.group(1) for text in statements if (m := _LET.match(str(text)))}


_LET = re.compile(r"\s*let\s+([A-Za-z_]\w*)\s*=")
