"""`vllm-scaffold new SEAM NAME`: a new plugin package with one component."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vllm_scaffold.cli._options import Data, Defaults, DryRun, asked, on_terminal, parse_data, reporting, seam_and_name


def command(
    seam: Annotated[str | None, asked("Seam key, e.g. attention-backend ('vllm-scaffold list')")] = None,
    name: Annotated[str | None, asked("Import name of the new package, e.g. my_attn")] = None,
    dest: Annotated[Path | None, typer.Option("--dest", help="Directory to create (default: ./NAME).")] = None,
    defaults: Defaults = False,
    data: Data = None,
    dry_run: DryRun = False,
) -> None:
    """Create a new plugin package NAME with one SEAM component."""
    with reporting():
        interactive = not defaults and on_terminal()
        seam, name = seam_and_name("new", seam, name, dest, interactive=interactive)
        from vllm_scaffold import console
        from vllm_scaffold.scaffold import new_package

        result = new_package(seam, name, dest, parse_data(data), interactive=interactive, dry_run=dry_run)
        console.lines(result.lines)
        if not dry_run:
            next_steps = f"next: cd {result.root}; install vLLM (README.md), then: pip install -e '.[test]' && pytest"
            console.lines([next_steps])
