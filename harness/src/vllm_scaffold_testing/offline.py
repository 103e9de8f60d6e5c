"""What a quantized engine holds and how close its outputs are to a reference engine's.

For an `LLM` from `make_llm` / `module_llm`, or one built in a script started by `run_python` (tensor
parallelism), which is why these are plain functions rather than fixtures:

    layers = llm.apply_model(describe_layers)[0]          # per layer: method, weight dtype, kernel, calls
    difference = max_abs_difference(prompt_logprobs(llm, PROMPTS), prompt_logprobs(reference, PROMPTS))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def describe_layers(model: Any) -> dict[str, dict[str, Any]]:
    """Pass to `LLM.apply_model`: what each layer with a quantize method holds and runs, from inside the worker.

    Per layer: `method` (the quantize method's class), `weight_dtype`, `kernel` (the class of the linear kernel
    vLLM's selector picked, for methods that use one: `layer.scheme.kernel` for compressed-tensors) and `calls`
    (a `calls` counter kept by that kernel or method, `{}` when neither keeps one). It lives in an importable
    module because tensor-parallel workers receive it by reference.
    """
    summary: dict[str, dict[str, Any]] = {}
    for name, module in model.named_modules():
        method = getattr(module, "quant_method", None)
        if method is None:
            continue
        kernel = getattr(getattr(module, "scheme", None), "kernel", None) or getattr(method, "kernel", None)
        weight = getattr(module, "weight", None)
        if weight is None:  # compressed-tensors weight-only layers keep theirs as `weight_packed`
            weight = getattr(module, "weight_packed", None)
        summary[name] = {
            "method": type(method).__name__,
            "weight_dtype": str(weight.dtype) if weight is not None else None,
            "kernel": type(kernel).__name__ if kernel is not None else None,
            "calls": dict(getattr(kernel, "calls", None) or getattr(method, "calls", None) or {}),
        }
    return summary


def prompt_logprobs(llm: Any, prompts: Sequence[str]) -> list[list[float]]:
    """Teacher-forced log-probability of every prompt token after the first, per prompt.

    One prefill per prompt scores the model on fixed text, so two engines are compared position by position
    without a sampled token steering one of them elsewhere.
    """
    from vllm import SamplingParams

    params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
    scores: list[list[float]] = []
    for output in llm.generate(list(prompts), params, use_tqdm=False):
        token_ids = output.prompt_token_ids
        steps = output.prompt_logprobs[1:]  # the first prompt token has no prediction
        scores.append([step[token].logprob for token, step in zip(token_ids[1:], steps, strict=True)])
    return scores


def greedy_token_ids(llm: Any, prompts: Sequence[str], max_tokens: int) -> list[list[int]]:
    """The greedy continuation of each prompt (temperature 0, `max_tokens` tokens)."""
    from vllm import SamplingParams

    params = SamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=True)
    return [list(output.outputs[0].token_ids) for output in llm.generate(list(prompts), params, use_tqdm=False)]


def max_abs_difference(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> float:
    """Largest |a - b| over two equally shaped lists of lists (e.g. two `prompt_logprobs` results)."""
    assert [len(row) for row in a] == [len(row) for row in b], "the two runs scored different token counts"
    return max((abs(x - y) for row_a, row_b in zip(a, b, strict=True) for x, y in zip(row_a, row_b, strict=True)))


@dataclass
class EngineRun:
    """What one engine showed: `describe_layers` of its (first) worker, prompt log-probs, greedy tokens."""

    layers: dict[str, dict[str, Any]]
    logprobs: list[list[float]]
    tokens: list[list[int]]


def engine_run(llm: Any, prompts: Sequence[str], greedy_tokens: int) -> EngineRun:
    """Scores `prompts`, continues them greedily, then describes the layers (their counters include both)."""
    logprobs = prompt_logprobs(llm, prompts)
    tokens = greedy_token_ids(llm, prompts, greedy_tokens)
    return EngineRun(llm.apply_model(describe_layers)[0], logprobs, tokens)
