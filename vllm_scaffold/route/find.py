"""`find`: the seam that reaches a piece of vLLM, from a symbol, a file path or plain words; or, when none
does, the smallest route (a patch of which target, else a fork). It reads the catalog, the routing data and a
shipped release index only: no vLLM install is needed.

What `find` can name comes from `CANDIDATE_SOURCES`: each is a function giving `Candidate`s (the seams of the
catalog; any other list of registries the catalog accounts for joins by one more entry there).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from vllm_scaffold.catalog import load_catalog
from vllm_scaffold.catalog.registries import load_registries
from vllm_scaffold.catalog.routes import load_routes
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.route.routing import FORK, PATCH, Router, dotted
from vllm_scaffold.vllm_facts import ReleaseIndex, Symbol
from vllm_scaffold.vllm_facts.symbol_diff import module_name
from vllm_scaffold.wording import a

TEMPLATED = "templated"
EXPLAINED = "explained"
INTERNAL = "internal"


@dataclass(frozen=True)
class Candidate:
    """Something `find` can answer with: a seam or registry, its status, the vLLM symbols and files that
    mark it, and the words it answers to."""

    key: str
    status: str  # templated | explained | internal
    seam: str  # the templated seam that carries it ("" when none)
    title: str
    summary: str
    keywords: tuple[str, ...] = ()
    symbols: tuple[str, ...] = ()  # dotted vLLM symbols (registration functions, base classes)
    files: tuple[str, ...] = ()  # vLLM files or folders (prefixes ending in "/")
    calls: tuple[str, ...] = ()  # names of its registration functions (register_quantization_config)
    api: str = ""  # what a plugin implements or calls (the catalog's `api`)

    def command(self) -> str:
        if self.status == TEMPLATED and self.seam:
            return f"vllm-scaffold new {self.seam} NAME (or add {self.seam} NAME in a plugin project)"
        if self.status == EXPLAINED:
            return f"vllm-scaffold explain {self.key}"
        return ""


class RegistryEntry(Protocol):
    """A registry the catalog accounts for (`key`, `status`, `seam`, `registration`, `source`, `summary`,
    `keywords`): what `registry_candidates` turns into candidates."""

    key: str
    status: str
    seam: str | None
    registration: Iterable[str]
    source: str
    summary: str
    keywords: Iterable[str]


def seam_candidates() -> list[Candidate]:
    """Every catalog seam, with the symbols, files and words the routing data gives it."""
    routes = load_routes()
    found = []
    for seam in load_catalog().values():
        route = routes.seam(seam.key)
        symbols = (*(route.bases + route.registers if route else ()), *(dotted(c) for c in seam.covers))
        found.append(
            Candidate(
                key=seam.key,
                status=TEMPLATED if seam.has_template else EXPLAINED,
                seam=seam.key if seam.has_template else "",
                title=seam.title,
                summary=seam.summary,
                keywords=route.keywords if route else (),
                symbols=tuple(symbols),
                files=route.files if route else (),
                calls=tuple(call.name for call in route.calls) if route else (),
                api=seam.api,
            )
        )
    return found


def registry_candidates(entries: Iterable[RegistryEntry]) -> list[Candidate]:
    """Registries of vLLM the catalog classifies (templated, explained or internal) as candidates."""
    return [
        Candidate(
            key=entry.key,
            status=entry.status,
            seam=entry.seam or "",
            title=getattr(entry, "title", entry.key),
            summary=entry.summary,
            keywords=tuple(entry.keywords),
            symbols=tuple(dotted(s) for s in entry.registration),
            files=(entry.source,) if entry.source else (),
        )
        for entry in entries
    ]


# Where `find`'s candidates come from, in the order they are preferred on a tie.
CANDIDATE_SOURCES: list[Callable[[], Iterable[Candidate]]] = [
    seam_candidates,
    lambda: registry_candidates(load_registries().values()),
]


@dataclass
class Answer:
    query: str
    release: str
    lines: list[str] = field(default_factory=list)
    route: str = ""  # the seam or candidate key, PATCH, FORK, or "" (words nothing matched)
    command: str = ""


def candidates() -> list[Candidate]:
    return [candidate for source in CANDIDATE_SOURCES for candidate in source()]


def find(query: str, index: ReleaseIndex) -> Answer:
    text = query.strip()
    if not text:
        raise ScaffoldError("the query is empty", "pass a vLLM symbol, a file path in vLLM, or a few words")
    if "/" in text or text.endswith(".py"):
        return _file(text, index)
    if re.fullmatch(r"vllm(\.[A-Za-z_]\w*)*(:[A-Za-z_][\w.]*)?", text):
        return _symbol(text, index)
    return _words(text, index)


def _answer(query: str, index: ReleaseIndex, route: str, command: str, lines: list[str]) -> Answer:
    return Answer(query, f"{index.distribution} {index.version}", lines, route, command)


def _candidate_answer(query: str, index: ReleaseIndex, candidate: Candidate, why: str) -> Answer:
    """The answer that names one candidate, with why it answers `query`."""
    return _answer(query, index, candidate.key, candidate.command(), _candidate_lines(candidate, why))


def _candidate_lines(candidate: Candidate, why: str) -> list[str]:
    status = (
        {TEMPLATED: "templated seam", EXPLAINED: "explained, no template yet", INTERNAL: "internal"}[candidate.status]
        if candidate.status in {TEMPLATED, EXPLAINED, INTERNAL}
        else candidate.status
    )
    lines = [f"{candidate.key} ({status}): {candidate.title}", f"  {candidate.summary}", f"  why: {why}"]
    if candidate.command():
        lines.append(f"  command: {candidate.command()}")
    elif candidate.status == INTERNAL:
        lines.append(
            "  a plugin should not use it: the smallest route is a patch of the function you change, else a fork"
        )
    return lines


def _by_symbol(symbol: str) -> Candidate | None:
    last = symbol.rsplit(".", 1)[-1]
    for candidate in candidates():
        if any(symbol == s or symbol.startswith(s + ".") for s in candidate.symbols) or last in candidate.calls:
            return candidate
    return None


def _by_file(path: str) -> Candidate | None:
    for candidate in candidates():
        if any(path == f or (f.endswith("/") and path.startswith(f)) for f in candidate.files):
            return candidate
    return None


def _seam_candidate(key: str) -> Candidate:
    return next(c for c in candidates() if c.key == key)


def _symbol(text: str, index: ReleaseIndex) -> Answer:
    qualname = text.replace(":", ".")
    symbol = index.resolve(qualname)
    if not symbol.exists:
        raise ScaffoldError(
            f"{text} is not in vLLM {index.version}",
            "check the dotted path (vllm.module.Class.method), or ask in words: vllm-scaffold find 'kv cache offload'",
        )
    if symbol.kind == "module":
        return _module(text, symbol.module, index)
    router = Router(index)
    defined = f"{symbol.module}.{symbol.name}" if symbol.name else qualname
    candidate = _by_symbol(qualname) or _by_symbol(defined)
    if candidate is not None:
        return _candidate_answer(text, index, candidate, f"{defined} is where it registers or what it builds on")
    if symbol.kind in {"class", "member"}:
        owner = index.resolve(f"{symbol.module}.{symbol.name.split('.')[0]}")
        found = router.seam_of_class(owner) if owner.kind == "class" else None
        if found is not None:
            seam, base = found
            why = f"{owner.qualname} is {a(base.rsplit('.', 1)[-1])}: {a(seam.key)} component replaces or subclasses it"
            candidate = _seam_candidate(seam.key)
            return _candidate_answer(text, index, candidate, why)
    rule = load_routes().fork_rule(symbol=defined, kind={"member": "method"}.get(symbol.kind, symbol.kind))
    if rule is not None:
        return _answer(text, index, FORK, "", [f"no seam reaches {defined}: it stays a fork", f"  why: {rule.why}"])
    by_file = _by_file(symbol.module.replace(".", "/") + ".py") or _by_file(symbol.module.replace(".", "/") + "/")
    if by_file is not None:
        lines = _candidate_lines(by_file, f"{symbol.module} is where vLLM keeps its own {by_file.title.lower()} code")
        if symbol.kind in {"function", "member"} and index.signature(symbol) is not None:
            patch = router.patch_route(symbol.module, symbol.name, "method" if symbol.kind == "member" else "function")
            lines.append(f"  to change only this {symbol.kind.replace('member', 'method')}: {patch.command()}")
        return _answer(text, index, by_file.key, by_file.command(), lines)
    if symbol.kind in {"function", "member"}:
        if symbol.kind == "member" and index.signature(symbol) is None:
            why = "an attribute, not a function: a patch wraps functions and methods, so changing it stays a fork"
            return _answer(text, index, FORK, "", [f"no seam reaches {defined}", f"  why: {why}"])
        route = router.patch_route(symbol.module, symbol.name, "method" if symbol.kind == "member" else "function")
        lines = [
            f"no seam reaches {defined}: the smallest route is a patch",
            f"  why: {route.why}",
            f"  command: {route.command()}",
        ]
        return _answer(text, index, PATCH, route.command(), lines)
    if symbol.kind == "class":
        return _answer(text, index, PATCH, "", _class_patch_lines(defined, symbol, index))
    if symbol.kind == "value":
        module, _, name = qualname.rpartition(".")
        importers = router.importers(module, name)
        if importers:
            why = load_routes().reason("copied_at_import", users=", ".join(importers[:3]), module=module, name=name)
            return _answer(text, index, FORK, "", [f"no seam reaches {qualname}: it stays a fork", f"  why: {why}"])
        why = (
            load_routes().reason("settable", module=module, name=name)
            + f" (unless {module} reads it while it is imported: then it stays a fork)"
        )
        candidate = _seam_candidate(load_routes().roles["process_wide"])
        return _candidate_answer(text, index, candidate, why)
    raise ScaffoldError(
        f"vLLM {index.version} defines {text} in a way its index cannot follow (a name built at run time)",
        "ask for the module or class that defines it",
    )


def _class_patch_lines(defined: str, symbol: Symbol, index: ReleaseIndex) -> list[str]:
    methods = sorted(index.class_entry(symbol).get("m", {}))
    public = [m for m in methods if not m.startswith("_")] or methods
    target = f"{symbol.module}:{symbol.name}.METHOD"
    return [
        f"no seam replaces {defined}: the smallest route is a patch of the method you change",
        f"  command: vllm-scaffold add patch NAME --data target={target}",
        f"  methods: {', '.join(public[:12])}{' ...' if len(public) > 12 else ''}",
    ]


def _file(text: str, index: ReleaseIndex) -> Answer:
    path = text.removeprefix("./")
    if not path.startswith("vllm/"):
        rule = load_routes().fork_rule(path=path)
        if rule is not None:
            return _answer(
                text,
                index,
                FORK,
                "",
                [f"{path} is outside vLLM's Python package: a change there stays a fork", f"  why: {rule.why}"],
            )
        raise ScaffoldError(
            f"{path} is not inside vLLM's package",
            "give a path from the repository root, such as vllm/v1/worker/gpu_model_runner.py",
        )
    module = module_name(path if path.endswith(".py") else path.rstrip("/") + "/__init__.py")
    if not index.has_module(module):
        raise ScaffoldError(
            f"{path} is not a file of vLLM {index.version}",
            "check the path (from the repository root, e.g. vllm/v1/worker/gpu_model_runner.py)",
        )
    return _module(text, module, index, path)


def _module(text: str, module: str, index: ReleaseIndex, path: str = "") -> Answer:
    path = path or module.replace(".", "/") + ".py"
    candidate = _by_file(path)
    if candidate is not None:
        why = f"{path} is where vLLM keeps its own {candidate.title.lower()} code"
        return _candidate_answer(text, index, candidate, why)
    router = Router(index)
    entry = index.modules.get(module, {})
    for name in entry.get("c", {}):
        found = router.seam_of_class(Symbol("class", f"{module}.{name}", module=module, name=name))
        if found is not None:
            seam, base = found
            candidate = _seam_candidate(seam.key)
            why = f"{module}.{name} is {a(base.rsplit('.', 1)[-1])}: {a(seam.key)} component replaces or subclasses it"
            return _candidate_answer(text, index, candidate, why)
    names = [*entry.get("c", {}), *entry.get("f", {})]
    lines = [
        f"no seam reaches {path}: the smallest route is a patch of the function or method you change",
        f"  command: vllm-scaffold add patch NAME --data target={module}:QUALNAME",
    ]
    if names:
        lines.append(f"  defined there: {', '.join(names[:12])}{' ...' if len(names) > 12 else ''}")
    lines.append(f"  one of them in detail: vllm-scaffold find {module}.NAME")
    return _answer(text, index, PATCH, "", lines)


_STOP = {
    "a",
    "an",
    "the",
    "of",
    "to",
    "in",
    "on",
    "for",
    "and",
    "or",
    "my",
    "own",
    "how",
    "do",
    "i",
    "with",
    "new",
    "add",
    "vllm",
    # words every question about extending vLLM has, which say nothing about which part of it
    "custom",
    "can",
    "write",
    "make",
    "create",
    "implement",
    "change",
    "use",
    "plugin",
    "want",
    "is",
    "it",
    "what",
    "where",
}


def _words_of(text: str) -> list[str]:
    words = [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP]
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words]


def _score(query: list[str], phrase: str, candidate: Candidate) -> tuple[int, dict[str, str]]:
    """How well `candidate` answers the query's words, and where each word that counted was found (word ->
    "vocabulary", "title", "summary" or "api"): a vocabulary phrase the query holds counts most."""
    score = 0
    matched: dict[str, str] = {}
    keywords = [_words_of(k) for k in candidate.keywords]
    title, summary = set(_words_of(candidate.title + " " + candidate.key)), set(_words_of(candidate.summary))
    api = set(_words_of(candidate.api))
    for keyword in keywords:
        if keyword and " ".join(keyword) in phrase:
            score += 4 * len(keyword)
            matched.update((word, "vocabulary") for word in keyword)
    for word in query:
        for points, where, found in (
            (3, "vocabulary", any(word in keyword for keyword in keywords)),
            (2, "title", word in title),
            (1, "summary", word in summary),
            (1, "api", word in api),
        ):
            if found:
                score += points
                matched.setdefault(word, where)
    return score, matched


def _matched_why(matched: dict[str, str], text: str) -> str:
    """The `why:` line of a words answer: which of the query's words matched, and where, as the query wrote them."""
    written = {}
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        written.setdefault(next(iter(_words_of(word)), word), word)
    by_place: dict[str, list[str]] = {}
    for word, where in matched.items():
        by_place.setdefault(where, []).append(f"'{written.get(word, word)}'")
    return "; ".join(f"{', '.join(words)} in its {where}" for where, words in by_place.items())


def _words(text: str, index: ReleaseIndex) -> Answer:
    query = _words_of(text)
    if not query:
        raise ScaffoldError(
            f"'{text}' has no word to search for", "pass a vLLM symbol, a file path in vLLM, or a few words"
        )
    phrase = " ".join(query)
    scored = sorted(
        ((*_score(query, phrase, c), n, c) for n, c in enumerate(candidates())), key=lambda t: (-t[0], t[2])
    )
    best = scored[0][0] if scored else 0
    if best < 3:
        lines = [
            f"no seam or registry answers '{text}'",
            "  the smallest route is a patch of the function you would change (vllm-scaffold find vllm.module.function",
            "  names its target and command), else a fork",
        ]
        return _answer(text, index, "", "", lines)
    chosen: dict[str, tuple[Candidate, dict[str, str]]] = {}  # one answer per seam: its best-scoring candidate
    for score, matched, _n, candidate in scored:
        if score >= max(3, best // 2) and len(chosen) < 3:
            chosen.setdefault(candidate.seam or candidate.key, (candidate, matched))
    lines: list[str] = []
    for candidate, matched in chosen.values():
        lines += _candidate_lines(candidate, _matched_why(matched, text))
    first = next(iter(chosen.values()))[0]
    return _answer(text, index, first.key, first.command(), lines)
