"""Template identity: a digest of the files a component was rendered from, recorded in its answers file.

The tool's version says which release of vllm-scaffold rendered a package, not which templates: between two
releases (and in a source checkout) the templates change while the version stands still. So each answers
record under `.vllm-scaffold/` also holds `templates_digest`, a SHA-256 over every file that decides what
the template renders: its own folder under `templates/`, the fragments shared by every template
(`templates/_shared/`), and for a seam its catalog entry and the general-plugin module template
(`templates/plugin-module/`) that its first component renders. `update` and `check-update` decide "same
templates" by comparing this digest with the installed templates' one, never by the version number.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from vllm_scaffold.catalog import CATALOG_DIR
from vllm_scaffold.generate import rendering

DIGEST_KEY = "templates_digest"
SHARED = "_shared"
PLUGIN_MODULE_TEMPLATE = "plugin-module"
PACKAGE_TEMPLATE = "package"


def sources(template: str, seam: str | None) -> list[Path]:
    """The folders and files whose content decides what `template` (of catalog entry `seam`) renders."""
    root = rendering.templates_root()
    paths = [root / template, root / SHARED]
    if seam is not None:
        paths += [root / PLUGIN_MODULE_TEMPLATE, CATALOG_DIR / f"{seam}.toml"]
    return paths


def template_digest(template: str, seam: str | None = None) -> str:
    """The digest of the installed `template`'s sources, "sha256:<hex>"."""
    return _digest(tuple(sources(template, seam)))


def _digest(paths: tuple[Path, ...]) -> str:
    """SHA-256 over each file's name (relative to its folder, which is named too) and bytes, in sorted order."""
    digest = hashlib.sha256()
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            if "__pycache__" in file.parts:
                continue
            name = f"{path.name}/{file.relative_to(path).as_posix()}" if path.is_dir() else path.name
            data = file.read_bytes()
            digest.update(name.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    return f"sha256:{digest.hexdigest()}"


def record_digest(template: str, answers: dict[str, Any]) -> str:
    """The digest an answers record of `template` should hold now: `answers` name the seam of a component."""
    seam = answers.get("seam") if template != PACKAGE_TEMPLATE else None
    return template_digest(template, str(seam) if seam is not None else None)


def changed_templates(records: dict[str, dict[str, Any]]) -> list[str]:
    """One line per answers record (by file stem) whose templates differ from the installed ones, saying how."""
    changed = []
    for stem, record in records.items():
        template = str(record.get("template"))
        recorded = record.get(DIGEST_KEY)
        version = record.get("scaffold_version", "an unknown version")
        if recorded is None:
            changed.append(f"{stem} (templates/{template}): vllm-scaffold {version} recorded no templates digest")
        elif recorded != record_digest(template, record.get("answers") or {}):
            changed.append(f"{stem} (templates/{template}): its templates changed since vllm-scaffold {version}")
    return changed
