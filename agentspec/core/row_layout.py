"""Packed or per-step training rows: decided in one place, from the context policy.

Token in, token out (DESIGN.md §4): a training row holds exactly the ids the
policy saw and produced. When every prompt extends the previous one — the
context policy is append-only (:attr:`ContextPolicy.append_only
<agentspec.runtime.episode.context.ContextPolicy.append_only>`) — an episode's steps
share a prefix and can be packed into one row with the observation tokens
masked; otherwise each step is its own row.

:func:`row_layout` is the one decision. The lowering calls it for the generated
module's ``LAYOUT`` (which the local trainer reads) and the verl target calls
it for the agent loop's rows. Each further reason that forces one row per step
is a keyword argument, so every caller passes what it knows and the rule stays
here. The model's chat template is only known at run time:
:func:`layout_for_template` narrows the compiled layout for it. Even a packed layout only joins steps that really chain
(:func:`agentspec.runtime.episode.rows.training_rows` checks every prefix).

Torch-free and cheap to import (the compiler uses it).
"""

from __future__ import annotations

from typing import Any, Literal

from agentspec.core.contexts import CONTEXT_POLICIES

__all__ = ["RowLayout", "layout_for_template", "row_layout"]

RowLayout = Literal["packed", "per_step"]


def row_layout(context_policy: str, *, step_rows: bool = False) -> RowLayout:
    """``packed`` if ``context_policy`` is append-only and nothing needs one row per step.

    Args:
        context_policy: a name in :data:`~agentspec.core.contexts.CONTEXT_POLICIES`
            (an unknown name raises :class:`~agentspec.core.registry.UnknownNameError`).
        step_rows: the backend's loss sees rows, not steps, and the algorithm's
            loss is per step (:attr:`Algorithm.needs_step_rows
            <agentspec.core.presets.Algorithm.needs_step_rows>` on verl).
    """
    append_only = CONTEXT_POLICIES.get(context_policy).append_only
    return "packed" if append_only and not step_rows else "per_step"


def layout_for_template(layout: str, chat: Any) -> RowLayout:
    """``layout`` (from :func:`row_layout`) for the framing a run actually uses.

    A chat template that rewrites earlier turns (not prefix-stable, found by
    :func:`agentspec.runtime.text.template_probe.probe` at start-up) re-renders each
    step's prompt, so its steps never chain: one row per step. agentspec's own
    ChatML has no ``prefix_stable`` attribute and is append-only.
    """
    if layout == "packed" and getattr(chat, "prefix_stable", True):
        return "packed"
    return "per_step"
