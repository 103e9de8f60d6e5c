"""The scheduler template: its questions, the class path it advertises, and `add` next to another component."""

from __future__ import annotations

from pathlib import Path

from seam_helpers import add_into, added


def test_add_next_to_a_general_plugin_with_answers(host: Path) -> None:
    add_into(host, "scheduler", "prio", "priority_key=urgency", "max_wait_s=2.5")
    queue = (host / "src/host/prio/queue.py").read_text()
    policy = (host / "src/host/prio/policy.py").read_text()
    assert 'PRIORITY_KEY = "urgency"' in queue and "max_wait_s: float = 2.5" in queue
    assert "class PrioScheduler(Scheduler):" in policy
    assert "class PrioAsyncScheduler(PrioScheduler, AsyncScheduler):" in policy
    assert 'SETTINGS_KEY = "prio"' in policy and "DEFAULT_MAX_WAIT_S = 2.5" in policy
    # A scheduler is selected by path, so the general plugin gains no registration.
    plugin = (host / "src/host/vllm_plugin.py").read_text()
    assert '"host.hooks.registration:register"' in plugin and "prio" not in plugin
    manifest = added(host, "scheduler")
    assert manifest[1]["object"] == "host.prio.policy.PrioScheduler"
    assert manifest[1]["enable"][0] == "--scheduler-cls host.prio.policy.PrioScheduler"
    assert '{"urgency": N}' in manifest[1]["enable"][1]
    assert "--scheduler-cls host.prio.policy.PrioScheduler" in (host / "README.md").read_text()
