"""What a patch target ("vllm.module:Qualname") is in one release: its kind, its signature and the hash of its
source, read from the release index. `patch` components are generated from these facts and record them per
release in their manifest entry (the fingerprint); doctor compares the fingerprint with each release.
Where vLLM calls a target (its process families, `reached_in`'s default) comes from `patch_callers.toml`.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from vllm_scaffold.vllm_facts.facts import Evidence
from vllm_scaffold.vllm_facts.index import ReleaseIndex, Symbol

# Kinds a patch can wrap, by the index's signature decorator ("" is a plain function or method).
PATCHABLE = ("function", "method", "classmethod", "staticmethod", "property")
_MEMBER_KINDS = {"": "method", "c": "classmethod", "s": "staticmethod", "p": "property"}
TARGET_PATTERN = re.compile(r"^vllm(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")


@dataclass(frozen=True)
class TargetFacts:
    """A patchable target in one release."""

    kind: str  # one of PATCHABLE
    signature: str  # the index's signature string (`build.signature`), decorator prefix included
    source_hash: str  # `build.source_hash` of the definition ("" when the index predates hashes)
    defined_in: str  # "vllm.module.Qualname" of the definition (a member may come from a base class)

    def fingerprint(self) -> dict[str, str]:
        return {"signature": self.signature, "source": self.source_hash}


def shape(signature: str) -> str:
    """The signature without annotations or decorator prefix: parameter names, kinds and which have defaults
    ("self,x,y=,*,z="). What a call binds against, and what a patch compares with the live target at run time."""
    text = signature.partition(" ")[2] if signature.startswith("@") else signature
    parts = [part for part in text.split(",") if part]
    return ",".join(part.partition(":")[0].rstrip("=") + ("=" if part.endswith("=") else "") for part in parts)


def describe(index: ReleaseIndex, target: str) -> TargetFacts | str:
    """The target's facts in this release, or why it cannot be patched there (a sentence)."""
    if not TARGET_PATTERN.match(target):
        return f"'{target}' is not a target: write it as vllm.module:Function or vllm.module:Class.method"
    module, _, qualname = target.partition(":")
    if module not in index.modules:
        return f"vLLM {index.version} has no module {module}"
    symbol = index.resolve(f"{module}.{qualname}")
    if symbol.kind == "function":
        source = index.source_hash(symbol)
        return TargetFacts("function", index.function_text(symbol), source, f"{symbol.module}.{symbol.name}")
    if symbol.kind == "member":
        class_name, _, member = symbol.name.rpartition(".")
        owner = Symbol("class", f"{symbol.module}.{class_name}", symbol.module, class_name)
        text = index.methods(owner).get(member)
        if text is None:
            return f"{target} is an attribute in vLLM {index.version}, not a function, method or property"
        kind = _MEMBER_KINDS[text[1] if text.startswith("@") else ""]
        return TargetFacts(kind, text, index.source_hash(symbol), f"{symbol.module}.{symbol.name}")
    if symbol.kind == "missing":
        return f"vLLM {index.version} has no {qualname} in {module}"
    if symbol.kind == "class":
        return f"{target} is a class: patch one of its methods (vllm.module:Class.method)"
    head, _, member = qualname.rpartition(".")
    owner = index.resolve(f"{module}.{head}") if head else None
    if symbol.kind == "unknown" and owner is not None and owner.kind == "class" and index.mro(owner)[1]:
        return f"vLLM {index.version}'s {head} has no {member}"  # its body and vLLM bases are all indexed
    if symbol.kind == "value":
        return f"{target} is a value in vLLM {index.version}, not a function, method or property"
    return f"vLLM {index.version}'s index cannot tell what {target} is (not a function, method or property it can see)"


# Where vLLM calls the code a patch can wrap (patch_callers.toml).
CALLERS = Path(__file__).with_name("patch_callers.toml")
# The processes that load the general plugins, where apply() runs: the default where no entry says more.
EVERY_FAMILY = "front-end+engine-core+worker"


@dataclass(frozen=True)
class Callers:
    """An entry of patch_callers.toml: the families vLLM calls `code` in, on `releases`."""

    code: str  # "vllm.module" (that module and the modules under it) or "vllm.module:Qualname"
    releases: tuple[str, ...]
    reached_in: str
    why: str
    engine_args: dict[str, object] = field(default_factory=dict)
    evidence: tuple[Evidence, ...] = ()
    importers: tuple[str, ...] = ()

    def holds(self, defined_in: str) -> bool:
        """Whether `defined_in` ("vllm.module.Qualname" of a definition) is code this entry speaks for."""
        module, _, qualname = self.code.partition(":")
        if qualname:
            return defined_in == f"{module}.{qualname}"
        return defined_in.startswith(f"{module}.")


@cache
def callers() -> tuple[Callers, ...]:
    return tuple(map(_callers, tomllib.loads(CALLERS.read_text(encoding="utf-8"))["callers"]))


def _callers(entry: dict) -> Callers:
    """One `[[callers]]` table as patch_callers.toml writes it."""
    return Callers(
        entry["code"],
        tuple(entry["releases"]),
        entry["reached_in"],
        entry["why"],
        dict(entry.get("engine_args", {})),
        tuple(Evidence(**e) for e in entry.get("evidence", ())),
        tuple(entry.get("importers", ())),
    )


def callers_of(found: dict[str, TargetFacts]) -> Callers | None:
    """The entry that says where vLLM calls a target, given its facts in each release of a package's range
    (release -> facts): for each release the first entry holding its definition there; when every release has
    one and they agree on the families and the engine arguments (a release that moved the call sites has an
    entry of its own), the first of them, else None."""
    chosen: list[Callers] = []
    for version, facts in found.items():
        entry = next((e for e in callers() if version in e.releases and e.holds(facts.defined_in)), None)
        if entry is None:
            return None
        chosen.append(entry)
    if not chosen:
        return None
    first = chosen[0]
    agree = all((e.reached_in, e.engine_args) == (first.reached_in, first.engine_args) for e in chosen)
    return first if agree else None
