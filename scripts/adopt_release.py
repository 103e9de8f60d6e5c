"""Adopts a published vLLM release into the tool, in one command, and writes what it found to
docs/releases/VERSION.md.

    python scripts/adopt_release.py 0.34.0                 # the wheel from PyPI (pip download --no-deps)
    python scripts/adopt_release.py 0.34.0=path/to/wheel   # a wheel or source tree already at hand

Against the newest release the tool already ships (the "previous" one), it:

1. builds the release's index and ships it (`vllm_scaffold/vllm_facts/releases/`, as scripts/build_vllm_index.py);
2. checks every fact that holds on the previous release against the new sources, anchor by anchor: a fact
   whose anchors all hold gets the release added to its `releases` (facts.toml, edited with tomlkit so the
   file keeps its layout); the others are listed for a person to restate;
3. runs `doctor --vllm VERSION`'s check on every seam's golden package (generated_examples/, tests included);
4. diffs the registries against the previous release: entry-point groups and registration points that are
   new, removed or whose signature changed, the in-tree parser names new or gone (read into the index with
   the rest, so no list is kept by hand), and the ones the catalog does not classify yet;
5. lists the moves and renamed keywords `migrate` finds between the two releases (every class and function
   of the previous release that left its module for another of the new one);
6. runs triage's fork fixtures (tests/test_triage.py) with their forks built from the new release's wheel;
7. writes the report, whose numbers are the measure of what the release broke.

It changes what the suite checks (the index and facts.toml), so run the suite afterwards, then fix what the
report lists (docs/releases.md, "Adding a release to the tool").
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import tomlkit

from vllm_scaffold.atomic import write_atomically
from vllm_scaffold.catalog import load_catalog, load_registries
from vllm_scaffold.catalog.registries import REGISTRIES_FILE
from vllm_scaffold.doctor.reading.package import PluginPackage
from vllm_scaffold.doctor.releases.check import check, with_tests
from vllm_scaffold.doctor.report.findings import Finding, Severity
from vllm_scaffold.generate.migrate import Releases
from vllm_scaffold.vllm_facts import ReleaseIndex, facts, store

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "docs" / "releases"


@dataclass
class Report:
    version: str
    previous: str
    distribution: str
    lines: list[str] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)

    def section(self, title: str, body: list[str]) -> None:
        self.lines += [f"## {title}", "", *body, ""]


# -- 1. the index ----------------------------------------------------------------------------------------------


def ship_index(version: str, path: str) -> tuple[ReleaseIndex, str, Path, float]:
    started = time.perf_counter()
    source, distribution = (Path(path), "vllm") if path else store.fetch_wheel(version)
    data = store.build_index(source, version, distribution)
    write_atomically(store.SHIPPED / f"{version}{store.SUFFIX}", store.encode(data))
    manifest = dict(store.shipped_releases())
    manifest[version] = {"distribution": distribution, "digest": data["digest"]}
    ordered = dict(sorted(manifest.items(), key=lambda item: store.version_key(item[0])))
    write_atomically(store.SHIPPED / "releases.json", (json.dumps(ordered, indent=2) + "\n").encode())
    store.shipped_releases.cache_clear()
    return ReleaseIndex(data), distribution, source, time.perf_counter() - started


# -- 2. the facts ----------------------------------------------------------------------------------------------


def carry_facts(version: str, previous: str, sources: facts.Sources) -> tuple[list[str], dict[str, list[str]]]:
    """Facts holding on `previous` whose anchors all hold on `version` (now named for it too), and the others
    with why, by key."""
    carried: list[str] = []
    broken: dict[str, list[str]] = {}
    document = tomlkit.parse(facts.FACTS.read_text(encoding="utf-8"))
    for key, found in facts.facts().items():
        if found.at(version) is not None:
            continue  # stated for the release already
        holds = found.at(previous)
        if holds is None:
            continue
        problems = [why for evidence in holds.evidence if (why := _anchor_problem(evidence, sources))]
        if problems:
            broken[key] = problems
            continue
        carried.append(key)
        for table in document[key]["holds"]:  # type: ignore[union-attr]
            if previous in table["releases"]:
                table["releases"].append(version)
    if carried:
        write_atomically(facts.FACTS, tomlkit.dumps(document).encode("utf-8"))
        facts.facts.cache_clear()
    return carried, broken


def _anchor_problem(evidence: facts.Evidence, sources: facts.Sources) -> str:
    text = sources(evidence.file)
    if text is None:
        return f"{evidence.file} does not exist"
    hits = facts.locate(text, evidence.text)
    if evidence.absent is not None:
        return f"{evidence.file}: {evidence.absent!r} is there now (line {hits[0]})" if hits else ""
    if not hits:
        return f"{evidence.file}: anchor {evidence.anchor!r} is gone"
    return f"{evidence.file}: anchor {evidence.anchor!r} is on lines {hits}" if len(hits) > 1 else ""


# -- 3. the golden packages -----------------------------------------------------------------------------------


def golden_findings(index: ReleaseIndex, releases: list[ReleaseIndex]) -> dict[str, list[Finding]]:
    found = {}
    for seam in load_catalog().values():
        if seam.has_template:
            package = with_tests(PluginPackage.load(ROOT / "generated_examples" / seam.key))
            found[seam.key] = check(package, index, releases)
    return found


# -- 4. the registries ----------------------------------------------------------------------------------------


def _signature(index: ReleaseIndex, qualname: str) -> str:
    symbol = index.resolve(qualname)
    signature = index.signature(symbol) if symbol.kind in {"function", "class", "member"} else None
    return signature.text() if signature else ""


def registry_diff(old: ReleaseIndex, new: ReleaseIndex) -> list[str]:
    lines = []
    for kind, before, after in (
        ("entry-point group", old.entry_point_groups, new.entry_point_groups),
        ("registration point", old.registration_points, new.registration_points),
    ):
        for name in sorted(set(after) - set(before)):
            lines.append(f"- new {kind} `{name}`")
        for name in sorted(set(before) - set(after)):
            lines.append(f"- removed {kind} `{name}`")
        for name in sorted(set(before) & set(after)):
            if kind == "registration point" and _signature(old, name) != _signature(new, name):
                lines.append(f"- changed {kind} `{name}`: `{_signature(old, name)}` -> `{_signature(new, name)}`")
            elif kind == "entry-point group" and before[name] != after[name]:
                lines.append(f"- changed {kind} `{name}`: {before[name]} -> {after[name]}")
    return lines


def parser_diff(old: ReleaseIndex, new: ReleaseIndex) -> list[str]:
    """The in-tree tool and reasoning parser names new or gone (read into the index from the release's tables,
    so the templates and doctor refuse the new ones once scripts/in_tree_names.py runs); a table the new
    release's sources no longer have is listed, for a person to say where the names live now."""
    lines = []
    for kind, before, after in (
        ("tool parser", old.tool_parsers, new.tool_parsers),
        ("reasoning parser", old.reasoning_parsers, new.reasoning_parsers),
    ):
        if after is None:
            lines.append(f"- no {kind} table found (vllm_facts/parsers.py names where it was): its names are unknown")
            continue
        lines += [f"- new in-tree {kind} `{name}`" for name in sorted(after - (before or frozenset()))]
        lines += [f"- removed in-tree {kind} `{name}`" for name in sorted((before or frozenset()) - after)]
    return lines


def _source_hash(index: ReleaseIndex, qualname: str) -> str | None:
    """The hash of the registration function's source; for a config field, its kind and type."""
    symbol = index.resolve(qualname)
    if not symbol.exists:
        return None
    found = index.modules.get(symbol.module, {}).get("h", {}).get(symbol.name)
    return found or f"{symbol.kind}:{_signature(index, qualname)}"


def carry_registries(version: str, previous: str, old: ReleaseIndex, new: ReleaseIndex) -> tuple[list[str], list[str]]:
    """Explained and internal registries checked on `previous` whose registration functions are unchanged on
    `version`, source for source (now named for it too), and the others, for a person to check again."""
    carried, review = [], []
    path = REGISTRIES_FILE
    document = tomlkit.parse(path.read_text(encoding="utf-8"))
    for registry in load_registries().values():
        if registry.status == "templated" or previous not in registry.releases or version in registry.releases:
            continue
        hashes = [(_source_hash(old, s), _source_hash(new, s)) for s in registry.registration]
        if hashes and all(before is not None and before == after for before, after in hashes):
            carried.append(registry.key)
            document[registry.key]["releases"].append(version)  # type: ignore[union-attr]
        elif any(after is not None for _before, after in hashes):
            review.append(registry.key)
    if carried:
        write_atomically(path, tomlkit.dumps(document).encode("utf-8"))
        load_registries.cache_clear()
    return carried, review


def unclassified(index: ReleaseIndex) -> list[str]:
    registries = load_registries().values()
    claimed = {symbol for r in registries for symbol in r.registration}
    groups = {r.group for r in registries if r.group}
    points = [f"registration point `{p}`" for p in index.registration_points if p not in claimed]
    return points + [f"entry-point group `{g}`" for g in index.entry_point_groups if g not in groups]


# -- 5. migrate's moves ----------------------------------------------------------------------------------------


def migrate_moves(old: ReleaseIndex, new: ReleaseIndex) -> tuple[list[str], list[str], list[str]]:
    """(moves, renamed keywords, public classes and functions gone without a move) between the releases."""
    releases = Releases(old, new)
    moves, renamed, gone = [], [], []
    for module, entry in sorted(old.modules.items()):
        for key in ("c", "f"):  # classes, functions
            for name in sorted(entry.get(key, {})):
                if name.startswith("_"):
                    continue
                qualname = f"{module}.{name}"
                if not new.resolve(qualname).exists:
                    move = releases.move(qualname)
                    if move:
                        moves.append(f"- `{move.old}` -> `{move.new}`")
                    else:
                        gone.append(qualname)
                    continue
                for before, after in releases.renamed_keywords(qualname).items():
                    renamed.append(f"- `{qualname}(...)`: keyword `{before}` is now `{after}`")
    return moves, renamed, gone


def gone_modules(old: ReleaseIndex, new: ReleaseIndex) -> list[str]:
    return sorted(m for m in old.modules if not new.has_module(m))


# -- 6. triage's fork fixtures ---------------------------------------------------------------------------------


def triage_fixtures(version: str) -> tuple[int, str]:
    environment = dict(os.environ, VLLMSCAFFOLD_TRIAGE_RELEASE=version)
    command = [sys.executable, "-m", "pytest", "-q", "--tb=no", "-rf", "-n", "0", "-p", "no:cacheprovider"]
    command.append("tests/test_triage.py")
    result = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True)
    return result.returncode, result.stdout


# -- the report ------------------------------------------------------------------------------------------------


def _finding_line(finding: Finding) -> str:
    return f"  - `{finding.code}` ({finding.severity.value}) {finding.where}: {finding.message}"


def adopt(version: str, path: str) -> Path:
    """Adopts `version`, newer than every shipped release; run again for the newest shipped one, it reuses that
    index and reports the state now (against the release before it), after the fixes the first report asked for."""
    shipped = store.shipped_versions()
    if version == shipped[-1] and len(shipped) > 1:
        previous = shipped[-2]
        source, distribution = (Path(path), "vllm") if path else store.fetch_wheel(version)
        new, seconds, built = store.shipped(version), 0.0, "Shipped already; read from"
    elif store.version_key(version) <= store.version_key(shipped[-1]):
        sys.exit(f"error: {version} is older than {shipped[-1]}, the newest release shipped; name a newer one")
    else:
        previous = shipped[-1]
        new, distribution, source, seconds = ship_index(version, path)
        built = "Built from"
    old = store.shipped(previous)
    report = Report(version, previous, distribution)
    report.section(
        "Index",
        [
            f"{built} `{source.name}` ({distribution}) in {seconds:.0f} s: {len(new.modules)} modules "
            f"({len(old.modules)} in {previous}); {len(gone_modules(old, new))} modules of {previous} are gone, "
            f"{len(set(new.modules) - set(old.modules))} are new.",
        ],
    )

    sources = facts.wheel_sources(source) if source.is_file() else facts.directory_sources(source)
    carried, broken = carry_facts(version, previous, sources)
    anchors = sum(len(problems) for problems in broken.values())
    body = [
        f"{len(carried) + len(broken)} facts held on {previous} and did not name {version} yet. {len(carried)} keep "
        f"every anchor (now named for {version} in facts.toml) and **{len(broken)} have an anchor gone** ({anchors} "
        "anchors); restate each for this release, or end it at the previous one:",
        "",
    ]
    body += [f"- `{key}`: " + "; ".join(problems) for key, problems in sorted(broken.items())]
    stated = [key for key, found in facts.facts().items() if found.at(version) is not None]
    problems, checked = facts.check(version, sources)
    body += [
        "",
        f"{len(stated)} facts name {version} now; of their anchors, {len(checked)} are found once each and "
        f"{len(problems)} fail" + (":" if problems else "."),
    ]
    body += [f"- {problem}" for problem in problems]
    report.section("Facts", body)
    report.summary.append(
        f"{len(broken)} of {len(carried) + len(broken)} facts not yet named for {version} with an anchor gone "
        f"({anchors} anchors); {len(stated)} facts name {version}, {len(problems)} anchors failing"
    )

    releases = [store.shipped(v) for v in store.shipped_versions()]
    golden = golden_findings(new, releases)
    body = []
    counts = {severity: 0 for severity in Severity}
    for seam, found in golden.items():
        for finding in found:
            counts[finding.severity] += 1
        breaks = [f for f in found if f.severity is not Severity.INFO]
        body.append(f"- `{seam}`: " + (f"{len(breaks)} errors or warnings" if breaks else "no error or warning"))
        body += [_finding_line(f) for f in found]
    report.section(f"`doctor --vllm {version}` on every golden package", body)
    broken_seams = [s for s, found in golden.items() if any(f.severity is Severity.ERROR for f in found)]
    report.summary.append(
        f"golden packages: {counts[Severity.ERROR]} errors, {counts[Severity.WARNING]} warnings, "
        f"{counts[Severity.INFO]} infos; broken: {', '.join(broken_seams) or 'none'}"
    )

    diff = registry_diff(old, new) + parser_diff(old, new)
    missing = unclassified(new)
    carried_registries, review = carry_registries(version, previous, old, new)
    body = diff or ["No registry is new, removed or changed."]
    body += [
        "",
        f"Explained and internal registries whose registration code is unchanged, now named for {version}: "
        f"{len(carried_registries)}. Changed, to check again by hand ({len(review)}): "
        + (", ".join(f"`{key}`" for key in review) or "none")
        + ".",
    ]
    body += ["", f"Not classified in vllm_scaffold/catalog/registries.toml ({len(missing)}):", ""]
    body += [f"- {item}" for item in missing] or ["- none"]
    report.section(f"Registries against {previous}", body)
    report.summary.append(
        f"registries: {len(diff)} new, removed or changed; {len(missing)} unclassified; {len(review)} to check again"
    )

    moves, renamed, gone = migrate_moves(old, new)
    body = [
        f"`migrate --vllm {version}` would rewrite {len(moves)} moved names and {len(renamed)} renamed keywords:",
        "",
    ]
    body += moves + renamed
    body += [
        "",
        f"{len(gone)} public classes and functions of {previous} are gone without a move "
        f"(in {len(gone_modules(old, new))} removed modules and elsewhere); those a plugin uses are doctor's "
        "`vllm-import-missing` and `vllm-attribute-missing`.",
    ]
    report.section("Moves `migrate` makes", body)
    report.summary.append(f"migrate: {len(moves)} moves, {len(renamed)} renamed keywords, {len(gone)} names gone")

    code, output = triage_fixtures(version)
    tail = [line for line in output.strip().splitlines() if line][-15:]
    report.section(
        f"Triage's fork fixtures built from {version}",
        [f"`pytest tests/test_triage.py` with the forks built from {version}: exit {code}.", "", "```", *tail, "```"],
    )
    report.summary.append(f"triage fixtures: {tail[-1] if tail else 'no output'}")

    header = [
        f"# vLLM {version}",
        "",
        f"Written by `python scripts/adopt_release.py {version}` on {datetime.date.today().isoformat()}, "
        f"against {previous}, the newest release the tool shipped before it.",
        "",
        *[f"- {line}" for line in report.summary],
        "",
    ]
    REPORTS.mkdir(parents=True, exist_ok=True)
    target = REPORTS / f"{version}.md"
    target.write_text("\n".join(header + report.lines).rstrip() + "\n", encoding="utf-8")
    return target


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("release", help="VERSION, or VERSION=PATH for a wheel or source tree at hand")
    arguments = parser.parse_args(argv)
    version, _, path = arguments.release.partition("=")
    target = adopt(version, path)
    print(target.read_text(encoding="utf-8").split("\n## ")[0])
    print(f"report: {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
