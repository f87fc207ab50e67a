"""Token-for-token pin of oracle rollouts of every shipped spec.

Each shipped spec plays its oracle on its first samples with three
tokenizers — the byte tokenizer, the spec's task BPE tokenizer (agentspec's
Rust-backed `BPETokenizer`) and the same BPE wrapped as a Hugging Face fast
tokenizer — and every step's exact tokens are compared with
`tests/runtime/data/rollout_pin.json`: the prompt, response and observation
ids, the decoded action and observation text, and the training rows' layout
(input ids, response mask, token steps, prompt length). Ids are stored as a
length and a short hash, so a failure names the spec, tokenizer, episode,
step and field that changed.

The rollout hot path (encoding, framing, decoding, tool calls) may be
rewritten for speed only if this stays equal. Regenerate after an intended
change of token sequences with
`pytest tests/runtime/test_rollout_pin.py --update-golden` and say so in the commit.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agentspec.compiler.build import import_spec
from agentspec.runtime.commands.run import rollout
from agentspec.runtime.episode.rows import training_rows
from agentspec.runtime.episode.trajectory import Trajectory
from agentspec.runtime.text.byte_tokenizer import ByteTokenizer
from agentspec.runtime.text.tokenizer import BPETokenizer

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted((ROOT / "specs").glob("*.yaml"))
GOLDEN = Path(__file__).parent / "data" / "rollout_pin.json"
EPISODES = 3
"""Oracle episodes per spec and tokenizer (the spec's first samples)."""
TOKENIZER_SAMPLES = 50
"""Samples whose task text trains the BPE tokenizer (deterministic for the same text)."""
TOKENIZERS = ("byte", "bpe", "hf")


def digest(values: Sequence[Any]) -> str:
    """A short hash of a token sequence (or text): equal sequences, equal digests."""
    data = values if isinstance(values, str) else json.dumps(list(values))
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:16]


def ids_record(ids: Sequence[int]) -> str:
    return f"{len(ids)}:{digest(ids)}"


def episode_record(traj: Trajectory) -> dict[str, Any]:
    steps = [
        {
            "prompt": ids_record(s.prompt_ids),
            "response": ids_record(s.response_ids),
            "observation": ids_record(s.observation_ids),
            "action_text": digest(s.action_text),
            "observation_text": None if s.observation is None else digest(s.observation),
            "events": [e.key for e in s.events],
        }
        for s in traj.steps
    ]
    rows = [
        {
            "input_ids": ids_record(r.input_ids),
            "response_mask": digest(r.response_mask),
            "token_steps": digest(r.token_steps),
            "prompt_length": r.prompt_length,
            "step_indices": r.step_indices,
        }
        for r in training_rows(traj)
    ]
    return {
        "termination": traj.termination.value,
        "overflow_tokens": traj.info.get("overflow_tokens"),
        "steps": steps,
        "rows": rows,
    }


def task_tokenizers(module: Any) -> dict[str, Any]:
    from agentspec.runtime.compiled.task_text import task_corpus
    from agentspec.runtime.text.tiny_model import TINY_EOS, TINY_PAD, train_tiny_bpe

    rust = train_tiny_bpe(task_corpus(module, module.load_samples()[:TOKENIZER_SAMPLES]))
    out: dict[str, Any] = {
        "byte": ByteTokenizer(),
        "bpe": BPETokenizer(rust, eos_token=TINY_EOS, pad_token=TINY_PAD),
    }
    import transformers  # the train extra: a missing install fails

    out["hf"] = transformers.PreTrainedTokenizerFast(
        tokenizer_object=rust, eos_token=TINY_EOS, pad_token=TINY_PAD
    )
    return out


def spec_records(spec: Path) -> dict[str, list[dict[str, Any]]]:
    module = import_spec(spec)
    samples = module.load_samples()[:EPISODES]
    records = {}
    for name, tokenizer in task_tokenizers(module).items():
        trajectories = asyncio.run(rollout(module, samples, "oracle", task_tokenizer=tokenizer))
        records[name] = [episode_record(t) for t in trajectories]
    return records


def first_difference(expected: Any, actual: Any, where: str = "") -> str | None:
    """Where two records first differ, e.g. `bpe[1].steps[2].prompt: 40:… != 41:…`."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual)):
            found = first_difference(expected.get(key), actual.get(key), f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        for i, (a, b) in enumerate(zip(expected, actual, strict=True)):
            found = first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if expected == actual else f"{where.lstrip('.')}: {expected!r} != {actual!r}"


def golden_text(golden: dict[str, Any]) -> str:
    """The pins as JSON with one step or row per line (short, readable diffs)."""

    def line(value: Any) -> str:
        return json.dumps(value, separators=(", ", ": "))

    out = ["{"]
    for i, (spec, records) in enumerate(sorted(golden.items())):
        out.append(f" {line(spec)}: {{")
        for j, (tokenizer, episodes) in enumerate(sorted(records.items())):
            out.append(f"  {line(tokenizer)}: [")
            for k, ep in enumerate(episodes):
                head = {key: ep[key] for key in ("termination", "overflow_tokens")}
                out.append(f"   {line(head)[:-1]},")
                for key in ("steps", "rows"):
                    items = [f"     {line(item)}" for item in ep[key]]
                    body = ",\n".join(items)
                    out.append(f'    "{key}": [' + (f"\n{body}\n    ]" if items else "]"))
                    out[-1] += "," if key == "steps" else ""
                out.append("   }" + ("," if k + 1 < len(episodes) else ""))
            out.append("  ]" + ("," if j + 1 < len(records) else ""))
        out.append(" }" + ("," if i + 1 < len(golden) else ""))
    return "\n".join([*out, "}", ""])


def load_golden() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_oracle_rollout_tokens_are_pinned(spec: Path, update_golden: bool) -> None:
    actual = spec_records(spec)
    if update_golden:
        golden = load_golden()
        golden[spec.stem] = actual
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(golden_text(golden))
    expected = load_golden().get(spec.stem)
    assert expected is not None, f"{spec.stem}: no pin yet (run with --update-golden)"
    difference = first_difference(expected, actual)
    assert difference is None, f"{spec.stem}: {difference}"


def test_every_pinned_spec_is_shipped() -> None:
    """A removed or renamed spec must not leave a stale pin behind."""
    assert sorted(load_golden()) == sorted(s.stem for s in SPECS)


def test_pins_cover_every_tokenizer_and_real_turns() -> None:
    """The pin is not vacuous: each spec has its episodes under each tokenizer,
    and under the task tokenizer (the one training uses) they play real turns
    with responses and observations. (With bytes, some first prompts overflow
    the spec's `max_prompt_tokens`: that ending is pinned too.)"""
    for name, records in load_golden().items():
        assert sorted(records) == sorted(TOKENIZERS), name
        for tokenizer, episodes in records.items():
            assert len(episodes) == EPISODES, name
            if tokenizer == "byte":
                continue
            steps = [s for ep in episodes for s in ep["steps"]]
            assert all(ep["steps"] for ep in episodes), (name, tokenizer)
            assert all(not s["response"].startswith("0:") for s in steps), (name, tokenizer)
            assert any(not s["observation"].startswith("0:") for s in steps), (name, tokenizer)
