"""What `new` and `add` ask on a terminal when the command line leaves SEAM or NAME out.

Every answer is checked by the same code that checks the command line, so a NAME refused here is one
the command would refuse, and the reason is shown before the question comes again.
"""

from __future__ import annotations

from pathlib import Path

from vllm_scaffold import prompts
from vllm_scaffold.catalog import Seam, load_catalog, templated_seam
from vllm_scaffold.component import check_component_name
from vllm_scaffold.project import Project
from vllm_scaffold.scaffold import package_destination
from vllm_scaffold.seam_picker import pick_seam


def new_arguments(seam: str | None, name: str | None, dest: Path | None) -> tuple[str, str]:
    """SEAM and NAME for `new`: those given, and the others asked."""
    chosen = templated_seam(seam) if seam else _pick("Which seam should the new package plug into?", {})
    if name is None:
        example = chosen.example or "my_plugin"
        name = prompts.ask_text(
            f"Package name (its import name, e.g. {example}):", lambda answer: package_destination(answer, dest)
        )
    return chosen.key, name


def add_arguments(seam: str | None, name: str | None, root: Path | None) -> tuple[str, str]:
    """SEAM and NAME for `add`, after showing the components the project already has."""
    project = Project.load((root or Path()).absolute())
    components = project.components()
    _show_components(project, components)
    if seam:
        chosen = templated_seam(seam)
    else:
        notes: dict[str, list[str]] = {}
        for component in components:
            notes.setdefault(str(component.get("seam")), []).append(str(component.get("name")))
        chosen = _pick(
            f"Which seam should the new component of {project.package} plug into?",
            {key: f"this project has: {', '.join(names)}" for key, names in notes.items()},
        )
    if name is None:
        name = prompts.ask_text(
            "Component name (also its subpackage, e.g. target_token):",
            lambda answer: check_component_name(project, answer, answer),
        )
    return chosen.key, name


def _pick(message: str, notes: dict[str, str]) -> Seam:
    with prompts.asking():
        seam = pick_seam(message, list(load_catalog().values()), notes)
    prompts.say(f"{seam.key} ({seam.title})", first=f"? {message} ")
    return seam


def _show_components(project: Project, components: list[dict]) -> None:
    where = f"{project.package} in {project.root}"
    if not components:
        prompts.say(f"{where} has no vllm-scaffold components yet.")
        return
    prompts.say(f"{where} has {len(components)} component{'s' if len(components) > 1 else ''}:")
    catalog = load_catalog()
    for component in components:
        seam = str(component.get("seam"))
        title = catalog[seam].title if seam in catalog else "unknown seam"
        prompts.say(f"{component.get('name')}: {seam} ({title}), {component.get('module')}", first="  - ", rest="    ")
