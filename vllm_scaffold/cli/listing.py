"""`vllm-scaffold list`: the seam catalog as a table or JSON."""

from __future__ import annotations

from typing import Annotated

import typer


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
    from rich.table import Table

    from vllm_scaffold import console

    table = Table(title="vLLM 0.32 extension seams", show_lines=True)
    table.add_column("key", no_wrap=True)
    for header in ("group / API", "processes", "load timing", "duplicates", "kernel", "template"):
        table.add_column(header, overflow="fold")
    for seam in seams:
        table.add_row(
            seam.key,
            seam.group or seam.api,
            seam.process_family,
            seam.load_timing,
            seam.duplicate_policy,
            "yes" if seam.kernel else "",
            "yes" if seam.has_template else "not yet",
        )
    console.out().print(table)
