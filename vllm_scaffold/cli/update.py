"""`vllm-scaffold update`: a generated package brought to the installed templates, your edits kept."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vllm_scaffold.cli.options import DryRun, reporting, write_or_show


def command(
    project: Annotated[Path, typer.Option("--project", help="The package to update (made by 'new').")] = Path(),
    dry_run: DryRun = False,
) -> None:
    """Bring a generated package to the installed templates.

    Re-renders it from its recorded answers and merges three ways with your edits.

    Template changes are applied and your edits kept; where both changed the same lines the file gets
    conflict markers, is listed, and the exit code is 1.
    """
    with reporting():
        from vllm_scaffold.generate.update import plan_update
        from vllm_scaffold.terminal import console

        plan = plan_update(project)
        console.lines(plan.lines or ["up to date: the package matches the installed templates"])
        write_or_show(plan, dry_run)
        if plan.conflicts:
            console.line(f"{len(plan.conflicts)} to resolve by hand: {', '.join(plan.conflicts)}")
    if plan.conflicts:
        raise typer.Exit(1)
