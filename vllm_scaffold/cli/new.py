"""`vllm-scaffold new SEAM NAME`: a new plugin package with one component."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vllm_scaffold.cli.options import Data, Defaults, DryRun, HelpWithDataKeys, asked, scaffold


def command(
    seam: Annotated[str | None, asked("Seam key, e.g. attention-backend ('vllm-scaffold list')", eager=True)] = None,
    name: Annotated[str | None, asked("Import name of the new package, e.g. my_attn")] = None,
    dest: Annotated[Path | None, typer.Option("--dest", help="Directory to create (default: ./NAME).")] = None,
    defaults: Defaults = False,
    data: Data = None,
    dry_run: DryRun = False,
    _help: HelpWithDataKeys = False,
) -> None:
    """Create a new plugin package NAME with one SEAM component."""
    scaffold("new", seam, name, dest, defaults, data, dry_run)
