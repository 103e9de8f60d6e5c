"""Which seam covers a piece of vLLM code: the rule behind each catalog entry's `covers` list, applied to one
release index.

A target ("vllm.module:Qualname", a function, a class or a class member) is covered by a seam when one of the
seam's `covers` entries
- names a module, and the target is defined in that module or one of its submodules, or is named through it;
- names a class, and the target is that class, or a member of it or of a vLLM subclass of it (the class the
  target names or the class that defines the member);
- names a function, and the target is that function.
Names are compared where the index resolves them (where they are defined), so a re-export covers nothing more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vllm_scaffold.catalog import Seam, load_catalog

if TYPE_CHECKING:
    from vllm_scaffold.vllm_facts.index import ReleaseIndex, Symbol


def split_target(target: str) -> tuple[str, str]:
    """("vllm.module", "Qualname") from "vllm.module:Qualname"."""
    module, _, qualname = target.partition(":")
    return module, qualname


def _defined(symbol: Symbol) -> str:
    return f"{symbol.module}.{symbol.name}" if symbol.name else symbol.qualname


def _classes_of(index: ReleaseIndex, target: str) -> list[Symbol]:
    """The class the target is or names (for a member), with its vLLM ancestors; and the member's owner."""
    module, qualname = split_target(target)
    head, _, member = qualname.rpartition(".")
    found: list[Symbol] = []
    whole = index.resolve(f"{module}.{qualname}")
    if whole.kind == "class":
        found += index.mro(whole)[0]
    if head:
        named = index.resolve(f"{module}.{head}")
        if named.kind == "class":
            found += index.mro(named)[0]
            owner, _signature = index.find_member(named, member)
            if owner is not None:
                found += index.mro(owner)[0]
    return found


def covering_seam(index: ReleaseIndex, target: str) -> tuple[Seam, str] | None:
    """(the seam, the `covers` entry) that covers `target` in this release, or None."""
    module, qualname = split_target(target)
    symbol = index.resolve(f"{module}.{qualname}")
    places = {module, symbol.module, _defined(symbol)}
    classes = {_defined(cls) for cls in _classes_of(index, target)}
    for seam in load_catalog().values():
        for entry in seam.covers:
            covered_module, covered_name = split_target(entry)
            if not covered_name:
                if any(p == covered_module or p.startswith(covered_module + ".") for p in places if p):
                    return seam, entry
                continue
            covered = _defined(index.resolve(f"{covered_module}.{covered_name}"))
            if covered in classes or covered == _defined(symbol):
                return seam, entry
    return None
