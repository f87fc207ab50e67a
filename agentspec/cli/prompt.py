"""`agentspec prompt SPEC --model M`: the first prompt of a spec as a model will see it.

Shows which framing the model gets (its own chat template, or agentspec's
ChatML where it has none), whether that template is prefix-stable (an
append-only context packs an episode into one training row) or rewrites
earlier turns (each step's prompt is re-rendered: per-step rows), where the
tools are described (passed to the template as ``tools=``, or in the system
prompt in agentspec's words), the prompt's length in tokens where the
tokenizer loads without torch, and the rendered prompt itself.

Imports no torch: the template comes from ``tokenizer_config.json``,
``chat_template.jinja`` or a GGUF file's metadata.
"""

from __future__ import annotations

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
    from agentspec.runtime.text.chat_templates import ChatTemplateError

    module, framing, name, row = _spec_and_model(spec, model, sample)
    from agentspec.runtime.spec.env import PromptError

    env = module.ENV_CLASS()
    try:
        messages = env.initial_messages(dict(row))
    except PromptError as exc:
        raise fail(f"the first prompt of sample {sample} does not render: {exc}") from None
    tokenizer = framing.tokenizer
    if tokenizer is None and name.startswith("builtin:"):
        tokenizer = _task_tokenizer(spec, module)
    try:
        text, ids, report = _render(framing.chat, env, messages, tokenizer)
    except ChatTemplateError as exc:
        raise fail(str(exc), code=2) from None
    if raw:
        typer.echo(text, nl=not text.endswith("\n"))
        return
    lines = [
        ("model", name),
        ("chat template", framing.source),
        *report,
        (
            "tokens",
            str(len(ids)) if ids is not None else "not counted (no tokenizer without torch)",
        ),
        ("sample", f"{sample} of {module.SPEC_NAME}"),
    ]
    for key, value in lines:
        typer.echo(f"{key + ':':<15}{value}")
    typer.echo(RULE)
    typer.echo(text, nl=not text.endswith("\n"))
    typer.echo(RULE)


def _spec_and_model(spec: Path, model: str | None, sample: int) -> tuple[Any, Any, str, Any]:
    """The compiled spec, the model's framing, the model's name and the chosen sample."""
    from agentspec.compiler.build import import_spec
    from agentspec.diagnostics import SpecError
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


def _render(
    chat: Any, env: Any, messages: list[dict[str, Any]], tokenizer: Any
) -> tuple[str, list[int] | None, list[tuple[str, str]]]:
    """(prompt text, its ids or None, report lines) for either kind of framing."""
    from agentspec.runtime.text.tokenizer import ChatTemplate, encode_chat

    tools = list(getattr(env, "tools", {}).values())
    if isinstance(chat, ChatTemplate):
        text = chat.render(messages)
        ids = encode_chat(tokenizer, chat, messages) if tokenizer is not None else None
        report = [("prefix-stable", "yes: an append-only context packs an episode into one row")]
        if tools:
            report.append(("tools", "in the system prompt, in agentspec's words"))
        return text, ids, report
    start, schemas = chat.conversation_start(env, messages)
    text = chat.render(start, schemas, True)
    ids = chat.encode_conversation(tokenizer, start, schemas) if tokenizer is not None else None
    if chat.prefix_stable:
        stable = "yes: an append-only context packs an episode into one row"
    else:
        stable = (
            f"no ({chat.stability.reason}): each step's prompt is re-rendered, one row per step"
        )
    report = [("prefix-stable", stable)]
    if chat.merges_system:
        report.append(
            ("system prompt", "opens the first user turn (the template refuses a system turn)")
        )
    if tools:
        fmt = getattr(getattr(env, "format", None), "name", "?")
        where = (
            f"passed to the template as tools= (it writes calls in the spec's {fmt} format)"
            if schemas is not None
            else "in the system prompt, in agentspec's words "
            + (
                f"(the template writes calls in another syntax than {fmt})"
                if chat.takes_tools
                else "(the template takes no tools)"
            )
        )
        report.append(("tools", where))
    return text, ids, report


def _task_tokenizer(spec: Path, module: Any) -> Any:
    """The built-in model's tokenizer (trained on the task's text; cached like `agentspec eval`'s)."""
    from agentspec.runtime.text.task_text import CORPUS_SAMPLES, cached_task_tokenizer

    return cached_task_tokenizer(spec, module, module.load_samples(limit=CORPUS_SAMPLES))[0]
