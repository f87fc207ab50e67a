"""Issue 14's constructs, run through generated code: comprehensions, `let`,
constants, initial expressions, guards with messages (reading `args`) and their
reward events, checked indices, copies into state, and the lazy oracle."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentspec.runtime.compiled.oracle import OracleError

from .helpers import build, call, play

HEAD = """\
agentspec: 1
name: t
data:
  source: "jsonl:none.jsonl"
  fields: {q: str, n: int, items: "list[str]", db: dict, start: "list[int]", rows: "list[str]"}
constants:
  limit: 2
  moves: {left: -1, right: 1}
prompt: {user: "{{ sample.q }} (limit {{ constants.limit }})"}
"""

SAMPLE: dict[str, Any] = {
    "id": "s7",
    "q": "question",
    "n": 3,
    "items": ["apple", "banana", "cherry"],
    "db": {"a": {"seats": 1, "tags": ["x"]}, "b": {"seats": 0, "tags": []}},
    "start": [1, 0],
    "rows": ["..#", "..."],
}

WORLD = """
state:
  db: {type: dict, initial: sample.db}
  x: {type: int, initial: "sample.start[0] + constants.limit - 2"}
  picked: {type: "list[str]"}
  log: {type: "list[str]"}
tools:
  pick:
    description: Pick the items that start with a prefix.
    parameters: {prefix: {type: string}}
    when:
      - if: len(state.picked) < constants.limit
        message: "You may pick {{ constants.limit }} times, {{ args.prefix }} is one too many."
      - if: args.prefix != ""
        message: "Say which prefix."
    effect:
      - let hits = [i for i in sample.items if startswith(i, args.prefix)]
      - let count = len(hits)
      - state.picked = state.picked + hits
      - 'state.log = state.log + [str(count) + ":" + join(sorted(hits), ",")]'
  book:
    description: Take a seat on a flight.
    parameters: {flight: {type: string}}
    when: {if: 'state.db[args.flight]["seats"] > 0', message: "Flight {{ args.flight }} is full."}
    effect:
      - state.db[args.flight]["seats"] -= 1
      - state.db[args.flight]["tags"] = state.db[args.flight]["tags"] + ["booked"]
  move:
    description: Move left or right on the first row.
    parameters: {direction: {type: string, enum: [left, right]}}
    effect:
      - let nx = state.x + constants.moves[args.direction]
      - 'fail("a wall") if sample.rows[0][nx] == "#"'
      - state.x = nx
  copy_db:
    description: Copy a sample value into state, then change the state.
    parameters: {}
    effect:
      - state.db = sample.db
      - 'state.db["a"]["tags"] = ["changed"]'
      - "state.db = {k: v for k, v in items(state.db) if v['seats'] > 0}"
rewards:
  violation: {on: guard_failed, value: -1.0}
  pick_refused: {on: "guard_failed:pick", value: -0.5}
  move_error: {on: "tool_error:move", value: -0.25}
  any_error: {on: tool_error, value: -0.125}
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return build(WORLD, tmp_path_factory.mktemp("world"), head=HEAD)


def observations(traj: Any) -> list[str]:
    return [s.observation or "" for s in traj.steps]


def test_initial_expressions_start_from_the_sample(world: Any) -> None:
    _, env = play(world, ["end"], SAMPLE)
    assert env.state.x == 1 and env.state.db == SAMPLE["db"]
    assert env.state.db is not env.sample["db"]  # a copy, not the sample


def test_a_text_variable_starts_from_a_sample_expression_or_from_its_text(
    tmp_path: Path,
) -> None:
    # Issue 26: `initial: sample.q` for a str used to be the text "sample.q".
    module = build(
        """
        constants: {greeting: hello}
        state:
          goal: {type: str, initial: sample.q}
          label: {type: "str?", initial: "constants.greeting + ' ' + sample.q"}
          page: {type: str, initial: search}
          words: {type: str, initial: "1 + 2"}
          anything: {type: any, initial: sample.items}
        tools:
          t: {description: x, parameters: {}}
        rewards:
          r: {on: final, value: 1.0}
        """,
        tmp_path,
    )
    _, env = play(module, ["end"])
    assert (env.state.goal, env.state.label) == ("question", "hello question")
    assert (env.state.page, env.state.words) == ("search", "1 + 2")  # text, read no scope
    assert env.state.anything == ["a", "b"]


def test_comprehension_let_and_builtins(world: Any) -> None:
    _, env = play(world, [call("pick", prefix="b"), call("pick", prefix="c"), "end"], SAMPLE)
    assert env.state.picked == ["banana", "cherry"]
    assert env.state.log == ["1:banana", "1:cherry"]


def test_guard_messages_are_verbatim_and_read_args(world: Any) -> None:
    actions = [call("pick", prefix=""), call("pick", prefix="a"), call("pick", prefix="b")]
    traj, _ = play(world, [*actions, call("pick", prefix="c"), "end"], SAMPLE)
    texts = observations(traj)
    assert "Say which prefix." in texts[0] and "cannot be used now" not in texts[0]
    assert "You may pick 2 times, c is one too many." in texts[3]


def test_guard_failed_and_tool_error_events_are_filtered_by_tool(world: Any) -> None:
    actions = [call("pick", prefix=""), call("move", direction="right"), "end"]
    traj, _ = play(world, actions, SAMPLE)
    refused, wall = traj.steps[0].rewards, traj.steps[1].rewards
    assert refused == {"violation": -1.0, "pick_refused": -0.5, "any_error": -0.125}
    assert wall == {"move_error": -0.25, "any_error": -0.125}  # fail(): an error, no guard


def test_nested_index_assignment_and_single_guard_mapping(world: Any) -> None:
    traj, env = play(world, [call("book", flight="a"), call("book", flight="a"), "end"], SAMPLE)
    assert env.state.db["a"] == {"seats": 0, "tags": ["x", "booked"]}
    assert "Flight a is full." in observations(traj)[1]


def test_a_computed_negative_index_is_an_error_not_a_wrap(world: Any) -> None:
    sample = {**SAMPLE, "start": [0, 0]}
    traj, env = play(world, [call("move", direction="left"), "end"], sample)
    assert env.state.x == 0  # did not wrap to the last column
    step = traj.steps[0]
    assert "IndexError" in (step.observation or "")
    errors = step.info["expression_errors"]
    assert len(errors) == 1 and "tools.move (" in errors[0] and ".yaml:" in errors[0]
    assert "index -1 is out of range for a str of length 3" in errors[0]


def test_assigning_the_sample_copies_it(world: Any) -> None:
    pristine = copy.deepcopy(SAMPLE)
    _, env = play(world, [call("copy_db"), "end"], SAMPLE)
    assert pristine == SAMPLE
    assert env.sample["db"]["a"]["tags"] == ["x"]  # the episode's view of the sample too
    assert env.state.db == {"a": {"seats": 1, "tags": ["changed"]}}


EFFECTS = st.lists(
    st.one_of(
        st.builds(lambda p: call("pick", prefix=p), st.sampled_from(["", "a", "b", "c", "z"])),
        st.builds(lambda f: call("book", flight=f), st.sampled_from(["a", "b", "zz"])),
        st.builds(lambda d: call("move", direction=d), st.sampled_from(["left", "right", "up"])),
        st.just(call("copy_db")),
    ),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(actions=EFFECTS)
def test_a_sample_is_unchanged_after_any_sequence_of_effects(
    world: Any, actions: list[str]
) -> None:
    sample = copy.deepcopy(SAMPLE)
    play(world, [*actions, "end"], sample)
    assert sample == SAMPLE
    # and the next episode starts from the pristine sample
    _, env = play(world, ["end"], sample)
    assert env.state.db == SAMPLE["db"] and env.state.picked == []


ORACLE = """
state:
  seen: {type: int}
tools:
  say:
    description: Say a word.
    parameters: {word: {type: string}}
    effect: ["state.seen += 1"]
oracle:
  - '<tool_call>{"name": "say", "arguments": {"word": "{{ sample.q }}"}}</tool_call>'
  - each: "[i for i in sample.items if i != 'banana']"
    action: '<tool_call>{"name": "say", "arguments": {"word": "{{ index }}-{{ item }}"}}</tool_call>'
  - "{{ sample.items[5] }}"
"""


def test_oracle_each_and_lazy_rendering(tmp_path: Path) -> None:
    module = build(ORACLE, tmp_path, head=HEAD)
    turns = module.oracle_actions(SAMPLE)
    assert next(turns).endswith('"question"}}</tool_call>')
    assert '"0-apple"' in next(turns) and '"1-cherry"' in next(turns)
    with pytest.raises(OracleError, match=r"\.yaml:\d+: UndefinedError"):
        next(turns)  # only now is the last action rendered


def test_oracle_error_names_the_sample(tmp_path: Path) -> None:
    from agentspec.runtime.compiled.scripts import PolicyError, episode_script

    module = build(ORACLE, tmp_path, head=HEAD)
    script = episode_script(module, "oracle")
    assert script is not None
    turn = script(SAMPLE)
    for _ in range(3):
        turn("")
    with pytest.raises(PolicyError, match=r"oracle for sample s7: .*\.yaml:\d+"):
        turn("")


def test_an_empty_action_ends_the_oracle(tmp_path: Path) -> None:
    module = build(ORACLE.replace("{{ sample.items[5] }}", "{{ '' }}"), tmp_path, head=HEAD)
    assert len(list(module.oracle_actions(SAMPLE))) == 3


def test_the_valid_corpus_spec_of_these_constructs_runs(tmp_path: Path) -> None:
    from agentspec.compiler.build import compile_spec

    from .helpers import import_source

    spec = Path(__file__).resolve().parents[1] / "specs" / "valid" / "collections_and_guards.yaml"
    module = import_source(compile_spec(spec).source)
    sample = {"id": "i1", "stock": {"apple": 1, "pear": 2}, "wanted": ["pear", "apple"], "start": 0}
    actions = list(module.oracle_actions(sample))
    assert actions == ["order[apple]", "order[pear]"]
    traj, env = play(module, [*actions, "done"], sample)
    assert traj.success and env.state.stock == {"pear": 1} and env.state.budget == 0
    assert sample["stock"] == {"apple": 1, "pear": 2}
    refused, _ = play(module, ["order[apple]", "order[apple]", "done"], sample)
    assert "apple is out of stock." in (refused.steps[1].observation or "")
    assert refused.steps[1].rewards == {"refused": -0.5, "failed_order": -0.1}


def test_a_reward_expression_error_names_its_spec_line(tmp_path: Path) -> None:
    module = build(
        """
        state:
          n: {type: int, initial: "sample.n - 5"}
        tools:
          noop: {description: Nothing., parameters: {}}
        rewards:
          r: {on: final, value: "1.0 if sample.items[state.n] == 'apple' else 0.0"}
        """,
        tmp_path,
        head=HEAD,
    )
    traj, _ = play(module, ["end"], SAMPLE)
    assert traj.steps[0].rewards == {"r": 0.0}  # index -2 does not wrap to "banana"
    (error,) = traj.steps[0].info["expression_errors"]
    assert error.startswith("rewards.r.value (") and ".yaml:16): IndexError: index -2" in error


GUARDED = """
state:
  user: {type: str}
  orders:
    type: dict
    initial:
      o1: {status: pending}
      o2: {status: shipped}
      o1234: {status: pending}
      o9: {status: pending}
guards:
  signed_in: {if: 'state.user != ""', message: "Sign in first."}
  order_pending:
    - let order = get(state.orders, args.order_id, {})
    - if: 'get(order, "status", "") == "pending"'
      message: 'Order {{ args.order_id }} is {{ order.status | default("unknown") }}.'
  desk: [signed_in, order_pending]
tools:
  login:
    description: Log in.
    parameters: {name: {type: string}}
    effect: ["state.user = args.name"]
  cancel:
    description: Cancel an order.
    parameters: {order_id: {type: string}}
    when:
      - desk
      - let order = len(args.order_id)
      - {if: order < 3, message: "An id of {{ order }} characters is too long."}
      - args.order_id != "o9"
    effect: ['state.orders[args.order_id] = {"status": "cancelled"}']
  track:
    description: Track an order.
    parameters: {order_id: {type: string}, verbose: {type: boolean}}
    required: [order_id]
    when: order_pending
    returns: 'state.orders[args.order_id]["status"]'
rewards:
  refused: {on: guard_failed, value: -1.0}
"""


def test_named_guards_and_let_in_guards(tmp_path: Path) -> None:
    # Issue 26: guards shared between tools by name, `let` in a guard list, a
    # named guard's `let` kept apart from the tool's own (both say `order`).
    module = build(GUARDED, tmp_path)
    turns = [
        call("cancel", order_id="o1"),
        call("login", name="ann"),
        call("cancel", order_id="o2"),
        call("cancel", order_id="o404"),
        call("track", order_id="o2"),
        call("cancel", order_id="o1"),
        call("track", order_id="o1"),
        "end",
    ]
    traj, env = play(module, turns)
    texts = observations(traj)
    assert "Sign in first." in texts[0] and "cannot be used now" not in texts[0]
    assert "Order o2 is shipped." in texts[2]
    assert "Order o404 is unknown." in texts[3]  # the named guard's own `order`
    assert "Order o2 is shipped." in texts[4]  # the same guard, in another tool
    assert env.state.orders["o1"] == {"status": "cancelled"}
    assert "Order o1 is cancelled." in texts[6]
    assert [sum(s.rewards.values()) for s in traj.steps] == [-1, 0, -1, -1, -1, 0, -1, 0]


def test_a_guard_lists_own_let_and_plain_condition_refusals(tmp_path: Path) -> None:
    module = build(GUARDED, tmp_path)
    turns = [
        call("login", name="ann"),
        call("cancel", order_id="o1234"),
        call("cancel", order_id="o9"),
        "end",
    ]
    traj, env = play(module, turns)
    texts = observations(traj)
    assert "An id of 5 characters is too long." in texts[1]  # the tool's own `order`
    assert 'cancel cannot be used now: it requires args.order_id != "o9"' in texts[2]
    assert env.state.orders["o9"] == {"status": "pending"}


CHAINS = [
    "args.a <= args.b <= args.c",
    "args.a < args.b < args.c < args.d",
    "args.a == args.b == args.c",
    "args.a < args.b > args.c",
    "(args.a <= args.b) <= args.c",
    "args.a <= (args.b <= args.c)",
    "args.a != args.b in [args.c, args.d]",
    "not args.a < args.b < args.c",
    "args.a < args.b < args.c or args.d == 0",
    "0 <= args.a < args.b",
]


def test_comparisons_chain_as_in_python(tmp_path: Path) -> None:
    """`a <= b <= c` is `a <= b and b <= c`, as in Python; it was compiled as
    `(a <= b) <= c`, a bool compared with c, so `1 <= 3000 <= 150` held."""
    import itertools

    parameters = "{a: {type: integer}, b: {type: integer}, c: {type: integer}, d: {type: integer}}"
    tools = "".join(
        f"  t{i}:\n    description: A chain.\n    parameters: {parameters}\n"
        f'    returns: "str({chain})"\n'
        for i, chain in enumerate(CHAINS)
    )
    module = build(
        f"tools:\n{tools}episode: {{max_steps: {len(CHAINS) + 1}}}\n"
        "context: {max_prompt_tokens: 100000}\n"
        "rewards:\n  r: {on: final, value: 1.0}\n",
        tmp_path,
    )
    for a, b, c, d in itertools.product((-1, 0, 1), repeat=4):
        turns = [call(f"t{i}", a=a, b=b, c=c, d=d) for i in range(len(CHAINS))]
        traj, _ = play(module, [*turns, "done"])
        assert len(traj.steps) == len(CHAINS) + 1, traj.termination
        values = {"a": a, "b": b, "c": c, "d": d}
        for chain, step in zip(CHAINS, traj.steps, strict=False):
            expected = eval(chain.replace("args.", ""), {}, values)  # Python's reading
            (result,) = step.info["tool_results"]
            assert result["text"] == str(expected), (chain, values)


def test_a_refusal_message_that_fails_to_render_still_refuses(tmp_path: Path) -> None:
    spec = GUARDED.replace(' | default("unknown")', "")
    module = build(spec, tmp_path)
    traj, _ = play(module, [call("login", name="ann"), call("cancel", order_id="o404"), "end"])
    texts = observations(traj)
    assert "cancel cannot be used now: its guard refused the call" in texts[1]
    assert traj.steps[1].rewards == {"refused": -1.0}  # a refusal: guard_failed fired
    (error,) = traj.steps[1].info["expression_errors"]
    assert (
        error.startswith("the refusal message of tools.cancel.when (") and "UndefinedError" in error
    )
