"""An exploration's findings as diagnostics (text, JSON, GitHub annotations), each
with its witness written out as a ready `tests:` entry of the spec."""

from __future__ import annotations

import json
from typing import Any

import yaml

from agentspec.core.diagnostics import Diagnostic, render_github, render_text, to_json
from agentspec.core.source import Span
from agentspec.runtime.commands.explore.driver import Episode
from agentspec.runtime.commands.explore.explorer import Report
from agentspec.runtime.commands.explore.findings import Finding

__all__ = ["diagnostic", "gate_failures", "render", "witness_entry", "witness_yaml"]


def diagnostic(report: Report, finding: Finding) -> Diagnostic:
    where = report.source_map
    span = None
    if where is not None:
        span = where.key_span(finding.path) if finding.key else where.value_span(finding.path)
    return Diagnostic(finding.code, finding.message, span, finding.hint)


def witness_entry(finding: Finding) -> dict[str, Any] | None:
    """The witness as an entry of `tests.episodes`: its sample, turns and outcome."""
    episode = finding.witness
    if episode is None:
        return None
    entry: dict[str, Any] = {
        "name": f"explore {finding.code}: {_title(finding)}",
        "sample_index": episode.sample_index,
        "turns": list(episode.turns),
    }
    if episode.max_steps is not None:
        entry["max_steps"] = episode.max_steps
    entry["expect"] = _expect(episode)
    return entry


def _title(finding: Finding) -> str:
    from agentspec.runtime.commands.explore.findings import CODES

    return CODES.get(finding.code, finding.code)


def _expect(episode: Episode) -> dict[str, Any]:
    expect: dict[str, Any] = {
        "rewards": {k: round(v, 6) for k, v in sorted(episode.components().items())},
        "reward": round(episode.total, 6),
    }
    if episode.success is not None:
        expect["success"] = episode.success
    expect["ending"] = episode.ending
    expect["steps"] = episode.steps
    return expect


def witness_yaml(finding: Finding) -> str:
    """The entry as YAML, indented to paste under `tests: episodes:`."""
    entry = witness_entry(finding)
    if entry is None:
        return ""
    text = yaml.safe_dump([entry], sort_keys=False, allow_unicode=True, width=100)
    return "\n".join("    " + line for line in text.splitlines())


def gate_failures(report: Report, strict: bool) -> list[tuple[str, Span | None]]:
    """What `agentspec test` reports of an exploration: each loophole (and, when
    `strict`, each warning) with its span and its witness's size."""
    out = []
    for finding in report.findings:
        if finding.code.startswith("W") and not strict:
            continue
        witness = finding.witness
        size = (
            f" (witness: sample {witness.sample_index}, {witness.steps} steps)" if witness else ""
        )
        out.append((f"{finding.code}: {finding.message}{size}", diagnostic(report, finding).span))
    return out


def render(report: Report, output: str) -> str:
    """The report in `text`, `json` or `github` form."""
    if output == "json":
        return json.dumps(_json(report), indent=2, ensure_ascii=False)
    if output == "github":
        lines = [render_github(diagnostic(report, f)) for f in report.findings]
        return "\n".join([*lines, _summary(report)])
    return _text(report)


def _text(report: Report) -> str:
    parts: list[str] = []
    for finding in report.findings:
        parts.append(render_text(diagnostic(report, finding), report.sources))
        if finding.witness is not None:
            parts.append(f"  witness ({finding.witness.origin}), as a `tests:` entry:")
            parts.append(witness_yaml(finding))
        parts.append("")
    notes = _coverage(report)
    if notes:
        parts.append("coverage (what the search could not decide, so did not report):")
        parts += [f"  {where}: {text}" for where, text in notes]
        parts.append("")
    parts.append(_ranges(report))
    parts.append(_summary(report))
    return "\n".join(parts)


def _coverage(report: Report) -> list[tuple[str, str]]:
    """Each coverage note with its `file:line`."""
    out = []
    for path, text in report.coverage:
        line = ""
        if report.source_map is not None:
            span = report.source_map.value_span(path)
            line = f"{report.spec}:{span.line}"
        out.append((line or ".".join(map(str, path)), text))
    return out


def _ranges(report: Report) -> str:
    if not report.ranges:
        return ""
    rows = ["reward component   reached (per episode)   oracle"]
    for name, (low, high) in report.ranges.items():
        oracle = report.oracle_ranges.get(name)
        shown = f"{oracle[0]:.3f} .. {oracle[1]:.3f}" if oracle else "-"
        rows.append(f"{name:<18} {low:>8.3f} .. {high:<8.3f}      {shown}")
    return "\n".join(rows) + "\n"


def _summary(report: Report) -> str:
    errors = sum(1 for f in report.findings if not f.code.startswith("W"))
    warnings = len(report.findings) - errors
    rates = []
    if report.oracle_success is not None:
        rates.append(f"oracle success {report.oracle_success:.3f}")
    if report.random_success is not None:
        rates.append(f"random actions {report.random_success:.3f}")
    stop = " (stopped by the time budget)" if report.stopped_by_time else ""
    return (
        f"{report.spec}: {errors} loophole(s), {warnings} warning(s) in {report.episodes} "
        f"episodes, {report.seconds:.1f}s{stop}" + (f"; {', '.join(rates)}" if rates else "")
    )


def _json(report: Report) -> dict[str, Any]:
    findings = []
    for finding in report.findings:
        record = to_json(diagnostic(report, finding))
        record["evidence"] = finding.evidence
        record["witness"] = witness_entry(finding)
        findings.append(record)
    return {
        "spec": str(report.spec),
        "findings": findings,
        "episodes": report.episodes,
        "seconds": round(report.seconds, 3),
        "stopped_by_time": report.stopped_by_time,
        "reward_ranges": {k: list(v) for k, v in report.ranges.items()},
        "oracle_reward_ranges": {k: list(v) for k, v in report.oracle_ranges.items()},
        "oracle_success": report.oracle_success,
        "random_success": report.random_success,
        "coverage": [{"where": w, "note": t} for w, t in _coverage(report)],
    }
