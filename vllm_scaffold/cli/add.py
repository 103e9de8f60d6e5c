"""`vllm-scaffold add SEAM NAME`: one more component in an existing plugin package."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vllm_scaffold.cli.options import Data, Defaults, DryRun, HelpWithDataKeys, asked, scaffold


def command(
    seam: Annotated[str | None, asked("Seam key, e.g. logits-processor ('vllm-scaffold list')", eager=True)] = None,
    name: Annotated[
        str | None, asked("Name of the new component (also its subpackage), e.g. target_token for a logits-processor")
    ] = None,
    project: Annotated[Path, typer.Option("--project", help="The project to add to (has pyproject.toml).")] = Path(),
    defaults: Defaults = False,
    data: Data = None,
    dry_run: DryRun = False,
    _help: HelpWithDataKeys = False,
) -> None:
    """Add a SEAM component NAME to an existing package.

    Writes its modules, tests and doc page, and merges its entry points and manifest entry.
    """
    scaffold("add", seam, name, project, defaults, data, dry_run)
