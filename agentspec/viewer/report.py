"""Turn a run into one self-contained HTML report.

The page embeds its data as one JSON document (gzipped and base64-encoded;
the browser inflates it with the standard `DecompressionStream`) and draws
everything (curves, filters, the step-by-step trajectory browser) with inline
JavaScript: no server, no network, no external files.

Per step the payload holds what the model saw, split into the part it had
already seen at the previous step (``old``) and the part new since then
(``new``). With a tokenizer both are decoded from the prompt's token ids; a
step whose prompt extends the previous prompt stores only the new part
(``old: null`` means "the previous step's whole prompt"), which keeps a
chained history linear in size. Without a tokenizer the new part is rebuilt
from the previous step's action and observation text and the rest is a token
count. The response is always the trained segment; prompt and observation
tokens are masked.
"""

from __future__ import annotations

import base64
import datetime as _dt
import gzip
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentspec.viewer.load import RunData, TraceFile

__all__ = ["build_payload", "decode_payload", "encode_payload", "render_html"]

TEMPLATE = Path(__file__).with_name("report.html.j2")
MAX_PLOT_BYTES = 4_000_000
_KNOWN_STEP_INFO = {"prompt", "advantage", "token_advantages", "expression_errors"}


class _Decoder:
    """Decodes token ids with ``tokenizers`` (no torch), if a tokenizer was found."""

    def __init__(self, directory: Path | None) -> None:
        self._tok: Any = None
        if directory is not None:
            from tokenizers import Tokenizer

            self._tok = Tokenizer.from_file(str(directory / "tokenizer.json"))

    @property
    def available(self) -> bool:
        return self._tok is not None

    def text(self, ids: Sequence[int]) -> str:
        return str(self._tok.decode(list(ids), skip_special_tokens=False)) if ids else ""

    def pieces(self, ids: Sequence[int]) -> list[str]:
        batch = self._tok.decode_batch([[i] for i in ids], skip_special_tokens=False)
        return [str(piece) for piece in batch]


def _find(haystack: Sequence[int], needle: Sequence[int], start: int = 0) -> int:
    """Index of the first occurrence of `needle` in `haystack` at or after `start`, else -1."""
    n = len(needle)
    if n == 0:
        return -1
    first = needle[0]
    for i in range(start, len(haystack) - n + 1):
        if haystack[i] == first and list(haystack[i : i + n]) == list(needle):
            return i
    return -1


def _split_seen(step: dict[str, Any], prev: dict[str, Any] | None) -> int:
    """Token offset in this step's prompt where the part new since the previous step begins."""
    prompt = step.get("prompt_ids") or []
    if prev is None:
        return 0
    prev_prompt = prev.get("prompt_ids") or []
    if prompt[: len(prev_prompt)] == prev_prompt and len(prev_prompt) > 0:
        return len(prev_prompt)
    # A window or a truncation dropped earlier context: the new part starts where
    # the previous response reappears; failing that, after the common prefix.
    found = _find(prompt, prev.get("response_ids") or [])
    if found >= 0:
        return found
    common = 0
    for a, b in zip(prompt, prev_prompt, strict=False):
        if a != b:
            break
        common += 1
    return common


def _seen(step: dict[str, Any], prev: dict[str, Any] | None, decoder: _Decoder) -> dict[str, Any]:
    prompt = step.get("prompt_ids") or []
    info = step.get("info") or {}
    prompt_text = info.get("prompt") if isinstance(info.get("prompt"), str) else None
    if prompt_text is not None:
        prev_text = (prev or {}).get("info", {}).get("prompt") if prev else None
        if isinstance(prev_text, str) and prompt_text.startswith(prev_text) and prev_text:
            return {"mode": "text", "old": None, "new": prompt_text[len(prev_text) :]}
        return {"mode": "text", "old": "", "new": prompt_text}
    if decoder.available:
        cut = _split_seen(step, prev)
        chained = prev is not None and cut == len(prev.get("prompt_ids") or []) and cut > 0
        return {
            "mode": "decoded",
            "old": None if chained else decoder.text(prompt[:cut]),
            "new": decoder.text(prompt[cut:]),
            "old_n": cut,
            "new_n": len(prompt) - cut,
        }
    if prev is None:
        return {"mode": "ids", "old": None, "new": None, "old_n": 0, "new_n": len(prompt)}
    new = (prev.get("action_text") or "") + "\n" + (prev.get("observation") or "")
    carried = len(prev.get("response_ids") or []) + len(prev.get("observation_ids") or [])
    return {
        "mode": "rebuilt",
        "old": None,
        "new": new,
        "old_n": max(len(prompt) - carried, 0),
        "new_n": min(carried, len(prompt)),
    }


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _clean(value: Any) -> Any:
    """A JSON value with non-finite floats replaced by null (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def _step(step: dict[str, Any], prev: dict[str, Any] | None, decoder: _Decoder) -> dict[str, Any]:
    info = step.get("info") or {}
    response = step.get("response_ids") or []
    out: dict[str, Any] = {
        "i": step.get("index", 0),
        "seen": _seen(step, prev, decoder),
        "act": step.get("action_text", ""),
        "act_n": len(response),
        "fin": step.get("finish_reason", "stop"),
        "calls": [
            {"name": c.get("name"), "arguments": c.get("arguments")}
            for c in step.get("tool_calls") or []
        ],
        "obs": step.get("observation"),
        "obs_n": len(step.get("observation_ids") or []),
        "r": {k: v for k, v in (step.get("rewards") or {}).items() if _number(v) is not None},
        "ev": [
            {k: e.get(k) for k in ("kind", "tool", "code", "message") if e.get(k)}
            for e in step.get("events") or []
        ],
        "done": bool(step.get("done", False)),
        "ctx_trunc": bool(step.get("context_truncated", False)),
    }
    if step.get("anchor") is not None:
        out["anchor"] = step["anchor"]
    advantage = _number(info.get("advantage"))
    if advantage is not None:
        out["adv"] = advantage
    token_adv = info.get("token_advantages")
    # Step-level estimators give every token of a step the same advantage:
    # then the step's `adv` says it all and the per-token list is left out.
    values = [_number(a) for a in token_adv] if isinstance(token_adv, list) else []
    if values and len(values) == len(response):
        finite = [v for v in values if v is not None]
        varies = not finite or max(finite) - min(finite) > 1e-6
        if advantage is None or varies:
            out["tadv"] = [None if v is None else round(v, 3) for v in values]
    if decoder.available and response:
        out["toks"] = decoder.pieces(response)
    _fold_reasoning(out)
    if info.get("expression_errors"):
        out["expr_err"] = _clean(info["expression_errors"])
    extra = {k: v for k, v in info.items() if k not in _KNOWN_STEP_INFO}
    if extra:
        out["info"] = _clean(extra)
    return out


_REASONING = re.compile(r"\s*<think>.*?</think>\s*", re.DOTALL)


def _fold_reasoning(out: dict[str, Any]) -> None:
    """Mark a response's leading ``<think>…</think>`` block, which the page folds:
    ``think_len`` characters of ``act`` and, with tokens, the first ``think_toks`` of them."""
    match = _REASONING.match(out["act"] or "")
    if match is None:
        return
    out["think_len"] = match.end()
    if "toks" in out:
        seen, count = "", 0
        # the block ends where the tokens' text covers it (special tokens may be skipped in act)
        toks = out["toks"]
        while count < len(toks) and _REASONING.match(seen) is None:
            seen += toks[count]
            count += 1
        while count < len(toks) and not toks[count].strip():  # the whitespace after it
            count += 1
        out["think_toks"] = count


def _trajectory(record: dict[str, Any], trace: TraceFile, decoder: _Decoder) -> dict[str, Any]:
    steps = record.get("steps") or []
    rendered = [_step(s, steps[i - 1] if i else None, decoder) for i, s in enumerate(steps)]
    components: dict[str, float] = {}
    for step in rendered:
        for name, value in step["r"].items():
            components[name] = components.get(name, 0.0) + float(value)
    out: dict[str, Any] = {
        "id": record.get("trajectory_id", ""),
        "sid": record.get("sample_id", ""),
        "gid": record.get("group_id", ""),
        "term": record.get("termination", ""),
        "ok": record.get("success"),
        "R": round(sum(components.values()), 6),
        "rc": components,
        "steps": rendered,
        "file": trace.path.name,
        "set": trace.split,
    }
    if trace.iteration is not None:
        out["it"] = trace.iteration
    if record.get("info"):
        out["info"] = _clean(record["info"])
    return out


def _select(data: RunData, limit: int) -> list[tuple[TraceFile, dict[str, Any]]]:
    """All trajectories, or at most `limit` spread evenly over the trace files."""
    total = sum(len(t.trajectories) for t in data.traces)
    if total <= limit:
        return [(t, r) for t in data.traces for r in t.trajectories]
    per_file = max(limit // max(len(data.traces), 1), 1)
    chosen = [(t, r) for t in data.traces for r in t.trajectories[:per_file]][:limit]
    data.notes.append(
        f"showing {len(chosen)} of {total} trajectories (the first {per_file} of each "
        "traces file; raise --max-trajectories to see more)"
    )
    return chosen


def build_payload(data: RunData, max_trajectories: int = 5000) -> dict[str, Any]:
    """The JSON document the page is drawn from."""
    decoder = _Decoder(data.tokenizer_dir)
    selected = _select(data, max_trajectories)
    trajectories = [_trajectory(r, t, decoder) for t, r in selected]
    plots = []
    budget = MAX_PLOT_BYTES
    for path in data.plots:
        raw = path.read_bytes()
        if len(raw) > budget:
            data.notes.append(f"plot {path.name} left out (the report's plot budget is spent)")
            continue
        budget -= len(raw)
        plots.append({"name": path.stem, "png": base64.b64encode(raw).decode("ascii")})
    return {
        "meta": {
            "title": data.source.name or str(data.source),
            "source": str(data.source),
            "kind": data.kind,
            "generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "tokenizer": str(data.tokenizer_dir) if data.tokenizer_dir else None,
            "trace_files": [t.path.name for t in data.traces],
            "n_total": sum(len(t.trajectories) for t in data.traces),
            "notes": list(data.notes),
        },
        "config": data.config_text,
        "metrics": data.metrics,
        "plots": plots,
        "trajs": trajectories,
    }


def encode_payload(payload: dict[str, Any]) -> str:
    """The payload as base64 of gzipped JSON: long-horizon runs compress 5-10x, and
    base64 cannot close the `<script>` element it sits in, whatever the model wrote."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    packed = gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)
    return base64.b64encode(packed).decode("ascii")


def decode_payload(encoded: str) -> dict[str, Any]:
    """The inverse of :func:`encode_payload` (for tests and tools)."""
    data: dict[str, Any] = json.loads(gzip.decompress(base64.b64decode(encoded)))
    return data


def render_html(payload: dict[str, Any]) -> str:
    """The report page: the template with the payload inlined."""
    import html

    head, tail = TEMPLATE.read_text(encoding="utf-8").split("{{ payload }}")
    title = html.escape(payload["meta"]["title"])
    return head.replace("{{ title }}", title) + encode_payload(payload) + tail
