"""The report folds a response's reasoning (a leading <think> block): in the data, and in
headless Chromium (the block is a closed <details>, the answer stays in view)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentspec.runtime.episode.trajectory import Step, Trajectory, write_jsonl
from agentspec.viewer import write_report
from agentspec.viewer.load import load_run
from agentspec.viewer.report import build_payload

THOUGHT = "<think>The user wants 6*7; call the calculator.</think>\n"
ANSWER = '<tool_call>{"name": "calc"}</tool_call>'


def byte_level_tokenizer(directory: Path) -> tuple[Path, Any]:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([THOUGHT + ANSWER] * 3, trainer=trainer)
    directory.mkdir(parents=True, exist_ok=True)
    tok.save(str(directory / "tokenizer.json"))
    return directory, tok


def trajectory(tok: Any) -> Trajectory:
    response = tok.encode(THOUGHT + ANSWER).ids
    step = Step(
        0,
        tok.encode("question").ids,
        response,
        [0.0] * len(response),
        action_text=THOUGHT + ANSWER,
        done=True,
    )
    plain = Step(1, [], [], [], action_text=ANSWER, done=True)
    return Trajectory(steps=[step, plain], sample_id="s0", group_id="g0", success=True)


def test_reasoning_is_marked_for_folding(tmp_path: Path) -> None:
    directory, tok = byte_level_tokenizer(tmp_path / "tok")
    write_jsonl(tmp_path / "trajectories.jsonl", [trajectory(tok)])
    payload = build_payload(load_run(tmp_path, tokenizer=directory))
    first, second = payload["trajs"][0]["steps"]
    assert first["act"][: first["think_len"]] == THOUGHT
    assert "".join(first["toks"][: first["think_toks"]]).strip() == THOUGHT.strip()
    assert "".join(first["toks"][first["think_toks"] :]) == ANSWER
    assert "think_len" not in second


@pytest.mark.slow
def test_reasoning_is_folded_in_the_page(tmp_path: Path) -> None:
    from .browser import browser_page

    directory, tok = byte_level_tokenizer(tmp_path / "tok")
    write_jsonl(tmp_path / "trajectories.jsonl", [trajectory(tok)])
    report = write_report(tmp_path, tmp_path / "report.html", tokenizer=directory)
    with browser_page() as (page, errors):
        page.goto(report.resolve().as_uri())
        page.wait_for_selector('body[data-ready="1"]', timeout=10_000)
        folded = page.locator("#detail details.reasoning")
        assert folded.count() == 1
        assert folded.get_attribute("open") is None
        assert "Reasoning" in folded.locator("summary").inner_text()
        assert "call the calculator" in folded.locator("pre").text_content()
        produced = page.locator("#detail pre.trained.response:not(.reasoning)").first
        assert produced.text_content() == ANSWER
        assert errors == []
