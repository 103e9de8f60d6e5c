"""MyOffloadOffloadingSpec inside vLLM's CPU engine: a prefix that left vLLM's own cache is loaded from the
host store.

One in-process engine (multiprocessing off: the engine core and the one worker run in the test process, so the
manager's and the worker's counters are read directly) runs the OffloadingConnector with this spec, selected
by the name the general plugin registered, and a store of six blocks. vLLM's own prefix cache is emptied
between runs with `reset_prefix_cache()`, which leaves the connector's store alone: whatever a run takes from
cache then came from the store. Every run must produce the greedy tokens of an engine without offloading. The
copies use the Triton kernel (under TRITON_INTERPRET=1 on CPU), so it is proven inside the engine as well.

The slow tier (`pytest --slow`) repeats the round trip with the engine core in its own process, where only the
general plugin's registration can make the name known.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("vllm")

from vllm import SamplingParams  # noqa: E402
from vllm.config import KVTransferConfig  # noqa: E402
from vllm.distributed.kv_transfer import get_kv_transfer_group  # noqa: E402

from my_offload.kv_offload.manager import MyOffloadOffloadingManager  # noqa: E402
from my_offload.kv_offload.registration import SPEC_NAME  # noqa: E402
from my_offload.kv_offload.worker import MyOffloadOffloadingWorker  # noqa: E402

pytestmark = pytest.mark.engine

BLOCK_SIZE = 32  # vLLM's CPU attention takes block sizes that are multiples of 32
STORE_BLOCKS = 6
PROMPTS = {
    "fox": "The quick brown fox jumps over the lazy dog near the river bank. " * 6,
    "hello": "Hello world, this is a small test of a key value cache that lives in host memory. " * 5,
}
GREEDY = SamplingParams(max_tokens=8, temperature=0.0, ignore_eos=True)


def kv_bytes_per_block(model: Path) -> int:
    """Bytes of one KV block of the tiny float32 model on one worker: K and V of every layer."""
    config = json.loads((model / "config.json").read_text())
    head_dim = config["hidden_size"] // config["num_attention_heads"]
    return 2 * config["num_hidden_layers"] * BLOCK_SIZE * config["num_key_value_heads"] * head_dim * 4


def transfer_config(model: Path) -> KVTransferConfig:
    extra = {
        "spec_name": SPEC_NAME,
        "store_bytes": STORE_BLOCKS * kv_bytes_per_block(model),
        "copy_backend": "triton",
    }
    return KVTransferConfig(
        kv_connector="OffloadingConnector", kv_role="kv_both", kv_connector_extra_config=extra
    )


def run(llm, label: str):
    (output,) = llm.generate([PROMPTS[label]], GREEDY, use_tqdm=False)
    return output


@pytest.fixture(scope="module")
def reference(module_llm) -> dict[str, list[int]]:
    """The greedy tokens of each prompt from an engine without offloading."""
    llm = module_llm(block_size=BLOCK_SIZE)
    return {label: list(run(llm, label).outputs[0].token_ids) for label in PROMPTS}


@pytest.fixture(scope="module")
def llm(module_llm, reference, tiny_llama: Path):
    return module_llm(block_size=BLOCK_SIZE, kv_transfer_config=transfer_config(tiny_llama))


def test_an_evicted_prefix_is_served_from_the_store_with_the_same_tokens(llm, reference) -> None:
    manager = llm.llm_engine.engine_core.engine_core.scheduler.connector.connector_scheduler.manager
    assert isinstance(manager, MyOffloadOffloadingManager), "the engine core is not using this spec"
    worker = get_kv_transfer_group().connector_worker.worker
    assert isinstance(worker, MyOffloadOffloadingWorker), "the worker is not using this spec"
    assert manager.store.capacity == STORE_BLOCKS

    first = run(llm, "fox")
    full_blocks = (len(first.prompt_token_ids) - 1) // BLOCK_SIZE
    assert 4 <= full_blocks < STORE_BLOCKS, "the prompt must span several blocks and fit the store"
    assert first.num_cached_tokens == 0 and list(first.outputs[0].token_ids) == reference["fox"]
    assert manager.counters.blocks_stored == full_blocks and manager.counters.blocks_loaded == 0

    llm.reset_prefix_cache()  # the prefix leaves vLLM's cache; the store keeps it
    again = run(llm, "fox")
    assert again.num_cached_tokens == full_blocks * BLOCK_SIZE, "the prefix was not loaded from the store"
    assert manager.counters.blocks_loaded == full_blocks
    assert worker.counters.blocks_loaded == full_blocks == worker.counters.blocks_stored
    assert list(again.outputs[0].token_ids) == reference["fox"], "tokens after loading differ"


def test_a_full_store_evicts_the_oldest_blocks_and_the_prompt_is_computed_again(llm, reference) -> None:
    manager = llm.llm_engine.engine_core.engine_core.scheduler.connector.connector_scheduler.manager
    llm.reset_prefix_cache()
    fox = run(llm, "fox")  # stored by the test above, or here when run alone
    fox_blocks = (len(fox.prompt_token_ids) - 1) // BLOCK_SIZE
    hello = run(llm, "hello")
    hello_blocks = (len(hello.prompt_token_ids) - 1) // BLOCK_SIZE
    assert list(hello.outputs[0].token_ids) == reference["hello"]
    assert manager.counters.blocks_evicted == fox_blocks + hello_blocks - STORE_BLOCKS, (
        "the store must free exactly the slots the second prompt needs"
    )

    llm.reset_prefix_cache()
    loaded_before = manager.counters.blocks_loaded
    recomputed = run(llm, "fox")
    assert recomputed.num_cached_tokens == 0, "fox's first block was evicted: nothing of it can be loaded"
    assert manager.counters.blocks_loaded == loaded_before
    assert list(recomputed.outputs[0].token_ids) == reference["fox"]


ENGINE_CORE_PROCESS = """
import json

from vllm import SamplingParams
from vllm.config import KVTransferConfig
from vllm_scaffold_testing.engine import shutdown_engines, start_llm

if __name__ == "__main__":
    llms = [start_llm(**{engine_kwargs!r}, kv_transfer_config=KVTransferConfig(**{transfer!r}))]
    params = SamplingParams(max_tokens=8, temperature=0.0, ignore_eos=True)
    try:
        runs = []
        for _ in range(2):
            (output,) = llms[0].generate([{prompt!r}], params, use_tqdm=False)
            tokens = list(output.outputs[0].token_ids)
            runs.append([output.num_cached_tokens, tokens, len(output.prompt_token_ids)])
            llms[0].reset_prefix_cache()
    finally:
        shutdown_engines(llms)
    print("RESULT", json.dumps(runs))
"""


@pytest.mark.slow
def test_the_engine_core_process_finds_the_spec_by_name(
    llm_kwargs, run_python, engine_env, reference, tiny_llama: Path
) -> None:
    transfer = transfer_config(tiny_llama)
    script = ENGINE_CORE_PROCESS.format(
        engine_kwargs={**llm_kwargs, "block_size": BLOCK_SIZE},
        transfer={
            key: getattr(transfer, key) for key in ("kv_connector", "kv_role", "kv_connector_extra_config")
        },
        prompt=PROMPTS["fox"],
    )
    completed = run_python(script, env={**engine_env, "VLLM_ENABLE_V1_MULTIPROCESSING": "1"})
    (first_cached, first_tokens, prompt_len), (cached, tokens, _) = json.loads(
        completed.stdout.split("RESULT", 1)[1]
    )
    assert first_cached == 0 and first_tokens == reference["fox"]
    assert cached == (prompt_len - 1) // BLOCK_SIZE * BLOCK_SIZE, (
        "the engine core process did not load the prefix"
    )
    assert tokens == reference["fox"]
