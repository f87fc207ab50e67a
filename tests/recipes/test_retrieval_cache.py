"""The BM25 index is built once per corpus and then loaded from disk."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentspec.stdlib.retrieval import BM25Index, bm25, top_k


def test_second_open_loads_the_cached_index(recipe_environment: Path, tmp_path: Path) -> None:
    corpus = recipe_environment / "hotpotqa" / "corpus.jsonl"
    cache = tmp_path / "cache"
    first = BM25Index.open(corpus, cache=cache)
    assert first.built
    saved = {p.name: p.stat().st_mtime_ns for p in first.directory.iterdir()}

    second = BM25Index.open(corpus, cache=cache)
    assert not second.built  # loaded, not rebuilt
    assert second.directory == first.directory
    assert {p.name: p.stat().st_mtime_ns for p in second.directory.iterdir()} == saved
    # same index, same answers
    query = "Shirley Temple Chief of Protocol"
    assert [h.doc["id"] for h in first.search(query, 5)] == [
        h.doc["id"] for h in second.search(query, 5)
    ]
    assert second.search(query, 1)[0].doc["title"] == "Shirley Temple"


def test_an_edited_corpus_gets_a_new_index(recipe_environment: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    shutil.copy(recipe_environment / "papers" / "csfcube" / "papers.jsonl", corpus)
    cache = tmp_path / "cache"
    first = BM25Index.open(corpus, text_fields=("title", "abstract"), cache=cache)
    with corpus.open("a", encoding="utf-8") as handle:
        handle.write('{"paper_id": "x1", "title": "Zyzzyva quokka", "abstract": ""}\n')
    second = BM25Index.open(corpus, text_fields=("title", "abstract"), cache=cache)
    assert second.built and second.directory != first.directory
    assert second.search("zyzzyva quokka", 1)[0].doc["paper_id"] == "x1"
    # other indexing settings are another index too
    third = BM25Index.open(corpus, text_fields=("title",), cache=cache)
    assert third.built and third.directory not in (first.directory, second.directory)


def test_library_search_renders_passages(recipe_environment: Path) -> None:
    search = bm25(corpus="${AGENTSPEC_DATA}/hotpotqa/corpus.jsonl", k=2, render="{title}")
    text = search("Kiss and Tell 1945 film Corliss Archer")
    assert text.splitlines()[0] == "(1) Kiss and Tell (1945 film)"
    assert len(text.split("\n\n")) == 2
    assert search("qqqzzz") == "No results."


def test_a_search_starts_no_thread_pool(
    recipe_environment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A search runs in a tool worker that a timeout may interrupt: a pool started per
    # call could be interrupted while starting its thread (the process then hung at exit)
    import bm25s

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("bm25s started a thread pool")

    monkeypatch.setattr(bm25s, "ThreadPoolExecutor", refuse)
    search = bm25(corpus="${AGENTSPEC_DATA}/hotpotqa/corpus.jsonl", k=2, render="{title}")
    assert search("Kiss and Tell 1945 film Corliss Archer").startswith("(1) Kiss and Tell")


@given(
    st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.25]), min_size=1, max_size=60),
    st.integers(min_value=1, max_value=70),
)
def test_top_k_orders_by_score_then_corpus_position(scores: list[float], k: int) -> None:
    """Ties (common: BM25 gives equal scores to documents with the same term counts
    and lengths) come in corpus order, whatever numpy's sort does with them."""
    expected = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]
    assert top_k(np.asarray(scores, dtype=np.float32), k) == expected


def test_tied_search_results_come_in_corpus_order(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    rows = [{"id": f"d{i}", "title": "red shoe", "text": ""} for i in range(12)]
    rows.insert(5, {"id": "best", "title": "red red shoe", "text": ""})
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    index = BM25Index.open(corpus, cache=tmp_path / "cache")
    hits = [h.doc["id"] for h in index.search("red", 4)]
    assert hits == ["best", "d0", "d1", "d2"]
