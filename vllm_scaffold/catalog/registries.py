"""Every registry of vLLM, each with a status: the catalog file `registries.toml`, loaded into `Registry` records.

The release indexes list what a release registers through (its entry-point groups and its registration points,
`vllm_facts/registration_points.py`); this file says what each of those is to a plugin author:
- `templated`: a seam of this catalog generates a component for it (`seam` names it);
- `explained`: no template yet, but the facts a plugin needs are here (the call, how a user selects an entry,
  which processes must have registered it, what a duplicate does, what breaks), checked against the source
  of each release in `releases`;
- `internal`: a registry of vLLM's own, with `reason` saying why a plugin should not register with it.

The suite fails when a shipped index has a registration point or entry-point group no entry claims
(tests/test_registries.py), so a new release's registries cannot go unnoticed.
"""

from __future__ import annotations

import tomllib
from dataclasses import MISSING, dataclass, fields
from functools import cache
from pathlib import Path

from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.vllm_facts.facts import expand

REGISTRIES_FILE = Path(__file__).parent / "registries.toml"
STATUSES = ("templated", "explained", "internal")

# What each status requires beyond the common fields, and what it may not have.
_REQUIRED = {
    "templated": ("seam",),
    "explained": ("releases", "call", "selection", "processes", "duplicate_policy", "pitfalls"),
    "internal": ("releases", "reason"),
}
_ONLY = {"seam": "templated", "reason": "internal"}
_TUPLES = {"keywords", "registration", "releases", "selection", "pitfalls"}


@dataclass(frozen=True)
class Registry:
    """One registry of vLLM. Every key of a `registries.toml` table is one of these fields."""

    key: str
    status: str  # "templated" | "explained" | "internal"
    title: str
    summary: str
    keywords: tuple[str, ...]  # plain words a user might search for
    source: str  # the vLLM file that defines the registry, relative to the repository root (vllm/...)
    # The dotted vLLM symbols an entry is added through, as the release index names them (its
    # registration points, or the config field that names a class where there is no registry call).
    registration: tuple[str, ...] = ()
    group: str | None = None  # the entry-point group, for registries vLLM fills from entry points
    seam: str | None = None  # templated: the seam key
    releases: tuple[str, ...] = ()  # explained/internal: the releases whose sources the facts were checked on
    call: str | None = None  # explained: the registration call as a plugin writes it
    selection: tuple[str, ...] = ()  # explained: how a user picks a registered entry
    processes: str | None = None  # explained: which processes must have registered it, and when it is read
    duplicate_policy: str | None = None
    pitfalls: tuple[str, ...] = ()
    reason: str | None = None  # internal: why a plugin should not use it

    def as_json(self) -> dict[str, object]:
        """The entry `list --all --json` prints: every field that holds something."""
        entry: dict[str, object] = {}
        for item in fields(self):
            value = getattr(self, item.name)
            if value or item.name in {"key", "status", "registration"}:
                entry[item.name] = list(value) if isinstance(value, tuple) else value
        return entry


def registry_from_table(key: str, table: dict[str, object], where: str = REGISTRIES_FILE.name) -> Registry:
    """One `[key]` table of the catalog file as a `Registry`; a key it does not declare is an error."""
    known = {item.name for item in fields(Registry)} - {"key"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ScaffoldError(
            f"{where} [{key}] has an unknown key '{unknown[0]}'",
            "declare it as a field of Registry in vllm_scaffold/catalog/registries.py, or remove it",
        )
    status = table.get("status")
    if status not in STATUSES:
        raise ScaffoldError(f"{where} [{key}] has status {status!r}", f"use one of {', '.join(STATUSES)}")
    required = [item.name for item in fields(Registry) if item.default is MISSING and item.name != "key"]
    missing = [name for name in [*required, *_REQUIRED[str(status)]] if not table.get(name)]
    if missing:
        raise ScaffoldError(f"{where} [{key}] ({status}) lacks {', '.join(missing)}", "add the missing keys")
    for name, only in _ONLY.items():
        if name in table and status != only:
            raise ScaffoldError(f"{where} [{key}] has '{name}', which only a {only} entry has", f"remove '{name}'")
    if not table.get("registration") and not table.get("group"):
        raise ScaffoldError(f"{where} [{key}] names neither a registration nor a group", "add one")
    values = {name: _stated(name, value) for name, value in table.items()}
    return Registry(key=key, **values)  # type: ignore[arg-type]


def _stated(name: str, value: object) -> object:
    """A field's value, each text with its `{fact:KEY}` replaced by the claim (vllm_facts/facts.toml), as the
    seams' claim fields are."""
    if name in _TUPLES:
        return tuple(expand(str(item)) for item in value)  # type: ignore[attr-defined]
    return expand(value) if isinstance(value, str) else value


@cache
def load_registries() -> dict[str, Registry]:
    """Every registry, keyed by its key, in the file's order: templated, explained, internal."""
    data = tomllib.loads(REGISTRIES_FILE.read_text(encoding="utf-8"))
    loaded = [registry_from_table(key, table) for key, table in data.items()]
    loaded.sort(key=lambda registry: STATUSES.index(registry.status))
    return {registry.key: registry for registry in loaded}
