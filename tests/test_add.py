"""`vllm-scaffold add`: components into generated and hand-written projects, bytes outside our keys kept."""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path

from tests.conftest import HANDWRITTEN_PYPROJECT, snapshot


def only_insertions(before: str, after: str) -> list[str]:
    """The lines `after` adds to `before`; fails if any line of `before` was changed or removed."""
    diff = list(difflib.ndiff(before.splitlines(), after.splitlines()))
    removed = [line for line in diff if line.startswith("- ")]
    assert not removed, f"lines changed or removed: {removed}"
    return [line[2:] for line in diff if line.startswith("+ ")]


def test_add_into_handwritten_project_keeps_every_byte_outside_its_keys(cli, handwritten: Path) -> None:
    result = cli("add", "general-plugin", "tracing", "--project", str(handwritten), "--defaults")
    assert result.exit_code == 0, result.output
    after = (handwritten / "pyproject.toml").read_text()
    added = only_insertions(HANDWRITTEN_PYPROJECT, after)
    assert '[project.entry-points."vllm.general_plugins"]' in added
    assert 'handmade_kernels = "handmade_kernels.vllm_plugin:register"' in added
    assert "[tool.vllm-scaffold]" in added and "[[tool.vllm-scaffold.components]]" in added
    pyproject = tomllib.loads(after)
    assert pyproject["tool"]["ruff"] == {"line-length": 99}
    assert (handwritten / "src/handmade_kernels/vllm_plugin.py").is_file()
    assert (handwritten / "src/handmade_kernels/tracing/registration.py").is_file()
    # It reports every file it creates and every key it changes.
    assert "create src/handmade_kernels/vllm_plugin.py" in result.stdout
    assert 'project.entry-points."vllm.general_plugins".handmade_kernels' in result.stdout
    assert "tool.vllm-scaffold.components[tracing]" in result.stdout


def test_add_into_a_flat_layout_project(cli, tmp_path: Path) -> None:
    (tmp_path / "flatpkg").mkdir()
    (tmp_path / "flatpkg" / "__init__.py").write_text("")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "flatpkg"\nversion = "1"\n')
    result = cli("add", "general-plugin", "tracing", "--project", str(tmp_path), "--defaults")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "flatpkg" / "tracing" / "registration.py").is_file()
    assert (tmp_path / "flatpkg" / "vllm_plugin.py").is_file()


def test_add_twice_with_the_same_name_is_refused_and_changes_nothing(cli, handwritten: Path) -> None:
    assert cli("add", "general-plugin", "tracing", "--project", str(handwritten), "--defaults").exit_code == 0
    before = snapshot(handwritten)
    result = cli("add", "general-plugin", "tracing", "--project", str(handwritten), "--defaults")
    assert result.exit_code == 2
    assert "already has a component named 'tracing'" in result.stderr
    assert snapshot(handwritten) == before


def test_add_second_component_to_a_generated_package(cli, tmp_path: Path) -> None:
    dest = tmp_path / "tracer"
    assert cli("new", "general-plugin", "tracer", "--dest", str(dest), "--defaults").exit_code == 0
    result = cli("add", "general-plugin", "audit", "--project", str(dest), "--defaults")
    assert result.exit_code == 0, result.output
    plugin_module = (dest / "src/tracer/vllm_plugin.py").read_text()
    assert plugin_module.index('"tracer.hooks.registration:register"') < plugin_module.index(
        '"tracer.audit.registration:register"'
    )
    components = tomllib.loads((dest / "pyproject.toml").read_text())["tool"]["vllm-scaffold"]["components"]
    assert [c["name"] for c in components] == ["tracer", "audit"]
    readme = (dest / "README.md").read_text()
    assert "[`tracer`](docs/hooks.md)" in readme and "[`audit`](docs/audit.md)" in readme
    assert (dest / "tests/test_audit_processes.py").is_file()


def test_add_dry_run_shows_a_diff_and_writes_nothing(cli, handwritten: Path) -> None:
    before = snapshot(handwritten)
    result = cli("add", "general-plugin", "tracing", "--project", str(handwritten), "--dry-run", "--defaults")
    assert result.exit_code == 0, result.output
    assert "+++ b/pyproject.toml" in result.stdout
    assert '+handmade_kernels = "handmade_kernels.vllm_plugin:register"' in result.stdout
    assert "dry run: nothing was written" in result.stdout
    assert snapshot(handwritten) == before


def test_add_uses_the_current_directory_by_default(cli, handwritten: Path) -> None:
    result = cli("add", "general-plugin", "tracing", "--defaults", cwd=handwritten)
    assert result.exit_code == 0, result.output
    assert (handwritten / "src/handmade_kernels/tracing").is_dir()
