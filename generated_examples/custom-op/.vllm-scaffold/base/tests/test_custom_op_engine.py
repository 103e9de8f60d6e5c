"""`MyOpSiluAndMul` inside a real vLLM engine on the tiny Llama: built, called, and harmless.

The engines run in this process (VLLM_ENABLE_V1_MULTIPROCESSING=0), so the model's modules and the layer's
call counters are visible here. The package's general plugin registers the replacement when the first engine
loads plugins; the engine "without the replacement" is the same engine with the registry entry removed.
On CPU the engine runs with enforce_eager, where custom_ops defaults to 'all' and the CPU platform calls
forward_cpu (the Triton kernel under the interpreter). The `gpu` test runs the engine compiled (no
enforce_eager), where custom_ops defaults to 'none' and '+SiluAndMul' turns the kernel on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

vllm = pytest.importorskip("vllm")

from vllm import SamplingParams  # noqa: E402
from vllm.model_executor.custom_op import op_registry_oot  # noqa: E402
from vllm.plugins import load_general_plugins  # noqa: E402

from my_op.custom_op import layer  # noqa: E402

IN_TREE = layer.SiluAndMul
REPLACEMENT = layer.MyOpSiluAndMul

pytestmark = pytest.mark.engine

PROMPTS = ["Hello world", "The quick brown fox jumps over", "Plugins replace ops"]
GREEDY = SamplingParams(max_tokens=8, temperature=0.0)
FAST_PATH = "forward_cuda" if torch.cuda.is_available() else "forward_cpu"


def bound_forwards(llm: Any) -> set[tuple[str, str]]:
    """(class, bound forward) of every SiluAndMul in the model, from each worker."""

    def inspect(model: torch.nn.Module) -> set[tuple[str, str]]:
        ops = (m for m in model.modules() if isinstance(m, IN_TREE))
        return {(type(m).__name__, m._forward_method.__name__) for m in ops}

    return set().union(*llm.apply_model(inspect))


def greedy_tokens(llm: Any) -> list[list[int]]:
    layer.CALLS.clear()  # start counting after the engine's warm-up passes
    return [list(output.outputs[0].token_ids) for output in llm.generate(PROMPTS, GREEDY, use_tqdm=False)]


def tokens_without_the_replacement(
    make_llm: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, **overrides: Any
) -> list[list[int]]:
    """Greedy tokens of an engine whose model is built with vLLM's own SiluAndMul."""
    load_general_plugins()  # already done in this process: the next engine will not register again
    with monkeypatch.context() as patch:
        patch.delitem(op_registry_oot, IN_TREE.__name__)
        llm = make_llm(**overrides)
    assert {cls for cls, _ in bound_forwards(llm)} == {IN_TREE.__name__}
    return greedy_tokens(llm)


def test_model_runs_the_kernel_and_keeps_its_greedy_tokens(
    make_llm: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = make_llm()
    assert bound_forwards(llm) == {(REPLACEMENT.__name__, FAST_PATH)}
    tokens = greedy_tokens(llm)
    assert layer.CALLS["triton"] > 0 and layer.CALLS["native"] == 0, dict(layer.CALLS)
    assert tokens == tokens_without_the_replacement(make_llm, monkeypatch)


def test_custom_ops_minus_class_name_switches_to_forward_native(make_llm: Callable[..., Any]) -> None:
    llm = make_llm(compilation_config={"custom_ops": ["-SiluAndMul"]})
    assert bound_forwards(llm) == {(REPLACEMENT.__name__, "forward_native")}
    greedy_tokens(llm)
    assert layer.CALLS["native"] > 0 and layer.CALLS["triton"] == 0, dict(layer.CALLS)


@pytest.mark.gpu
def test_compiled_cuda_engine_runs_the_kernel(
    make_llm: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch.compile and CUDA graphs on: the kernel runs inside the compiled graph, which does not call
    forward again (the counters stay at zero), so the proof is the bound forward and the tokens."""
    compiled = {"enforce_eager": False, "compilation_config": {"custom_ops": ["+SiluAndMul"]}}
    llm = make_llm(**compiled)
    assert bound_forwards(llm) == {(REPLACEMENT.__name__, "forward_cuda")}
    tokens = greedy_tokens(llm)
    assert tokens == tokens_without_the_replacement(make_llm, monkeypatch, **compiled)
