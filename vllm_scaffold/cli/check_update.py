"""`vllm-scaffold check-update`: for CI, whether the installed tool's templates would change the package."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vllm_scaffold.cli.options import reporting

# generate/check_update.py's UPDATE_AVAILABLE and UNRESOLVED, repeated so `--help` needs no import of the
# generator.
UPDATE_AVAILABLE = 3
UNRESOLVED = 1


def command(
    project: Annotated[Path, typer.Option("--project", help="The package to check (made by 'new').")] = Path(),
) -> None:
    """Say whether an update would change the package.

    Writes nothing.

    Exit codes: 0 when the package matches the installed templates, 3 when an update is available (the
    changed templates and the files the update would change are listed), 1 when none is but files still
    hold the conflict markers of an earlier update (listed), 2 on bad input.
    """
    with reporting():
        from vllm_scaffold.generate.check_update import check_update
        from vllm_scaffold.terminal import console

        result = check_update(project)
        console.lines(result.lines())
    if result.available:
        raise typer.Exit(UPDATE_AVAILABLE)
    if result.unresolved:
        raise typer.Exit(UNRESOLVED)
