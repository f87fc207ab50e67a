"""Where samples come from: `jsonl:`, `parquet:`, `hf:` and `generator:` sources.

`load_samples` is what generated code calls for a spec's `data` section.
Paths may use `${AGENTSPEC_DATA}` (default `../shared/data`) and other
environment variables; relative paths resolve against the spec's folder.
Procedural sources register with `@register_generator`.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from agentspec.stdlib.calculator import evaluate_terms
from agentspec.stdlib.user import import_target, resolve_config_paths

DATA_ENV = "AGENTSPEC_DATA"
DEFAULT_DATA_ROOT = "../shared/data"

Sample = dict[str, Any]
Generator = Callable[..., Iterator[Sample]]
_GENERATORS: dict[str, Generator] = {}
GENERATOR_FIELDS: dict[str, tuple[str, ...]] = {}
"""The fields every sample of a generator has (what `validate` checks `data.fields` against)."""


class DataError(ValueError):
    """A data source that cannot be read, with what to do about it."""


def data_root() -> Path:
    """`$AGENTSPEC_DATA`, else `../shared/data` beside the project (a checkout's
    sibling folder, so it does not depend on the current directory)."""
    if DATA_ENV in os.environ:
        return Path(os.environ[DATA_ENV])
    beside_checkout = Path(__file__).resolve().parents[2] / DEFAULT_DATA_ROOT
    return beside_checkout if beside_checkout.is_dir() else Path(DEFAULT_DATA_ROOT)


def register_generator(
    name: str, fields: tuple[str, ...] | None = None
) -> Callable[[Generator], Generator]:
    """Register a procedural source as `generator:NAME`. It is called with
    `split=` and the spec's `data.params` as keyword arguments and yields samples
    (dicts); `fields` names the keys every sample has."""

    def decorate(fn: Generator) -> Generator:
        if name in _GENERATORS:
            raise ValueError(f"generator {name!r} is already registered")
        _GENERATORS[name] = fn
        if fields is not None:
            GENERATOR_FIELDS[name] = fields
        return fn

    return decorate


# Modules whose import registers generators (imported when a name is not found).
GENERATOR_MODULES = (
    "agentspec.stdlib.webshop",
    "agentspec.stdlib.papers",
    "agentspec.stdlib.worlds",
    "agentspec.stdlib.panel",
    "agentspec.stdlib.desk",
)


def _load_generator_modules() -> None:
    import importlib

    for module in GENERATOR_MODULES:
        importlib.import_module(module)


def available_generators() -> list[str]:
    _load_generator_modules()
    return sorted(_GENERATORS)


def resolve_path(raw: str, base_dir: Path | None = None) -> Path:
    """Expand `${AGENTSPEC_DATA}` (with its default) and other variables; resolve
    a relative path against `base_dir` (the spec's folder)."""
    root = str(data_root())
    expanded = raw.replace(f"${{{DATA_ENV}}}", root).replace(f"${DATA_ENV}", root)
    path = Path(os.path.expandvars(expanded)).expanduser()
    if not path.is_absolute() and base_dir is not None and not raw.startswith("$"):
        path = base_dir / path
    return path


def user_generator(target: str) -> Generator:
    """`generator:module.path:attr`: a generator function of the user's code (found
    in the spec's folder first), called with `split=` and the spec's `params`."""

    try:
        found = import_target(target)
    except (ImportError, AttributeError) as exc:
        raise DataError(f"cannot load the generator {target!r}: {exc}") from None
    if not callable(found):
        raise DataError(f"the generator {target!r} is not callable")
    return found  # type: ignore[no-any-return,unused-ignore]


def no_data(spec_name: str) -> DataError:
    """The error of a command (or caller) that plays a spec's samples when it has none."""
    return DataError(
        f"spec {spec_name!r} has no `data:` section, and this command plays its samples:"
        ' add one (docs/reference.md#dataspec), e.g. `data: {source: "jsonl:samples.jsonl"}`'
        " (from Python, give the samples themselves)"
    )


def _user_rows(target: str, split: str, params: dict[str, Any]) -> Iterator[Sample]:
    """The rows of the user's generator: what fails in its code (a parameter it does not
    take, an error of its own) is a DataError naming it, not a traceback."""
    generate = user_generator(target)
    try:
        yield from generate(split=split, **params)
    except DataError:
        raise
    except Exception as exc:
        hint = " (data.params are its keyword arguments, besides split)"
        raise DataError(
            f"the generator {target!r} failed: {type(exc).__name__}: {exc}"
            + (hint if isinstance(exc, TypeError) else "")
        ) from None


def load_samples(
    source: str,
    *,
    split: str = "train",
    params: dict[str, Any] | None = None,
    fields: dict[str, str] | None = None,
    limit: int | None = None,
    base_dir: Path | None = None,
) -> list[Sample]:
    """Read every sample of a source (at most `limit`), checking the declared
    fields: each row has them, with values of their declared types (a DataError
    names the row, its file and the field)."""
    kind, _, location = source.partition(":")
    params = resolve_config_paths(dict(params or {}), base_dir)
    where = source
    if kind == "generator" and ":" in location:
        rows: Iterator[Sample] = _user_rows(location, split, params)
    elif kind == "generator":
        if location not in _GENERATORS:
            _load_generator_modules()
        if location not in _GENERATORS:
            known = ", ".join(available_generators())
            raise DataError(f"unknown generator {location!r}; known generators: {known}")
        rows = _GENERATORS[location](split=split, **params)
    elif kind == "jsonl":
        path = resolve_path(location, base_dir)
        return _checked(_jsonl_rows(path), str(path), fields or {}, limit)
    elif kind == "parquet":
        path = resolve_path(location, base_dir)
        rows, where = _parquet(path), str(path)
    elif kind == "hf":
        if DATA_ENV in location or location.startswith((".", "/", "~")):
            # A local dataset folder (files or a saved dataset) instead of a hub id.
            location = str(resolve_path(location, base_dir))
        rows = _huggingface(location, split, params)
    else:
        raise DataError(
            f"unknown data source kind {kind!r}: use jsonl:, parquet:, hf: or generator:"
        )
    return _checked(((None, row) for row in rows), where, fields or {}, limit)


def _checked(
    rows: Iterator[tuple[int | None, Sample]],
    where: str,
    fields: dict[str, str],
    limit: int | None,
) -> list[Sample]:
    """The first `limit` rows, each with the declared fields, of their declared types.
    A row comes with its line in the file (JSONL) or None."""
    samples: list[Sample] = []
    for index, (line, row) in enumerate(rows):
        if limit is not None and index >= limit:
            break
        label = f"row {index + 1} of {where}"
        if line is not None and line != index + 1:
            label += f" (line {line})"
        if not isinstance(row, Mapping):  # a generator's own row
            raise DataError(f"{label} is {type(row).__name__}, not a mapping of field names")
        samples.append(check_sample(row, fields, label))
    return samples


def check_sample(row: Sample, fields: dict[str, str], label: str = "the sample") -> Sample:
    """`row`, when it has every declared field with a value of its declared type; a
    DataError that names the field (and `label`, the row) otherwise."""
    for name, declared in fields.items():
        if name not in row:
            raise DataError(
                f"{label} has no field {name!r} (declared in data.fields); it has {sorted(row)}"
            )
        problem = value_problem(row[name], declared)
        if problem is not None:
            raise DataError(f"{label}: field {name!r} {problem[0]}; {problem[1]}")
    return row


def value_problem(value: Any, declared: str) -> tuple[str, str] | None:
    """What is wrong with a data value for a field declared of type `declared`
    (a spelling of the language: `int`, `list[str]`, `float?`) and how to fix
    it, or None when it fits. Strict, as the spec's own values are: a boolean
    is not an integer, 7.0 is not an int; an int is a float."""
    spelled = declared.strip()
    if _fits(value, spelled):
        return None
    found = describe_value(value)
    if isinstance(value, (list, tuple)) and spelled.removesuffix("?").startswith("list["):
        item = spelled.removesuffix("?")[5:-1].strip()
        bad = next(i for i, v in enumerate(value) if not _fits(v, item))
        found = f"a list whose item {bad} is {describe_value(value[bad])}"
    if value is None:
        fix = f"declare it `{spelled}?` if it may be null"
    else:
        fix = f"fix the data, or declare it `{_spelling(value)}`"
    return f"is {found}, but data.fields declares it {spelled}", fix


# The language's scalar types and the Python values of each (a bool is only a bool).
_SCALARS: dict[str, type | tuple[type, ...]] = {
    "str": str,
    "int": int,
    "float": (int, float),
    "bool": bool,
}


def _fits(value: Any, spelled: str) -> bool:
    if spelled.endswith("?"):
        return value is None or _fits(value, spelled[:-1].strip())
    if spelled in _SCALARS:
        if isinstance(value, bool):
            return spelled == "bool"
        return isinstance(value, _SCALARS[spelled])
    if spelled == "dict":
        return isinstance(value, Mapping)
    if spelled == "list":
        return isinstance(value, (list, tuple))
    if spelled.startswith("list[") and spelled.endswith("]"):
        item = spelled[5:-1].strip()
        return isinstance(value, (list, tuple)) and all(_fits(v, item) for v in value)
    return True  # `any`, or no type of the language (the checker reports that: E507)


def describe_value(value: Any) -> str:
    """A data value as a message names it: `the string 'seven'`, `the number 7.5`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {'true' if value else 'false'}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return (
            f"the string {value!r}" if len(value) <= 40 else f"a string ({len(value)} characters)"
        )
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return f"a {type(value).__name__}"


def _spelling(value: Any) -> str:
    """The language's type of a data value (for the hint that declares it)."""
    if isinstance(value, bool):
        return "bool"
    for kind, name in ((int, "int"), (float, "float"), (str, "str"), (Mapping, "dict")):
        if isinstance(value, kind):
            return name
    if isinstance(value, (list, tuple)):
        items = {_spelling(v) for v in value if v is not None}
        if items == {"int", "float"}:
            items = {"float"}
        return f"list[{items.pop()}]" if len(items) == 1 else "list"
    return "any"


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")

MAX_ROW_CHARS = 64 * 2**20
"""The longest JSONL row read: a file of one endless line is an error, not all of memory."""


def _jsonl_rows(path: Path) -> Iterator[tuple[int, Sample]]:
    """The rows of a JSONL file, each with its line number. Whatever a row holds that
    JSON allows and a sample cannot (nesting past Python's recursion limit, an integer
    of thousands of digits, an unpaired UTF-16 surrogate) is a DataError at its line."""
    _require_file(path)
    number = 0
    try:
        with path.open(encoding="utf-8") as handle:
            while line := handle.readline(MAX_ROW_CHARS + 1):
                number += 1
                if len(line) > MAX_ROW_CHARS and not line.endswith("\n"):
                    raise DataError(
                        f"{path}:{number}: a row longer than {MAX_ROW_CHARS:,} characters"
                        " (one sample per line: is this JSONL?)"
                    )
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    if _SURROGATE_ESCAPE.search(line):  # `"\ud83d"` alone decodes, then breaks
                        json.dumps(row, ensure_ascii=False).encode("utf-8")
                except json.JSONDecodeError as exc:
                    raise DataError(f"{path}:{number}: not JSON: {exc.msg}") from None
                except (RecursionError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
                    reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
                    raise DataError(f"{path}:{number}: not a usable sample: {reason}") from None
                if not isinstance(row, dict):
                    raise DataError(f"{path}:{number}: a sample must be a JSON object")
                yield number, row
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}:{number + 1}: not UTF-8 text ({exc.reason})") from None


def _require_file(path: Path) -> None:
    if path.is_file():
        return
    if path.is_dir():
        raise DataError(f"{path} is a folder, not a data file")
    if path.exists():
        raise DataError(f"{path} is not a regular file (a device, a pipe or a socket)")
    raise DataError(f"{path} does not exist (set ${DATA_ENV} to the data folder?)")


def _parquet(path: Path) -> Iterator[Sample]:
    _require_file(path)
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow comes with the train extra
        raise DataError("reading parquet needs pyarrow: pip install pyarrow") from None
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow's ArrowInvalid, OSError…: not a parquet file
        raise DataError(f"{path}: not a readable parquet file ({exc})") from None
    yield from table.to_pylist()


def _huggingface(location: str, split: str, params: dict[str, Any]) -> Iterator[Sample]:
    try:
        import datasets
    except ImportError:  # pragma: no cover - datasets comes with the verl extra
        raise DataError("hf: sources need the `datasets` package") from None
    try:
        # A dataset config goes in params, e.g. {name: main} for openai/gsm8k.
        dataset = datasets.load_dataset(location, split=split, **params)
    except Exception as exc:  # offline, unknown id, …: say which and why
        raise DataError(f"cannot load hf:{location} ({type(exc).__name__}: {exc})") from None
    yield from dataset


def split_seed(split: str, seed: int) -> int:
    """A seed per split, so train and test never share generated samples."""
    digest = hashlib.sha256(f"{split}:{seed}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


@register_generator("keys_and_doors", fields=("id", "key_room", "colour"))
def keys_and_doors(*, split: str = "train", seed: int = 0, count: int = 10_000) -> Iterator[Sample]:
    """Episodes of specs/keys_and_doors.yaml: which side room holds the key (the
    door's colour is only flavour text).

    The ``test`` split (the held-out evaluation) is balanced: every 8 samples are
    the 8 (key room, colour) pairs in a random order (see :func:`_side_and_colour`).
    """
    rng = random.Random(split_seed(split, seed))
    colours = ["red", "blue", "green", "yellow"]
    pairs = _side_and_colour(rng, ["west", "east"], colours, split)
    for index in range(count):
        key_room, colour = next(pairs)
        yield {"id": f"{split}-{index}", "key_room": key_room, "colour": colour}


@register_generator("keys_and_chests", fields=("id", "small_key_room", "chest_room", "colour"))
def keys_and_chests(
    *, split: str = "train", seed: int = 0, count: int = 10_000
) -> Iterator[Sample]:
    """Episodes of specs/keys_and_chests.yaml: which side room holds the small key;
    the chest with the door key is in the other one.

    The ``test`` split is balanced as keys_and_doors' is (:func:`_side_and_colour`).
    """
    rng = random.Random(split_seed(split, seed))
    colours = ["red", "blue", "green", "yellow"]
    pairs = _side_and_colour(rng, ["west", "east"], colours, split)
    for index in range(count):
        small_key_room, colour = next(pairs)
        yield {
            "id": f"{split}-{index}",
            "small_key_room": small_key_room,
            "chest_room": "east" if small_key_room == "west" else "west",
            "colour": colour,
        }


@register_generator("switches", fields=("id", "lamps"))
def switches(*, split: str = "train", seed: int = 0, count: int = 10_000) -> Iterator[Sample]:
    """Episodes of specs/switches.yaml: the colour of the lamp over each of four switches,
    drawn independently (red or green).

    The ``test`` split is balanced: every 16 samples are the 16 colourings, in a random
    order, so a policy that ignores the lamps scores the same however it sets them.
    """
    rng = random.Random(split_seed(split, seed))
    colourings = [
        [("red", "green")[(pattern >> bit) & 1] for bit in range(4)] for pattern in range(16)
    ]
    index = 0
    while index < count:
        batch = rng.sample(colourings, 16) if split == "test" else [rng.choice(colourings)]
        for lamps in batch[: count - index]:
            yield {"id": f"{split}-{index}", "lamps": list(lamps)}
            index += 1


def _side_and_colour(
    rng: random.Random, sides: list[str], colours: list[str], split: str
) -> Iterator[tuple[str, str]]:
    """Endless (side, colour) pairs: independent draws, except that in the ``test``
    split every ``len(sides) * len(colours)`` samples are each pair once, in a
    random order.

    A greedy policy that has not learnt to read the prompt always walks the same
    way first, so its held-out success is the share of samples whose key is on
    that side: 14 of 32 (0.44) or 18 of 32 (0.56) on the unbalanced draw this
    replaced, where a flip of that first choice read as a swing between the two.
    On a balanced set such a policy scores the same whichever way it walks.
    """
    cases = [(side, colour) for side in sides for colour in colours]
    while True:
        if split == "test":
            yield from rng.sample(cases, len(cases))
        else:
            yield rng.choice(sides), rng.choice(colours)


@register_generator("arithmetic", fields=("id", "question", "expression", "answer"))
def arithmetic(
    *,
    split: str = "train",
    seed: int = 0,
    count: int = 100_000,
    min_ops: int = 1,
    max_ops: int = 2,
    max_value: int = 50,
) -> Iterator[Sample]:
    """Arithmetic questions with integer answers: `What is 12 + 7 * 3?`.

    Operators are +, - and *; precedence is the usual one, so the answer is
    what the calculator tool computes for `expression`.
    """
    if not 1 <= min_ops <= max_ops:
        raise DataError("arithmetic: need 1 <= min_ops <= max_ops")
    rng = random.Random(split_seed(split, seed))
    phrasings = ["What is {e}?", "Compute {e}.", "Calculate {e}.", "How much is {e}?"]
    for index in range(count):
        ops = rng.randint(min_ops, max_ops)
        terms = [str(rng.randint(1, max_value))]
        for _ in range(ops):
            terms += [rng.choice("+-*"), str(rng.randint(1, max_value))]
        expression = " ".join(terms)
        answer = evaluate_terms(terms)
        yield {
            "id": f"{split}-{index}",
            "question": rng.choice(phrasings).format(e=expression),
            "expression": expression,
            "answer": int(answer),
        }
