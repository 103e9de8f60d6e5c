"""The routing data (`routing/routes.toml`): how a change to vLLM's own code finds the seam that carries it.

Beside each seam's catalog entry (`Seam.covers`, the classes and functions a component replaces), this says
what marks a seam in changed code (base classes, in-tree registration points, registration calls), where
vLLM keeps the seam's own implementations, the words a user may name it by, and which changes no plugin
carries. `triage` and `find` read it; the file is data, loaded into the records below, and an undeclared
key is an error.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path

from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.vllm_facts.facts import expand

ROUTES_FILE = Path(__file__).parent / "routing" / "routes.toml"


@dataclass(frozen=True)
class Call:
    """A registration call or decorator: the registered name is its first argument ("argument") or the
    object it is called on ("owner": `@RMSNorm.register_oot`). `on`, when given, is the vLLM class whose
    method it is: a call of that name made on another object (two registries with a `register_module`
    each) is not this seam's."""

    name: str
    source: str
    on: str = ""


@dataclass(frozen=True)
class SeamRoute:
    """What marks one seam in changed code: a `[[seam]]` table of routes.toml, whose header says what each key
    means."""

    key: str
    bases: tuple[str, ...]
    registers: tuple[str, ...]
    calls: tuple[Call, ...]
    answer: str
    name: str
    suffixes: tuple[str, ...]
    files: tuple[str, ...]
    keywords: tuple[str, ...]
    base_answers: dict[str, dict[str, str]] = field(default_factory=dict)
    # The answer is the in-tree class the component replaces (custom-op's `op`), one of the catalog's `ops`.
    class_is_answer: bool = False
    # An index registry of "METHOD /path" routes: an answer under one of their first path segments is refused.
    answer_not_under: str = ""
    # Classes a component adds methods to (mixed into their bases): a method new to one is a component.
    extends: tuple[str, ...] = ()


@dataclass(frozen=True)
class ForkRule:
    why: str
    symbols: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()

    def names_symbol(self, symbol: str, kind: str = "") -> bool:
        if self.kinds and kind not in self.kinds:
            return False
        return any(symbol == s or symbol.startswith(s + ".") or symbol.startswith(s + "[") for s in self.symbols)

    def names_path(self, path: str) -> bool:
        return any(path == p or (p.endswith("/") and path.startswith(p)) for p in self.paths)


@dataclass(frozen=True)
class Routes:
    seams: tuple[SeamRoute, ...]
    forks: tuple[ForkRule, ...]
    reasons: dict[str, str]
    roles: dict[str, str]  # role -> the seam that plays it (ROLES)

    def seam_for(self, role: str) -> SeamRoute:
        seam = self.seam(self.roles[role])
        assert seam is not None, f"role {role}: checked when loaded"
        return seam

    def seam(self, key: str) -> SeamRoute | None:
        return next((s for s in self.seams if s.key == key), None)

    def fork_rule(self, symbol: str = "", kind: str = "", path: str = "") -> ForkRule | None:
        for rule in self.forks:
            if (symbol and rule.names_symbol(symbol, kind)) or (path and rule.names_path(path)):
                return rule
        return None

    def reason(self, key: str, /, **values: str) -> str:
        return self.reasons[key].format(**values)


# What some seams are for beyond their classes: the seam that adds HTTP routes, and the one that runs code in
# every vLLM process (what code run at import and module-level values move into).
ROLES = ("http_routes", "process_wide")

REASONS = (
    "patch", "covered", "registered", "extended", "copied_at_import", "read_at_import", "settable", "code_at_import",
    "class_shell", "removed", "goes_with", "named_by", "held_with", "registration_entry", "unreferenced",
    "data_file", "syntax", "base_extended",
)  # fmt: skip


def _record(cls: type, table: dict, where: str) -> object:
    known = {f.name for f in fields(cls)}
    unknown = set(table) - known
    if unknown:
        raise ScaffoldError(
            f"{ROUTES_FILE.name}: {where} has an unknown key '{sorted(unknown)[0]}'",
            f"declare it in vllm_scaffold/catalog/routes.py ({cls.__name__}), or remove it",
        )
    # A `why` may state a vLLM fact as {fact:KEY} (vllm_facts/facts.toml), as the catalog's claim fields do.
    values = {k: tuple(v) if isinstance(v, list) else expand(v) if k == "why" else v for k, v in table.items()}
    try:
        return cls(**values)
    except TypeError as error:
        raise ScaffoldError(f"{ROUTES_FILE.name}: {where} is incomplete ({error})", "add the missing keys") from None


@cache
def load_routes(path: Path = ROUTES_FILE) -> Routes:
    """The routing data, checked: every key declared, every seam one of the catalog's, every reason given."""
    from vllm_scaffold.catalog import load_catalog

    data = tomllib.loads(path.read_text(encoding="utf-8"))
    unknown = set(data) - {"seam", "fork", "reasons", "roles"}
    if unknown:
        raise ScaffoldError(f"{ROUTES_FILE.name} has an unknown table '{sorted(unknown)[0]}'", "remove it")
    seams = []
    for table in data.get("seam", []):
        where = f"[[seam]] {table.get('key', '?')}"
        calls = tuple(
            Call(name=c["name"], source=c["from"], on=c.get("on", ""))
            for c in table.get("calls", [])
            if {"name", "from"} <= set(c) <= {"name", "from", "on"}
        )
        if len(calls) != len(table.get("calls", [])) or any(c.source not in {"argument", "owner"} for c in calls):
            raise ScaffoldError(f"{ROUTES_FILE.name}: {where} has a call that is not {{name, from[, on]}}", "fix it")
        seam = _record(SeamRoute, {**table, "calls": calls}, where)
        assert isinstance(seam, SeamRoute)
        if seam.key not in load_catalog():
            raise ScaffoldError(f"{ROUTES_FILE.name}: {where} is no catalog seam", "use a key of 'vllm-scaffold list'")
        if seam.name not in {"answer", "class", "method"}:
            raise ScaffoldError(
                f"{ROUTES_FILE.name}: {where} has name = '{seam.name}'", "use 'answer', 'class' or 'method'"
            )
        if (seam.name == "method") != bool(seam.extends):
            raise ScaffoldError(
                f"{ROUTES_FILE.name}: {where} has name = '{seam.name}' and extends = {list(seam.extends)}",
                "name = 'method' goes with the classes it extends, and only with them",
            )
        seams.append(seam)
    forks = []
    for number, table in enumerate(data.get("fork", []), 1):
        rule = _record(ForkRule, table, f"[[fork]] number {number}")
        assert isinstance(rule, ForkRule)
        forks.append(rule)
    reasons = {key: expand(text) for key, text in data.get("reasons", {}).items()}
    if set(reasons) != set(REASONS):
        odd = sorted(set(reasons) ^ set(REASONS))[0]
        raise ScaffoldError(f"{ROUTES_FILE.name}: [reasons] '{odd}' is missing or unknown", f"give exactly {REASONS}")
    roles = dict(data.get("roles", {}))
    keys = {seam.key for seam in seams}
    if set(roles) != set(ROLES) or not set(roles.values()) <= keys:
        raise ScaffoldError(f"{ROUTES_FILE.name}: [roles] must give {ROLES}, each a [[seam]] key", "fix [roles]")
    return Routes(tuple(seams), tuple(forks), reasons, roles)
