"""The conflict markers `vllm-scaffold update` writes where your edit and a template change meet, and where
they remain in a project.

`update` writes them (`generate/merge.py`) and will not call a package up to date while any remain; doctor
names a file that still holds them (a Python module with markers does not parse).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

YOURS_MARKER = "<<<<<<< yours"
SEPARATOR = "======="
TEMPLATE_MARKER = ">>>>>>> template"


def marker_lines(text: str) -> list[int]:
    """The 1-based numbers of the lines that open or close a region `update` wrote between markers."""
    return [
        number
        for number, line in enumerate(text.splitlines(), start=1)
        if line.rstrip() in (YOURS_MARKER, TEMPLATE_MARKER)
    ]


def unresolved(root: Path, relpaths: Iterable[str]) -> dict[str, int]:
    """Each of `relpaths` (relative to `root`) that still holds conflict markers, with its first marker line."""
    found: dict[str, int] = {}
    for relpath in relpaths:
        path = root / relpath
        if path.is_file() and (lines := marker_lines(path.read_text(encoding="utf-8", errors="replace"))):
            found[relpath] = lines[0]
    return found
