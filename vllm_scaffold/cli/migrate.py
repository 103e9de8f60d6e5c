"""`vllm-scaffold migrate`: a plugin's code rewritten for the names vLLM moved or renamed up to a release."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vllm_scaffold.cli.options import DryRun, reporting, write_or_show


def command(
    vllm: Annotated[str, typer.Option("--vllm", help="The vLLM release to move the package to.")],
    project: Annotated[Path, typer.Option("--project", help="The plugin package to rewrite.")] = Path(),
    dry_run: DryRun = False,
) -> None:
    """Rewrite a package for names vLLM moved.

    Imports of names vLLM moved, and keywords it renamed, between the release the package's code was
    written for (the newest verified one in its [tool.vllm-scaffold] vllm range that has every vLLM name
    the code imports) and --vllm VERSION.

    Each rewrite is listed with what and why; what is left (doctor --vllm VERSION on the rewritten code) is
    listed with doctor's codes, and the exit code is 1 when an error is left.
    """
    with reporting():
        from vllm_scaffold.generate.migrate import plan_migration
        from vllm_scaffold.terminal import console

        migration = plan_migration(project, vllm)
        console.line(f"from vLLM {migration.source} to {migration.target} ({migration.source}: {migration.why})")
        console.lines([rewrite.line() for rewrite in migration.rewrites] or ["nothing to rewrite"])
        console.lines(migration.left)
        write_or_show(migration, dry_run)
    if migration.errors:
        raise typer.Exit(1)
