"""`vllm-scaffold add`: components into generated and hand-written projects, bytes outside our keys kept."""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers import HANDWRITTEN_PYPROJECT, run_cli, snapshot
from vllm_scaffold import HARNESS_REQUIREMENT, harness_requirement


def only_insertions(before: str, after: str) -> list[str]:
    """The lines `after` adds to `before`; fails if any line of `before` was changed or removed."""
    diff = list(difflib.ndiff(before.splitlines(), after.splitlines()))
    removed = [line for line in diff if line.startswith("- ")]
    assert not removed, f"lines changed or removed: {removed}"
    return [line[2:] for line in diff if line.startswith("+ ")]


def test_add_into_handwritten_project_keeps_every_byte_outside_its_keys(handwritten: Path) -> None:
    result = run_cli("add", "general-plugin", "tracing", "--project", str(handwritten), "--defaults")
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


def test_add_into_a_flat_layout_project(tmp_path: Path) -> None:
    (tmp_path / "flatpkg").mkdir()
    (tmp_path / "flatpkg" / "__init__.py").write_text("")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "flatpkg"\nversion = "1"\n')
    result = run_cli("add", "general-plugin", "tracing", "--project", str(tmp_path), "--defaults")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "flatpkg" / "tracing" / "registration.py").is_file()
    assert (tmp_path / "flatpkg" / "vllm_plugin.py").is_file()


def test_add_twice_with_the_same_name_is_refused_and_changes_nothing(handwritten: Path) -> None:
    assert run_cli("add", "general-plugin", "tracing", "--project", str(handwritten), "--defaults").exit_code == 0
    before = snapshot(handwritten)
    result = run_cli("add", "general-plugin", "tracing", "--project", str(handwritten), "--defaults")
    assert result.exit_code == 2
    assert "already has a component named 'tracing'" in result.stderr
    assert snapshot(handwritten) == before


def test_add_second_component_to_a_generated_package(tmp_path: Path) -> None:
    dest = tmp_path / "tracer"
    assert run_cli("new", "general-plugin", "tracer", "--dest", str(dest), "--defaults").exit_code == 0
    result = run_cli("add", "general-plugin", "audit", "--project", str(dest), "--defaults")
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


def test_add_dry_run_shows_a_diff_and_writes_nothing(handwritten: Path) -> None:
    before = snapshot(handwritten)
    result = run_cli("add", "general-plugin", "tracing", "--project", str(handwritten), "--dry-run", "--defaults")
    assert result.exit_code == 0, result.output
    assert "+++ b/pyproject.toml" in result.stdout
    assert '+handmade_kernels = "handmade_kernels.vllm_plugin:register"' in result.stdout
    assert "dry run: nothing was written" in result.stdout
    assert snapshot(handwritten) == before


def test_add_uses_the_current_directory_by_default(handwritten: Path) -> None:
    result = run_cli("add", "general-plugin", "tracing", "--defaults", cwd=handwritten)
    assert result.exit_code == 0, result.output
    assert (handwritten / "src/handmade_kernels/tracing").is_dir()


HANDWRITTEN_PLUGIN = '''"""The project's own vLLM general plugin."""

import logging

logger = logging.getLogger(__name__)


def register() -> None:
    """Sets up logging for the kernels."""
    logger.debug("handmade kernels loaded")
'''


def with_general_plugin(root: Path, target: str, source: str = HANDWRITTEN_PLUGIN) -> Path:
    """The hand-written project, now declaring a general plugin `handmade = target` in src/.../plugins.py."""
    (root / "src/handmade_kernels/plugins.py").write_text(source)
    pyproject = root / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text() + f'\n[project.entry-points."vllm.general_plugins"]\nhandmade = "{target}"\n'
    )
    return root


def test_add_reuses_a_handwritten_register_function_and_wires_the_call_in(handwritten: Path) -> None:
    project = with_general_plugin(handwritten, "handmade_kernels.plugins:register")
    before = (project / "pyproject.toml").read_text()
    result = run_cli("add", "general-plugin", "tracing", "--project", str(project), "--defaults")
    assert result.exit_code == 0, result.output
    pyproject = tomllib.loads((project / "pyproject.toml").read_text())
    # No second general plugin: the project's own one now also runs the components' registrations.
    assert pyproject["project"]["entry-points"]["vllm.general_plugins"] == {
        "handmade": "handmade_kernels.plugins:register"
    }
    assert "registration: through the project's general plugin 'handmade'" in result.stdout
    only_insertions(before, (project / "pyproject.toml").read_text())
    added = only_insertions(HANDWRITTEN_PLUGIN, (project / "src/handmade_kernels/plugins.py").read_text())
    call = ["    from handmade_kernels import vllm_plugin", "    vllm_plugin.register()"]
    assert [line for line in added if line][-2:] == call
    # Calling the hand-written plugin, as vLLM does in each process, now reaches the new component.
    trace = project / "trace.txt"
    code = "from handmade_kernels.plugins import register; register(); register()"
    env = {**os.environ, "PYTHONPATH": str(project / "src"), "HANDMADE_KERNELS_TRACE_FILE": str(trace)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=600)
    assert len(trace.read_text().splitlines()) == 1
    # A second component goes through the same plugin, without a second call.
    result = run_cli("add", "general-plugin", "audit", "--project", str(project), "--defaults")
    assert result.exit_code == 0, result.output
    assert "which calls handmade_kernels.vllm_plugin:register" in result.stdout
    assert (project / "src/handmade_kernels/plugins.py").read_text().count("vllm_plugin.register()") == 1


def test_add_prints_the_call_when_the_handwritten_plugin_can_return_early(handwritten: Path) -> None:
    source = HANDWRITTEN_PLUGIN.replace(
        '    """Sets up logging for the kernels."""\n',
        '    """Sets up logging for the kernels."""\n    if logger.disabled:\n        return\n',
    )
    project = with_general_plugin(handwritten, "handmade_kernels.plugins:register", source)
    result = run_cli("add", "general-plugin", "tracing", "--project", str(project), "--defaults")
    assert result.exit_code == 0, result.output
    assert (project / "src/handmade_kernels/plugins.py").read_text() == source
    assert "add this line at its end: from handmade_kernels import vllm_plugin; vllm_plugin.register()" in result.stdout
    entry_points = tomllib.loads((project / "pyproject.toml").read_text())["project"]["entry-points"]
    assert list(entry_points["vllm.general_plugins"]) == ["handmade"]


def test_add_explains_a_second_general_plugin_when_the_existing_one_is_not_a_function(handwritten: Path) -> None:
    source = HANDWRITTEN_PLUGIN + '\n\nclass Plugin:\n    @staticmethod\n    def setup() -> None:\n        """."""\n'
    project = with_general_plugin(handwritten, "handmade_kernels.plugins:Plugin.setup", source)
    result = run_cli("add", "general-plugin", "tracing", "--project", str(project), "--defaults")
    assert result.exit_code == 0, result.output
    entry_points = tomllib.loads((project / "pyproject.toml").read_text())["project"]["entry-points"]
    assert entry_points["vllm.general_plugins"] == {
        "handmade": "handmade_kernels.plugins:Plugin.setup",
        "handmade_kernels": "handmade_kernels.vllm_plugin:register",
    }
    assert "registration: through a new general plugin 'handmade_kernels'" in result.stdout
    assert "a second general plugin, because 'handmade' (handmade_kernels.plugins:Plugin.setup) is not" in " ".join(
        result.stdout.split()
    )
    assert (project / "src/handmade_kernels/plugins.py").read_text() == source


def test_add_puts_the_harness_in_the_test_extra(handwritten: Path) -> None:
    result = run_cli("add", "logits-processor", "boost", "--project", str(handwritten), "--defaults")
    assert result.exit_code == 0, result.output
    extras = tomllib.loads((handwritten / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras == {"dev": ["pytest"], "test": [HARNESS_REQUIREMENT]}
    assert f'project.optional-dependencies.test += "{HARNESS_REQUIREMENT}"' in result.stdout
    # A seam whose tests need a harness extra (the general plugin's Ray layouts) adds it to the same entry.
    result = run_cli("add", "general-plugin", "tracing", "--project", str(handwritten), "--defaults")
    assert result.exit_code == 0, result.output
    extras = tomllib.loads((handwritten / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    with_ray = harness_requirement(["ray"])
    assert extras["test"] == [with_ray] and with_ray == "vllm-scaffold-testing[ray]~=0.1.0"
    assert f'project.optional-dependencies.test: "{HARNESS_REQUIREMENT}" -> "{with_ray}"' in result.stdout
    # Already there: left alone.
    result = run_cli("add", "stat-logger", "usage", "--project", str(handwritten), "--defaults")
    assert result.exit_code == 0, result.output
    extras = tomllib.loads((handwritten / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["test"] == [with_ray]
    assert "optional-dependencies.test" not in result.stdout


def test_add_prints_the_test_dependency_when_the_extras_are_dynamic(tmp_path: Path) -> None:
    (tmp_path / "dynpkg").mkdir()
    (tmp_path / "dynpkg" / "__init__.py").write_text("")
    pyproject = '[project]\nname = "dynpkg"\nversion = "1"\ndynamic = ["optional-dependencies"]\n'
    (tmp_path / "pyproject.toml").write_text(pyproject)
    result = run_cli("add", "general-plugin", "tracing", "--project", str(tmp_path), "--defaults")
    assert result.exit_code == 0, result.output
    assert "optional-dependencies" not in tomllib.loads((tmp_path / "pyproject.toml").read_text())["project"]
    assert f"test dependency: add {harness_requirement(['ray'])} to the extra your tests install" in result.stdout


def test_a_second_attention_backend_on_custom_is_refused(handwritten: Path) -> None:
    assert run_cli("add", "attention-backend", "a", "--project", str(handwritten), "--defaults").exit_code == 0
    before = snapshot(handwritten)
    result = run_cli("add", "attention-backend", "b", "--project", str(handwritten), "--defaults")
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert "attention backend 'a' already takes vLLM's single CUSTOM slot" in message
    assert "--data backend_name=B" in message
    assert snapshot(handwritten) == before
    # The named registration it offers works.
    result = run_cli(
        "add", "attention-backend", "b", "--project", str(handwritten), "--defaults", "--data", "backend_name=B"
    )
    assert result.exit_code == 0, result.output
    registration = (handwritten / "src/handmade_kernels/b/registration.py").read_text()
    assert 'BACKEND_NAME = "B"' in registration and "register_backend(BACKEND_NAME, BACKEND_PATH)" in registration


HANDWRITTEN_BACKEND = """\
from vllm.v1.attention.backends.registry import AttentionBackendEnum, register_backend


def register() -> None:
    register_backend(AttentionBackendEnum.CUSTOM, "handmade_kernels.attention.PagedBackend")
"""


def test_a_hand_written_backend_on_custom_is_seen(handwritten: Path) -> None:
    """The CUSTOM slot taken by the project's own code (no answers file of `add`) refuses a second backend too."""
    (handwritten / "src/handmade_kernels/plugin.py").write_text(HANDWRITTEN_BACKEND)
    pyproject = handwritten / "pyproject.toml"
    entry_point = '\n[project.entry-points."vllm.general_plugins"]\nhandmade = "handmade_kernels.plugin:register"\n'
    pyproject.write_text(pyproject.read_text() + entry_point)
    before = snapshot(handwritten)
    result = run_cli("add", "attention-backend", "fast", "--project", str(handwritten), "--defaults")
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert (
        "attention backend 'handmade_kernels.attention.PagedBackend' (registered at src/handmade_kernels/plugin.py:5)"
        " already takes vLLM's single CUSTOM slot in this project, and 'fast' would silently replace it" in message
    ), message
    assert "--data backend_name=FAST" in message
    assert snapshot(handwritten) == before
    result = run_cli(
        "add", "attention-backend", "fast", "--project", str(handwritten), "--defaults", "--data", "backend_name=FAST"
    )
    assert result.exit_code == 0, result.output


def test_a_second_general_plugin_does_not_take_the_name_of_the_first(handwritten: Path) -> None:
    pyproject = handwritten / "pyproject.toml"
    entry_point = '\n[project.entry-points."vllm.general_plugins"]\nhandmade_kernels = "elsewhere:register"\n'
    pyproject.write_text(pyproject.read_text() + entry_point)
    result = run_cli("add", "general-plugin", "tracing", "--project", str(handwritten), "--defaults")
    assert result.exit_code == 0, result.output
    assert tomllib.loads(pyproject.read_text())["project"]["entry-points"]["vllm.general_plugins"] == {
        "handmade_kernels": "elsewhere:register",
        "handmade_kernels_components": "handmade_kernels.vllm_plugin:register",
    }
    plugin_module = (handwritten / "src/handmade_kernels/vllm_plugin.py").read_text()
    assert "entry point `handmade_kernels_components`" in " ".join(plugin_module.split())


def test_add_renders_against_the_range_the_author_narrowed(tmp_path: Path) -> None:
    """A patch target only part of the default range has: refused with the narrower range to declare, then
    taken once the author declares it in [tool.vllm-scaffold] vllm (the base snapshot renders against it too)."""
    project = tmp_path / "narrowed"
    assert run_cli("new", "general-plugin", "narrowed", "--dest", str(project), "--defaults").exit_code == 0
    target = "--data=target=vllm.v1.sample.sampler:Sampler.apply_temperature"
    refused = run_cli("add", "patch", "temperature", "--project", str(project), "--defaults", target)
    if refused.exit_code == 0:
        pytest.skip("every release of the default range has the target")
    narrower = refused.stderr.split("narrow the package's vllm range to '")[1].split("'")[0]
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text()
    declared = tomllib.loads(text)["tool"]["vllm-scaffold"]["vllm"]
    pyproject.write_text(text.replace(f'vllm = "{declared}"', f'vllm = "{narrower}"'))
    added = run_cli("add", "patch", "temperature", "--project", str(project), "--defaults", target)
    assert added.exit_code == 0, added.output
    assert (project / "src/narrowed/temperature/patch.py").is_file()
