"""The `vllm-scaffold` command line: a thin typer app, one module per command.

Command modules import only typer and the standard library at module level, so `--help` stays fast;
copier, jinja2 and tomlkit load inside the commands that need them.
"""

from __future__ import annotations

import typer

from vllm_scaffold.cli import add, doctor, explain, listing, new

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
    app()
