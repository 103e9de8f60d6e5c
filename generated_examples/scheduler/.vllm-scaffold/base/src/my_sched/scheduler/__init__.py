"""my_sched: a priority scheduler for vLLM's engine core (`my_sched.scheduler.policy`).

Imports nothing: the engine core imports `policy` itself when `--scheduler-cls` names its class.
"""
