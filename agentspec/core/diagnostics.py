"""Diagnostics: every problem the front end finds, pointing at the user's file.

One `Diagnostic` type, one exception (`SpecError`) that carries all of a file's
diagnostics, and renderers for humans (source line + caret), JSON and GitHub
Actions annotations. Codes are stable: they are documented in docs/errors.md
and the tests assert on them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from enum import Enum

from agentspec.core.source import SourceFile, Span

# Stable codes. The first digit names the stage that reports them.
CODES: dict[str, str] = {
    # 1xx: reading the file and YAML syntax
    "E101": "YAML syntax error",
    "E102": "duplicate key",
    "E103": "cannot read file",
    "E104": "the document is not a mapping",
    "E105": "file too large",
    "E106": "document nested too deeply",
    "E107": "document expands to too many values",
    "E108": "recursive alias",
    "E109": "integer too long",
    "E110": "string too long",
    # 2xx: the spec's schema
    "E201": "unknown key",
    "E202": "missing required key",
    "E203": "wrong type of value",
    "E204": "invalid value",
    "E205": "unsupported language version",
    "E206": "number is not finite",
    "E207": "value has no JSON equivalent",
    "E208": "string contains a lone surrogate",
    "E209": "nothing to act with or be rewarded for",
    "E210": "a split of a source without splits",
    "E211": "a warm start without an oracle",
    "E212": "the algorithm needs what the spec lacks",
    # 3xx: expression and effect syntax
    "E301": "expression syntax error",
    "E302": "unclosed parenthesis or bracket",
    "E303": "missing operand",
    "E304": "'=' in an expression",
    "E305": "unterminated string",
    "E306": "invalid effect statement",
    "E307": "unmatched closing parenthesis or bracket",
    "E308": "number literal too long",
    "E309": "expression nested too deeply",
    "E310": "expression too long",
    "E311": "method call (not in the language)",
    # 4xx: names and scopes
    "E401": "unknown name",
    "E402": "unknown state variable",
    "E403": "unknown tool argument",
    "E404": "unknown sample field",
    "E405": "unknown function",
    "E406": "unknown reward component",
    "E407": "name not available here",
    "E408": "write to a read-only scope",
    "E409": "unknown tool",
    "E410": "forbidden name",
    "E411": "unknown attribute",
    "E412": "name clash",
    "E413": "reserved name",
    "E414": "unknown constant",
    "E415": "invalid local name",
    "E416": "unknown guard",
    # 5xx: types and arity
    "E501": "operator not supported for these types",
    "E502": "wrong argument type",
    "E503": "wrong number of arguments",
    "E504": "assigned value has the wrong type",
    "E505": "condition is not a boolean",
    "E506": "reward value is not a number",
    "E507": "invalid type",
    "E508": "initial value does not match the declared type",
    "E509": "value cannot be indexed",
    "E510": "value too large",
    "E511": "value cannot be iterated",
    # 6xx: Jinja2 templates
    "E601": "template syntax error",
    "E602": "undefined template variable",
    "E603": "template nested too deeply",
    "E604": "template feature not allowed",
    "E605": "template exceeds a resource limit",
    # 7xx: tool parameter schemas
    "E701": "invalid JSON Schema for a tool parameter",
    "E702": "MCP server without pinned tools",
    "E703": "MCP tool name clashes or cannot be called",
    "E704": "pinned MCP tool parameters are not a JSON Schema object",
    "E705": "MCP `include` names a tool the server does not have",
    # 8xx: warnings
    "W801": "state variable is read but never written",
    "W802": "state variable is never used",
    "W803": "expression with a redundant part, or always true or false",
    "W804": "named guard is not used",
    "W805": "final answers continue, but there are no tools",
    "W806": "context setting of another policy",
    "W807": "the algorithm distils a teacher the spec does not name",
    "W808": "a training setting the algorithm does not read",
    "W809": "a reward on an event that never fires",
    "W810": "a template that is only a name, not its value",
    "W811": "a user reply that can never be chosen",
    "W812": "the user never ends the conversation",
    # 9xx: deep checks (what the spec points to: functions, modules, data, regexes, the oracle)
    "E901": "unknown stdlib function",
    "E902": "invalid config",
    "E903": "declared signature does not match the function",
    "E904": "user module or object not found",
    "E905": "unknown generator",
    "E906": "invalid generator parameter",
    "E907": "declared field is not in the data",
    "E908": "invalid regular expression",
    "E909": "oracle calls an unknown tool",
    "E910": "oracle arguments do not match the tool",
    "E911": "oracle turn is not valid in the tool format",
    "E912": "tool cannot be called in the tool format",
    "E913": "prompt does not render for the first sample",
    "E914": "data file is empty or unreadable",
    "W901": "data not reachable from this machine",
    "W902": "a render field the corpus does not have",
    "W903": "the data is too small for training.eval_samples",
}

TRAINING_SETTING_CODES = {"E211": "warm_start", "E212": "algorithm"}
"""Errors about one `training` setting as the file writes it → that setting. `validate`
and `compile` report them, and so does `train` unless its `--set`/`--algorithm` gives
the setting: then `train` checks the value it resolves instead (`waived_by`)."""


def waived_by(overrides: Mapping[str, object]) -> frozenset[str]:
    """The `TRAINING_SETTING_CODES` that `train`'s overrides replace the file's setting of."""
    return frozenset(code for code, key in TRAINING_SETTING_CODES.items() if key in overrides)


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class Diagnostic:
    """One problem in a spec: what, where, and how to fix it."""

    code: str
    message: str
    span: Span | None
    hint: str | None = None

    @property
    def severity(self) -> Severity:
        return Severity.WARNING if self.code.startswith("W") else Severity.ERROR

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def sort_key(self) -> tuple[str, int, int, str]:
        if self.span is None:
            return ("", 0, 0, self.code)
        return (self.span.file, self.span.line, self.span.column, self.code)


class SpecError(Exception):
    """Raised once per file, carrying every diagnostic found in it."""

    def __init__(self, diagnostics: Sequence[Diagnostic], sources: dict[str, SourceFile]):
        self.diagnostics = sorted(diagnostics, key=Diagnostic.sort_key)
        self.sources = sources
        errors = [d for d in self.diagnostics if d.is_error]
        first = errors[0] if errors else self.diagnostics[0]
        more = f" … and {len(errors) - 1} more" if len(errors) > 1 else ""
        super().__init__(f"{_location(first)}: {first.code}: {first.message}{more}")


def _location(diagnostic: Diagnostic) -> str:
    span = diagnostic.span
    if span is None:
        return "<spec>"
    return f"{span.file}:{span.line}:{span.column}"


# One visible character for each that a terminal would act on (an escape sequence, a
# carriage return, a bidirectional override): the spec's text is shown, never obeyed,
# and the caret under it stays in its column.
_CONTROL_PICTURES = {c: 0x2400 + c for c in range(0x20) if c != 0x09} | {0x7F: 0x2421}
_INVISIBLE = {
    c: 0xFFFD for c in [*range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
}
_VISIBLE = _CONTROL_PICTURES | _INVISIBLE


def visible(text: str) -> str:
    """``text`` safe to print on a terminal: control characters shown as pictures (␛, ␍)."""
    return text.translate(_VISIBLE)


def render_text(diagnostic: Diagnostic, sources: dict[str, SourceFile]) -> str:
    """Render like a compiler: location, code, message, source line, caret, hint."""
    head = visible(
        f"{_location(diagnostic)}: {diagnostic.severity.value}[{diagnostic.code}]: {diagnostic.message}"
    )
    lines = [head]
    span = diagnostic.span
    source = sources.get(span.file) if span is not None else None
    if span is not None and source is not None:
        text = source.line_text(span.line)
        if text is not None:
            gutter = f"{span.line:>4} | "
            if span.end_line == span.line and span.end_column > span.column:
                width = span.end_column - span.column
            else:
                width = 1
            text, column = clip_line(text, span.column)
            lines.append(gutter + visible(text))
            width = max(1, min(width, len(text) - column + 2))
            lines.append(" " * (len(gutter) + column - 1) + "^" * width)
    if diagnostic.hint:
        lines.append(visible(f"  hint: {diagnostic.hint}"))
    return "\n".join(lines)


_SHOWN_LINE = 120  # characters of a source line shown around the caret


def clip_line(text: str, column: int) -> tuple[str, int]:
    """A long line (a hostile spec's 1 MB line) cut to a window around `column`;
    returns the text to show and the caret's column in it."""
    if len(text) <= _SHOWN_LINE:
        return text, column
    start = max(0, min(column - 1 - _SHOWN_LINE // 3, len(text) - _SHOWN_LINE))
    shown = text[start : start + _SHOWN_LINE]
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + _SHOWN_LINE < len(text) else ""
    return prefix + shown + suffix, column - start + len(prefix)


def to_json(diagnostic: Diagnostic) -> dict[str, object]:
    record: dict[str, object] = {
        "code": diagnostic.code,
        "severity": diagnostic.severity.value,
        "message": diagnostic.message,
        "hint": diagnostic.hint,
    }
    record.update(asdict(diagnostic.span) if diagnostic.span else {"file": None})
    return record


def render_json(diagnostics: Iterable[Diagnostic]) -> str:
    return json.dumps([to_json(d) for d in diagnostics], indent=2, ensure_ascii=False)


def _escape_github(text: str, *, property_value: bool = False) -> str:
    # The escaping GitHub's workflow-command parser expects.
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if property_value:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def render_github(diagnostic: Diagnostic) -> str:
    """One GitHub Actions workflow command (`::error file=…,line=…::message`)."""
    kind = "warning" if diagnostic.severity is Severity.WARNING else "error"
    message = diagnostic.message + (f" (hint: {diagnostic.hint})" if diagnostic.hint else "")
    return github_command(kind, diagnostic.span, diagnostic.code, message)


def github_command(kind: str, span: Span | None, title: str, message: str) -> str:
    """A `::error`/`::warning` workflow command that annotates ``span`` in a pull request."""
    props = []
    if span is not None:
        props += [
            f"file={_escape_github(span.file, property_value=True)}",
            f"line={span.line}",
            f"col={span.column}",
            f"endLine={span.end_line}",
            f"endColumn={span.end_column}",
        ]
    props.append(f"title={_escape_github(title, property_value=True)}")
    return f"::{kind} {','.join(props)}::{_escape_github(message)}"
