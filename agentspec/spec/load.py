"""Read a spec file into a `TaskSpec`, mapping every problem to a position.

This is the first stage of the pipeline: text → YAML values with a source map
→ pydantic models. Schema errors from pydantic arrive with a `loc` such as
``('tools', 'search', 'parameters')``; we map it to the node's span and turn
the error into a `Diagnostic` with a stable code and a hint.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path as FsPath

from pydantic import ValidationError

from agentspec.core.diagnostics import Diagnostic
from agentspec.core.source import SourceFile
from agentspec.spec.base import SPEC_DOCUMENT
from agentspec.spec.model import TaskSpec
from agentspec.spec.scalars import clean_scalars
from agentspec.spec.schema_errors import describe, schema_diagnostics
from agentspec.spec.yaml_loader import MAX_FILE_CHARS, SourceMap, load_yaml


@dataclass
class LoadedSpec:
    """A schema-valid spec and where each of its parts is in the file."""

    spec: TaskSpec
    source_map: SourceMap

    @property
    def source(self) -> SourceFile:
        return self.source_map.source


def read_source(path: str | FsPath) -> tuple[SourceFile | None, Diagnostic | None]:
    """Read a file as UTF-8: (source, None), or what went wrong.

    Undecodable bytes are an error pointing at the first bad byte; the source
    returned then has them replaced, so the line can still be shown.
    """
    name = str(path)
    try:
        # Non-blocking: opening a FIFO with no writer would otherwise wait forever.
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(descriptor, "rb") as file:  # never more than the limit, whatever the file's size
            kind = _not_a_file(os.fstat(descriptor).st_mode)
            if kind is not None:
                return None, Diagnostic(
                    "E103",
                    f"cannot read {name}: it is {kind}, not a regular file",
                    None,
                    hint="give the path of a spec file (.yaml)",
                )
            raw = file.read(MAX_FILE_CHARS + 1)
    except OSError as exc:
        return None, Diagnostic("E103", f"cannot read {name}: {exc.strerror or exc}", None)
    except ValueError as exc:  # a NUL byte in the path
        return None, Diagnostic("E103", f"cannot read {name!r}: {exc}", None)
    if len(raw) > MAX_FILE_CHARS:
        source = SourceFile(name, raw[:MAX_FILE_CHARS].decode("utf-8", errors="replace"))
        end = len(source.text)
        return source, Diagnostic(
            "E105",
            f"the file is larger than {MAX_FILE_CHARS:,} bytes",
            source.span(end - 1, end),
            hint="keep data (samples, documents) in data files; a spec is a few kilobytes",
        )
    try:
        return SourceFile(name, raw.decode("utf-8")), None
    except UnicodeDecodeError as exc:
        source = SourceFile(name, raw.decode("utf-8", errors="replace"))
        offset = len(raw[: exc.start].decode("utf-8", errors="replace"))
        return source, Diagnostic(
            "E103",
            f"the file is not UTF-8 text (byte 0x{raw[exc.start]:02x})",
            source.span(offset, offset + 1),
            hint="save the file as UTF-8",
        )


def _not_a_file(mode: int) -> str | None:
    """What a path that is not a regular file is (`a FIFO`), or None for a file.
    A spec is read from a file: a device or a pipe is refused, never read."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def load_spec(source: SourceFile) -> tuple[LoadedSpec | None, list[Diagnostic]]:
    """YAML + schema stage. Returns the spec (None if invalid) and diagnostics."""
    data, source_map, diagnostics = load_yaml(source)
    if data is None and not diagnostics:
        only_comments = bool(source.text.strip())
        diagnostics.append(
            Diagnostic(
                "E104",
                "the file has only comments" if only_comments else "the file is empty",
                source_map.value_span(()),
                hint="a spec starts with `agentspec: 1`, `name:` and `prompt:`",
            )
        )
    if any(d.is_error for d in diagnostics):
        return None, diagnostics
    data, problems = clean_scalars(data, source_map)
    if problems:
        return None, [*diagnostics, *problems]
    if not isinstance(data, dict):
        diagnostics.append(
            Diagnostic(
                "E104",
                f"a spec must be a mapping of sections, not {describe(data)}",
                source_map.value_span(()),
                hint="start the file with `agentspec: 1`",
            )
        )
        return None, diagnostics
    try:
        spec = TaskSpec.model_validate(data, context=SPEC_DOCUMENT)
    except ValidationError as exc:
        diagnostics.extend(schema_diagnostics(exc, data, source_map))
        return None, diagnostics
    return LoadedSpec(spec, source_map), diagnostics
