"""The release canary's steps (.github/workflows/release-canary.yml), run by CI, never imported by the plugin.

Once a week the canary asks whether the newest vLLM breaks this plugin before its users find out: the
in-engine tests on the newest CPU build of vLLM, `vllm-scaffold doctor --vllm` against the newest published
release (the CUDA build's API, read from its wheel without installing it), and `vllm-scaffold check-update`.
Each check step saves its output and exit status under `canary/` and passes, so every check runs; the `report`
step then opens an issue in this repository (or comments on the open one) when one failed, closes the open one
when all pass, and fails the run when one failed.

Given the release CI pins, the doctor step also saves doctor's coupling inventory of the plugin (the
inventory of doctor's JSON report) between that release and the checked one, in
canary/inventory/inventory.json (uploaded with the run), and the entries that changed, which the issue lists
under the failed checks.

Standard library only, so it runs before anything is installed. The hosting API is GitHub's REST API at
$GITHUB_API_URL (set by the runner), authenticated with $GITHUB_TOKEN; $PYPI_URL (default https://pypi.org) is
where the newest release is looked up.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESULTS = Path("canary")
INVENTORY = RESULTS / "inventory"  # a folder: the check results are canary/*.json
INVENTORY_KINDS = {
    "bases": "base class",
    "configs_built": "config built",
    "patch_targets": "patch target",
    "imports": "import",
}
LABEL = "release-canary"
TITLE = "Release canary: the newest vLLM breaks this plugin"
# What the issue shows of a check's output: its end, where pytest and doctor summarise.
TAIL = 6000


@dataclass
class Check:
    name: str  # tests, doctor, check-update
    title: str
    command: list[str]
    returncode: int
    output: str

    @property
    def passed(self) -> bool:
        return self.returncode == 0


def newest_release(distribution: str) -> str:
    """The newest final release of `distribution` on the package index ($PYPI_URL's JSON API)."""
    index = os.environ.get("PYPI_URL", "https://pypi.org").rstrip("/")
    with urllib.request.urlopen(f"{index}/pypi/{distribution}/json", timeout=60) as response:
        return str(json.load(response)["info"]["version"])


def run_check(name: str, title: str, command: list[str]) -> Check:
    """Runs `command`, prints its output as it would have, and saves the result in canary/NAME.json."""
    completed = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    print(completed.stdout, end="")
    check = Check(name, title, command, completed.returncode, completed.stdout)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(check.__dict__), encoding="utf-8")
    print(f"{title}: {'passed' if check.passed else f'failed (exit code {check.returncode})'}")
    return check


def load_checks(results: Path) -> list[Check]:
    return [Check(**json.loads(path.read_text(encoding="utf-8"))) for path in sorted(results.glob("*.json"))]


def write_inventory(pinned: str, release: str) -> str:
    """Doctor's inventory between the `pinned` release and `release`, saved under canary/inventory/; the
    entries that changed, as Markdown lines (saved there too), or why there is none."""
    command = ["vllm-scaffold", "doctor", ".", "--vllm", pinned, "--vllm", release, "--json"]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    INVENTORY.mkdir(parents=True, exist_ok=True)
    try:
        inventory = json.loads(completed.stdout)["inventory"]
    except (json.JSONDecodeError, KeyError, TypeError):
        problem = completed.stderr.strip()[-500:]
        lines = [f"- `{' '.join(command)}` gave no inventory (exit code {completed.returncode}): {problem}"]
    else:
        (INVENTORY / "inventory.json").write_text(json.dumps(inventory, indent=1) + "\n", encoding="utf-8")
        lines = [
            f"- {INVENTORY_KINDS[kind]} `{entry['name']}` ({_place(entry['at'][0])}): {how}"
            for kind in INVENTORY_KINDS
            for entry in inventory[kind]
            for how in entry.get("changed", {}).values()
        ] or [f"- none of the vLLM names the plugin uses changed between {pinned} and {release}"]
    text = "\n".join(lines) + "\n"
    (INVENTORY / "changed.md").write_text(text, encoding="utf-8")
    return text


def _place(place: dict[str, Any]) -> str:
    """Where the plugin uses a name: `file:line`, or the file alone (a patch declared in pyproject.toml)."""
    return f"{place['file']}:{place['line']}" if place.get("line") else str(place["file"])


def body(checks: list[Check], run_url: str, changed: str = "") -> str:
    """The issue or comment text: which checks failed, each with the end of its output, then the inventory's
    entries that changed (`changed`, Markdown lines)."""
    failed = [check for check in checks if not check.passed]
    lines = [f"The release canary failed in [this run]({run_url}):", ""]
    lines += [f"- {'failed' if not check.passed else 'passed'}: {check.title}" for check in checks]
    for check in failed:
        lines += [
            "",
            f"### {check.title}",
            "",
            f"`{' '.join(check.command)}` (exit code {check.returncode})",
            "",
        ]
        lines += ["```", check.output[-TAIL:].rstrip(), "```"]
    if changed:
        lines += ["", "### What changed in the plugin's coupling inventory", "", changed.rstrip()]
    return "\n".join(lines) + "\n"


class Hosting:
    """The few calls of the hosting API (GitHub REST) the canary makes."""

    def __init__(self, api: str, repository: str, token: str) -> None:
        self.base = f"{api.rstrip('/')}/repos/{repository}"
        self.token = token

    def call(self, method: str, path: str, payload: dict[str, Any] | None = None) -> Any:
        request = urllib.request.Request(
            f"{self.base}{path}",
            data=None if payload is None else json.dumps(payload).encode(),
            method=method,
            headers={
                "Accept": "application/vnd.github+json",
                "Authorization": f"Bearer {self.token}",
                "Content-Type": "application/json",
                "X-GitHub-Api-Version": "2022-11-28",
            },
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.load(response)

    def open_issue(self) -> dict[str, Any] | None:
        """The canary's open issue (labelled release-canary), if there is one."""
        issues = self.call("GET", f"/issues?state=open&labels={LABEL}&per_page=100")
        return next((issue for issue in issues if "pull_request" not in issue), None)


def report(results: Path, hosting: Hosting, run_url: str) -> int:
    """Opens, comments on or closes the canary's issue; 1 when a check failed, else 0."""
    checks = load_checks(results)
    if not checks:
        print(f"no check results in {results}/: the check steps did not run", file=sys.stderr)
        return 1
    issue = hosting.open_issue()
    if any(not check.passed for check in checks):
        changed = results / "inventory" / "changed.md"
        text = body(checks, run_url, changed.read_text(encoding="utf-8") if changed.is_file() else "")
        if issue is None:
            created = hosting.call("POST", "/issues", {"title": TITLE, "body": text, "labels": [LABEL]})
            print(f"opened issue #{created['number']}")
        else:
            hosting.call("POST", f"/issues/{issue['number']}/comments", {"body": text})
            print(f"commented on issue #{issue['number']}")
        return 1
    if issue is not None:
        hosting.call(
            "POST",
            f"/issues/{issue['number']}/comments",
            {"body": f"Passing again in [this run]({run_url})."},
        )
        hosting.call("PATCH", f"/issues/{issue['number']}", {"state": "closed", "state_reason": "completed"})
        print(f"closed issue #{issue['number']}")
    print("every check passed")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    step = parser.add_subparsers(dest="step", required=True)
    step.add_parser("tests", help="the in-engine tests on the installed vLLM")
    doctor = step.add_parser("doctor", help="vllm-scaffold doctor against the newest published vLLM release")
    doctor.add_argument("--vllm", default="", help="the release to check (default: the newest on the index)")
    doctor.add_argument(
        "--pinned", default="", help="the release CI pins: also write the inventory between it and the one checked"
    )
    step.add_parser("check-update", help="vllm-scaffold check-update")
    step.add_parser("report", help="open, comment on or close the canary's issue")
    args = parser.parse_args(argv)
    if args.step == "tests":
        run_check(
            "tests",
            "in-engine tests on the newest vLLM CPU build",
            [sys.executable, "-m", "pytest", "-m", "engine"],
        )
    elif args.step == "doctor":
        release = args.vllm or newest_release("vllm")
        command = ["vllm-scaffold", "doctor", ".", "--vllm", release]
        run_check("doctor", f"vllm-scaffold doctor against vLLM {release} (the CUDA build's API)", command)
        if args.pinned:
            print(f"What changed in the plugin's coupling inventory between {args.pinned} and {release}:")
            print(write_inventory(args.pinned, release), end="")
    elif args.step == "check-update":
        run_check("check-update", "vllm-scaffold check-update", ["vllm-scaffold", "check-update"])
    else:
        env = os.environ
        run_url = f"{env['GITHUB_SERVER_URL']}/{env['GITHUB_REPOSITORY']}/actions/runs/{env['GITHUB_RUN_ID']}"
        hosting = Hosting(env["GITHUB_API_URL"], env["GITHUB_REPOSITORY"], env["GITHUB_TOKEN"])
        return report(RESULTS, hosting, run_url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
