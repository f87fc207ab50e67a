"""A spec with `tool_format: harmony` validates, and its scripted episodes and oracle pass."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from agentspec.cli import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()

CALL = (
    "<|channel|>analysis<|message|>Use the calculator.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.calculator <|constrain|>json"
    "<|message|>{EXPRESSION}<|call|>"
)
FINAL = "<|channel|>final<|message|><answer>{ANSWER}</answer><|return|>"


def harmony_calculator() -> str:
    """The shipped calculator spec, written for gpt-oss's harmony format."""
    text = (ROOT / "specs" / "calculator.yaml").read_text(encoding="utf-8")
    head = text.split("\ntraining:", 1)[0].replace("tool_format: hermes", "tool_format: harmony")
    oracle_call = CALL.replace("{EXPRESSION}", '{"expression": {{ sample.expression | tojson }}}')
    head = head.split("\noracle:", 1)[0] if "\noracle:" in head else head
    test_call = CALL.replace("{EXPRESSION}", '{"expression": "6 * 7"}')
    return (
        head
        + "\noracle:\n"
        + f"  - '{oracle_call}'\n"
        + f"  - '{FINAL.replace('{ANSWER}', '{{ sample.answer }}')}'\n"
        + "tests:\n  episodes:\n"
        + "    - name: a harmony call, then the final channel\n"
        + '      sample: {id: t1, question: "What is 6 * 7?", expression: "6 * 7", answer: 42}\n'
        + f"      turns:\n        - '{test_call}'\n        - '{FINAL.replace('{ANSWER}', '42')}'\n"
        + "      expect:\n"
        + "        observations: [{contains: '<|start|>functions.calculator to=assistant"
        + "<|channel|>commentary<|message|>42<|end|>'}]\n"
        + "        rewards: {correct: 1.0}\n"
        + "        success: true\n"
    )


def test_a_harmony_spec_validates_and_passes_its_tests(tmp_path: Path) -> None:
    spec = tmp_path / "calculator_harmony.yaml"
    spec.write_text(harmony_calculator(), encoding="utf-8")
    result = runner.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["test", "--oracle-samples", "4", str(spec)])
    assert result.exit_code == 0, result.output
    assert "episodes[0]" in result.output and "2 passed" in result.output, result.output
