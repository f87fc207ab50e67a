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


def test_a_value_of_the_wrong_type_names_the_file_row_and_field(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    rows = [{"value": 1, "unit": "km"}, {"value": "seven", "unit": "m"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(DataError) as caught:
        load_samples("jsonl:d.jsonl", fields={"value": "int"}, base_dir=tmp_path)
    assert str(caught.value) == (
        f"row 2 of {path}: field 'value' is the string 'seven', but data.fields declares it"
        " int; fix the data, or declare it `str`"
    )
    # The rows before it are not the problem, nor are rows past `limit`.
    assert load_samples("jsonl:d.jsonl", fields={"value": "int"}, limit=1, base_dir=tmp_path)


def test_a_row_after_blank_lines_names_its_line_too(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"v": 1}\n\n{"v": null}\n')
    with pytest.raises(DataError, match=r"row 2 of .*d\.jsonl \(line 3\): field 'v' is null"):
        load_samples(f"jsonl:{path}", fields={"v": "int"})
    assert load_samples(f"jsonl:{path}", fields={"v": "int?"})[1] == {"v": None}


@pytest.mark.parametrize(
    ("declared", "value", "fits"),
    [
        ("float", 3, True),  # an int is a float
        ("float", 2.5, True),
        ("float", True, False),  # a boolean is not a number
        ("int", True, False),
        ("int", 7.0, False),
        ("int", 7, True),
        ("bool", 0, False),
        ("str", 5, False),
        ("list[int]", [1, 2], True),
        ("list[int]", [1, "2"], False),
        ("list", ["a", 1], True),
        ("list[float]?", None, True),
        ("dict", {"a": 1}, True),
        ("dict", [1], False),
        ("any", object(), True),
    ],
)
def test_value_types_are_checked_strictly(declared: str, value: object, fits: bool) -> None:
    from agentspec.stdlib.data import value_problem

    assert (value_problem(value, declared) is None) is fits


def test_generator_and_parquet_rows_are_checked_too(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    with pytest.raises(
        DataError, match=r"row 1 of generator:arithmetic: field 'answer' is the number"
    ):
        load_samples("generator:arithmetic", fields={"answer": "str"}, limit=3)
    path = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist([{"q": "a", "n": 1}, {"q": "b", "n": 2}]), path)
    with pytest.raises(DataError, match=r"row 1 of .*d\.parquet: field 'n' is the number 1"):
        load_samples(f"parquet:{path}", fields={"n": "bool"})


HOSTILE_ROWS = {
    "not UTF-8": ('{"q": "a"}\n'.encode("utf-16"), r":1: not UTF-8 text"),
    "nested too deeply": (
        ('{"q": "a"}\n{"q": "b", "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n").encode(),
        r":2: not a usable sample: nested too deeply",
    ),
    "integer of 100,000 digits": (b'{"q": ' + b"9" * 100_000 + b"}\n", r":1: not a usable sample"),
    "lone surrogate": (b'{"q": "a"}\n{"q": "\\ud83d"}\n', r":2: not a usable sample: .*surrogates"),
}


@pytest.mark.parametrize("content, message", HOSTILE_ROWS.values(), ids=HOSTILE_ROWS.keys())
def test_a_row_no_sample_can_hold_is_a_data_error_at_its_line(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(content)
    with pytest.raises(DataError, match=r"rows\.jsonl" + message):
        load_samples(f"jsonl:{path}")


def test_a_file_of_one_endless_line_is_a_data_error_not_all_of_memory(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"q": "a"}\n')
    with path.open("r+b") as handle:
        handle.truncate(3 * 2**30)  # sparse: 3 GiB of NUL after the first row, no newline
    with pytest.raises(DataError, match=r"rows\.jsonl:2: a row longer than 67,108,864 characters"):
        load_samples(f"jsonl:{path}")


def test_a_folder_named_as_a_file_is_a_data_error_that_says_so(tmp_path: Path) -> None:
    (tmp_path / "rows.jsonl").mkdir()
    with pytest.raises(DataError, match="is a folder, not a data file"):
        load_samples(f"jsonl:{tmp_path / 'rows.jsonl'}")


def test_a_device_or_a_broken_parquet_file_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not a regular file"):
        load_samples("jsonl:/dev/zero")
    broken = tmp_path / "rows.parquet"
    broken.write_text("hello")
    with pytest.raises(DataError, match="not a readable parquet file"):
        load_samples(f"parquet:{broken}")
