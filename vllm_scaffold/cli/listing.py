"""`vllm-scaffold list`: the seam catalog as a table or JSON."""

from __future__ import annotations

from typing import Annotated

import typer

HEADERS = ("key", "group / API", "processes", "load timing", "duplicates", "kernel", "template")


def command(
    as_json: Annotated[bool, typer.Option("--json", help="Print the catalog as JSON.")] = False,
) -> None:
    """List every vLLM extension seam.

    For each: how it registers, the processes that load it, when, and what a duplicate does.
    """
    from vllm_scaffold.catalog import load_catalog

    seams = list(load_catalog().values())
    if as_json:
        import json

        typer.echo(json.dumps([seam.as_json() for seam in seams], indent=2))
        return
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
    title = "vLLM 0.32 extension seams"
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
