"""`doctor --baseline FILE`: the first run records the findings, later runs fail only on new ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.helpers import build_file_tree, plugin_pyproject, run_cli

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


RELEASES_PLUGIN = {
    "pyproject.toml": plugin_pyproject("fx-baseline-releases", "fx_baseline_releases.plugin:register"),
    "fx_baseline_releases/__init__.py": "",
    "fx_baseline_releases/plugin.py": """
        def register() -> None:
            from vllm.fx_gone import FxGone
            from vllm.v1.metrics.cache_hit_source import CacheHitSource

            del FxGone, CacheHitSource
        """,
}


def test_one_baseline_serves_every_release_and_record_baseline_adds_another_releases_findings(tmp_path: Path) -> None:
    plugin = build_file_tree(RELEASES_PLUGIN, tmp_path / "plugin")
    baseline = tmp_path / "doctor-baseline.json"
    # vllm.fx_gone is missing on every release, CacheHitSource only on 0.31.0 (vLLM added it in 0.32.0)
    first = run_cli("doctor", str(plugin), "--vllm", "0.32.0", "--baseline", str(baseline))
    assert first.exit_code == 0 and f"recorded 1 findings in {baseline}" in first.stderr, first.output

    # the finding recorded on 0.32.0, its message naming that release, is the same finding on 0.33.0
    both = run_cli("doctor", str(plugin), "--vllm", "0.32.0", "--vllm", "0.33.0", "--baseline", str(baseline), "--json")
    assert both.exit_code == 0, both.output
    reports = json.loads(both.stdout)["releases"]
    assert [[f["suppressed"] for f in r["findings"]] for r in reports] == [[f"in the baseline {baseline}"]] * 2

    # 0.31.0 also lacks CacheHitSource: new there, until recorded
    older = ["doctor", str(plugin), "--vllm", "0.31.0", "--vllm", "0.32.0", "--baseline", str(baseline)]
    assert run_cli(*older).exit_code == 1
    added = run_cli(*older, "--record-baseline")
    assert added.exit_code == 0 and f"recorded 1 findings in {baseline}" in added.stderr, added.output
    assert len(json.loads(baseline.read_text())["findings"]) == 2
    assert run_cli(*older).exit_code == 0
    assert run_cli(*older, "--record-baseline").stderr.startswith(f"recorded 0 findings in {baseline}")


def test_record_baseline_without_a_baseline_is_refused(tmp_path: Path) -> None:
    result = run_cli("doctor", str(FIXTURE), "--no-live", "--record-baseline")
    assert result.exit_code == 2
    assert "--record-baseline records into the --baseline FILE" in result.output
