"""Printing a Report: grouped text for people, JSON for tools, workflow annotations for GitHub Actions.

The text groups findings by code, most severe first. Lines wrap between words at the terminal's width, so a
code or a path is never split at 80 columns; a code with many findings (a large plugin) shows how many, the
first finding in full and the next few places, and leaves the rest to --json. A finding takes at most about
seven lines: its place, a message cut after the last sentence that fits four lines, and two of its fix; --json keeps
every message whole and every item a message summarises.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from collections.abc import Iterator
from itertools import groupby
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console, RenderableType
from rich.padding import Padding
from rich.text import Text

from vllm_scaffold.doctor.report.findings import Finding, Report, Severity

if TYPE_CHECKING:
    from vllm_scaffold.doctor.runner import EnvironmentReport

FORMATS = ("table", "json", "github")
_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
# A code with more findings than this shows the first in full and PLACES_SHOWN places of the others.
GROUP_IN_FULL = 3
PLACES_SHOWN = 5
_ANNOTATION = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def as_json(report: Report | EnvironmentReport) -> str:
    return json.dumps(report.as_json(), indent=2)


def releases_as_json(reports: list[Report]) -> str:
    """`doctor --vllm`: one report per release, in the order asked for, then the inventory they share (how
    the plugin's coupling surface changed between them) when there is one."""
    releases = [report.as_json() for report in reports]
    shared = [release.pop("inventory") for release in releases if "inventory" in release]
    data = {"releases": releases} | ({"inventory": shared[0]} if shared else {})
    return json.dumps(data, indent=2)


def counts(report: Report) -> str:
    """'2 errors, 1 warning, 0 infos' plus how many findings the project suppressed."""
    numbers = {s: sum(f.severity is s for f in report.active) for s in Severity}
    parts = [f"{n} {s.value}{'s' if n != 1 else ''}" for s, n in numbers.items()]
    if report.suppressed:
        parts.append(f"{len(report.suppressed)} suppressed (listed in --json)")
    return ", ".join(parts)


def _groups(findings: list[Finding]) -> Iterator[tuple[str, list[Finding]]]:
    ordered = sorted(findings, key=lambda f: (f.severity.rank, f.code))
    for code, members in groupby(ordered, key=lambda f: f.code):
        yield code, list(members)


def _detail(finding: Finding, width: int) -> list[RenderableType]:
    return [
        Padding(Text(finding.where, overflow="fold"), (0, 0, 0, 2), expand=False),
        Padding(Text(bounded(finding.message, width - 4), overflow="fold"), (0, 0, 0, 4), expand=False),
        Padding(
            Text(bounded(f"fix: {finding.fix}", width - 4, FIX_LINES), overflow="fold"), (0, 0, 0, 4), expand=False
        ),
    ]


# A finding's message takes at most this many lines of the text report, its fix at most FIX_LINES; the whole
# of both is in --json.
MESSAGE_LINES = 4
FIX_LINES = 2
_CUT_MARK = " [...] (all of it in --json)"


def bounded(text: str, width: int, lines: int = MESSAGE_LINES) -> str:
    """`text` as it fits `lines` lines of `width` columns: cut after its last whole sentence or clause that fits
    (or else its last whole word: never inside a name), marked as cut."""
    width = max(width, 20)

    def fits(candidate: str) -> bool:
        return len(textwrap.wrap(candidate, width)) <= lines

    if fits(text):
        return text
    for boundary in (r"[.:;](?=\s)", r"\s"):
        for cut in sorted(
            (m.end() if boundary != r"\s" else m.start() for m in re.finditer(boundary, text)), reverse=True
        ):
            candidate = text[:cut].rstrip() + _CUT_MARK
            if fits(candidate):
                return candidate
    return text[: width * lines - len(_CUT_MARK) - 8] + _CUT_MARK


def _what_was_read(report: Report) -> str:
    if isinstance(count := report.read.get("distributions"), int):
        return f"read {count} installed distribution{'s' if count != 1 else ''} with vLLM entry points"
    modules, entry_points = report.read.get("modules", 0), report.read.get("vllm_entry_points", 0)
    return (
        f"read {modules} module{'s' if modules != 1 else ''} and "
        f"{entry_points} vLLM entry point{'s' if entry_points != 1 else ''}"
    )


def renderables(report: Report, width: int = 100) -> Iterator[RenderableType]:
    timing = ", ".join(f"{name} {seconds:.1f}s" for name, seconds in report.timings.items())
    yield Text(
        f"{report.package} against {report.vllm}: {_what_was_read(report)} (live probe: {report.live}; {timing})",
        overflow="fold",
    )
    if not report.active:
        yield Text("no findings", style="green")
    for code, members in _groups(report.active):
        severity = members[0].severity
        heading = Text.assemble("\n", (severity.value, _STYLE[severity]), "  ", (code, "bold"))
        if len(members) > GROUP_IN_FULL:
            heading.append(f"  ({len(members)} findings: the first in full, all of them in --json)")
        yield heading
        yield from _detail(members[0], width)
        rest = members[1:]
        if len(members) <= GROUP_IN_FULL:
            for member in rest:
                yield from _detail(member, width)
            continue
        places = ", ".join(f.where for f in rest[:PLACES_SHOWN])
        more = f", and {len(rest) - PLACES_SHOWN} more" if len(rest) > PLACES_SHOWN else ""
        yield Padding(Text(f"also at {places}{more}", overflow="fold"), (0, 0, 0, 2), expand=False)
    if report.findings:
        yield Text(f"\n{counts(report)}")


# Spaces at a line's end (before any closing style codes): rich pads an indented block to its widest line.
_TRAILING = re.compile(r" +((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)


def print_table(report: Report, console: Console) -> None:
    """The text report on `console` (the command line passes the terminal's: doctor itself never imports it),
    without the spaces rich pads indented blocks with."""
    with console.capture() as captured:
        for renderable in renderables(report, console.width):
            console.print(renderable, soft_wrap=False)
    console.file.write(_TRAILING.sub(r"\1", captured.get()))


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(report: Report, base: Path) -> str:
    """One workflow command per active finding (`::error file=...,line=...,title=CODE::message`), files given
    relative to the working directory (the repository root in a workflow), then the counts as a plain line."""
    lines = []
    for finding in sorted(report.active, key=lambda f: (f.severity.rank, f.code, f.where)):
        properties = []
        file, line = finding.place.file, finding.place.line
        if file is not None:
            properties.append(f"file={_escape_property(os.path.normpath(base / file).replace(os.sep, '/'))}")
            if line is not None:
                properties.append(f"line={line}")
        properties.append(f"title={_escape_property(finding.code)}")
        place = "" if line is not None else f"{finding.where}: "
        message = f"{place}{finding.message}. Fix: {finding.fix}"
        lines.append(f"::{_ANNOTATION[finding.severity]} {','.join(properties)}::{_escape_data(message)}")
    lines.append(f"vllm-scaffold doctor: {report.package} against {report.vllm}: {counts(report)}")
    return "\n".join(lines)
