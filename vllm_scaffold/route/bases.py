"""What `triage` compares a fork with: the release `--base` names (a version, a wheel, a source directory) or
the fork declares in `vllm/_version.py`, the nearest release (`--base auto`), or the commit a git checkout
branched from (`--since GITREF`).

Forks branch from vLLM's main branch more often than from a release tag. Compared with a release, such a fork
differs in every file upstream changed since, and those differences are not the fork's. The nearest release
is the one the fewest of the fork's files differ from; the fork point is `git merge-base HEAD GITREF`, whose
tree is the base itself, so only the fork's own commits are compared.
"""

from __future__ import annotations

import ast
import hashlib
import io
import os
import re
import subprocess
import tarfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.vllm_facts import ReleaseIndex
from vllm_scaffold.vllm_facts.sources import SourceTree, open_tree, release_tree

# Written by the build (setuptools-scm), never by a fork's author.
GENERATED = frozenset({"vllm/_version.py"})


def _digests(tree: SourceTree) -> dict[str, str]:
    return {path: hashlib.sha256(tree.read(path)).hexdigest() for path in tree.package - GENERATED}


def differing(fork: SourceTree, base: SourceTree) -> int:
    """How many of the fork's files of `vllm/` the base lacks or has with other bytes."""
    return len(_differing_files(fork, base))


def _differing_files(fork: SourceTree, base: SourceTree) -> list[str]:
    theirs = _digests(base)
    return [path for path, digest in _digests(fork).items() if theirs.get(path) != digest]


def _distance(fork: SourceTree, base: SourceTree) -> tuple[int, int]:
    """(files that differ, lines found in only one of each pair): the lines break ties between releases."""
    files = _differing_files(fork, base)
    lines = 0
    for path in files:
        ours = set(fork.text(path).splitlines())
        lines += len(ours ^ set(base.text(path).splitlines())) if path in base.paths else len(ours)
    return len(files), lines


def candidate_releases() -> list[str]:
    """The releases `--base auto` compares with: the shipped indexes' and every wheel already in the cache."""
    from vllm_scaffold.vllm_facts.store import cache_root, shipped_versions, version_key

    cached = {
        match.group(1)
        for wheel in (cache_root() / "wheels").glob("*.whl")
        if (match := re.match(r"vllm(?:_cpu)?-(\d+(?:\.\d+)+)-", wheel.name))
    }
    return sorted(set(shipped_versions()) | cached, key=version_key)


@dataclass(frozen=True)
class Nearest:
    version: str
    differing: dict[str, int]  # release -> files of the fork's vllm/ that differ from it

    def describe(self) -> str:
        others = ", ".join(f"{v}: {n}" for v, n in self.differing.items() if v != self.version)
        return f"the nearest release (--base auto): {self.differing[self.version]} files of vllm/ differ from it" + (
            f" ({others})" if others else ""
        )


def nearest_release(fork: SourceTree) -> Nearest:
    """The release whose files the fewest of the fork's files differ from (ties: the fewest differing lines)."""
    distances = {version: _distance(fork, release_tree(version)) for version in candidate_releases()}
    best = min(distances, key=lambda version: distances[version])
    return Nearest(best, {version: files for version, (files, _lines) in distances.items()})


def _git(checkout: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, check=False)


def fork_point(checkout: Path, ref: str) -> str:
    """`git merge-base HEAD ref` of a git checkout: the commit the fork branched from."""
    if _git(checkout, "rev-parse", "--git-dir").returncode != 0:
        raise ScaffoldError(
            f"--since needs a git checkout, and {checkout} is none",
            "pass the fork's git checkout, or compare with a release: --base VERSION or --base auto",
        )
    found = _git(checkout, "merge-base", "HEAD", ref)
    if found.returncode != 0:
        raise ScaffoldError(
            f"{checkout} has no commit in common with '{ref}'",
            "name the upstream branch or commit the fork branched from (fetch it first: git fetch upstream)",
        )
    return found.stdout.decode().strip()


@dataclass(frozen=True)
class History:
    """A git checkout's own commits since its fork point: which of them made given lines of a file."""

    checkout: Path
    point: str  # the fork point's commit
    _blamed: dict[str, list[str]] = field(default_factory=dict, compare=False, repr=False)

    def commits(self, path: str, first: int, last: int) -> frozenset[str]:
        """The fork's own commits, merges left out, that last changed lines `first` to `last` of `path` at HEAD:
        none where upstream wrote them all, or git cannot tell."""
        if path not in self._blamed:
            self._blamed[path] = self._blame(path)
        return frozenset(self._blamed[path][first - 1 : last]) - {""} - self._merges

    def read(self, paths: set[str]) -> None:
        """Blame `paths` at once (one git process each, run side by side), for `commits` to read."""
        from concurrent.futures import ThreadPoolExecutor

        wanted = sorted(paths - set(self._blamed))
        with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
            self._blamed.update(zip(wanted, pool.map(self._blame, wanted), strict=True))

    def _blame(self, path: str) -> list[str]:
        """Per line of `path` at HEAD, the fork's commit that last changed it ("" for upstream's lines): one
        `git blame` of the whole file, as cheap as one of a few lines."""
        found = _git(self.checkout, "blame", "--porcelain", f"{self.point}..HEAD", "--", path)
        if found.returncode != 0:
            return []
        by_line: dict[int, str] = {}  # every line of the porcelain output's body has a header: sha, old, new line
        boundary: set[str] = set()
        current = ""
        for text in found.stdout.decode("utf-8", "replace").splitlines():
            parts = text.split(" ")
            if len(parts) >= 3 and len(parts[0]) == 40 and all(c in "0123456789abcdef" for c in parts[0]):
                current = parts[0]
                by_line[int(parts[2])] = current
            elif text == "boundary":
                boundary.add(current)
        lines = [by_line.get(n, "") for n in range(1, max(by_line, default=0) + 1)]
        return ["" if sha in boundary else sha for sha in lines]

    @cached_property
    def _merges(self) -> frozenset[str]:
        listed = _git(self.checkout, "rev-list", "--merges", f"{self.point}..HEAD")
        return frozenset(listed.stdout.decode().split()) if listed.returncode == 0 else frozenset()


def tree_at(checkout: Path, commit: str, into: Path) -> SourceTree:
    """The `vllm/` package of `commit` (a directory written under `into`), as a source tree."""
    archived = _git(checkout, "archive", "--format=tar", commit, "vllm")
    if archived.returncode != 0:
        raise ScaffoldError(
            f"commit {commit[:12]} of {checkout} has no vllm/ package", "name a commit of vLLM's history"
        )
    with tarfile.open(fileobj=io.BytesIO(archived.stdout)) as archive:
        archive.extractall(into, filter="data")
    return open_tree(into, f"the fork point {commit[:12]}")


def declared_version(fork: SourceTree) -> str | None:
    """The release the fork says it is, from its `vllm/_version.py` (written when a checkout is built)."""
    if "vllm/_version.py" not in fork.paths:
        return None
    for node in ast.walk(ast.parse(fork.text("vllm/_version.py"))):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            if any(isinstance(t, ast.Name) and t.id in {"__version__", "version"} for t in node.targets):
                return str(node.value.value)
    return None


def base_release(fork: SourceTree, base: str | None) -> tuple[SourceTree, ReleaseIndex]:
    """The base's sources and index: `base` as given (a version, a wheel, a source directory), else the
    release the fork declares."""
    from packaging.version import InvalidVersion, Version

    from vllm_scaffold.vllm_facts.store import index_of_source, shipped, shipped_versions

    if base is None:
        declared = declared_version(fork)
        if declared is None:
            raise ScaffoldError(
                f"{fork.label} does not say which vLLM release it is (no vllm/_version.py)",
                f"name its base release with --base VERSION (e.g. --base {shipped_versions()[-1]})",
            )
        try:
            version = Version(declared)
        except InvalidVersion:
            raise ScaffoldError(
                f"the fork declares vLLM '{declared}', which is no version", "pass --base VERSION"
            ) from None
        if version.is_devrelease or version.is_prerelease:
            raise ScaffoldError(
                f"the fork declares the development version {declared}, not a release",
                "name the release it branched from with --base VERSION",
            )
        base = version.base_version
    path = Path(base)
    if path.exists():
        # The index gives class hierarchies, so it must be the whole release's: a directory of a few of a
        # shipped release's files (as it says in vllm/_version.py) is read with that release's index.
        tree = open_tree(path)
        named = declared_version(tree)
        if named in shipped_versions():
            return tree, shipped(named)
        return tree, index_of_source(path if path.is_file() else tree.root)
    try:
        Version(base)
    except InvalidVersion:
        raise ScaffoldError(
            f"--base {base} is neither a vLLM version nor an existing wheel or source directory",
            f"pass a version such as {shipped_versions()[-1]}, or a path",
        ) from None
    tree = release_tree(base)
    index = shipped(base) if base in shipped_versions() else index_of_source(tree.root, base)
    return tree, index
