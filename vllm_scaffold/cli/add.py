"""`vllm-scaffold add SEAM NAME`: one more component in an existing plugin package."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vllm_scaffold.cli._options import Data, Defaults, DryRun, parse_data, reporting


def command(
    seam: Annotated[str, typer.Argument(help="Seam key, e.g. logits-processor ('vllm-scaffold list').")],
    name: Annotated[str, typer.Argument(help="Name of the new component, e.g. target_token.")],
    project: Annotated[Path, typer.Option("--project", help="The project to add to (has pyproject.toml).")] = Path(),
    defaults: Defaults = False,
    data: Data = None,
    dry_run: DryRun = False,
) -> None:
    """Add a SEAM component NAME to an existing package: modules, tests, entry points, manifest."""
    with reporting():
        from vllm_scaffold import console
        from vllm_scaffold.rendering import stdin_is_interactive
        from vllm_scaffold.scaffold import add_to_project

        result = add_to_project(
            seam,
            name,
            project,
            parse_data(data),
            interactive=not defaults and stdin_is_interactive(),
            dry_run=dry_run,
        )
        console.lines(result.lines)
        if dry_run:
            console.line("dry run: nothing was written")
