"""The general plugin runs in every process of a real vLLM engine, and only once in each.

Each test starts a fresh interpreter (plugins load once per process) running an offline `LLM` on the tiny
model, with MY_PLUGIN_TRACE_FILE set, and counts the distinct engine processes that appended a line.
Engines with separate processes (multiprocessing, tensor parallelism) are marked slow: `pytest --slow`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from vllm_scaffold_testing import TP2_ENV

from my_plugin.hooks.registration import TRACE_ENV

pytestmark = pytest.mark.engine

SCRIPT = """
from vllm import LLM, SamplingParams

if __name__ == "__main__":
    llm = LLM(**{llm_kwargs!r})
    params = SamplingParams(max_tokens=4, temperature=0.0)
    outputs = llm.generate(["Hello world", "The quick brown fox"], params)
    assert all(len(output.outputs[0].token_ids) > 0 for output in outputs)
"""


# When its model-info cache ($VLLM_CACHE_ROOT/modelinfos) has no entry for the model's source file, as on the
# first run of a vLLM release on a machine, vLLM inspects the model class in a short-lived subprocess
# (`python -m vllm.model_executor.models.registry`) that loads the general plugins too. It is not one of the
# engine's processes, and whether it runs depends on that cache, so it is not counted.
MODEL_INSPECTION = "vllm.model_executor.models.registry"


def traced_processes(trace: Path) -> list[str]:
    """The trace's lines of the engine's processes, each process once."""
    lines = trace.read_text(encoding="utf-8").splitlines()
    pids = [line.split("\t")[0] for line in lines]
    assert len(pids) == len(set(pids)), f"register() ran twice in one process:\n{lines}"
    return [line for line in lines if line.split("\t")[2] != MODEL_INSPECTION]


@pytest.mark.parametrize(
    ("label", "env", "overrides", "expected"),
    [
        ("in-process engine", {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}, {}, 1),
        pytest.param(
            "front end + engine core + worker",
            {"VLLM_ENABLE_V1_MULTIPROCESSING": "1"},
            {},
            3,
            marks=pytest.mark.slow,
        ),
        pytest.param(
            "front end + engine core + two tensor-parallel workers",
            TP2_ENV,
            {"tensor_parallel_size": 2, "distributed_executor_backend": "mp"},
            4,
            marks=pytest.mark.slow,
        ),
    ],
)
def test_register_runs_once_in_every_engine_process(
    label: str,
    env: dict[str, str],
    overrides: dict[str, object],
    expected: int,
    llm_kwargs: dict[str, object],
    run_python,
    tmp_path: Path,
) -> None:
    trace = tmp_path / "trace.tsv"
    run_python(SCRIPT.format(llm_kwargs={**llm_kwargs, **overrides}), env={**env, TRACE_ENV: str(trace)})
    lines = traced_processes(trace)
    assert len(lines) == expected, f"{label}: expected {expected} processes, got:\n{lines}"


def test_register_does_nothing_when_called_again(run_python, tmp_path: Path) -> None:
    trace = tmp_path / "trace.tsv"
    run_python(
        "from my_plugin import vllm_plugin\nvllm_plugin.register()\nvllm_plugin.register()\n",
        env={TRACE_ENV: str(trace)},
    )
    assert len(traced_processes(trace)) == 1
