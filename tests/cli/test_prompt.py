"""`agentspec prompt`: the first prompt of a spec in a model's own chat template."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from agentspec.cli import app

ROOT = Path(__file__).resolve().parents[2]
CALCULATOR = ROOT / "specs" / "calculator.yaml"
TEMPLATES = ROOT / "tests" / "runtime" / "data" / "chat_templates"
runner = CliRunner()


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["prompt", *args])
    return result.exit_code, result.stdout, result.stderr


def test_smollm2_uses_its_gguf_chat_template() -> None:
    code, out, _ = invoke(str(CALCULATOR), "--model", "smollm2")
    assert code == 0, out
    assert (
        "chat template: the model's own (SmolLM2-135M-Instruct.Q4_1.gguf: tokenizer.chat_template)"
        in out
    )
    assert "prefix-stable: yes" in out
    assert "(the template takes no tools)" in out
    assert out.split("─" * 72)[1].strip().endswith("<|im_start|>assistant")


def test_the_gguf_template_is_what_the_file_says() -> None:
    import gguf

    from agentspec.runtime.text.gguf_metadata import read_chat_template
    from agentspec.runtime.text.model_names import smollm2_gguf

    path = smollm2_gguf()
    field = gguf.GGUFReader(path).fields["tokenizer.chat_template"]
    assert read_chat_template(path) == field.contents()


def test_a_checkpoint_directory_with_a_tool_template(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    rust = Tokenizer(models.BPE())
    rust.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    rust.train_from_iterator(["How much is 30 * 14? Use the calculator tool."], trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=rust, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tokenizer.chat_template = (TEMPLATES / "qwen25_tools.jinja").read_text(encoding="utf-8")
    tokenizer.save_pretrained(tmp_path)

    code, out, _ = invoke(str(CALCULATOR), "--model", str(tmp_path))
    assert code == 0, out
    assert "passed to the template as tools= (it writes calls in the spec's hermes format)" in out
    tokens = int(out.split("tokens:")[1].split()[0])

    code, raw, _ = invoke(str(CALCULATOR), "--model", f"hf:{tmp_path}", "--raw")
    assert code == 0
    assert "# Tools" in raw and "Call a tool as" not in raw  # agentspec's own paragraph is cut
    assert tokens == len(tokenizer.encode(raw, add_special_tokens=False))
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert "chat_template" in config or (tmp_path / "chat_template.jinja").is_file()


def test_a_template_that_drops_reasoning_is_reported(tmp_path: Path) -> None:
    (tmp_path / "chat_template.jinja").write_text(
        (TEMPLATES / "qwen3_thinking.jinja").read_text(encoding="utf-8")
    )
    code, out, _ = invoke(str(CALCULATOR), "--model", str(tmp_path), "--sample", "2")
    assert code == 0, out
    assert "prefix-stable: no (adding a user turn rewrites an earlier turn)" in out
    assert "sample:        2 of calculator" in out


def test_bad_model_and_sample_are_clear_errors(tmp_path: Path) -> None:
    code, _, err = invoke(str(CALCULATOR), "--model", str(tmp_path / "nowhere"))
    assert code == 2 and "no such directory (a model is builtin:tiny" in err
    (tmp_path / "chat_template.jinja").write_text("{% for m in messages %}")
    code, _, err = invoke(str(CALCULATOR), "--model", str(tmp_path))
    assert code == 2 and "does not compile" in err
    (tmp_path / "chat_template.jinja").write_text("{{ raise_exception('no system role') }}")
    code, _, err = invoke(str(CALCULATOR), "--model", str(tmp_path))
    assert code == 2 and "refused the conversation: no system role" in err
    code, _, err = invoke(str(CALCULATOR), "--model", "smollm2", "--sample", "100000")
    assert code == 2 and "--sample 100000 is past them" in err


def test_prompt_does_not_import_torch() -> None:
    code = (
        "import sys\n"
        "from agentspec.cli import app\n"
        "try:\n"
        f"    app(['prompt', {str(CALCULATOR)!r}, '--model', 'smollm2'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('HEAVY', [m for m in ('torch', 'transformers') if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert "HEAVY []" in out.stdout, out.stdout + out.stderr


def test_a_template_without_a_system_turn_is_reported(tmp_path: Path) -> None:
    (tmp_path / "chat_template.jinja").write_text(
        (TEMPLATES / "gemma2_no_system.jinja").read_text(encoding="utf-8")
    )
    code, out, _ = invoke(str(CALCULATOR), "--model", str(tmp_path))
    assert code == 0, out
    assert "system prompt: opens the first user turn (the template refuses a system turn)" in out
    assert "<start_of_turn>user\nUse the calculator tool" in out


def test_a_folder_without_a_model_or_tokenizer_is_refused(tmp_path: Path) -> None:
    # `eval` and `run` refused such a folder; `prompt` showed ChatML as if it were a model
    code, _, err = invoke(str(CALCULATOR), "--model", str(tmp_path))
    assert code != 0 and f"{tmp_path} holds no model or tokenizer" in err


def test_an_overflow_under_error_says_the_episode_ends_not_the_run(tmp_path: Path) -> None:
    spec = tmp_path / "calculator.yaml"
    spec.write_text(
        CALCULATOR.read_text().replace(
            "context: {policy: full_history, max_prompt_tokens: 512}",
            "context: {policy: full_history, max_prompt_tokens: 50, overflow: error}",
        )
    )
    code, out, err = invoke(str(spec))
    assert code == 0, out + err
    assert "the episode ends as env_error here (overflow: error)" in out + err, out + err
    assert "the run stops" not in out + err
