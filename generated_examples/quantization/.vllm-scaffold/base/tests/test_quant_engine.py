"""The `my_q` method inside a real vLLM engine (the CPU build is enough).

Three in-process engines on the tiny Llama, each started once for the whole module:
- reference: vLLM without quantization on the dequantized checkpoint (weights = int8 values x scales);
- online: `LLM(model=float checkpoint, quantization="my_q")`;
- checkpoint: the pre-quantized checkpoint, detected from its config.json alone.
Each quantized engine must hold int8 weights in its linear layers, must have sent them through
MyQLinearMethod (its per-backend counters), and must score the prompts like the reference. A
tensor-parallel run (marked slow: `pytest --slow`) then loads the pre-quantized shards into two workers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("vllm")

from vllm_scaffold_testing import TINY_ENGINE_KWARGS, TP2_ENV  # noqa: E402
from vllm_scaffold_testing.offline import (  # noqa: E402
    EngineRun,
    describe_layers,
    engine_run,
    greedy_token_ids,
    max_abs_difference,
)

from my_q.quant.format import METHOD_NAME  # noqa: E402
from my_q.quant.quantize import quantize_checkpoint  # noqa: E402

pytestmark = pytest.mark.engine

PROMPTS = ["The quick brown fox jumps over the lazy dog.", "Tensor parallel workers each hold a shard"]
GREEDY_TOKENS = 4
# float32 everywhere: the only differences left are summation orders of the GEMMs.
LOGPROB_ATOL = 2e-3
QUANTIZED_LAYERS = ("qkv_proj", "o_proj", "gate_up_proj", "down_proj")


@pytest.fixture(scope="module")
def checkpoints(tiny_llama: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("checkpoints")
    quantize_checkpoint(tiny_llama, root / "int8")
    quantize_checkpoint(tiny_llama, root / "dequantized", dequantized=True)
    return {"int8": root / "int8", "dequantized": root / "dequantized"}


@pytest.fixture(scope="module")
def runs(module_llm, checkpoints: dict[str, Path]) -> dict[str, EngineRun]:
    engines = {
        "reference": module_llm(model=str(checkpoints["dequantized"])),
        "online": module_llm(quantization=METHOD_NAME),
        "checkpoint": module_llm(model=str(checkpoints["int8"])),
    }
    return {path: engine_run(llm, PROMPTS, GREEDY_TOKENS) for path, llm in engines.items()}


@pytest.mark.parametrize("path", ["online", "checkpoint"])
def test_linear_layers_hold_int8_and_run_the_method(runs: dict[str, EngineRun], path: str) -> None:
    layers = runs[path].layers
    quantized = {name: layer for name, layer in layers.items() if name.endswith(QUANTIZED_LAYERS)}
    assert len(quantized) == 8, sorted(layers)
    for name, layer in quantized.items():
        assert layer["method"] == "MyQLinearMethod", (name, layer)
        assert layer["weight_dtype"] == "torch.int8", (name, layer)
        # On CPU the harness sets TRITON_INTERPRET=1, so "auto" must have picked the Triton kernel.
        assert layer["calls"].get("triton", 0) > 0 and "torch" not in layer["calls"], (name, layer)
    assert layers["lm_head"]["method"] == "UnquantizedEmbeddingMethod"  # ignored by default
    assert layers["lm_head"]["weight_dtype"] == "torch.float32"


def test_reference_is_unquantized(runs: dict[str, EngineRun]) -> None:
    methods = {layer["method"] for layer in runs["reference"].layers.values()}
    assert "MyQLinearMethod" not in methods


@pytest.mark.parametrize("path", ["online", "checkpoint"])
def test_scores_and_greedy_tokens_match_the_dequantized_reference(runs: dict[str, EngineRun], path: str):
    reference, quantized = runs["reference"], runs[path]
    difference = max_abs_difference(quantized.logprobs, reference.logprobs)
    assert difference <= LOGPROB_ATOL, f"{path}: prompt log-probs differ by up to {difference:.3g}"
    assert quantized.tokens == reference.tokens


TP_SCRIPT = """
import json
from vllm import LLM
from vllm_scaffold_testing.offline import describe_layers, prompt_logprobs

if __name__ == "__main__":
    llm = LLM(**{kwargs!r})
    logprobs = prompt_logprobs(llm, {prompts!r})
    print("RESULT " + json.dumps({{"logprobs": logprobs, "workers": llm.apply_model(describe_layers)}}))
"""


@pytest.mark.slow
def test_tensor_parallel_checkpoint_matches_reference(
    runs: dict[str, EngineRun], checkpoints: dict[str, Path], run_python
) -> None:
    kwargs = {**TINY_ENGINE_KWARGS, "model": str(checkpoints["int8"]), "tensor_parallel_size": 2}
    script = TP_SCRIPT.format(kwargs={**kwargs, "distributed_executor_backend": "mp"}, prompts=PROMPTS)
    # Two worker processes: apply_model pickles describe_layers (by reference) to send it to them.
    completed = run_python(script, env={**TP2_ENV, "VLLM_ALLOW_INSECURE_SERIALIZATION": "1"})
    line = next(line for line in completed.stdout.splitlines() if line.startswith("RESULT "))
    result = json.loads(line.removeprefix("RESULT "))
    assert len(result["workers"]) == 2
    for layers in result["workers"]:
        quantized = [layer for name, layer in layers.items() if name.endswith(QUANTIZED_LAYERS)]
        assert len(quantized) == 8
        for layer in quantized:
            assert layer["weight_dtype"] == "torch.int8" and layer["calls"].get("triton", 0) > 0, layer
    difference = max_abs_difference(result["logprobs"], runs["reference"].logprobs)
    assert difference <= LOGPROB_ATOL, f"tensor parallel: prompt log-probs differ by up to {difference:.3g}"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cuda_engine_uses_the_triton_kernel(make_llm, dtype: str) -> None:
    llm = make_llm(quantization=METHOD_NAME, dtype=dtype)
    tokens = greedy_token_ids(llm, PROMPTS, GREEDY_TOKENS)
    layers = llm.apply_model(describe_layers)[0]
    assert all(len(row) == GREEDY_TOKENS for row in tokens)
    quantized = [layer for name, layer in layers.items() if name.endswith(QUANTIZED_LAYERS)]
    assert quantized and all(layer["calls"].get("triton", 0) > 0 for layer in quantized)
