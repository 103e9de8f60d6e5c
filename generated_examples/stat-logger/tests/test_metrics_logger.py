"""`MyStatsStatLogger` is loaded by AsyncLLM from its entry point, and records what was generated.

The engine tests run in this process: an offline `LLM` (it must not load the group, so no file appears),
then an offline `AsyncLLM` (its front end here, its engine core in a subprocess, as always) that generates
with different lengths and calls `do_log_stats()` (what the server does every VLLM_LOG_STATS_INTERVAL
seconds unless it runs with --disable-log-stats). The token counts in the file must equal what the requests
report.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")

from vllm import SamplingParams  # noqa: E402
from vllm.engine.arg_utils import AsyncEngineArgs  # noqa: E402
from vllm.v1.engine.async_llm import AsyncLLM  # noqa: E402
from vllm.v1.metrics.loggers import load_stat_logger_plugin_factories  # noqa: E402

from my_stats.metrics.logger import PATH_ENV, MyStatsStatLogger  # noqa: E402


def test_entry_point_loads_the_class(plugin_site: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_PLUGINS", raising=False)
    assert MyStatsStatLogger in load_stat_logger_plugin_factories()
    monkeypatch.setenv("VLLM_PLUGINS", "my_stats")
    assert MyStatsStatLogger in load_stat_logger_plugin_factories()
    monkeypatch.setenv("VLLM_PLUGINS", "some_other_plugin")
    assert MyStatsStatLogger not in load_stat_logger_plugin_factories()


PROMPTS = ["Hello world", "The quick brown fox jumps", "Once upon a time there was"]


@pytest.mark.engine
def test_offline_llm_loads_no_stat_logger(make_llm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "stats" / "lines.jsonl"
    monkeypatch.setenv(PATH_ENV, str(path))
    make_llm().generate(PROMPTS, SamplingParams(max_tokens=2))
    assert not path.exists(), "the offline LLM loaded the stat-logger group"


async def generate(engine: AsyncLLM, i: int, prompt: str) -> tuple[int, int]:
    params = SamplingParams(max_tokens=4 + 3 * i, temperature=0.0, ignore_eos=True)
    async for output in engine.generate(prompt, params, request_id=str(i)):
        final = output
    return len(final.prompt_token_ids), len(final.outputs[0].token_ids)


async def generate_and_log(llm_kwargs: dict[str, Any]) -> list[tuple[int, int]]:
    engine = AsyncLLM.from_engine_args(AsyncEngineArgs(**llm_kwargs))
    try:
        counts = await asyncio.gather(*(generate(engine, i, p) for i, p in enumerate(PROMPTS)))
        await engine.do_log_stats()
    finally:
        engine.shutdown()
    return counts


@pytest.mark.engine
def test_async_llm_records_what_was_generated(
    llm_kwargs: dict[str, Any], engine_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "stats" / "lines.jsonl"
    for key, value in {**engine_env, PATH_ENV: str(path)}.items():  # offline, the plugin visible
        monkeypatch.setenv(key, value)
    counts = asyncio.run(generate_and_log(llm_kwargs))

    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["event"] == "engine_initialized" and lines[0]["num_gpu_blocks"] > 0, lines[0]
    intervals = [line for line in lines if line["event"] == "interval"]
    assert intervals, lines
    last = intervals[-1]
    assert sum(line["generation_tokens"] for line in intervals) == sum(gen for _, gen in counts)
    assert last["total"]["generation_tokens"] == sum(gen for _, gen in counts)
    assert last["total"]["prompt_tokens"] == sum(prompt for prompt, _ in counts)
    assert last["total"]["finished_requests"] == len(counts)
    assert last["running"] == 0 and last["waiting"] == 0
    assert 0.0 <= last["kv_cache_usage"] <= 1.0
