"""MyKInt8ScaledMMLinearKernel selected and used inside a real vLLM engine (the CPU build is enough).

The tiny Llama is turned into a compressed-tensors int8 W8A8 checkpoint offline; vLLM's compressed-tensors
method asks the int8 kernel selector for every linear layer. With VLLM_DISABLED_KERNELS naming the in-tree
kernels, every layer must hold this kernel, its int8 weights, and a non-zero GEMM counter; its scores must
track vLLM on the dequantized float weights (the gap is activation quantization, which the float run lacks).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("vllm")

import vllm.envs as envs  # noqa: E402
from vllm_scaffold_testing.compressed import write_w8a8_checkpoint  # noqa: E402
from vllm_scaffold_testing.offline import (  # noqa: E402
    EngineRun,
    describe_layers,
    engine_run,
    greedy_token_ids,
    max_abs_difference,
)

from my_k.gemm.linear_kernel import disabled_kernels_value  # noqa: E402

pytestmark = pytest.mark.engine

PROMPTS = ["The quick brown fox jumps over the lazy dog.", "Tensor parallel workers each hold a shard"]
GREEDY_TOKENS = 4
# Per-token int8 activations against float activations, in float32.
LOGPROB_ATOL = 5e-2
LINEAR_LAYERS = ("qkv_proj", "o_proj", "gate_up_proj", "down_proj")
KERNEL = "MyKInt8ScaledMMLinearKernel"


@pytest.fixture(scope="module")
def checkpoints(tiny_llama: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("checkpoints")
    return {
        "quantized": write_w8a8_checkpoint(tiny_llama, root / "quantized"),
        "dequantized": write_w8a8_checkpoint(tiny_llama, root / "dequantized", dequantized=True),
    }


@pytest.fixture(scope="module")
def runs(module_llm, checkpoints: dict[str, Path]) -> dict[str, EngineRun]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VLLM_DISABLED_KERNELS", disabled_kernels_value("cpu"))
        envs.disable_envs_cache()  # the engine freezes envs once it starts: read the value set here
        kernel = engine_run(module_llm(model=str(checkpoints["quantized"])), PROMPTS, GREEDY_TOKENS)
    envs.disable_envs_cache()
    reference = engine_run(module_llm(model=str(checkpoints["dequantized"])), PROMPTS, GREEDY_TOKENS)
    return {"kernel": kernel, "reference": reference}


def test_every_linear_layer_selected_and_ran_the_kernel(runs: dict[str, EngineRun]) -> None:
    layers = {name: layer for name, layer in runs["kernel"].layers.items() if name.endswith(LINEAR_LAYERS)}
    assert len(layers) == 8, sorted(runs["kernel"].layers)
    for name, layer in layers.items():
        assert layer["method"] == "CompressedTensorsLinearMethod", (name, layer)
        assert layer["kernel"] == KERNEL and layer["weight_dtype"] == "torch.int8", (name, layer)
        # On CPU the harness sets TRITON_INTERPRET=1, so "auto" must have run the Triton GEMM.
        assert layer["calls"].get("triton", 0) > 0 and "torch" not in layer["calls"], (name, layer)


def test_scores_and_greedy_tokens_track_the_dequantized_reference(runs: dict[str, EngineRun]) -> None:
    assert not any(layer["kernel"] for layer in runs["reference"].layers.values())
    difference = max_abs_difference(runs["kernel"].logprobs, runs["reference"].logprobs)
    assert difference <= LOGPROB_ATOL, f"prompt log-probs differ by up to {difference:.3g}"
    assert runs["kernel"].tokens == runs["reference"].tokens


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cuda_engine_uses_the_triton_kernel(
    make_llm, checkpoints: dict[str, Path], disabled_kernels, dtype: str
) -> None:
    disabled_kernels(disabled_kernels_value("cuda"))
    llm = make_llm(model=str(checkpoints["quantized"]), dtype=dtype)
    tokens = greedy_token_ids(llm, PROMPTS, GREEDY_TOKENS)
    layers = llm.apply_model(describe_layers)[0]
    linear = [layer for name, layer in layers.items() if name.endswith(LINEAR_LAYERS)]
    assert all(len(row) == GREEDY_TOKENS for row in tokens)
    assert linear and all(layer["kernel"] == KERNEL for layer in linear)
    assert all(layer["calls"].get("triton", 0) > 0 for layer in linear)
