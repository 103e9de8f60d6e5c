"""`vllm-scaffold list`: the seam catalog as a table or JSON."""

from __future__ import annotations

from typing import Annotated

import typer

HEADERS = ("key", "group / API", "processes", "load timing", "duplicates", "kernel", "template")


def command(
    as_json: Annotated[bool, typer.Option("--json", help="Print the catalog as JSON.")] = False,
) -> None:
    """List every vLLM extension seam: registration, processes, timing, duplicates."""
    from vllm_scaffold.catalog import load_catalog

    seams = list(load_catalog().values())
    if as_json:
        import json

        typer.echo(json.dumps([seam.as_json() for seam in seams], indent=2))
        return
    from vllm_scaffold.terminal import console

    rows = [
        (
            seam.key,
            seam.group or seam.api,
            seam.process_family,
            seam.load_timing,
            seam.duplicate_policy,
            "yes" if seam.kernel else "no",
            "yes" if seam.has_template else "not yet",
        )
        for seam in seams
    ]
    title = "vLLM 0.32 extension seams"
    if console.out().width >= _narrowest_table(rows):
        _print_table(title, rows)
        return
    # Too narrow for a table whose cells keep their words whole: one block per seam instead.
    console.paragraphs([title, ""])
    for key, *values in rows:
        items = [f"  - {header}: {value}" for header, value in zip(HEADERS[1:], values, strict=True)]
        console.paragraphs([key, *items, ""])


def _narrowest_table(rows: list[tuple[str, ...]]) -> int:
    """The width a bordered table needs so that no column is narrower than its longest word."""
    columns = zip(HEADERS, *rows, strict=True)
    longest_words = [max(len(word) for cell in column for word in cell.split()) for column in columns]
    return sum(longest_words) + 3 * len(HEADERS) + 1


def _print_table(title: str, rows: list[tuple[str, ...]]) -> None:
    from rich.table import Table

    from vllm_scaffold.terminal import console

    table = Table(title=title, show_lines=True)
    for header in HEADERS:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*row)
    console.out().print(table)
