"""Which component carries a piece of vLLM's code: the answers `triage` and `find` share.

A route is a seam (a component of it, with the `vllm-scaffold add` command and the answers it can infer),
`patch` (the function or method to wrap) or `fork` (why no plugin carries it). Every fact used here is data:
the seams' `covers` in the catalog, the routing file (`catalog/routing/routes.toml`) and the release index.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import cached_property

from vllm_scaffold.catalog import load_catalog
from vllm_scaffold.catalog.routes import Routes, SeamRoute, load_routes
from vllm_scaffold.vllm_facts import ReleaseIndex, Symbol

PATCH = "patch"
FORK = "fork"
# A setting a plugin reads from `--additional-config` instead of a new engine argument: no component, no command.
SETTING = "additional-config"


@dataclass(frozen=True)
class Route:
    """Where a symbol goes: `route` is a seam key, PATCH or FORK; `name` the component's NAME (the patch's
    for PATCH), `answers` the template answers inferred, `target` the patch target (`vllm.mod:Qual`)."""

    route: str
    why: str
    name: str = ""
    answers: tuple[tuple[str, str], ...] = ()
    target: str = ""
    note: str = ""  # what the command cannot say (an answer the template would refuse, an op it lacks)
    joins: bool = False  # names no component of its own (a registration point): joins its seam's component

    @property
    def component(self) -> tuple[str, str] | None:
        """The component or patch this route makes (None for a fork or a setting)."""
        if self.route in {FORK, SETTING}:
            return None
        return (self.route, self.target if self.route == PATCH else self.name)

    def command(self) -> str:
        if self.route in {FORK, SETTING}:
            return ""
        if self.route == PATCH:
            return f"vllm-scaffold add patch {self.name} --data target={self.target}"
        data = "".join(f" --data {key}={value}" for key, value in self.answers)
        return f"vllm-scaffold add {self.route} {self.name}{data}"


def snake(text: str) -> str:
    """`AcmeConnector` -> `acme_connector`, `RMSNorm` -> `rms_norm`, `/acme-x` -> `acme_x`."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", text))
    words = re.sub(r"[^a-z0-9]+", "_", spaced.lower()).strip("_")
    return re.sub(r"^[0-9_]+", "", words)


def strip_suffixes(text: str, suffixes: tuple[str, ...]) -> str:
    changed = True
    while changed:
        changed = False
        for suffix in suffixes:
            if text.endswith(suffix) and len(text) > len(suffix):
                text, changed = text[: -len(suffix)], True
    return text


def component_name(seam: SeamRoute, base: str) -> str:
    """The NAME of a component named after a class or a registered name (its seam's suffixes dropped)."""
    name = snake(strip_suffixes(base, seam.suffixes))
    if name:
        return name
    module = load_catalog()[seam.key].module
    return module or seam.key.replace("-", "_")


def dotted(covered: str) -> str:
    """A catalog `covers` entry (`vllm.mod:Qual`) as a dotted path."""
    return covered.replace(":", ".")


@dataclass
class Router:
    """Routes symbols of one release (`index`; for a fork, the base release overlaid with the fork's
    changed modules, and `release` the base release itself: what vLLM defines without the fork)."""

    index: ReleaseIndex
    routes: Routes = field(default_factory=load_routes)
    release: ReleaseIndex | None = None

    @property
    def base(self) -> ReleaseIndex:
        return self.release or self.index

    def seam_of_class(self, symbol: Symbol) -> tuple[SeamRoute, str] | None:
        """The seam whose base (or covered) classes `symbol` is or inherits from, with that base."""
        order, _complete = self.index.mro(symbol)
        ancestors = [f"{cls.module}.{cls.name}" for cls in order]
        for seam in self.routes.seams:
            covered = {dotted(c) for c in load_catalog()[seam.key].covers}
            for ancestor in ancestors:
                if ancestor in seam.bases or ancestor in covered:
                    return seam, ancestor
        return None

    def covering_seam(self, symbol: str) -> SeamRoute | None:
        """The seam whose `covers` names the function or method `symbol` itself."""
        for seam in self.routes.seams:
            if symbol in {dotted(c) for c in load_catalog()[seam.key].covers}:
                return seam
        return None

    def extending_seam(self, owner: str, method: str) -> SeamRoute | None:
        """The seam whose `extends` classes the release's class `owner` is or inherits from, when neither
        `owner` nor any of its bases defines `method` in the release (vLLM refuses an extension whose names
        the class already has)."""
        symbol = self.base.resolve(owner)
        if symbol.kind != "class" or self.base.find_member(symbol, method)[0] is not None:
            return None
        ancestors = {f"{cls.module}.{cls.name}" for cls in self.base.mro(symbol)[0]}
        return next((seam for seam in self.routes.seams if ancestors & set(seam.extends)), None)

    def registering_seam(self, symbol: str) -> SeamRoute | None:
        """The seam one of whose in-tree registration points `symbol` is (or lies under)."""
        for seam in self.routes.seams:
            if any(symbol == r or symbol.startswith(r + ".") for r in seam.registers):
                return seam
        return None

    def class_answers(self, seam: SeamRoute, symbol: Symbol) -> list[tuple[str, str]]:
        """The answers `seam` takes for a class of these ancestors (`base_answers`)."""
        ancestors = [f"{cls.module}.{cls.name}" for cls in self.index.mro(symbol)[0]]
        return [item for base in ancestors for item in seam.base_answers.get(base, {}).items()]

    def seam_route(
        self, seam: SeamRoute, why: str, *, cls: str = "", answer: str = "", joins: bool = False,
        symbol: Symbol | None = None,
    ) -> Route:  # fmt: skip
        """The component route of `seam`, named after its registered name `answer` or its class `cls`
        (`symbol`, when given, for the answers its bases imply)."""
        answers: list[tuple[str, str]] = self.class_answers(seam, symbol) if symbol is not None else []
        note = ""
        if answer and seam.answer:
            problem = self.answer_problem(seam, answer)
            if problem:
                note = problem
            else:
                answers.append((seam.answer, answer))
        base = answer if seam.name == "answer" and answer else cls or answer
        if seam.class_is_answer and not answer and cls:
            note = self.answer_problem(seam, cls) or note
            answers = [] if note else [(seam.answer, cls)]
        name = component_name(seam, base) if base else component_name(seam, "")
        return Route(seam.key, why, name, tuple(answers), note=note, joins=joins)

    def answer_problem(self, seam: SeamRoute, answer: str) -> str:
        """Why the template would refuse `answer` ("" when it takes it): the facts its validators check."""
        catalog = load_catalog()[seam.key]
        if seam.class_is_answer and catalog.ops and answer not in catalog.ops:
            offered = ", ".join(catalog.ops)
            return (
                f"the template replaces {offered}; for {answer}, register a subclass with "
                f"@{answer}.register_oot in the generated layer module"
            )
        if seam.answer_not_under:
            first = answer.strip("/").split("/")[0]
            taken = {
                path.split(" ", 1)[-1].strip("/").split("/")[0] for path in self.index.registry(seam.answer_not_under)
            }
            if first in taken:
                return (
                    f"/{first} is a path vLLM's server uses; the template puts a plugin's routes under a prefix "
                    "of its own"
                )
        return ""

    def patch_route(self, module: str, qualname: str, kind: str) -> Route:
        why = self.routes.reason("patch", kind=kind)
        return Route(PATCH, why, name=snake(qualname.replace(".", "_")), target=f"{module}:{qualname}")

    def fork_route(self, why: str) -> Route:
        return Route(FORK, why)

    def may_mean(self, user: str, module: str, name: str) -> bool:
        """Whether code of the module `user` that says `name` may mean `module`'s `name`: yes in `module` itself,
        no where `user` binds `name` to something else (its own `logger`, or one imported from elsewhere)."""
        if user == module:
            return True
        entry = self.index.modules.get(user, {})
        imported = entry.get("i", {})
        if name in imported:  # imported from `module`, or from a package above it that re-exports it
            source = imported[name].removesuffix(f".{name}")
            return imported[name].endswith(f".{name}") and (module == source or module.startswith(f"{source}."))
        return not any(name in entry.get(kind, ()) for kind in ("c", "f", "n"))

    def importers(self, module: str, name: str) -> list[str]:
        """Modules of the release that copy `module.name` at import (`from module import name`)."""
        return self._importers.get(f"{module}.{name}", [])

    @cached_property
    def _importers(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for importer, entry in sorted(self.index.modules.items()):
            for target in set(entry.get("i", {}).values()):
                found.setdefault(target, []).append(importer)
        return found

    def registration_in(self, node: ast.AST) -> tuple[SeamRoute, str] | None:
        """A registration call or decorator of a seam in `node`, with the name it registers."""
        found = self.registrations_in(node)
        return found[0] if found else None

    def registrations_in(self, node: ast.AST) -> list[tuple[SeamRoute, str]]:
        """The seams the first registration call or decorator in `node` may be, each with the name it
        registers: one, unless the call is made on no named registry and several seams have one of that name."""
        for inner in ast.walk(node):
            targets: list[ast.expr] = []
            if isinstance(inner, ast.Call):
                targets.append(inner.func)
            if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                targets.extend(d for d in inner.decorator_list if isinstance(d, ast.Attribute | ast.Name))
            for target in targets:
                called = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                owner = target.value if isinstance(target, ast.Attribute) else None
                owner_name = ast.unparse(owner).rsplit(".", 1)[-1] if owner is not None else ""
                found: list[tuple[SeamRoute, str]] = []
                for seam in self.routes.seams:
                    for call in seam.calls:
                        if call.name != called:
                            continue
                        if call.on and owner_name and owner_name != call.on.rsplit(".", 1)[-1]:
                            continue  # the same method name on another registry
                        if call.source == "owner":
                            found.append((seam, owner_name))
                            break
                        arguments = inner.args if isinstance(inner, ast.Call) and inner.func is target else []
                        name = registered_name(arguments[0]) if arguments else ""
                        if name:  # `register_model(arch, target)` with computed names is vLLM's machinery
                            found.append((seam, name))
                            break
                if found:
                    return found
        return []


def registered_name(argument: ast.expr) -> str:
    """The name a registration argument gives: a string, or an enum member's name (`Enum.CUSTOM`)."""
    if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
        return argument.value
    if isinstance(argument, ast.Attribute):
        return argument.attr
    return ""


def new_names(fork: ast.AST, base: ast.AST | None) -> list[str]:
    """Names the fork's version binds or spells that the base's does not, in source order: assigned names
    first (an enum member), then string constants (a dict key, a Literal entry)."""

    def collect(node: ast.AST | None) -> tuple[list[str], list[str]]:
        names: list[str] = []
        strings: list[str] = []
        for inner in ast.walk(node) if node is not None else []:
            if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                names.append(inner.id)
            elif isinstance(inner, ast.Constant) and isinstance(inner.value, str):
                strings.append(inner.value)
        return names, strings

    fork_names, fork_strings = collect(fork)
    base_names, base_strings = collect(base)
    return [n for n in fork_names if n not in base_names] + [s for s in fork_strings if s not in base_strings]


def mentioned(node: ast.AST) -> set[str]:
    """Every name `node` refers to: names, attributes, and the last parts of dotted strings
    (`"vllm.x.acme:AcmeBackend"` mentions `AcmeBackend` and `acme`)."""
    found: set[str] = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            found.add(inner.id)
        elif isinstance(inner, ast.Attribute):
            found.add(inner.attr)
        elif isinstance(inner, ast.Constant) and isinstance(inner.value, str) and len(inner.value) < 300:
            found.update(part for part in re.split(r"[.:]", inner.value) if part.isidentifier())
    return found
