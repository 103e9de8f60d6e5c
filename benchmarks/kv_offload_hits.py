"""Hit figures of the kv-offload seam's spec in vLLM's CPU engine, per store size.

    python benchmarks/kv_offload_hits.py [--capacities 8 16 32] [--prompts 6] [--order reversed|same]

Uses the golden kv-offload package (`generated_examples/kv-offload`, imported from its source tree and selected
with `spec_module_path`, so nothing is installed) and the tiny random-weight Llama the test harness builds. For
each store size (in blocks per worker) one in-process engine runs every prompt (four full 32-token blocks
each), empties vLLM's own prefix cache with `reset_prefix_cache()`, and runs them again, newest first by
default. It prints, for the second round, the prompt tokens served from the store, the blocks the manager
loaded, stored and evicted, and whether every prompt's greedy tokens equal the first round's. A store holding
every prompt's blocks serves all full blocks; a smaller one keeps the most recent prompts. With `--order same`
each prompt finds its first block evicted by the prompts after it and nothing is served: least-recently-used
eviction's known worst case, a cyclic scan larger than the store.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_SRC = ROOT / "generated_examples/kv-offload/src"
BLOCK_SIZE = 32
SENTENCE = "The quick brown fox jumps over the lazy dog near the river bank. "


def prompts(count: int) -> list[str]:
    """Distinct from their first block on, about 150 tokens each (four full blocks) with the tiny tokenizer."""
    return [f"Request {i}: " + SENTENCE * 6 for i in range(count)]


def kv_bytes_per_block(model: Path) -> int:
    config = json.loads((model / "config.json").read_text())
    head_dim = config["hidden_size"] // config["num_attention_heads"]
    return 2 * config["num_hidden_layers"] * BLOCK_SIZE * config["num_key_value_heads"] * head_dim * 4


def measure(model: Path, capacity: int, texts: list[str], reverse: bool) -> dict[str, object]:
    from vllm import SamplingParams
    from vllm.config import KVTransferConfig

    from vllm_scaffold_testing.engine import TINY_ENGINE_KWARGS, in_process_llm

    extra = {
        "spec_name": "MyOffloadOffloadingSpec",
        "spec_module_path": "my_offload.kv_offload.spec",
        "store_bytes": capacity * kv_bytes_per_block(model),
        "copy_backend": "torch",
    }
    transfer = KVTransferConfig(kv_connector="OffloadingConnector", kv_role="kv_both", kv_connector_extra_config=extra)
    greedy = SamplingParams(max_tokens=4, temperature=0.0, ignore_eos=True)
    kwargs = {**TINY_ENGINE_KWARGS, "max_num_seqs": 1}
    with in_process_llm(model=str(model), block_size=BLOCK_SIZE, kv_transfer_config=transfer, **kwargs) as llm:
        manager = llm.llm_engine.engine_core.engine_core.scheduler.connector.connector_scheduler.manager
        first = [llm.generate([text], greedy, use_tqdm=False)[0] for text in texts]
        llm.reset_prefix_cache()
        again = list(reversed(texts)) if reverse else texts
        second = [llm.generate([text], greedy, use_tqdm=False)[0] for text in again]
        if reverse:
            second.reverse()
        counters = manager.counters
        prompt_tokens = sum(len(out.prompt_token_ids) for out in second)
        return {
            "capacity": capacity,
            "full_blocks": sum((len(out.prompt_token_ids) - 1) // BLOCK_SIZE for out in second),
            "served": sum(out.num_cached_tokens for out in second),
            "prompt_tokens": prompt_tokens,
            "loaded": counters.blocks_loaded,
            "stored": counters.blocks_stored,
            "evicted": counters.blocks_evicted,
            "same_tokens": all(
                list(a.outputs[0].token_ids) == list(b.outputs[0].token_ids) for a, b in zip(first, second, strict=True)
            ),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacities", type=int, nargs="+", default=[8, 16, 32])
    parser.add_argument("--prompts", type=int, default=6)
    parser.add_argument("--order", choices=["reversed", "same"], default="reversed")
    args = parser.parse_args()
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    sys.path.insert(0, str(PACKAGE_SRC))
    from vllm_scaffold_testing.tiny_model import cached_tiny_llama

    cache = Path(os.environ.get("VLLMSCAFFOLD_CACHE", ROOT / ".venv/vllm-scaffold-cache"))
    model = cached_tiny_llama(cache)
    texts = prompts(args.prompts)
    order = f"second round ({args.order} order) after reset_prefix_cache()"
    print(f"{len(texts)} prompts, block size {BLOCK_SIZE}, {order}")
    print("store blocks | full blocks | tokens from store | blocks loaded | stored | evicted | same tokens")
    for capacity in args.capacities:
        row = measure(model, capacity, texts, reverse=args.order == "reversed")
        share = row["served"] / row["prompt_tokens"]
        print(
            f"{row['capacity']:>12} | {row['full_blocks']:>11} | {row['served']:>6} of {row['prompt_tokens']} "
            f"({share:.0%}) | {row['loaded']:>13} | {row['stored']:>6} | {row['evicted']:>7} | {row['same_tokens']}"
        )


if __name__ == "__main__":
    main()
