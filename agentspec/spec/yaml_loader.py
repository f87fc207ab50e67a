"""Load YAML keeping the position of every key and value.

PyYAML's composer gives a node graph with start/end marks; we build plain
Python values from it ourselves, so that we can (a) reject duplicate keys,
which plain YAML loaders silently overwrite, and (b) record, for every path
such as ``("tools", "search", "when")``, where its key and value are in the
file. A scalar also keeps a `ScalarLocator`, which maps a character offset
inside the string value (say, the column of a typo in an expression written
in a ``|`` block) back to the file's own line and column.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import SafeConstructor

try:  # libyaml's C parser ships in PyYAML's wheels; a source build may lack it
    from yaml._yaml import CParser
except ImportError:  # pragma: no cover - every supported platform has the wheel

    class CParser(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):  # type: ignore[no-redef]
        """PyYAML's own scanner and parser, under the C parser's interface."""

        def __init__(self, stream: str):
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)


from agentspec.core.diagnostics import Diagnostic
from agentspec.core.source import SourceFile, Span
from agentspec.spec.yaml_errors import (
    MAX_DEPTH,
    MAX_EXPANDED_CHARS,
    MAX_FILE_CHARS,
    MAX_INT_DIGITS,
    MAX_STRING_CHARS,
    MAX_VALUES,
    LimitExceeded,
    limit_diagnostic,
    odd_indentation,
    reader_diagnostic,
    syntax_diagnostic,
    too_large,
)

Path = tuple[str | int, ...]

_MERGE_TAG = "tag:yaml.org,2002:merge"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_FLOAT_TAG = "tag:yaml.org,2002:float"
# YAML 1.2's floats, among them the exponent forms YAML 1.1 reads as text (`1e-4`,
# `1E5`: 1.1 wants a dot and a signed exponent), so that `learning_rate: 1e-4` is the
# number it looks like; 1.1's `1_000.5` and `1:30.0` (sexagesimal) are text in 1.2.
_FLOAT = re.compile(
    r"^[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*|[0-9]+(?:\.[0-9]*)?[eE][-+]?[0-9]+"
    r"|[0-9]*\.[0-9]+[eE][-+]?[0-9]+)$|^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$"
)
# YAML 1.2's integers: decimal (`017` is 17), `0o` octal, `0x` hex. YAML 1.1 also read
# `017` as octal 15, `1:30` as 90, `1_000` and `0b101` as numbers; 1.2 reads those as text.
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_INT_TAG = "tag:yaml.org,2002:int"


class _BudgetedComposer(yaml.composer.Composer):
    """PyYAML's composer, counting what it composes against `_Budget`.

    The composer is recursive, so the depth check runs before each descent:
    however deep the input nests, composing stops at `MAX_DEPTH`.
    """

    budget: _Budget
    # The parser's, which every concrete loader mixes in beside the composer.
    peek_event: Callable[[], yaml.Event]

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            self.budget.alias(event)
            return super().compose_node(parent, index)
        self.budget.enter(event)
        node = super().compose_node(parent, index)
        self.budget.leave(event)
        return node


class _Loader(_BudgetedComposer, yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans (only true/false, so that a key
    named `on` (as in `on: final`) or a value `no` stays a string), YAML 1.2
    dates (an unquoted `2024-01-01` is a string, not a timestamp), YAML 1.2
    exponents (`1e-4` is a number, not text), and resource limits on what it composes (see `_Budget`).

    Pure Python: slow, but its error messages are what the diagnostics are
    written against, so a file that fails to load is always re-read with it.
    """

    def __init__(self, stream: str):
        super().__init__(stream)
        self.budget = _Budget()


class _FastLoader(_BudgetedComposer, CParser, SafeConstructor, yaml.resolver.Resolver):
    """The same composition over libyaml's C scanner and parser.

    Scanning is most of the cost of loading a spec; libyaml does it about ten
    times faster. Composition (and so the budget, the resolvers and every
    mark) stays in Python: the events and their marks (character index, line,
    column) are the same as the pure-Python parser's.
    """

    def __init__(self, stream: str):
        CParser.__init__(self, stream)
        yaml.composer.Composer.__init__(self)
        SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self.budget = _Budget()

    # types-PyYAML types the argument as the anchors dict; PyYAML passes the anchor.
    def compose_scalar_node(self, anchor: str | None) -> yaml.ScalarNode:  # type: ignore[override]
        node = super().compose_scalar_node(anchor)  # type: ignore[arg-type]
        if node.style == "":  # libyaml's name for the plain style, PyYAML's is None
            node.style = None
        return node


for _loader in (_Loader, _FastLoader):
    _loader.yaml_implicit_resolvers = {
        first: [
            (tag, rx)
            for tag, rx in resolvers
            if tag not in (_BOOL_TAG, _TIMESTAMP_TAG, _INT_TAG, _FLOAT_TAG)
        ]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    _loader.add_implicit_resolver(
        _BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
    )
    _loader.add_implicit_resolver(_FLOAT_TAG, _FLOAT, list("-+.0123456789"))
    _loader.add_implicit_resolver(_INT_TAG, _INT, list("-+0123456789"))


class _Constructor(SafeConstructor):
    """PyYAML's safe constructor, with YAML 1.2's integers (see `_INT`)."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        text = str(self.construct_scalar(node))
        sign, digits = (-1, text[1:]) if text[:1] == "-" else (1, text.lstrip("+"))
        if digits[:2] in ("0o", "0x"):
            return sign * int(digits[2:], 8 if digits[1] == "o" else 16)
        return sign * int(digits, 10)


_Constructor.add_constructor(_INT_TAG, _Constructor.construct_yaml_int)  # type: ignore[type-var]


@dataclass
class _Budget:
    """Counts what a document expands to while it is composed.

    An alias adds the full size of its anchored node, so a "billion laughs"
    file (aliases of aliases) fails after a bounded amount of work instead
    of expanding; an alias to a node that is still open is recursive.
    """

    depth: int = 0
    values: int = 0
    chars: int = 0
    open_anchors: dict[str, tuple[int, int]] = field(default_factory=dict)
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)

    def enter(self, event: Any) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise LimitExceeded(
                "E106",
                f"the document is nested more than {MAX_DEPTH} levels deep",
                event.start_mark,
                "flatten the structure; no spec needs this depth",
            )
        length = len(event.value) if isinstance(event, yaml.ScalarEvent) else 0
        if length > MAX_STRING_CHARS:
            raise LimitExceeded(
                "E110",
                f"a string of {length:,} characters (the limit is {MAX_STRING_CHARS:,})",
                event.start_mark,
                "keep large text in a data file, not in the spec",
            )
        if event.anchor is not None:
            self.open_anchors[event.anchor] = (self.values, self.chars)
        self._add(1, length, event.start_mark)

    def leave(self, event: Any) -> None:
        self.depth -= 1
        if event.anchor is not None:
            values, chars = self.open_anchors.pop(event.anchor)
            self.sizes[event.anchor] = (self.values - values, self.chars - chars)

    def alias(self, event: Any) -> None:
        if event.anchor in self.open_anchors:
            raise LimitExceeded(
                "E108",
                f"the alias *{event.anchor} refers to a node that contains it",
                event.start_mark,
                "a recursive alias has no finite value; copy the part you need instead",
            )
        values, chars = self.sizes.get(event.anchor, (0, 0))
        self._add(values, chars, event.start_mark)

    def _add(self, values: int, chars: int, mark: Any) -> None:
        self.values += values
        self.chars += chars
        if self.values > MAX_VALUES or self.chars > MAX_EXPANDED_CHARS:
            raise LimitExceeded(
                "E107",
                f"the document expands to more than {MAX_VALUES:,} values or"
                f" {MAX_EXPANDED_CHARS:,} characters",
                mark,
                "aliases (*name) count once per use; a spec this large is not a spec",
            )


@dataclass
class ScalarLocator:
    """Maps offsets inside a scalar's value to offsets in the file.

    The value of a quoted or block scalar differs from its source text by
    quotes, indentation, line folding and escapes. We align the two greedily,
    character by character, treating any whitespace as matching any
    whitespace; this is exact for plain, quoted and literal (`|`) scalars and
    for folded (`>`) ones, and degrades gracefully for escape sequences.
    """

    source: SourceFile
    value: str
    start: int  # offset of the node's first character in the file
    end: int
    style: str | None

    @property
    def _offsets(self) -> list[int]:
        cached: list[int] | None = getattr(self, "_cache", None)
        if cached is None:
            cached = self._align()
            self._cache = cached
        return cached

    def _align(self) -> list[int]:
        raw = self.source.text[self.start : self.end]
        pos = 0
        if self.style in ("|", ">"):
            newline = raw.find("\n")
            pos = newline + 1 if newline != -1 else len(raw)
        elif self.style in ("'", '"'):
            pos = 1
        offsets = []
        for ch in self.value:
            probe = pos
            while probe < len(raw) and not _same(raw[probe], ch):
                probe += 1
            if probe < len(raw):
                pos = probe
            offsets.append(self.start + pos)
            pos = min(pos + 1, len(raw))
        offsets.append(self.start + pos)  # one past the end
        return offsets

    def offset(self, index: int) -> int:
        """File offset of character `index` of the value (clamped)."""
        offsets = self._offsets
        return offsets[max(0, min(index, len(offsets) - 1))]

    def span(self, start: int, end: int) -> Span:
        """File span of value[start:end]."""
        first = self.offset(start)
        last = self.offset(max(start, end - 1)) + 1
        return self.source.span(first, last)


def _same(raw: str, ch: str) -> bool:
    return raw == ch or (raw.isspace() and ch.isspace())


@dataclass
class NodeInfo:
    """Where one path's key and value are."""

    value: Span
    key: Span | None = None
    locator: ScalarLocator | None = None


@dataclass
class SourceMap:
    """Positions of every path of one loaded document."""

    source: SourceFile
    nodes: dict[Path, NodeInfo] = field(default_factory=dict)

    def value_span(self, path: Path) -> Span:
        """Span of the value at `path`, or of its nearest existing ancestor."""
        return self._nearest(path).value

    def key_span(self, path: Path) -> Span:
        info = self._nearest(path)
        return info.key or info.value

    def locator(self, path: Path) -> ScalarLocator | None:
        info = self.nodes.get(path)
        return info.locator if info else None

    def has(self, path: Path) -> bool:
        return path in self.nodes

    def _nearest(self, path: Path) -> NodeInfo:
        for cut in range(len(path), -1, -1):
            info = self.nodes.get(path[:cut])
            if info is not None:
                return info
        return NodeInfo(Span.point(self.source.path, 1, 1))


class _Builder:
    def __init__(self, source: SourceFile):
        self.source = source
        self.map = SourceMap(source)
        self.diagnostics: list[Diagnostic] = []
        self._scalars = _Constructor()

    def span(self, node: yaml.Node) -> Span:
        return self.source.span(node.start_mark.index, node.end_mark.index)

    def build(self, node: yaml.Node, path: Path, key: Span | None = None) -> Any:
        locator = None
        if isinstance(node, yaml.ScalarNode):
            _check_int_size(node)
            value = self.construct(node)
            if isinstance(value, str):
                locator = ScalarLocator(
                    self.source, value, node.start_mark.index, node.end_mark.index, node.style
                )
        elif isinstance(node, yaml.SequenceNode):
            _check_collection_tag(node, "tag:yaml.org,2002:seq", "list")
            value = [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        else:
            assert isinstance(node, yaml.MappingNode)
            _check_collection_tag(node, "tag:yaml.org,2002:map", "mapping")
            value = self.mapping(node, path)
        self.map.nodes[path] = NodeInfo(self.span(node), key, locator)
        return value

    def construct(self, node: yaml.Node) -> Any:
        """The node's value; a tag its text does not fit (`!!int abc`, `!!bool maybe`) is a
        YAML error at the node, as PyYAML reports a bad timestamp."""
        try:
            return self._scalars.construct_object(node, deep=True)
        except yaml.MarkedYAMLError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"{node.value!r} is not a valid {tag}: remove the tag or write a value of its type",
                node.start_mark,
            ) from exc

    def mapping(self, node: yaml.MappingNode, path: Path) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        first_seen: dict[Any, Span] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                merged = self.build(value_node, (*path, "<<"))
                for part in merged if isinstance(merged, list) else [merged]:
                    if isinstance(part, dict):
                        for k, v in part.items():
                            result.setdefault(k, v)
                continue
            key = self.construct(key_node)
            if not isinstance(key, Hashable) or isinstance(key, (list, dict)):
                key = str(key)
            key_span = self.span(key_node)
            if key in first_seen:
                line = first_seen[key].line
                # a key that is not text as written: `~` and `null` are one key, `true` and `1` too
                spelled = repr(key) if isinstance(key, str) else f"`{key_node.value}`"
                first = f"the first {spelled} is" if isinstance(key, str) else "the same key is"
                self.diagnostics.append(
                    Diagnostic(
                        "E102",
                        f"duplicate key {spelled}",
                        key_span,
                        hint=f"{first} on line {line}; YAML keeps only one of them, so remove or rename one",
                    )
                )
                continue
            first_seen[key] = key_span
            result[key] = self.build(value_node, (*path, key), key_span)
        return result


def _check_collection_tag(node: yaml.Node, plain: str, kind: str) -> None:
    """A tag on a list or mapping (`!!set`, `!!omap`, `!!python/tuple`) would be dropped
    without a word: it is an error, as a scalar's unknown tag is."""
    if node.tag != plain:
        tag = node.tag.replace("tag:yaml.org,2002:", "!!")
        raise yaml.constructor.ConstructorError(
            None, None, f"the tag {tag} is not read: write a plain {kind}", node.start_mark
        )


def _check_int_size(node: yaml.ScalarNode) -> None:
    # Python refuses to convert integers of more than 4,300 digits; far below
    # that, no spec value is meaningful.
    if node.tag == _INT_TAG and len(node.value) > MAX_INT_DIGITS:
        raise LimitExceeded(
            "E109",
            f"an integer of {len(node.value):,} digits (the limit is {MAX_INT_DIGITS})",
            node.start_mark,
            "write a smaller number, or quote it to make it a string",
        )


def read_scalar(text: str) -> Any:
    """One value written in YAML as a spec reads it (`1e-4` a number, `yes` text):
    for values given outside a spec file, such as `--set learning_rate=1e-4`."""
    return yaml.load(text, Loader=_Loader)  # a SafeLoader: builds plain values only


def load_yaml(source: SourceFile) -> tuple[Any, SourceMap, list[Diagnostic]]:
    """Parse one YAML document into plain values plus its `SourceMap`.

    Returns diagnostics instead of raising; on a syntax error or a resource
    limit (size, depth, alias expansion) the value is None.
    """
    if len(source.text) > MAX_FILE_CHARS:
        return None, SourceMap(source), [too_large(source)]
    odd_space = odd_indentation(source)
    if odd_space is not None:
        return None, SourceMap(source), [odd_space]
    try:
        root = _compose(source.text)
    except LimitExceeded as exc:
        return None, SourceMap(source), [limit_diagnostic(source, exc)]
    except yaml.MarkedYAMLError as exc:
        return None, SourceMap(source), [syntax_diagnostic(source, exc)]
    except yaml.reader.ReaderError as exc:  # a control character YAML does not allow
        return None, SourceMap(source), [reader_diagnostic(source, exc)]
    except yaml.YAMLError as exc:
        return None, SourceMap(source), [Diagnostic("E101", f"YAML error: {exc}", None)]
    if root is None:
        return None, SourceMap(source), []
    builder = _Builder(source)
    try:
        value = builder.build(root, ())
    except yaml.MarkedYAMLError as exc:  # a bad scalar, e.g. an invalid timestamp
        return None, builder.map, [syntax_diagnostic(source, exc)]
    except LimitExceeded as exc:
        return None, builder.map, [limit_diagnostic(source, exc)]
    return value, builder.map, builder.diagnostics


def _compose(text: str) -> yaml.Node | None:
    """The document's node graph: libyaml's parser when it accepts the text,
    else the pure-Python one, so that an error is always PyYAML's own."""
    try:
        return _compose_with(_FastLoader, text)
    except (yaml.YAMLError, UnicodeError):  # libyaml cannot encode lone surrogates
        return _compose_with(_Loader, text)


def _compose_with(loader_class: type[_Loader] | type[_FastLoader], text: str) -> yaml.Node | None:
    loader = loader_class(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()
