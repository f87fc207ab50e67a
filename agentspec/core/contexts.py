"""The context policies a spec can name, and what the compiler must know of each.

The runtime's classes (:mod:`agentspec.runtime.episode.context`) build the
prompts. This table declares them by name, low enough in the package for the
spec model (its ``context.policy`` choices), the row layout and the compiler,
none of which may import the runtime. Registering a runtime class checks it
against its declaration here, so the two cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentspec.core.registry import Registry

__all__ = ["CONTEXT_POLICIES", "ContextPolicyKind", "declare_context_policy"]


@dataclass(frozen=True)
class ContextPolicyKind:
    """A context policy as the spec and the compiler see it.

    Attributes:
        name: ``context.policy`` in a spec.
        append_only: whether consecutive prompts extend each other, ``prompt_{t+1} =
            prompt_t + response_t + observation_t``: then an episode's steps can share
            one packed training row (:func:`agentspec.core.row_layout.row_layout`).
        spec_setting: the key of a spec's ``context`` section this policy cannot do
            without, if any (``window`` for ``sliding_window``).
    """

    name: str
    append_only: bool = False
    spec_setting: str | None = None


CONTEXT_POLICIES: Registry[ContextPolicyKind] = Registry("context policy")
"""The context policies by name; an unknown name is an
:class:`~agentspec.core.registry.UnknownNameError` listing the valid ones with a "did you mean"."""


def declare_context_policy(kind: ContextPolicyKind) -> ContextPolicyKind:
    """Declare ``kind``; declaring the same name again must declare the same facts."""
    if kind.name in CONTEXT_POLICIES:
        declared = CONTEXT_POLICIES.get(kind.name)
        if declared != kind:
            raise ValueError(f"context policy {kind.name!r} is declared as {declared}, not {kind}")
        return declared
    return CONTEXT_POLICIES.add(kind.name, kind)


for _kind in (
    ContextPolicyKind("full_history", append_only=True),
    ContextPolicyKind("sliding_window", spec_setting="window"),
    ContextPolicyKind("token_budget"),
    ContextPolicyKind("state_summary", spec_setting="summary"),
    ContextPolicyKind("custom", spec_setting="custom"),
):
    declare_context_policy(_kind)
