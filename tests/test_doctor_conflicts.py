"""What doctor's live probe says two installed plugins registering one name lead to, registry by registry.

The attention overrides keep the last registration; CustomOp, KV-connector and offloading-spec registries
raise on the second, which stops the process its general plugin runs in. Each message states the fact.
"""

from __future__ import annotations

import pytest

from vllm_scaffold.doctor.live.probe_script import CONFLICTS, conflict_outcome
from vllm_scaffold.vllm_facts import facts


@pytest.mark.parametrize(
    ("registry", "second", "then"),
    [
        ("attention", "attention-override-overwrites", "general-plugins-discovery-order"),
        ("mamba_attention", "attention-override-overwrites", "general-plugins-discovery-order"),
        ("custom_op", "custom-op-duplicate-asserts", "general-plugin-unguarded"),
        ("kv_connector", "kv-connector-duplicate-raises", "general-plugin-unguarded"),
        ("offloading_spec", "offloading-spec-duplicate-raises", "general-plugin-unguarded"),
    ],
)
def test_each_conflict_states_what_the_second_registration_does(registry: str, second: str, then: str) -> None:
    outcome = conflict_outcome(registry)
    assert facts.fact(second).text() in outcome and facts.fact(then).text() in outcome


def test_every_registry_checked_for_conflicts_has_an_outcome() -> None:
    for registry in CONFLICTS:
        assert conflict_outcome(registry)
