"""Syntax errors of expressions and statements, classified into named mistakes —
unclosed parenthesis, missing operand, `=` where `==` was meant, unterminated
string, a method call — each with the offset to put the caret under."""

from __future__ import annotations

from dataclasses import dataclass

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

__all__ = ["ExprSyntaxError", "method_call_error"]

_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {v: k for k, v in _OPENERS.items()}
_OPERAND_TERMINALS = {"NAME", "NUMBER", "STRING", "LPAR", "LSQB", "LBRACE"}


@dataclass(frozen=True)
class ExprSyntaxError(Exception):
    """A syntax error at `start:end` (offsets into the text), with a stable code."""

    code: str
    message: str
    start: int
    end: int
    hint: str | None = None


def _check_brackets(text: str) -> None:
    """Find unbalanced brackets before parsing, to point at the opener."""
    stack: list[tuple[str, int]] = []
    quote: str | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
            elif ch == "\n":
                raise ExprSyntaxError(
                    "E305",
                    "unterminated string",
                    _string_start(text, i),
                    i,
                    hint=f"close the string with {quote}",
                )
        elif ch in "'\"":
            quote = ch
            quote_start = i
        elif ch in _OPENERS:
            stack.append((ch, i))
        elif ch in _CLOSERS:
            _close(stack, ch, i)
        i += 1
    if quote:
        raise ExprSyntaxError(
            "E305",
            "unterminated string",
            quote_start,
            len(text),
            hint=f"close the string with {quote}",
        )
    if stack:
        opener, pos = stack[-1]
        kind = {"(": "parenthesis", "[": "bracket", "{": "brace"}[opener]
        raise ExprSyntaxError(
            "E302",
            f"unclosed {kind} '{opener}'",
            pos,
            pos + 1,
            hint=f"add a matching '{_OPENERS[opener]}'",
        )


def _close(stack: list[tuple[str, int]], ch: str, i: int) -> None:
    """Pop the opener that the closer ``ch`` at ``i`` closes; raise if it does not match."""
    if not stack:
        raise ExprSyntaxError(
            "E307",
            f"unmatched '{ch}'",
            i,
            i + 1,
            hint=f"remove it or add a '{_CLOSERS[ch]}' before it",
        )
    opener, pos = stack.pop()
    if _OPENERS[opener] != ch:
        raise ExprSyntaxError(
            "E302",
            f"'{opener}' is closed by '{ch}'",
            pos,
            pos + 1,
            hint=f"close it with '{_OPENERS[opener]}'",
        )


def _string_start(text: str, newline: int) -> int:
    """Start of the string literal that runs into `newline`."""
    for i in range(newline - 1, -1, -1):
        if text[i] in "'\"":
            return i
    return newline


def _classify(exc: UnexpectedInput, text: str, start: str) -> ExprSyntaxError:
    """The located diagnostic of a Lark parse error: a character no token starts
    with, or a token the grammar does not expect there."""
    if isinstance(exc, UnexpectedCharacters):
        return _unexpected_character(exc, text)
    assert isinstance(exc, UnexpectedToken)
    return _unexpected_token(exc, text, start)


def _unexpected_character(exc: UnexpectedCharacters, text: str) -> ExprSyntaxError:
    pos = exc.pos_in_stream
    ch = text[pos] if pos is not None and pos < len(text) else ""
    pos = pos or 0
    if ch == "=":
        return _single_equals(pos)
    if ch in "'\"":
        return ExprSyntaxError("E305", "unterminated string", pos, len(text))
    if ch == "!":
        return ExprSyntaxError(
            "E301",
            "'!' is not an operator",
            pos,
            pos + 1,
            hint="write `not x`, or `!=` for inequality",
        )
    if ch == "&" or ch == "|":
        word = "and" if ch == "&" else "or"
        return ExprSyntaxError(
            "E301", f"'{ch}' is not an operator", pos, pos + 1, hint=f"write `{word}`"
        )
    return ExprSyntaxError("E301", f"unexpected character {ch!r}", pos, pos + 1)


def _unexpected_token(exc: UnexpectedToken, text: str, start: str) -> ExprSyntaxError:
    token: Token = exc.token
    expected = set(exc.expected)
    at_end = token.type == "$END"
    pos = len(text.rstrip()) if at_end else (token.start_pos or 0)
    end = pos + 1 if at_end else (token.end_pos or pos + 1)
    if token.type == "ASSIGN" and (start == "expression" or token.value == "="):
        return _single_equals(pos)
    if token.type == "ASSIGN":
        return ExprSyntaxError("E306", f"'{token.value}' cannot appear here", pos, end)
    if start == "statement" and (
        (at_end and "ASSIGN" in expected) or (token.type == "COMP_OP" and "ASSIGN" in expected)
    ):
        hint = (
            "to assign, write `=`; to end the episode conditionally, write `done() if cond`"
            if token.value == "=="
            else 'e.g. `state.page = "item"`, `done() if args.option == "buy"`'
        )
        return ExprSyntaxError(
            "E306",
            "an effect must be an assignment to state, done() or fail(message)",
            0 if at_end else pos,
            len(text) if at_end else end,
            hint=hint,
        )
    if token.type in ("NAME", "NUMBER", "STRING"):
        return ExprSyntaxError(
            "E301",
            f"unexpected {token.value!r}: two values with no operator between them",
            pos,
            end,
            hint="join them with an operator, or a comma inside a call or list",
        )
    python_only = _python_only(token, expected, text, pos, end)
    if python_only is not None:
        return python_only
    if expected & _OPERAND_TERMINALS:
        before = text[:pos].rstrip()
        after = f" after '{before.split()[-1]}'" if before.split() else ""
        found = "the end of the expression" if at_end else f"'{token.value}'"
        return ExprSyntaxError(
            "E303",
            f"missing operand{after}: found {found}",
            max(0, pos - 1) if at_end else pos,
            end,
            hint="an operator needs a value on both sides",
        )
    if at_end:
        return ExprSyntaxError("E301", "the expression ends too early", max(0, pos - 1), pos)
    return ExprSyntaxError("E301", f"unexpected {token.value!r}", pos, end)


def _python_only(
    token: Token, expected: set[str], text: str, pos: int, end: int
) -> ExprSyntaxError | None:
    """Python syntax the language leaves out: `**`, slices."""
    if expected & _OPERAND_TERMINALS and token.value == "*" and text[:pos].endswith("*"):
        # `**` (power) is a Python operator the language leaves out.
        return ExprSyntaxError(
            "E301",
            "'**' is not an operator of the agentspec language (there is no power operator)",
            pos - 1,
            end,
            hint="write the product out (`x * x * x`), or declare a function under `functions:`",
        )
    if token.value == ":" and text[:pos].count("[") > text[:pos].count("]"):
        # `xs[1:3]`, `text[::-1]`: Python's slices, which the language leaves out
        return ExprSyntaxError(
            "E301",
            "slicing (`x[a:b]`) is not in the agentspec language: an index takes one value",
            pos,
            end,
            hint="take items with a comprehension (`[x for x in xs if …]`), or declare a"
            " function under `functions:` that slices in Python",
        )
    return None


def _single_equals(pos: int) -> ExprSyntaxError:
    return ExprSyntaxError("E304", "'=' in an expression", pos, pos + 1, hint="did you mean '=='?")


# Method names users reach for → the built-in (or statement) that does the job.
_METHOD_ALTERNATIVES = {
    "get": "get(d, key, default)",
    "keys": "keys(d)",
    "values": "values(d)",
    "items": "items(d)",
    "append": "`state.xs = state.xs + [x]`",
    "extend": "`state.xs = state.xs + other`",
    "lower": "lower(text)",
    "upper": "upper(text)",
    "strip": "strip(text)",
    "split": "split(text, sep)",
    "join": "join(items, sep)",
    "replace": "replace(text, old, new)",
    "startswith": "startswith(text, prefix)",
    "endswith": "endswith(text, suffix)",
    "count": "len([x for x in xs if …])",
    "index": "a comprehension or contains(xs, x)",
    "sort": "sorted(xs)",
    "pop": "a comprehension that leaves the item out",
    "update": "`state.d[key] = value`",
}


def method_call_error(method: str, start: int, end: int) -> ExprSyntaxError:
    """E311: `x.method(…)` is not in the language; name what to write instead."""
    alternative = _METHOD_ALTERNATIVES.get(method)
    hint = (
        f"use {alternative}"
        if alternative
        else "call a built-in function with the value as its first argument, e.g. len(xs)"
    )
    return ExprSyntaxError(
        "E311", f"method calls are not in the language: '.{method}(…)'", start, end, hint=hint
    )
