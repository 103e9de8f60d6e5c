"""`vllm-scaffold list`: the seam catalog as a table or JSON; with --all, every registry of vLLM by status too."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from vllm_scaffold.catalog import Seam

HEADERS = ("key", "group / API", "processes", "load timing", "duplicates", "kernel", "template")


def command(
    as_json: Annotated[bool, typer.Option("--json", help="Print the catalog as JSON.")] = False,
    every_registry: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Also list every registry of vLLM by status: templated, explained, internal "
            "(with --json: an object with 'seams' and 'registries').",
        ),
    ] = False,
) -> None:
    """List every vLLM extension seam.

    For each: how it registers, the processes that load it, when, and what a duplicate does.
    """
    from vllm_scaffold.catalog import load_catalog

    seams = list(load_catalog().values())
    if as_json:
        import json

        entries = [seam.as_json() for seam in seams]
        typer.echo(
            json.dumps({"seams": entries, "registries": _registries_json()} if every_registry else entries, indent=2)
        )
        return
    _print_seams(seams)
    if every_registry:
        _print_registries()


def _print_seams(seams: list[Seam]) -> None:
    from vllm_scaffold import vllm_facts
    from vllm_scaffold.terminal import console

    # The template column only while some seam has none: "yes" on every row says nothing.
    headers = HEADERS if not all(seam.has_template for seam in seams) else HEADERS[:-1]
    rows = [
        (
            seam.key,
            seam.group or seam.api,
            seam.process_family,
            seam.load_timing,
            seam.duplicate_policy,
            "yes" if seam.kernel else "no",
            "yes" if seam.has_template else "not yet",
        )[: len(headers)]
        for seam in seams
    ]
    title = f"vLLM {vllm_facts.default_version().rpartition('.')[0]} extension seams"
    if len(headers) < len(HEADERS):
        title += " (each has a template: vllm-scaffold new SEAM NAME)"
    if console.out().width >= _narrowest_table(headers, rows):
        _print_table(title, headers, rows)
        return
    # Too narrow for a table whose cells keep their words whole: one short block per seam instead, with what
    # tells the seams apart; load timing and duplicates (paragraphs each) are left to `explain`.
    console.paragraphs([title, ""])
    brief = {"group / API", "processes", "kernel", "template"}
    for key, *values in rows:
        items = [f"  - {h}: {v}" for h, v in zip(headers[1:], values, strict=True) if h in brief]
        console.paragraphs([key, *items])
    console.paragraphs(["", "Load timing, duplicates and pitfalls of one seam: vllm-scaffold explain SEAM."])


# What each status means to a user, as the heading of its group in `list --all`.
_STATUS_HEADINGS = {
    "templated": "Templated: a seam generates a component for it ('vllm-scaffold new SEAM NAME')",
    "explained": "Explained: no template yet; 'vllm-scaffold explain KEY' gives the call, selection and pitfalls",
    "internal": "Internal: vLLM's own; 'vllm-scaffold explain KEY' says why a plugin should not use it",
}


def _registries_json() -> list[dict[str, object]]:
    from vllm_scaffold.catalog import load_registries

    return [registry.as_json() for registry in load_registries().values()]


def _short(symbol: str) -> str:
    """`Class.method` for a method, the bare name for a module-level function."""
    owner, _, name = symbol.rpartition(".")
    head = owner.rpartition(".")[2]
    return f"{head}.{name}" if head[:1].isupper() else name


def _print_registries() -> None:
    """Every registry of the verified vLLM releases, grouped by status, one item each."""
    from vllm_scaffold import vllm_facts
    from vllm_scaffold.catalog import load_registries
    from vllm_scaffold.terminal import console

    versions = vllm_facts.checked_versions()
    registries = list(load_registries().values())
    text = ["", f"Every registry of vLLM {versions[0]} to {versions[-1]} ({len(registries)}), by status", ""]
    for status, heading in _STATUS_HEADINGS.items():
        group = [r for r in registries if r.status == status]
        text += [f"{heading} ({len(group)}):"]
        for registry in group:
            via = registry.group or ", ".join(dict.fromkeys(_short(symbol) for symbol in registry.registration))
            seam = f" -> seam {registry.seam}" if registry.seam and registry.seam != registry.key else ""
            text.append(f"  - {registry.key}{seam}: {registry.summary} [{via}]")
        text.append("")
    console.paragraphs(text)


def _narrowest_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> int:
    """The width a bordered table needs so that no column is narrower than its longest word."""
    columns = zip(headers, *rows, strict=True)
    longest_words = [max(len(word) for cell in column for word in cell.split()) for column in columns]
    return sum(longest_words) + 3 * len(headers) + 1


def _print_table(title: str, headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    from rich.table import Table

    from vllm_scaffold.terminal import console

    table = Table(title=title, show_lines=True)
    for header in headers:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*row)
    console.out().print(table)
