"""`vllm-scaffold add SEAM NAME`: one more component in an existing plugin package."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vllm_scaffold.cli._options import Data, Defaults, DryRun, asked, on_terminal, parse_data, reporting, seam_and_name


def command(
    seam: Annotated[str | None, asked("Seam key, e.g. logits-processor ('vllm-scaffold list')")] = None,
    name: Annotated[str | None, asked("Name of the new component, e.g. target_token")] = None,
    project: Annotated[Path, typer.Option("--project", help="The project to add to (has pyproject.toml).")] = Path(),
    defaults: Defaults = False,
    data: Data = None,
    dry_run: DryRun = False,
) -> None:
    """Add a SEAM component NAME to an existing package: modules, tests, entry points, manifest."""
    with reporting():
        interactive = not defaults and on_terminal()
        seam, name = seam_and_name("add", seam, name, project, interactive=interactive)
        from vllm_scaffold import console
        from vllm_scaffold.scaffold import add_to_project

        result = add_to_project(seam, name, project, parse_data(data), interactive=interactive, dry_run=dry_run)
        console.lines(result.lines)
        if dry_run:
            console.line("dry run: nothing was written")
