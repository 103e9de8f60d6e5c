"""Three-way merges for `update`: text files line by line, `pyproject.toml` key by key.

The three sides are the base (what the tool generated last time), yours (the working tree) and the template
(what the tool generates now). A region only the template changed takes the template's lines, a region only
you changed keeps yours, a region both changed the same way is taken once, and a region both changed
differently is a conflict, written between git-style markers. The text merge is merge3's (the diff3 of
Breezy and Dulwich), pure Python, so it needs no git; the markers and the count of conflicts are ours.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import merge3
import tomlkit
from tomlkit.container import Container
from tomlkit.items import Table

from vllm_scaffold.project.conflicts import SEPARATOR, TEMPLATE_MARKER, YOURS_MARKER

__all__ = ["SEPARATOR", "TEMPLATE_MARKER", "YOURS_MARKER", "Merged", "merge_text", "merge_toml"]


@dataclass
class Merged:
    text: str
    conflicts: int  # regions written between markers (text) or keys kept as yours against the template (TOML)
    keys: list[str] = field(default_factory=list)  # TOML: the conflicting keys, dotted


def merge_text(base: str, yours: str, template: str) -> Merged:
    """`yours` with the changes from `base` to `template` applied; conflicting regions between markers."""
    base_lines, your_lines, template_lines = (text.splitlines(keepends=True) for text in (base, yours, template))
    out: list[str] = []
    conflicts = 0
    for group in merge3.Merge3(base_lines, your_lines, template_lines).merge_groups():
        if group[0] == "conflict":
            _, _, chunk_yours, chunk_template = group
            conflicts += 1
            out += [YOURS_MARKER + "\n", *_ended(chunk_yours), SEPARATOR + "\n", *_ended(chunk_template)]
            out.append(TEMPLATE_MARKER + "\n")
        else:
            out += group[1]
    return Merged("".join(out), conflicts)


def _ended(lines: Sequence[str]) -> list[str]:
    """`lines` with a line break after the last one, so a marker never joins a file's unterminated last line."""
    if lines and not lines[-1].endswith(("\n", "\r")):
        return [*lines[:-1], lines[-1] + "\n"]
    return list(lines)


_MISSING: Any = object()


def merge_toml(base: str, yours: str, template: str) -> Merged:
    """`yours` (a TOML document) with every key the template changed since `base` set, added or removed.

    Keys are compared by value, so your formatting and comments survive. A key both sides changed differently
    keeps your value and is listed. With an empty `base`, the template's keys you lack are added and the
    ones you set otherwise are listed.
    """
    doc = tomlkit.parse(yours)
    keys: list[str] = []
    _merge_table(tomlkit.parse(base).unwrap() if base else {}, doc, tomlkit.parse(template), "", keys)
    merged = tomlkit.dumps(doc)
    return Merged(merged if merged != yours else yours, len(keys), keys)


def _merge_table(
    base: dict[str, Any], yours: Container | Table, template: Container | Table, where: str, keys: list[str]
) -> None:
    plain_template = template.unwrap()
    for key in [*base, *(k for k in plain_template if k not in base)]:
        was, now = base.get(key, _MISSING), plain_template.get(key, _MISSING)
        mine = yours[key].unwrap() if key in yours else _MISSING  # type: ignore[union-attr]
        if now == was or mine == now:
            continue
        if mine == was:
            if now is _MISSING:
                del yours[key]
            else:
                yours[key] = template[key]
        elif isinstance(mine, dict) and isinstance(now, dict) and (was is _MISSING or isinstance(was, dict)):
            _merge_table({} if was is _MISSING else was, yours[key], template[key], f"{where}{key}.", keys)  # type: ignore[arg-type]
        else:
            keys.append(f"{where}{key}")
