"""Writes the release-compatibility table of docs/releases.md from the checks themselves.

    python scripts/release_matrix.py          # rewrite the table between the markers
    python scripts/release_matrix.py --check  # exit 1 when the table is not what the checks say now

Each row is a templated seam, each column a release whose index ships with the tool. A cell says how the
seam's golden package (generated_examples/<seam>, the template's default render, tests included) was verified on that
release, from `doctor --vllm`'s own check: engine-tested (its tests run inside that release's CPU engine in
this repository's suite) or API-checked (its use of vLLM checked against the release's sources), followed by
what the check reports there: an error or warning is a break, with its reason; an info is a guarded
difference the package handles. A golden package whose tests the suite also runs on a release's own Python
sources, where no CPU engine of that release exists (`ON_SOURCES`), says so in that release's cell.
"""

from __future__ import annotations

import sys
from pathlib import Path

from vllm_scaffold import vllm_facts
from vllm_scaffold.catalog import load_catalog
from vllm_scaffold.doctor.reading.package import PluginPackage
from vllm_scaffold.doctor.releases.check import check, with_tests
from vllm_scaffold.doctor.report.findings import Severity
from vllm_scaffold.vllm_facts import facts

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "releases.md"
START, END = "<!-- release-matrix -->", "<!-- /release-matrix -->"

# Seams whose golden package's tests run on a release's own Python sources in the suite (tests/seams/), for the
# releases a fact names: seam -> (fact, test file). The check cannot see such a difference: the same argument
# position, another type.
ON_SOURCES = {"kv-offload": ("offloading-worker-device-pointers", "tests/test_kv_offload_worker.py")}


def cell(seam_dir: Path, version: str, releases: list[vllm_facts.ReleaseIndex]) -> str:
    text = checked(seam_dir, version, releases)
    fact, tests = ON_SOURCES.get(seam_dir.name, ("", ""))
    if fact and version in facts.fact(fact).releases and not text.startswith("**breaks**"):
        text += f" + `{tests}` on its sources"
    return text


def checked(seam_dir: Path, version: str, releases: list[vllm_facts.ReleaseIndex]) -> str:
    findings = check(with_tests(PluginPackage.load(seam_dir)), vllm_facts.shipped(version), releases)
    breaks = [f for f in findings if f.severity is not Severity.INFO]
    notes = [f for f in findings if f.severity is Severity.INFO]
    if breaks:
        return "**breaks**: " + "; ".join(dict.fromkeys(f"`{f.code}` {f.message}" for f in breaks))
    text = vllm_facts.kind_of(version)
    if notes:
        text += " (" + "; ".join(dict.fromkeys(f"`{f.code}` {f.message}" for f in notes)) + ")"
    return text


def table() -> str:
    versions = vllm_facts.checked_versions()
    releases = [vllm_facts.shipped(v) for v in versions]
    heads = [f"{v} (`{vllm_facts.shipped(v).distribution}`)" for v in versions]
    lines = [
        START,
        f"| seam | {' | '.join(heads)} |",
        f"| --- | {' | '.join('---' for _ in versions)} |",
    ]
    for seam in load_catalog().values():
        if not seam.has_template:
            continue
        seam_dir = ROOT / "generated_examples" / seam.key
        cells = [cell(seam_dir, v, releases).replace("|", "\\|") for v in versions]
        lines.append(f"| `{seam.key}` | {' | '.join(cells)} |")
    lines.append(END)
    return "\n".join(lines)


def rendered() -> str:
    text = DOC.read_text(encoding="utf-8")
    before, _, rest = text.partition(START)
    _, _, after = rest.partition(END)
    return before + table() + after


def main(argv: list[str]) -> int:
    fresh = rendered()
    if "--check" in argv:
        if fresh != DOC.read_text(encoding="utf-8"):
            print(f"{DOC} is stale: run python scripts/release_matrix.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(fresh, encoding="utf-8")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
