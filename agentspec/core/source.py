"""Source files and spans: positions in the user's YAML, 1-based like editors."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import cached_property

GENERATED_YAML_MARK = "written by `agentspec compile"
"""In the first line of every YAML file `agentspec compile` writes (verl's agent-loop
list, OpenEnv's manifest): `validate DIR` skips such a file, which is not a spec."""


def dotted(path: tuple[str | int, ...]) -> str:
    """A YAML path as the user reads it: `tools.search.when`, list items as `[0]`."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


@dataclass(frozen=True)
class Span:
    """A range in a file. Lines and columns are 1-based; `end_column` is exclusive."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    @staticmethod
    def point(file: str, line: int, column: int, width: int = 1) -> Span:
        return Span(file, line, column, line, column + width)


@dataclass(frozen=True)
class SourceFile:
    """The text of one spec file and the arithmetic from offsets to positions."""

    path: str
    text: str

    @cached_property
    def _line_starts(self) -> list[int]:
        # str.find walks the text in C: a character-by-character loop here was most of
        # `validate`'s time on a large hostile file
        starts = [0]
        find = self.text.find
        newline = find("\n")
        while newline != -1:
            starts.append(newline + 1)
            newline = find("\n", newline + 1)
        return starts

    def position(self, offset: int) -> tuple[int, int]:
        """(line, column), both 1-based, of a character offset."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self._line_starts, offset) - 1
        return line + 1, offset - self._line_starts[line] + 1

    def span(self, start: int, end: int) -> Span:
        line, column = self.position(start)
        end_line, end_column = self.position(max(end, start + 1))
        return Span(self.path, line, column, end_line, end_column)

    def line_text(self, line: int) -> str | None:
        if not 1 <= line <= len(self._line_starts):
            return None
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start : end if end != -1 else len(self.text)].rstrip("\r")
