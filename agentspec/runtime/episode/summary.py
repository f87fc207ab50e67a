"""What a batch of episodes did: the table `agentspec run` and `agentspec eval` print."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from agentspec.runtime.episode.trajectory import EventKind, Trajectory

FAILURE_ENDINGS = ("policy_error", "env_error")
"""Endings no policy earned: its server or model failed, or the environment did."""


@dataclass
class RolloutSummary:
    episodes: int
    success_rate: float
    mean_reward: float
    reward_components: dict[str, float]
    mean_steps: float
    terminations: dict[str, int]
    parse_error_rate: float  # share of steps with a parse error
    tool_error_rate: float  # share of steps with a tool error
    expression_errors: int = 0
    extra: dict[str, float] = field(default_factory=dict)
    # Episodes ended because their policy or environment failed, and the first one's
    # error: the table alone reads as a low success rate.
    failed: int = 0
    first_failure: str = ""

    def rows(self) -> list[tuple[str, str]]:
        rows = [
            ("episodes", str(self.episodes)),
            ("success rate", f"{self.success_rate:.3f}"),
            ("mean reward", f"{self.mean_reward:.3f}"),
        ]
        rows += [
            (f"reward/{name}", f"{value:.3f}") for name, value in self.reward_components.items()
        ]
        rows += [
            ("mean steps", f"{self.mean_steps:.2f}"),
            ("parse error rate", f"{self.parse_error_rate:.3f}"),
            ("tool error rate", f"{self.tool_error_rate:.3f}"),
        ]
        rows += [
            (f"ended: {reason}", str(count)) for reason, count in sorted(self.terminations.items())
        ]
        if self.expression_errors:
            rows.append(("expression errors", str(self.expression_errors)))
        return rows


def summarize(
    trajectories: Sequence[Trajectory], component_names: Sequence[str] = ()
) -> RolloutSummary:
    """Success rate, per-component mean episode reward, lengths, endings, error rates."""
    n = max(len(trajectories), 1)
    components = {name: 0.0 for name in component_names}
    for traj in trajectories:
        for name, value in traj.reward_components().items():
            components[name] = components.get(name, 0.0) + value
    steps = [s for t in trajectories for s in t.steps]
    n_steps = max(len(steps), 1)
    failed = [t for t in trajectories if t.termination.value in FAILURE_ENDINGS]
    return RolloutSummary(
        episodes=len(trajectories),
        success_rate=sum(bool(t.success) for t in trajectories) / n,
        mean_reward=sum(t.total_reward for t in trajectories) / n,
        reward_components={k: v / n for k, v in components.items()},
        mean_steps=len(steps) / n,
        terminations=dict(Counter(t.termination.value for t in trajectories if t.termination)),
        parse_error_rate=sum(s.has_event(EventKind.PARSE_ERROR) for s in steps) / n_steps,
        tool_error_rate=sum(s.has_event(EventKind.TOOL_ERROR) for s in steps) / n_steps,
        expression_errors=sum(len(s.info.get("expression_errors", [])) for s in steps),
        failed=len(failed),
        first_failure=(failed[0].failure or "") if failed else "",
    )
