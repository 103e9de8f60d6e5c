"""my_sched's scheduler inside a real vLLM engine: constructed by the engine core, and its policy visible.

The in-process engine (multiprocessing off) keeps the engine core in the test process, so the scheduler
instance is at `llm.llm_engine.engine_core.engine_core.scheduler`. The multiprocessing test (marked slow:
`pytest --slow`) shows that an exception raised by the scheduler in the engine-core process reaches the
front end as an engine error.
"""

from __future__ import annotations

import pytest

pytest.importorskip("vllm")

from vllm import SamplingParams  # noqa: E402
from vllm.v1.core.sched.async_scheduler import AsyncScheduler  # noqa: E402

from my_sched.scheduler.policy import SETTINGS_KEY, MySchedScheduler  # noqa: E402
from my_sched.scheduler.queue import PRIORITY_KEY, ExtraArgsPriorityQueue  # noqa: E402

pytestmark = pytest.mark.engine

SCHEDULER_CLS = "my_sched.scheduler.policy.MySchedScheduler"
PROMPT = "The quick brown fox jumps over the lazy dog"


def first_token_steps(llm, requests: dict[str, int | None], max_tokens: int) -> tuple[dict[str, int], dict]:
    """Submits `requests` (id -> priority or None) in order and steps the engine to the end.

    Returns the engine step at which each request got its first token, and the final outputs.
    """
    engine = llm.llm_engine
    for request_id, priority in requests.items():
        extra_args = None if priority is None else {PRIORITY_KEY: priority}
        params = SamplingParams(
            max_tokens=max_tokens, temperature=0.0, ignore_eos=True, extra_args=extra_args
        )
        engine.add_request(request_id, PROMPT, params)
    first: dict[str, int] = {}
    final: dict = {}
    step = 0
    while engine.has_unfinished_requests():
        step += 1
        assert step < 200, "the engine did not finish the batch"
        for output in engine.step():
            if output.outputs and output.outputs[0].token_ids:
                first.setdefault(output.request_id, step)
            if output.finished:
                final[output.request_id] = output
    return first, final


def test_engine_core_runs_the_scheduler_and_admits_higher_priority_first(make_llm) -> None:
    # max_num_seqs=2: two of the eight requests run at a time, so the waiting order decides who starts.
    llm = make_llm(
        scheduler_cls=SCHEDULER_CLS, max_num_seqs=2, additional_config={SETTINGS_KEY: {"max_wait_s": 3600.0}}
    )
    scheduler = llm.llm_engine.engine_core.engine_core.scheduler
    assert type(scheduler) is MySchedScheduler, "the CPU engine runs without async scheduling"
    assert not isinstance(scheduler, AsyncScheduler)
    assert isinstance(scheduler.waiting, ExtraArgsPriorityQueue) and scheduler.max_wait_s == 3600.0
    steps_before = scheduler.current_step

    plain = ["plain-0", "plain-1", "plain-2", "plain-3"]
    requests = {**dict.fromkeys(plain), "mid-0": 1, "mid-1": 1, "high-0": 10, "high-1": 10}
    first, final = first_token_steps(llm, requests, max_tokens=4)

    assert scheduler.current_step > steps_before, "schedule() never ran on the generated scheduler"
    # Submitted last, served first: priority 10, then 1, then the requests without the parameter.
    assert max(first["high-0"], first["high-1"]) < min(first["mid-0"], first["mid-1"]), first
    assert max(first["mid-0"], first["mid-1"]) < min(first[rid] for rid in plain), first
    plain_steps = [first[rid] for rid in plain]
    assert plain_steps == sorted(plain_steps), f"requests without the parameter keep arrival order: {first}"
    # Requests without the parameter are not starved: all of them complete.
    assert set(final) == set(requests)
    assert all(len(output.outputs[0].token_ids) == 4 for output in final.values())


SCRIPT = """
from vllm import LLM

if __name__ == "__main__":
    try:
        LLM(**{llm_kwargs!r})
    except Exception as error:
        print("FRONT END RAISED", type(error).__name__, error)
    else:
        raise SystemExit("the engine started although the scheduler raised")
"""


@pytest.mark.slow
def test_scheduler_exception_in_engine_core_process_surfaces_as_engine_error(llm_kwargs, run_python) -> None:
    bad_settings = {SETTINGS_KEY: {"max_wait_s": -1}}
    kwargs = {**llm_kwargs, "scheduler_cls": SCHEDULER_CLS, "additional_config": bad_settings}
    completed = run_python(SCRIPT.format(llm_kwargs=kwargs), env={"VLLM_ENABLE_V1_MULTIPROCESSING": "1"})
    output = completed.stdout + completed.stderr
    assert "FRONT END RAISED" in output
    # Raised by MySchedScheduler.__init__ in the engine-core process, logged there.
    assert "EngineCore" in output and "must be a positive number of seconds, got -1" in output, output[-4000:]
