"""Scores `doctor --json` runs on published plugins against judgements written by hand, so that the precision
figures of `docs/measurements/doctor-unseen-plugins.md` and `doctor-held-out-plugins.md` can be reproduced from
the runs they were taken from.

`python benchmarks/doctor_unseen.py OUTDIR [--judgements FILE] [--before DIR]` reads `OUTDIR/<owner>+<repo>.json`
(one `doctor DIR --vllm X --json` run per plugin checkout) and the judgement document, and prints, per plugin,
how many errors and warnings are true, false and debatable, and the precision (true / (true + false)).

A judgement is one Markdown list line of a section whose title begins "Every false" or "Every debatable"
("## Every false finding ...", "### Every false warning ...", "### Every debatable warning ..."):

    - `owner/repo` `path/in/repo.py:12,30` error `code` ×2: why

It judges the findings of that plugin, file, line and code that doctor now reports with the severity the line
names: an error judged false that doctor now reports as a warning naming the unproven link is a new statement,
judged by the warning sections (a warning is true when what it says holds, the unproven link included). A section
whose title begins "Judgements revised" holds lines `- true: ...`, `- false: ...` or `- debatable: ...` in the
same format, which replace earlier judgements of the same findings; so does a section whose title begins
"Judged" (a set judged finding by finding, its "###" sections one plugin each). A section whose title begins
"Warnings" and ends "judged" is a whole new round of warning judgements: the warnings judged before it are
forgotten, and those it does not list are true. Every finding no line judges counts as true; with `--before
DIR` (the run the judgements were made on), those the judged run did not report are counted apart as unjudged.
Nothing is downloaded: only the files named on the command line are read.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "measurements" / "doctor-unseen-plugins.md"
_LINE = re.compile(
    r"^- (?:(?P<verdict>true|false|debatable): )?`(?P<repo>[^`]+/[^`]+)` `(?P<path>[^`:]+):(?P<lines>[\d,]+)`"
    r" (?P<severity>error|warning) `(?P<code>[\w-]+)`"
)
_VERDICTS = ("true", "false", "debatable")

Key = tuple[str, str, int, str, str]  # plugin, path, line, code, severity


def _verdict_of(title: str) -> str | None:
    return next((v for v in ("false", "debatable") if title.startswith(f"Every {v}")), None)


def judgements(text: str) -> dict[Key, str]:
    """Every judged finding of the document, by plugin, path, line, code and severity, the later rounds
    winning."""
    found: dict[Key, str] = {}
    outer: str | None = None  # the verdict of the "## " section, which its "### " sections inherit
    section: str | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
            explicit = title.startswith(("Judgements revised", "Judged"))
            outer = section = "revised" if explicit else _verdict_of(title)
            if title.startswith("Warnings") and title.endswith("judged"):
                # A whole round of warnings: what it does not list is true.
                found = {key: verdict for key, verdict in found.items() if key[4] != "warning"}
            continue
        if line.startswith("### "):
            section = _verdict_of(line[4:].strip()) or outer
            continue
        match = _LINE.match(line) if section else None
        if match is None or (section == "revised") != bool(match["verdict"]):
            continue
        verdict = match["verdict"] or section
        for number in match["lines"].split(","):
            found[(match["repo"], match["path"], int(number), match["code"], match["severity"])] = verdict
    return found


def findings(path: Path) -> list[tuple[str, str, int, str]]:
    """(severity, path, line, code) of every finding of one run; none when the run wrote no report."""
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    found = []
    for release in report.get("releases", []):
        for finding in release["findings"]:
            where, _, line = finding["where"].rpartition(":")
            if where and line.isdigit():
                found.append((finding["severity"], where, int(line), finding["code"]))
    return found


def score(outdir: Path, judged: dict[Key, str], before: Path | None) -> dict[str, dict[str, Counter[str]]]:
    """Plugin -> severity -> verdict -> count."""
    table: dict[str, dict[str, Counter[str]]] = {}
    for run in sorted(outdir.glob("*.json")):
        plugin = run.stem.replace("+", "/", 1)
        seen = {(p, n, c) for _, p, n, c in findings(before / run.name)} if before else None
        counts = table.setdefault(plugin, {"error": Counter(), "warning": Counter()})
        for severity, path, line, code in findings(run):
            if severity not in counts:
                continue
            verdict = judged.get((plugin, path, line, code, severity))
            if verdict is None:
                verdict = "unjudged" if seen is not None and (path, line, code) not in seen else "true"
            counts[severity][verdict] += 1
    return table


def precision(counts: Counter[str]) -> str:
    judged = counts["true"] + counts["false"]
    return f"{100 * counts['true'] / judged:.1f} %" if judged else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path, help="directory of <owner>+<repo>.json doctor outputs")
    parser.add_argument("--judgements", type=Path, default=DOC, help="the judgement document (Markdown)")
    parser.add_argument("--before", type=Path, help="the run the judgements were made on, to tell unjudged findings")
    args = parser.parse_args(argv)
    if not args.outdir.is_dir():
        print(
            f"error: {args.outdir} is not a directory; pass the directory of the doctor JSON outputs", file=sys.stderr
        )
        return 2
    table = score(args.outdir, judgements(args.judgements.read_text()), args.before)
    columns = [*_VERDICTS, "unjudged"] if args.before else list(_VERDICTS)
    print(
        "| plugin | errors "
        + "/".join(v[0].upper() for v in columns)
        + " | warnings "
        + "/".join(v[0].upper() for v in columns)
        + " |"
    )
    print("| --- | ---: | ---: |")
    totals = {"error": Counter(), "warning": Counter()}
    for plugin, counts in table.items():
        cells = ["/".join(str(counts[s][v]) for v in columns) for s in ("error", "warning")]
        print(f"| `{plugin}` | {cells[0]} | {cells[1]} |")
        for severity in totals:
            totals[severity].update(counts[severity])
    print()
    for severity, counts in totals.items():
        figures = ", ".join(f"{counts[v]} {v}" for v in columns)
        print(f"{severity}s: {figures}; precision {precision(counts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
