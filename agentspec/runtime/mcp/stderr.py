"""What a stdio MCP server writes on stderr: kept, never mixed into agentspec's output.

Each server process writes to a file of its own (a temporary file), so an
error can quote the last lines *that* process wrote — the real cause of a
crash is usually there (a wrong flag, a missing database). When the process
ends, its output is appended to ``RUN_DIR/mcp/NAME.log`` if a run directory is
set (:func:`server_logs`, used by `run` and `train`), under a header naming
the command; without one it is dropped with the temporary file.

Both are bounded by the server's ``max_log_bytes`` (a chatty server once wrote
160 MB of log for 8 calls): the launcher passes on at most that much of one
process's stderr, then only its last lines when it ends
(:mod:`agentspec.runtime.mcp.launch`), and ``NAME.log`` takes at most that much
of all the server's processes together, besides one header line each.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import IO

from agentspec.runtime.mcp.launch import PID_MARKER, TAIL_BYTES
from agentspec.spec.mcp_limits import MAX_LOG_BYTES

__all__ = ["StderrCapture", "quote_tail", "server_logs"]

_LOG_DIR: ContextVar[Path | None] = ContextVar("agentspec_mcp_log_dir", default=None)

TAIL_LINES = 8
"""Lines of a server's stderr quoted in an error."""
_TAIL_BYTES = 4096  # the tail is read from the end of the file: at most this much
_LINE_CHARS = 300  # one quoted line, at most
_LOG_ENDING_BYTES = 4096  # of a process's stderr cut in the run's log: its last bytes, kept


@contextlib.contextmanager
def server_logs(run_dir: str | os.PathLike[str] | None) -> Iterator[None]:
    """Within this block (and the event loops it starts), keep each stdio server's
    stderr in ``run_dir/mcp/NAME.log``; ``None`` keeps none."""
    token = _LOG_DIR.set(Path(run_dir) if run_dir is not None else None)
    try:
        yield
    finally:
        _LOG_DIR.reset(token)


class StderrCapture:
    """One server process's stderr: a temporary file it writes to (``file``)."""

    def __init__(self, server_name: str, command: str, max_log_bytes: int = MAX_LOG_BYTES) -> None:
        # open for the life of the process, closed by close()
        self.file: IO[bytes] = tempfile.TemporaryFile(prefix="agentspec-mcp-")  # noqa: SIM115
        self.command = command
        self.max_log_bytes = max_log_bytes
        folder = _LOG_DIR.get()
        self.log = folder / "mcp" / f"{server_name}.log" if folder is not None else None

    def pid(self) -> int | None:
        """The server's process id, as the launcher wrote it first (None before that)."""
        if self.file.closed:
            return None
        first = os.pread(self.file.fileno(), 64, 0).decode("ascii", errors="replace")
        if first.startswith(PID_MARKER) and "\n" in first:
            number = first[len(PID_MARKER) : first.index("\n")].strip()
            return int(number) if number.isdigit() else None
        return None

    def tail(self, lines: int = TAIL_LINES) -> list[str]:
        """The last non-empty lines the process wrote (read without moving its offset)."""
        if self.file.closed:
            return []
        fd = self.file.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - _TAIL_BYTES)
        text = os.pread(fd, size - start, start).decode("utf-8", errors="replace")
        found = [line.rstrip() for line in text.splitlines() if line.strip()]
        if start > 0 and found:
            found = found[1:]  # the first line read may be cut
        found = [line for line in found if not line.startswith(PID_MARKER)]
        return [_short(line) for line in found[-lines:]]

    def close(self) -> None:
        """Append what the process wrote to the run's log of the server, then drop it."""
        if self.file.closed:
            return
        try:
            if self.log is not None:
                self._append_to_log()
        finally:
            self.file.close()

    def _append_to_log(self) -> None:
        """Append the process's stderr to the run's log, within what is left of the
        server's ``max_log_bytes`` (all its processes together): what does not fit is
        cut from the middle, so that its last lines (a crash's cause) stay."""
        assert self.log is not None
        fd = self.file.fileno()
        size = os.fstat(fd).st_size
        pid = self.pid()
        # the launcher's line becomes part of the header
        start = os.pread(fd, 64, 0).index(b"\n") + 1 if pid is not None else 0
        with contextlib.suppress(OSError):  # a log that cannot be written loses only the log
            self.log.parent.mkdir(parents=True, exist_ok=True)
            with self.log.open("ab") as log:
                room = max(0, self.max_log_bytes - log.tell())
                log.write(f"--- {self.command} (pid {pid}) ---\n".encode())
                if size - start <= room:
                    _copy(fd, start, size, log)
                    return
                ending = min(room, _LOG_ENDING_BYTES)
                # the launcher already cut what passed max_log_bytes and said how much at
                # its tail: those bytes count as not kept too, and its last ones are kept
                launcher_cut, tail_at = _launcher_cut(fd, size, ending)
                ending = max(ending, size - tail_at) if tail_at is not None else ending
                ending = min(ending, room)
                _copy(fd, start, start + room - ending, log)
                log.write(
                    f"[agentspec: {size - start - room + launcher_cut:,} bytes of this"
                    " process's stderr not kept: this log reached its max_log_bytes"
                    f" ({self.max_log_bytes:,}){'; its last ones:' if ending else ''}]\n".encode()
                )
                _copy(fd, size - ending, size, log)


_LAUNCHER_CUT = re.compile(rb"\[agentspec: ([\d,]+) bytes cut; the last ones:\]\n")


def _launcher_cut(fd: int, size: int, ending: int) -> tuple[int, int | None]:
    """The bytes the launcher cut from this stderr (its closing line says how many) and
    where that line starts; (0, None) when it cut nothing."""
    window = ending + 512
    head = max(0, size - window - TAIL_BYTES)
    found = list(_LAUNCHER_CUT.finditer(os.pread(fd, size - head, head)))
    if not found:
        return 0, None
    last = found[-1]
    return int(last.group(1).replace(b",", b"")), head + last.start()


def _copy(fd: int, start: int, end: int, log: IO[bytes]) -> None:
    """Bytes ``start`` to ``end`` of file ``fd`` to ``log``, ending with a newline."""
    last = b"\n"
    while start < end:
        chunk = os.pread(fd, min(1 << 20, end - start), start)
        if not chunk:
            break
        log.write(chunk)
        start += len(chunk)
        last = chunk
    if not last.endswith(b"\n"):
        log.write(b"\n")


def _short(line: str) -> str:
    return line if len(line) <= _LINE_CHARS else line[:_LINE_CHARS] + "…"


def quote_tail(lines: list[str]) -> str:
    """``lines`` as the end of an error message ("" when there are none)."""
    if not lines:
        return ""
    return "; its last stderr lines:\n" + "\n".join(f"  {line}" for line in lines)
