"""Doctor on published vLLM plugins, compared with hand-written judgements of what it should find.

tests/doctor_corpus.toml names each plugin by pinned version with what doctor reads of it and every
finding code it reports, judged true (the plugin really breaks that way on vLLM 0.32), false (why the
finding is wrong) or debatable (the claim is right, its consequence on 0.32 arguable). No plugin code is
kept here: each is fetched with `pip download --no-deps` into $VLLMSCAFFOLD_CACHE/doctor-corpus (the
system temp directory by default), once, and the test is skipped with pip's reason when the registry
cannot be reached.

The judgements are exact: a code no judgement covers, or a count other than the judged one (true and
false findings together) fails the test, so a check that gets more precise updates its judgement here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter
from pathlib import Path

import pytest

from vllm_scaffold.doctor.report.codes import severity_of
from vllm_scaffold.doctor.runner import diagnose

CORPUS = Path(__file__).with_name("doctor_corpus.toml")
PLUGINS = tomllib.loads(CORPUS.read_text(encoding="utf-8"))["plugin"]
JUDGEMENTS = {"true", "false", "debatable"}
# Flags that make pip fetch exactly the file each entry names (an sdist, or a wheel for its platform).
_KIND_FLAGS = {"sdist": ["--no-binary", ":all:"], "wheel": ["--only-binary", ":all:"]}


def _cache() -> Path:
    root = Path(os.environ.get("VLLMSCAFFOLD_CACHE", tempfile.gettempdir())) / "doctor-corpus"
    root.mkdir(parents=True, exist_ok=True)
    return root


def fetch(plugin: dict) -> Path:
    """The pinned file of `plugin`, downloaded once with pip; skips the test when pip cannot get it."""
    into = _cache() / f"{plugin['name']}-{plugin['version']}-{plugin['kind']}"
    found = sorted(p for p in into.glob("*") if p.is_file()) if into.is_dir() else []
    if found:
        return found[0]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", str(into)]
    command += [*_KIND_FLAGS[plugin["kind"]], *plugin.get("pip", []), f"{plugin['name']}=={plugin['version']}"]
    environ = {**os.environ, **plugin.get("env", {})}  # what its setup.py needs to prepare the metadata
    completed = subprocess.run(command, capture_output=True, text=True, check=False, env=environ)
    found = sorted(p for p in into.glob("*") if p.is_file()) if into.is_dir() else []
    if completed.returncode != 0 or not found:
        reason = (completed.stderr or completed.stdout).strip().splitlines()
        pytest.skip(f"pip download {plugin['name']}=={plugin['version']} failed: {reason[-1] if reason else '?'}")
    return found[0]


def test_corpus_covers_every_group_and_style() -> None:
    assert len(PLUGINS) >= 15
    groups = {group for plugin in PLUGINS for group in plugin["groups"]}
    assert {
        "vllm.general_plugins",
        "vllm.platform_plugins",
        "vllm.io_processor_plugins",
        "vllm.stat_logger_plugins",
        "vllm.logits_processors",
    } <= groups
    assert {plugin["kind"] for plugin in PLUGINS} == {"sdist", "wheel"}
    for plugin in PLUGINS:
        for finding in plugin.get("finding", []):
            assert finding["judged"] in JUDGEMENTS and finding["why"].strip(), (plugin["name"], finding)


@pytest.mark.parametrize("plugin", PLUGINS, ids=[f"{p['name']}-{p['version']}" for p in PLUGINS])
def test_findings_match_the_judgements(plugin: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = fetch(plugin)
    for name in ("VLLM_PLUGINS", "VLLM_USE_V2_MODEL_RUNNER", "VLLM_DISABLED_KERNELS"):
        monkeypatch.delenv(name, raising=False)
    report = diagnose(archive, live=False)
    assert (report.read["modules"], report.read["vllm_entry_points"]) == (plugin["modules"], plugin["entry_points"])
    reported = Counter(f.code for f in report.active)
    # A code may carry two judgements (some of its findings true, others false): together they are its count.
    true, false = Counter[str](), Counter[str]()
    for finding in plugin.get("finding", []):
        (true if finding["judged"] == "true" else false)[finding["code"]] += finding["count"]
    for finding in report.active:  # an error whose proof has a link not shown is a warning (docs/doctor.md)
        assert finding.severity == severity_of(finding.code) or finding.unproven, finding
    summary = "\n".join(f"{f.code} {f.where}: {f.message}" for f in report.active)
    unjudged = set(reported) - set(true) - set(false)
    assert not unjudged, f"findings nobody judged: {unjudged}\n{summary}"
    for code in set(true) | set(false):
        assert reported[code] == true[code] + false[code], f"{code}: {reported[code]} reported\n{summary}"


def test_no_error_is_judged_false() -> None:
    """An error means the plugin breaks at run time on that release: a finding judged false (count > 0) is at
    most a warning."""
    false_errors = [
        (plugin["name"], finding["code"])
        for plugin in PLUGINS
        for finding in plugin.get("finding", [])
        if finding["judged"] == "false" and finding["count"] and severity_of(finding["code"]) == "error"
    ]
    assert not false_errors, f"errors judged false: {false_errors}"


def corpus_table() -> str:
    """The corpus as docs/doctor.md shows it: package, version, what doctor read, findings and judgements."""
    rows = [
        "| package | version | packaging | modules / vLLM entry points | findings (judged true) | judged false |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for plugin in PLUGINS:
        findings = plugin.get("finding", [])
        true = ", ".join(f"`{f['code']}` ×{f['count']}" for f in findings if f["judged"] == "true" and f["count"])
        true = true or "none"
        false = "; ".join(
            f"`{f['code']}` ×{f['count']}{'' if f['judged'] == 'false' else ' (debatable)'}: {f['why']}"
            for f in findings
            if f["judged"] != "true" and f["count"]
        )
        read = f"{plugin['modules']} / {plugin['entry_points']}"
        rows.append(
            f"| {plugin['name']} | {plugin['version']} | {plugin['kind']}: {plugin['packaging']} | {read} | "
            f"{true} | {false or 'none'} |"
        )
    return "\n".join(rows)


def precision(phase: str) -> dict[str, tuple[int, int, int]]:
    """(true, false, debatable) findings per severity on the plugins judged before the checks were changed
    for them: `phase` "before" counts what doctor reported then, "after" what it reports now (the count each
    judgement holds, at the severity the code registry gives it)."""
    tally: dict[str, Counter[str]] = {}
    for plugin in PLUGINS:
        for finding in plugin.get("finding", []):
            if "before" not in finding:
                continue
            if phase == "before":
                severity, count = finding["before"]["severity"], finding["before"]["count"]
            else:
                severity, count = severity_of(finding["code"]), finding["count"]
            tally.setdefault(severity, Counter())[finding["judged"]] += count
    return {s: (c["true"], c["false"], c["debatable"]) for s, c in tally.items()}


def precision_table() -> str:
    """Precision on the later plugins, before and after, errors and warnings apart, as docs/doctor.md shows it."""
    rows = [
        "| severity | before: true / false / debatable | precision | now: true / false / debatable | precision |",
        "| --- | --- | ---: | --- | ---: |",
    ]
    before, after = precision("before"), precision("after")
    for severity in ("error", "warning", "info"):
        cells = []
        for tally in (before, after):
            true, false, debatable = tally.get(severity, (0, 0, 0))
            share = f"{100 * true / (true + false):.1f} %" if true + false else "n/a"
            cells += [f"{true} / {false} / {debatable}", share]
        rows.append(f"| {severity} | " + " | ".join(cells) + " |")
    missed = sum(len(p.get("missed", [])) for p in PLUGINS)
    rows.append(f"\nReal breakages doctor missed when these plugins were judged: {missed}.")
    return "\n".join(rows)


def test_docs_show_the_corpus() -> None:
    docs = (Path(__file__).parents[1] / "docs" / "doctor.md").read_text(encoding="utf-8")
    assert corpus_table() in docs, f"docs/doctor.md lacks the current corpus table:\n{corpus_table()}"
    assert precision_table() in docs, f"docs/doctor.md lacks the current precision table:\n{precision_table()}"
