"""Scientific paper search over CSFCube (Mysore et al., 2021): corpus, queries, qrels.

* the data generator `csfcube` yields one sample per query (a query paper and
  a facet): a free-text `query` (title + the abstract sentences of the facet),
  the graded judgements of its candidate pool (`relevance`: paper id → 0–3),
  the `relevant` ids (relevance ≥ `min_relevance`, 2 by default: "similar"
  or "identical") and their titles; splits are CSFCube's evaluation folds
  (`fold1_dev`, `fold1_test`, `fold2_dev`, `fold2_test`) or `all`;
* library functions for a spec's tools: `paper_search` (BM25 over titles and
  abstracts of all 4,205 papers) and `paper_similar` — neighbour expansion:
  the papers closest to a given paper's own title and abstract. CSFCube ships
  no citation graph, so neighbours are content neighbours;
* `graded_dcg` scores a ranked list against graded relevance (nDCG@k).
"""

from __future__ import annotations

import csv
import functools
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentspec.stdlib.data import Sample, register_generator, resolve_path
from agentspec.stdlib.library import CallSignature, register

FOLDER = "${AGENTSPEC_DATA}/papers/csfcube"
TEXT_FIELDS = ("title", "abstract")


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """`qrels.tsv` (query_id, paper_id, relevance) as query id → paper id → grade."""
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels.setdefault(row["query_id"], {})[row["paper_id"]] = int(row["relevance"])
    return qrels


@functools.cache
def _papers(path: Path) -> dict[str, dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return {str(row["paper_id"]): row for row in rows}


def papers(folder: str = FOLDER) -> dict[str, dict[str, Any]]:
    """Paper id → {paper_id, year, title, abstract}."""
    return _papers(resolve_path(folder) / "papers.jsonl")


@register_generator(
    "csfcube",
    fields=(
        "id",
        "paper_id",
        "facet",
        "title",
        "query",
        "relevance",
        "relevant",
        "relevant_titles",
    ),
)
def csfcube(
    *, split: str = "all", folder: str = FOLDER, min_relevance: int = 2
) -> Iterator[Sample]:
    """CSFCube queries with their qrels (see the module docstring)."""
    root = resolve_path(folder)
    qrels = read_qrels(root / "qrels.tsv")
    corpus = papers(folder)
    wanted: set[str] | None = None
    if split != "all":
        folds = json.loads((root / "evaluation_splits.json").read_text(encoding="utf-8"))["all"]
        if split not in folds:
            raise ValueError(f"csfcube: unknown split {split!r}; use all or {sorted(folds)}")
        wanted = set(folds[split])
    with (root / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            if wanted is not None and row["query_id"] not in wanted:
                continue
            grades = qrels.get(row["query_id"], {})
            relevant = sorted(p for p, g in grades.items() if g >= min_relevance)
            if not relevant:
                continue
            yield {
                "id": row["query_id"],
                "paper_id": row["paper_id"],
                "facet": row["facet"],
                "title": row["title"],
                "query": " ".join([row["title"], *row["facet_sentences"]]),
                "relevance": grades,
                "relevant": relevant,
                "relevant_titles": [corpus[p]["title"] for p in relevant],
            }


def render_hits(docs: Sequence[Mapping[str, Any]]) -> str:
    if not docs:
        return "No papers found."
    return "\n".join(f"[{d['paper_id']}] {d['title']} ({d.get('year') or 'n.d.'})" for d in docs)


@register("paper_search", CallSignature(("str",), "str"))
def _search_function(folder: str = FOLDER, k: int = 10) -> Callable[[str], str]:
    """`paper_search(query) -> str`: the best `k` papers, one `[id] title (year)` a line."""
    from agentspec.stdlib.retrieval import open_index

    def search(query: str) -> str:
        index = open_index(str(Path(folder) / "papers.jsonl"), TEXT_FIELDS)
        return render_hits([hit.doc for hit in index.search(str(query), k)])

    return search


@register("paper_similar", CallSignature(("str",), "str"))
def _similar_function(folder: str = FOLDER, k: int = 10) -> Callable[[str], str]:
    """`paper_similar(paper_id) -> str`: the `k` papers closest to one paper's title
    and abstract (itself excluded)."""
    from agentspec.stdlib.retrieval import open_index

    def similar(paper_id: str) -> str:
        paper = papers(folder).get(str(paper_id).strip())
        if paper is None:
            return f"No paper with id {paper_id!r}."
        index = open_index(str(Path(folder) / "papers.jsonl"), TEXT_FIELDS)
        text = f"{paper['title']} {paper.get('abstract') or ''}"
        hits = [h.doc for h in index.search(text, k + 1) if h.doc["paper_id"] != paper["paper_id"]]
        return render_hits(hits[:k])

    return similar


def graded_dcg(ranked: Sequence[str], grades: Mapping[str, int], k: int = 20) -> float:
    """nDCG@k of a ranked list under graded relevance (gain 2^g − 1)."""

    def dcg(gains: Sequence[int]) -> float:
        return sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(gains[:k]))

    ideal = dcg(sorted(grades.values(), reverse=True))
    if ideal == 0:
        return 0.0
    return dcg([grades.get(p, 0) for p in ranked]) / ideal


@register("paper_ndcg", CallSignature(("list[str]", "dict"), "float"))
def _ndcg_function(k: int = 20) -> Callable[[Sequence[str], Mapping[str, int]], float]:
    """`paper_ndcg(ranked_ids, relevance) -> float`: nDCG@k with the graded qrels."""
    return lambda ranked, grades: graded_dcg([str(p) for p in ranked], grades, k)


def oracle(
    sample: Mapping[str, Any], folder: str = FOLDER, k: int = 10, per_turn: int = 8
) -> list[str]:
    """The expert's turns (hermes): search for each relevant paper — by its title,
    or its title and abstract when the title alone does not find it — at most
    `per_turn` searches a turn, then submit the relevant set."""
    from agentspec.stdlib.retrieval import open_index

    index = open_index(str(Path(folder) / "papers.jsonl"), TEXT_FIELDS)
    corpus = papers(folder)
    queries = []
    for paper_id in sample["relevant"]:
        paper = corpus[paper_id]
        query = paper["title"]
        if paper_id not in {h.doc["paper_id"] for h in index.search(query, k)}:
            query = f"{paper['title']} {paper.get('abstract') or ''}"
        queries.append(query)
    turns = []
    for start in range(0, len(queries), per_turn):
        calls = [
            json.dumps({"name": "search", "arguments": {"query": q}})
            for q in queries[start : start + per_turn]
        ]
        turns.append("\n".join(f"<tool_call>{c}</tool_call>" for c in calls))
    submit = json.dumps({"name": "submit", "arguments": {"paper_ids": list(sample["relevant"])}})
    return [*turns, f"<tool_call>{submit}</tool_call>"]
