"""benchmarks/doctor_unseen.py: the judgement lines of the measurement document, read back and applied to
doctor's `--json` runs (shapes written here, no published plugin's code)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCORER = Path(__file__).resolve().parents[1] / "benchmarks" / "doctor_unseen.py"
spec = importlib.util.spec_from_file_location("doctor_unseen", SCORER)
assert spec is not None and spec.loader is not None
doctor_unseen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(doctor_unseen)

DOC = """
## Every false finding of the run, by cause

### Names the plugin owns

- `fx/owned` `fx_owned/a.py:3,3,9` error `vllm-import-missing` ×3: the plugin sets it itself
- `fx/owned` `fx_owned/b.py:4` warning `vllm-dotted-path-missing`: a logger name

## Every debatable finding of the run

- `fx/owned` `fx_owned/c.py:7` error `vllm-override-signature`: reach unclear

## Warnings of a later run, judged

### Every false warning: added by the plugin

- `fx/owned` `fx_owned/d.py:1` warning `monkeypatch-target-missing`: a method the plugin adds

## Plain run

- false: `fx/owned` `fx_owned/e.py:2` `syntax-error`: not this document's line format

## Judgements revised

- true: `fx/owned` `fx_owned/c.py:7` error `vllm-override-signature`: the caller passes it
"""


def _run(where: list[tuple[str, str, str]]) -> str:
    findings = [{"severity": s, "code": c, "where": w, "message": "", "fix": ""} for s, c, w in where]
    return json.dumps({"releases": [{"findings": findings}]})


def test_the_judgements_are_read_by_plugin_file_line_code_and_severity() -> None:
    judged = doctor_unseen.judgements(DOC)
    assert judged[("fx/owned", "fx_owned/a.py", 9, "vllm-import-missing", "error")] == "false"
    assert judged[("fx/owned", "fx_owned/d.py", 1, "monkeypatch-target-missing", "warning")] == "false"
    assert judged[("fx/owned", "fx_owned/c.py", 7, "vllm-override-signature", "error")] == "true"  # revised
    assert ("fx/owned", "fx_owned/e.py", 2, "syntax-error", "error") not in judged
    # A later round of warnings replaces the earlier judgements of warnings: b.py:4 is not listed there.
    assert ("fx/owned", "fx_owned/b.py", 4, "vllm-dotted-path-missing", "warning") not in judged


def test_errors_and_warnings_are_scored_apart(tmp_path: Path) -> None:
    (tmp_path / "fx+owned.json").write_text(
        _run(
            [
                ("error", "vllm-import-missing", "fx_owned/a.py:3"),
                ("warning", "vllm-import-missing", "fx_owned/a.py:9"),  # an error judged false, now a warning
                ("warning", "monkeypatch-target-missing", "fx_owned/d.py:1"),
                ("error", "vllm-override-signature", "fx_owned/c.py:7"),
                ("error", "vllm-call-signature", "fx_owned/f.py:5"),  # judged by no line: true
            ]
        )
    )
    (tmp_path / "fx+unread.json").write_text("")  # doctor refused the package: no findings
    table = doctor_unseen.score(tmp_path, doctor_unseen.judgements(DOC), None)
    assert table["fx/owned"]["error"] == {"false": 1, "true": 2}
    assert table["fx/owned"]["warning"] == {"false": 1, "true": 1}
    assert not table["fx/unread"]["error"] and doctor_unseen.precision(table["fx/owned"]["error"]) == "66.7 %"


def test_a_set_judged_finding_by_finding_gives_each_line_its_own_verdict() -> None:
    held_out = """
## Judged, finding by finding

### fx/kept at 0123456789ab

A platform plugin, 900 lines; doctor: 2 errors, 1 warning.
- true: `fx/kept` `fx_kept/a.py:3` error `vllm-import-missing`: gone in the release
- false: `fx/kept` `fx_kept/b.py:8,8` error `vllm-call-signature` ×2: only the plugin calls it
- debatable: `fx/kept` `fx_kept/c.py:1` warning `env-unknown-vllm-variable`: set by nobody it ships
- `fx/kept` `fx_kept/d.py:2` error `vllm-import-missing`: a line without a verdict judges nothing here
"""
    judged = doctor_unseen.judgements(held_out)
    assert judged[("fx/kept", "fx_kept/a.py", 3, "vllm-import-missing", "error")] == "true"
    assert judged[("fx/kept", "fx_kept/b.py", 8, "vllm-call-signature", "error")] == "false"
    assert judged[("fx/kept", "fx_kept/c.py", 1, "env-unknown-vllm-variable", "warning")] == "debatable"
    assert ("fx/kept", "fx_kept/d.py", 2, "vllm-import-missing", "error") not in judged
