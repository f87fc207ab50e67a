"""A served spec gives its clients only what the agent may see: the sample fields and
state variables the agent's templates read (the prompt, `observe`, guard messages,
`context.summary`) and those the spec declares public. The rest — an answer, an
expected database, a resolution — is the grader's: the Task API served every field of
every sample (200,000 calculator answers paged out in seconds) and replaying
airline_service's served `resolution` scored 1.0."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agentspec.compiler.frontend import check_source
from agentspec.compiler.visibility import agent_view
from agentspec.core.source import SourceFile
from agentspec.runtime.serve.openenv_server import build_app
from agentspec.runtime.serve.spec import ServedSpec

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def calculator() -> TestClient:
    return TestClient(build_app(ServedSpec.load(ROOT / "specs" / "calculator.yaml")))


@pytest.fixture(scope="module")
def airline() -> TestClient:
    return TestClient(build_app(ServedSpec.load(ROOT / "specs" / "airline_service.yaml")))


def test_the_task_api_serves_no_calculator_answer(calculator: TestClient) -> None:
    page = calculator.post("/calculator/task_range", json={"split": "test", "stop": 1000})
    one = calculator.post("/calculator/task", json={"split": "train", "index": 3})
    listed = calculator.post("/calculator/tasks", json={"split": "test"})

    tasks = [*page.json()["tasks"], one.json()["task"], *listed.json()["tasks"]]
    assert {frozenset(task) for task in tasks} == {frozenset({"question", "id", "index"})}
    assert one.json()["task"]["id"] == "train-3"


def test_airline_services_resolution_and_expected_database_are_not_served(
    airline: TestClient,
) -> None:
    task = airline.post("/airline_service/task", json={"split": "test", "index": 0}).json()["task"]

    # the prompt reads user, reservation and kind; db, expected_db and resolution only the
    # grader (and the oracle) read: a client replaying `resolution` scored 1.0
    assert sorted(task) == ["id", "index", "kind", "reservation", "user"]


def test_the_state_reply_holds_only_the_state_the_agent_sees(airline: TestClient) -> None:
    with airline.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"split": "test", "index": 0}})
        ws.receive_json()
        ws.send_json({"type": "state"})
        state = ws.receive_json()["data"]

    # `db` is what the tools' observations show; `verified` only the reward reads
    assert sorted(state["spec_state"]) == ["db"]


SPEC = """\
agentspec: 1
name: shown
data:
  source: jsonl:rows.jsonl
  fields: {question: str, hint: str, answer: int, secret: str}
  PUBLIC
prompt: {user: "{{ sample.question }}"}
state:
  tries: {type: int}
  last: {type: str, PUBLIC_STATE}
  found: {type: bool}
tools:
  guess:
    description: Guess.
    parameters: {n: {type: integer}}
    when: {if: "state.tries < 3", message: "Only 3 tries (you made {{ state.tries }})."}
    effect: [state.tries += 1, "state.found = args.n == sample.answer"]
    observe: "{{ 'yes' if state.found else 'no' }}"
episode: {max_steps: 4}
rewards:
  found: {on: final, value: "1.0 if state.found else 0.0"}
"""


def served(tmp_path: Path, public: str = "", public_state: str = "") -> ServedSpec:
    row = '{"question": "Guess", "hint": "small", "answer": 4, "secret": "s"}\n'
    (tmp_path / "rows.jsonl").write_text(row * 3, encoding="utf-8")
    text = SPEC.replace("PUBLIC_STATE", public_state or "description: last guess")
    (tmp_path / "spec.yaml").write_text(text.replace("PUBLIC", public), encoding="utf-8")
    return ServedSpec.load(tmp_path / "spec.yaml")


def test_data_public_and_a_public_state_variable_are_served(tmp_path: Path) -> None:
    spec = served(tmp_path, public="public: [hint]", public_state="public: true")
    state = {"tries": 1, "last": "3", "found": False}

    assert spec.task("train", 0) == {"question": "Guess", "hint": "small", "id": "0", "index": 0}
    # tries is read by a guard's message, found by an observation; last is declared public
    assert spec.public_state(state) == state


def test_without_declarations_only_what_templates_read_is_served(tmp_path: Path) -> None:
    spec = served(tmp_path)

    assert spec.task("train", 1) == {"question": "Guess", "id": "1", "index": 1}
    assert spec.public_state({"tries": 1, "last": "3", "found": False}) == {
        "tries": 1,
        "found": False,
    }


HEAD = """\
agentspec: 1
name: t
data: {source: "jsonl:x.jsonl", fields: {q: str, n: int, answer: str}, derived: {twice: sample.n * 2}}
state: {seen: {type: "list[str]"}, score: {type: int}}
rewards: {r: {on: final, value: "1.0 if len(state.seen) + state.score > 0 else 0.0"}}
"""


def view(body: str) -> Any:
    result = check_source(SourceFile("t.yaml", HEAD + textwrap.dedent(body)), deep=False)
    errors = [d.message for d in result.diagnostics if d.is_error]
    assert result.checked is not None and not errors, errors
    return agent_view(result.checked.spec)


@pytest.mark.parametrize(
    ("body", "fields", "state"),
    [
        ('prompt: {user: "{{ sample.q }}"}', ("q",), ()),
        # a field read only to choose the text is shown by the text
        ("prompt: {user: \"{% if sample['n'] > 2 %}big{% endif %}\"}", ("n",), ()),
        ('prompt: {user: "{{ sample.twice }}"}', ("twice",), ()),
        # the whole sample: every field, derived ones too
        ('prompt: {user: "{{ sample }}"}', None, ()),
        ('prompt: {user: "{% set s = sample %}{{ s.q }}"}', None, ()),
        ('prompt: {user: "{{ sample[sample.q] }}"}', None, ()),
        (
            'prompt: {user: "x"}\ncontext: {summary: "{{ state.seen }} {{ sample.answer }}"}',
            ("answer",),
            ("seen",),
        ),
        ('prompt: {user: "x"}\ncontext: {summary: "{{ state }}"}', (), None),
        (
            """
            prompt: {user: "x"}
            guards:
              few: {if: "len(state.seen) < 3", message: "{{ sample.q }} {{ state.score }}"}
            tools:
              t:
                description: T.
                when: few
                returns: sample.answer
                observe: "{{ result }}"
            """,
            ("q",),
            ("score",),
        ),
    ],
)
def test_the_agents_templates_decide_what_is_public(
    body: str, fields: tuple[str, ...] | None, state: tuple[str, ...] | None
) -> None:
    assert (view(body).fields, view(body).state) == (fields, state)


def test_data_public_naming_no_field_is_an_error() -> None:
    spec = HEAD.replace("derived:", "public: [q, anwser], derived:") + 'prompt: {user: "x"}\n'
    result = check_source(SourceFile("t.yaml", spec), deep=False)

    [diagnostic] = [d for d in result.diagnostics if d.code == "E404"]
    assert diagnostic.code == "E404"
    assert "data.public names 'anwser'" in diagnostic.message
    assert diagnostic.hint is not None and "answer" in diagnostic.hint
