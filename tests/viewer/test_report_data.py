"""What the report embeds: read tolerantly, nothing invented, prompts split into
old and new parts, safe inside the page. Fast: no browser, no model."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentspec.cli import app
from agentspec.runtime.episode.trajectory import Event, Step, ToolCall, Trajectory, write_jsonl
from agentspec.viewer import ViewerError, build_payload, load_run, render_html, write_report
from agentspec.viewer.report import decode_payload

WORDS = ["<s>", "sys", "user", "q", "call", "calc", "obs", "42", "answer", "</s>", "[UNK]"]


def make_tokenizer(directory: Path) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    directory.mkdir(parents=True, exist_ok=True)
    tok.save(str(directory / "tokenizer.json"))
    return directory


def ids(text: str) -> list[int]:
    return [WORDS.index(w) for w in text.split()]


def chained_trajectory(**info: Any) -> Trajectory:
    """Two steps whose prompts chain: prompt_1 = prompt_0 + response_0 + observation_0."""
    p0, r0, o0 = ids("<s> sys user q"), ids("call calc"), ids("obs 42")
    r1 = ids("answer 42 </s>")
    steps = [
        Step(
            0,
            p0,
            r0,
            [0.0] * len(r0),
            action_text="call calc",
            tool_calls=[ToolCall("calc", {"expression": "6*7"})],
            observation="obs 42",
            observation_ids=o0,
            events=[Event("step"), Event.tool_ok("calc")],
            info=dict(info),
        ),
        Step(
            1,
            p0 + r0 + o0,
            r1,
            [0.0] * len(r1),
            action_text="answer 42",
            rewards={"correct": 1.0},
            done=True,
            info={"advantage": 0.5, "token_advantages": [0.5, 0.5, 0.5]},
        ),
    ]
    return Trajectory(steps=steps, sample_id="s0", group_id="g0", success=True)


def payload_of(tmp_path: Path, trajs: list[Trajectory], **kw: Any) -> dict[str, Any]:
    write_jsonl(tmp_path / "trajectories.jsonl", trajs)
    return build_payload(load_run(tmp_path, **kw))


def test_without_tokenizer_prompts_are_counts_and_rebuilt_text(tmp_path: Path) -> None:
    p = payload_of(tmp_path, [chained_trajectory()])
    first, second = p["trajs"][0]["steps"]
    assert first["seen"] == {"mode": "ids", "old": None, "new": None, "old_n": 0, "new_n": 4}
    assert second["seen"]["mode"] == "rebuilt"
    assert second["seen"]["new"] == "call calc\nobs 42"
    assert (second["seen"]["old_n"], second["seen"]["new_n"]) == (4, 4)
    assert "toks" not in first


def test_with_tokenizer_chained_prompts_store_only_the_new_part(tmp_path: Path) -> None:
    tok = make_tokenizer(tmp_path / "tok")
    p = payload_of(tmp_path, [chained_trajectory()], tokenizer=tok)
    first, second = p["trajs"][0]["steps"]
    assert first["seen"]["old"] == ""
    assert first["seen"]["new"].split() == ["<s>", "sys", "user", "q"]
    assert second["seen"]["old"] is None  # = the previous step's whole prompt
    assert second["seen"]["new"].split() == ["call", "calc", "obs", "42"]
    assert second["toks"] == ["answer", "42", "</s>"]
    assert p["meta"]["tokenizer"] == str(tok)


def test_a_window_that_drops_context_marks_new_from_the_previous_response(tmp_path: Path) -> None:
    tok = make_tokenizer(tmp_path / "tok")
    traj = chained_trajectory()
    traj.steps[1].prompt_ids = ids("<s> sys call calc obs 42")  # user turn dropped
    traj.steps[1].context_truncated = True
    p = payload_of(tmp_path, [traj], tokenizer=tok)
    seen = p["trajs"][0]["steps"][1]["seen"]
    assert seen["old"].split() == ["<s>", "sys"]
    assert seen["new"].split() == ["call", "calc", "obs", "42"]
    assert p["trajs"][0]["steps"][1]["ctx_trunc"] is True


def test_advantages_are_shown_only_when_recorded(tmp_path: Path) -> None:
    p = payload_of(tmp_path, [chained_trajectory()])
    first, second = p["trajs"][0]["steps"]
    assert "adv" not in first and "tadv" not in first
    assert second["adv"] == 0.5
    assert "tadv" not in second  # the same for every token: the step's advantage says it
    traj = chained_trajectory(token_advantages=[1.0])  # wrong length: not shown
    p = payload_of(tmp_path, [traj])
    assert "tadv" not in p["trajs"][0]["steps"][0]
    traj = chained_trajectory(advantage=0.25, token_advantages=[0.1, 0.4])  # token-level
    p = payload_of(tmp_path, [traj])
    assert p["trajs"][0]["steps"][0]["tadv"] == [0.1, 0.4]


def test_trajectory_fields_and_reward_components(tmp_path: Path) -> None:
    p = payload_of(tmp_path, [chained_trajectory(expression_errors=["boom"], custom=1)])
    t = p["trajs"][0]
    assert (t["sid"], t["gid"], t["term"], t["ok"], t["R"]) == ("s0", "g0", "done", True, 1.0)
    assert t["rc"] == {"correct": 1.0} and "it" not in t and t["set"] == "train"
    step = t["steps"][0]
    assert step["calls"] == [{"name": "calc", "arguments": {"expression": "6*7"}}]
    assert step["expr_err"] == ["boom"] and step["info"] == {"custom": 1}
    assert [e["kind"] for e in step["ev"]] == ["step", "tool"]
    assert p["metrics"] == [] and p["config"] is None


def test_minimal_records_missing_optional_keys(tmp_path: Path) -> None:
    record = {
        "format": "agentspec.trajectory",
        "version": 1,
        "steps": [{"prompt_ids": [1, 2], "response_ids": [3]}],
    }
    (tmp_path / "t.jsonl").write_text(json.dumps(record) + "\n")
    p = build_payload(load_run(tmp_path / "t.jsonl"))
    step = p["trajs"][0]["steps"][0]
    assert step["act"] == "" and step["obs"] is None and step["r"] == {}
    assert p["trajs"][0]["ok"] is None


def test_run_directory_metrics_config_traces_and_iterations(tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    write_jsonl(tmp_path / "traces" / "iter_000010.jsonl", [chained_trajectory()])
    write_jsonl(tmp_path / "traces" / "eval_000010.jsonl", [chained_trajectory()])
    (tmp_path / "metrics.jsonl").write_text(
        '{"iteration": 1, "rollout/success": 0.5, "note": "x", "actor/kl": NaN}\n'
        '{"iteration": 2, "rollout/succ'  # a write in progress
    )
    (tmp_path / "config.yaml").write_text("algorithm: steppo\n")
    p = build_payload(load_run(tmp_path))
    assert p["meta"]["kind"] == "train" and p["config"] == "algorithm: steppo\n"
    assert p["metrics"] == [{"iteration": 1, "rollout/success": 0.5}]
    assert any("incomplete last line" in n for n in p["meta"]["notes"])
    assert sorted((t["set"], t["it"]) for t in p["trajs"]) == [("eval", 10), ("train", 10)]


def test_bad_inputs_are_reported_with_their_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "other"}\n\n')
    with pytest.raises(ViewerError, match=r"bad.jsonl:1: not an agentspec trajectory"):
        load_run(bad)
    bad.write_text("{not json\n{}\n")
    with pytest.raises(ViewerError, match=r"bad.jsonl:1: not JSON"):
        load_run(bad)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ViewerError, match="no run here"):
        load_run(tmp_path / "empty")
    good = tmp_path / "good.jsonl"
    write_jsonl(good, [chained_trajectory()])
    with pytest.raises(ViewerError, match=r"no tokenizer\.json"):
        load_run(good, tokenizer=tmp_path)


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("rewards", "abc", "steps[0].rewards is text, not an object"),
        ("action_text", 5, "steps[0].action_text is a number, not text"),
        ("events", "x", "steps[0].events is text, not a list"),
        ("prompt_ids", "abc", "steps[0].prompt_ids is not a list of token ids"),
        ("prompt_ids", [10**12], "steps[0].prompt_ids is not a list of token ids"),
        ("tool_calls", [1], "steps[0].tool_calls holds an item that is not an object"),
    ],
)
def test_a_record_with_a_value_of_another_kind_is_reported_at_its_line(
    tmp_path: Path, field: str, value: object, said: str
) -> None:
    # a correctly tagged record whose values the report cannot read: a traceback before
    record = chained_trajectory().to_dict()
    record["steps"][0][field] = value
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(chained_trajectory().to_dict()) + "\n" + json.dumps(record) + "\n")
    with pytest.raises(ViewerError, match=re.escape(f"bad.jsonl:2: {said}")):
        load_run(bad)
    record = chained_trajectory().to_dict()
    record["steps"] = [1]
    bad.write_text(json.dumps(record) + "\n")
    with pytest.raises(ViewerError, match=re.escape("bad.jsonl:1: steps[0] is a number")):
        load_run(bad)


def test_too_many_trajectories_are_sampled_with_a_note(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "trajectories.jsonl", [chained_trajectory() for _ in range(5)])
    p = build_payload(load_run(tmp_path), max_trajectories=3)
    assert len(p["trajs"]) == 3 and p["meta"]["n_total"] == 5
    assert "showing 3 of 5" in p["meta"]["notes"][0]


def test_model_text_cannot_break_out_of_the_page(tmp_path: Path) -> None:
    traj = chained_trajectory()
    evil = "</script><script>alert(1)</script><!-- \u2028"
    traj.steps[0].action_text = evil
    traj.steps[0].observation = evil
    html = render_html(payload_of(tmp_path, [traj]))
    assert "<script>alert" not in html
    assert html.count("</script>") == 2  # the data block and the code block
    data = re.search(r'id="report-data" data-encoding="gzip\+base64">(.*?)</script>', html, re.S)
    assert data is not None and re.fullmatch(r"[A-Za-z0-9+/=]+", data.group(1))
    assert decode_payload(data.group(1))["trajs"][0]["steps"][0]["act"] == evil


def test_view_command_writes_a_self_contained_page(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "trajectories.jsonl", [chained_trajectory()])
    result = CliRunner().invoke(app, ["view", str(tmp_path)])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "report.html").read_text()
    assert "report:" in result.output
    for external in ("http://", "https://", 'src="/', "<link"):
        assert external not in page.split('id="report-data"')[0]
    traces = str(tmp_path / "trajectories.jsonl")
    result = CliRunner().invoke(app, ["view", traces, "-o", str(tmp_path / "x.html")])
    assert result.exit_code == 0 and (tmp_path / "x.html").is_file()
    empty = tmp_path / "nothing"
    empty.mkdir()
    result = CliRunner().invoke(app, ["view", str(empty)])
    assert result.exit_code == 1 and "no run here" in result.output


def test_view_does_not_import_torch(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "trajectories.jsonl", [chained_trajectory()])
    make_tokenizer(tmp_path / "tokenizer")
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from agentspec.cli import app\n"
        f"r = CliRunner().invoke(app, ['view', {str(tmp_path)!r}, '--tokenizer', "
        f"{str(tmp_path / 'tokenizer')!r}])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_write_report_default_locations(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "t.jsonl", [chained_trajectory()])
    assert write_report(tmp_path / "t.jsonl") == tmp_path / "t.html"


def test_prompt_text_recorded_by_the_runtime_is_shown_as_is(tmp_path: Path) -> None:
    traj = chained_trajectory()
    traj.steps[0].info["prompt"] = "SYSTEM\nUSER: q\n"
    traj.steps[1].info["prompt"] = "SYSTEM\nUSER: q\nASSISTANT: call calc\nTOOL: 42\n"
    p = payload_of(tmp_path, [traj])
    first, second = p["trajs"][0]["steps"]
    assert first["seen"] == {"mode": "text", "old": "", "new": "SYSTEM\nUSER: q\n"}
    assert second["seen"] == {
        "mode": "text",
        "old": None,
        "new": "ASSISTANT: call calc\nTOOL: 42\n",
    }
    assert "prompt" not in second.get("info", {})


def test_view_open_launches_the_browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import webbrowser

    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url))
    write_jsonl(tmp_path / "trajectories.jsonl", [chained_trajectory()])
    result = CliRunner().invoke(app, ["view", str(tmp_path), "--open"])
    assert result.exit_code == 0, result.output
    assert opened == [(tmp_path / "report.html").resolve().as_uri()]
