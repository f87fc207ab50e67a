"""BM25 retrieval over a JSONL corpus, with the index cached on disk.

`BM25Index.open(path)` tokenizes (English stop words, Snowball stemmer) and
indexes the corpus with `bm25s` the first time, then saves the index under
`$AGENTSPEC_CACHE/bm25/<key>/`, where the key hashes the corpus file's bytes
and the indexing settings: a second open — in this process or any later one —
loads it instead of rebuilding, and an edited corpus gets a fresh index.

A spec declares a search function over it as `impl: stdlib:bm25`:

```yaml
functions:
  search:
    impl: stdlib:bm25
    params: [str]
    returns: str
    config: {corpus: "${AGENTSPEC_DATA}/hotpotqa/corpus.jsonl", k: 3,
             render: "[{id}] {title}: {text}"}
```
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentspec.stdlib.library import CallSignature, register

INDEX_VERSION = "1"
_FIELD = re.compile(r"\{([A-Za-z_]\w*)\}")
_OPEN: dict[tuple[str, str], BM25Index] = {}
_LOCK = threading.Lock()


def cache_root() -> Path:
    """Where indexes live: `$AGENTSPEC_CACHE/bm25` (default `~/.cache/agentspec/bm25`)."""
    base = os.environ.get("AGENTSPEC_CACHE", str(Path.home() / ".cache" / "agentspec"))
    return Path(base) / "bm25"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def render_doc(template: str, doc: dict[str, Any]) -> str:
    """`{field}` placeholders filled from a document (missing fields render empty)."""
    return _FIELD.sub(
        lambda m: "" if doc.get(m.group(1)) is None else str(doc[m.group(1)]), template
    )


def _tokenize(texts: str | list[str], *, ids: bool) -> Any:
    import bm25s
    import Stemmer

    return bm25s.tokenize(
        texts,
        stopwords="en",
        stemmer=Stemmer.Stemmer("english"),
        return_ids=ids,
        show_progress=False,
    )


@dataclass
class Hit:
    doc: dict[str, Any]
    score: float


class BM25Index:
    """A BM25 index over the documents of one JSONL file.

    Attributes:
        docs: the corpus rows, in file order (hit positions index into it).
        directory: where the index is saved.
        built: whether this object built the index (False: loaded from disk).
    """

    def __init__(self, docs: list[dict[str, Any]], retriever: Any, directory: Path, built: bool):
        self.docs = docs
        self.retriever = retriever
        self.directory = directory
        self.built = built

    @staticmethod
    def key(corpus: Path, text_fields: Sequence[str]) -> str:
        settings = json.dumps({"v": INDEX_VERSION, "fields": list(text_fields), "stem": "english"})
        return hashlib.sha256(f"{file_sha256(corpus)}:{settings}".encode()).hexdigest()[:32]

    @classmethod
    def open(
        cls,
        corpus: str | Path,
        *,
        text_fields: Sequence[str] = ("title", "text"),
        cache: str | Path | None = None,
    ) -> BM25Index:
        """The index of `corpus`, loaded from the cache or built (and saved) once."""
        import bm25s

        path = Path(corpus)
        if not path.is_file():
            raise FileNotFoundError(f"BM25 corpus {path} does not exist")
        docs = read_jsonl(path)
        root = Path(cache) if cache is not None else cache_root()
        directory = root / cls.key(path, text_fields)
        if (directory / "params.index.json").is_file():
            retriever = bm25s.BM25.load(str(directory), show_progress=False, verbosity=0)
            return cls(docs, retriever, directory, built=False)
        texts = [" ".join(str(d.get(f) or "") for f in text_fields) for d in docs]
        retriever = bm25s.BM25()
        retriever.index(_tokenize(texts, ids=True), show_progress=False)
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".bm25-", dir=root))
        try:
            retriever.save(str(staging), show_progress=False)
            # Atomic: readers never see half an index. If another process saved
            # it first, the rename fails and its copy is kept.
            with contextlib.suppress(OSError):
                staging.rename(directory)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return cls(docs, retriever, directory, built=True)

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """The `k` best documents for `query`, best first (fewer if few match)."""
        tokens = _tokenize([query], ids=False)
        vocab = self.retriever.vocab_dict
        known = [[t for t in tokens[0] if t in vocab]]
        if not known[0] or k < 1:
            return []
        k = min(k, len(self.docs))
        scores = self.retriever.get_scores(known[0])
        return [Hit(self.docs[i], float(scores[i])) for i in top_k(scores, k) if scores[i] > 0]


def top_k(scores: Any, k: int) -> list[int]:
    """The indices of the `k` highest scores, best first; equal scores in corpus order.

    bm25s's own top-k (`argpartition`, then an unstable `argsort`) orders ties as the
    installed numpy happens to: after a numpy upgrade the same search returned another
    webshop product. Search results are observations the model is trained on, so they
    must not depend on a library's sort. Every document tied with the k-th score is a
    candidate; the candidates are sorted by score, then position.
    """
    import numpy as np

    if k >= len(scores):
        candidates = np.arange(len(scores))
    else:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        candidates = np.flatnonzero(scores >= kth)
    order = np.lexsort((candidates, -scores[candidates]))
    return [int(i) for i in candidates[order][:k]]


def open_index(corpus: str, text_fields: Sequence[str] = ("title", "text")) -> BM25Index:
    """An index shared by every function over the same corpus in this process."""
    from agentspec.stdlib.data import resolve_path

    path = resolve_path(corpus)
    key = (str(path.resolve()), json.dumps(list(text_fields)))
    with _LOCK:
        if key not in _OPEN:
            _OPEN[key] = BM25Index.open(path, text_fields=text_fields)
        return _OPEN[key]


@register("bm25", CallSignature(("str", "int"), "str", required=1))
def bm25(
    corpus: str,
    k: int = 3,
    text_fields: Sequence[str] = ("title", "text"),
    render: str = "{title}: {text}",
    separator: str = "\n\n",
    numbered: bool = True,
) -> Callable[..., str]:
    """`search(query, k?) -> str`: the best passages of `corpus` for a query,
    each rendered with `render` (`{field}` from the JSONL row), numbered."""
    template = render
    fields = tuple(text_fields)

    def search(query: str, top: int | None = None) -> str:
        hits = open_index(corpus, fields).search(str(query), top or k)
        if not hits:
            return "No results."
        parts = [render_doc(template, hit.doc) for hit in hits]
        if numbered:
            parts = [f"({n}) {part}" for n, part in enumerate(parts, 1)]
        return separator.join(parts)

    return search
