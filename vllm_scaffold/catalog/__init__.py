"""The seam catalog: one TOML file per vLLM extension seam, loaded into `Seam` records.

The catalog is data. A seam's file says what vLLM does with it (registration API or entry-point group,
which processes load it and when, what happens on duplicates, how a user selects it, what breaks silently)
and, once it has a template, what a component of that seam adds to a plugin package (entry points,
a registration call run from the package's general plugin, the manifest entry). The CLI never names a seam.
`registries.toml` (read by `registries.py`, `load_registries()`) gives every registry of vLLM a status: the
seam that templates it, explained without a template, or internal.
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import MISSING, dataclass, field, fields
from functools import cache
from pathlib import Path

# The registry census, beside the seams (re-exported: `from vllm_scaffold.catalog import load_registries`).
from vllm_scaffold.catalog.registries import REGISTRIES_FILE
from vllm_scaffold.catalog.registries import Registry as Registry
from vllm_scaffold.catalog.registries import load_registries as load_registries
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.vllm_facts.facts import expand

CATALOG_DIR = Path(__file__).parent


def docs_page(key: str) -> Path | None:
    """The seam's documentation page (docs/seams/<key>.md), inside the installed wheel or a source checkout."""
    package = CATALOG_DIR.parent
    for folder in (package / "docs" / "seams", package.parent / "docs" / "seams"):
        if (folder / f"{key}.md").is_file():
            return folder / f"{key}.md"
    return None


@dataclass(frozen=True)
class EntryPoint:
    """An entry point a component adds; `name` and `target` are `str.format` patterns over the answers."""

    group: str
    name: str
    target: str


@dataclass(frozen=True)
class Seam:
    """One catalog entry. Every key of a seam's TOML file is one of these fields; any other key is an error."""

    key: str
    title: str
    summary: str
    category: str  # the heading the seam is listed under when a user chooses one on a terminal
    api: str
    process_family: str
    load_timing: str
    duplicate_policy: str
    kernel: bool
    group: str | None = None
    selection: tuple[str, ...] = ()
    pitfalls: tuple[str, ...] = ()
    template: str | None = None
    module: str | None = None
    example: str | None = None
    name_example: str | None = None  # a component name fitting the seam, for the question that asks for one
    entry_points: tuple[EntryPoint, ...] = ()
    registration: str | None = None
    object: str | None = None
    enable: tuple[str, ...] = ()
    # The per-request parameter a component reads (logits-processor: its SamplingParams.extra_args key), which
    # the manifest records so doctor's live probe can send it.
    parameter: str | None = None
    # Seams that replace in-tree classes (custom-op): the classes offered, by class name, with where they live.
    ops: dict[str, dict[str, str]] = field(default_factory=dict)
    # question -> answer that at most one component of this seam per project may give (a single vLLM slot)
    single_slot: dict[str, str] = field(default_factory=dict)
    # Extras of the test harness the seam's generated tests need (ray: the scale-out layouts on Ray).
    harness_extras: tuple[str, ...] = ()
    # The vLLM code a component of this seam replaces or extends, so that changing it needs no patch. Each entry
    # is "vllm.module:Qualname" (a class or function where it is defined, as the release index resolves it) or
    # "vllm.module" alone (everything defined in that module and its submodules). A class covers its own
    # members and every member of each vLLM subclass of it (an attention backend's methods, a CustomOp's
    # forward, a scheduler's schedule). Every entry resolves in every shipped release index
    # (tests/test_catalog.py); `covering_seam` in catalog/covers.py applies the rule to one release.
    covers: tuple[str, ...] = ()
    # Answers recorded as they are in the component's manifest entry ([[tool.vllm-scaffold.components]]),
    # beside seam, name, module, object and enable: what doctor reads back (a patch's target and fingerprints).
    record: tuple[str, ...] = ()

    @property
    def has_template(self) -> bool:
        return self.template is not None

    def as_json(self) -> dict[str, object]:
        """The entry `list --json` prints; `reference` is the seam's documentation page that ships with the tool."""
        page = docs_page(self.key)
        return {
            "key": self.key,
            "title": self.title,
            "summary": self.summary,
            "category": self.category,
            "group": self.group,
            "api": self.api,
            "process_family": self.process_family,
            "load_timing": self.load_timing,
            "duplicate_policy": self.duplicate_policy,
            "selection": list(self.selection),
            "pitfalls": list(self.pitfalls),
            "kernel": self.kernel,
            "template": self.template,
            "covers": list(self.covers),
            "reference": str(page) if page else None,
        }


_LIST_FIELDS = {"selection", "pitfalls", "enable", "harness_extras", "covers", "record"}


CLAIM_FIELDS = ("api", "process_family", "load_timing", "duplicate_policy", "selection")
"""The fields of a seam that state how vLLM treats it; each may write `{fact:KEY}` as pitfalls do."""


def _seam_from_table(path: Path, table: dict[str, object]) -> Seam:
    known = set(Seam.__dataclass_fields__) - {"key", "entry_points"}
    values: dict[str, object] = {}
    for name, value in table.items():
        if name == "entry_points":
            continue
        if name not in known:
            raise ScaffoldError(
                f"catalog file {path.name} has an unknown key '{name}'",
                "declare it as a field of Seam in vllm_scaffold/catalog/__init__.py, or remove it",
            )
        values[name] = tuple(value) if name in _LIST_FIELDS else value  # type: ignore[arg-type]
    if "pitfalls" in values:  # a pitfall may state a vLLM fact as {fact:KEY} (vllm_facts/facts.toml)
        values["pitfalls"] = tuple(expand(str(p)) for p in values["pitfalls"])  # type: ignore[union-attr]
    # so may each field that says how vLLM treats the seam, and the summary and enable lines the generated
    # READMEs and pyproject records show
    for name in (*CLAIM_FIELDS, "summary", "enable"):
        value = values.get(name)
        if isinstance(value, str):
            values[name] = expand(value)
        elif isinstance(value, tuple):
            values[name] = tuple(expand(str(v)) for v in value)
    required = [f.name for f in fields(Seam) if f.default is MISSING and f.default_factory is MISSING]
    missing = [name for name in required if name != "key" and name not in values]
    if missing:
        raise ScaffoldError(f"catalog file {path.name} lacks {', '.join(missing)}", "add the missing keys")
    entry_points = tuple(EntryPoint(**ep) for ep in table.get("entry_points", []))  # type: ignore[union-attr]
    return Seam(key=path.stem, entry_points=entry_points, **values)  # type: ignore[arg-type]


@cache
def load_catalog() -> dict[str, Seam]:
    """Every seam, keyed by its CLI key, in the order of the `order` field (then by key)."""
    loaded: list[tuple[int, Seam]] = []
    for path in CATALOG_DIR.glob("*.toml"):
        if path == REGISTRIES_FILE:  # every registry's status, not a seam (registries.py)
            continue
        table = tomllib.loads(path.read_text(encoding="utf-8"))
        order = int(table.pop("order", 1000))
        loaded.append((order, _seam_from_table(path, table)))
    loaded.sort(key=lambda item: (item[0], item[1].key))
    return {seam.key: seam for _, seam in loaded}


def get_seam(key: str) -> Seam:
    """The seam for `key`, or a ScaffoldError that suggests the closest key."""
    catalog = load_catalog()
    if key in catalog:
        return catalog[key]
    close = difflib.get_close_matches(key, catalog, n=1, cutoff=0.5)
    hint = f"did you mean '{close[0]}'?" if close else "run 'vllm-scaffold list' for the keys"
    raise ScaffoldError(f"unknown seam '{key}'", hint)


def templated_keys() -> list[str]:
    """The seams that have a template, in catalog order."""
    return [seam.key for seam in load_catalog().values() if seam.has_template]


def entry_point_group(key: str) -> str:
    """The entry-point group through which vLLM loads seam `key`."""
    group = get_seam(key).group
    assert group is not None, f"seam {key} is not loaded through an entry-point group"
    return group


def templated_seam(key: str) -> Seam:
    """The seam for `key` if it has a template; a ScaffoldError otherwise."""
    seam = get_seam(key)
    if not seam.has_template:
        ready = ", ".join(s.key for s in load_catalog().values() if s.has_template)
        raise ScaffoldError(
            f"seam '{key}' has no template yet", f"templated seams are: {ready} ('vllm-scaffold explain {key}')"
        )
    return seam
