"""Printing a Report: a rich table for people, JSON for CI."""

from __future__ import annotations

import json

from vllm_scaffold.doctor.findings import Report, Severity

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def as_json(report: Report) -> str:
    return json.dumps(report.as_json(), indent=2)


def print_table(report: Report) -> None:
    from rich.markup import escape
    from rich.table import Table

    from vllm_scaffold import console

    out = console.out()
    timing = ", ".join(f"{name} {seconds:.1f}s" for name, seconds in report.timings.items())
    heading = f"{report.package} against {report.vllm} (live probe: {report.live}; {timing})"
    if not report.findings:
        out.print(f"{escape(heading)}\n[green]no findings[/]")
        return
    table = Table(title=escape(heading), show_lines=True)
    for header in ("severity", "code", "where", "what is wrong", "fix"):
        table.add_column(header, overflow="fold")
    for finding in report.findings:
        table.add_row(
            f"[{_STYLE[finding.severity]}]{finding.severity.value}[/]",
            finding.code,
            escape(finding.where),
            escape(finding.message),
            escape(finding.fix),
        )
    out.print(table)
    counts = {s: sum(f.severity is s for f in report.findings) for s in Severity}
    out.print(", ".join(f"{n} {s.value}{'s' if n != 1 else ''}" for s, n in counts.items()))
