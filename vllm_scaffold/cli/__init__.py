"""The `vllm-scaffold` command line: a thin typer app, one module per command.

Command modules import only typer and the standard library at module level, so `--help` stays fast;
copier, jinja2 and tomlkit load inside the commands that need them. `vllm-scaffold` alone on a terminal
prints the help and offers to start (`start.py`); without a terminal it prints the help only.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from vllm_scaffold.cli import add, check_update, doctor, explain, find, listing, migrate, new, triage, update
from vllm_scaffold.cli.options import OWN_HELP, on_terminal

app = typer.Typer(
    name="vllm-scaffold",
    help="Generate out-of-tree vLLM plugin packages for every extension seam.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    # click caps help at 80 columns unless told otherwise; the terminal's width (or COLUMNS) decides instead.
    context_settings={"max_content_width": 10_000},
)


def _print_version(value: bool) -> None:
    if value:
        from vllm_scaffold import __version__

        typer.echo(f"vllm-scaffold {__version__}")
        raise typer.Exit()


@app.callback()
def options(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Generate out-of-tree vLLM plugin packages for every extension seam."""


app.command("new", context_settings=OWN_HELP)(new.command)
app.command("add", context_settings=OWN_HELP)(add.command)
app.command("list")(listing.command)
app.command("explain")(explain.command)
app.command("doctor")(doctor.command)
app.command("update")(update.command)
app.command("check-update")(check_update.command)
app.command("migrate")(migrate.command)
app.command("triage")(triage.command)
app.command("find")(find.command)


def main() -> None:
    """The `vllm-scaffold` command: one command per process."""
    from vllm_scaffold.doctor.reading.collector import short_lived_process

    short_lived_process()
    if len(sys.argv) == 1 and on_terminal():
        from vllm_scaffold.cli.start import guided_start

        guided_start(app)
    else:
        app()
