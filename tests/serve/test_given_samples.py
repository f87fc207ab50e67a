"""A sample the caller gives at reset is made what a loaded one is: its declared
fields checked (a wrong one is a SessionError naming it, before any episode starts)
and its `data.derived` fields computed, which the spec's rewards may read."""

from __future__ import annotations

import asyncio

import pytest

from agentspec.runtime.serve.session import EpisodeSession, SessionError
from agentspec.runtime.serve.spec import ServedSpec

SPEC = """\
agentspec: 1
name: doubled
data:
  source: jsonl:rows.jsonl
  fields: {question: str, n: int}
  derived:
    double: sample.n * 2
    half: 10 // sample.n
prompt: {user: "Double {{ sample.n }}."}
episode: {max_steps: 1, success: reward.correct == 1.0}
rewards:
  correct: {on: final, value: "1.0 if number(action.text) == sample.double else 0.0"}
"""


@pytest.fixture(scope="module")
def doubled(tmp_path_factory: pytest.TempPathFactory) -> ServedSpec:
    folder = tmp_path_factory.mktemp("doubled")
    (folder / "rows.jsonl").write_text('{"question": "q", "n": 4}\n', encoding="utf-8")
    (folder / "spec.yaml").write_text(SPEC, encoding="utf-8")
    return ServedSpec.load(folder / "spec.yaml")


def play(spec: ServedSpec, sample: dict, answer: str) -> dict[str, float]:
    async def episode() -> dict[str, float]:
        session = EpisodeSession(spec)
        await session.start(sample=sample)
        return (await session.act(answer)).reward_totals

    return asyncio.run(episode())


def test_a_given_sample_has_its_derived_fields(doubled: ServedSpec) -> None:
    assert play(doubled, {"question": "q", "n": 21}, "42") == {"correct": 1.0}
    assert play(doubled, {"question": "q", "n": 21}, "8") == {"correct": 0.0}


@pytest.mark.parametrize(
    ("sample", "message"),
    [
        (
            {"question": "q", "n": "21"},
            "field 'n' is the string '21', but data.fields declares it int",
        ),
        (
            {"question": "q", "n": True},
            "field 'n' is the boolean true, but data.fields declares it int",
        ),
        ({"question": "q"}, "has no field 'n' (declared in data.fields)"),
        ({"question": "q", "n": 0}, "the sample: ZeroDivisionError"),  # `half` fails on it
    ],
)
def test_a_given_sample_of_the_wrong_shape_starts_no_episode(
    doubled: ServedSpec, sample: dict, message: str
) -> None:
    async def reset() -> None:
        session = EpisodeSession(doubled)
        with pytest.raises(SessionError) as error:
            await session.start(sample=sample)
        assert message in str(error.value), str(error.value)
        assert not session.started

    asyncio.run(reset())
