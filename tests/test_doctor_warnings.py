"""Doctor's warnings say what they take for granted: a warning about code that is not shown to run names the
link that is unproven, as an error that became a warning does (shapes found in published plugins: a patch
directory imported only under the plugin's own version check, a template module nothing imports)."""

from __future__ import annotations

import pytest

from tests.helpers import build_file_tree, plugin_pyproject
from vllm_scaffold import vllm_facts
from vllm_scaffold.doctor.report.findings import Finding, Severity
from vllm_scaffold.doctor.runner import diagnose_releases

FILES = {
    "pyproject.toml": plugin_pyproject("fx-warn", "fx_warn.plugin:register"),
    "fx_warn/__init__.py": "",
    "fx_warn/plugin.py": """
        import vllm

        from fx_warn import current

        if vllm.__version__ == "0.9.2":
            from fx_warn import patch_0_9_2


        def register():
            current.apply()
        """,
    "fx_warn/current.py": """
        TARGET = "vllm.fx_gone_current.Thing"


        def apply():
            return TARGET
        """,
    "fx_warn/patch_0_9_2.py": """
        TARGET = "vllm.fx_gone_old.Thing"
        """,
    "fx_warn/template.py": """
        TARGET = "vllm.fx_gone_template.Thing"
        """,
}


@pytest.fixture(scope="module")
def dotted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Finding]:
    root = build_file_tree(FILES, tmp_path_factory.mktemp("fx-warn"))
    (report,) = diagnose_releases(root, [vllm_facts.default_version()])
    return {f.location[0]: f for f in report.findings if f.code == "vllm-dotted-path-missing" and f.location}


def test_a_warning_in_code_that_runs_claims_no_more_than_it_says(dotted: dict[str, Finding]) -> None:
    reached = dotted["fx_warn/current.py"]
    assert reached.severity is Severity.WARNING and "unproven" not in reached.message
    assert [link.holds for link in reached.chain] == [True, True]


def test_a_finding_behind_the_plugins_version_check_names_it(dotted: dict[str, Finding]) -> None:
    """The check (`== "0.9.2"`) is decided on the release checked, which it excludes: the finding is suppressed,
    and what suppresses it names the check and the import."""
    gated = dotted["fx_warn/patch_0_9_2.py"]
    assert gated.suppressed is not None
    assert "the plugin's own vLLM version condition at fx_warn/plugin.py:5" in gated.suppressed
    assert "(fx_warn/plugin.py:6)" in gated.suppressed


def test_a_warning_in_a_module_nothing_loads_says_so(dotted: dict[str, Finding]) -> None:
    orphan = dotted["fx_warn/template.py"]
    assert "(unproven: nothing the package's vLLM entry points load imports or names fx_warn.template" in (
        orphan.message
    )


PATCHES = {
    "pyproject.toml": FILES["pyproject.toml"],
    "fx_warn/__init__.py": "",
    "fx_warn/plugin.py": """
        from vllm import LLM
        from vllm.v1.worker import utils as worker_utils


        def _fx_register_hooks(self, hooks):
            self.fx_hooks = hooks


        def _fx_is_residual_scattered(*args, **kwargs):
            return False


        def register():
            LLM.fx_register_hooks = _fx_register_hooks
            setattr(worker_utils, "is_residual_scattered_for_sp", _fx_is_residual_scattered)
        """,
}


def test_a_patch_target_no_release_has_may_be_the_plugins_own_addition(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A method the plugin adds to a vLLM class for its users (`LLM.fx_register_hooks = ...`) is in no indexed
    release; a function vLLM 0.32 removed is in 0.31: only the first says it may be an addition."""
    root = build_file_tree(PATCHES, tmp_path_factory.mktemp("fx-warn-patches"))
    (report,) = diagnose_releases(root, ["0.32.0"])
    by_line = {f.location[1]: f for f in report.findings if f.code == "monkeypatch-target-missing" and f.location}
    added, removed = by_line[14], by_line[15]
    assert "(unproven: no indexed release has vllm.LLM.fx_register_hooks, so it may be a name the plugin adds" in (
        added.message
    )
    assert "0.31.0" in removed.message and "may be a name the plugin adds" not in removed.message
