"""`vllm-scaffold doctor`: the silent failure modes of a vLLM plugin package, found before vLLM finds them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from vllm_scaffold.doctor.report.findings import Report
    from vllm_scaffold.doctor.runner import EnvironmentReport


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
    as_json: Annotated[bool, typer.Option("--json", help="The same as --format json (scripts use it).")] = False,
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
    record_baseline: Annotated[
        bool,
        typer.Option(
            "--record-baseline",
            help="Add this run's findings that the --baseline FILE does not hold to it (another release's, say).",
        ),
    ] = False,
) -> None:
    """Check a plugin package against the installed vLLM. Exits 1 when there is an error."""
    from vllm_scaffold.cli.options import reporting

    with reporting():
        request = Request.of(
            target, installed, output, as_json, live, plugins, executor, releases or [], baseline, record_baseline
        )
        reports, whole = request.run()
    request.show(reports, whole)
    raise typer.Exit(1 if any(report.has_error for report in reports) else 0)


@dataclass(frozen=True)
class Request:
    """What one doctor command asks for, its flags checked together: each combination that cannot be run is
    refused here with its fix, before anything is read."""

    target: str
    installed: bool
    output: str  # "table", "json" or "github"
    live: bool | None
    plugins: str | None
    executor: str | None
    releases: tuple[str, ...]
    baseline: Path | None = None  # findings it holds are suppressed; recorded into it when it does not exist
    record_baseline: bool = False  # add the run's findings the baseline does not hold to it

    @classmethod
    def of(
        cls,
        target: str,
        installed: bool,
        output: str,
        as_json: bool,
        live: bool | None,
        plugins: str | None,
        executor: str | None,
        releases: list[str],
        baseline: Path | None = None,
        record_baseline: bool = False,
    ) -> Request:
        from vllm_scaffold.doctor.report.render import FORMATS
        from vllm_scaffold.errors import ScaffoldError

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
        if output not in FORMATS:
            raise ScaffoldError(f"unknown --format '{output}'", "use --format table, json or github")
        if installed and target != ".":
            raise ScaffoldError(f"--installed checks the whole environment, not '{target}'", "drop one of them")
        if installed and releases:
            raise ScaffoldError("--vllm checks one package against releases, not the environment", "drop --installed")
        if record_baseline and baseline is None:
            raise ScaffoldError("--record-baseline records into the --baseline FILE", "pass --baseline FILE too")
        return cls(target, installed, output, live, plugins, executor, tuple(releases), baseline, record_baseline)

    def run(self) -> tuple[list[Report], Report | EnvironmentReport | None]:
        """The reports, in the order shown, and the one object `--format json` prints (None for `--vllm`);
        with a baseline, what it holds is suppressed (and said on stderr)."""
        reports, whole = self._diagnose()
        if self.baseline is not None:
            from vllm_scaffold.doctor.report.baseline import use

            typer.echo(use(reports, self.baseline, record=self.record_baseline), err=True)
        return reports, whole

    def _diagnose(self) -> tuple[list[Report], Report | EnvironmentReport | None]:
        from vllm_scaffold.doctor import runner

        options: dict[str, str | None] = {} if self.plugins is None else {"vllm_plugins": self.plugins}
        inventory = self.output == "json"  # the coupling surface is part of the JSON report only
        if self.releases:
            return runner.diagnose_releases(Path(self.target), list(self.releases), inventory=inventory), None
        if self.installed:
            environment = runner.diagnose_installed(live=self.live, **options)
            return [environment.environment, *environment.packages], environment
        report = runner.diagnose(self.target, live=self.live, executor=self.executor, inventory=inventory, **options)
        return [report], report

    def show(self, reports: list[Report], whole: Report | EnvironmentReport | None) -> None:
        from vllm_scaffold.doctor.report import render
        from vllm_scaffold.terminal import console

        if self.output == "json":
            typer.echo(render.as_json(whole) if whole is not None else render.releases_as_json(reports))
        elif self.output == "github":
            base = _relative_to_cwd(Path(self.target)) if Path(self.target).is_dir() else Path(".")
            typer.echo("\n".join(render.github_annotations(report, base) for report in reports))
        else:
            for report in reports:
                render.print_table(report, console.out())


def _relative_to_cwd(path: Path) -> Path:
    """Where the package lies from the working directory: annotations name files from the repository root."""
    import os

    return Path(os.path.relpath(path.absolute(), Path.cwd()))
