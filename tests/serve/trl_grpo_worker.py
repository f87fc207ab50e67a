"""One real `GRPOTrainer` step through a generated TRL environment (run in TRL's venv).

    python trl_grpo_worker.py DIR NAME   (DIR: `agentspec compile --target trl` output)

A tiny Qwen2 model is built here, with Qwen2.5's chat template (TRL's own copy,
which renders tools and which TRL knows how to parse tool calls from). Prints a
JSON report: TRL's logged metrics, what the environments saw.
"""

from __future__ import annotations

import importlib
import json
import sys
import warnings
from pathlib import Path


def main(directory: Path, name: str) -> None:
    import torch
    import trl
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    sys.path.insert(0, str(directory))
    module = importlib.import_module(f"{name}_trl")
    env_class = next(
        v for k, v in vars(module).items() if k.endswith("Env") and k != "AgentspecTRLEnv"
    )
    rows = module.dataset(limit=4)
    # docs/trl.md's offline recipe, run as the page writes it
    page = (Path(__file__).resolve().parents[2] / "docs" / "trl.md").read_text(encoding="utf-8")
    recipe = page.split("## Offline, on a CPU", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    made: dict = {"rows": rows}
    exec(compile(recipe, "docs/trl.md", "exec"), made)
    tokenizer, model = made["tokenizer"], made["model"].train()

    seen: list[dict] = []

    class Recorded(env_class):  # type: ignore[misc, valid-type]
        def _finish(self, answer: str):  # type: ignore[no-untyped-def]
            first = self.end is None  # each reward function asks; the episode ends once
            end = super()._finish(answer)
            if first:
                seen.append({"sample": end.sample_id, "termination": end.termination})
            return end

    Recorded.__name__ = env_class.__name__
    args = GRPOConfig(
        output_dir=str(directory / "grpo"),
        use_cpu=True,
        bf16=False,
        report_to=[],
        max_steps=1,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=12,
        max_tool_calling_iterations=2,
        beta=0.0,
        learning_rate=1e-4,
        logging_steps=1,
        save_strategy="no",
        disable_tqdm=True,
        dataloader_num_workers=0,
        seed=0,
        reward_weights=module.REWARD_WEIGHTS,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=module.REWARD_FUNCS,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        environment_factory=Recorded,
    )
    tool_names = [tool.__name__ for tool in trainer.tools]
    result = trainer.train()
    print(
        json.dumps(
            {
                "trl": trl.__version__,
                "global_step": result.global_step,
                "log": trainer.state.log_history,
                "tools": tool_names,
                "episodes": seen,
            },
            default=str,
        )
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
