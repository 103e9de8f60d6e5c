"""The general plugin runs in every process of a real vLLM engine, and only once in each.

Each test starts a fresh interpreter (plugins load once per process) running an engine on the tiny model,
with MY_PLUGIN_TRACE_FILE set, and counts the distinct processes that appended a line. The layouts go
from one process to the ones an engine takes when it scales out: tensor parallelism on Ray, with a cluster
the front end starts or one started separately (the multi-node case, where the plugin reaches the workers
only through the `runtime_env` the front end passes), pipeline parallelism and data parallelism.
Every layout with separate processes is marked slow: `pytest --slow`. The Ray ones need Ray, which the
`test` extra installs (vllm-scaffold-testing[ray]); where Ray is missing they skip and say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from vllm_scaffold_testing import TP2_ENV
from vllm_scaffold_testing.scale_out import DP2_ENV, DP2_KWARGS, PP2_ENV, PP2_KWARGS, RAY_TP2_KWARGS

from my_plugin.hooks.registration import TRACE_ENV

pytestmark = pytest.mark.engine

SCRIPT = """
import contextlib

from vllm_scaffold_testing.scale_out import generate, generate_async, joined_ray_cluster, local_ray_cluster

if __name__ == "__main__":
    with {cluster}:
        tokens = {generate}({engine_kwargs!r}, ["Hello world", "The quick brown fox"])
    assert all(tokens), tokens
"""


@dataclass(frozen=True)
class Layout:
    """Where the engine's processes come from, and which of them run register()."""

    processes: str  # the processes, one "+" between each
    env: dict[str, str] = field(default_factory=dict)
    overrides: dict[str, Any] = field(default_factory=dict)
    ray: str | None = None  # "local": the front end starts Ray; "cluster": it joins a separate cluster
    generate: str = "generate"  # or "generate_async": AsyncLLM, the server's engine

    @property
    def count(self) -> int:
        return len(self.processes.split("+"))


SLOW = pytest.mark.slow
LAYOUTS = [
    pytest.param(Layout("engine in the front end", {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}), id="in-process"),
    pytest.param(
        Layout("front end+engine core+worker", {"VLLM_ENABLE_V1_MULTIPROCESSING": "1"}),
        id="multiprocessing",
        marks=SLOW,
    ),
    pytest.param(
        Layout(
            "front end+engine core+worker 0+worker 1",
            TP2_ENV,
            {"tensor_parallel_size": 2, "distributed_executor_backend": "mp"},
        ),
        id="tp2-mp",
        marks=SLOW,
    ),
    pytest.param(
        Layout("front end+engine core+Ray worker 0+Ray worker 1", overrides=RAY_TP2_KWARGS, ray="local"),
        id="tp2-ray",
        marks=SLOW,
    ),
    pytest.param(
        Layout("front end+engine core+Ray worker 0+Ray worker 1", overrides=RAY_TP2_KWARGS, ray="cluster"),
        id="tp2-ray-separate-cluster",
        marks=SLOW,
    ),
    pytest.param(
        Layout("front end+engine core+stage 0+stage 1", PP2_ENV, PP2_KWARGS), id="pp2-mp", marks=SLOW
    ),
    pytest.param(
        Layout(
            "front end+engine core 0+worker 0+engine core 1+worker 1",
            DP2_ENV,
            DP2_KWARGS,
            generate="generate_async",
        ),
        id="dp2-async",
        marks=SLOW,
    ),
]


# When its model-info cache ($VLLM_CACHE_ROOT/modelinfos) has no entry for the model's source file, as on the
# first run of a vLLM release on a machine, vLLM inspects the model class in a short-lived subprocess
# (`python -m vllm.model_executor.models.registry`) that loads the general plugins too. It is not one of the
# engine's processes, and whether it runs depends on that cache, so it is not counted.
MODEL_INSPECTION = "vllm.model_executor.models.registry"


def traced_processes(trace: Path) -> list[str]:
    lines = trace.read_text(encoding="utf-8").splitlines()
    pids = [line.split("\t")[0] for line in lines]
    assert len(pids) == len(set(pids)), f"register() ran twice in one process:\n{lines}"
    return [line for line in lines if line.split("\t")[2] != MODEL_INSPECTION]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_register_runs_once_in_every_engine_process(
    layout: Layout,
    llm_kwargs: dict[str, object],
    run_python,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    trace = tmp_path / "trace.tsv"
    env = {**layout.env, TRACE_ENV: str(trace)}
    cluster = "contextlib.nullcontext()"
    if layout.ray is not None:
        env = {**request.getfixturevalue("ray_engine_env"), **env}
        cluster = "local_ray_cluster()"
    if layout.ray == "cluster":
        ray_cluster = request.getfixturevalue("ray_cluster")
        runtime_env = ray_cluster.runtime_env(request.getfixturevalue("plugin_site"))
        env.update(ray_cluster.client_env)
        cluster = f"joined_ray_cluster({ray_cluster.address!r}, {runtime_env!r})"
    engine_kwargs = {**llm_kwargs, **layout.overrides}
    run_python(SCRIPT.format(cluster=cluster, generate=layout.generate, engine_kwargs=engine_kwargs), env=env)
    lines = traced_processes(trace)
    assert len(lines) == layout.count, f"expected {layout.count} ({layout.processes}), got:\n{lines}"


def test_register_does_nothing_when_called_again(run_python, tmp_path: Path) -> None:
    trace = tmp_path / "trace.tsv"
    run_python(
        "from my_plugin import vllm_plugin\nvllm_plugin.register()\nvllm_plugin.register()\n",
        env={TRACE_ENV: str(trace)},
    )
    assert len(traced_processes(trace)) == 1
