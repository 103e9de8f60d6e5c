"""`vllm.config.model:ModelConfig.get_vocab_size` is wrapped by my_patch: reached in the engine's processes,
and left alone with the reason when its parameters changed.

The in-process engine (shared by this module) shows the wrapper is applied by the general plugin and reached
by vLLM itself, with exactly the target's parameters. The mismatch tests run in a fresh interpreter, where
the target is not wrapped yet. The multiprocessing layouts (front end, engine core and worker processes; two
tensor-parallel workers) each start an engine in a fresh interpreter with the trace file set, send it a greedy
and a random-sampling request, and check that every process family in REACHED_IN called the wrapper; they
are marked slow: `pytest --slow`.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from vllm_scaffold_testing import TP2_ENV

from my_patch.patch import patch

pytestmark = pytest.mark.engine

# The processes vLLM calls the target in (the component's `reached_in` answer).
REACHED_IN = ["front-end", "engine-core", "worker"]
# The engine arguments under which vLLM calls the target in each of those processes.
ENGINE_ARGS: dict[str, object] = {"disable_log_stats": False, "enable_mfu_metrics": True}
# When its model-info cache has no entry for the model, vLLM inspects the model class in a short-lived
# subprocess (`python -m vllm.model_executor.models.registry`) that loads the general plugins too; it is not
# one of the engine's processes.
MODEL_INSPECTION = "vllm.model_executor.models.registry"

# A greedy and a random-sampling request (temperature > 0), so that code on either sampling path is called.
SCRIPT = """
from vllm import SamplingParams
from vllm_scaffold_testing.engine import shutdown_engines, start_llm

if __name__ == "__main__":
    llms = [start_llm(**{engine_kwargs!r})]
    try:
        params = [
            SamplingParams(temperature=0.0, max_tokens=4, ignore_eos=True),
            SamplingParams(temperature=0.8, seed=0, max_tokens=4, ignore_eos=True),
        ]
        outputs = llms[0].generate(["Hello world", "The quick brown fox"], params)
        assert all(output.outputs[0].token_ids for output in outputs), outputs
    finally:
        shutdown_engines(llms)
"""


def family(process_name: str) -> str:
    """The process family of a multiprocessing process name, as vLLM names its processes."""
    if process_name.startswith("EngineCore"):
        return "engine-core"
    if "Worker" in process_name:
        return "worker"
    return "front-end"


def traced(trace: Path) -> list[str]:
    """The families of the processes that reached the wrapper, one per process."""
    rows = [line.split("\t") for line in trace.read_text(encoding="utf-8").splitlines()]
    pids = [row[0] for row in rows]
    assert len(pids) == len(set(pids)), f"a process recorded the wrapper twice:\n{rows}"
    return [family(row[1]) for row in rows if row[2] != MODEL_INSPECTION]


def test_vllm_reaches_the_wrapper_in_the_engine(module_llm) -> None:
    llm = module_llm()
    llm.generate(["Hello world"])
    assert patch.original is not None, "the general plugin did not apply the patch"
    installed = patch.unwrap_descriptor(inspect.getattr_static(*patch.target_owner()))
    assert getattr(installed, patch.MARK, False), f"{patch.TARGET} is not the wrapper"
    assert patch.reached, f"vLLM never called {patch.TARGET} through the wrapper"


def test_the_wrapper_has_the_targets_parameters(module_llm) -> None:
    module_llm()
    assert patch.original is not None
    assert patch.parameters(patch.original) == patch.EXPECTED_PARAMETERS.get(
        patch.installed_release(), list(patch.EXPECTED_PARAMETERS.values())[-1]
    )
    wrapper = patch.patched_get_vocab_size
    assert patch.parameters(wrapper) == patch.parameters(patch.original)
    assert wrapper.__defaults__ == patch.original.__defaults__


MISMATCH = """
import pytest
from my_patch.patch import patch

release = patch.installed_release()
patch.EXPECTED_PARAMETERS[release] = ("self", "a_parameter_vllm_never_had")
patch.ON_MISMATCH = "{mode}"
{action}
assert patch.original is None, "the target was wrapped despite the mismatch"
assert patch.TARGET in message and release in message and "a_parameter_vllm_never_had" in message, message
print("MISMATCH:", message)
"""
RAISES = """
with pytest.raises(RuntimeError) as raised:
    patch.apply()
message = str(raised.value)
"""
SKIPS = """
import logging

class Collect(logging.Handler):
    def emit(self, record):
        records.append(record.getMessage())

records = []
logging.getLogger(patch.__name__).addHandler(Collect())
patch.apply()
assert len(records) == 1, records
message = records[0]
"""


@pytest.mark.parametrize(("mode", "action"), [("raise", RAISES), ("skip", SKIPS)], ids=["raise", "skip"])
def test_a_changed_target_is_left_alone_with_the_reason(mode: str, action: str, run_python) -> None:
    result = run_python(MISMATCH.format(mode=mode, action=action))
    assert "MISMATCH:" in result.stdout


LAYOUTS = [
    pytest.param(
        {"VLLM_ENABLE_V1_MULTIPROCESSING": "1"}, {}, 1, id="multiprocessing", marks=pytest.mark.slow
    ),
    pytest.param(
        TP2_ENV,
        {"tensor_parallel_size": 2, "distributed_executor_backend": "mp"},
        2,
        id="tp2-mp",
        marks=pytest.mark.slow,
    ),
]


@pytest.mark.parametrize(("env", "overrides", "workers"), LAYOUTS)
def test_every_process_that_calls_the_target_reaches_the_wrapper(
    env: dict[str, str],
    overrides: dict[str, object],
    workers: int,
    llm_kwargs: dict[str, object],
    run_python,
    tmp_path: Path,
) -> None:
    trace = tmp_path / "trace.tsv"
    engine_kwargs = {**llm_kwargs, **ENGINE_ARGS, **overrides}
    run_python(SCRIPT.format(engine_kwargs=engine_kwargs), env={**env, patch.TRACE_ENV: str(trace)})
    assert trace.exists(), f"no process called {patch.TARGET} (expected: {REACHED_IN})"
    families = traced(trace)
    for expected in REACHED_IN:
        assert expected in families, (
            f"no {expected} process reached the wrapper ({families}): if vLLM does not call the target "
            f"there, leave {expected} out of the reached_in answer"
        )
    if "worker" in REACHED_IN:
        assert families.count("worker") == workers, families
