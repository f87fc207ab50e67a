"""Deep checks of a spec's data: generator names, params and fields, data
files after `${AGENTSPEC_DATA}` (a warning when they are not on this
machine), and the declared `fields` against the first row of a file: each is
there and (JSONL) its value has the declared type. Reading stops at the first
row (at most `FIRST_ROW_BYTES`), so validate stays fast whatever the data's
size; the loader (`stdlib.data.load_samples`) checks every row it reads.
Used by `compiler.deep.DeepChecker`."""

from __future__ import annotations

import difflib
import inspect
import json
from collections.abc import Iterator
from pathlib import Path as FsPath
from typing import Any

from agentspec.compiler.types import python_value_type
from agentspec.core.diagnostics import Diagnostic
from agentspec.spec.model import TaskSpec
from agentspec.spec.yaml_loader import Path, SourceMap

# Python annotations (as strings) of factory parameters → what a config value must be.
ANNOTATION_KINDS: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (int, float),
    "str": (str,),
    "bool": (bool,),
}


class DataChecks:
    """The data checks, mixed into `DeepChecker` (which provides these attributes)."""

    spec: TaskSpec
    map: SourceMap
    spec_dir: FsPath
    diagnostics: list[Diagnostic]

    def error(self, code: str, message: str, path: Path, hint: str | None = None) -> None:
        raise NotImplementedError

    def _user_object(self, impl: str, path: Path) -> Any:
        raise NotImplementedError

    def _signature_of(self, impl: str, target: Any) -> inspect.Signature | None:
        raise NotImplementedError

    def _data(self) -> None:
        data = self.spec.data
        if data is None:
            return
        kind, _, location = data.source.partition(":")
        if kind == "generator" and ":" in location:
            self._user_generator(location)
            return
        if kind == "generator":
            self._generator(location)
            return
        from agentspec.stdlib.data import resolve_path

        if kind == "hf" and not (
            "AGENTSPEC_DATA" in location or location.startswith((".", "/", "~"))
        ):
            return  # a hub id: resolved by `datasets` at run time
        path = resolve_path(location, self.spec_dir)
        if not self._reachable(location, ("data", "source")):
            return
        file = self._data_file(path, kind, data.split)
        if file is None:
            return
        if file.suffix == ".jsonl" or kind == "jsonl":  # the loader reads by kind, not name
            self._jsonl_data(file)
        elif file.suffix == ".parquet" or kind == "parquet":
            self._parquet_data(file)

    def _data_file(self, path: FsPath, kind: str, split: str) -> FsPath | None:
        """The file whose first row is checked: `path`, or the split's file in a folder
        (None, reported where it is wrong, when there is none to read)."""
        if _is_dir(path) and kind in ("jsonl", "parquet"):
            self.error(
                "E914",
                f"{path} is a folder: a `{kind}:` source is one file",
                ("data", "source"),
                "name the file, or use `hf:` for a folder of split files",
            )
            return None
        if _is_dir(path):
            # The split is the user's text, not a pattern: match names, never glob with it.
            every = sorted(path.glob("*.jsonl"))
            files = [f for f in every if f.name.startswith(split)] or every
            if not files:
                return None
            path = files[0]
        if not is_file(path):
            self.error(
                "E914",
                f"{path} is not a regular file (a device, a pipe or a socket): validate does"
                " not read it, and training would read it to its end",
                ("data", "source"),
                "point `source` at a data file",
            )
            return None
        return path

    def _jsonl_data(self, path: FsPath) -> None:
        unusable = _unusable_jsonl(path)
        if unusable is not None:
            message, hint = unusable
            self.error("E914", path.name + message, ("data", "source"), hint)
            return
        row = first_jsonl_row(path)
        if row is not None:
            self._fields_present(list(row), f"the first row of {path.name}")
            inside = self.spec_dir.resolve() in path.resolve().parents
            self._field_types(row, f"row 1 of {path.name}", show_values=inside)
        self._held_out_share(path)

    def _parquet_data(self, path: FsPath) -> None:
        columns, problem = _parquet_columns(path)
        if problem is not None:
            self.error(
                "E914",
                f"{path.name} cannot be read as parquet: {problem}",
                ("data", "source"),
                "point `source` at a parquet file (or use `jsonl:` for JSON lines)",
            )
            return
        if columns is not None:
            self._fields_present(columns, f"the columns of {path.name}")

    def _held_out_share(self, path: FsPath) -> None:
        """W903 when the data is too small to hold out `training.eval_samples` and train
        on the rest: `train` and `eval` then hold out half of it (`held_out_split`)."""
        assert self.spec.data is not None
        eval_samples = self.spec.training.eval_samples
        # a spec with no `training` section is not (yet) meant to be trained
        if self.spec.data.eval_split is not None or "training" not in self.spec.model_fields_set:
            return
        rows = count_jsonl_rows(path)
        if rows is None or rows < 2 or rows > eval_samples:
            return
        self.error(
            "W903",
            f"{path.name} holds {rows} samples, no more than training.eval_samples"
            f" ({eval_samples}): train and eval hold out half of them ({rows // 2})"
            f" and train on {rows - rows // 2}",
            ("training", "eval_samples")
            if "eval_samples" in self.spec.training.model_fields_set
            else ("data", "source"),
            f"set training.eval_samples below {rows}, add samples, or declare an eval_split",
        )

    def _field_types(self, row: dict[str, Any], where: str, show_values: bool = True) -> None:
        """The declared fields' values in a row validate read, against their types
        (the loader checks every row it reads the same way). A file outside the spec's
        folder is the machine's, not the spec's: its values are not repeated (validate
        runs in CI on specs from anyone, and its output is public)."""
        assert self.spec.data is not None
        for field, what, fix in field_type_problems(row, self.spec.data.fields):
            if not show_values:
                declared = self.spec.data.fields[field]
                what = (
                    f"has a value of type {python_value_type(row[field])} (not shown: the file"
                    f" is outside the spec's folder), but data.fields declares it {declared}"
                )
            self.error("E907", f"{where}: field '{field}' {what}", ("data", "fields", field), fix)

    def _user_generator(self, impl: str) -> None:
        """A generator of the user's code takes `split=` and `data.params` as keyword
        arguments: checked against its signature (read from its source, without running
        it, unless `--import`)."""
        assert self.spec.data is not None
        target = self._user_object(impl, ("data", "source"))
        signature = self._signature_of(impl, target)
        if signature is None:
            return
        params = dict(self.spec.data.params)
        name = impl.partition(":")[2]
        hint = f"its signature is {name}{signature}: data.params are its keyword arguments, besides split"
        takes_any = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
        unknown = [k for k in params if k not in signature.parameters and not takes_any]
        for key in unknown:
            close = close_name(key, [p for p in signature.parameters if p != "split"])
            self.diagnostics.append(
                Diagnostic(
                    "E906",
                    f"generator '{impl}' has no parameter '{key}'",
                    self.map.key_span(("data", "params", key)),
                    f"did you mean '{close[0]}'?" if close else hint,
                )
            )
        if unknown:
            return
        try:
            signature.bind(split=self.spec.data.split, **params)
        except TypeError as exc:
            where: Path = ("data", "params") if params else ("data", "source")
            self.error(
                "E906",
                f"generator '{impl}' cannot be called with split= and data.params: {exc}",
                where,
                hint,
            )

    def _generator(self, name: str) -> None:
        from agentspec.stdlib.data import _GENERATORS, GENERATOR_FIELDS, available_generators

        known = available_generators()
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            self.error(
                "E905",
                f"unknown generator '{name}'",
                ("data", "source"),
                f"did you mean 'generator:{close[0]}'?"
                if close
                else "known generators: " + ", ".join(known),
            )
            return
        params = dict(self.spec.data.params) if self.spec.data else {}
        parameters = inspect.signature(_GENERATORS[name]).parameters
        for key, value in params.items():
            if key not in parameters or key == "split":
                accepted = [p for p in parameters if p != "split"]
                close = close_name(key, accepted)
                self.diagnostics.append(
                    Diagnostic(
                        "E906",
                        f"generator '{name}' has no parameter '{key}'",
                        self.map.key_span(("data", "params", key)),
                        f"did you mean '{close[0]}'?"
                        if close
                        else "parameters: " + ", ".join(accepted),
                    )
                )
                continue
            wanted = ANNOTATION_KINDS.get(str(parameters[key].annotation))
            if wanted is not None and not is_kind(value, wanted):
                self.error(
                    "E906",
                    f"parameter '{key}' of generator '{name}' must be {parameters[key].annotation}, not {python_value_type(value)}",
                    ("data", "params", key),
                )
            elif isinstance(value, str) and looks_like_data_path(value):
                self._reachable(value, ("data", "params", key))
        if name in GENERATOR_FIELDS:
            self._fields_present(GENERATOR_FIELDS[name], f"samples of generator '{name}'")

    def _fields_present(self, available: Any, where: str) -> None:
        assert self.spec.data is not None
        for field in self.spec.data.fields:
            if field not in available:
                close = difflib.get_close_matches(field, list(available), n=1, cutoff=0.6)
                self.diagnostics.append(
                    Diagnostic(
                        "E907",
                        f"declared field '{field}' is not in {where}",
                        self.map.key_span(("data", "fields", field)),
                        f"did you mean '{close[0]}'?"
                        if close
                        else "fields there: " + ", ".join(sorted(available)),
                    )
                )

    def _reachable(self, raw: str, path: Path) -> bool:
        from agentspec.stdlib.data import DATA_ENV, resolve_path

        resolved = resolve_path(raw, self.spec_dir)
        try:
            if resolved.exists():
                return True
        except (OSError, ValueError):  # e.g. a NUL byte or a name too long for the file system
            pass
        if DATA_ENV in raw:
            hint = (
                f"set ${DATA_ENV} to the data folder (default: ../shared/data beside the checkout)"
            )
        else:
            hint = "a relative path is read from the spec's folder"
        self.error(
            "W901",
            f"{raw} is not reachable from this machine",
            path,
            hint + "; the spec is checked without its data",
        )
        return False


def _is_dir(path: FsPath) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def is_file(path: FsPath) -> bool:
    """A regular file: reading `/dev/stdin`, a FIFO or `/dev/zero` would block or never end."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


# The most of a data file validate reads: its first rows, never a whole file.
FIRST_ROW_BYTES = 1 << 20
# The largest data file validate counts the rows of (W903).
COUNT_ROWS_BYTES = 16 << 20


def first_data_row(spec: TaskSpec, spec_dir: FsPath) -> dict[str, Any] | None:
    """The sample an episode would start from first, as far as validate can read it
    cheaply: the first row of a JSONL file on this machine. None for other sources,
    and when `derived` fields are declared (computing them needs the generated code)."""
    data = spec.data
    if data is None or data.derived:
        return None
    kind, _, location = data.source.partition(":")
    if kind != "jsonl":
        return None
    from agentspec.stdlib.data import resolve_path

    path = resolve_path(location, spec_dir)
    return first_jsonl_row(path) if is_file(path) else None


def first_jsonl_row(path: FsPath) -> dict[str, Any] | None:
    """The first object of a JSONL file, reading at most `FIRST_ROW_BYTES`
    (None when there is none, or it is longer, or the file cannot be read)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            budget = FIRST_ROW_BYTES
            while budget > 0:
                line = handle.readline(budget)
                if not line:
                    return None
                budget -= len(line)
                if line.strip():
                    if not line.endswith("\n") and budget <= 0:
                        return None  # the row is longer than the budget
                    row = json.loads(line)
                    return row if isinstance(row, dict) else None
    except (OSError, ValueError, RecursionError):
        return None
    return None


def count_jsonl_rows(path: FsPath) -> int | None:
    """The non-empty lines of a JSONL file of at most `COUNT_ROWS_BYTES` (None for a larger
    or unreadable one: validate never reads a whole large file)."""
    try:
        if path.stat().st_size > COUNT_ROWS_BYTES:
            return None
        with path.open("rb") as handle:
            return sum(1 for line in handle if line.strip())
    except OSError:
        return None


def _unusable_jsonl(path: FsPath) -> tuple[str, str] | None:
    """Why a JSONL file cannot give a first sample, read from its head (at most
    `FIRST_ROW_BYTES`): it has no rows, or its first line is not UTF-8, not JSON, or not an
    object. (What is wrong, written to follow the file's name; how to fix it), or None
    when it can, cannot be read (W901 or the loader say why), or its first row is longer
    than validate reads."""
    try:
        with path.open("rb") as handle:
            head = handle.read(FIRST_ROW_BYTES + 1)
    except OSError:
        return None
    if len(head) > FIRST_ROW_BYTES:
        head = head[:FIRST_ROW_BYTES]
    elif not head.strip():
        return (
            " has no rows: every run would stop before its first episode",
            "write one JSON object per line, or point `source` at the data",
        )
    number, line = next(
        ((i, raw) for i, raw in enumerate(head.split(b"\n"), 1) if raw.strip()), (0, b"")
    )
    if not line or (b"\n" not in head and len(head) == FIRST_ROW_BYTES):
        return None  # blank as far as validate reads, or a first row longer than that
    problem = _row_problem(line)
    if problem is None:
        return None
    return f": line {number} {problem}", "every line of a JSONL file is one JSON object, in UTF-8"


def _row_problem(line: bytes) -> str | None:
    """Why one JSONL line is not a sample, else None."""
    try:
        row = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        return "is not UTF-8 text"
    except json.JSONDecodeError as exc:
        return f"is not JSON ({exc.msg})"
    except RecursionError:
        return "is not a usable sample (nested too deeply)"
    except ValueError as exc:
        return f"is not a usable sample ({exc})"
    if not isinstance(row, dict):
        return "is not a JSON object: each line is one sample"
    return None


def field_type_problems(
    row: dict[str, Any], fields: dict[str, Any]
) -> Iterator[tuple[str, str, str]]:
    """(field, what is wrong, how to fix it) for each declared field whose value in a row
    has another type; a field the row lacks is left to the caller."""
    from agentspec.stdlib.data import value_problem

    for field, declared in fields.items():
        if field in row:
            problem = value_problem(row[field], declared)
            if problem is not None:
                yield field, *problem


def _parquet_columns(path: FsPath) -> tuple[list[str] | None, str | None]:
    """A parquet file's column names from its footer (no rows read), or why it cannot be
    read; (None, None) when pyarrow is not installed here."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return None, None
    try:
        return list(pq.read_schema(path).names), None
    except Exception as exc:  # pyarrow's errors for a file that is not parquet vary
        return None, str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def close_name(wrong: str, names: list[str]) -> list[str]:
    """A likely intended name: a close spelling, a name inside the wrong one (`top_k` →
    `k`), or the name the wrong one shortens (`expr` → `expression`)."""
    close = difflib.get_close_matches(wrong, names, n=1, cutoff=0.5)
    if close:
        return close
    parts = set(wrong.split("_"))
    return [n for n in names if n in parts][:1] or [n for n in names if n.startswith(wrong)][:1]


def looks_like_data_path(value: str) -> bool:
    return "AGENTSPEC_DATA" in value or value.endswith((".jsonl", ".json", ".parquet", ".tsv"))


def is_kind(value: Any, kinds: tuple[type, ...]) -> bool:
    if isinstance(value, bool) and bool not in kinds:
        return False
    return isinstance(value, kinds)
