"""`MyStatsStatLogger`: one JSON line per logging interval with token counts, queue depths and KV usage.

vLLM loads this class through the `vllm.stat_logger_plugins` entry point `my_stats` in the front end, in
`AsyncLLM.__init__`: the OpenAI-compatible server and an offline `AsyncLLM` load it, filtered by
VLLM_PLUGINS. The offline `LLM` never does (`LLMEngine.from_engine_args(..., stat_loggers=[...])` can).
vLLM instantiates it once per engine (data-parallel rank) as `Cls(vllm_config, engine_index)`, calls
`record()` after every batch of engine outputs and `log()` once per logging interval: the server every
VLLM_LOG_STATS_INTERVAL seconds (10 by default) unless it runs with `--disable-log-stats` (then never: only
the `engine_initialized` line is written), an offline `AsyncLLM` whenever you `await engine.do_log_stats()`.

The file is ${MY_STATS_METRICS_FILE}, else `my_stats-stats.jsonl`. Each line is written with a single append,
so several API-server processes can share one file. SchedulerStats and IterationStats are declared
unstable between vLLM releases: the fields read here are the ones 0.32 has.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vllm.v1.metrics.loggers import StatLoggerBase

if TYPE_CHECKING:
    from vllm.config import VllmConfig
    from vllm.v1.metrics.stats import IterationStats, MultiModalCacheStats, SchedulerStats

PATH_ENV = "MY_STATS_METRICS_FILE"
DEFAULT_PATH = "my_stats-stats.jsonl"


class MyStatsStatLogger(StatLoggerBase):
    """Appends a JSON line to a file at start-up and at every logging interval."""

    def __init__(
        self, vllm_config: VllmConfig, engine_index: int = 0, path: str | os.PathLike[str] | None = None
    ) -> None:
        self.engine_index = engine_index
        self.path = Path(path or os.environ.get(PATH_ENV) or DEFAULT_PATH)
        self.model = vllm_config.model_config.served_model_name if vllm_config.model_config else None
        self.vllm_config = vllm_config
        self.totals = {"prompt_tokens": 0, "generation_tokens": 0, "finished_requests": 0}
        self.interval = dict.fromkeys(self.totals, 0)
        self.queues = {"running": 0, "waiting": 0, "kv_cache_usage": 0.0}
        self.interval_start = time.monotonic()

    def record(
        self,
        scheduler_stats: SchedulerStats | None,
        iteration_stats: IterationStats | None,
        mm_cache_stats: MultiModalCacheStats | None = None,
        engine_idx: int = 0,
    ) -> None:
        """After every batch of engine outputs: adds up tokens, keeps the latest scheduler snapshot."""
        if iteration_stats is not None:
            self.interval["prompt_tokens"] += iteration_stats.num_prompt_tokens
            self.interval["generation_tokens"] += iteration_stats.num_generation_tokens
            self.interval["finished_requests"] += len(iteration_stats.finished_requests)
        if scheduler_stats is not None:
            self.queues = {
                "running": scheduler_stats.num_running_reqs,
                "waiting": scheduler_stats.num_waiting_reqs,
                "kv_cache_usage": scheduler_stats.kv_cache_usage,
            }

    def log(self) -> None:
        """Once per logging interval: writes the interval's counts and starts the next interval."""
        now = time.monotonic()
        for key, value in self.interval.items():
            self.totals[key] += value
        self.write(
            {
                "event": "interval",
                "interval_s": round(now - self.interval_start, 3),
                **self.interval,
                **self.queues,
                "total": dict(self.totals),
            }
        )
        self.interval = dict.fromkeys(self.interval, 0)
        self.interval_start = now

    def log_engine_initialized(self) -> None:
        """Once, when the engine is up: records the KV-cache size it got."""
        cache = self.vllm_config.cache_config
        blocks = {"num_gpu_blocks": cache.num_gpu_blocks, "block_size": cache.block_size}
        self.write({"event": "engine_initialized", **blocks})

    def write(self, record: dict[str, Any]) -> None:
        """Appends one line in a single write, so lines from concurrent processes stay whole."""
        line = {"time": time.time(), "engine": self.engine_index, "model": self.model, **record}
        data = (json.dumps(line) + "\n").encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
