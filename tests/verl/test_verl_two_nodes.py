"""A verl run on a two-node Ray cluster whose second node sees none of the driver's folders.

Issue 51: a worker on another node must get everything it reads from the run itself
(Ray's runtime env), never from a path of the driver's. On this one machine the
second node is a second `ray start` in its own mount namespace (`unshare -m`, as
root), where a tmpfs hides the folder holding the spec, its own Python module and
data files, the driver's `${AGENTSPEC_DATA}` and the run folder. The spec's reward
calls its own module, which reads a data file beside the spec and one under
`${AGENTSPEC_DATA}`, and records where it ran (node, working directory, whether the
driver's folder is visible there) in a folder both nodes see. verl's agent loop
places its workers round-robin over the nodes (`AgentLoopManager`), so with two
agent-loop workers one runs on the second node.

The cluster is this test's own (token, temp dir, ports) and is stopped by ending the
process groups it started, not with `ray stop` (which stops every Ray of the machine).
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve.helpers import free_port
from verl_helpers import SMALL, stop_process_group

pytestmark = pytest.mark.slow

SECOND_NODE_IP = "127.0.0.2"

SPEC = """\
agentspec: 1
name: lookup_desk
description: Answer with the value a private table holds for a key.
data:
  source: jsonl:samples.jsonl
  fields: {key: str, answer: str}
prompt:
  system: Answer with <answer>VALUE</answer>.
  user: "What is {{ sample.key }}?"
functions:
  score:
    impl: tablelib:make_score
    params: [str, str]
    returns: float
    config:
      table: table.json
      units: ${AGENTSPEC_DATA}/units.json
      evidence: ${TWO_NODE_EVIDENCE}
      driver: ${TWO_NODE_DRIVER}
episode:
  max_steps: 1
  max_response_tokens: 16
  success: reward.correct == 1.0
rewards:
  correct: {on: final, value: "score(action.text, sample.key)"}
oracle:
  - "<answer>{{ sample.answer }}</answer>"
training:
  algorithm: grpo
  eval_samples: 4
"""

TABLELIB = '''\
"""The spec's own module: a reward that reads two data files and says where it ran."""

import json
import os
from pathlib import Path


def make_score(table, units, evidence, driver):
    # agentspec resolves a relative path against the spec's folder; variables are the
    # function's to expand, where it runs
    units, evidence, driver = (os.path.expandvars(p) for p in (units, evidence, driver))
    values = json.loads(Path(table).read_text())
    unit = json.loads(Path(units).read_text())["unit"]

    def score(text, key):
        import ray

        record = {
            "node_id": ray.get_runtime_context().get_node_id(),
            "cwd": os.getcwd(),
            "table": str(table),
            "driver_visible": (Path(driver) / "spec").exists(),
            "unit": unit,
            "value": values[key],
        }
        with (Path(evidence) / f"{os.getpid()}.jsonl").open("a") as f:
            f.write(json.dumps(record) + "\\n")
        return 1.0 if f"<answer>{values[key]}{unit}</answer>" in text else 0.0

    return score
'''


def _write_task(driver: Path) -> tuple[Path, Path]:
    """The spec with its module and data files, and a data root, under ``driver``."""
    spec_dir, data = driver / "spec", driver / "data"
    spec_dir.mkdir(parents=True)
    data.mkdir()
    (spec_dir / "lookup_desk.yaml").write_text(SPEC)
    (spec_dir / "tablelib.py").write_text(TABLELIB)
    table = {f"k{i}": str(10 * i) for i in range(32)}
    (spec_dir / "table.json").write_text(json.dumps(table))
    rows = [{"id": f"s{i}", "key": k, "answer": f"{v}kg"} for i, (k, v) in enumerate(table.items())]
    (spec_dir / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (data / "units.json").write_text(json.dumps({"unit": "kg"}))
    return spec_dir / "lookup_desk.yaml", data


def _ray() -> str:
    return str(Path(sys.executable).parent / "ray")


def _wait_for_nodes(
    address: str,
    count: int,
    env: dict[str, str],
    nodes: list[subprocess.Popen[bytes]],
    timeout: float = 120,
) -> dict[str, str]:
    """Until the cluster has ``count`` live nodes (asked from a separate process: this
    test process must not hold a Ray connection), then their ids and addresses; a
    `ray start` that exits is an error."""
    host, port = address.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while True:
        for node in nodes:
            if node.poll() is not None:
                err = node.stderr.read().decode(errors="replace") if node.stderr else ""
                raise RuntimeError(f"ray start exited with {node.returncode}: {err[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection((host, int(port)), 1):
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"the Ray head did not listen on {address}")
        time.sleep(0.5)
    probe = (
        "import ray, sys, time\n"
        f"ray.init(address={address!r}, logging_level='ERROR')\n"
        f"end = time.monotonic() + {timeout}\n"
        f"while sum(n['Alive'] for n in ray.nodes()) < {count}:\n"
        "    if time.monotonic() > end: sys.exit('the nodes did not join')\n"
        "    time.sleep(0.5)\n"
        "print({n['NodeID']: n['NodeManagerAddress'] for n in ray.nodes() if n['Alive']})\n"
    )
    waiting = subprocess.Popen(
        [sys.executable, "-c", probe], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    while waiting.poll() is None:
        for node in nodes:
            if node.poll() is not None:
                waiting.kill()
                err = node.stderr.read().decode(errors="replace") if node.stderr else ""
                raise RuntimeError(f"ray start exited with {node.returncode}: {err[-2000:]}")
        time.sleep(0.5)
    out, err = waiting.communicate()
    assert waiting.returncode == 0, err.decode(errors="replace")[-3000:]
    return ast.literal_eval(out.decode().strip().splitlines()[-1])


@pytest.fixture
def two_nodes(tmp_path: Path) -> Iterator[tuple[str, Path, dict[str, str], str]]:
    """A head (the driver's node, with the logical GPU) and a second node that cannot see
    ``tmp_path/driver``; yields the address, that folder, the environment to use and the
    second node's id."""
    driver = tmp_path / "driver"
    driver.mkdir()
    env = {
        **os.environ,
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
    }
    env.pop("RAY_AUTH_TOKEN_PATH", None)
    env.pop("RAY_ADDRESS", None)
    port = free_port()
    address = f"127.0.0.1:{port}"
    common = ["--block", "--disable-usage-stats"]
    # Ray's socket paths must stay under 108 bytes: a short temp dir of its own
    temp_dir = Path(tempfile.mkdtemp(prefix="ray2n", dir="/tmp"))
    head = subprocess.Popen(
        [_ray(), "start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1",
         "--num-cpus=8", "--num-gpus=1", f"--temp-dir={temp_dir}", "--include-dashboard=false",
         *common],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    # the second node: its own mount namespace, the driver's folder hidden under a tmpfs
    hide = f"mount -t tmpfs none {driver} && exec {_ray()} start --address={address} "
    hide += f"--node-ip-address={SECOND_NODE_IP} --num-cpus=8 --num-gpus=0 " + " ".join(common)
    second: subprocess.Popen[bytes] | None = None
    try:
        _wait_for_nodes(address, 1, env, [head])
        second = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", hide],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        nodes = _wait_for_nodes(address, 2, env, [head, second])
        (second_id,) = [node for node, ip in nodes.items() if ip == SECOND_NODE_IP]
        yield address, driver, env, second_id
    finally:
        if second is not None:
            stop_process_group(second)
        stop_process_group(head)
        shutil.rmtree(temp_dir, ignore_errors=True)


def test_a_run_trains_on_a_node_that_sees_none_of_the_drivers_folders(
    tmp_path: Path, two_nodes: tuple[str, Path, dict[str, str], str]
) -> None:
    address, driver, env, second_node = two_nodes
    spec, data = _write_task(driver)
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    run = driver / "run"
    env = {
        **env,
        "AGENTSPEC_DATA": str(data),
        "TWO_NODE_EVIDENCE": str(evidence),
        "TWO_NODE_DRIVER": str(driver),
    }
    settings = {
        **SMALL,
        "algorithm": "grpo",
        "data.val_max_samples": "4",
        "trainer.device": "cpu",
        # two agent-loop workers: verl places them round-robin over the nodes
        "actor_rollout_ref.rollout.agent.num_workers": "2",
        # checkpoints are written by actors on any node (verl's transfer-queue controller
        # too), so they need a folder every node sees: none here (docs/verl.md)
        "trainer.save_freq": "-1",
    }
    args = ["train", str(spec), "--backend", "verl", "--out", str(run), "--ray-address", address]
    for key, value in settings.items():
        args += ["--set", f"{key}={value}"]
    started = time.monotonic()
    result = subprocess.run(
        [str(Path(sys.executable).parent / "agentspec"), *args],
        capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    print(f"two-node run: {time.monotonic() - started:.0f} s")

    # trained: two iterations' metrics, written by the task runner on the driver's node
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert max(m["iteration"] for m in metrics) == 2
    assert any("loss/policy" in m for m in metrics)
    # the spec's own code ran on the second node, from the shipped run: its module and
    # both data files read there, where the driver's folders do not exist
    records = [
        json.loads(line)
        for path in evidence.glob("*.jsonl")
        for line in path.read_text().splitlines()
    ]
    remote = [r for r in records if r["node_id"] == second_node]
    assert remote, {r["node_id"] for r in records}
    for record in remote:
        assert record["driver_visible"] is False
        assert not record["cwd"].startswith(str(driver))
        assert Path(record["table"]).parent.name == "spec"  # the shipped copy's table
        assert record["unit"] == "kg"  # the data root's file, shipped
    # and on the driver's node too: the run used both
    assert {r["node_id"] for r in records} - {second_node}
