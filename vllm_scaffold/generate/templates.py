"""The templates that ship with the tool, and the questions each asks (its copier.yml), read without rendering."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

from vllm_scaffold.errors import ScaffoldError


def templates_root() -> Path:
    """The templates folder: inside the installed wheel, or at the top of a source checkout."""
    package = Path(__file__).resolve().parent.parent  # vllm_scaffold/
    for candidate in (package / "templates", package.parent / "templates"):
        if candidate.is_dir():
            return candidate
    raise ScaffoldError("the templates folder is missing from this installation", "reinstall vllm-scaffold")


@cache
def questions(template: str) -> dict[str, dict[str, Any]]:
    """The user-facing questions of a template, by name, as declared in its copier.yml."""
    config = yaml.safe_load((templates_root() / template / "copier.yml").read_text(encoding="utf-8")) or {}
    return {key: value for key, value in config.items() if not key.startswith("_")}
