"""Check a spec template (Jinja2) without running any of it.

Compiling a Jinja template evaluates its constant parts (`{{ 10**(10**10) }}`
would never finish), so the checker only parses: it finds undeclared names
with Jinja's own scope analysis, run with constant folding switched off, and
walks the tree for what the run-time sandbox would refuse — names starting
with `_` reached through `.x`, `['x']`, `|attr('x')` or a format string,
`{% include %}` and its relatives (a spec template has no loader), and
recursive macros, and constant parts that would pass a run-time resource
limit (`{{ 'a' * 10**9 }}`), computed with the sandbox's bounded operators.
Every finding carries character offsets into the template,
taken from Jinja's token stream, so the caret lands on the occurrence that is
wrong rather than on the first text that looks like it.
"""

from __future__ import annotations

import difflib
import string
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from jinja2 import nodes
from jinja2.sandbox import SandboxedEnvironment

from agentspec.compiler import template_flow
from agentspec.core import sandbox

# A name no template can write (it starts with '_', which the checker refuses).
_VOLATILE = "_agentspec_no_folding"


@dataclass(frozen=True)
class Finding:
    """One problem in a template, at offsets `start:end` of its text."""

    code: str
    message: str
    start: int
    end: int
    hint: str | None = None


@dataclass(frozen=True)
class _Token:
    offset: int
    line: int
    kind: str
    value: str


class _CheckingEnvironment(SandboxedEnvironment):
    """Parses and analyses only. Intercepted operators are never folded into
    constants by Jinja's code generator (which `find_undeclared_variables`
    runs), so intercepting all of them keeps the analysis from computing
    `10**(10**10)`; filters and tests are kept from folding by a volatile
    evaluation context (see `ParsedTemplate.undeclared`)."""

    intercepted_binops = frozenset(SandboxedEnvironment.default_binop_table)
    intercepted_unops = frozenset(SandboxedEnvironment.default_unop_table)

    def __init__(self) -> None:
        super().__init__()
        for (
            name
        ) in sandbox.REMOVED_GLOBALS:  # what the runtime's sandbox does not offer is undefined
            del self.globals[name]


@cache
def _environment() -> SandboxedEnvironment:
    return _CheckingEnvironment()


class ParsedTemplate:
    """A template's tree and tokens; `undeclared()` and `problems()` check it."""

    def __init__(self, text: str, tree: nodes.Template):
        self.text = text
        self.tree = tree
        # Significant tokens, and where each (kind, value) occurs: every lookup
        # below is then proportional to the occurrences, not to the template.
        self.tokens = [t for t in _tokens(text) if t.kind != "whitespace"]
        self._where: dict[tuple[str, str], list[int]] = {}
        for i, token in enumerate(self.tokens):
            self._where.setdefault((token.kind, token.value), []).append(i)
        self._first_loads: dict[str, int] | None = None
        self._stored: set[str] | None = None
        self._unset: dict[str, nodes.Name] = {}  # set names read where the set may not have run
        self._load_rank: dict[int, int] | None = None
        self._nodes = _walk(tree)

    def find(self, *types: type[nodes.Node]) -> list[Any]:
        """Every node of these types, in document order (one walk, shared)."""
        return [n for n in self._nodes if isinstance(n, types)]

    # ------------------------------------------------------------ locating

    def offset_of(
        self, line: int, kind: str, value: str, after: tuple[str, ...] | None = None
    ) -> int | None:
        """Offset of the first token `value` on `line` (else anywhere) whose
        previous significant token is in `after` (None: not '.', '|' or 'is')."""
        candidates = self._where.get((kind, value), [])
        for same_line in (True, False):
            for i in candidates:
                if same_line and self.tokens[i].line != line:
                    continue
                previous = self.tokens[i - 1].value if i > 0 else ""
                if (previous in after) if after is not None else previous not in _NOT_A_NAME:
                    return self.tokens[i].offset
        return None

    def nth_offset(self, line: int, kind: str, value: str, nth: int) -> int:
        """Offset of the nth token `value` on `line` (the last one if fewer)."""
        found = [
            self.tokens[i].offset
            for i in self._where.get((kind, value), [])
            if self.tokens[i].line == line
        ]
        return found[min(nth, len(found) - 1)] if found else 0

    def name_offset(self, name: str) -> int:
        """Where the first use of the free variable `name` is."""
        if self._first_loads is None:
            self._first_loads = {}
            for node in self.find(nodes.Name):
                if node.ctx == "load":
                    line = self._first_loads.get(node.name, node.lineno)
                    self._first_loads[node.name] = min(line, node.lineno)
        found = self.offset_of(self._first_loads.get(name, 1), "name", name)
        return found if found is not None else 0

    def attr_offset(self, node: nodes.Getattr) -> int:
        """Where `.attr` is: after `name.` when the object is a plain name."""
        owner = node.node.name if isinstance(node.node, nodes.Name) else None
        fallback = None
        for i in self._where.get(("name", node.attr), []):
            token = self.tokens[i]
            if token.line != node.lineno or i < 1 or self.tokens[i - 1].value != ".":
                continue
            if owner is None or (i >= 2 and self.tokens[i - 2].value == owner):
                return token.offset
            fallback = token.offset if fallback is None else fallback
        if fallback is None:
            fallback = self.offset_of(node.lineno, "name", node.attr, after=(".",))
        return fallback or 0

    # ------------------------------------------------------------- checking

    def undeclared(self) -> set[str]:
        """Free variables, by Jinja's own scope analysis (raises TemplateSyntaxError
        for an unknown filter or test, as compiling would)."""
        from jinja2.meta import find_undeclared_variables

        # An eval-context option that is not a constant marks the context
        # volatile, which stops the code generator from evaluating constants.
        volatile = nodes.EvalContextModifier(
            [nodes.Keyword("autoescape", nodes.Name(_VOLATILE, "load"))]
        )
        tree = nodes.Template([volatile, *self.tree.body])
        tree.set_environment(_environment())
        # Blocks get an evaluation context of their own; this tree is only
        # ever analysed, so marking them in place is harmless.
        for block in self.find(nodes.Block):
            if block.body[:1] != [volatile]:
                block.body = [volatile, *block.body]
        found = find_undeclared_variables(tree) - {_VOLATILE}
        # Jinja also counts a name `{% set %}` in only some branches of an
        # `{% if %}`; it is free only where a read can run before the set.
        conditional = {name for name in found if self.sets(name)}
        self._unset = template_flow.unset_reads(self.tree, conditional) if conditional else {}
        return {name for name in found if name not in conditional or name in self._unset}

    def sets(self, name: str) -> bool:
        """Whether the template `{% set %}`s `name` somewhere."""
        if self._stored is None:  # one walk for every name asked about
            self._stored = {
                n.name
                for n in self.find(nodes.Name)
                if isinstance(n, nodes.Name) and n.ctx == "store"
            }
        return name in self._stored

    def unset_read_offset(self, name: str) -> int:
        """Where the first read of `name` that may run before its set is
        (found by `undeclared`)."""
        read = self._unset.get(name)
        if read is None:
            return self.name_offset(name)
        if self._load_rank is None:  # one walk: each read's rank among its line's reads of it
            self._load_rank = {}
            counts: dict[tuple[str, int], int] = {}
            for n in self.find(nodes.Name):
                if isinstance(n, nodes.Name) and n.ctx == "load":
                    key = (n.name, n.lineno)
                    self._load_rank[id(n)] = counts[key] = counts.get(key, -1) + 1
        nth = self._load_rank.get(id(read), 0)
        reads = [
            self.tokens[i].offset
            for i in self._where.get(("name", name), [])
            if self.tokens[i].line == read.lineno
            and (i == 0 or self.tokens[i - 1].value not in _NOT_A_NAME)
        ]
        return reads[min(nth, len(reads) - 1)] if reads else self.name_offset(name)

    def unknown_filters_and_tests(self) -> Iterator[Finding]:
        """Filters (`x | f`) and tests (`x is t`) that Jinja does not have, once
        per name. Jinja reports them itself only in code that always runs: one
        inside `{% if %}` or `a if b else c` would fail only when rendered."""
        environment = _environment()
        seen: set[tuple[str, str]] = set()
        for node in self.find(nodes.Filter, nodes.Test):
            if isinstance(node, nodes.Filter):
                kind, known, after = "filter", environment.filters, ("|", "filter")
            else:
                kind, known, after = "test", environment.tests, ("is", "not")
            if node.name in known or (kind, node.name) in seen:
                continue
            seen.add((kind, node.name))
            start = self.offset_of(node.lineno, "name", node.name, after=after) or 0
            close = difflib.get_close_matches(node.name, [k for k in known if k.isidentifier()], 1)
            hint = (
                f"did you mean '{close[0]}'?" if close else f"see Jinja2's list of built-in {kind}s"
            )
            yield Finding(
                "E601",
                f"template syntax error: no {kind} named '{node.name}'",
                start,
                start + len(node.name),
                hint=hint,
            )

    def problems(self) -> Iterator[Finding]:
        """What the sandbox would refuse at run, found in the tree."""
        yield from self._underscore_access()
        yield from self._loaders()
        yield from self._recursive_macros()
        yield from self._constant_limits()

    def _constant_limits(self) -> Iterator[Finding]:
        """Constant parts that would pass a run-time limit (`{{ 7**100000 }}`,
        `range(10**9)`), evaluated with the sandbox's own bounded operators."""
        seen: dict[tuple[int, str], int] = {}  # the n-th `**` on a line is the n-th token
        for node in self.find(nodes.BinExpr, nodes.Call):
            if isinstance(node, nodes.Call):
                if not (isinstance(node.node, nodes.Name) and node.node.name == "range"):
                    continue
                kind, spelled = "name", "range"
            else:
                kind, spelled = "operator", node.operator
            nth = seen[node.lineno, spelled] = seen.get((node.lineno, spelled), -1) + 1
            where = self.nth_offset(node.lineno, kind, spelled, nth)
            length = len(spelled)
            try:
                _bounded_value(node)
            except sandbox.TemplateLimitError as exc:
                yield Finding(
                    "E605",
                    f"this would pass a limit when the template runs: {exc}",
                    where,
                    where + length,
                    hint="see docs/security.md for the limits templates run under",
                )
            except _NotConstant:
                continue

    def _underscore_access(self) -> Iterator[Finding]:
        for node in self.find(nodes.Getattr):
            if node.attr.startswith("_"):
                yield self._forbidden(node.attr, self.attr_offset(node), len(node.attr))
        for item in self.find(nodes.Getitem):
            key = _constant(item.arg)
            if isinstance(key, str) and key.startswith("_"):
                start = self.offset_of(item.lineno, "string", _quoted(self.text, key), ("[",))
                yield self._forbidden(key, start or 0, len(key) + 2)
        for flt in self.find(nodes.Filter):
            name = _constant(flt.args[0]) if flt.name == "attr" and flt.args else None
            if isinstance(name, str) and name.startswith("_"):
                start = self.offset_of(flt.lineno, "name", "attr", after=("|",)) or 0
                yield self._forbidden(name, start, len("attr"))
        for call in self.find(nodes.Call):
            field = _unsafe_format_field(call)
            if field is not None:
                method = call.node.attr
                start = self.offset_of(call.lineno, "name", method, after=(".",))
                yield Finding(
                    "E410",
                    f"the format string reaches '{field}'; names starting with '_' are not"
                    " allowed in templates",
                    start or 0,
                    (start or 0) + len(method),
                )

    def _forbidden(self, name: str, start: int, length: int) -> Finding:
        return Finding(
            "E410",
            f"names starting with '_' are not allowed in templates: '{name}'",
            start,
            start + max(1, length),
        )

    def _loaders(self) -> Iterator[Finding]:
        kinds = {
            nodes.Include: "include",
            nodes.Import: "import",
            nodes.FromImport: "from",
            nodes.Extends: "extends",
        }
        for node_type, keyword in kinds.items():
            for node in self.find(node_type):
                start = self.offset_of(node.lineno, "name", keyword) or 0
                yield Finding(
                    "E604",
                    f"{{% {keyword} %}} is not available in spec templates",
                    start,
                    start + len(keyword),
                    hint="a spec template is self-contained: write the text here, or use a macro",
                )

    def _recursive_macros(self) -> Iterator[Finding]:
        macros = {m.name: m for m in self.find(nodes.Macro)}
        calls = {
            name: [
                c
                for c in macro.find_all(nodes.Call)
                if isinstance(c.node, nodes.Name) and c.node.name in macros
            ]
            for name, macro in macros.items()
        }
        reported: set[str] = set()  # one error per cycle, at its first macro
        for name in macros:
            if name in reported:
                continue
            found = _cycle_call(name, calls)
            if found is not None:
                call, members = found
                reported |= members
                callee = call.node.name  # type: ignore[attr-defined]
                start = self.offset_of(call.lineno, "name", callee) or 0
                yield Finding(
                    "E604",
                    f"the macro '{name}' calls itself (through '{callee}')",
                    start,
                    start + len(callee),
                    hint="recursive macros are not available in spec templates",
                )


_NOT_A_NAME = {".", "|", "is", "macro", "set", "for"}


def parse(text: str) -> ParsedTemplate:
    """Parse a template. Raises TemplateSyntaxError, or RecursionError when
    it is nested too deeply for Jinja's recursive-descent parser."""
    return ParsedTemplate(text, _environment().parse(text))


def _walk(tree: nodes.Node) -> list[nodes.Node]:
    """All nodes in document order, without recursion."""
    found: list[nodes.Node] = []
    pending = [tree]
    while pending:
        node = pending.pop()
        found.append(node)
        pending.extend(reversed(list(node.iter_child_nodes())))
    return found


def _tokens(text: str) -> list[_Token]:
    """Jinja's tokens with their offsets. The lexer drops text that `{%-`
    strips and normalises newlines, so each token is found in the source
    from where the previous one ended."""
    result = []
    position = 0
    for line, kind, value in _environment().lexer.tokeniter(text, None):
        found = text.find(value, position)
        if found != -1:
            position = found
        result.append(_Token(position, line, kind, value))
        if found != -1:
            position += len(value)
    return result


class _NotConstant(Exception):
    pass


def _bounded_value(node: nodes.Node) -> Any:
    """The value of a constant expression, computed with the sandbox's bounded
    operators (so computing it is cheap, or raises TemplateLimitError)."""
    if isinstance(node, nodes.Const):
        return node.value
    if isinstance(node, nodes.Neg):
        value = _bounded_value(node.node)
        if isinstance(value, (int, float)):
            return -value
    if isinstance(node, nodes.BinExpr) and node.operator in sandbox.BINOPS:
        left, right = _bounded_value(node.left), _bounded_value(node.right)
        try:
            return sandbox.BINOPS[node.operator](left, right)
        except sandbox.TemplateLimitError:
            raise
        except Exception as exc:  # e.g. 'a' ** 2: an error at run, not a limit
            raise _NotConstant from exc
    is_range = isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name)
    if is_range and node.node.name == "range" and not node.kwargs:  # type: ignore[attr-defined]
        args = [_bounded_value(a) for a in node.args]  # type: ignore[attr-defined]
        if all(isinstance(a, int) for a in args) and 1 <= len(args) <= 3 and args[-1:] != [0]:
            return sandbox.bounded_range(*args)
    raise _NotConstant


def _constant(node: nodes.Node) -> Any:
    return node.value if isinstance(node, nodes.Const) else None


def _quoted(text: str, key: str) -> str:
    """The string token (with its quotes) that spelled `key`."""
    for quote in ("'", '"'):
        if f"{quote}{key}{quote}" in text:
            return f"{quote}{key}{quote}"
    return repr(key)


def _unsafe_format_field(call: nodes.Call) -> str | None:
    """The first field of `'…'.format(…)` that reaches a `_` name, if any."""
    target = call.node
    if not (isinstance(target, nodes.Getattr) and target.attr in ("format", "format_map")):
        return None
    template = _constant(target.node)
    if not isinstance(template, str):
        return None
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f]
    except ValueError:
        return None
    for field in fields:
        parts = field.replace("[", ".").replace("]", "").split(".")
        if any(part.startswith("_") for part in parts[1:]):
            return field
    return None


def _cycle_call(
    start: str, calls: dict[str, list[nodes.Call]]
) -> tuple[nodes.Call, set[str]] | None:
    """A call inside macro `start` that leads back to `start`, and the macros
    on the way, if any."""
    for call in calls[start]:
        seen = {start}
        pending = [call.node.name]  # type: ignore[attr-defined]
        while pending:
            name = pending.pop()
            if name == start:
                return call, seen
            if name in seen:
                continue
            seen.add(name)
            pending.extend(c.node.name for c in calls.get(name, []))  # type: ignore[attr-defined]
    return None
