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

from vllm_scaffold.doctor.codes import codes
from vllm_scaffold.doctor.findings import Finding
from vllm_scaffold.doctor.package import PluginPackage
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


def _statement_ends(package: PluginPackage) -> dict[str, dict[int, int]]:
    """file -> {first line of a statement: its last line}, so a comment anywhere in a formatted multi-line
    statement counts for the finding on its first line."""
    ends: dict[str, dict[int, int]] = {}
    for module in package.parsed():
        spans = ends.setdefault(module.rel, {})
        for node in ast.walk(module.tree):
            if isinstance(node, ast.stmt):
                end = node.end_lineno or node.lineno
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    end = node.body[0].lineno - 1  # the signature, not the body
                spans[node.lineno] = max(spans.get(node.lineno, node.lineno), end)
    return ends


def _line_ignores(package: PluginPackage, file: str, line: int, cache: dict) -> set[str]:
    if "ends" not in cache:
        cache["ends"] = _statement_ends(package)
    if file not in cache:
        try:
            cache[file] = (package.root / file).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            cache[file] = []
    lines = cache[file]
    last = cache["ends"].get(file, {}).get(line, line)
    names: list[str] = []
    for text in lines[line - 1 : last]:
        for match in COMMENT.finditer(text):
            names += [name.strip() for name in match[1].split(",") if name.strip()]
    _require_known(names, f"the comment at {file}:{line}")
    return set(names)


def apply(package: PluginPackage, findings: list[Finding]) -> list[Finding]:
    """`findings` with those the project marks as intended suppressed."""
    ignored = project_ignores(package.pyproject)
    cache: dict = {}
    result = []
    for finding in findings:
        file, line = finding.location or ("", None)
        if finding.code in ignored:
            finding = finding.suppress(f"{PROJECT_SETTING} in pyproject.toml")
        elif line is not None and finding.code in _line_ignores(package, file, line, cache):
            finding = finding.suppress(f"# doctor: ignore[{finding.code}] at {file}:{line}")
        result.append(finding)
    return result
