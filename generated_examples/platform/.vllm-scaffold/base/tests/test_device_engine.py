"""The my_device platform inside real vLLM processes: chosen only when enabled, in every engine process.

Platform resolution happens once per interpreter, so every enabled case runs in a fresh one; the reference
is vLLM's CPU platform in the test process, which never enables the plugin. The first engine runs its
engine core and worker in the script's process; the second (marked slow: `pytest --slow` runs it) turns
multiprocessing on, so the front end and the engine core (which hosts the worker) are separate processes
that each resolve the platform themselves.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from vllm_scaffold_testing import TINY_ENGINE_KWARGS, in_process_llm

from my_device.device.detect import ENABLE_ENV, PLATFORM_CLASS
from my_device.device.platform import WORKER_CLASS

pytestmark = pytest.mark.engine

PROMPTS = ["Hello world", "The quick brown fox"]
MAX_TOKENS = 8

ENGINE = """
import json
from vllm import LLM, SamplingParams
from vllm.platforms import current_platform


def describe(wrapper):
    from vllm.platforms import current_platform

    worker = wrapper.worker  # collective_rpc passes vLLM's WorkerWrapperBase around the platform's worker
    model = worker.get_model()
    dispatch = sorted({f"{type(m).__name__}.{m._forward_method.__name__}" for m in model.modules()
                      if hasattr(m, "_forward_method")})
    return {"platform": type(current_platform).__qualname__, "worker": type(worker).__qualname__,
            "dispatch": dispatch}


if __name__ == "__main__":
    front_end = type(current_platform).__qualname__
    llm = LLM(**LLM_KWARGS)
    outputs = llm.generate(PROMPTS, SamplingParams(max_tokens=MAX_TOKENS, temperature=0.0))
    (engine,) = llm.collective_rpc(describe)
    tokens = [list(output.outputs[0].token_ids) for output in outputs]
    print("RESULT=" + json.dumps({"front_end": front_end, "engine": engine, "tokens": tokens}))
"""

PLATFORM_ONLY = """
from vllm.platforms import current_platform
print("RESULT=" + type(current_platform).__qualname__)
"""


def result(completed) -> object:
    (line,) = [line for line in completed.stdout.splitlines() if line.startswith("RESULT=")]
    text = line.removeprefix("RESULT=")
    return json.loads(text) if text.startswith("{") else text


@pytest.fixture
def disabled_env(engine_env: dict[str, str]) -> dict[str, str]:
    return {key: value for key, value in engine_env.items() if key not in (ENABLE_ENV, "VLLM_TARGET_DEVICE")}


@pytest.fixture(scope="module")
def cpu_platform_tokens(tiny_llama: Path, plugin_site: Path | None) -> list[list[int]]:
    """Greedy tokens of vLLM's own CPU platform, from an engine in this process."""
    from vllm import SamplingParams
    from vllm.platforms import current_platform

    assert type(current_platform).__name__ == "CpuPlatform", f"unset {ENABLE_ENV} to run these tests"
    with in_process_llm(model=str(tiny_llama), **TINY_ENGINE_KWARGS) as llm:
        outputs = llm.generate(PROMPTS, SamplingParams(max_tokens=MAX_TOKENS, temperature=0.0))
    return [list(output.outputs[0].token_ids) for output in outputs]


def enabled_run(run_python, env: dict[str, str], llm_kwargs: dict[str, object]) -> dict:
    """The engine script with the platform enabled; checks what every engine process resolved."""
    script = ENGINE
    for name, value in {"LLM_KWARGS": llm_kwargs, "PROMPTS": PROMPTS, "MAX_TOKENS": MAX_TOKENS}.items():
        script = script.replace(name, repr(value))
    enabled = result(run_python(script, env={**env, ENABLE_ENV: "1"}))
    name = PLATFORM_CLASS.rsplit(".", 1)[1]
    assert enabled["front_end"] == name
    assert enabled["engine"]["platform"] == name
    assert enabled["engine"]["worker"] == WORKER_CLASS.rsplit(".", 1)[1]
    dispatched = {entry.split(".")[1] for entry in enabled["engine"]["dispatch"]}
    assert dispatched == {"forward_oot"}, enabled["engine"]["dispatch"]
    return enabled


def test_enabled_platform_serves_the_engine_like_the_cpu_platform(
    run_python, disabled_env: dict[str, str], llm_kwargs: dict[str, object], cpu_platform_tokens: list
) -> None:
    enabled = enabled_run(run_python, {**disabled_env, "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}, llm_kwargs)
    assert enabled["tokens"] == cpu_platform_tokens


@pytest.mark.slow
def test_every_engine_process_resolves_the_platform(
    run_python, disabled_env: dict[str, str], llm_kwargs: dict[str, object], cpu_platform_tokens: list
) -> None:
    # Multiprocessing on; collective_rpc pickles `describe` to ship it to the worker.
    separate = {"VLLM_ENABLE_V1_MULTIPROCESSING": "1", "VLLM_ALLOW_INSECURE_SERIALIZATION": "1"}
    enabled = enabled_run(run_python, {**disabled_env, **separate}, llm_kwargs)
    assert enabled["tokens"] == cpu_platform_tokens


def test_target_device_cpu_bypasses_the_plugin(run_python, disabled_env: dict[str, str]) -> None:
    env = {**disabled_env, ENABLE_ENV: "1", "VLLM_TARGET_DEVICE": "cpu"}
    assert result(run_python(PLATFORM_ONLY, env=env)) == "CpuPlatform"


def test_two_active_out_of_tree_platforms_are_refused(
    run_python, disabled_env: dict[str, str], tmp_path: Path
) -> None:
    # A second distribution whose platform entry point (another name, same detector) is also active.
    dist_info = tmp_path / "second_platform-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: second-platform\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(
        "[vllm.platform_plugins]\nsecond_platform = my_device.device.detect:detect\n"
    )
    python_path = f"{tmp_path}:{disabled_env.get('PYTHONPATH', '')}"
    code = "try:\n" + "".join("    " + line + "\n" for line in PLATFORM_ONLY.strip().splitlines())
    code += "except RuntimeError as error:\n    print('RESULT=' + str(error))\n"
    message = result(run_python(code, env={**disabled_env, ENABLE_ENV: "1", "PYTHONPATH": python_path}))
    assert "Only one platform plugin can be activated" in message
    assert "second_platform" in message and "my_device" in message
