"""Answers built from what the checks read, and rules a model could learn from a win.

*Recipes* are final answers written from the live prompt, the same way on every
sample, out of what `episode.success` and the rewards compare the answer with
(`reading.CheckReading`): each string literal alone (a keyword), every value of
an answer field that the prompt shows (a listing), every token shaped like the
field's values, every id or number shown, each number shown with its neighbours,
every prompt word, and empty or degenerate answers. A recipe's success rate over
the samples is what a policy that learned it would get.

*Rules* generalise a winning episode that copied values from the sample (the
oracle's answer without its calls, say): each value it wrote is replaced by a
pointer into the prompt its turn saw — the token after the same words, or the
n-th token of the same shape — and the rule is played on every sample. Where
the answer only happened to be on screen (one of four options, a row count
equal to the answer), no rule wins much more often than chance.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentspec.runtime.commands.explore.reading import Reading, numbers_in, strings_in
from agentspec.runtime.commands.explore.space import _SPECIAL

__all__ = ["Listing", "Recipe", "Rule", "answer_recipes", "clean", "rules_of", "token_shape"]

MAX_LISTED = 60  # values one listing answer holds
SEPARATORS = (("", ", "), (" (comma-separated)", ","), (" (space-separated)", " "))
DEGENERATE = ("", "0", "none", "yes", "no")
_TOKEN = re.compile(r"[A-Za-z0-9](?:[\w\-./:]*[A-Za-z0-9])?")
_ID = re.compile(r"(?<![\w\-])(?=[\w\-]*\d)(?=[\w\-]*[A-Za-z])[A-Za-z0-9][\w\-]{2,}(?![\w\-])")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w]|\.\d)")


def clean(prompt: str) -> str:
    """The prompt as text: chat-template markers out, whitespace folded."""
    return " ".join(_SPECIAL.sub(" ", prompt).split())


def token_shape(value: str) -> str | None:
    """A regex for tokens shaped like `value` (`LB2186` → `[A-Z]+\\d+`), or None."""
    value = value.strip()
    if not value or len(value) > 60:
        return None
    parts = re.findall(r"[A-Z]+|[a-z]+|\d+|\s+|.", value)
    out = []
    for part in parts:
        if part.isdigit():
            out.append(r"\d+")
        elif part.isupper() and part.isalpha():
            out.append("[A-Z]+")
        elif part.islower() and part.isalpha():
            out.append("[a-z]+")
        elif part.isspace():
            out.append(r"\s+")
        else:
            out.append(re.escape(part))
    return "".join(out)


def _bounded(shape: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.\-]){shape}(?![\w]|[.\-]\w)")


def shows(text: str, value: str) -> bool:
    needle = re.escape(" ".join(value.lower().split()))
    return re.search(rf"(?<!\w)(?<!\d\.){needle}(?!\w)(?!\.\d)", text.lower()) is not None


@dataclass
class Recipe:
    """A final answer written from the prompt: `write(prompt text) -> answer`."""

    name: str
    write: Callable[[str], str]
    bare: bool = False  # the whole answer, not put in the oracle's answer shape


@dataclass
class Listing:
    """What a listing answer leaves out and how long it may be: the words every
    sample's first prompt shows (the instructions, not the task), and the characters
    a response has room for (a listing cut off by `max_response_tokens` lists nothing)."""

    common: set[str]
    fits: Callable[[str], bool] = lambda text: len(text) <= 400

    def join(self, items: Sequence[str], sep: str = ", ") -> str:
        kept = [i for i in dict.fromkeys(items) if i.lower() not in self.common][:MAX_LISTED]
        while kept and not self.fits(sep.join(kept)):
            kept = kept[: len(kept) * 3 // 4] if len(kept) > 4 else kept[:-1]
        return sep.join(kept)


def _scalars(value: Any) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [s for item in value for s in _scalars(item)]
    if isinstance(value, (Mapping, bool)) or value is None:
        return []
    return [str(value)]


def answer_recipes(
    reading: Reading, split: Sequence[Mapping[str, Any]], listing: Listing | None = None
) -> list[Recipe]:
    """The recipes worth playing for a spec, from its checks and its data."""
    listing = listing if listing is not None else Listing(set())
    checks = reading.checks
    recipes: list[Recipe] = []
    for literal in checks.strings[:8]:
        recipes.append(Recipe(f"the keyword {literal!r}", _const(literal)))
        recipes.append(Recipe(f"the keyword {literal!r} alone", _const(literal), bare=True))
    fields = checks.answer_fields or (checks.fields if checks.reads_action else [])
    for name in fields[:3]:
        values = list(dict.fromkeys(v for s in split for v in _scalars(s.get(name))))[:500]
        if not values:
            continue
        options = _options(split, name)
        known = list(dict.fromkeys([*values, *_option_values(split, options)]))[:1000]
        for label, sep in SEPARATORS:
            recipes.append(
                Recipe(
                    f"every value of sample.{name} the prompt shows"
                    + (f" (and of sample.{', sample.'.join(options)})" if options else "")
                    + label,
                    _listing(known, listing, sep),
                )
            )
        shapes = [s for s, _ in Counter(filter(None, map(token_shape, values))).most_common(2)]
        for shape in shapes:
            recipes.append(
                Recipe(f"every token shaped like sample.{name} ({shape})", _shaped(shape, listing))
            )
        distinct = list(dict.fromkeys(values))
        if len(distinct) <= 6 and len(split) >= 2 * len(distinct):  # a small answer space
            for value in distinct:
                recipes.append(Recipe(f"{value!r} (a value of sample.{name})", _const(value)))
        decimals = _decimals(values)
        if decimals is not None:
            recipes.append(
                Recipe(
                    f"every number shown, with its neighbours (like sample.{name})",
                    _neighbours(decimals, listing),
                )
            )
    for label, sep in SEPARATORS[:2]:
        recipes.append(Recipe(f"every id shown{label}", _every(_ID, listing, sep)))
    recipes.append(Recipe("every number shown", _every(_NUMBER, listing, " ")))
    recipes.append(Recipe("every prompt word", _every(_TOKEN, listing, " ")))
    for text in DEGENERATE:
        recipes.append(Recipe(f"{text!r}", _const(text)))
    return recipes


def _const(text: str) -> Callable[[str], str]:
    return lambda prompt: text


def _options(split: Sequence[Mapping[str, Any]], name: str) -> list[str]:
    """Fields that hold the value of `name` in most samples (a question's options)."""
    rows = [s for s in split[:500] if isinstance(s, Mapping)]
    if not rows:
        return []
    out = []
    for other in rows[0]:
        if other == name:
            continue
        holding = [s for s in rows if _holds(s.get(other), s.get(name))]
        if len(holding) * 2 >= len(rows):
            out.append(other)
    return out


def _holds(container: Any, value: Any) -> bool:
    """Whether a list or dict field holds a value (every item of a list value)."""
    if not isinstance(container, (list, dict)):
        return False
    if isinstance(value, list):
        return bool(value) and all(_hashable_in(v, container) for v in value)
    return isinstance(value, (str, int, float)) and _hashable_in(value, container)


def _hashable_in(value: Any, container: Any) -> bool:
    try:
        return value in container
    except TypeError:
        return False


def _option_values(split: Sequence[Mapping[str, Any]], names: list[str]) -> list[str]:
    return [str(v) for s in split[:500] for n in names for v in s.get(n) or [] if v is not None]


def _listing(values: list[str], listing: Listing, sep: str = ", ") -> Callable[[str], str]:
    def write(prompt: str) -> str:
        lowered = prompt.lower()
        shown = [v for v in values if v.strip() and v.lower() in lowered and shows(prompt, v)]
        # one value is no listing: the only known answer shown is the answer remembered
        return listing.join(shown, sep) if len(shown) > 1 else ""

    return write


def _shaped(shape: str, listing: Listing) -> Callable[[str], str]:
    pattern = _bounded(shape)
    return lambda prompt: listing.join(pattern.findall(prompt))


def _every(pattern: re.Pattern[str], listing: Listing, sep: str = ", ") -> Callable[[str], str]:
    return lambda prompt: listing.join(pattern.findall(prompt), sep)


def _decimals(values: list[str]) -> int | None:
    """How many decimals the field's numbers have (None: not numbers)."""
    found = []
    for value in values[:50]:
        if not re.fullmatch(r"-?\d+(?:\.\d+)?", value.strip()):
            return None
        found.append(len(value.split(".")[1]) if "." in value else 0)
    return Counter(found).most_common(1)[0][0] if found else None


def _neighbours(decimals: int, listing: Listing) -> Callable[[str], str]:
    unit = 10.0**-decimals

    def write(prompt: str) -> str:
        out: list[str] = []
        for n in dict.fromkeys(_NUMBER.findall(prompt)):
            if (len(n.split(".")[1]) if "." in n else 0) != decimals:
                continue
            x = float(n)
            out += [f"{x - unit:.{decimals}f}", n, f"{x + unit:.{decimals}f}"]
        return listing.join(out, " ")

    return write


# ------------------------------------------------------------------ rules


@dataclass
class Pointer:
    """Where a value sits in a prompt: the `index`-th match of `pattern` (negative:
    from the end), whose first group is the value."""

    pattern: re.Pattern[str]
    index: int
    label: str

    def resolve(self, prompt: str) -> str | None:
        found = [m.group(1) for m in self.pattern.finditer(prompt)]
        if not found or not -len(found) <= self.index < len(found):
            return None
        return found[self.index]


@dataclass
class Rule:
    """A winning episode with every copied value replaced by a pointer into its prompt."""

    name: str
    turns: list[tuple[str, list[Pointer]]]  # text with {0}, {1}… slots, and their pointers

    def write(self, index: int, prompt: str) -> str:
        if index >= len(self.turns):
            return ""
        text, pointers = self.turns[index]
        shown = clean(prompt)
        values = [p.resolve(shown) or "" for p in pointers]
        return text.format(*values)


KINDS = (
    ("the token after the same word", ("after1", "after2", "nth")),
    ("the token after the same words", ("after2", "after3", "after1", "nth")),
    ("the n-th token of the same shape", ("nth", "after1")),
    ("the n-th token of the same shape from the end", ("nth_end", "after1")),
)


def rules_of(
    turns: Sequence[str], prompts: Sequence[str], sample: Mapping[str, Any], fixed: set[str]
) -> list[Rule]:
    """The rules a winning episode's turns generalise to (none when a turn wrote a
    value its prompt did not show, or copied nothing from the sample)."""
    values = sorted(
        {v for v in sample_values(sample) if len(v.strip()) >= 2 and v not in fixed},
        key=len,
        reverse=True,
    )
    if len(prompts) < len(turns):
        return []
    slotted: list[tuple[str, list[str]]] = []
    for text in turns:
        slotted.append(_slots(text, values))
    if not any(found for _, found in slotted):
        # it copied nothing it could point at: the same turns on every sample
        return [Rule("the same turns on every sample", [(t, []) for t, _ in slotted])]
    rules = []
    for label, order in KINDS:
        built: list[tuple[str, list[Pointer]]] = []
        for (text, found), prompt in zip(slotted, prompts, strict=False):
            shown = clean(prompt)
            pointers = [_pointer(value, shown, order) for value in found]
            if any(p is None for p in pointers):
                break
            built.append((text, [p for p in pointers if p is not None]))
        else:
            names = "; ".join(p.label for _, ps in built for p in ps)
            rules.append(Rule(f"a rule: {label} ({names})", built))
    unique: dict[str, Rule] = {}
    for rule in rules:
        key = repr([(t, [(p.pattern.pattern, p.index) for p in ps]) for t, ps in rule.turns])
        unique.setdefault(key, rule)
    return list(unique.values())


def sample_values(sample: Mapping[str, Any]) -> list[str]:
    """A sample's values as text (nested keys too, its field names not)."""
    out: list[str] = []
    for value in sample.values():
        out += strings_in(value, 200) + [str(n) for n in numbers_in(value, 200)]
    return list(dict.fromkeys(out))


def _slots(text: str, values: list[str]) -> tuple[str, list[str]]:
    """`text` with each whole occurrence of a value made a `{i}` slot (longest first)."""
    escaped = text.replace("{", "{{").replace("}", "}}")
    found: list[str] = []
    for value in values:
        pattern = re.compile(rf"(?<![\w]){re.escape(value)}(?![\w])")
        if not pattern.search(escaped):
            continue
        slot = "{" + str(len(found)) + "}"
        escaped = pattern.sub(slot.replace("\\", "\\\\"), escaped)
        found.append(value)
    return escaped, found


def _pointer(value: str, prompt: str, order: Sequence[str]) -> Pointer | None:
    shape = token_shape(value)
    if shape is None:
        return None
    bounded = rf"(?<![\w.\-])({shape})(?![\w]|[.\-]\w)"
    where = [m.start() for m in re.finditer(rf"(?<![\w]){re.escape(value)}(?![\w])", prompt)]
    if not where:
        return None
    for kind in order:
        candidates: list[Pointer] = []
        if kind.startswith("after"):
            width = int(kind[-1])
            for start in (where[0], where[-1]):
                words = re.findall(r"[\w']+", prompt[max(0, start - 200) : start])[-width:]
                if len(words) < width:
                    continue
                context = r"\W+".join(re.escape(w) for w in words)
                pattern = re.compile(rf"(?<!\w){context}\W{{1,4}}{bounded}")
                for index in (0, -1):
                    label = f"after {' '.join(words)!r}" + (" (last)" if index else "")
                    candidates.append(Pointer(pattern, index, label))
        else:
            pattern = re.compile(bounded)
            matches = [m.group(1) for m in pattern.finditer(prompt)]
            if value in matches:
                i = matches.index(value)
                index = i if kind == "nth" else i - len(matches)
                candidates.append(Pointer(pattern, index, f"token {index} shaped {shape}"))
        for pointer in candidates:
            if pointer.resolve(prompt) == value:
                return pointer
    return None


def fixed_values(split: Sequence[Mapping[str, Any]]) -> set[str]:
    """Values every sample has (a constant field): not copied from *this* sample."""
    if not split:
        return set()
    sets = [set(sample_values(s)) for s in split[:50]]
    return set.intersection(*sets) if len(sets) > 1 else set()
