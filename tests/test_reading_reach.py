"""What a plugin's entry point runs (`doctor/reading/reach.py`): the functions it calls and the modules it
imports at any depth, the import-time code of its module and parents, registration tables of strings, and the
branches a literal argument skips."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import build_file_tree, plugin_pyproject
from vllm_scaffold.doctor.reading.package import PluginPackage
from vllm_scaffold.doctor.reading.reach import entry_point_reach, reached_functions, steps
from vllm_scaffold.doctor.reading.source import function

FILES = {
    "pyproject.toml": plugin_pyproject("fx-reach", "fx_reach.plugin:register"),
    "fx_reach/__init__.py": """
        from fx_reach import env
        """,
    "fx_reach/env.py": """
        def configure():
            pass

        configure()
        """,
    "fx_reach/plugin.py": """
        from fx_reach.patches import apply

        PATCHES = ["fx_reach.patches:torch_patch"]


        def register():
            _setup(verbose=False)
            apply()
            for path in PATCHES:
                load(path)


        def _setup(verbose=True):
            if verbose:
                _talk()


        def _talk():
            pass


        def load(path):
            pass


        def unused():
            pass
        """,
    "fx_reach/patches.py": """
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from fx_reach import typing_only


        def apply():
            import fx_reach.kernels


        def torch_patch():
            pass
        """,
    "fx_reach/kernels.py": """
        LOADED = True
        """,
    "fx_reach/typing_only.py": """
        X = 1
        """,
}


def _package(tmp_path: Path) -> PluginPackage:
    return PluginPackage.load(build_file_tree(FILES, tmp_path / "fx-reach"))


def test_reached_functions_follow_calls_imports_and_string_tables(tmp_path: Path) -> None:
    package = _package(tmp_path)
    module = package.modules["fx_reach.plugin"]
    register = function(module, "register")
    assert register is not None
    reached = {steps(r.via) for r in reached_functions(package, module, register)}
    assert reached == {
        "",  # register itself
        "_setup()",
        "apply()",
        "load()",
        "torch_patch()",  # named in the PATCHES table the function reads
        "apply() -> import fx_reach",
        "apply() -> import fx_reach.kernels",
        "apply() -> import fx_reach -> import fx_reach.env",
        "apply() -> import fx_reach -> import fx_reach.env -> configure()",
    }  # _talk() is skipped: register passes verbose=False; unused() is never called


def test_a_literal_argument_that_takes_the_branch_reaches_it(tmp_path: Path) -> None:
    package = _package(tmp_path)
    module = package.modules["fx_reach.plugin"]
    setup = function(module, "_setup")
    assert setup is not None
    assert "_talk()" in {steps(r.via) for r in reached_functions(package, module, setup)}


def test_entry_point_reach_runs_the_import_first(tmp_path: Path) -> None:
    package = _package(tmp_path)
    module = package.modules["fx_reach.plugin"]
    register = function(module, "register")
    assert register is not None
    imported, called = entry_point_reach(package, module, register)
    at_import = [steps(r.via) for r in imported]
    assert at_import[:3] == ["import fx_reach", "import fx_reach.plugin", "import fx_reach -> import fx_reach.env"]
    assert "import fx_reach.plugin -> import fx_reach.patches" in at_import
    assert not any("typing_only" in step for step in at_import)  # imported only under TYPE_CHECKING
    configure = [r for r in imported if steps(r.via).endswith("configure()")]
    assert [r.at_import for r in configure] == [False]  # a function import-time code calls, not a module
    calls = [steps(r.via) for r in called]
    assert calls[0] == "" and "apply() -> import fx_reach.kernels" in calls
    assert not any(step.startswith("apply() -> import fx_reach ->") for step in calls)  # the import ran it
