"""`vllm-scaffold new SEAM NAME`: a new plugin package with one component."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vllm_scaffold.cli._options import Data, Defaults, DryRun, parse_data, reporting


def command(
    seam: Annotated[str, typer.Argument(help="Seam key, e.g. attention-backend ('vllm-scaffold list').")],
    name: Annotated[str, typer.Argument(help="Import name of the new package, e.g. my_attn.")],
    dest: Annotated[Path | None, typer.Option("--dest", help="Directory to create (default: ./NAME).")] = None,
    defaults: Defaults = False,
    data: Data = None,
    dry_run: DryRun = False,
) -> None:
    """Create a new plugin package NAME with one SEAM component."""
    with reporting():
        from vllm_scaffold import console
        from vllm_scaffold.rendering import stdin_is_interactive
        from vllm_scaffold.scaffold import new_package

        result = new_package(
            seam,
            name,
            dest,
            parse_data(data),
            interactive=not defaults and stdin_is_interactive(),
            dry_run=dry_run,
        )
        console.lines(result.lines)
        if not dry_run:
            next_steps = f"next: cd {result.root}; install vLLM (README.md), then: pip install -e '.[test]' && pytest"
            console.lines([next_steps])
