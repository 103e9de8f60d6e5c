"""MyKvConnector in vLLM's CPU engine: what one engine stores, a fresh engine loads.

Run 1 happens in a fresh interpreter (its own engine, its own process) and stores the KV of prompts several
blocks long. Run 2 is an in-process engine in the test process on the same store directory: it reports the
prompt tokens it took from disk (`num_cached_tokens`) and produces the same greedy tokens. The copies use
the Triton kernels (under TRITON_INTERPRET=1 on CPU), so they are proven inside the engine as well.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("vllm")

from vllm import SamplingParams  # noqa: E402
from vllm.config import KVTransferConfig  # noqa: E402
from vllm.v1.request import Request  # noqa: E402

from my_kv.kv_connector.connector import MyKvConnector  # noqa: E402
from my_kv.kv_connector.registration import CONNECTOR_NAME  # noqa: E402

pytestmark = pytest.mark.engine

BLOCK_SIZE = 32
MAX_TOKENS = 8
PROMPTS = {
    "fox": "The quick brown fox jumps over the lazy dog near the river bank. " * 6,
    "hello": "Hello world, this is a small test of a key value cache that lives on a disk. " * 4,
}

RUN_1 = """
import json
from vllm import LLM, SamplingParams
from vllm.config import KVTransferConfig

if __name__ == "__main__":
    llm = LLM(**{llm_kwargs!r}, kv_transfer_config=KVTransferConfig(**{transfer!r}))
    params = SamplingParams(max_tokens={max_tokens}, temperature=0.0, ignore_eos=True)
    outputs = llm.generate({prompts!r}, params)
    print("RESULT", json.dumps([[o.prompt_token_ids, list(o.outputs[0].token_ids), o.num_cached_tokens]
                                 for o in outputs]))
"""


def transfer_config(store: Path) -> dict:
    return {
        "kv_connector": CONNECTOR_NAME,
        "kv_role": "kv_both",
        "kv_connector_extra_config": {"storage_dir": str(store), "copy_backend": "triton"},
    }


def generate(llm, prompt: str):
    params = SamplingParams(max_tokens=MAX_TOKENS, temperature=0.0, ignore_eos=True)
    (output,) = llm.generate([prompt], params)
    return output


def scheduler_state(connector: MyKvConnector) -> tuple:
    return (dict(connector._requests), dict(connector._pending_loads), dict(connector._save_plans))


def test_fresh_engine_loads_stored_prefix_blocks(
    llm_kwargs: dict, run_python, make_llm, tmp_path: Path
) -> None:
    store = tmp_path / "kv-store"
    kwargs = {**llm_kwargs, "block_size": BLOCK_SIZE}

    # Run 1, in its own process: nothing stored yet, so nothing is loaded; entries are written.
    script = RUN_1.format(
        llm_kwargs=kwargs,
        transfer=transfer_config(store),
        prompts=list(PROMPTS.values()),
        max_tokens=MAX_TOKENS,
    )
    completed = run_python(script)
    result_line = next(line for line in completed.stdout.splitlines() if line.startswith("RESULT "))
    run_1 = dict(zip(PROMPTS, json.loads(result_line.removeprefix("RESULT ")), strict=True))
    stored_tokens = {}
    for label, (prompt_ids, _, cached) in run_1.items():
        assert len(prompt_ids) > 4 * BLOCK_SIZE, f"prompt {label!r} must span several blocks"
        assert cached == 0, f"run 1 found cached tokens for {label!r} in an empty store"
        stored_tokens[label] = (len(prompt_ids) - 1) // BLOCK_SIZE * BLOCK_SIZE
    manifests = sorted(store.rglob("rank0.json"))
    assert len(manifests) == len(PROMPTS), f"expected one entry per prompt, found {manifests}"

    # Run 2: a fresh engine in this process, same store.
    llm = make_llm(**kwargs, kv_transfer_config=KVTransferConfig(**transfer_config(store)))
    scheduler = llm.llm_engine.engine_core.engine_core.scheduler
    connector = scheduler.connector
    assert isinstance(connector, MyKvConnector), "the engine core is not using the generated connector"

    fox = generate(llm, PROMPTS["fox"])
    assert fox.num_cached_tokens == stored_tokens["fox"], "run 2 did not load the stored prefix"
    assert list(fox.outputs[0].token_ids) == run_1["fox"][1], "tokens after loading differ from run 1"

    # get_num_new_matched_tokens may be asked several times per request: same answer, nothing changed.
    probe = Request("probe", run_1["hello"][0], SamplingParams(max_tokens=1), None)
    before_state, before_files = scheduler_state(connector), sorted(store.rglob("*"))
    first = connector.get_num_new_matched_tokens(probe, 0)
    second = connector.get_num_new_matched_tokens(probe, 0)
    assert first == second == (stored_tokens["hello"], False)
    assert scheduler_state(connector) == before_state and sorted(store.rglob("*")) == before_files
    beyond_first_block = stored_tokens["hello"] - BLOCK_SIZE
    assert connector.get_num_new_matched_tokens(probe, BLOCK_SIZE) == (beyond_first_block, False)

    # A truncated entry is a miss: the prompt is recomputed, with the same tokens, and no error.
    hello_key = connector.request_keys(probe, stored_tokens["hello"] // BLOCK_SIZE)[-1]
    layer_file = next(connector.store.entry_dir(hello_key).glob("rank0-*.kv"))
    with open(layer_file, "r+b") as handle:
        handle.truncate(layer_file.stat().st_size - 1)
    assert connector.get_num_new_matched_tokens(probe, 0) == (0, False)
    hello = generate(llm, PROMPTS["hello"])
    assert hello.num_cached_tokens == 0
    assert list(hello.outputs[0].token_ids) == run_1["hello"][1]
