"""Reading a plugin that is already built: a wheel, an sdist, or a distribution installed in an environment.

A wheel and an installed distribution declare their entry points in `entry_points.txt` and their
requirements in `METADATA`; their modules are the files they install. An sdist is a source tree (read like
one, its `*.egg-info/entry_points.txt` standing in for entry points a `setup.py` computes). Archives are
unpacked into a directory the caller owns, refusing members that would land outside it.
"""

from __future__ import annotations

import email.parser
import importlib.metadata
import json
import tarfile
import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.project.model import SKIP_DIRS, VLLM_DISTRIBUTIONS, EntryPoint, PluginProject, Requirement, normalise
from vllm_scaffold.project.setuptools_files import entry_points_from
from vllm_scaffold.project.source_tree import read_project

WHEEL_SUFFIX = ".whl"
SDIST_SUFFIXES = (".tar.gz", ".tgz", ".zip")


def is_archive(path: Path) -> bool:
    return path.name.endswith((WHEEL_SUFFIX, *SDIST_SUFFIXES))


def read_archive(path: Path, scratch: Path) -> PluginProject:
    """The plugin in wheel or sdist `path`, unpacked under `scratch` (which must outlive the result)."""
    if not path.is_file():
        raise ScaffoldError(f"{path} is not a file", "pass a wheel (.whl) or an sdist (.tar.gz, .zip)")
    try:
        if path.name.endswith(WHEEL_SUFFIX):
            return _read_wheel(path, scratch)
        return _read_sdist(path, scratch)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError) as broken:
        raise ScaffoldError(f"{path} is not a readable archive ({broken})", "download it again") from None


def _safe_members(names: Iterable[str]) -> list[str]:
    return [n for n in names if not PurePosixPath(n).is_absolute() and ".." not in PurePosixPath(n).parts]


def _read_wheel(path: Path, scratch: Path) -> PluginProject:
    with zipfile.ZipFile(path) as archive:
        archive.extractall(scratch, members=_safe_members(archive.namelist()))
    dist_info = next(iter(sorted(scratch.glob("*.dist-info"))), None)
    if dist_info is None:
        raise ScaffoldError(f"{path.name} has no .dist-info directory", "pass a wheel built by a PEP 517 backend")
    project = _from_metadata(
        scratch,
        (dist_info / "METADATA").read_text(encoding="utf-8", errors="replace"),
        _read_text(dist_info / "entry_points.txt"),
        _top_level(p.relative_to(scratch).as_posix() for p in scratch.rglob("*.py")),
        f"{dist_info.name}/",
    )
    project.pth_files = _site_packages_pth(p.relative_to(scratch).as_posix() for p in scratch.rglob("*.pth"))
    return project


def _read_sdist(path: Path, scratch: Path) -> PluginProject:
    if path.name.endswith(".zip"):
        with zipfile.ZipFile(path) as archive:
            archive.extractall(scratch, members=_safe_members(archive.namelist()))
    else:
        with tarfile.open(path) as archive:
            members = [m for m in archive.getmembers() if m.name in set(_safe_members([m.name])) and not m.issym()]
            archive.extractall(scratch, members=members, filter="data")
    tops = [p for p in scratch.iterdir() if p.is_dir()]
    return read_project(tops[0] if len(tops) == 1 else scratch)


def read_installed(name: str, path: list[str] | None = None) -> PluginProject:
    """The installed distribution `name` (searched on `path`, default sys.path)."""
    try:
        found = next(
            d
            for d in importlib.metadata.distributions(**({"path": path} if path is not None else {}))
            if normalise(d.metadata["Name"] or "") == normalise(name)
        )
    except StopIteration:
        raise ScaffoldError(
            f"no directory, archive or installed distribution named '{name}'",
            "pass a plugin's directory, a .whl/.tar.gz file, or the name 'pip list' shows",
        ) from None
    return project_of(found)


def project_of(dist: importlib.metadata.Distribution) -> PluginProject:
    """An installed distribution as a project: its metadata and entry points, and the modules it installed
    (or, for an editable install, the source tree it points at)."""
    metadata_text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    source = _editable_source(dist)
    if source is not None and source.is_dir():
        project = read_project(source)
        installed = entry_points_from(dist.read_text("entry_points.txt") or "", "entry_points.txt")
        if installed:
            project.entry_points = installed
            project.read_from = [*project.read_from, "entry_points.txt"]
        return project
    root = Path(str(dist.locate_file(""))).absolute()
    every = [str(f) for f in dist.files or ()]
    files = [f for f in every if f.endswith(".py")]
    location = next((f.split("/")[0] + "/" for f in every if f.split("/")[0].endswith(".dist-info")), "")
    project = _from_metadata(root, metadata_text, dist.read_text("entry_points.txt") or "", _top_level(files), location)
    project.pth_files = _site_packages_pth(every)
    return project


def vllm_plugin_distributions(path: list[str] | None = None) -> list[importlib.metadata.Distribution]:
    """Every installed distribution with an entry point in a vllm.* group, vLLM itself excepted, once each
    (the first on the path, as importlib.metadata resolves it), by name."""
    seen: set[str] = set()
    found = []
    for dist in importlib.metadata.distributions(**({"path": path} if path is not None else {})):
        name = normalise(dist.metadata["Name"] or "")
        if not name or name in seen or name in VLLM_DISTRIBUTIONS:
            continue
        seen.add(name)
        if any(ep.group.startswith("vllm.") for ep in dist.entry_points):
            found.append(dist)
    return sorted(found, key=lambda d: normalise(d.metadata["Name"] or ""))


def _editable_source(dist: importlib.metadata.Distribution) -> Path | None:
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "{}")
    except json.JSONDecodeError:
        return None
    url = str(direct.get("url", ""))
    if direct.get("dir_info", {}).get("editable") and url.startswith("file://"):
        return Path(url.removeprefix("file://"))
    return None


def _site_packages_pth(relative_files: Iterable[str]) -> list[str]:
    """The `.pth` files among a wheel's (or an installed distribution's) files that land in site-packages
    itself, the only folder whose `.pth` files Python's site module reads: at the top, or at the top of the
    wheel's `*.data/purelib` or `*.data/platlib`."""
    found = []
    for relative in relative_files:
        parts = PurePosixPath(relative).parts
        if not parts or not parts[-1].endswith(".pth"):
            continue
        if len(parts) == 1 or (len(parts) == 3 and parts[0].endswith(".data") and parts[1] in {"purelib", "platlib"}):
            found.append(relative)
    return sorted(found)


def _read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def _top_level(relative_files: Iterable[str]) -> list[str]:
    tops = []
    for relative in relative_files:
        parts = PurePosixPath(relative).parts
        if not parts or parts[0].endswith((".dist-info", ".data", ".egg-info")) or parts[0] == "..":
            continue
        top = parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")
        if top.isidentifier() and top not in SKIP_DIRS and top not in tops:
            tops.append(top)
    return tops


def _from_metadata(root: Path, metadata_text: str, entry_points_text: str, tops: list[str], info: str) -> PluginProject:
    metadata = email.parser.Parser().parsestr(metadata_text)
    name = metadata.get("Name") or root.name
    project = PluginProject(root=root, name=name, version=metadata.get("Version"))
    project.requires_python = metadata.get("Requires-Python")
    project.entry_points = [
        EntryPoint(ep.group, ep.name, ep.value, f"{info}entry_points.txt")
        for ep in entry_points_from(entry_points_text, "entry_points.txt")
    ]
    project.read_from = [f"{info}METADATA"] + ([f"{info}entry_points.txt"] if entry_points_text else [])
    for requirement in metadata.get_all("Requires-Dist") or []:
        text, _semicolon, marker = requirement.partition(";")
        extra = marker.split("extra")[-1].strip(" =\"'") if "extra" in marker else None
        where = f"{info}METADATA extra {extra}" if extra else f"{info}METADATA Requires-Dist"
        project.requirements.append(Requirement(text.strip(), where))
    for top in tops:
        candidate = root / top
        project.packages[top] = candidate if candidate.is_dir() else root / f"{top}.py"
    return project
