"""The `vllm-scaffold` command line: a thin typer app, one module per command.

Command modules import only typer and the standard library at module level, so `--help` stays fast;
copier, jinja2 and tomlkit load inside the commands that need them. `vllm-scaffold` alone on a terminal
prints the help and offers to start (`start.py`); without a terminal it prints the help only.
"""

from __future__ import annotations

import sys

import typer

from vllm_scaffold.cli import add, doctor, explain, listing, new
from vllm_scaffold.cli._options import on_terminal

app = typer.Typer(
    name="vllm-scaffold",
    help="Generate out-of-tree vLLM plugin packages for every extension seam.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.command("new")(new.command)
app.command("add")(add.command)
app.command("list")(listing.command)
app.command("explain")(explain.command)
app.command("doctor")(doctor.command)


def main() -> None:
    if len(sys.argv) == 1 and on_terminal():
        from vllm_scaffold.cli.start import guided_start

        guided_start(app)
    else:
        app()
