"""Start a stdio MCP server so that agentspec knows its process id, and bound what it sends.

Run as ``python -I -S launch.py MAX_RESULT_BYTES MAX_LOG_BYTES PROGRAM ARGS…`` with
the server's stderr as this process's stderr. It writes ``agentspec-mcp pid N``
there, forks a *filter*, then becomes the server (``exec``: the same process,
the same id, the same process group). With the id, agentspec can kill the
server's process group itself when the SDK's own shutdown is cut short (the
event loop ending in the middle of it); the filter, in that group too, goes
with it.

The server's stdout and stderr are pipes to the filter, which passes them on:

- **stdout**, one JSON-RPC message a line: a line of at most ``MAX_RESULT_BYTES``
  goes through as it is. A longer one is never held whole (the SDK reads a line
  in time quadratic in its length, and a 100 MB result took gigabytes): its
  bytes are scanned for the message's top-level ``id`` as they pass, and
  dropped. An answer (an ``id``, no ``method``) becomes a JSON-RPC error for
  that id (code :data:`TOO_LARGE`), so that its call fails at once; anything
  else (a notification, a request of the server's) is dropped.
- **stderr**: the first ``MAX_LOG_BYTES`` bytes go through; then one line says
  the rest is cut, and when the server ends, its last :data:`TAIL_BYTES` follow
  (what explains a crash). Everything is read, so the server never blocks on a
  full pipe.

The end of stdout is passed on only once stderr has ended too (or a second
later, if a child of the server keeps it open): when agentspec sees the server
stop, the last lines it wrote on stderr are already there to quote.

Standard library only, and little of it imported (``os``, ``sys``,
``selectors``; ``re`` only for an oversized message): it adds milliseconds to a
server's start.
"""

from __future__ import annotations

import os
import selectors
import sys
import time
from typing import Any

PID_MARKER = "agentspec-mcp pid"
TOO_LARGE = -32050
"""The JSON-RPC error code of an answer dropped for its size (in the range JSON-RPC
leaves to implementations)."""
TAIL_BYTES = 4096
"""The last bytes of a cut stderr, written when the server ends."""
_CHUNK = 1 << 16
_STDERR_GRACE = 1.0  # seconds stderr may stay open after stdout ended


def too_large_message(limit: int, size: int | None = None, at_least: bool = False) -> str:
    """The error of an answer dropped for its size (the model reads it)."""
    measured = f" ({'at least ' if at_least else ''}{size:,} bytes)" if size is not None else ""
    return (
        f"the server's answer{measured} is larger than its max_result_bytes ({limit:,} bytes),"
        " and was dropped unread"
    )


def main(argv: list[str]) -> None:
    max_result_bytes, max_log_bytes, command = int(argv[0]), int(argv[1]), argv[2:]
    os.write(2, f"{PID_MARKER} {os.getpid()}\n".encode())
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    child = os.fork()
    if child == 0:
        # Forked twice, so that the filter is not the server's child (no zombie, no
        # SIGCHLD for a server to puzzle over); its stdout and stderr are the real ones.
        if os.fork() == 0:
            os.close(0)
            os.close(out_write)
            os.close(err_write)
            _filter(out_read, err_read, max_result_bytes, max_log_bytes)
        os._exit(0)
    os.waitpid(child, 0)
    os.dup2(out_write, 1)
    os.dup2(err_write, 2)
    for fd in (out_read, out_write, err_read, err_write):
        os.close(fd)
    try:
        os.execvp(command[0], command)
    except OSError as exc:  # no such program, not executable, ...
        os.write(2, f"cannot start {command[0]!r}: {exc.strerror or exc}\n".encode())
        os._exit(127)


def _filter(out_read: int, err_read: int, max_result_bytes: int, max_log_bytes: int) -> None:
    messages, log = _Messages(max_result_bytes), _Log(max_log_bytes)
    handlers: dict[int, Any] = {out_read: messages, err_read: log}
    selector = selectors.DefaultSelector()
    for fd in handlers:
        selector.register(fd, selectors.EVENT_READ)
    stdout_ended_at: float | None = None
    try:
        while handlers:
            wait = None
            if stdout_ended_at is not None:
                wait = max(0.0, stdout_ended_at + _STDERR_GRACE - time.monotonic())
            ready = selector.select(wait)
            if not ready:  # stderr outlived stdout by the grace: stop waiting for it
                break
            # stderr first: the lines a server writes before it answers land first
            for fd in sorted((key.fd for key, _ in ready), key=lambda fd: fd != err_read):
                chunk = os.read(fd, _CHUNK)
                if chunk:
                    handlers[fd].feed(chunk)
                    continue
                selector.unregister(fd)
                del handlers[fd]
                if fd == out_read:
                    stdout_ended_at = time.monotonic()
        log.finish()
        messages.finish()
    except BrokenPipeError:  # agentspec closed its end: nobody reads any more
        pass


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _Messages:
    """The server's stdout, one JSON-RPC message a line, each at most ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.line = bytearray()  # the message so far, while it is within the limit
        self.oversized: _Scan | None = None  # the message so far, once it is not

    def feed(self, chunk: bytes) -> None:
        out = bytearray()
        start = 0
        while start < len(chunk):
            newline = chunk.find(b"\n", start)
            end = len(chunk) if newline < 0 else newline
            self._add(chunk[start:end])
            if newline < 0:
                break
            out += self._end_line()
            start = newline + 1
        if out:
            _write(1, bytes(out))

    def finish(self) -> None:
        """The server's stdout ended (a last message without a newline is passed on)."""
        if self.line or self.oversized is not None:
            _write(1, bytes(self._end_line()))

    def _add(self, piece: bytes) -> None:
        if self.oversized is None and len(self.line) + len(piece) <= self.limit:
            self.line += piece
            return
        if self.oversized is None:
            self.oversized = _Scan()
            self.oversized.feed(bytes(self.line))
            self.line = bytearray()
        self.oversized.feed(piece)

    def _end_line(self) -> bytes:
        if self.oversized is None:
            line, self.line = self.line + b"\n", bytearray()
            return bytes(line)
        scan, self.oversized = self.oversized, None
        return scan.error_reply(self.limit)


class _Scan:
    """Reads an oversized JSON-RPC message as it passes, keeping only its top-level
    ``id`` and whether it has a ``method``: strings and nested values are skipped by
    regular expressions, so the scan is linear and holds nothing of the message."""

    def __init__(self) -> None:
        import re

        self.string_body = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
        # what a nested value may skip: all but brackets, its complete strings included
        self.nested = re.compile(rb'(?:[^"{}\[\]]+|"[^"\\]*(?:\\.[^"\\]*)*")*', re.DOTALL)
        self.size = 0
        self.depth = 0
        self.in_string = False
        self.escaped = False  # the last chunk ended on a backslash inside a string
        self.expect_key = False  # the next string at depth 1 is a key
        self.key: bytearray | None = None  # a depth-1 key being read
        self.last_key = b""
        self.id_value: bytearray | None = None  # the raw value of the top-level "id"
        self.id = b""
        self.has_method = False

    def feed(self, data: bytes) -> None:
        self.size += len(data)
        at, end = 0, len(data)
        while at < end:
            if self.in_string:
                at = self._string(data, at)
                continue
            if self.depth >= 2:
                at = _skip(self.nested, data, at)
                if at == end:
                    break
            byte = data[at : at + 1]
            at += 1
            if byte == b'"':
                self.in_string = True
                if self.depth == 1 and self.expect_key:
                    self.key = bytearray()
                elif self.id_value is not None:
                    self.id_value += byte
            elif byte in (b"{", b"["):
                self.depth += 1
                self.expect_key = self.depth == 1 and byte == b"{"
            elif byte in (b"}", b"]"):
                self.depth -= 1
                if self.depth <= 0:
                    self._end_value()
            elif self.depth == 1 and byte == b":":
                self.expect_key = False
                if self.last_key == b"id":
                    self.id_value = bytearray()
            elif self.depth == 1 and byte == b",":
                self._end_value()
                self.expect_key = True
            elif self.id_value is not None and len(self.id_value) < 128:
                self.id_value += byte

    def _string(self, data: bytes, at: int) -> int:
        if self.escaped:  # the escaped byte came at the start of this chunk
            self.escaped = False
            self._keep(data[at : at + 1])
            at += 1
        stop = _skip(self.string_body, data, at)
        self._keep(data[at:stop])
        if stop == len(data):
            return stop
        if data[stop : stop + 1] == b"\\":  # a backslash that ends the chunk
            self.escaped = True
            self._keep(b"\\")
            return stop + 1
        self.in_string = False  # the closing quote
        if self.key is not None:
            self.last_key, self.key = bytes(self.key), None
            self.has_method |= self.last_key == b"method"
        elif self.id_value is not None:
            self.id_value += b'"'
        return stop + 1

    def _keep(self, text: bytes) -> None:
        """Keep a string's bytes only while they are a top-level key or the id (short)."""
        for kept in (self.key, self.id_value):
            if kept is not None and len(kept) < 128:
                kept += text[: 128 - len(kept)]

    def _end_value(self) -> None:
        if self.id_value is not None:
            self.id, self.id_value = bytes(self.id_value).strip(), None

    def error_reply(self, limit: int) -> bytes:
        """The line that stands for the message: an error for its id if it answered a
        request, else nothing."""
        import re

        plain_id = re.fullmatch(rb'-?[0-9]{1,40}|"[^"\\]{0,100}"', self.id)
        if self.has_method or plain_id is None:
            return b""
        message = too_large_message(limit, self.size)  # ASCII, no quotes: JSON as it is
        return (
            b'{"jsonrpc":"2.0","id":'
            + self.id
            + b',"error":{"code":'
            + str(TOO_LARGE).encode()
            + b',"message":"'
            + message.encode()
            + b'"}}\n'
        )


def _skip(pattern: Any, data: bytes, at: int) -> int:
    """Where a match of ``pattern`` (one that may be empty, so always matches) ends."""
    match = pattern.match(data, at)
    return match.end() if match is not None else at


class _Log:
    """The server's stderr: its first ``limit`` bytes, then its last ones at the end."""

    def __init__(self, limit: int) -> None:
        self.left = limit
        self.limit = limit
        self.cut = 0  # bytes not passed on
        self.tail = b""

    def feed(self, chunk: bytes) -> None:
        if self.left > 0:
            kept = chunk[: self.left]
            _write(2, kept)
            self.left -= len(kept)
            chunk = chunk[len(kept) :]
            if not chunk:
                return
        if not self.cut:
            _write(
                2,
                f"\n[agentspec: this server's stderr passed its max_log_bytes ({self.limit:,});"
                " the rest is cut, but for its last lines when it ends]\n".encode(),
            )
        self.cut += len(chunk)
        self.tail = (self.tail + chunk)[-TAIL_BYTES:]

    def finish(self) -> None:
        if self.cut:
            _write(2, f"[agentspec: {self.cut:,} bytes cut; the last ones:]\n".encode())
            _write(2, self.tail if self.tail.endswith(b"\n") else self.tail + b"\n")


if __name__ == "__main__":
    main(sys.argv[1:])
