"""Claims about vLLM's behaviour, each written once in `facts.toml` with its evidence per release.

A claim holds for the releases it names, with evidence: a file of vLLM's sources and an anchor, text that must
appear in it (or `absent`, text that must not). Pages cite it with line numbers found from the anchors
(`scripts/facts_docs.py`), catalog entries and `codes.toml` write `{fact:KEY}`, and doctor's checks read what
holds for the release they check (`holding`). tests/test_facts.py checks every anchor on every release named.
See docs/facts.md.
"""

from __future__ import annotations

import re
import tomllib
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from vllm_scaffold.vllm_facts.build import version_of
from vllm_scaffold.vllm_facts.store import fetch_wheel, version_key
from vllm_scaffold.vllm_facts.which import default_version

FACTS = Path(__file__).with_name("facts.toml")
# The release a page's citation numbers lines for first: the newest engine-tested one.
REFERENCE = default_version()

# file (relative to the site-packages root, "vllm/...") -> its text, or None when the release has no such file
Sources = Callable[[str], "str | None"]


@dataclass(frozen=True)
class Evidence:
    file: str
    anchor: str | None = None  # text that must appear in `file`
    absent: str | None = None  # text that must not
    until: bool = False  # this anchor ends a range the evidence before it begins

    @property
    def text(self) -> str:
        return self.anchor if self.anchor is not None else (self.absent or "")


@dataclass(frozen=True)
class LoadedByName:
    """One of vLLM's base classes whose subclasses vLLM loads from a name the user gives in `option`."""

    base: str  # the base class's qualified name
    option: str
    registry: str = ""  # the manager a subclass must be registered with to be selected ("": its own path selects it)


@dataclass(frozen=True)
class Holds:
    releases: tuple[str, ...]
    claim: str
    evidence: tuple[Evidence, ...]
    kinds: tuple[str, ...] = ()  # linear-kernel-kinds: the values themselves
    loaded: tuple[LoadedByName, ...] = ()  # classes-loaded-by-name: the bases themselves


@dataclass(frozen=True)
class Fact:
    key: str
    holds: tuple[Holds, ...]
    backs: tuple[str, ...] = ()  # the doctor codes whose verdict rests on it

    @property
    def releases(self) -> tuple[str, ...]:
        return tuple(sorted((r for h in self.holds for r in h.releases), key=version_key))

    def at(self, version: str) -> Holds | None:
        return next((h for h in self.holds if version in h.releases), None)

    def text(self) -> str:
        """The claim as a page or message states it: once when every release states it alike, else per release."""
        if len({h.claim for h in self.holds}) == 1:
            return self.holds[0].claim
        return " ".join(f"vLLM {_span(h.releases)}: {h.claim}" for h in self.holds)


def _span(releases: tuple[str, ...]) -> str:
    ordered = sorted(releases, key=version_key)
    return ordered[0] if len(ordered) == 1 else f"{ordered[0]} to {ordered[-1]}"


@cache
def facts() -> dict[str, Fact]:
    data = tomllib.loads(FACTS.read_text(encoding="utf-8"))
    return {
        key: Fact(
            key,
            tuple(
                Holds(
                    tuple(h["releases"]),
                    h["claim"],
                    tuple(Evidence(**e) for e in h["evidence"]),
                    tuple(h.get("kinds", ())),
                    tuple(LoadedByName(**entry) for entry in h.get("loaded", ())),
                )
                for h in table["holds"]
            ),
            tuple(table.get("backs", ())),
        )
        for key, table in data.items()
    }


def fact(key: str) -> Fact:
    try:
        return facts()[key]
    except KeyError:
        raise KeyError(f"vLLM fact {key!r} is not in {FACTS.name}: write it there with its evidence") from None


def holding(key: str, version: str | None) -> Holds:
    """What `key` says for `version`: the release itself, else the newest older release the facts name, else
    the oldest (a release the tool does not know yet is read as the newest it knows before it)."""
    found = fact(key)
    if version and (exact := found.at(version)):
        return exact
    known = found.releases
    if version:
        older = [r for r in known if version_key(r) <= version_key(version)]
        if older:
            return found.at(older[-1])  # type: ignore[return-value]
    return found.at(REFERENCE) or found.at(known[-1])  # type: ignore[return-value]


_PLACEHOLDER = re.compile(r"\{fact:([a-z0-9-]+)\}")


def expand(text: str) -> str:
    """`text` with every `{fact:KEY}` replaced by the claim (per release where releases differ)."""
    return _PLACEHOLDER.sub(lambda m: fact(m.group(1)).text(), text)


# -- finding anchors ---------------------------------------------------------------------------------------


def locate(text: str, anchor: str) -> list[int]:
    """The 1-based lines where `anchor` starts in `text`: each line of the anchor must be found, without its
    indentation, in consecutive lines of the text."""
    wanted = [part.strip() for part in anchor.split("\n")]
    lines = [line.strip() for line in text.splitlines()]
    found = []
    for start in range(len(lines) - len(wanted) + 1):
        if all(part in lines[start + i] for i, part in enumerate(wanted)):
            found.append(start + 1)
    return found


def directory_sources(root: Path) -> Sources:
    """The sources of a tree holding `vllm/` (a site-packages directory, an unpacked wheel)."""

    def read(file: str) -> str | None:
        path = root / file
        return path.read_bytes().decode("utf-8", "replace") if path.is_file() else None

    return read


def wheel_sources(wheel: Path) -> Sources:
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())

    def read(file: str) -> str | None:
        return archive.read(file).decode("utf-8", "replace") if file in names else None

    return read


def release_sources(version: str, trees: list[Path]) -> Sources:
    """The sources of vLLM `version`: the first of `trees` (directories holding `vllm/`) that is that release,
    else its wheel, from the cache or downloaded once (`store.fetch_wheel`, which raises ScaffoldError when
    it cannot be had)."""
    for tree in trees:
        if (tree / "vllm" / "__init__.py").is_file() and version_of(tree) == version:
            return directory_sources(tree)
    wheel, _distribution = fetch_wheel(version)
    return wheel_sources(wheel)


@dataclass(frozen=True)
class Problem:
    key: str
    release: str
    evidence: Evidence
    why: str

    def __str__(self) -> str:
        return f"vLLM fact {self.key!r} on {self.release}: {self.evidence.file}: {self.why}"


def check(version: str, sources: Sources) -> tuple[list[Problem], dict[tuple[str, str, str], int]]:
    """Every anchor of every fact naming `version`, looked up in its sources: the problems, and the line of
    each anchor found ((key, file, anchor) -> line)."""
    problems: list[Problem] = []
    lines: dict[tuple[str, str, str], int] = {}
    for key, found in facts().items():
        holds = found.at(version)
        if holds is None:
            continue
        for evidence in holds.evidence:
            text = sources(evidence.file)
            if text is None:
                problems.append(Problem(key, version, evidence, "the file does not exist"))
                continue
            hits = locate(text, evidence.text)
            if evidence.absent is not None:
                if hits:
                    problems.append(Problem(key, version, evidence, f"{evidence.absent!r} is there (line {hits[0]})"))
            elif not hits:
                problems.append(Problem(key, version, evidence, f"anchor {evidence.anchor!r} is gone"))
            elif len(hits) > 1:
                problems.append(Problem(key, version, evidence, f"anchor {evidence.anchor!r} is on lines {hits}"))
            else:
                lines[(key, evidence.file, evidence.text)] = hits[0]
    return problems, lines


# -- citations -----------------------------------------------------------------------------------------------


def citation(key: str, lines: dict[str, dict[tuple[str, str, str], int]]) -> str:
    """`file:line` for each file of the fact's evidence on REFERENCE (or the first release the fact names),
    then the other releases' lines where they differ. `lines` is `check`'s second answer, per release."""
    return citation_of(fact(key), lines)


def citation_of(found: Fact, lines: dict[str, dict[tuple[str, str, str], int]]) -> str:
    key = found.key
    first = REFERENCE if REFERENCE in found.releases else found.releases[0]
    cited: list[str] = []
    for file in dict.fromkeys(e.file for h in found.holds for e in h.evidence if e.anchor is not None):
        places: dict[str, str] = {}
        for release in found.releases:
            holds = found.at(release) if release in lines else None
            numbers: list[str] = []
            for evidence in holds.evidence if holds else ():
                if evidence.file != file or evidence.anchor is None:
                    continue
                line = str(lines[release][(key, file, evidence.anchor)])
                if evidence.until and numbers:
                    numbers[-1] = f"{numbers[-1]}-{line}"
                elif line not in numbers:
                    numbers.append(line)
            if numbers:
                places[release] = ",".join(numbers)
        if not places:
            continue
        main = places.get(first) or next(iter(places.values()))
        others = "; ".join(f"{release}: {place}" for release, place in places.items() if place != main)
        cited.append(f"`{file}:{main}`" + (f" [{others}]" if others else ""))
    return ", ".join(cited)


MARKER = re.compile(r"<!--(fact|cite):([a-z0-9-]+)-->(.*?)<!--/\1-->", re.DOTALL)


def fill(page: str, lines: dict[str, dict[tuple[str, str, str], int]]) -> str:
    """`page` with every marked claim and citation written from the facts."""

    def one(match: re.Match[str]) -> str:
        kind, key = match.group(1), match.group(2)
        body = citation(key, lines) if kind == "cite" else f"{fact(key).text()} ({citation(key, lines)})"
        return f"<!--{kind}:{key}-->{body}<!--/{kind}-->"

    return MARKER.sub(one, page)


def cited(page: str) -> list[str]:
    return [m.group(2) for m in MARKER.finditer(page)]
