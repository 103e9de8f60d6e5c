"""`vllm-scaffold` alone on a terminal: the usual help, then an offer to create a package or add to one."""

from __future__ import annotations

import sys
from pathlib import Path

import typer


def guided_start(app: typer.Typer) -> None:
    import click

    command = typer.main.get_command(app)
    with click.Context(command, info_name="vllm-scaffold") as context:
        typer.echo(command.get_help(context))
    typer.echo()

    from vllm_scaffold.errors import Interrupted
    from vllm_scaffold.terminal import console
    from vllm_scaffold.terminal.prompts import choose

    choices = [("new", "Create a new plugin package (vllm-scaffold new)")]
    if Path("pyproject.toml").is_file():
        choices.append(("add", "Add a component to the package in this directory (vllm-scaffold add)"))
    choices.append(("", "Nothing for now"))
    try:
        chosen = choose("Start now?", choices)
    except Interrupted as interrupted:
        console.error(str(interrupted))
        sys.exit(interrupted.exit_code)
    if chosen:
        app([chosen])
