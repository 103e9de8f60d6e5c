"""`doctor --baseline FILE`: today's findings recorded once, so that CI fails only on the findings added after.

The first run (FILE absent) writes every finding not already suppressed into FILE and says so. Later runs
mark each finding FILE holds as suppressed ("in the baseline FILE": shown in --json and the table's footer,
never a reason to exit 1) and report the others as usual. A finding is matched by its package, its code, its
file and a fingerprint of its message with line numbers taken out, so that editing lines above it does not
make it new; N identical findings in one file are matched N times, and an (N+1)th is new (as mypy's and
phpstan's baselines count them). Fixing a finding drops it from the report; rerun without FILE to shrink it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from vllm_scaffold.doctor.report.findings import Finding, Report
from vllm_scaffold.errors import ScaffoldError

FORMAT = "vllm-scaffold doctor baseline"
VERSION = 1
# "file.py:12" and "line 12" in a finding's place or message: what moves when lines are added above it.
_LINE_NUMBERS = re.compile(r"(?:(?<=\.py:)|(?<=\.toml:)|(?<=\bline ))\d+(?:,\d+)*")

Key = tuple[str, str, str, str]  # package, code, file, fingerprint


def use(reports: Sequence[Report], path: Path) -> str:
    """Records the baseline into `path` when it does not exist, then suppresses every finding it holds in
    `reports`; what was done, in one line for the user."""
    recorded = not path.exists()
    if recorded:
        entries = [_entry(report.package, finding) for report in reports for finding in report.active]
        try:
            path.write_text(json.dumps({"format": FORMAT, "version": VERSION, "findings": entries}, indent=1) + "\n")
        except OSError as problem:
            raise ScaffoldError(
                f"cannot write the baseline {path} ({problem.strerror})", "pass a path in a writable folder"
            ) from None
    known = _load(path)
    matched = 0
    for report in reports:
        kept = []
        for finding in report.findings:
            key = _key(report.package, finding)
            if finding.suppressed is None and known[key] > 0:
                known[key] -= 1
                matched += 1
                finding = finding.suppress(f"in the baseline {path}")
            kept.append(finding)
        report.findings = kept
    if recorded:
        return f"recorded {matched} findings in {path} as the baseline: later runs fail only on findings not in it"
    return f"{matched} findings are in the baseline {path}; only the others are reported as active"


def fingerprint(finding: Finding) -> str:
    """The finding's code and message without line numbers, hashed: stable while lines move."""
    text = f"{finding.code}\n{_LINE_NUMBERS.sub('N', finding.message)}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _file(finding: Finding) -> str:
    location = finding.location
    return location[0] if location else _LINE_NUMBERS.sub("N", finding.where)


def _key(package: str, finding: Finding) -> Key:
    return package, finding.code, _file(finding), fingerprint(finding)


def _entry(package: str, finding: Finding) -> dict[str, str]:
    # the message is kept for the reader of the file; matching uses the fingerprint
    _package, code, file, mark = _key(package, finding)
    return {"package": package, "code": code, "file": file, "fingerprint": mark, "message": finding.message}


def _load(path: Path) -> Counter[Key]:
    fix = "pass a file an earlier 'doctor --baseline' wrote, or a path that does not exist yet to record one"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as problem:
        raise ScaffoldError(f"{path} is not a doctor baseline ({problem.__class__.__name__})", fix) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("findings"), list):
        raise ScaffoldError(f"{path} is not a doctor baseline (no '{FORMAT}' format)", fix)
    if data.get("version") != VERSION:
        raise ScaffoldError(f"{path} is a baseline of format version {data.get('version')}", f"record it again: {fix}")
    try:
        return Counter((e["package"], e["code"], e["file"], e["fingerprint"]) for e in data["findings"])
    except (KeyError, TypeError):
        lacks = "an entry lacks package, code, file or fingerprint"
        raise ScaffoldError(f"{path} is not a doctor baseline ({lacks})", fix) from None
