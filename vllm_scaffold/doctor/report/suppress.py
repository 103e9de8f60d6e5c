"""Findings a plugin's authors marked as intended, the way linters do it.

`# doctor: ignore[code]` (or `ignore[code1,code2]`) on the line a finding points at suppresses that finding;
`[tool.vllm-scaffold.doctor] ignore = ["code", ...]` in pyproject.toml suppresses a code everywhere in the
project. Suppressed findings stay in the report (shown as suppressed in --json, counted in the table's
footer) and never make doctor exit 1.
"""

from __future__ import annotations

import ast
import difflib
import re

from vllm_scaffold.doctor.reading.package import PluginPackage
from vllm_scaffold.doctor.report.codes import codes
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.errors import ScaffoldError

COMMENT = re.compile(r"#\s*doctor:\s*ignore\[([^\]]*)\]")
PROJECT_SETTING = "[tool.vllm-scaffold.doctor] ignore"


def project_ignores(pyproject: dict) -> set[str]:
    """The codes `[tool.vllm-scaffold.doctor] ignore` lists; a value that is not a list of known codes is bad input."""
    value = pyproject.get("tool", {}).get("vllm-scaffold", {}).get("doctor", {}).get("ignore", [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ScaffoldError(f"{PROJECT_SETTING} must be a list of doctor codes", 'write ignore = ["code", ...]')
    _require_known(value, PROJECT_SETTING)
    return set(value)


def _require_known(names: list[str], where: str) -> None:
    for name in names:
        if name not in codes():
            close = difflib.get_close_matches(name, list(codes()), n=1)
            hint = f"did you mean '{close[0]}'?" if close else "see docs/doctor.md for the codes"
            raise ScaffoldError(f"{where} names '{name}', which is no doctor code", hint)


class _Comments:
    """The `# doctor: ignore[...]` codes that cover a finding's line: comments anywhere in the statement that
    starts on it count, so a formatted multi-line call can carry the comment on its last line."""

    def __init__(self, package: PluginPackage) -> None:
        self.package = package
        self.lines: dict[str, list[str]] = {}
        self.ends: dict[str, dict[int, int]] = {}  # file -> {first line of a statement: its last line}

    def _statement_ends(self, file: str) -> dict[int, int]:
        if file not in self.ends:
            spans = self.ends[file] = {}
            module = next((m for m in self.package.parsed() if m.rel == file), None)
            for node in module.nodes if module else ():
                if isinstance(node, ast.stmt):
                    end = node.end_lineno or node.lineno
                    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                        end = node.body[0].lineno - 1  # the signature, not the body
                    spans[node.lineno] = max(spans.get(node.lineno, node.lineno), end)
        return self.ends[file]

    def codes(self, file: str, line: int) -> set[str]:
        if file not in self.lines:
            try:
                text = (self.package.root / file).read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
            self.lines[file] = text.splitlines()
        last = self._statement_ends(file).get(line, line)
        names = [
            name.strip()
            for text in self.lines[file][line - 1 : last]
            for match in COMMENT.finditer(text)
            for name in match[1].split(",")
            if name.strip()
        ]
        _require_known(names, f"the comment at {file}:{line}")
        return set(names)


def apply(package: PluginPackage, findings: list[Finding]) -> list[Finding]:
    """`findings` with those the project marks as intended suppressed."""
    ignored = project_ignores(package.pyproject)
    comments = _Comments(package)
    result = []
    for finding in findings:
        file, line = finding.location or ("", None)
        if finding.code in ignored:
            finding = finding.suppress(f"{PROJECT_SETTING} in pyproject.toml")
        elif line is not None and finding.code in comments.codes(file, line):
            finding = finding.suppress(f"# doctor: ignore[{finding.code}] at {file}:{line}")
        result.append(finding)
    return result
