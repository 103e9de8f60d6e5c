"""A project's ruff settings, as ruff itself finds them: the first of `ruff.toml`, `.ruff.toml` or a
`pyproject.toml` with a `[tool.ruff]` table. Generation formats what it writes with them, so a generated file
passes the project's own `ruff check` and `ruff format --check`."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Where a project keeps its ruff configuration, in the order ruff looks.
RUFF_CONFIG_FILES = ("ruff.toml", ".ruff.toml", "pyproject.toml")
RUFF_DEFAULT_LINE_LENGTH = 88


@dataclass(frozen=True)
class RuffSettings:
    config_file: Path | None  # None: the project has no ruff configuration, ruff's defaults apply
    table: dict[str, Any] = field(default_factory=dict)

    @property
    def line_length(self) -> int:
        """The line length ruff checks (E501): its max-line-length or line-length, else ruff's 88."""
        lint = self.table.get("lint", {})
        pycodestyle = lint.get("pycodestyle", self.table.get("pycodestyle", {}))
        return int(pycodestyle.get("max-line-length", self.table.get("line-length", RUFF_DEFAULT_LINE_LENGTH)))

    @property
    def known_first_party(self) -> list[str]:
        isort = self.table.get("lint", {}).get("isort", self.table.get("isort", {}))
        return list(isort.get("known-first-party", []))


def ruff_settings(root: Path) -> RuffSettings:
    """The ruff settings of the project at `root`; a file that does not parse is skipped, as ruff would fail on
    it the same way whichever settings the tool assumed."""
    for name in RUFF_CONFIG_FILES:
        path = root / name
        if not path.is_file():
            continue
        try:
            document = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue
        if name != "pyproject.toml":
            return RuffSettings(path, document)
        if "ruff" in document.get("tool", {}):
            return RuffSettings(path, document["tool"]["ruff"])
    return RuffSettings(None)
