"""`doctor --json`'s inventory: the plugin's coupling surface to vLLM (bases, config classes built, patch
targets, imports), each with its places, and with two or more `--vllm` releases how each changed between them,
read from the shipped release indexes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import build_file_tree, plugin_pyproject, run_cli

PYPROJECT = plugin_pyproject("fx-inventory", "fx_inventory.plugin:register", wheel=["fx_inventory", "vllm"])

FILES = {
    "pyproject.toml": PYPROJECT,
    "fx_inventory/__init__.py": "",
    "fx_inventory/plugin.py": """
        from typing import TYPE_CHECKING

        import vllm.entrypoints.llm
        from vllm.config import KVTransferConfig, get_current_vllm_config
        from vllm.entrypoints.chat_utils import ChatCompletionMessageParam

        from fx_inventory import offload

        if TYPE_CHECKING:
            from vllm.config import VllmConfig


        def start_profile(self, profile_prefix=None):
            return profile_prefix


        def register() -> None:
            vllm.entrypoints.llm.LLM.start_profile = start_profile
            setattr(vllm.entrypoints.llm, "FX_FLAG", True)
            offload.connect(KVTransferConfig(kv_connector="FxConnector", kv_role="kv_both", kv_rank=0))
            offload.connect(get_current_vllm_config())


        def messages() -> list[ChatCompletionMessageParam]:
            return []
        """,
    "fx_inventory/offload.py": """
        from vllm.v1.core.sched.interface import SchedulerInterface
        from vllm.v1.kv_offload.base import OffloadingWorker

        from vllm.fx_inventory_ops import kernels


        class FxWorker(OffloadingWorker):
            def submit_load(self, job_id, src_spec, dst_spec):
                return kernels.load(job_id)


        class FxFastWorker(FxWorker):
            def get_finished(self):
                return []


        class FxScheduler(SchedulerInterface):
            def schedule(self):
                return None


        def connect(config) -> None:
            del config
        """,
    "vllm/fx_inventory_ops/__init__.py": "",
    "vllm/fx_inventory_ops/kernels.py": """
        def load(job_id):
            return job_id
        """,
}


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_file_tree(FILES, tmp_path_factory.mktemp("fx-inventory"))


def names(inventory: dict, kind: str) -> dict[str, dict]:
    return {entry["name"]: entry for entry in inventory[kind]}


def test_the_json_report_lists_bases_configs_patches_and_imports_with_their_places(plugin: Path) -> None:
    result = run_cli("doctor", str(plugin), "--no-live", "--json")
    inventory = json.loads(result.stdout)["inventory"]
    assert set(inventory) == {"releases", "bases", "configs_built", "patch_targets", "imports"}
    assert len(inventory["releases"]) == 1  # the installed vLLM's

    bases = names(inventory, "bases")
    assert set(bases) == {"vllm.v1.kv_offload.base.OffloadingWorker", "vllm.v1.core.sched.interface.SchedulerInterface"}
    worker = bases["vllm.v1.kv_offload.base.OffloadingWorker"]
    assert worker["at"] == [
        {
            "module": "fx_inventory.offload",
            "file": "fx_inventory/offload.py",
            "line": 7,
            "class": "fx_inventory.offload.FxWorker",
        }
    ]
    # what the plugin's classes of that family define, its subclass's included
    assert worker["overrides"] == ["get_finished", "submit_load"]
    assert "changed" not in worker  # one release: nothing to compare

    # a function of vllm.config is no config class built
    assert set(names(inventory, "configs_built")) == {"vllm.config.KVTransferConfig"}
    [built] = names(inventory, "configs_built")["vllm.config.KVTransferConfig"]["at"]
    assert built == {
        "module": "fx_inventory.plugin",
        "file": "fx_inventory/plugin.py",
        "line": 20,
        "keywords": ["kv_connector", "kv_role", "kv_rank"],
    }

    patches = names(inventory, "patch_targets")
    assert set(patches) == {"vllm.entrypoints.llm.LLM.start_profile", "vllm.entrypoints.llm.FX_FLAG"}
    assert [place["line"] for place in patches["vllm.entrypoints.llm.LLM.start_profile"]["at"]] == [18]
    assert [place["line"] for place in patches["vllm.entrypoints.llm.FX_FLAG"]["at"]] == [19]

    imports = names(inventory, "imports")
    # the TYPE_CHECKING import never runs; vllm.fx_inventory_ops is the plugin's own module in vLLM's namespace
    assert set(imports) == {
        "vllm.entrypoints.llm",
        "vllm.config.KVTransferConfig",
        "vllm.config.get_current_vllm_config",
        "vllm.entrypoints.chat_utils.ChatCompletionMessageParam",
        "vllm.v1.core.sched.interface.SchedulerInterface",
        "vllm.v1.kv_offload.base.OffloadingWorker",
    }
    assert imports["vllm.config.KVTransferConfig"]["at"] == [
        {"module": "fx_inventory.plugin", "file": "fx_inventory/plugin.py", "line": 4}
    ]


def test_the_table_has_no_inventory_and_the_findings_are_the_same(plugin: Path) -> None:
    table = run_cli("doctor", str(plugin), "--no-live")
    report = json.loads(run_cli("doctor", str(plugin), "--no-live", "--json").stdout)
    assert table.exit_code == (1 if any(f["severity"] == "error" for f in report["findings"]) else 0)
    assert "configs_built" not in table.stdout and "patch_targets" not in table.stdout


def test_with_several_releases_each_entry_says_how_it_changed_between_each_and_the_next(plugin: Path) -> None:
    # given out of order: the inventory compares each release with the next one, oldest first
    result = run_cli("doctor", str(plugin), "--vllm", "0.33.0", "--vllm", "0.31.0", "--vllm", "0.32.0", "--json")
    data = json.loads(result.stdout)
    assert [report["vllm"].split()[-1] for report in data["releases"]] == ["0.33.0", "0.31.0", "0.32.0"]
    assert all("inventory" not in report for report in data["releases"])  # one inventory, beside the reports
    inventory = data["inventory"]
    assert inventory["releases"] == ["0.31.0", "0.32.0", "0.33.0"]

    bases = names(inventory, "bases")
    assert bases["vllm.v1.kv_offload.base.OffloadingWorker"]["changed"] == {
        "0.32.0->0.33.0": "submit_load: signature (self, job_id, src_spec, dst_spec) -> "
        "(self, job_id, src_spec, dst_spec, expedited=…)"
    }
    assert bases["vllm.v1.core.sched.interface.SchedulerInterface"]["changed"] == {
        "0.32.0->0.33.0": "abstract methods added: has_request"
    }
    configs = names(inventory, "configs_built")
    assert configs["vllm.config.KVTransferConfig"]["changed"] == {"0.31.0->0.32.0": "fields removed: kv_rank"}
    patches = names(inventory, "patch_targets")
    start_profile = patches["vllm.entrypoints.llm.LLM.start_profile"]["changed"]
    assert start_profile["0.31.0->0.32.0"] == (
        "signature: (self, profile_prefix=…) -> (self, profile_prefix=…, *, delay_iterations=…, max_iterations=…); "
        "source changed"
    )
    imports = names(inventory, "imports")
    assert imports["vllm.entrypoints.chat_utils.ChatCompletionMessageParam"]["changed"] == {"0.31.0->0.32.0": "removed"}
    assert imports["vllm.config.KVTransferConfig"]["changed"] == {}  # there on every release, the same class


def test_without_vllm_installed_the_names_are_read_against_the_newest_indexed_release(
    plugin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vllm_scaffold import vllm_facts
    from vllm_scaffold.doctor.reading import context
    from vllm_scaffold.doctor.reading.installed import InstalledVllm
    from vllm_scaffold.doctor.runner import diagnose

    monkeypatch.setattr(context, "installed_vllm", lambda: InstalledVllm(None, None, None))
    report = diagnose(plugin, live=False, inventory=True)
    assert report.vllm.startswith("no vLLM") and report.inventory is not None
    inventory = report.inventory
    assert inventory["releases"] == [vllm_facts.shipped_versions()[-1]]
    assert "vllm.v1.kv_offload.base.OffloadingWorker" in names(inventory, "bases")
