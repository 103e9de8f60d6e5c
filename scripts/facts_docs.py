"""Writes the claims and citations the docs take from vllm_scaffold/vllm_facts/facts.toml.

A maintainer script, not part of the tool: run `python scripts/facts_docs.py` after editing facts.toml or a
marked page. It finds every anchor in the sources of every release the facts name (the installed vLLM, the
repository's `.venv-VERSION` environments, else the release's wheel, cached or downloaded once), fails naming
each anchor it cannot find, and rewrites:

- each `<!--fact:KEY-->...<!--/fact-->` (the claim and its citation) and `<!--cite:KEY-->...<!--/cite-->` (the
  citation) in docs/seams/*.md and docs/doctor.md, with line numbers per release;
- docs/facts.md's list of every fact.

tests/test_facts.py fails while a page differs from what this script writes.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from vllm_scaffold.atomic import write_atomically  # noqa: E402
from vllm_scaffold.vllm_facts import facts  # noqa: E402
from vllm_scaffold.vllm_facts.store import version_key  # noqa: E402

PAGES = [*sorted((ROOT / "docs" / "seams").glob("*.md")), ROOT / "docs" / "doctor.md"]
FACTS_PAGE = ROOT / "docs" / "facts.md"
BEGIN = "<!-- facts: generated from vllm_scaffold/vllm_facts/facts.toml by `python scripts/facts_docs.py` -->"
END = "<!-- end of facts -->"


def trees() -> list[Path]:
    """Directories holding an installed `vllm/`: this interpreter's, then the repository's other environments."""
    found = []
    spec = importlib.util.find_spec("vllm")
    if spec and spec.submodule_search_locations:
        found.append(Path(next(iter(spec.submodule_search_locations))).parent)
    found += sorted(p.parent for p in ROOT.glob(".venv-*/lib/python*/site-packages/vllm"))
    return found


def releases() -> list[str]:
    return sorted({r for fact in facts.facts().values() for r in fact.releases}, key=version_key)


def lines_per_release() -> tuple[dict[str, dict[tuple[str, str, str], int]], list[facts.Problem]]:
    """Every anchor's line on every release, and the anchors not found (the sources must all be at hand)."""
    lines, problems = {}, []
    for version in releases():
        found, lines[version] = facts.check(version, facts.release_sources(version, trees()))
        problems += found
    return lines, problems


def facts_list(lines: dict[str, dict[tuple[str, str, str], int]]) -> str:
    parts = [BEGIN, "", "| fact | releases | claim | evidence | doctor codes |", "| --- | --- | --- | --- | --- |"]
    for key, fact in facts.facts().items():
        for holds in fact.holds:
            single = facts.Fact(key, (holds,))
            known = {r: lines[r] for r in holds.releases}
            evidence = facts.citation_of(single, known)
            absent = [f"`{e.file}` lacks `{e.absent}`" for e in holds.evidence if e.absent is not None]
            cell = "; ".join(x for x in [evidence, *absent] if x)
            backs = ", ".join(f"`{code}`" for code in fact.backs)
            parts.append(f"| `{key}` | {', '.join(holds.releases)} | {holds.claim} | {cell} | {backs} |")
    return "\n".join([*parts, "", END])


def with_list(text: str, lines: dict[str, dict[tuple[str, str, str], int]]) -> str:
    head, found, rest = text.partition(BEGIN)
    if not found:
        raise SystemExit(f"{FACTS_PAGE} lacks the line {BEGIN}")
    _, found, tail = rest.partition(END)
    if not found:
        raise SystemExit(f"{FACTS_PAGE} lacks the line {END}")
    return head + facts_list(lines) + tail


def pages(lines: dict[str, dict[tuple[str, str, str], int]]) -> dict[Path, str]:
    """Each page as this script writes it."""
    written = {page: facts.fill(page.read_text(encoding="utf-8"), lines) for page in PAGES}
    written[FACTS_PAGE] = with_list(facts.fill(FACTS_PAGE.read_text(encoding="utf-8"), lines), lines)
    return written


def main() -> int:
    lines, problems = lines_per_release()
    if problems:
        print("\n".join(str(p) for p in problems), file=sys.stderr)
        return 1
    for page, text in pages(lines).items():
        if page.read_text(encoding="utf-8") != text:
            write_atomically(page, text.encode("utf-8"))
            print(f"wrote {page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
