"""Loading the original source formats from the shared files: JSONL, parquet and
Hugging Face datasets (a local dataset folder; offline, nothing downloaded)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentspec.stdlib.data import DataError, load_samples
from agentspec.stdlib.hf_cache import seed_hf_cache


def test_gsm8k_jsonl_and_hf_give_the_same_rows(recipe_environment: Path) -> None:
    rows = load_samples(
        "jsonl:${AGENTSPEC_DATA}/gsm8k/test.jsonl", fields={"question": "str", "answer": "str"}
    )
    assert len(rows) == 1319 and rows[0]["answer"].endswith("#### 18")
    hf_rows = load_samples("hf:${AGENTSPEC_DATA}/gsm8k", split="test")
    assert [dict(r) for r in hf_rows] == rows
    assert len(load_samples("hf:${AGENTSPEC_DATA}/gsm8k", split="train")) == 7473


def test_an_hf_hub_id_is_not_downloaded(recipe_environment: Path, tmp_path: Path) -> None:
    # offline (set by the recipe fixture): a hub id not in the cache is an error, not a download
    with pytest.raises(DataError, match="cannot load hf:openai/gsm8k"):
        load_samples(
            "hf:openai/gsm8k", split="test", params={"name": "main", "cache_dir": str(tmp_path)}
        )


@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
def test_an_hf_hub_id_loads_offline_from_a_seeded_cache(
    recipe_environment: Path, tmp_path: Path, kind: str
) -> None:
    folder = recipe_environment / "gsm8k"
    files = {split: folder / f"{split}.jsonl" for split in ("train", "test")}
    if kind == "parquet":  # Agent-R1's preprocessing writes parquet
        import pyarrow as pa
        import pyarrow.parquet as pq

        for split, path in list(files.items()):
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
            files[split] = tmp_path / f"{split}.parquet"
            pq.write_table(pa.Table.from_pylist(rows), files[split])
    cache = tmp_path / "hf-datasets"
    seed_hf_cache("openai/gsm8k", "main", files, cache_dir=cache)
    params = {"name": "main", "cache_dir": str(cache)}
    rows = load_samples("hf:openai/gsm8k", split="test", params=params)
    expected = load_samples("jsonl:${AGENTSPEC_DATA}/gsm8k/test.jsonl")
    assert [dict(r) for r in rows] == expected
    assert len(load_samples("hf:openai/gsm8k", split="train", params=params)) == 7473


def test_parquet_as_agent_r1_preprocessing_writes_it(
    recipe_environment: Path, tmp_path: Path
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = recipe_environment / "hotpotqa" / "questions.jsonl"
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    columns = ["id", "question", "answer", "supporting_titles"]
    table = pa.Table.from_pylist([{k: r[k] for k in columns} for r in rows])
    pq.write_table(table, tmp_path / "hotpotqa.parquet")
    fields = {**dict.fromkeys(columns, "str"), "supporting_titles": "list[str]"}
    loaded = load_samples(f"parquet:{tmp_path / 'hotpotqa.parquet'}", fields=fields)
    assert len(loaded) == 875
    assert loaded[0] == {k: rows[0][k] for k in columns}


def test_hotpotqa_original_and_ircot_formats(recipe_environment: Path) -> None:
    original = load_samples(
        "jsonl:${AGENTSPEC_DATA}/hotpotqa/hotpot_dev_distractor_500.jsonl",
        fields={
            "_id": "str",
            "question": "str",
            "answer": "str",
            "context": "list",
            "supporting_facts": "list",
        },
    )
    assert len(original) == 500
    titles = {title for title, _ in original[0]["context"]}
    assert {title for title, _ in original[0]["supporting_facts"]} <= titles
    ircot = load_samples(
        "jsonl:${AGENTSPEC_DATA}/hotpotqa/ircot_hotpotqa_dev_subsampled.jsonl",
        fields={
            "question_id": "str",
            "question_text": "str",
            "answers_objects": "list",
            "contexts": "list",
        },
    )
    assert len(ircot) == 500
    assert sum(c["is_supporting"] for c in ircot[0]["contexts"]) == 2


def test_generators_of_the_recipes(recipe_environment: Path) -> None:
    goals = load_samples("generator:webshop_goals", split="test", fields={"goal": "dict"})
    assert len(goals) == 500 and goals[0]["goal"]["asin"] == goals[0]["asin"]
    queries = load_samples("generator:csfcube", split="all", fields={"relevant": "list"})
    assert len(queries) == 50
    assert all(q["relevant"] and set(q["relevant"]) <= set(q["relevance"]) for q in queries)
    fold = load_samples("generator:csfcube", split="fold1_test")
    assert 0 < len(fold) < 50
    with pytest.raises(ValueError, match="unknown split"):
        load_samples("generator:csfcube", split="nope")
