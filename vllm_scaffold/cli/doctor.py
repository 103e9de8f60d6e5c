"""`vllm-scaffold doctor`: the silent failure modes of a vLLM plugin package, found before vLLM finds them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def command(
    target: Annotated[
        str,
        typer.Argument(
            help="The plugin: its directory (pyproject.toml, setup.py or setup.cfg), a wheel or sdist file, or "
            "the name of an installed distribution.",
            show_default=False,
        ),
    ] = ".",
    installed: Annotated[
        bool,
        typer.Option(
            "--installed", help="Check every installed distribution with vLLM entry points, and how they clash."
        ),
    ] = False,
    output: Annotated[
        str,
        typer.Option(
            "--format",
            metavar="table|json|github",
            help="table: grouped text; json: every finding; github: workflow annotations for GitHub Actions.",
        ),
    ] = "table",
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as JSON (--format json).")] = False,
    live: Annotated[
        bool | None,
        typer.Option(
            "--live/--no-live",
            help="Load the plugin in a subprocess and observe what it registers (default: when vLLM is installed).",
            show_default=False,
        ),
    ] = None,
    plugins: Annotated[
        str | None,
        typer.Option("--plugins", metavar="VALUE", help="Check this VLLM_PLUGINS value instead of the environment's."),
    ] = None,
    executor: Annotated[
        str | None,
        typer.Option(
            "--executor",
            metavar="ray",
            help="Also run the plugin under this distributed executor: 'ray' starts a tensor-parallel engine on a "
            "tiny model on the Ray cluster at RAY_ADDRESS (or a local one) and reports workers without the plugin.",
        ),
    ] = None,
    releases: Annotated[
        list[str] | None,
        typer.Option(
            "--vllm",
            metavar="VERSION",
            help="Check the plugin's use of vLLM against this release instead of the installed vLLM (repeatable; "
            "a version, a wheel file or a source directory; no vLLM needs to be installed).",
        ),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            metavar="FILE",
            help="Fail only on findings FILE does not hold; when FILE does not exist, record today's findings in it.",
        ),
    ] = None,
) -> None:
    """Check a plugin package against the installed vLLM. Exits 1 when there is an error."""
    from vllm_scaffold.cli.options import reporting
    from vllm_scaffold.errors import ScaffoldError

    options: dict[str, str | None] = {} if plugins is None else {"vllm_plugins": plugins}
    with reporting():
        if executor is not None:
            from vllm_scaffold.doctor.live.probe_ray import EXECUTORS

            if executor not in EXECUTORS:
                raise ScaffoldError(f"unknown --executor '{executor}'", "use --executor ray")
            if live is False or installed or releases:
                raise ScaffoldError(
                    "--executor runs the plugin in a live engine of one package against the installed vLLM",
                    "drop --no-live, --installed and --vllm",
                )
        if as_json and output not in {"table", "json"}:
            raise ScaffoldError(f"--json and --format {output} ask for two formats", "pass one of them")
        output = "json" if as_json else output
        if output not in {"table", "json", "github"}:
            raise ScaffoldError(f"unknown --format '{output}'", "use --format table, json or github")
        if installed and target != ".":
            raise ScaffoldError(f"--installed checks the whole environment, not '{target}'", "drop one of them")
        from vllm_scaffold.doctor.report import render

        if releases:
            from vllm_scaffold.doctor.runner import diagnose_releases

            if installed:
                raise ScaffoldError(
                    "--vllm checks one package against releases, not the environment", "drop --installed"
                )
            reports = diagnose_releases(Path(target), releases)
        else:
            from vllm_scaffold.doctor.runner import diagnose, diagnose_installed

            if installed:
                result = diagnose_installed(live=live, **options)
                reports = [result.environment, *result.packages]
            else:
                result = diagnose(target, live=live, executor=executor, **options)
                reports = [result]
        if baseline is not None:
            from vllm_scaffold.doctor.report.baseline import use

            typer.echo(use(reports, baseline), err=True)
    if output == "json" and releases:
        typer.echo(render.releases_as_json(reports))
    elif output == "json":
        typer.echo(render.as_json(result))
    elif output == "github":
        base = _relative_to_cwd(Path(target)) if Path(target).is_dir() else Path(".")
        typer.echo("\n".join(render.github_annotations(report, base) for report in reports))
    else:
        for report in reports:
            render.print_table(report)
    raise typer.Exit(1 if any(report.has_error for report in reports) else 0)


def _relative_to_cwd(path: Path) -> Path:
    """Where the package lies from the working directory: annotations name files from the repository root."""
    import os

    return Path(os.path.relpath(path.absolute(), Path.cwd()))
