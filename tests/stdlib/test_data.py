from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentspec.stdlib.calculator import evaluate
from agentspec.stdlib.data import DataError, data_root, load_samples, resolve_path


def test_arithmetic_generator_is_deterministic_and_correct() -> None:
    a = load_samples("generator:arithmetic", limit=50, params={"max_ops": 3})
    b = load_samples("generator:arithmetic", limit=50, params={"max_ops": 3})
    assert a == b
    for sample in a:
        assert evaluate(sample["expression"]) == sample["answer"]
        assert sample["expression"] in sample["question"]


def test_splits_do_not_share_samples() -> None:
    train = {s["question"] for s in load_samples("generator:arithmetic", limit=300)}
    test = load_samples("generator:arithmetic", split="test", limit=300)
    shared = sum(s["question"] in train for s in test)
    assert shared < 30  # only coincidental collisions of short expressions


def test_real_gsm8k_jsonl() -> None:
    samples = load_samples(
        "jsonl:${AGENTSPEC_DATA}/gsm8k/test.jsonl", fields={"question": "str", "answer": "str"}
    )
    assert len(samples) == 1319
    assert samples[0]["answer"].endswith("#### 18")
    assert resolve_path("${AGENTSPEC_DATA}/x") == data_root() / "x"


def test_missing_field_and_bad_sources(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"q": 1}) + "\n\n" + json.dumps({"q": 2}) + "\n")
    assert len(load_samples(f"jsonl:{path}")) == 2
    assert load_samples("jsonl:d.jsonl", base_dir=tmp_path)[1] == {"q": 2}
    with pytest.raises(DataError, match="has no field 'answer'"):
        load_samples(f"jsonl:{path}", fields={"answer": "int"})
    with pytest.raises(DataError, match="does not exist"):
        load_samples(f"jsonl:{tmp_path / 'nope.jsonl'}")
    path.write_text("{not json\n")
    with pytest.raises(DataError, match=r"d\.jsonl:1: not JSON"):
        load_samples(f"jsonl:{path}")
    with pytest.raises(DataError, match="known generators: airline_service, arithmetic"):
        load_samples("generator:nope")


def test_parquet(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist([{"question": "q1", "answer": 1}]), path)
    assert load_samples(f"parquet:{path}", fields={"question": "str"}) == [
        {"question": "q1", "answer": 1}
    ]


def test_hf_source_reads_a_local_dataset_folder(tmp_path: Path) -> None:
    # `datasets` loads a local folder of JSON files through the same call as a hub id.
    folder = tmp_path / "ds"
    folder.mkdir()
    (folder / "train.jsonl").write_text(json.dumps({"question": "a", "answer": 3}) + "\n")
    samples = load_samples(f"hf:{folder}", fields={"question": "str"})
    assert samples == [{"question": "a", "answer": 3}]
