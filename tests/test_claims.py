"""No sentence the tool ships says what vLLM does outside the facts (docs/facts.md, "Claims outside the facts").

A sentence is a claim about vLLM when it names vLLM or one of its parts (a process, a `vllm.` module, a
backticked vLLM-style name, a flag, a `VLLM_*` variable) together with a behaviour verb (calls, loads, raises,
refuses, logs, ...). Such a sentence must carry a fact (`{fact:KEY}`, a `<!--fact:-->` or `<!--cite:-->`
marker, `vllm_fact("KEY")`; for a message built in doctor's code, a function that reads `facts.fact` or
`facts.holding`), or be listed in tests/claims.toml, judged not a claim about vLLM, with the reason: a claim
about vLLM is never listed, it is stated through a fact. A new sentence that is neither fails here, and so does
a listed one that is gone.

The texts read: the seam pages (docs/seams/), every string of the catalog (vllm_scaffold/catalog/), the
summaries, `fails` lines, `found` lines, intros and example comments of codes.toml, the comments, docstrings
and Markdown text of templates/, and the string literals of doctor's code (vllm_scaffold/doctor/).
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LISTED = Path(__file__).with_name("claims.toml")

# What carries a fact in a sentence.
MARKER = re.compile(r"\{fact:[a-z0-9-]+\}|<!--(fact|cite):|vllm_fact\(")
# Code that states a fact: a message built in a function that reads one is next to it.
FACT_CALL = re.compile(r"\bfacts\.(fact|holding)\(")
# vLLM or one of its parts.
SUBJECT = re.compile(
    r"\bvLLM\b|\bengine core\b|\bAPI server\b|\bfront end\b|\bworkers?\b|\bscheduler\b|`vllm[.`]"
    r"|`[A-Z][a-z]+[A-Z]\w*`|`\w+\.\w+[^`]*`|`--[a-z-]+`|\bVLLM_[A-Z_]+"
)
# What a part of vLLM does.
VERB = re.compile(
    r"\b(calls?|called|loads?|loaded|imports?|imported|raises?|runs?|logs?|logged|refuses?|refused|stops?|"
    r"checks?|checked|looks?|reads?|registers?|registered|ignores?|ignored|skips?|skipped|drops?|dropped|"
    r"builds?|built|creates?|validates?|replaces?|overwrites?|warns?|fails?|appends?|resolves?|sets?|passes|"
    r"returns?|keeps?|answers?|splits?|never|only)\b"
)
# Room for a message's `{}` parts and a sentence's end.
MIN_MESSAGE = 25


@dataclass(frozen=True)
class Sentence:
    where: str  # a path relative to the root, or "codes.toml:CODE"
    text: str  # whitespace collapsed

    @property
    def key(self) -> tuple[str, str]:
        return self.where, self.text[:120]


def paragraphs(text: str) -> Iterator[list[str]]:
    """Paragraphs, list items and headings, each as its sentences (a stop followed by a capital, a backtick, a
    parenthesis or a marker)."""
    for paragraph in re.split(r"\n\s*\n|\n(?=\s*[-*] )|\n(?=#)", text):
        paragraph = " ".join(paragraph.split())
        found = [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z`(<])", paragraph) if s.strip()]
        if found:
            yield found


def sentences(text: str) -> Iterator[str]:
    for paragraph in paragraphs(text):
        yield from paragraph


def next_to_facts(paragraph: list[str]) -> Iterator[tuple[str, bool]]:
    """(sentence, stated): a sentence is stated when it, or the sentence before or after it in its paragraph,
    carries a fact."""
    marked = [carries_fact(sentence) for sentence in paragraph]
    for i, sentence in enumerate(paragraph):
        yield sentence, any(marked[max(0, i - 1) : i + 2])


def is_claim(text: str) -> bool:
    return bool(SUBJECT.search(text) and VERB.search(text))


def carries_fact(text: str) -> bool:
    return bool(MARKER.search(text))


def _markdown(text: str) -> Iterator[list[str]]:
    return paragraphs(re.sub(r"```.*?```", "", text, flags=re.S))


def _comments_and_docstrings(text: str) -> Iterator[list[str]]:
    """A docstring is a paragraph of its own, and so is every comment."""
    parts = [m.group(1) for m in re.finditer(r"#\s?(.*)", text)]
    parts += [m.group(1) for m in re.finditer(r'"""(.*?)"""', text, re.S)]
    return paragraphs("\n\n".join(parts))


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _literal(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def code_messages(source: str) -> Iterator[tuple[str, bool]]:
    """(sentence, next to a fact) for every string literal of `source` long enough to be a message, docstrings
    aside; a string is next to a fact when a function holding it reads one."""
    tree = ast.parse(source)
    stated: dict[int, bool] = {}
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            reads = bool(FACT_CALL.search(ast.get_source_segment(source, function) or ""))
            for node in ast.walk(function):
                stated[id(node)] = stated.get(id(node), False) or reads
    # Docstrings explain doctor's code to its readers; the parts of an f-string are read with it.
    skipped = {
        id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    skipped |= {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        text = _literal(node)
        if text is None or len(text) < MIN_MESSAGE or " " not in text:
            continue
        for sentence in sentences(text):
            yield sentence, stated.get(id(node), False)


def shipped_sentences(root: Path = ROOT) -> Iterator[tuple[Sentence, bool]]:
    """(sentence, carries a fact) for every sentence the tool ships that this test reads."""

    def each(where: str, found: Iterator[list[str]]) -> Iterator[tuple[Sentence, bool]]:
        for paragraph in found:
            for text, stated in next_to_facts(paragraph):
                yield Sentence(where, text), stated

    for path in sorted(root.glob("docs/seams/*.md")):
        yield from each(path.relative_to(root).as_posix(), _markdown(path.read_text(encoding="utf-8")))
    for path in sorted(root.glob("vllm_scaffold/catalog/**/*.toml")):
        strings = _strings(tomllib.loads(path.read_text(encoding="utf-8")))
        yield from each(path.relative_to(root).as_posix(), (p for value in strings for p in paragraphs(value)))
    registry = tomllib.loads((root / "vllm_scaffold/doctor/report/codes.toml").read_text(encoding="utf-8"))
    for section in registry["section"]:
        yield from each("codes.toml", paragraphs(section.get("intro", "")))
        for code in section["code"]:
            # docs/doctor.md shows a code as one entry (summary, `fails` line, how it is found, example): a fact in
            # its summary states the code's claim, so the entry's other sentences sit next to it.
            where = f"codes.toml:{code['code']}"
            entry = [
                *paragraphs(code["summary"]),
                *paragraphs(code.get("fails", "")),
                *paragraphs(code.get("found", "")),
                *_comments_and_docstrings(code["example"]),
            ]
            stated = carries_fact(code["summary"])
            for text in (sentence for paragraph in entry for sentence in paragraph):
                yield Sentence(where, text), stated or carries_fact(text)
    for path in sorted(p for p in (root / "templates").rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8", errors="replace")
        found = _markdown(text) if ".md" in path.name else _comments_and_docstrings(text)
        yield from each(path.relative_to(root).as_posix(), found)
    # A message is listed by the package it ships in, not its module, so moving code between doctor's modules
    # leaves the list as it is.
    for path in sorted((root / "vllm_scaffold/doctor").rglob("*.py")):
        where = "vllm_scaffold/doctor"
        for text, stated in code_messages(path.read_text(encoding="utf-8")):
            yield Sentence(where, text), stated or carries_fact(text)


def listed() -> dict[tuple[str, str], str]:
    """(where, the sentence's first 120 characters) -> why it is allowed without a fact."""
    entries = tomllib.loads(LISTED.read_text(encoding="utf-8"))["sentence"]
    found: dict[tuple[str, str], str] = {}
    for entry in entries:
        key = (entry["where"], entry["text"])
        assert key not in found, f"tests/claims.toml lists {key} twice"
        # A claim about vLLM is stated through a fact: only a sentence judged not a claim is listed, with why.
        assert entry.get("reason"), f"{key}: give the reason it is not a claim about vLLM, or state it through a fact"
        found[key] = entry.get("reason", "")
    return found


def unlisted_claims(found: Iterator[tuple[Sentence, bool]], allowed: dict[tuple[str, str], str]) -> list[str]:
    return [f"{s.where}: {s.text}" for s, stated in found if not stated and is_claim(s.text) and s.key not in allowed]


# -- the rule, shown on planted sentences -----------------------------------------------------------------------


def test_a_planted_claim_is_caught_and_a_stated_one_is_not() -> None:
    planted = "vLLM calls `register()` twice in the engine core, so a second registration raises."
    assert is_claim(planted) and not carries_fact(planted)
    assert unlisted_claims(iter([(Sentence("docs/seams/patch.md", planted), False)]), listed()) == [
        f"docs/seams/patch.md: {planted}"
    ]
    assert carries_fact("{fact:general-plugin-unguarded} The plugin stops the process.")
    assert carries_fact("- <!--fact:endpoint-opt-in-->Endpoint plugins load only when ...<!--/fact-->")
    assert not is_claim("The generated package keeps its settings in one module.")


def test_a_planted_message_in_code_is_caught_unless_its_function_reads_a_fact() -> None:
    source = (
        "def check():\n"
        "    return f'vLLM refuses {name} in the engine core and stops'\n"
        "def stated():\n"
        "    return facts.fact('endpoint-opt-in').text() + f' vLLM refuses {name} and stops'\n"
    )
    messages = list(code_messages(source))
    assert ("vLLM refuses {} in the engine core and stops", False) in messages
    assert (" vLLM refuses {} and stops".strip(), True) in [(t.strip(), s) for t, s in messages]


def test_sentences_split_on_stops_and_list_items() -> None:
    text = "First `x.y` runs. Second (vLLM) stops.\n- a bullet\nthat goes on\n\n## Heading"
    expected = ["First `x.y` runs.", "Second (vLLM) stops.", "- a bullet that goes on", "## Heading"]
    assert list(sentences(text)) == expected


# -- the whole tree ----------------------------------------------------------------------------------------------


def test_every_claim_about_vllm_carries_a_fact_or_is_listed() -> None:
    found = list(shipped_sentences())
    assert len(found) > 2000
    missing = unlisted_claims(iter(found), listed())
    assert not missing, (
        "sentences that say what vLLM does without a fact (state it through {fact:KEY} or a marker, or list it "
        "in tests/claims.toml with the reason it is not a claim about vLLM):\n" + "\n".join(missing)
    )


def test_every_listed_sentence_is_still_shipped() -> None:
    present = {s.key for s, _stated in shipped_sentences()}
    gone = [f"{where}: {text}" for where, text in listed() if (where, text) not in present]
    assert not gone, "tests/claims.toml lists sentences no longer shipped (remove them):\n" + "\n".join(gone)
