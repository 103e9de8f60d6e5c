"""`vllm-scaffold doctor`: the silent failure modes of a vLLM plugin package, found before vLLM finds them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def command(
    path: Annotated[Path, typer.Argument(help="The plugin package (the directory holding pyproject.toml).")] = Path(
        "."
    ),
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as JSON.")] = False,
    live: Annotated[
        bool | None,
        typer.Option(
            "--live/--no-live",
            help="Load the plugin in a subprocess and observe what it registers (default: when vLLM is installed).",
            show_default=False,
        ),
    ] = None,
    plugins: Annotated[
        str | None,
        typer.Option("--plugins", metavar="VALUE", help="Check this VLLM_PLUGINS value instead of the environment's."),
    ] = None,
) -> None:
    """Check a plugin package against the installed vLLM. Exits 1 when there is an error."""
    from vllm_scaffold.cli._options import reporting
    from vllm_scaffold.doctor import render
    from vllm_scaffold.doctor.runner import diagnose

    with reporting():
        report = diagnose(path, live=live, **({} if plugins is None else {"vllm_plugins": plugins}))
    if as_json:
        typer.echo(render.as_json(report))
    else:
        render.print_table(report)
    raise typer.Exit(1 if report.has_error else 0)
