"""`vllm-scaffold triage PATH`: a vLLM fork's changes, each routed to a component, a patch or the fork."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def command(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="PATH", help="The fork's source tree: a checkout, or any folder holding vllm/.", show_default=False
        ),
    ],
    base: Annotated[
        str | None,
        typer.Option(
            "--base",
            metavar="VERSION",
            help="The release the fork branched from (a version, a wheel or a source directory, or 'auto': the "
            "nearest release, found by comparing files; default: the version the fork declares in vllm/_version.py).",
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="GITREF",
            help="Compare a git checkout with its fork point (git merge-base HEAD GITREF, e.g. upstream/main), so "
            "upstream's own changes are not counted as the fork's; with --base, also count them.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print every changed symbol and the plan as JSON.")] = False,
) -> None:
    """Route a vLLM fork's changes to seams, patches or the fork.

    Compares the fork with its base release, symbol by symbol, and names what carries each change.
    """
    from vllm_scaffold.cli.options import reporting

    with reporting():
        from vllm_scaffold.route.triage import triage

        result = triage(path, base, since)
    if as_json:
        import json

        typer.echo(json.dumps(result.as_json(), indent=2))
        return
    from vllm_scaffold.terminal import console

    console.lines(result.describe())
