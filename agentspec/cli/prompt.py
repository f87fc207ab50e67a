"""`agentspec prompt SPEC --model M`: the first prompt of a spec as a model will see it.

The prompt is the one an episode starts with: the spec's flow resets its
environment on the sample and the spec's context policy builds the prompt
(the first messages, a ``state_summary``'s summary, a ``custom`` context's
own), in the model's framing, by the runtime's code (:func:`_first_prompt`).

Shows which framing the model gets (its own chat template, or agentspec's
ChatML where it has none), whether an episode packs into one training row
(``prefix-stable``: the layout the compiler chose for the context policy,
narrowed for a template that rewrites earlier turns, as training decides it),
where the tools are described (passed to the template as ``tools=``, or in the
system prompt in agentspec's words), the prompt's length in tokens where the
tokenizer loads without torch (and whether it exceeds ``max_prompt_tokens``),
and the rendered prompt itself.

Imports no torch: the template comes from ``tokenizer_config.json``,
``chat_template.jinja`` or a GGUF file's metadata.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from agentspec.cli.app import app, fail, report_spec_error

__all__ = ["prompt"]

RULE = "─" * 72


@app.command(name="prompt")
def prompt(
    spec: Annotated[Path, typer.Argument(help="The spec.", exists=True, dir_okay=False)],
    model: Annotated[
        str | None,
        typer.Option(
            help="A checkpoint, run or tokenizer directory, a .gguf file, smollm2, or "
            "builtin:NAME (default: the spec's training.model)."
        ),
    ] = None,
    sample: Annotated[int, typer.Option(min=0, help="Which sample of the data (0-based).")] = 0,
    raw: Annotated[bool, typer.Option(help="Print only the rendered prompt.")] = False,
) -> None:
    """Print the rendered first prompt of a spec for a model, and how the model's chat template frames it."""
    import asyncio  # here: every command's start-up would pay for it

    from agentspec.runtime.text.chat_templates import ChatTemplateError

    module, framing, name, row = _spec_and_model(spec, model, sample)
    tokenizer = framing.tokenizer
    if tokenizer is None and name.startswith("builtin:"):
        tokenizer = _task_tokenizer(spec, module)
    try:
        chat = _spec_framing(module, framing, tokenizer)
        first = asyncio.run(_first_prompt(module, chat, row, tokenizer))
    except ChatTemplateError as exc:
        raise fail(str(exc), code=2) from None
    except _NotRendered as exc:
        raise fail(f"the first prompt of sample {sample} does not render: {exc}") from None
    if raw:
        typer.echo(first.text, nl=not first.text.endswith("\n"))
        return
    tokens = (
        str(len(first.ids)) if first.ids is not None else "not counted (no tokenizer without torch)"
    )
    lines = [
        ("model", name),
        ("chat template", framing.source),
        *_report(module, first, chat),
        ("tokens", tokens),
        *([("overflow", first.overflow)] if first.overflow else []),
        ("sample", f"{sample} of {module.SPEC_NAME}"),
    ]
    for key, value in lines:
        typer.echo(f"{key + ':':<15}{value}")
    typer.echo(RULE)
    typer.echo(first.text, nl=not first.text.endswith("\n"))
    typer.echo(RULE)


class _NotRendered(Exception):
    """The first prompt fails for this sample (the episode would end with `env_error`)."""


@dataclass
class _FirstPrompt:
    """The first prompt as the episode loop builds it.

    Attributes:
        text: the prompt's text (its ids under a byte tokenizer, read back: exact).
        ids: its ids under the model's tokenizer, or None where none loads without torch.
        overflow: why the runtime would not show it (over `max_prompt_tokens`), or "".
        env: the episode's environment, after its reset.
        context: the flow's context policy.
    """

    text: str
    ids: list[int] | None
    overflow: str
    env: Any
    context: Any


async def _first_prompt(module: Any, chat: Any, sample: Any, tokenizer: Any) -> _FirstPrompt:
    """The first prompt of an episode of ``module`` on ``sample``, built by the runtime.

    As :meth:`AgentEnvLoop.start_episode
    <agentspec.runtime.episode.loop.AgentEnvLoop.start_episode>` builds it: the
    spec's flow resets a fresh environment on the sample and its context policy
    (any of them: the first messages for ``full_history`` and the step windows, the
    summary for ``state_summary``, the user's function for ``custom``) builds the
    prompt's ids in the framing ``chat``. Built once with a byte tokenizer, whose ids
    read back to the exact text, and once with ``tokenizer`` (if any) for the count
    and the ``max_prompt_tokens`` check. At the first step no context is dropped, so
    the text is the same under either tokenizer.
    """
    from agentspec.formats.caps import cap_error
    from agentspec.runtime.compiled.env import PromptError
    from agentspec.runtime.episode.context import ContextView
    from agentspec.runtime.text.byte_tokenizer import ByteTokenizer
    from agentspec.runtime.text.chat_templates import ChatTemplateError

    text_tokenizer = ByteTokenizer()
    flow = module.FLOW_CLASS(None, text_tokenizer, chat=chat)
    env = flow.env_factory()
    env.tool_semaphore = flow.tool_semaphore
    try:
        try:
            first = await env.reset(sample)

            def first_view(tokenizer: Any) -> ContextView:
                return ContextView(
                    tokenizer=tokenizer,
                    chat=flow.chat,
                    initial_messages=first.as_messages(),
                    env=env,
                    sample=sample,
                )

            built_text = flow.context.build(first_view(text_tokenizer))
            text = text_tokenizer.decode(built_text, skip_special_tokens=False)
            ids, overflow = None, ""
            if tokenizer is not None:
                ids, overflow = _counted(flow.context, first_view(tokenizer))
        except (ChatTemplateError, _NotRendered):
            raise
        except PromptError as exc:
            raise _NotRendered(str(exc)) from None
        except Exception as exc:  # a summary or a custom context failing on this sample
            raise _NotRendered(cap_error(f"{type(exc).__name__}: {exc}")) from None
    finally:
        await env.close()
    return _FirstPrompt(text, ids, overflow, env, flow.context)


def _counted(context: Any, view: Any) -> tuple[list[int], str]:
    """The first prompt's ids under the model's tokenizer, and what happens to an
    episode whose prompt is over `max_prompt_tokens` ("" when it fits)."""
    from agentspec.runtime.episode.context import ContextOverflowError

    try:
        built = context.prompt(view)
    except ContextOverflowError as exc:
        return (
            context.build(view),
            f"{exc}: the episode ends as env_error here (overflow: error)",
        )
    overflow = ""
    if built.overflow:
        overflow = (
            f"{len(built.ids)} tokens exceed max_prompt_tokens="
            f"{context.max_prompt_tokens}: the episode ends before its "
            "first step (context_overflow)"
        )
    return built.ids, overflow


def _spec_framing(module: Any, framing: Any, tokenizer: Any) -> Any:
    """The framing the spec's episodes use with this model: the model's template with
    the spec's `episode.reasoning.keep_in_history` applied, as
    :func:`~agentspec.runtime.text.chat_templates.chat_for_spec` applies it at run time."""
    from agentspec.runtime.text.chat_templates import ModelTemplate, chat_for
    from agentspec.runtime.text.tokenizer import ChatTemplate

    keep = getattr(module.ENV_CLASS, "keep_reasoning", None)
    chat = framing.chat
    if keep is None:
        return chat
    if isinstance(chat, ChatTemplate):
        return chat_for(tokenizer, source=chat.jinja(), keep_reasoning=keep)
    return ModelTemplate(
        chat.source,
        bos_token=chat.bos_token,
        eos_token=chat.eos_token,
        tokenizer=framing.tokenizer,
        name=chat.name,
        keep_reasoning=keep,
    )


def _spec_and_model(spec: Path, model: str | None, sample: int) -> tuple[Any, Any, str, Any]:
    """The compiled spec, the model's framing, the model's name and the chosen sample."""
    from agentspec.compiler.build import import_spec
    from agentspec.core.diagnostics import SpecError
    from agentspec.runtime.text.model_framing import FramingError, load_framing

    try:
        module = import_spec(spec)
    except SpecError as exc:
        raise report_spec_error(exc) from None
    name = model or str(module.TRAINING.get("model") or "builtin:tiny")
    try:
        framing = load_framing(name)
    except FramingError as exc:
        raise fail(_located(spec, model, exc), code=2) from None
    try:
        samples = module.load_samples(limit=sample + 1)
    except (ValueError, OSError) as exc:
        raise fail(str(exc), code=2) from None
    if sample >= len(samples):
        raise fail(f"the spec has {len(samples)} samples; --sample {sample} is past them", code=2)
    return module, framing, name, samples[sample]


def _located(spec: Path, model: str | None, exc: Exception) -> str:
    """The error, at the spec's `training.model` line when the name came from there."""
    if model is not None:
        return str(exc)
    from agentspec.runtime.backends.local.model_defaults import setting_origins

    where = setting_origins(spec, {}).get("model")
    return f"{where}: training.model: {exc}" if where else str(exc)


def _report(module: Any, first: _FirstPrompt, chat: Any) -> list[tuple[str, str]]:
    """The report's lines on the rows, the system prompt and the tools."""
    from agentspec.runtime.text.tokenizer import ChatTemplate

    report = [("prefix-stable", _layout(module, first.context, chat))]
    env = first.env
    tools = list(getattr(env, "tools", {}).values())
    if isinstance(chat, ChatTemplate):
        if tools:
            report.append(("tools", "in the system prompt, in agentspec's words"))
        return report
    if chat.merges_system:
        report.append(
            ("system prompt", "opens the first user turn (the template refuses a system turn)")
        )
    if tools:
        fmt = getattr(getattr(env, "format", None), "name", "?")
        where = (
            f"passed to the template as tools= (it writes calls in the spec's {fmt} format)"
            if chat.tools_for(env) is not None
            else "in the system prompt, in agentspec's words "
            + (
                f"(the template writes calls in another syntax than {fmt})"
                if chat.takes_tools
                else "(the template takes no tools)"
            )
        )
        report.append(("tools", where))
    return report


def _layout(module: Any, context: Any, chat: Any) -> str:
    """Whether an episode packs into one training row: the layout the compiler chose
    for the spec's context policy (``LAYOUT``, from :func:`agentspec.core.row_layout.row_layout`),
    narrowed for the model's template as training narrows it."""
    from agentspec.core.row_layout import layout_for_template

    if layout_for_template(module.LAYOUT, chat) == "packed":
        return "yes: an append-only context packs an episode into one row"
    reasons = []
    if module.LAYOUT != "packed":
        reasons.append(f"the {context.name or 'custom'} context is not append-only")
    if not getattr(chat, "prefix_stable", True):
        reasons.append(chat.stability.reason)
    return f"no ({'; '.join(reasons)}): each step's prompt is built anew, one row per step"


def _task_tokenizer(spec: Path, module: Any) -> Any:
    """The built-in model's tokenizer (trained on the task's text; cached like `agentspec eval`'s)."""
    from agentspec.runtime.compiled.task_text import CORPUS_SAMPLES, cached_task_tokenizer

    return cached_task_tokenizer(spec, module, module.load_samples(limit=CORPUS_SAMPLES))[0]
