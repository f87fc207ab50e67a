"""Training rows: the token sequences a trainer consumes, built from a trajectory.

Token layout (token in, token out). With an append-only context such as
``full_history`` consecutive steps chain::

    steps[t + 1].prompt_ids == steps[t].prompt_ids + steps[t].response_ids
                               + steps[t].observation_ids

so :func:`training_rows` packs the chained steps into one row::

    input_ids     = prompt_0 | response_0 | obs_0 | response_1 | obs_1 | ... | response_T
    response_mask =    0...0 |     1...1  | 0..0  |     1...1  | 0..0  | ... |     1...1
    token_steps   =   -1..-1 |     0...0  |-1..-1 |     1...1  |-1..-1 | ... |     T...T

Any other context policy (or a step whose context was truncated) breaks the
chain; those steps become one row each (``prompt_t | response_t``, mask 1 on the
response only). Response ids are never decoded and re-encoded into a row.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentspec.runtime.episode.trajectory import Step, Trajectory

__all__ = ["TrainingRow", "training_rows"]


@dataclass
class TrainingRow:
    """One training sequence built from one or more chained steps (see the module docstring).

    All lists have the length of ``input_ids``. ``logprobs`` holds the sampler's
    log-probs on response tokens and 0.0 elsewhere; ``token_steps`` holds the
    step index of each response token and -1 elsewhere.
    """

    input_ids: list[int]
    response_mask: list[int]
    logprobs: list[float]
    token_steps: list[int]
    step_indices: list[int]
    step_rewards: list[float]
    """Each step's summed reward components, aligned with ``step_indices``."""
    prompt_length: int
    """Tokens before the first response token."""
    trajectory_id: str = ""
    sample_id: str = ""
    group_id: str = ""


def _chains(prev: Step, nxt: Step) -> bool:
    if nxt.context_truncated:
        return False
    head = [*prev.prompt_ids, *prev.response_ids, *prev.observation_ids]
    return len(nxt.prompt_ids) == len(head) and list(nxt.prompt_ids) == head


def training_rows(traj: Trajectory, pack: bool = True) -> list[TrainingRow]:
    """Turn a trajectory into training rows.

    With ``pack=True`` maximal runs of chained steps (``steps[t+1].prompt_ids``
    extends ``steps[t]``'s prompt + response + observation) share one row;
    otherwise, and where the chain breaks, each step is its own row.
    """
    runs: list[list[Step]] = []
    for step in traj.steps:
        if pack and runs and _chains(runs[-1][-1], step):
            runs[-1].append(step)
        else:
            runs.append([step])
    rows: list[TrainingRow] = []
    for run in runs:
        first = run[0]
        ids = list(first.prompt_ids)
        mask = [0] * len(ids)
        logprobs = [0.0] * len(ids)
        token_steps = [-1] * len(ids)
        for i, step in enumerate(run):
            if len(step.response_logprobs) != len(step.response_ids):
                raise ValueError(
                    f"step {step.index}: {len(step.response_ids)} response ids but "
                    f"{len(step.response_logprobs)} log-probs"
                )
            ids += step.response_ids
            mask += [1] * len(step.response_ids)
            logprobs += list(step.response_logprobs)
            token_steps += [step.index] * len(step.response_ids)
            if i + 1 < len(run):
                ids += step.observation_ids
                mask += [0] * len(step.observation_ids)
                logprobs += [0.0] * len(step.observation_ids)
                token_steps += [-1] * len(step.observation_ids)
        rows.append(
            TrainingRow(
                input_ids=ids,
                response_mask=mask,
                logprobs=logprobs,
                token_steps=token_steps,
                step_indices=[s.index for s in run],
                step_rewards=[s.reward for s in run],
                prompt_length=len(first.prompt_ids),
                trajectory_id=traj.trajectory_id,
                sample_id=traj.sample_id,
                group_id=traj.group_id,
            )
        )
    return rows
