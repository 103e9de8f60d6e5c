"""my_sched's scheduler: vLLM's Scheduler with waiting requests admitted by a per-request priority.

Loaded in the engine core: EngineCore.__init__ resolves `--scheduler-cls
my_sched.scheduler.policy.MySchedScheduler` (a dotted path, not "module:Class") with
SchedulerConfig.get_scheduler_cls() and constructs it once, after the KV cache has been sized.

Contract with the engine core (vLLM 0.32, not a public interface):
- `__init__` runs once, after KV-cache profiling: `vllm_config.cache_config.num_gpu_blocks` and the
  `kv_cache_config` argument already hold the final block count.
- `schedule()` runs once per forward pass and `update_from_output()` once after it, both on the engine-core
  thread, never concurrently. Keep them free of blocking I/O: every request waits on them.
- The engine core reads `self.connector` and `self.ec_connector` (the scheduler-side KV and encoder-cache
  connectors, None when unused), attributes SchedulerInterface does not declare; the base class sets them.
- An exception raised in any of these kills the engine core, and every in-flight request fails.

With `scheduler_cls` set, vLLM no longer picks AsyncScheduler for async scheduling, but still sizes its
batch queue for it. `MySchedScheduler` therefore constructs `MySchedAsyncScheduler`
(same policy on AsyncScheduler) when `scheduler_config.async_scheduling` is on (the GPU default), and
itself on Scheduler when it is off (the CPU platform turns it off). One `--scheduler-cls` value fits both.

The policy (see `queue.ExtraArgsPriorityQueue`): waiting requests with a higher
`SamplingParams.extra_args["priority"]` (an int, default 0) are admitted first when the batch is
full; no request waits longer than `max_wait_s` seconds behind prioritised ones. Running requests,
preemption and KV-block accounting are the base class's.
"""

from __future__ import annotations

from typing import Any

from vllm.v1.core.sched.async_scheduler import AsyncScheduler
from vllm.v1.core.sched.scheduler import Scheduler

from my_sched.scheduler.queue import ExtraArgsPriorityQueue

# additional_config={"scheduler": {"max_wait_s": S}} overrides the starvation bound of this component.
SETTINGS_KEY = "scheduler"
DEFAULT_MAX_WAIT_S = 10.0
SETTINGS_EXAMPLE = '{"scheduler": {"max_wait_s": 5.0}}'


class MySchedScheduler(Scheduler):
    """vLLM's Scheduler whose waiting queue is ordered by `extra_args["priority"]`, higher first."""

    def __new__(cls, *args: Any, **kwargs: Any) -> MySchedScheduler:
        # The engine core passes vllm_config by keyword; accept it positionally too, as Scheduler does.
        vllm_config = kwargs["vllm_config"] if "vllm_config" in kwargs else args[0]
        if cls is MySchedScheduler and vllm_config.scheduler_config.async_scheduling:
            cls = MySchedAsyncScheduler
        return super().__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_wait_s = self._max_wait_s(self.vllm_config.additional_config)
        # Same queue interface as the FCFS/priority queues the base class built; it holds no request yet.
        self.waiting = ExtraArgsPriorityQueue(max_wait_s=self.max_wait_s)

    @staticmethod
    def _max_wait_s(additional_config: object) -> float:
        """`additional_config["scheduler"]["max_wait_s"]`, checked, or the default."""
        settings = additional_config.get(SETTINGS_KEY, {}) if isinstance(additional_config, dict) else {}
        value = settings.get("max_wait_s", DEFAULT_MAX_WAIT_S) if isinstance(settings, dict) else settings
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ValueError(
                f"{__name__}: additional_config[{SETTINGS_KEY!r}]['max_wait_s'] must be a positive number of "
                f"seconds, got {value!r}; pass e.g. additional_config={SETTINGS_EXAMPLE}"
            )
        return float(value)


class MySchedAsyncScheduler(MySchedScheduler, AsyncScheduler):
    """The same policy on AsyncScheduler; MySchedScheduler builds it when async scheduling is on."""
