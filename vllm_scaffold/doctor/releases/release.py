"""The release a plugin is checked against, with the other indexed releases: which names it lacks, and where
else they exist (the words a finding adds: "(it exists in 0.31.0)")."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

from vllm_scaffold.vllm_facts import ReleaseIndex, Symbol
from vllm_scaffold.vllm_facts.store import version_key

# Members vLLM classes inherit from bases outside vLLM (the index lists only vLLM's own members).
_ENUM_MEMBERS = frozenset({"name", "value", "_member_map_", "_value2member_map_", "_missing_"})
_OUTSIDE_MEMBERS = {
    "abc.ABC": frozenset({"register"}),
    "enum.Enum": _ENUM_MEMBERS,
    "enum.IntEnum": _ENUM_MEMBERS,
    "enum.StrEnum": _ENUM_MEMBERS,
}
# Bases outside vLLM an enum may have without adding upper-case attributes.
_ENUM_BASES = frozenset({"enum.Enum", "enum.IntEnum", "enum.StrEnum", "enum.Flag", "enum.IntFlag", "str", "int"})

Others = list[ReleaseIndex] | Callable[[], list[ReleaseIndex]]


class Release:
    """One release's index and the other indexed releases (`others`: a callable loads them when first needed,
    the plain run's shipped indexes)."""

    def __init__(self, index: ReleaseIndex, others: Others) -> None:
        self.index = index
        self._others = others

    @property
    def label(self) -> str:
        return f"vLLM {self.index.version}"

    @cached_property
    def others(self) -> list[ReleaseIndex]:
        """The other indexed releases, newest first."""
        others = self._others() if callable(self._others) else self._others
        unique = {o.version: o for o in others if o.version != self.index.version}
        return sorted(unique.values(), key=lambda o: version_key(o.version), reverse=True)

    @cached_property
    def groups(self) -> set[str]:
        """The entry-point groups of this release and the others: names, not paths."""
        return {group for release in [self.index, *self.others] for group in release.entry_point_groups}

    def is_newer(self, other: ReleaseIndex) -> bool:
        """Whether `other` is a later release than this one."""
        return version_key(other.version) > version_key(self.index.version)

    def first_missing(self, qualname: str) -> str | None:
        """The shortest prefix of `qualname` the release does not have, or None when all of it resolves."""
        parts = qualname.split(".")
        for cut in range(2, len(parts) + 1):
            prefix = ".".join(parts[:cut])
            symbol = self.index.resolve(prefix)
            if symbol.kind == "missing":
                if self._inherited_from_outside(".".join(parts[: cut - 1]), parts[cut - 1]):
                    return None
                return prefix
            if symbol.kind == "unknown":
                return prefix if self._enum_member_missing(".".join(parts[: cut - 1]), parts[cut - 1]) else None
        return None

    def _enum_member_missing(self, owner: str, name: str) -> bool:
        """`owner` is one of vLLM's enums and has no member or attribute `name`. The index marks a class with a
        metaclass as having generated attributes, but an enum's members are the names its body binds
        (`AttentionBackendEnum.TURBO_ATTN` on a release without that backend raises AttributeError)."""
        index = self.index
        symbol = index.resolve(owner)
        if symbol.kind != "class" or not name.isupper():
            return False
        order = index.mro(symbol)[0]
        outside = {b for cls in order for b in index.declared_bases(cls) if b.split(".")[0] != "vllm"}
        if not any(b.startswith("enum.") for b in outside) or outside - _ENUM_BASES:
            return False  # not an enum, or a base outside vLLM and the standard enums may give it the name
        return index.find_member(symbol, name)[0] is None

    def _inherited_from_outside(self, owner: str, name: str) -> bool:
        """`name` is what a vLLM class gets from a base outside vLLM the index does not list members of:
        `register` of an `abc.ABC` class (a virtual subclass), an Enum's `__members__`."""
        symbol = self.index.resolve(owner)
        if symbol.kind != "class":
            return False
        return any(
            name in _OUTSIDE_MEMBERS.get(base, ())
            for cls in self.index.mro(symbol)[0]
            for base in self.index.declared_bases(cls)
        )

    def elsewhere(self, qualname: str) -> str:
        """ " (it exists in 0.31.0, 0.33.0)" when other indexed releases have `qualname`."""
        found = sorted((o.version for o in self.others if o.resolve(qualname).exists), key=version_key)
        return f" (it exists in {', '.join(found)})" if found else ""

    def elsewhere_on(self, bases: list[Symbol], name: str) -> str:
        """ " (0.31.0 has it)" when another indexed release's version of the bases defines `name`."""
        for other in self.others:
            for base in bases:
                symbol = other.resolve(base.qualname)
                if symbol.kind == "class" and other.instance_attribute(symbol, name):
                    return f" ({other.version} has it)"
        return ""

    def find(self, bases: list[Symbol], name: str) -> tuple[Symbol | None, str | None]:
        """(the class defining `name` first among `bases`' lineages, its signature or None), or (None, None)."""
        for base in bases:
            owner, text = self.index.find_member(base, name)
            if owner is not None:
                return owner, text
        return None, None
