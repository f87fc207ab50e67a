"""Read the metadata of a GGUF model file (no torch, no `gguf` package).

A GGUF file starts with a header and a list of typed key/value pairs
(``general.architecture``, ``tokenizer.chat_template``, the vocabulary, ...)
before the tensor data. :func:`read_metadata` reads that list and nothing
else; large arrays (the vocabulary, the merges) are skipped unless asked for,
so reading a model's chat template takes milliseconds, not the seconds the
``gguf`` package's full reader takes.

Layout (little-endian): magic ``GGUF``, version (uint32), tensor count and
key/value count (uint64; uint32 in version 1), then per pair a string key,
a value type (uint32) and the value. Strings are a length then UTF-8 bytes.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Collection
from typing import Any, BinaryIO

__all__ = ["GGUFError", "read_chat_template", "read_metadata"]

CHAT_TEMPLATE_KEY = "tokenizer.chat_template"

_SCALARS = {  # value type -> struct format
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9
_MAX_STRING = 64 << 20  # a longer metadata string means a corrupt file


class GGUFError(ValueError):
    """The file is not a readable GGUF file."""


def read_metadata(
    path: str | os.PathLike[str], keys: Collection[str] | None = None
) -> dict[str, Any]:
    """The key/value metadata of a GGUF file: all of it, or only ``keys``.

    Arrays are read only when asked for by name in ``keys``; otherwise they are
    skipped and reported as ``None``.
    """
    try:
        with open(path, "rb") as f:
            return _read(f, keys)
    except (struct.error, UnicodeDecodeError, OverflowError) as exc:
        raise GGUFError(f"{os.fspath(path)}: not a readable GGUF file ({exc})") from None


def read_chat_template(path: str | os.PathLike[str]) -> str | None:
    """The ``tokenizer.chat_template`` of a GGUF file, or ``None`` if it has none."""
    value = read_metadata(path, {CHAT_TEMPLATE_KEY}).get(CHAT_TEMPLATE_KEY)
    return value if isinstance(value, str) else None


def _read(f: BinaryIO, keys: Collection[str] | None) -> dict[str, Any]:
    if f.read(4) != b"GGUF":
        raise GGUFError(f"{getattr(f, 'name', 'file')}: not a GGUF file (no GGUF magic)")
    (version,) = _unpack(f, "<I")
    count_format = "<I" if version == 1 else "<Q"
    _unpack(f, count_format)  # tensors
    (pairs,) = _unpack(f, count_format)
    out: dict[str, Any] = {}
    for _ in range(pairs):
        key = _string(f, count_format)
        (kind,) = _unpack(f, "<I")
        wanted = keys is None or key in keys
        if kind == _ARRAY and not (keys is not None and key in keys):
            _skip_array(f, count_format)
            if wanted:
                out[key] = None
            continue
        value = _value(f, kind, count_format)
        if wanted:
            out[key] = value
        if keys is not None and all(k in out for k in keys):
            break
    return out


def _unpack(f: BinaryIO, fmt: str) -> tuple[Any, ...]:
    size = struct.calcsize(fmt)
    data = f.read(size)
    if len(data) != size:
        raise GGUFError("unexpected end of file in the metadata")
    return struct.unpack(fmt, data)


def _string(f: BinaryIO, count_format: str) -> str:
    (length,) = _unpack(f, count_format)
    if length > _MAX_STRING:
        raise GGUFError(f"a metadata string of {length} bytes")
    data = f.read(length)
    if len(data) != length:
        raise GGUFError("unexpected end of file in a metadata string")
    return data.decode("utf-8")


def _value(f: BinaryIO, kind: int, count_format: str) -> Any:
    if kind in _SCALARS:
        return _unpack(f, _SCALARS[kind])[0]
    if kind == _STRING:
        return _string(f, count_format)
    if kind == _ARRAY:
        (item_kind,) = _unpack(f, "<I")
        (length,) = _unpack(f, count_format)
        return [_value(f, item_kind, count_format) for _ in range(length)]
    raise GGUFError(f"unknown metadata value type {kind}")


def _skip_array(f: BinaryIO, count_format: str) -> None:
    (item_kind,) = _unpack(f, "<I")
    (length,) = _unpack(f, count_format)
    if item_kind in _SCALARS:
        f.seek(struct.calcsize(_SCALARS[item_kind]) * length, os.SEEK_CUR)
        return
    skip: Callable[[], Any]
    if item_kind == _STRING:
        width = struct.calcsize(count_format)

        def skip() -> None:
            (size,) = struct.unpack(count_format, f.read(width))
            f.seek(size, os.SEEK_CUR)

    else:

        def skip() -> None:
            _value(f, item_kind, count_format)

    for _ in range(length):
        skip()
