"""The logits-processor template: its questions, the list[int] variant, and `add` next to a general plugin
(whose package then passes its tests, both components together, in the CPU engine)."""

from __future__ import annotations

from pathlib import Path

import pytest
from seam_helpers import add_into, added, assert_lint_clean, entry_points, run_package_tests


def add_list_variant(host: Path) -> None:
    add_into(host, "logits-processor", "only", "param_name=allowed_ids", "param_type=list[int]")


def test_add_the_list_variant_next_to_a_general_plugin(host: Path) -> None:
    add_list_variant(host)
    assert entry_points(host, "vllm.logits_processors") == {"only": "host.only.processor:OnlyLogitsProcessor"}
    assert entry_points(host, "vllm.general_plugins") == {"host": "host.vllm_plugin:register"}
    manifest = added(host, "logits-processor")
    assert '"allowed_ids"' in manifest[1]["enable"][0]
    processor = (host / "src/host/only/processor.py").read_text()
    assert 'PARAM = "allowed_ids"' in processor and "MAX_ALLOWED = 64" in processor
    assert "class OnlyLogitsProcessor(OnlyLogitsProcessorV2, V1LogitsProcessor):" in processor
    mine = ["src/host/only", "tests/test_only_kernel.py", "tests/test_only_runners.py", "tests/test_only_v1_runner.py",
            "tests/test_only_engine.py", "benchmarks/bench_only.py"]  # fmt: skip
    assert_lint_clean(host, *mine)


@pytest.mark.engine
def test_host_with_both_components_passes_its_tests(host: Path, tmp_path: Path) -> None:
    """The list variant in the engine (the default is covered by the golden package's own run)."""
    add_list_variant(host)
    run_package_tests(
        host,
        tmp_path / "cache",
        "tests/test_vllm_plugin.py",
        "tests/test_only_kernel.py",
        "tests/test_only_runners.py",
        "tests/test_only_engine.py",
    )
