"""MyDecoderForCausalLM inside vLLM: registered lazily, loads its own checkpoint, generates like vLLM's Llama.

The checkpoint is random (written offline by `checkpoint.write_checkpoint` with the harness's tiny
tokenizer); `as_llama_checkpoint` lays the same weights out as a transformers Llama checkpoint. In float32
the two architectures compute the same function, so vLLM's own Llama on the second checkpoint (an engine in
this process) is the reference for greedy tokens: in this process, and with tensor_parallel_size=2 in fresh
processes (marked slow: `pytest --slow` runs it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from vllm_scaffold_testing import TINY_ENGINE_KWARGS, TP2_ENV, engine_environment, in_process_llm, run_python

from my_decoder.modeling.checkpoint import as_llama_checkpoint, random_weights, write_checkpoint
from my_decoder.modeling.registration import ARCHITECTURE, MODEL_CLASS

pytestmark = pytest.mark.engine

PROMPTS = ["Hello world", "The quick brown fox", "Tensor parallel workers each hold"]
MAX_TOKENS = 8

GENERATE = """
import json
from vllm import LLM, SamplingParams

if __name__ == "__main__":
    llm = LLM(**{kwargs!r})
    outputs = llm.generate({prompts!r}, SamplingParams(max_tokens={max_tokens}, temperature=0.0))
    print("TOKENS=" + json.dumps([list(output.outputs[0].token_ids) for output in outputs]))
"""


def greedy_tokens(llm) -> list[list[int]]:
    from vllm import SamplingParams

    outputs = llm.generate(PROMPTS, SamplingParams(max_tokens=MAX_TOKENS, temperature=0.0))
    return [list(output.outputs[0].token_ids) for output in outputs]


def generate_in_fresh_process(model: Path, env: dict[str, str] | None = None, **overrides: object) -> list:
    kwargs = {"model": str(model), **TINY_ENGINE_KWARGS, **overrides}
    code = GENERATE.format(kwargs=kwargs, prompts=PROMPTS, max_tokens=MAX_TOKENS)
    completed = run_python(code, env=engine_environment(env))
    (line,) = [line for line in completed.stdout.splitlines() if line.startswith("TOKENS=")]
    return json.loads(line.removeprefix("TOKENS="))


@pytest.fixture(scope="module")
def checkpoints(tiny_llama: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(this architecture's checkpoint, the same weights as a Llama checkpoint)."""
    root = tmp_path_factory.mktemp("checkpoints")
    ours = write_checkpoint(root / "ours", tokenizer_dir=tiny_llama, seed=7)
    return ours, as_llama_checkpoint(ours, root / "llama")


@pytest.fixture(scope="module")
def llama_tokens(checkpoints: tuple[Path, Path]) -> list[list[int]]:
    """Greedy tokens of vLLM's own LlamaForCausalLM on the Llama-layout copy of the weights."""
    with in_process_llm(model=str(checkpoints[1]), **TINY_ENGINE_KWARGS) as llm:
        assert llm.apply_model(lambda model: type(model).__name__) == ["LlamaForCausalLM"]
        return greedy_tokens(llm)


def test_registration_is_lazy_and_adds_a_new_architecture() -> None:
    from vllm.model_executor.models.registry import _VLLM_MODELS, ModelRegistry

    from my_decoder.modeling.registration import register

    assert ARCHITECTURE not in _VLLM_MODELS, "MyDecoderForCausalLM would replace vLLM's own model"
    register()
    entry = ModelRegistry.models[ARCHITECTURE]
    # The lazy form: vLLM keeps the module and class names and imports them only where the model is built.
    assert type(entry).__name__ == "_LazyRegisteredModel"
    assert f"{entry.module_name}:{entry.class_name}" == MODEL_CLASS


def test_every_checkpoint_tensor_maps_to_a_parameter() -> None:
    from my_decoder.modeling.checkpoint import TINY_SIZES
    from my_decoder.modeling.model import parameter_for

    names = random_weights({**TINY_SIZES, "vocab_size": 64}, seed=0)
    targets = {parameter_for(name) for name in names}
    assert ("model.layers.1.self_attn.qkv_proj.weight", "k") in targets
    assert ("model.layers.0.mlp.gate_up_proj.weight", 1) in targets
    assert len(targets) == len(names)
    with pytest.raises(ValueError, match="not a tensor"):
        parameter_for("layers.0.attention.wz.weight")


def test_loads_and_generates_like_vllm_llama(
    make_llm, checkpoints: tuple[Path, Path], llama_tokens: list[list[int]]
) -> None:
    llm = make_llm(model=str(checkpoints[0]))
    assert llm.apply_model(lambda model: type(model).__name__) == [ARCHITECTURE]
    tokens = greedy_tokens(llm)
    assert all(len(sequence) == MAX_TOKENS for sequence in tokens)
    assert tokens == llama_tokens


@pytest.mark.slow
def test_tensor_parallel_run_agrees(checkpoints: tuple[Path, Path], llama_tokens: list[list[int]]) -> None:
    tokens = generate_in_fresh_process(
        checkpoints[0], env=TP2_ENV, tensor_parallel_size=2, distributed_executor_backend="mp"
    )
    assert tokens == llama_tokens
