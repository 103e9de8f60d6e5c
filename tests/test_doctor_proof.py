"""Doctor's proof links (`doctor/proof/`): which modules vLLM loads, which vLLM names the plugin provides
itself, and what each does to a finding: an error only when its code runs and the name is vLLM's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import build_file_tree, plugin_pyproject
from vllm_scaffold import vllm_facts
from vllm_scaffold.doctor.proof.chain import prove
from vllm_scaffold.doctor.proof.loaded import Reach, loaded_bases, loading
from vllm_scaffold.doctor.proof.provided import provided_names, provider
from vllm_scaffold.doctor.reading.package import PluginPackage
from vllm_scaffold.doctor.report.findings import Finding, Severity
from vllm_scaffold.doctor.runner import diagnose_releases

PYPROJECT = plugin_pyproject("fx-proof", "fx_proof.plugin:register", wheel=["fx_proof", "vllm"])

FILES = {
    "pyproject.toml": PYPROJECT,
    "fx_proof/__init__.py": "",
    "fx_proof/plugin.py": """
        import vllm

        from fx_proof import patches

        if vllm.__version__ == "0.9.2":
            from fx_proof import old_patches

        PLATFORM_WORKER = "fx_proof.worker.Worker"


        def register():
            patches.apply()
        """,
    "fx_proof/patches.py": """
        import sys

        import vllm.config
        from vllm import envs


        def apply():
            vllm.config.ModelConfig.fx_extra = 1
            setattr(envs, "FX_FLAG", True)
            sys.modules["vllm.fx_shim"] = object()
        """,
    "fx_proof/old_patches.py": """
        from vllm.gone import Old
        """,
    "fx_proof/worker.py": """
        WORKER = True
        """,
    "fx_proof/orphan.py": """
        from vllm.gone import Orphan
        """,
    "fx_proof/scheduler.py": """
        from vllm.v1.core.sched.scheduler import Scheduler


        class FxScheduler(Scheduler):
            pass
        """,
    "vllm/fx_owned/__init__.py": "",
    "vllm/fx_owned/layers.py": """
        VALUE = 1
        """,
}


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> PluginPackage:
    return PluginPackage.load(build_file_tree(FILES, tmp_path_factory.mktemp("fx-proof")))


def test_modules_are_reached_from_entry_points_imports_strings_and_options(package: PluginPackage) -> None:
    index = vllm_facts.shipped(vllm_facts.default_version())
    reach = {name: how.reach for name, how in loading(package, index=index).items()}
    assert reach["fx_proof.plugin"] is Reach.REACHED  # the entry point
    assert reach["fx_proof.patches"] is Reach.REACHED  # imported by it
    assert reach["fx_proof.worker"] is Reach.REACHED  # named in a string ("pkg.mod.Class")
    assert reach["fx_proof.scheduler"] is Reach.REACHED  # a Scheduler subclass: --scheduler-cls names it
    # imported only under `vllm.__version__ == "0.9.2"`, which the checked release is not
    assert reach["fx_proof.old_patches"] is Reach.EXCLUDED
    assert loading(package)["fx_proof.old_patches"].reach is Reach.CONDITIONAL  # no release: undecided
    assert reach["fx_proof.orphan"] is Reach.UNREACHED


def test_without_the_release_only_direct_bases_name_a_loaded_class(package: PluginPackage) -> None:
    # Scheduler is not SchedulerInterface itself: its ancestry comes from the index.
    assert loading(package)["fx_proof.scheduler"].reach is Reach.UNREACHED


def test_a_package_without_vllm_entry_points_is_loaded_by_whoever_imports_it(tmp_path: Path) -> None:
    files = {**FILES, "pyproject.toml": '[project]\nname = "fx-proof"\nversion = "0.1.0"\n'}
    bare = PluginPackage.load(build_file_tree(files, tmp_path))
    assert {how.reach for how in loading(bare).values()} == {Reach.REACHED}


def test_names_the_plugin_provides(package: PluginPackage) -> None:
    provided = provided_names(package)
    assert provider(provided, "vllm.config.ModelConfig.fx_extra") == "fx_proof/patches.py:8"
    assert provider(provided, "vllm.envs.FX_FLAG") == "fx_proof/patches.py:9"
    assert provider(provided, "vllm.fx_shim") == "fx_proof/patches.py:10"
    # a sys.modules entry is that module only: what the object holds is not known
    assert provider(provided, "vllm.fx_shim.anything") is None
    # a module installed in vLLM's namespace brings every name in it
    assert provider(provided, "vllm.fx_owned.layers.VALUE") == "vllm/fx_owned/layers.py"
    assert provider(provided, "vllm.config.ModelConfig.other") is None


def _finding(code: str, where: str, name: str):
    return Finding(code, where, f"{name} does not exist in vLLM 0.32.0", "point it at where this release defines it")


def test_prove_keeps_a_proven_error_and_says_why(package: PluginPackage) -> None:
    (proved,) = prove(package, [_finding("vllm-import-missing", "fx_proof/patches.py:3", "vllm.config.Gone")])
    assert proved.severity is Severity.ERROR and proved.suppressed is None
    assert [link.holds for link in proved.chain] == [True, True]


def test_prove_makes_unreached_code_a_warning_naming_the_link(package: PluginPackage) -> None:
    (orphan, gated) = prove(
        package,
        [
            _finding("vllm-import-missing", "fx_proof/orphan.py:1", "vllm.gone.Orphan"),
            _finding("vllm-import-missing", "fx_proof/old_patches.py:1", "vllm.gone.Old"),
        ],
    )
    assert orphan.severity is Severity.WARNING and "unproven: nothing the package's vLLM entry points" in orphan.message
    assert gated.severity is Severity.WARNING and "version condition (fx_proof/plugin.py:6)" in gated.message
    assert [link.holds for link in orphan.chain] == [True, None]
    assert orphan.as_json()["chain"][1]["claim"] == "the code runs"


def test_prove_suppresses_a_name_the_plugin_provides_before_it_runs(package: PluginPackage) -> None:
    (owned, shim_attribute) = prove(
        package,
        [
            _finding("vllm-import-missing", "fx_proof/patches.py:3", "vllm.fx_owned.layers.VALUE"),
            _finding("vllm-attribute-missing", "fx_proof/patches.py:3", "vllm.fx_shim.anything"),
        ],
    )
    assert (
        owned.suppressed
        == "the plugin provides vllm.fx_owned.layers.VALUE itself (vllm/fx_owned/layers.py) before this runs"
    )
    assert shim_attribute.suppressed is None and shim_attribute.severity is Severity.ERROR


def test_a_name_set_later_in_the_same_module_does_not_save_an_import_above_it(tmp_path: Path) -> None:
    files = {
        "pyproject.toml": PYPROJECT,
        "fx_proof/__init__.py": "",
        "fx_proof/plugin.py": """
            from vllm.model_executor.layers.fused_moe import layer
            from vllm.model_executor.layers.fused_moe.layer import Gone


            class Mine:
                pass


            layer.Gone = Mine


            def register():
                pass
            """,
    }
    package = PluginPackage.load(build_file_tree(files, tmp_path))
    name = "vllm.model_executor.layers.fused_moe.layer.Gone"
    (finding,) = prove(package, [_finding("vllm-import-missing", "fx_proof/plugin.py:2", name)])
    assert finding.severity is Severity.ERROR and finding.suppressed is None


def test_doctor_vllm_reports_the_chain_end_to_end(package: PluginPackage) -> None:
    (report,) = diagnose_releases(package.root, [vllm_facts.default_version()])
    by_file = {f.location[0]: f for f in report.findings if f.code == "vllm-import-missing"}
    assert by_file["fx_proof/orphan.py"].severity is Severity.WARNING
    assert by_file["fx_proof/old_patches.py"].suppressed is not None  # behind a version check it excludes
    assert [link.holds for link in by_file["fx_proof/old_patches.py"].chain][-1] is False
    assert not report.has_error


def test_code_loaded_after_a_version_pin_that_raises_is_reached_under_a_condition(tmp_path: Path) -> None:
    files = {
        "pyproject.toml": PYPROJECT,
        "fx_proof/__init__.py": "",
        "fx_proof/plugin.py": """
            import os

            import vllm


            def register():
                if not os.environ.get("FX_SKIP_CHECK"):
                    if vllm.__version__ != "0.18.0":
                        raise RuntimeError("fx needs vLLM 0.18.0")
                from fx_proof import patches

                patches.apply()
            """,
        "fx_proof/patches.py": """
            def apply():
                pass
            """,
    }
    package = PluginPackage.load(build_file_tree(files, tmp_path))
    assert loading(package)["fx_proof.patches"].reach is Reach.CONDITIONAL


PARSERS = {
    "pyproject.toml": PYPROJECT,
    "fx_proof/__init__.py": "",
    "fx_proof/plugin.py": """
        def register():
            pass
        """,
    # a parser file for --tool-parser-plugin: it registers its class, so --tool-call-parser fx_calls selects it
    "fx_proof/calls_parser.py": """
        from vllm.entrypoints.gone import make_id
        from vllm.tool_parsers import ToolParser, ToolParserManager


        @ToolParserManager.register_module("fx_calls")
        class FxToolParser(ToolParser):
            pass
        """,
    # a parser registered from a table another module loops over (that module is loaded in a way doctor does
    # not follow): registered all the same
    "fx_proof/tabled_parser.py": """
        from vllm.tool_parsers import ToolParser


        class TabledToolParser(ToolParser):
            pass
        """,
    "fx_proof/parser_table.py": """
        from fx_proof.tabled_parser import TabledToolParser
        from vllm.tool_parsers import ToolParserManager

        _PARSERS = {"fx_tabled": TabledToolParser}


        def register_parsers():
            for name, parser in _PARSERS.items():
                ToolParserManager.register_lazy_module(name, parser.__module__, parser.__name__)
        """,
    # the plugin's copy of a vLLM parser, written over vLLM's own file: nothing registers this class, so no
    # parser name selects it and no --tool-parser-plugin file is it
    "fx_proof/overlay/copied_parser.py": """
        from vllm.entrypoints.gone import make_id
        from vllm.tool_parsers import ToolParser


        class CopiedToolParser(ToolParser):
            pass
        """,
}


def test_a_parser_is_loaded_by_name_only_where_the_package_registers_it(tmp_path: Path) -> None:
    package = PluginPackage.load(build_file_tree(PARSERS, tmp_path))
    index = vllm_facts.shipped("0.32.0")
    reach = loading(package, index=index)
    assert reach["fx_proof.calls_parser"].reach is Reach.REACHED
    assert "named with --tool-parser-plugin" in reach["fx_proof.calls_parser"].evidence
    assert reach["fx_proof.tabled_parser"].reach is Reach.REACHED
    assert reach["fx_proof.overlay.copied_parser"].reach is Reach.UNREACHED
    (registered, copied) = [
        finding
        for finding in diagnose_releases(package.root, ["0.32.0"])[0].findings
        if finding.code == "vllm-import-missing"
    ]
    assert registered.location[0] == "fx_proof/calls_parser.py" and registered.severity is Severity.ERROR
    assert copied.location[0] == "fx_proof/overlay/copied_parser.py" and copied.severity is Severity.WARNING


# A platform that names its own worker for `--worker-cls`, and a second worker class nothing names: a user could
# still pass that one to the option, but nothing shows that anyone does.
WORKERS = {
    "pyproject.toml": plugin_pyproject("fx-workers", "fx_workers:detect", "vllm.platform_plugins"),
    "fx_workers/__init__.py": """
        def detect():
            return "fx_workers.platform.FxPlatform"
        """,
    "fx_workers/platform.py": """
        class FxPlatform:
            @classmethod
            def check_and_update_config(cls, vllm_config):
                vllm_config.parallel_config.worker_cls = "fx_workers.worker.FxWorker"
        """,
    "fx_workers/worker.py": """
        from vllm.v1.worker.worker_base import WorkerBase


        class FxWorker(WorkerBase):
            pass
        """,
    "fx_workers/old_worker.py": """
        from vllm.gone import helper
        from vllm.v1.worker.worker_base import WorkerBase


        class OldWorker(WorkerBase):
            pass
        """,
}


def test_a_class_for_an_option_the_package_fills_itself_is_not_loaded_by_that_option(tmp_path: Path) -> None:
    index = vllm_facts.shipped("0.32.0")
    chosen = PluginPackage.load(build_file_tree(WORKERS, tmp_path / "chosen"))
    reach = loading(chosen, index=index)
    assert reach["fx_workers.worker"].reach is Reach.REACHED  # named in the platform's string
    assert reach["fx_workers.old_worker"].reach is Reach.UNREACHED
    (finding,) = [f for f in diagnose_releases(chosen.root, ["0.32.0"])[0].findings if f.code == "vllm-import-missing"]
    assert finding.severity is Severity.WARNING and "fx_workers.old_worker" in finding.message
    # Where the package names no worker itself, the option is how a user loads either class.
    unnamed = {**WORKERS, "fx_workers/platform.py": "class FxPlatform:\n    pass\n"}
    reach = loading(PluginPackage.load(build_file_tree(unnamed, tmp_path / "unnamed")), index=index)
    assert "named with --worker-cls" in reach["fx_workers.old_worker"].evidence


# A KV connector that users load by `kv_connector_module_path`: no entry point. Beside it, a module only a user's
# own script would import, and the plugin's copy of vLLM's scheduler at a path that mirrors vLLM's own.
CONNECTOR = {
    "pyproject.toml": '[project]\nname = "fx-connector"\nversion = "0.1.0"\n',
    "fx_connector/__init__.py": "",
    "fx_connector/connector.py": """
        from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorBase_V1

        from fx_connector import store


        class FxConnector(KVConnectorBase_V1):
            pass
        """,
    "fx_connector/store.py": """
        from vllm.gone import StoreHelper
        """,
    "fx_connector/bench.py": """
        from vllm.gone import BenchHelper
        """,
    "fx_connector/overlay/v1/core/sched/scheduler.py": """
        from vllm.gone import SchedulerHelper
        from vllm.v1.core.sched.interface import SchedulerInterface


        class Scheduler(SchedulerInterface):
            pass
        """,
}


def test_a_package_without_entry_points_is_read_from_the_classes_vllm_loads_by_name(tmp_path: Path) -> None:
    package = PluginPackage.load(build_file_tree(CONNECTOR, tmp_path))
    reach = loading(package, index=vllm_facts.shipped("0.32.0"))
    assert "named with kv_connector_module_path" in reach["fx_connector.connector"].evidence
    assert reach["fx_connector"].reach is Reach.REACHED  # the parent package, imported first
    assert reach["fx_connector.store"].reach is Reach.REACHED  # imported by the connector
    assert reach["fx_connector.bench"].reach is Reach.UNREACHED
    # vLLM's own Scheduler, copied where the plugin patches it in: not a class a user names in --scheduler-cls
    assert reach["fx_connector.overlay.v1.core.sched.scheduler"].reach is Reach.UNREACHED
    severities = {
        finding.location[0]: finding.severity
        for finding in diagnose_releases(package.root, ["0.32.0"])[0].findings
        if finding.code == "vllm-import-missing"
    }
    assert severities == {
        "fx_connector/store.py": Severity.ERROR,
        "fx_connector/bench.py": Severity.WARNING,
        "fx_connector/overlay/v1/core/sched/scheduler.py": Severity.WARNING,
    }


# Every base class a release might load by a name, on any release the tool checks.
_CANDIDATES = {entry.base for version in vllm_facts.checked_versions() for entry in loaded_bases(version).values()}


@pytest.mark.parametrize("version", vllm_facts.checked_versions())
def test_the_bases_loaded_by_name_are_the_release_s_own(version: str) -> None:
    """The release fact lists, for each release, exactly the candidate bases that release defines as classes
    (vLLM 0.34 removed the V1 logits-processor interface); the anchors that each is loaded are test_facts'."""
    index = vllm_facts.shipped(version)
    defined = {base for base in _CANDIDATES if index.resolve(base).kind == "class"}
    assert set(loaded_bases(version)) == defined


def _pinned(gate: str) -> dict[str, str]:
    """A general plugin that imports its model module by name (a string), after `gate`."""
    return {
        "pyproject.toml": PYPROJECT,
        "fx_proof/__init__.py": "",
        "fx_proof/plugin.py": f"""
            from importlib import import_module

            import vllm


            def register():
                {gate}
                module = import_module("fx_proof.model_0101")
                module.apply()
            """,
        "fx_proof/model_0101.py": """
            from vllm.gone import OldModel


            def apply():
                pass
            """,
    }


@pytest.mark.parametrize(
    ("gate", "reach"),
    [
        ("pass", Reach.REACHED),
        (
            'if vllm.__version__ >= "0.17.0":\n                    raise RuntimeError("fx needs vLLM < 0.17")',
            Reach.CONDITIONAL,
        ),
    ],
)
def test_a_module_named_by_a_string_after_a_version_pin_is_reached_under_the_condition(
    tmp_path: Path, gate: str, reach: Reach
) -> None:
    package = PluginPackage.load(build_file_tree(_pinned(gate), tmp_path))
    found = loading(package)["fx_proof.model_0101"]
    assert found.reach is reach
    (finding,) = prove(package, [_finding("vllm-import-missing", "fx_proof/model_0101.py:1", "vllm.gone.OldModel")])
    expected = Severity.ERROR if reach is Reach.REACHED else Severity.WARNING
    assert finding.severity is expected
    if reach is Reach.CONDITIONAL:
        assert "named only under the plugin's own vLLM version condition (fx_proof/plugin.py:9)" in finding.message
