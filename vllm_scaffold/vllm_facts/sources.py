"""A vLLM source tree read file by file: a release's wheel (read straight from the zip) or a directory (a
fork's checkout, an unpacked wheel, an installed vLLM), never imported.

`triage` compares a fork with its base release through this: only the files whose bytes differ are parsed,
so a checkout of thousands of files costs one read of each.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from vllm_scaffold.errors import ScaffoldError

# Folders of a checkout that are never sources: version control, caches, build outputs, environments.
SKIPPED_DIRS = {".git", "__pycache__", ".venv", "venv", "build", "dist", ".mypy_cache", ".ruff_cache", ".tox"}
SKIPPED_SUFFIXES = (".pyc", ".pyo", ".so")


@dataclass
class SourceTree:
    """The files of a tree by path relative to its root (`vllm/...` for the package, anything else for a
    checkout's other files); `label` says what it is in messages."""

    label: str
    root: Path
    wheel: zipfile.ZipFile | None = None
    paths: frozenset[str] = field(default_factory=frozenset)

    def read(self, path: str) -> bytes:
        if self.wheel is not None:
            return self.wheel.read(path)
        return (self.root / path).read_bytes()

    def text(self, path: str) -> str:
        return self.read(path).decode("utf-8", "replace")

    @property
    def package(self) -> frozenset[str]:
        """The files of the `vllm/` package."""
        return frozenset(p for p in self.paths if p.startswith("vllm/"))


def open_tree(path: Path, label: str = "") -> SourceTree:
    """A wheel file, a directory holding the `vllm/` package (a checkout), or the `vllm/` package folder
    itself (its parent is then the root)."""
    if path.is_file():
        try:
            wheel = zipfile.ZipFile(path)
        except zipfile.BadZipFile:
            raise ScaffoldError(
                f"{path} is neither a wheel nor a directory", "pass a vLLM wheel or source tree"
            ) from None
        names = frozenset(n for n in wheel.namelist() if not n.endswith("/") and not _skipped(n))
        return SourceTree(label or path.name, path, wheel, names)
    if (path / "vllm" / "__init__.py").is_file():
        root, top = path, path
    elif path.name == "vllm" and (path / "__init__.py").is_file():
        root, top = path.parent, path  # the package alone: its parent's other files are not the fork's
    else:
        raise ScaffoldError(
            f"{path} holds no vllm/ package (no vllm/__init__.py)",
            "pass the fork's checkout (the folder that contains vllm/) or the vllm/ folder itself",
        )
    found = set()
    for folder, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info")]
        for name in files:
            relative = Path(folder, name).relative_to(root).as_posix()
            if not _skipped(relative):
                found.add(relative)
    return SourceTree(label or str(path), root, None, frozenset(found))


def release_tree(version: str) -> SourceTree:
    """The sources of vLLM `version`, from its wheel (downloaded once into the cache, as `doctor --vllm`
    does)."""
    from vllm_scaffold.vllm_facts.store import fetch_wheel

    wheel, distribution = fetch_wheel(version)
    return open_tree(wheel, f"{distribution} {version}")


def _skipped(relative: str) -> bool:
    parts = relative.split("/")
    return (
        any(part in SKIPPED_DIRS or part.endswith(".egg-info") for part in parts[:-1])
        or relative.endswith(SKIPPED_SUFFIXES)
        or ".dist-info/" in relative
    )
