"""`doctor --baseline FILE`: the first run records the findings, later runs fail only on new ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.helpers import run_cli

FIXTURE = Path(__file__).parent / "fixtures" / "doctor" / "vllm-version-by-distribution"
COMPAT = "src/fx_vllm_version_by_distribution/compat.py"


def test_recorded_findings_pass_when_their_lines_move_and_a_new_one_fails(tmp_path: Path) -> None:
    plugin = shutil.copytree(FIXTURE, tmp_path / "plugin")
    baseline = tmp_path / "doctor-baseline.json"

    first = run_cli("doctor", str(plugin), "--no-live", "--baseline", str(baseline))
    assert first.exit_code == 0, first.output
    assert f"recorded 1 findings in {baseline}" in first.output
    [entry] = json.loads(baseline.read_text())["findings"]
    assert (entry["code"], entry["file"]) == ("vllm-version-by-distribution", COMPAT)

    compat = plugin / COMPAT
    source = compat.read_text()
    # lines added above the recorded finding: still the same finding
    compat.write_text(source.replace("import importlib.metadata\n", "import importlib.metadata\n\nSEP = '.'\n"))
    moved = run_cli("doctor", str(plugin), "--no-live", "--baseline", str(baseline), "--json")
    assert moved.exit_code == 0, moved.output
    # a second lookup of the same kind in the same file: one more than recorded, so new
    compat.write_text(compat.read_text() + "\n\ndef again() -> str:\n    return importlib.metadata.version('vllm')\n")
    plugin.joinpath("src/fx_vllm_version_by_distribution/plugin.py").write_text(
        '"""The general plugin."""\n\nfrom fx_vllm_version_by_distribution.compat import again, vllm_release\n\n\n'
        "def register() -> None:\n    again()\n    vllm_release()\n"
    )
    new = run_cli("doctor", str(plugin), "--no-live", "--baseline", str(baseline), "--json")
    assert new.exit_code == 1, new.output


def test_a_file_that_is_not_a_baseline_is_refused(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text('{"findings": []}\n')
    result = run_cli("doctor", str(FIXTURE), "--no-live", "--baseline", str(baseline))
    assert result.exit_code == 2
    assert "is not a doctor baseline" in result.output
    assert baseline.read_text() == '{"findings": []}\n'
