"""Diagnostics for a YAML file that does not load: size, limits, syntax.

PyYAML's messages are rewritten into located diagnostics with hints for the
mistakes people make (a missing space after a colon, an unclosed quote, a
tab or a non-breaking space in the indentation).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from agentspec.core.diagnostics import Diagnostic
from agentspec.core.source import SourceFile

# Limits that keep `validate` fast and small on any file (docs/security.md).
MAX_FILE_CHARS = 1_048_576
MAX_DEPTH = 64
MAX_VALUES = 10_000  # nodes after alias expansion (the largest shipped spec has ~300)
MAX_EXPANDED_CHARS = 4_000_000  # scalar characters after alias expansion
MAX_STRING_CHARS = 200_000
MAX_INT_DIGITS = 100


class LimitExceeded(Exception):
    """A resource limit hit while composing: carries the diagnostic to report."""

    def __init__(self, code: str, message: str, mark: Any, hint: str):
        super().__init__(message)
        self.code, self.message, self.mark, self.hint = code, message, mark, hint


def too_large(source: SourceFile) -> Diagnostic:
    return Diagnostic(
        "E105",
        f"the file has {len(source.text):,} characters (the limit is {MAX_FILE_CHARS:,})",
        source.span(MAX_FILE_CHARS, MAX_FILE_CHARS + 1),
        hint="keep data (samples, documents) in data files; a spec is a few kilobytes",
    )


def limit_diagnostic(source: SourceFile, exc: LimitExceeded) -> Diagnostic:
    index = exc.mark.index if exc.mark is not None else 0
    return Diagnostic(exc.code, exc.message, source.span(index, index + 1), exc.hint)


# Characters that look like a space but are not one to YAML.
_LOOKALIKE_SPACES = {
    "\u00a0": "a non-breaking space (U+00A0)",
    "\u2002": "an en space (U+2002)",
    "\u2003": "an em space (U+2003)",
    "\u2009": "a thin space (U+2009)",
    "\u200b": "a zero-width space (U+200B)",
    "\u3000": "an ideographic space (U+3000)",
    "\ufeff": "a byte-order mark (U+FEFF)",
}


def odd_indentation(source: SourceFile) -> Diagnostic | None:
    """A look-alike space in a line's indentation: YAML reads it as part of the
    key (` user` is not `user`), which would surface as a baffling schema error."""
    offset = 0
    for index, line in enumerate(source.text.split("\n")):
        for column, ch in enumerate(line):
            if ch in _LOOKALIKE_SPACES and not (index == 0 and column == 0 and ch == "\ufeff"):
                return Diagnostic(
                    "E101",
                    f"YAML syntax error: the indentation contains {_LOOKALIKE_SPACES[ch]}",
                    source.span(offset + column, offset + column + 1),
                    hint="replace it with a plain space (such characters come with text pasted from web pages or chats)",
                )
            if ch not in " \t":
                break
        offset += len(line) + 1
    return None


def reader_diagnostic(source: SourceFile, exc: yaml.reader.ReaderError) -> Diagnostic:
    character = (
        exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "?")
    )
    position = exc.position if isinstance(exc.position, int) else 0
    return Diagnostic(
        "E101",
        f"the file contains the control character U+{character:04X}, which YAML does not allow",
        source.span(position, position + 1),
        hint='delete it; inside a double-quoted string it can be written as an escape, e.g. "\\x07"',
    )


def _missing_space_after_colon(source: SourceFile, exc: yaml.MarkedYAMLError) -> Diagnostic | None:
    """`name:value` is one plain scalar to YAML, not a key; the parser fails on a later line."""
    mark = exc.context_mark
    if mark is None or not exc.context or "simple key" not in exc.context:
        return None
    line = source.line_text(mark.line + 1) or ""
    match = re.match(r"\s*(?:-\s+)?([A-Za-z_][\w-]*):(?=[^\s:/])", line)
    if match is None:
        return None
    colon = source.text.rfind("\n", 0, mark.index) + 1 + match.end() - 1
    key = match.group(1)
    return Diagnostic(
        "E101",
        f"YAML syntax error: no space after the colon of '{key}'",
        source.span(colon, colon + 1),
        hint=f"YAML needs a space after a key's colon: `{key}: {line[match.end() :].strip()}`",
    )


def syntax_diagnostic(source: SourceFile, exc: yaml.MarkedYAMLError) -> Diagnostic:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or "invalid YAML"
    unclosed = _unclosed_quote(source, exc)
    if unclosed is not None:
        return Diagnostic(
            "E101",
            "YAML syntax error: a quoted string is not closed on its line",
            source.span(unclosed, unclosed + 1),
            hint=_unclosed_hint(source.text[unclosed]),
        )
    no_space = _missing_space_after_colon(source, exc)
    if no_space is not None:
        return no_space
    unclosed_flow = _unclosed_flow(source, exc, problem)
    if unclosed_flow is not None:
        return unclosed_flow
    span = source.span(mark.index, mark.index + 1) if mark is not None else None
    message = f"YAML syntax error: {problem}"
    if exc.context:
        message += f" ({exc.context})"
    line = (source.line_text(mark.line + 1) or "") if mark is not None else ""
    return Diagnostic("E101", message, span, _problem_hint(problem, exc.context, line))


def _unclosed_flow(
    source: SourceFile, exc: yaml.MarkedYAMLError, problem: str
) -> Diagnostic | None:
    """A `{` or `[` opened on an earlier line than the error and never closed."""
    mark = exc.problem_mark or exc.context_mark
    flow = exc.context_mark
    if not (
        exc.context
        and "flow" in exc.context
        and flow is not None
        and mark is not None
        and flow.line < mark.line
    ):
        return None
    opener = source.text[flow.index : flow.index + 1]
    closer = {"{": "}", "[": "]"}.get(opener, "")
    flow_line = source.line_text(flow.line + 1) or ""
    if closer and " #" in flow_line[flow.column :] and closer in flow_line.partition(" #")[2]:
        flow_hint = (  # `{value: -0.1 #per step}`: the comment ate the closer
            f"' #' starts a comment, which hides the '{closer}' after it on this line:"
            " move the comment after the closing bracket, or quote the text with '#'"
        )
    else:
        flow_hint = f"add the matching '{closer}' (YAML failed later: {problem})"
    return Diagnostic(
        "E101",
        f"YAML syntax error: '{opener}' is not closed",
        source.span(flow.index, flow.index + 1),
        hint=flow_hint,
    )


def _problem_hint(problem: str, context: str | None, line: str) -> str | None:
    """How to fix the problem YAML reported, where it is a common mistake."""
    hint: str | None = None
    if "found '<tag>'" in problem and "!" in line:
        # `if: "off" != state.mode`: YAML reads `!` as a tag after the quoted text
        key, _, value = line.strip().removeprefix("- ").partition(": ")
        quoted = "'" + value.strip().replace("'", "''") + "'"
        hint = "YAML read the text before '!' as the value and '!' as a tag: quote the whole" + (
            f" expression: `{key}: {quoted}`" if value else " expression"
        )
    elif "found character '\\t'" in problem:
        hint = "YAML does not allow tabs for indentation; use spaces"
    elif "mapping values are not allowed" in problem:
        hint = "a value containing ': ' must be quoted, e.g. \"a: b\""
    elif "could not find expected ':'" in problem or "expected <block end>" in problem:
        hint = (
            "check the indentation of this line against the lines above it, and quote any"
            " value above that contains ': '"
        )
    elif "but got '?'" in problem:
        hint = 'quote an optional type inside {…}: type: "str?"'
    elif context == "while parsing a flow mapping" and "but got ':'" in problem:
        hint = (
            "inside `{…}` quote a value that contains ': ' (`message: 'a: b'`),"
            " or add the ', ' missing between two keys"
        )
    elif context == "while parsing a flow mapping" and "expected ',' or '}'" in problem:
        hint = (
            "inside `{…}` a value with quotes or ', ' must be quoted as a whole,"
            """ e.g. `{if: 'f(a, "k")', message: …}`"""
        )
    elif "found undefined alias" in problem:
        hint = "define the anchor (&name) before using the alias (*name)"
    return hint


def _unclosed_hint(quote: str) -> str:
    hint = "close the quote on the same line; YAML read on until the next quote and failed there"
    if quote == "'":
        hint += " (inside single quotes write '' for a literal ', or use double quotes)"
    return hint


def _unclosed_quote(source: SourceFile, exc: yaml.MarkedYAMLError) -> int | None:
    """Offset of the quote that opened a string YAML read past its line, if
    that is what the error comes from.

    An unclosed quote makes YAML read on to the next quote (or to the end of
    the file), lines later, and fail there; pointing at the opener is what
    the user needs. YAML's own scanner says where each quoted string starts
    and ends, so quotes inside block scalars (`|`, `>`) and apostrophes in
    plain text are never mistaken for openers.
    """
    if exc.context and "quoted scalar" in exc.context and exc.context_mark is not None:
        return int(exc.context_mark.index)  # the string ran to the end of the file
    mark = exc.problem_mark or exc.context_mark
    if mark is None:
        return None
    for token in reversed(_tokens_before(source.text, mark.index)):
        if not isinstance(token, yaml.ScalarToken) or token.style not in ('"', "'"):
            continue
        start, end = token.start_mark, token.end_mark
        # The string closed at a later line's quote, and the error follows it.
        if start.line < end.line and mark.line - 1 <= end.line <= mark.line:
            return int(start.index)
        return None
    return None


def _tokens_before(text: str, index: int) -> list[Any]:
    """YAML's tokens that start before `index` (scanning stops at an error):
    libyaml's scanner when it can encode the text, else PyYAML's."""
    loaders = [getattr(yaml, "CSafeLoader", None), yaml.SafeLoader]
    for loader in [c for c in loaders if c is not None]:
        tokens: list[Any] = []
        try:
            for token in yaml.scan(text, Loader=loader):
                if token.start_mark.index >= index:
                    break
                tokens.append(token)
        except yaml.YAMLError:
            pass  # the scanner's own error: the tokens before it are what counts
        except UnicodeError:  # libyaml cannot encode lone surrogates
            continue
        return tokens
    return []
