"""MyAttnBackend inside a real vLLM engine: the same greedy tokens as vLLM's own backend.

The CPU platform always picks its own backend (CPU_ATTN) and ignores `--attention-backend`; these tests send
it to MyAttnBackend with the harness's `cpu_attention_override` fixture, which overrides CPU_ATTN
in the test process (and, through a test-only general plugin, in engine subprocesses). Nothing in the
package does that: in production the backend is selected by name on CUDA.

Float32 on the tiny model, block size 32, prompts from 1 token to four pages long, scheduled together (mixed
prefill and decode batches) and one at a time. The reference tokens come from vLLM's in-tree CPU backend in
an in-process engine started before any override. The backend's CALLS counter proves its metadata builder
and impl ran, so a silent fall-back to CPU_ATTN cannot pass. The Triton kernels inside the engine and the
tensor-parallel runs (two worker processes, started by the multiprocessing executor or as Ray actors) are
marked slow: `pytest --slow` runs them; the Ray one needs Ray (the `test` extra installs it) and skips
without it.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from vllm_scaffold_testing import TINY_ENGINE_KWARGS, TP2_ENV, engine_environment, in_process_llm, run_python
from vllm_scaffold_testing.scale_out import RAY_TP2_KWARGS

from my_attn.attention.backend import CALLS, KERNELS_ENV, MyAttnMetadataBuilder
from my_attn.attention.kernels import interpreting as is_interpreting
from my_attn.attention.registration import BACKEND_NAME, BACKEND_PATH

pytestmark = pytest.mark.engine

# Pages of 32 tokens (CPU_ATTN's minimum) and a small cache: the Triton interpreter copies every tensor
# argument, the whole cache included, on each launch.
ENGINE_OPTIONS = {"block_size": 32, "kv_cache_memory_bytes": 2 << 20}
PROMPT_LENGTHS = [1, 7, 31, 32, 33, 70, 101]
# The prompts the Triton path runs under the interpreter (about a millisecond per program): still a decode,
# a prompt ending one token past a page and one spanning three pages.
INTERPRETER_PROMPTS = [0, 4, 5]
MAX_TOKENS = 8

SCRIPT = """
import contextlib
import json

from vllm import LLM, SamplingParams
from vllm.inputs import TokensPrompt
from vllm_scaffold_testing.engine import shutdown_engines
from vllm_scaffold_testing.scale_out import local_ray_cluster, ray_actor_id

from my_attn.attention.backend import worker_calls

if __name__ == "__main__":
    with {cluster}:
        llm = LLM(**{llm_kwargs!r})
        prompts = [TokensPrompt(prompt_token_ids=ids) for ids in {prompts!r}]
        params = SamplingParams(max_tokens={max_tokens}, temperature=0.0, ignore_eos=True)
        outputs = llm.generate(prompts, params, use_tqdm=False)
        tokens = [list(output.outputs[0].token_ids) for output in outputs]
        calls, actors = llm.apply_model(worker_calls), llm.apply_model(ray_actor_id)
        print("RESULT " + json.dumps({{"tokens": tokens, "calls": calls, "ray_actors": actors}}))
        shutdown_engines([llm])
"""


def prompt_ids(model_dir: Path) -> list[list[int]]:
    vocab_size = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))["vocab_size"]
    rng = random.Random(0)
    return [[rng.randrange(3, vocab_size) for _ in range(length)] for length in PROMPT_LENGTHS]


def greedy_in_subprocess(
    model_dir: Path, overrides: dict[str, Any], env: dict[str, str], cluster: str = "contextlib.nullcontext()"
) -> dict[str, Any]:
    """Greedy tokens of PROMPT_LENGTHS from a fresh interpreter, the backend's CALLS in each worker and the
    Ray actor each worker is (None outside Ray). `cluster` is the context the engine runs in."""
    kwargs = {"model": str(model_dir), **TINY_ENGINE_KWARGS, **ENGINE_OPTIONS, **overrides}
    code = SCRIPT.format(
        cluster=cluster, llm_kwargs=kwargs, prompts=prompt_ids(model_dir), max_tokens=MAX_TOKENS
    )
    completed = run_python(code, env=engine_environment(env))
    line = next(line for line in completed.stdout.splitlines() if line.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


@pytest.fixture(scope="module")
def cpu_attn_tokens(tiny_llama: Path, plugin_site: Path | None) -> list[list[int]]:
    """vLLM's own CPU backend on the same prompts: the tokens to match."""
    before = CALLS.copy()
    with in_process_llm(**{"model": str(tiny_llama), **TINY_ENGINE_KWARGS, **ENGINE_OPTIONS}) as llm:
        tokens = greedy(llm, prompt_ids(tiny_llama))
    assert CALLS == before, "the reference run must not touch MyAttnBackend"
    return tokens


def greedy(llm: Any, prompts: list[list[int]]) -> list[list[int]]:
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    params = SamplingParams(max_tokens=MAX_TOKENS, temperature=0.0, ignore_eos=True)
    outputs = llm.generate([TokensPrompt(prompt_token_ids=ids) for ids in prompts], params, use_tqdm=False)
    return [list(output.outputs[0].token_ids) for output in outputs]


def generate_both_ways(llm: Any, prompts: list[list[int]]) -> tuple[list[list[int]], list[list[int]]]:
    """All prompts in one call (mixed prefill/decode batches), then each prompt on its own."""
    together = greedy(llm, prompts)
    alone = [greedy(llm, [ids])[0] for ids in prompts]
    return together, alone


# The Triton path inside the engine runs under the interpreter on CPU (slow: `pytest --slow`); the kernel
# tests check the same kernels directly in the default run.
@pytest.mark.parametrize("kernels", ["torch", pytest.param("triton", marks=pytest.mark.slow)])
def test_greedy_tokens_match_cpu_attn(
    kernels: str,
    cpu_attn_tokens: list[list[int]],
    tiny_llama: Path,
    make_llm,
    cpu_attention_override,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cpu_attention_override(BACKEND_PATH)
    monkeypatch.setenv(KERNELS_ENV, kernels)
    if kernels == "triton":
        # Split every decode over several programs even at these short contexts, so split-K runs too.
        monkeypatch.setattr(MyAttnMetadataBuilder, "split_target_programs", 64)
        monkeypatch.setattr(MyAttnMetadataBuilder, "min_tokens_per_split", 16)
    chosen = INTERPRETER_PROMPTS if kernels == "triton" and is_interpreting() else range(len(PROMPT_LENGTHS))
    prompts = [prompt_ids(tiny_llama)[i] for i in chosen]
    expected = [cpu_attn_tokens[i] for i in chosen]
    before = CALLS.copy()
    llm = make_llm(**ENGINE_OPTIONS)
    together, alone = generate_both_ways(llm, prompts)
    ran = CALLS - before

    assert ran["build"] > 0, "the engine never built MyAttnMetadata: it fell back to another backend"
    assert ran[kernels] > 0 and ran["kv_update"] > 0
    assert ran["triton" if kernels == "torch" else "torch"] == 0
    if kernels == "triton":
        assert ran["split_decode"] > 0
    assert together == expected
    assert alone == expected


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["mp", "ray"])
def test_tensor_parallel_workers_give_the_same_tokens(
    executor: str,
    cpu_attn_tokens: list[list[int]],
    tiny_llama: Path,
    cpu_attention_override,
    request: pytest.FixtureRequest,
) -> None:
    # Two workers, each with half of the query and KV heads; both must run this backend. Under Ray they are
    # actors of a cluster the script's front end starts (RAY_TP2_KWARGS, the harness's `ray_engine_env`).
    env = {**TP2_ENV, **cpu_attention_override(BACKEND_PATH), KERNELS_ENV: "torch"}
    env["VLLM_ALLOW_INSECURE_SERIALIZATION"] = "1"  # apply_model ships a function to the workers
    overrides: dict[str, Any] = {"tensor_parallel_size": 2, "distributed_executor_backend": "mp"}
    cluster = "contextlib.nullcontext()"
    if executor == "ray":
        ray_env = request.getfixturevalue("ray_engine_env")
        env = {**ray_env, **env, "PYTHONPATH": os.pathsep.join([env["PYTHONPATH"], ray_env["PYTHONPATH"]])}
        overrides, cluster = RAY_TP2_KWARGS, "local_ray_cluster()"
    result = greedy_in_subprocess(tiny_llama, overrides, env, cluster)
    assert len(result["calls"]) == 2
    for worker in result["calls"]:
        assert worker.get("build", 0) > 0 and worker.get("torch", 0) > 0, result["calls"]
    # The counters came from two distinct Ray actors (or, with mp, from workers that are not actors).
    expected_actors = 2 if executor == "ray" else 0
    assert len({actor for actor in result["ray_actors"] if actor}) == expected_actors, result["ray_actors"]
    assert result["tokens"] == cpu_attn_tokens


@pytest.mark.gpu
def test_cuda_engine_selected_by_name_matches_flash_attn(tiny_llama: Path, make_llm) -> None:
    # On CUDA the backend is chosen the production way: by name. float16, which FLASH_ATTN supports.
    overrides = {**ENGINE_OPTIONS, "dtype": "float16", "block_size": 16}
    flash_attn = greedy_in_subprocess(tiny_llama, {**overrides, "attention_backend": "FLASH_ATTN"}, {})
    expected = flash_attn["tokens"]
    before = CALLS.copy()
    llm = make_llm(attention_backend=BACKEND_NAME, **overrides)
    together, alone = generate_both_ways(llm, prompt_ids(tiny_llama))
    ran = CALLS - before
    assert ran["build"] > 0 and ran["triton"] > 0
    # Two float16 backends round differently; a near-tie in the random tiny model may flip a late token.
    for got in (together, alone):
        assert [ids[0] for ids in got] == [ids[0] for ids in expected]
        agreement = sum(a == b for x, y in zip(got, expected, strict=True) for a, b in zip(x, y, strict=True))
        assert agreement >= 0.9 * len(PROMPT_LENGTHS) * MAX_TOKENS


# The CUDA-graph mode the declared support (NEVER) runs under: vLLM's piecewise graphs, which leave
# attention out of the capture (vLLM downgrades or refuses full graphs for a backend that declares NEVER).
CUDAGRAPH_MODE = "PIECEWISE"


@pytest.mark.gpu
def test_cuda_graphs_give_the_eager_tokens(tiny_llama: Path) -> None:
    # The same engine twice, eager and with CUDA graphs captured (a few sizes, to keep the capture short).
    overrides = {**ENGINE_OPTIONS, "dtype": "float16", "block_size": 16, "attention_backend": BACKEND_NAME}
    eager = greedy_in_subprocess(tiny_llama, overrides, {})
    graphs_config = {"cudagraph_mode": CUDAGRAPH_MODE, "cudagraph_capture_sizes": [1, 2, 4, 8]}
    graphs = greedy_in_subprocess(
        tiny_llama, {**overrides, "enforce_eager": False, "compilation_config": graphs_config}, {}
    )
    assert graphs["tokens"] == eager["tokens"]
    (eager_calls,), (graph_calls,) = eager["calls"], graphs["calls"]
    assert graph_calls.get("build", 0) > 0 and graph_calls.get("triton", 0) > 0
    # Attention runs outside the piecewise graphs: one forward per layer and metadata build, as when eager.
    assert graph_calls["triton"] / graph_calls["build"] == eager_calls["triton"] / eager_calls["build"]
