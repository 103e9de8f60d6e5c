"""Facts about vLLM, one index per release, read from the release's Python sources (never imported).

Everything this tool knows about a vLLM release comes from here: the names the templates refuse
(`scripts/in_tree_names.py`), what `doctor` checks against the installed vLLM, and what `doctor --vllm VERSION`
checks against releases that are not installed.

- `build.py` reads a wheel or source tree into an index; `registries.py` reads the in-tree registries;
- `index.py` answers questions about one index (`ReleaseIndex`);
- `store.py` finds indexes: shipped under `releases/`, cached, or built on demand;
- `which.py` says which release a user's or a package's words mean (`which_release`), and which releases
  the templates are verified on, and how;
- `releases/` holds the shipped indexes, written by `scripts/build_vllm_index.py`.
- `facts.toml` (read by `facts.py`) holds the claims about vLLM's behaviour the tool states, each with the
  releases it holds for and the anchors in their sources that are its evidence (docs/facts.md).
"""

from __future__ import annotations

from vllm_scaffold.vllm_facts.index import ReleaseIndex, Signature, Symbol
from vllm_scaffold.vllm_facts.store import shipped, shipped_versions, version_key
from vllm_scaffold.vllm_facts.which import (
    API,
    ENGINE,
    ENGINE_TESTED,
    UNKNOWN,
    Installed,
    Named,
    Origin,
    Release,
    Targeted,
    api_checked,
    checked_in,
    checked_versions,
    cpu_engines,
    cpu_pin,
    declared_range,
    default,
    default_version,
    example_range,
    kind_of,
    newest,
    range_problem,
    release,
    which_release,
)

__all__ = [
    "API",
    "ENGINE",
    "ENGINE_TESTED",
    "UNKNOWN",
    "Installed",
    "Named",
    "Origin",
    "Release",
    "ReleaseIndex",
    "Signature",
    "Symbol",
    "Targeted",
    "api_checked",
    "checked_in",
    "checked_versions",
    "cpu_engines",
    "cpu_pin",
    "declared_range",
    "default",
    "default_version",
    "endpoint_routes_replace_core_from",
    "example_range",
    "endpoint_routes_replace_core",
    "kind_of",
    "newest",
    "range_problem",
    "release",
    "shipped",
    "shipped_versions",
    "which_release",
]

# From this release on, `attach_endpoint_plugins` (vllm/plugins/endpoint_plugins/interface.py) replaces a core
# route with the plugin's route of the same path and method. Before it (0.31), plugin routes were appended
# after the core routers and Starlette serves the first route that matches: a plugin route on a core path is
# never reached.
ENDPOINT_ROUTES_REPLACE_CORE_FROM = (0, 32)


def endpoint_routes_replace_core(version: str) -> bool:
    """Whether an endpoint plugin's route replaces vLLM's own route of the same path and method."""
    return version_key(version) >= ENDPOINT_ROUTES_REPLACE_CORE_FROM


def endpoint_routes_replace_core_from() -> str:
    """The oldest shipped release whose endpoint plugin routes replace vLLM's own: the lower bound a message
    tells a plugin to declare."""
    return next(v for v in shipped_versions() if endpoint_routes_replace_core(v))
