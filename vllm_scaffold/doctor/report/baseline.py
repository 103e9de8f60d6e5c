"""`doctor --baseline FILE`: today's findings recorded once, so that CI fails only on the findings added after.

The first run (FILE absent) writes every finding not already suppressed into FILE and says so;
`--record-baseline` adds a run's findings FILE does not hold yet (another release's, the installed vLLM's next
to `--vllm` ones). Other runs mark each finding FILE holds as suppressed ("in the baseline FILE": shown in
--json and the table's footer, never a reason to exit 1) and report the others as usual. A finding is matched
by its package, its code, its file and a fingerprint of its message with line numbers and release numbers
taken out, so that editing lines above it does not make it new, and the same problem found on another release
is the same finding. Each report (one per release) is matched against the whole baseline: N identical
findings in one file are matched N times on each release, and an (N+1)th is new (as mypy's and phpstan's
baselines count them). Fixing a finding drops it from the report; record FILE again to shrink it.
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
VERSION = 2  # 2: release numbers taken out of the fingerprint
# "file.py:12" and "line 12" in a finding's place or message: what moves when lines are added above it.
_LINE_NUMBERS = re.compile(r"(?:(?<=\.py:)|(?<=\.toml:)|(?<=\bline ))\d+(?:,\d+)*")
# "0.32.0", "0.34.0rc1" in a message: what differs when the same finding is found on another release.
_RELEASE_NUMBERS = re.compile(r"\b\d+\.\d+(?:\.\d+)*(?:rc\d+|\.post\d+|\.dev\d+)?\b")

Key = tuple[str, str, str, str]  # package, code, file, fingerprint


def use(reports: Sequence[Report], path: Path, record: bool = False) -> str:
    """Records the baseline into `path` when it does not exist (or, with `record`, adds to it what it does not
    hold), then suppresses every finding it holds in each of `reports`; what was done, in one line."""
    recorded = record or not path.exists()
    if recorded:
        added = _record(reports, path)
    known = _load(path)
    matched = 0
    for report in reports:
        left = Counter(known)  # each report (one per release) is matched against the whole baseline
        kept = []
        for finding in report.findings:
            key = _key(report.package, finding)
            if finding.suppressed is None and left[key] > 0:
                left[key] -= 1
                matched += 1
                finding = finding.suppress(f"in the baseline {path}")
            kept.append(finding)
        report.findings = kept
    if recorded:
        return f"recorded {added} findings in {path} as the baseline: later runs fail only on findings not in it"
    return f"{matched} findings are in the baseline {path}; only the others are reported as active"


def _record(reports: Sequence[Report], path: Path) -> int:
    """Writes into `path` what it holds (nothing when it does not exist) plus each finding of `reports` it
    does not hold: a finding N times in one report and M times in another is held max(N, M) times. Returns
    how many were added."""
    entries = _entries(path) if path.exists() else []
    held = Counter(_entry_key(entry) for entry in entries)
    added = 0
    for report in reports:
        counted: Counter[Key] = Counter()
        for finding in report.active:
            key = _key(report.package, finding)
            counted[key] += 1
            if counted[key] > held[key]:
                held[key] += 1
                added += 1
                entries.append(_entry(report.package, finding))
    try:
        path.write_text(json.dumps({"format": FORMAT, "version": VERSION, "findings": entries}, indent=1) + "\n")
    except OSError as problem:
        raise ScaffoldError(
            f"cannot write the baseline {path} ({problem.strerror})", "pass a path in a writable folder"
        ) from None
    return added


def fingerprint(finding: Finding) -> str:
    """The finding's code and message without line numbers or release numbers, hashed: stable while lines move
    and across the releases it is found on."""
    text = f"{finding.code}\n{_RELEASE_NUMBERS.sub('V', _LINE_NUMBERS.sub('N', finding.message))}"
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


def _entries(path: Path) -> list[dict[str, str]]:
    """The entries of the baseline `path`, refused (exit 2, nothing written) when it is not one."""
    fix = "pass a file an earlier 'doctor --baseline' wrote, or a path that does not exist yet to record one"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as problem:
        raise ScaffoldError(f"{path} is not a doctor baseline ({problem.__class__.__name__})", fix) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("findings"), list):
        raise ScaffoldError(f"{path} is not a doctor baseline (no '{FORMAT}' format)", fix)
    if data.get("version") != VERSION:
        raise ScaffoldError(f"{path} is a baseline of format version {data.get('version')}", f"record it again: {fix}")
    entries = data["findings"]
    if not all(isinstance(e, dict) and {"package", "code", "file", "fingerprint"} <= set(e) for e in entries):
        lacks = "an entry lacks package, code, file or fingerprint"
        raise ScaffoldError(f"{path} is not a doctor baseline ({lacks})", fix)
    return entries


def _entry_key(entry: dict[str, str]) -> Key:
    return entry["package"], entry["code"], entry["file"], entry["fingerprint"]


def _load(path: Path) -> Counter[Key]:
    return Counter(_entry_key(entry) for entry in _entries(path))
