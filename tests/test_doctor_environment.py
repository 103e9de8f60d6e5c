"""Doctor reads the plugin in the plugin's environment, not its own: the grammar of the Python the plugin
requires, and where each build backend puts the import packages."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.helpers import build_file_tree
from vllm_scaffold.doctor.runner import diagnose
from vllm_scaffold.project import read_project
from vllm_scaffold.project.python_syntax import newer_grammar

NEWER_SYNTAX = '''\
"""Python 3.12 syntax: a type alias, type parameters, an f-string nesting its own quotes."""
from vllm.fx_gone import FxGone

type Scores = dict[str, float]


def first[T](items: list[T]) -> T:
    return items[0]


class Box[T]:
    def label(self, names: dict[str, str]) -> str:
        return f"{names["box"]}"
'''

PLUGIN = '''\
"""The general plugin."""
from fx_newer import boxes


def register() -> None:
    """Nothing to register."""
'''

# the grammar tests need a doctor older than the syntax it reads
ON_311 = pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="reads Python 3.12 syntax on Python 3.11")


def _plugin(dest: Path, requires_python: str) -> Path:
    pyproject = (
        '[build-system]\nrequires = ["hatchling>=1.21"]\nbuild-backend = "hatchling.build"\n\n'
        f'[project]\nname = "fx-newer"\nversion = "0.1.0"\nrequires-python = "{requires_python}"\n\n'
        '[project.entry-points."vllm.general_plugins"]\nfx_newer = "fx_newer.plugin:register"\n'
    )
    return build_file_tree(
        {
            "pyproject.toml": pyproject,
            "src/fx_newer/__init__.py": '"""Doctor fixture: Python 3.12 syntax."""\n',
            "src/fx_newer/plugin.py": PLUGIN,
            "src/fx_newer/boxes.py": NEWER_SYNTAX,
        },
        dest,
    )


@ON_311
def test_syntax_of_the_python_the_plugin_requires_is_read(tmp_path: Path) -> None:
    report = diagnose(_plugin(tmp_path / "newer", ">=3.12"), live=False, vllm_plugins=None)
    assert "syntax-error" not in report.codes
    # the module was read: its import of a module vLLM does not have is found on the alias's line
    assert [f.where for f in report.findings if f.code == "vllm-import-missing"] == ["src/fx_newer/boxes.py:2"]


@ON_311
def test_syntax_an_allowed_python_cannot_read_is_an_error(tmp_path: Path) -> None:
    report = diagnose(_plugin(tmp_path / "older", ">=3.11"), live=False, vllm_plugins=None)
    assert [f.where for f in report.findings if f.code == "syntax-error"] == ["src/fx_newer/boxes.py"]


@ON_311
@pytest.mark.parametrize(
    ("requires", "grammar"),
    [
        (None, None),
        (">=3.11", None),
        (">=3.10,<3.12", None),
        (">=3.12", "3.12"),
        ("~=3.13", "3.13"),
        ("nonsense", None),
    ],
)
def test_the_grammar_read_is_the_oldest_python_allowed_above_doctors(requires: str | None, grammar: str | None) -> None:
    assert newer_grammar(requires) == grammar


SKBUILD = '[build-system]\nrequires = ["scikit-build-core"]\nbuild-backend = "scikit_build_core.build"\n\n'
PROJECT = '[project]\nname = "fx-native"\nversion = "0.1.0"\n\n'


@pytest.mark.parametrize(
    ("files", "where"),
    [
        # scikit-build-core: wheel.packages as a list of directories
        ({"pyproject.toml": SKBUILD + PROJECT + '[tool.scikit-build]\nwheel.packages = ["lib/fx_native"]\n'}, "lib"),
        # as a table of install path -> source directory
        (
            {"pyproject.toml": SKBUILD + PROJECT + '[tool.scikit-build.wheel.packages]\nfx_native = "py/fx_native"\n'},
            "py",
        ),
        # unset: python/<name> is one of the defaults
        ({"pyproject.toml": SKBUILD + PROJECT + "[tool.scikit-build]\ncmake.version = '>=3.26'\n"}, "python"),
        # setuptools: package_dir joined from literals, with os.path.join imported under another name
        (
            {
                "setup.py": "from os.path import join as Path\nfrom setuptools import setup\n\nNAME = 'fx_native'\n"
                "packages = [NAME, NAME + '.ops']\n\n\ndef main():\n    setup(name='fx-native', packages=packages, "
                "package_dir={'': Path('src', 'cpu', 'python')})\n"
            },
            "src/cpu/python",
        ),
    ],
)
def test_each_build_backend_puts_the_import_package_where_doctor_reads_it(
    files: dict[str, str], where: str, tmp_path: Path
) -> None:
    package = f"{where}/fx_native"
    tree = {**files, f"{package}/__init__.py": "", f"{package}/ops/__init__.py": "", "fx_native_decoy.py": ""}
    project = read_project(build_file_tree(tree, tmp_path / "native"))
    assert {name: path.relative_to(project.root).as_posix() for name, path in project.packages.items()} == {
        "fx_native": package
    }
    assert not project.unread
