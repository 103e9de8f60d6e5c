"""Doctor reads the plugins people write: every packaging layout, built wheels and sdists, installed
distributions, and a whole environment of installed plugins (`--installed`).

tests/fixtures/doctor/_layouts/<layout>/ is a small clean plugin in one packaging style;
`clashing_site` installs two plugins that clash once side by side.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.clashing_site import ENVIRONMENT_CODES, LIVE_PLUGINS, environ_for
from tests.clashing_site import build as build_clashing_site
from tests.helpers import run_cli
from vllm_scaffold.doctor.runner import diagnose, diagnose_installed
from vllm_scaffold.project import Project, read_project
from vllm_scaffold_testing import engine
from vllm_scaffold_testing.engine import install_privately

FIXTURES = Path(__file__).parent / "fixtures" / "doctor"
LAYOUTS = FIXTURES / "_layouts"

# layout -> (modules read, vLLM entry points read, metadata files read, codes reported)
EXPECTED = {
    "setup-py-only": (2, 1, ["setup.py"], set()),
    "pyproject-and-setup-py": (2, 1, ["pyproject.toml", "setup.py"], set()),
    "setup-cfg": (2, 1, ["setup.py", "setup.cfg"], set()),
    "maturin": (2, 1, ["pyproject.toml"], set()),
    "namespace": (1, 1, ["pyproject.toml"], set()),
    "requirements-pins": (2, 1, ["pyproject.toml", "requirements.txt"], {"vllm-version-outside-range"}),
}


def test_every_layout_has_an_expectation() -> None:
    assert sorted(p.name for p in LAYOUTS.iterdir()) == sorted(EXPECTED)


@pytest.mark.parametrize("layout", sorted(EXPECTED))
def test_layout_is_read(layout: str) -> None:
    modules, entry_points, read_from, codes = EXPECTED[layout]
    report = diagnose(LAYOUTS / layout, live=False)
    assert report.read["modules"] == modules, report.read
    assert report.read["vllm_entry_points"] == entry_points, report.read
    assert report.read["read_from"] == read_from, report.read
    assert report.codes == codes, [f.as_json() for f in report.findings]


def test_requirements_pin_is_read_with_its_line() -> None:
    report = diagnose(LAYOUTS / "requirements-pins", live=False)
    assert [f.where for f in report.findings] == ["requirements.txt:3"]
    project = read_project(LAYOUTS / "requirements-pins")
    assert [(r.name, r.specifier) for r in project.requirements] == [("vllm", "==0.20.1"), ("numpy", "<3")]


def test_setup_py_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    (tmp_path / "setup.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nfrom setuptools import setup\nsetup(name='fx-inert', "
        "entry_points={'vllm.general_plugins': ['fx_inert = fx_inert:register']})\n",
        encoding="utf-8",
    )
    (tmp_path / "fx_inert").mkdir()
    (tmp_path / "fx_inert" / "__init__.py").write_text("def register() -> None:\n    pass\n", encoding="utf-8")
    project = read_project(tmp_path)
    assert [ep.value for ep in project.vllm_entry_points] == ["fx_inert:register"]
    assert not marker.exists()


def test_add_and_the_harness_read_every_layout() -> None:
    """`add` finds the package where the build configuration puts it; the harness (which imports nothing
    from the tool) recognises a setup.py-only plugin and a setup.cfg name through the build backend's
    metadata."""
    assert Project.load(LAYOUTS / "maturin").package_dir == "python/fx_layout_maturin"
    assert engine.is_vllm_plugin_project(LAYOUTS / "setup-py-only")
    assert engine.project_distribution(LAYOUTS / "setup-cfg") == "fx-layout-setup-cfg"
    assert not engine.is_vllm_plugin_project(FIXTURES / "no-vllm-entry-points")


def test_add_keeps_refusing_a_project_without_pyproject() -> None:
    result = run_cli("add", "logits-processor", "extra", "--project", str(LAYOUTS / "setup-py-only"), "--defaults")
    assert result.exit_code == 2
    assert "no pyproject.toml" in result.output


@pytest.fixture(scope="module")
def installed_clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_privately(FIXTURES / "clean", tmp_path_factory.mktemp("site"))


def _zip_tree(root: Path, archive: Path) -> Path:
    with zipfile.ZipFile(archive, "w") as out:
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                out.write(path, path.relative_to(root).as_posix())
    return archive


def test_wheel_is_read(installed_clean: Path, tmp_path: Path) -> None:
    wheel = _zip_tree(installed_clean, tmp_path / "fx_clean-0.1.0-py3-none-any.whl")
    report = diagnose(wheel, live=False)
    assert report.package == "fx-clean"
    assert (report.read["modules"], report.read["vllm_entry_points"]) == (3, 1)
    assert not report.findings, [f.as_json() for f in report.findings]


def test_sdist_is_read(tmp_path: Path) -> None:
    sdist = tmp_path / "fx_layout_setup_py-0.1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as out:
        out.add(LAYOUTS / "setup-py-only", arcname="fx_layout_setup_py-0.1.0")
    report = diagnose(sdist, live=False)
    assert (report.package, report.read["modules"], report.read["vllm_entry_points"]) == ("fx-layout-setup-py", 2, 1)


def test_installed_distribution_is_read_by_name(installed_clean: Path) -> None:
    environ = {**os.environ, "PYTHONPATH": str(installed_clean)}
    report = diagnose("fx-clean", live=False, environ=environ)
    assert (report.read["modules"], report.read["vllm_entry_points"]) == (3, 1)
    assert report.read["read_from"][-1].endswith(".dist-info/entry_points.txt")


def test_unknown_target_is_a_one_line_error() -> None:
    result = run_cli("doctor", "fx-not-installed-anywhere", "--no-live")
    assert result.exit_code == 2
    assert "no directory, archive or installed distribution named 'fx-not-installed-anywhere'" in result.output


@pytest.fixture(scope="module")
def clashing_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """fx-env-alpha and fx-env-beta installed side by side."""
    return build_clashing_site(tmp_path_factory.mktemp("clashing"), tmp_path_factory.mktemp("sources"))


def test_installed_reports_what_clashes(clashing_site: Path) -> None:
    result = diagnose_installed(live=True, vllm_plugins=LIVE_PLUGINS, environ=environ_for(clashing_site))
    assert [r.package for r in result.packages] == ["fx-env-alpha", "fx-env-beta"]
    found = [f.as_json() for f in result.environment.findings]
    assert result.environment.codes == ENVIRONMENT_CODES - {"env-platforms-several"}, found
    dropped = [f for f in result.environment.findings if f.code == "env-plugins-drops"]
    assert len(dropped) == 1 and "fx-env-beta" in dropped[0].message
    assert result.has_error


def test_installed_without_clashes_has_no_environment_finding(clashing_site: Path, tmp_path: Path) -> None:
    alone = tmp_path / "alone"
    shutil.copytree(clashing_site, alone, ignore=shutil.ignore_patterns("fx_env_beta*"))
    result = diagnose_installed(live=True, environ=environ_for(alone))
    assert [r.package for r in result.packages] == ["fx-env-alpha"]
    assert not result.environment.findings


def test_cli_installed_json(clashing_site: Path) -> None:
    import subprocess

    completed = subprocess.run(
        [sys.executable, "-m", "vllm_scaffold", "doctor", "--installed", "--no-live", "--json"],
        env=environ_for(clashing_site),
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 1, completed.stderr
    data = json.loads(completed.stdout)
    assert {p["package"] for p in data["packages"]} == {"fx-env-alpha", "fx-env-beta"}
    codes = {f["code"] for f in data["environment"]["findings"]}
    # without the detectors called, two installed platforms are a warning, not a certainty
    assert codes == ENVIRONMENT_CODES - {"env-platforms-conflict", "env-plugins-drops"}


def test_a_pth_file_that_runs_code_is_found_in_every_kind_of_target(tmp_path: Path) -> None:
    """The fixture's source tree ships fx_pth_runs_code.pth (an import line) and fx_paths.pth (paths only), and
    holds notes.pth, which no build configuration names: the import line is reported from the wheel, the
    sdist and the installed distribution alike."""
    fixture = Path(__file__).parent / "fixtures" / "doctor" / "pth-runs-code"
    site = install_privately(fixture, tmp_path / "site")
    assert (site / "fx_pth_runs_code.pth").is_file() and (site / "fx_paths.pth").is_file()
    wheel = _zip_tree(site, tmp_path / "fx_pth_runs_code-0.1.0-py3-none-any.whl")
    sdist = tmp_path / "fx_pth_runs_code-0.1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as out:
        out.add(fixture, arcname="fx_pth_runs_code-0.1.0")
    installed = {**os.environ, "PYTHONPATH": str(site)}
    for target, environ in ((wheel, None), (sdist, None), ("fx-pth-runs-code", installed)):
        report = diagnose(target, live=False, environ=environ)
        found = [f.where for f in report.findings if f.code == "pth-runs-code"]
        assert found == ["fx_pth_runs_code.pth:2"], (target, [f.as_json() for f in report.findings])


def test_a_pth_file_in_a_wheels_data_folder_counts_and_one_deeper_does_not(tmp_path: Path) -> None:
    """Python's site module reads the .pth files of site-packages itself: a wheel's *.data/purelib installs
    there; a .pth inside the import package does not run."""
    wheel = tmp_path / "fx_data_pth-0.1.0-py3-none-any.whl"
    info = "fx_data_pth-0.1.0.dist-info"
    with zipfile.ZipFile(wheel, "w") as out:
        out.writestr("fx_data_pth/__init__.py", '"""Fx."""\n')
        out.writestr("fx_data_pth/plugin.py", "def register() -> None:\n    pass\n")
        out.writestr("fx_data_pth/inner.pth", "import fx_data_pth\n")
        out.writestr("fx_data_pth-0.1.0.data/purelib/fx_data_pth.pth", "/opt/fx\nimport\tfx_data_pth.plugin\n")
        out.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: fx-data-pth\nVersion: 0.1.0\n")
        out.writestr(f"{info}/entry_points.txt", "[vllm.general_plugins]\nfx = fx_data_pth.plugin:register\n")
    report = diagnose(wheel, live=False)
    assert [f.where for f in report.findings if f.code == "pth-runs-code"] == [
        "fx_data_pth-0.1.0.data/purelib/fx_data_pth.pth:2"
    ], [f.as_json() for f in report.findings]
