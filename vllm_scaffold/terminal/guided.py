"""What `new` and `add` ask on a terminal when the command line leaves SEAM or NAME out.

Every answer is checked by the same code that checks the command line, so a NAME refused here is one
the command would refuse, and the reason is shown before the question comes again.
"""

from __future__ import annotations

from pathlib import Path

from vllm_scaffold.catalog import Seam, load_catalog, templated_seam
from vllm_scaffold.generate.component import check_component_name
from vllm_scaffold.generate.scaffold import package_destination
from vllm_scaffold.project import Project
from vllm_scaffold.terminal import prompts
from vllm_scaffold.terminal.seam_picker import pick_seam


def new_arguments(seam: str | None, dest: Path | None) -> tuple[str, str]:
    """SEAM (asked unless given) and NAME (asked) for `new`."""
    chosen = templated_seam(seam) if seam else _pick("Which seam should the new package plug into?", {})
    example = chosen.example or "my_plugin"
    name = prompts.ask_text(
        f"Package name (its import name, e.g. {example}):", lambda answer: package_destination(answer, dest)
    )
    return chosen.key, name


def add_arguments(seam: str | None, root: Path | None) -> tuple[str, str]:
    """SEAM (asked unless given) and NAME (asked) for `add`, with the project's components in view."""
    project = Project.load((root or Path()).absolute())
    components = project.components()
    has = _components_line(project, components)
    if seam:
        prompts.say(has)
        chosen = templated_seam(seam)
    else:
        in_use: dict[str, list[str]] = {}
        for component in components:
            in_use.setdefault(str(component.get("seam")), []).append(str(component.get("name")))
        chosen = _pick(
            f"Which seam should the new component of {project.package} plug into?",
            {key: f"this project has: {', '.join(names)}" for key, names in in_use.items()},
            intro=has + (" (* marks their seams)" if components else ""),
        )
    name = prompts.ask_text(
        f"Component name (also its subpackage, e.g. {chosen.name_example or chosen.example}):",
        lambda answer: check_component_name(project, answer, answer),
    )
    return chosen.key, name


def _pick(message: str, notes: dict[str, str], intro: str = "") -> Seam:
    with prompts.asking():
        seam = pick_seam(message, list(load_catalog().values()), notes, intro)
    prompts.say(f"{seam.key} ({seam.title})", first=f"? {message} ")
    return seam


def _components_line(project: Project, components: list[dict]) -> str:
    """What the project's manifest lists, in one sentence."""
    where = f"{project.package} ({project.root})"
    if not components:
        return f"{where} has no vllm-scaffold components yet."
    listed = ", ".join(f"{c.get('name')} ({c.get('seam')}, {c.get('module')})" for c in components)
    return f"{where} has {len(components)} component{'s' if len(components) > 1 else ''}: {listed}"
