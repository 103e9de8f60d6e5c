"""Three-way merges for `update`: text files line by line, `pyproject.toml` key by key.

The three sides are the base (what the tool generated last time), yours (the working tree) and the template
(what the tool generates now). A region only the template changed takes the template's lines, a region only
you changed keeps yours, a region both changed the same way is taken once, and a region both changed
differently is a conflict, written between git-style markers. Pure Python (difflib), so it needs no git.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

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
    o = y = t = 0  # the next unmerged line of base, yours, template
    for base_start, your_start, template_start, length in _stable_regions(base_lines, your_lines, template_lines):
        chunk_base = base_lines[o:base_start]
        chunk_yours = your_lines[y:your_start]
        chunk_template = template_lines[t:template_start]
        if chunk_yours == chunk_base:
            out += chunk_template
        elif chunk_template == chunk_base or chunk_template == chunk_yours:
            out += chunk_yours
        else:
            conflicts += 1
            out += [YOURS_MARKER + "\n", *_ended(chunk_yours), SEPARATOR + "\n", *_ended(chunk_template)]
            out.append(TEMPLATE_MARKER + "\n")
        out += base_lines[base_start : base_start + length]
        o, y, t = base_start + length, your_start + length, template_start + length
    return Merged("".join(out), conflicts)


def _ended(lines: list[str]) -> list[str]:
    """`lines` with a line break after the last one, so a marker never joins a file's unterminated last line."""
    if lines and not lines[-1].endswith(("\n", "\r")):
        return [*lines[:-1], lines[-1] + "\n"]
    return lines


def _stable_regions(base: list[str], yours: list[str], template: list[str]) -> list[tuple[int, int, int, int]]:
    """Runs of base lines that both yours and the template kept unchanged, as (base, yours, template, length).

    The last entry is an empty run at the three ends, so every changed region lies before some entry.
    """
    to_yours = difflib.SequenceMatcher(None, base, yours, autojunk=False).get_matching_blocks()
    to_template = difflib.SequenceMatcher(None, base, template, autojunk=False).get_matching_blocks()
    regions: list[tuple[int, int, int, int]] = []
    i = j = 0
    while i < len(to_yours) and j < len(to_template):
        a, b = to_yours[i], to_template[j]
        start = max(a.a, b.a)
        end = min(a.a + a.size, b.a + b.size)
        if start < end:
            regions.append((start, a.b + start - a.a, b.b + start - b.a, end - start))
        if a.a + a.size < b.a + b.size:
            i += 1
        else:
            j += 1
    regions.append((len(base), len(yours), len(template), 0))
    return regions


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
