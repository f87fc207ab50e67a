"""What an agent could write at a step: the action space of a spec and its vocabulary.

A tool call is a tool of the environment with arguments drawn from its JSON
Schema (enums, numeric ranges, lengths, and strings from a vocabulary); a final
answer is a vocabulary value written in the oracle's shape. Everything is
rendered in the spec's tool format, so an action is the text a model would
write. The vocabulary holds only what the model could know: words and phrases
of its prompt (the task and every observation so far) and the arguments of the
oracle's calls for the sample — never a sample field the prompt does not show.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentspec.formats import get_format
from agentspec.runtime.commands.explore.pattern_strings import (
    MAX_DRAWN_SIZE,
    _matches,
    _padded,
    string_for_pattern,
)
from agentspec.runtime.episode.conversation import ChatCall, render_calls

__all__ = ["ActionSpace", "ToolShape", "Vocabulary", "draw_value", "finite_values", "unseen"]

_WORD = re.compile(r"[A-Za-z0-9][\w\-.']{0,39}")
_BRACKETED = re.compile(r"\[([^\[\]\n<>|]{1,60})\]")
_QUOTED = re.compile(r"\"([^\"\n<>|]{1,60})\"")
_SPECIAL = re.compile(r"<\|[^|]*\|>|<\|[^>]*>|</?\w+>")
MAX_WORDS = 400  # distinct prompt words kept (the most recent first dropped last)
SMALL_INTS = (0, 1, 2, 3, -1, 5, 10, 100)


@dataclass(frozen=True)
class ToolShape:
    """One tool as the model sees it: its name and its arguments' JSON Schema."""

    name: str
    properties: Mapping[str, Any]
    required: tuple[str, ...]

    @staticmethod
    def of(tool: Any) -> ToolShape:
        schema = getattr(tool, "parameters", None) or {}
        properties = schema.get("properties", {}) if isinstance(schema, Mapping) else {}
        required = tuple(schema.get("required", ())) if isinstance(schema, Mapping) else ()
        return ToolShape(str(tool.name), dict(properties), required)


@dataclass
class Vocabulary:
    """Strings and numbers an agent could write: oracle arguments first, then prompt words."""

    oracle_values: list[Any] = field(default_factory=list)
    words: list[str] = field(default_factory=list)
    phrases: list[str] = field(default_factory=list)

    @staticmethod
    def of(prompt_text: str, oracle_values: Sequence[Any]) -> Vocabulary:
        text = _SPECIAL.sub(" ", prompt_text)
        words = _unique(_WORD.findall(text))
        phrases = _unique([*_BRACKETED.findall(text), *_QUOTED.findall(text)])
        return Vocabulary(list(oracle_values), words[-MAX_WORDS:], [p.strip() for p in phrases])

    def strings(self) -> list[str]:
        values = [str(v) for v in self.oracle_values if not isinstance(v, (dict, list))]
        return _unique([*values, *self.phrases, *self.words])

    def numbers(self) -> list[float]:
        out: list[float] = []
        for value in [*self.oracle_values, *self.words]:
            number = _number(value)
            if number is not None:
                out.append(number)
        return _unique(out)

    def draw_string(self, rng: random.Random) -> str:
        """A value, a bracketed or quoted phrase, or a run of 1-4 consecutive prompt words."""
        roll = rng.random()
        if self.oracle_values and roll < 0.35:
            value = rng.choice(self.oracle_values)
            if not isinstance(value, (dict, list)):
                return str(value)
        if self.phrases and roll < 0.55:
            return rng.choice(self.phrases)
        if self.words:
            start = rng.randrange(len(self.words))
            width = 1 if rng.random() < 0.6 else rng.randint(2, 4)
            return " ".join(self.words[start : start + width])
        return ""


def _unique(items: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(items))


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    try:
        return float(str(value)) if re.fullmatch(r"-?\d+(\.\d+)?", str(value)) else None
    except ValueError:
        return None


def draw_value(schema: Mapping[str, Any], rng: random.Random, vocab: Vocabulary) -> Any:
    """A value valid for `schema` where the schema says enough (enum, const, type,
    bounds, lengths); strings come from the vocabulary."""
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return rng.choice(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return draw_value(rng.choice(schema[key]), rng, vocab)
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = rng.choice([k for k in kind if k != "null"] or ["null"])
    if kind == "boolean":
        return rng.random() < 0.5
    if kind in ("integer", "number"):
        return _draw_number(schema, kind, rng, vocab)
    if kind == "array":
        items = schema.get("items", {}) if isinstance(schema.get("items"), Mapping) else {}
        low = min(int(schema.get("minItems", 0)), MAX_DRAWN_SIZE)
        high = min(max(low, min(int(schema.get("maxItems", low + 3)), low + 3)), MAX_DRAWN_SIZE)
        return [draw_value(items, rng, vocab) for _ in range(rng.randint(low, high))]
    if kind == "object":
        properties = schema.get("properties", {})
        return {
            k: draw_value(v, rng, vocab) for k, v in properties.items() if isinstance(v, Mapping)
        }
    if kind == "null":
        return None
    return _draw_string(schema, rng, vocab)


def _draw_number(
    schema: Mapping[str, Any], kind: str, rng: random.Random, vocab: Vocabulary
) -> int | float:
    """A number the schema accepts: one the prompt shows or a small one when it fits,
    else one made to fit (its bounds, open or closed, and `multipleOf`)."""
    bounds = _NumberBounds.of(schema)
    step = _step(schema)
    candidates = [
        n
        for n in [*vocab.numbers(), *SMALL_INTS]
        if bounds.admits(n) and (kind != "integer" or n == int(n)) and _multiple(n, step)
    ]
    if candidates and not (kind == "integer" and bounds.closed_range()):
        value: float = rng.choice(candidates)
    else:
        value = bounds.draw(kind == "integer", step, rng)
    return int(value) if kind == "integer" else float(value)


def _step(schema: Mapping[str, Any]) -> float | None:
    """A numeric schema's `multipleOf`, when it is a positive number."""
    step = schema.get("multipleOf")
    if isinstance(step, (int, float)) and not isinstance(step, bool) and step > 0:
        return float(step)
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _integer_unit(step: float | None) -> float:
    """The smallest positive integer that is a multiple of `step` (1 without one)."""
    if step is None:
        return 1
    for times in range(1, 1001):
        if _multiple(step * times, 1):
            return round(step * times)
    return step  # no small integer multiple: the tool will refuse what is drawn


def _multiple(number: float, step: float | None) -> bool:
    return step is None or abs(number / step - round(number / step)) < 1e-9


@dataclass(frozen=True)
class _NumberBounds:
    """A numeric schema's range: the tighter of `minimum` / `exclusiveMinimum` (and of
    the maxima), each bound open or closed."""

    low: float | None = None
    low_open: bool = False
    high: float | None = None
    high_open: bool = False

    @staticmethod
    def of(schema: Mapping[str, Any]) -> _NumberBounds:
        low, low_open, high, high_open = None, False, None, False
        for key, is_open in (("minimum", False), ("exclusiveMinimum", True)):
            v = schema.get(key)
            if _is_number(v) and (low is None or v > low or (v == low and is_open)):
                low, low_open = v, is_open
        for key, is_open in (("maximum", False), ("exclusiveMaximum", True)):
            v = schema.get(key)
            if _is_number(v) and (high is None or v < high or (v == high and is_open)):
                high, high_open = v, is_open
        return _NumberBounds(low, low_open, high, high_open)

    def admits(self, number: float) -> bool:
        if self.low is not None and (number < self.low or (self.low_open and number == self.low)):
            return False
        high = self.high
        return high is None or not (number > high or (self.high_open and number == high))

    def closed_range(self) -> bool:
        """Both ends known: an integer is drawn uniformly between them."""
        return self.low is not None and self.high is not None

    def draw(self, integer: bool, step: float | None, rng: random.Random) -> float:
        """A value inside the bounds (a multiple of `step` where one fits), else the
        nearest end: a schema no value satisfies gets a value the tool will refuse."""
        unit = _integer_unit(step) if integer else step
        if unit is not None:
            first = self._first_multiple(unit)
            last = self._last_multiple(unit)
            if first is not None and last is not None:
                if first > last:
                    return first * unit
                return rng.randint(first, min(last, first + 1000)) * unit
            if first is not None:
                return (first + rng.randint(0, 3)) * unit
            if last is not None:
                return (last - rng.randint(0, 3)) * unit
            return 0
        if self.low is not None and self.high is not None:
            return (self.low + self.high) / 2 if self.low < self.high else self.low
        if self.low is not None:
            return self.low + 1
        return self.high - 1 if self.high is not None else 0.0

    def _first_multiple(self, unit: float) -> int | None:
        if self.low is None:
            return None
        k = math.ceil(self.low / unit)
        return k + 1 if self.low_open and k * unit <= self.low else k

    def _last_multiple(self, unit: float) -> int | None:
        if self.high is None:
            return None
        k = math.floor(self.high / unit)
        return k - 1 if self.high_open and k * unit >= self.high else k


def _draw_string(schema: Mapping[str, Any], rng: random.Random, vocab: Vocabulary) -> str:
    """A string the schema accepts (`pattern`, `minLength`, `maxLength`): a vocabulary
    value that fits, else one made from the pattern, else one padded to fit."""
    pattern = schema.get("pattern")
    pattern = pattern if isinstance(pattern, str) else None
    low, high = _length_bounds(schema)

    def fits(value: str) -> bool:
        if len(value) < low or (high is not None and len(value) > high):
            return False
        return pattern is None or _matches(pattern, value)

    # a pattern the vocabulary rarely fits (`^[1-6]{4}$`) is drawn from half the time
    from_pattern = pattern is not None and rng.random() < 0.5
    if not from_pattern:
        for _ in range(8):
            value = vocab.draw_string(rng)
            if fits(value):
                return value
    if pattern is not None:
        for _ in range(8):
            made = string_for_pattern(pattern, rng, low, high)
            if made is not None and fits(made):
                return made
    fitting = [s for s in vocab.strings()[:MAX_WORDS] if fits(s)]
    if fitting:
        return rng.choice(fitting)
    return _padded(vocab.draw_string(rng), low, high, rng)


def _length_bounds(schema: Mapping[str, Any]) -> tuple[int, int | None]:
    """A string schema's `minLength` (at most `MAX_DRAWN_SIZE`) and `maxLength`."""
    given_low, given_high = schema.get("minLength", 0), schema.get("maxLength")
    low = 0
    if _is_number(given_low) and given_low > 0:
        low = min(int(given_low), MAX_DRAWN_SIZE)
    high = None
    if (
        isinstance(given_high, (int, float))
        and not isinstance(given_high, bool)
        and given_high >= 0
    ):
        high = int(given_high)
    return low, high


def finite_values(schema: Mapping[str, Any], strings: Sequence[str]) -> list[Any]:
    """Every value breadth-first search tries for one argument: the whole domain of
    an enum, a boolean or a small integer range; else `strings` (the oracle's and a
    few prompt words) and small numbers."""
    if "const" in schema:
        return [schema["const"]]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return list(schema["enum"])
    kind = schema.get("type", "string")
    if kind == "boolean":
        return [True, False]
    bounds = _NumberBounds.of(schema)
    step = _step(schema)

    def valid(n: float) -> bool:
        return bounds.admits(n) and _multiple(n, step)

    if kind == "integer":
        low, high = bounds.low, bounds.high
        if low is not None and high is not None and high - low < 12:
            return [n for n in range(math.floor(low), math.ceil(high) + 1) if valid(n)]
        numbers = [int(n) for s in strings if (n := _number(s)) is not None and n == int(n)]
        return _unique([n for n in [*numbers, 0, 1] if valid(n)])
    if kind == "number":
        reals = [n for s in strings if (n := _number(s)) is not None] + [0.0, 1.0]
        return _unique([n for n in reals if valid(n)])
    if kind in ("string", None):
        return _fitting_strings(schema, strings)
    return []


def _fitting_strings(schema: Mapping[str, Any], strings: Sequence[str]) -> list[str]:
    """`strings` that the schema's `pattern` and lengths accept; one made from the
    pattern where none does (a call every guard and tool would refuse tests nothing)."""
    pattern = schema.get("pattern")
    pattern = pattern if isinstance(pattern, str) else None
    low, high = _length_bounds(schema)
    if pattern is None and not low and high is None:
        return list(strings)
    fitting = [
        s
        for s in strings
        if low <= len(s)
        and (high is None or len(s) <= high)
        and (pattern is None or _matches(pattern, s))
    ]
    if fitting:
        return fitting
    made = string_for_pattern(pattern, random.Random(pattern), low, high) if pattern else None
    return [made] if made is not None else [_padded("", low, high, random.Random(0))]


@dataclass
class ActionSpace:
    """The tools of one environment and how actions are written in its format."""

    tools: list[ToolShape]
    tool_format: str
    adapter: bool  # an environment adapter: the whole response is a command

    @staticmethod
    def of(env: Any) -> ActionSpace:
        tools = getattr(env, "tools", None) or {}
        shapes = [ToolShape.of(t) for t in tools.values()]
        fmt = getattr(getattr(env, "format", None), "name", "") or "hermes"
        return ActionSpace(shapes, fmt, adapter=not hasattr(env, "tools"))

    def tool(self, name: str) -> ToolShape | None:
        return next((t for t in self.tools if t.name == name), None)

    def call(self, name: str, arguments: Mapping[str, Any]) -> str:
        """A call as the model writes it in the spec's format."""
        chat_call = ChatCall(name, json.dumps(dict(arguments), ensure_ascii=False))
        return render_calls(self.tool_format, None, [chat_call])

    def answer(self, text: str) -> str:
        """A final answer as the model writes it (react marks it; the others take the text)."""
        if self.tool_format == "react":
            return f"Final Answer: {text}"
        return text

    def random_call(self, tool: ToolShape, rng: random.Random, vocab: Vocabulary) -> str:
        return self.call(tool.name, self.random_arguments(tool, rng, vocab))

    def random_arguments(
        self, tool: ToolShape, rng: random.Random, vocab: Vocabulary
    ) -> dict[str, Any]:
        """Arguments drawn from the schema: every required one, each optional one at even odds."""
        args: dict[str, Any] = {}
        for name, schema in tool.properties.items():
            if name in tool.required or rng.random() < 0.5:
                args[name] = draw_value(schema if isinstance(schema, Mapping) else {}, rng, vocab)
        return args

    def malformed(self, tool: ToolShape | None) -> str:
        """A turn the format cannot parse: a call cut in half (a cut-off response)."""
        if tool is None:
            return "<tool_call>{" if self.tool_format != "react" else "Action:"
        whole = self.call(tool.name, {})
        cut = whole[: max(2, len(whole) // 2)]
        return cut if not get_format(self.tool_format).parse(cut, None).ok else whole + "]]{"

    def calls_of(self, text: str) -> list[tuple[str, dict[str, Any]]]:
        """The calls a turn makes, parsed in the spec's format ([] for an answer or an error)."""
        if self.adapter:
            return []
        parsed = get_format(self.tool_format).parse(text, None)
        return [(c.name, dict(c.arguments)) for c in parsed.calls] if parsed.ok else []

    def final_of(self, text: str) -> str | None:
        """The final answer of a turn with no call, else None."""
        if self.adapter:
            return None
        parsed = get_format(self.tool_format).parse(text, None)
        return parsed.final_answer if parsed.ok and not parsed.calls else None


def unseen(space: ActionSpace, prompt: str, text: str) -> list[str]:
    """The values a turn writes that its prompt never showed (an argument the oracle
    knew, an answer read from the sample): a model could not have written them."""
    if space.adapter:
        written = _WORD.findall(text)
    else:
        calls = space.calls_of(text)
        if calls:
            written = [str(v) for _, args in calls for v in _flat(args)]
        else:
            written = _WORD.findall(space.final_of(text) or "")
    shown = _shown_text(prompt)
    return [w for w in written if w.strip() and not _shows(shown, w)]


def shown_values(prompt: str, values: Sequence[Any]) -> list[Any]:
    """The values that ``prompt`` shows whole (what a model could copy from it)."""
    shown = _shown_text(prompt)
    return [v for v in values if str(v).strip() and _shows(shown, str(v))]


def _shown_text(prompt: str) -> str:
    return " ".join(_SPECIAL.sub(" ", prompt).lower().split())


def _shows(shown: str, value: str) -> bool:
    """Whether ``shown`` has ``value`` whole: `7` is not shown by `17`, `0.7` or `7.5`
    (by a plain substring test, every small number was shown by some prompt)."""
    needle = re.escape(" ".join(value.lower().split()))
    return re.search(rf"(?<!\w)(?<!\d\.){needle}(?!\w)(?!\.\d)", shown) is not None


def _flat(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return [leaf for v in value.values() for leaf in _flat(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _flat(v)]
    return [] if value is None or isinstance(value, bool) else [value]
