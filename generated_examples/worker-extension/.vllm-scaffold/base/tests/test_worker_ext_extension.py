"""my_rl_sync's worker extension inside a real vLLM engine: mixed into the worker, answering collective_rpc.

In process (multiprocessing off) the one worker runs in the test process, so one shared engine serves the
weight-sync round trip. The slow tier (`pytest --slow`) starts the layouts RL frameworks run, each in a fresh
interpreter: the engine core in its own process, two tensor-parallel workers with multiprocessing, and two on
Ray; every rank must answer. The Ray layout needs Ray, which the `test` extra installs
(vllm-scaffold-testing[ray]); where Ray is missing it skips and says so.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("vllm")

from safetensors.torch import load_file, save_file  # noqa: E402
from vllm import SamplingParams  # noqa: E402
from vllm_scaffold_testing import TP2_ENV  # noqa: E402
from vllm_scaffold_testing.scale_out import RAY_TP2_KWARGS  # noqa: E402

pytestmark = pytest.mark.engine

EXTENSION = "my_rl_sync.worker_ext.extension.MyRlSyncWorkerExtension"
PROMPTS = ["Hello world", "The quick brown fox"]
GREEDY = SamplingParams(max_tokens=8, temperature=0.0, ignore_eos=True)
# The final norm's weight: negated, it flips the sign of every logit, so greedy decoding must change.
NORM = "model.norm.weight"
CHECKED = [NORM, "model.embed_tokens.weight"]


def greedy_tokens(llm) -> list[list[int]]:
    return [list(out.outputs[0].token_ids) for out in llm.generate(PROMPTS, GREEDY, use_tqdm=False)]


@pytest.fixture(scope="module")
def llm(module_llm):
    return module_llm(worker_extension_cls=EXTENSION)


def test_the_one_worker_answers_from_this_process(llm) -> None:
    (identity,) = llm.collective_rpc("report_identity")
    assert identity["rank"] == 0 and identity["tp_rank"] == 0 and identity["pp_rank"] == 0
    assert identity["pid"] == os.getpid(), "multiprocessing is off: the worker is this process"


def test_a_weight_update_changes_the_output_and_the_original_weights_restore_it(
    llm, tiny_llama: Path, tmp_path: Path
) -> None:
    # Only the norm travels: on the CPU backend the linear layers' weights were repacked at load and cannot
    # be reloaded in place (see load_weights_from_file).
    norm = load_file(tiny_llama / "model.safetensors")[NORM]
    original, updated = tmp_path / "original.safetensors", tmp_path / "updated.safetensors"
    save_file({NORM: norm}, original)
    save_file({NORM: -norm}, updated)
    tokens_before = greedy_tokens(llm)
    (checksums_before,) = llm.collective_rpc("weight_checksums")

    (loaded,) = llm.collective_rpc("load_weights_from_file", args=(str(updated),))
    llm.reset_prefix_cache()
    assert NORM in loaded
    (checksums,) = llm.collective_rpc("weight_checksums", args=([NORM],))
    assert checksums[NORM] != checksums_before[NORM]
    assert greedy_tokens(llm) != tokens_before, "the updated weights did not reach the model"

    llm.collective_rpc("load_weights_from_file", args=(str(original),))
    llm.reset_prefix_cache()
    assert llm.collective_rpc("weight_checksums") == [checksums_before]
    assert greedy_tokens(llm) == tokens_before


def test_an_unknown_parameter_name_is_an_error_from_the_worker(llm) -> None:
    with pytest.raises(Exception, match="no parameters named"):
        llm.collective_rpc("weight_checksums", args=(["model.no_such.weight"],))


CLASHING = """
from my_rl_sync.worker_ext.extension import (
    MyRlSyncWorkerExtension,
)


class ClashingExtension(MyRlSyncWorkerExtension):
    def load_model(self) -> None:  # the worker's own method: vLLM refuses the extension
        raise AssertionError("never called")
"""

REFUSED = """
from vllm import LLM

if __name__ == "__main__":
    try:
        LLM(**{engine_kwargs!r})
    except Exception as error:
        print("REFUSED", type(error).__name__, error)
    else:
        raise SystemExit("the engine started with a clashing extension")
"""


@pytest.mark.slow
def test_an_extension_method_named_like_a_worker_method_stops_the_engine(
    llm_kwargs, run_python, engine_env, tmp_path: Path
) -> None:
    (tmp_path / "clashing_extension.py").write_text(CLASHING, encoding="utf-8")
    kwargs = {**llm_kwargs, "worker_extension_cls": "clashing_extension.ClashingExtension"}
    env = {**engine_env, "PYTHONPATH": os.pathsep.join([str(tmp_path), engine_env.get("PYTHONPATH", "")])}
    completed = run_python(REFUSED.format(engine_kwargs=kwargs), env=env)
    assert "REFUSED" in completed.stdout, completed.stdout[-4000:]
    assert "already has an attribute load_model" in completed.stdout + completed.stderr


LAYOUT_SCRIPT = """
import contextlib
import json
import os

from vllm_scaffold_testing.engine import shutdown_engines, start_llm
from vllm_scaffold_testing.scale_out import local_ray_cluster

if __name__ == "__main__":
    with {cluster}:
        llms = [start_llm(**{engine_kwargs!r})]
        try:
            identities = llms[0].collective_rpc("report_identity")
            checksums = llms[0].collective_rpc("weight_checksums", args=({checked!r},))
        finally:
            shutdown_engines(llms)
    print("RESULT", json.dumps(dict(front_end=os.getpid(), identities=identities, checksums=checksums)))
"""

LAYOUTS = [
    pytest.param({"VLLM_ENABLE_V1_MULTIPROCESSING": "1"}, {}, None, id="multiprocessing"),
    pytest.param(
        TP2_ENV, {"tensor_parallel_size": 2, "distributed_executor_backend": "mp"}, None, id="tp2-mp"
    ),
    pytest.param({}, RAY_TP2_KWARGS, "local", id="tp2-ray"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("env", "overrides", "ray"), LAYOUTS)
def test_every_rank_answers_in_each_layout(
    env: dict[str, str],
    overrides: dict[str, object],
    ray: str | None,
    llm_kwargs,
    run_python,
    request: pytest.FixtureRequest,
) -> None:
    cluster = "contextlib.nullcontext()"
    if ray is not None:
        env = {**request.getfixturevalue("ray_engine_env"), **env}
        cluster = "local_ray_cluster()"
    engine_kwargs = {**llm_kwargs, **overrides, "worker_extension_cls": EXTENSION}
    script = LAYOUT_SCRIPT.format(cluster=cluster, engine_kwargs=engine_kwargs, checked=CHECKED)
    completed = run_python(script, env=env)
    result = json.loads(completed.stdout.split("RESULT", 1)[1])
    identities, checksums = result["identities"], result["checksums"]
    ranks = overrides.get("tensor_parallel_size", 1)
    assert [identity["rank"] for identity in identities] == list(range(ranks))
    assert [identity["tp_rank"] for identity in identities] == list(range(ranks))
    pids = {identity["pid"] for identity in identities}
    assert len(pids) == ranks and result["front_end"] not in pids, "each rank is a process of its own"
    # The final norm is replicated on every rank; the embedding is split by vocabulary across ranks.
    assert len({sums[NORM] for sums in checksums}) == 1
    assert len({sums["model.embed_tokens.weight"] for sums in checksums}) == ranks
