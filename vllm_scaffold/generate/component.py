"""Adding one seam component to a project: the work `new` and `add` share.

A component is a subpackage of the plugin's import package plus its tests and its doc page, rendered from
`templates/<seam>/`. Around the rendered files the catalog entry decides what else changes: entry points,
a registration call run by the package's general plugin (`vllm_plugin.register`), the manifest entry under
[tool.vllm-scaffold], a row in the README's component table, and an answers file for later re-rendering.
"""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path
from typing import Any

import tomlkit
import yaml

from vllm_scaffold import __version__, harness_requirement, vllm_facts
from vllm_scaffold.catalog import Seam
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.generate import identity, names, pyproject_edit, wiring
from vllm_scaffold.generate.answers import check_answers
from vllm_scaffold.generate.changeset import Changeset
from vllm_scaffold.generate.rendering import Asker, render
from vllm_scaffold.generate.templates import questions
from vllm_scaffold.project import PLUGIN_MODULE, Project

ANSWERS_DIR = ".vllm-scaffold"
REGISTRATIONS = "COMPONENT_REGISTRATIONS"
README_END = "<!-- /vllm-scaffold:components -->"
HARNESS_INSTALL = (
    "test dependency: vllm-scaffold-testing is not on PyPI yet; build its wheel with 'pip wheel --no-deps "
    "--wheel-dir wheels path/to/vllm-scaffold/harness', then pip install -e '.[test]' --find-links wheels"
)


def split_data(data: dict[str, str], *templates: str) -> list[dict[str, str]]:
    """Routes each --data KEY=VALUE to the template that asks KEY, checked against the question's type and choices.

    An unknown KEY is an error, and so is a value the question does not accept (`answers`).
    """
    routed: list[dict[str, str]] = [{} for _ in templates]
    for key, value in data.items():
        owners = [i for i, template in enumerate(templates) if key in questions(template)]
        if not owners:
            known = sorted({q for template in templates for q in questions(template)})
            raise ScaffoldError(
                f"--data key '{key}' is not a question of this template",
                f"valid keys: {', '.join(known) or 'none'}",
            )
        for i in owners:
            routed[i][key] = value
    return [check_answers(template, answers) for template, answers in zip(templates, routed, strict=True)]


def base_context(project: Project, seam: str, name: str, module: str) -> dict[str, Any]:
    return {
        "seam": seam,
        "package": project.package,
        "package_dir": project.package_dir,
        "dist_name": project.dist_name,
        "name": name,
        "module": module,
        "class_prefix": names.class_prefix(name),
        "env_prefix": names.env_prefix(project.package),
        "vllm_range": vllm_range(project),
    }


def vllm_range(project: Project) -> str:
    """The project's declared vLLM range (every verified release when it declares none), checked: the one
    refusal of a range `add`, `update`, `check-update` and `migrate` cannot work with."""
    declared = str(project.manifest.get("vllm", vllm_facts.declared_range()))
    problem = vllm_facts.range_problem(declared)
    if problem:
        raise ScaffoldError(f"pyproject.toml [tool.vllm-scaffold] vllm: {problem}", "fix that value")
    return declared


def seam_facts(seam: Seam) -> dict[str, Any]:
    """The catalog entry as template variables, so docs and notes in generated code say what the catalog says."""
    return {
        "seam_title": seam.title,
        "seam_summary": seam.summary,
        "process_family": seam.process_family,
        "load_timing": seam.load_timing,
        "duplicate_policy": seam.duplicate_policy,
        "selection": list(seam.selection),
        "pitfalls": list(seam.pitfalls),
    }


def render_into(
    changes: Changeset,
    template: str,
    context: dict[str, Any],
    data: dict[str, str],
    *,
    ask: Asker | None = None,
    keep: Path | None = None,
) -> dict[str, Any]:
    """Renders a template in scratch space (into `keep`, left in place, when given) and records its files as
    creations; returns the full answers."""
    with tempfile.TemporaryDirectory(prefix="vllm-scaffold-") as scratch:
        out = keep or Path(scratch) / "out"
        answers = render(template, out, context, data, ask=ask)
        for path in sorted(p for p in out.rglob("*") if p.is_file()):
            changes.create(path.relative_to(out).as_posix(), path.read_text(encoding="utf-8"))
    return answers


def answers_file(changes: Changeset, stem: str, template: str, answers: dict[str, Any]) -> None:
    record = {
        "template": template,
        "scaffold_version": __version__,
        identity.DIGEST_KEY: identity.record_digest(template, answers),
        "answers": dict(sorted(answers.items())),
    }
    changes.create(f"{ANSWERS_DIR}/{stem}.yml", yaml.safe_dump(record, sort_keys=False))


def check_component_name(project: Project, name: str, module: str) -> None:
    """A ScaffoldError when `project` cannot take a component `name` in subpackage `module` (NAME itself, or
    the catalog's module for the seam)."""
    names.check_identifier(name, "NAME")
    names.check_module_path(project.package, module, "NAME")
    if any(component.get("name") == name for component in project.components()):
        raise ScaffoldError(f"the project already has a component named '{name}'", "choose another NAME")
    module_dir = f"{project.package_dir}/{module}"
    if (project.root / module_dir).exists() or (project.root / f"{module_dir}.py").exists():
        raise ScaffoldError(
            f"module '{project.package}.{module}' already exists in {project.root}", "choose another NAME"
        )


def add_component(
    changes: Changeset,
    project: Project,
    seam: Seam,
    name: str,
    data: dict[str, str],
    *,
    module: str,
    ask: Asker | None = None,
) -> dict[str, Any]:
    """Records every creation and edit that adding component `name` of `seam` to `project` implies; returns
    the answers its record holds (the derived names and the template's answers).

    The caller has checked the name (`check_component_name`) and routed `data` to the template (`split_data`).
    """
    assert seam.template is not None
    doc = project.doc
    changes.keys += pyproject_edit.ensure_manifest(doc, project.package, vllm_facts.declared_range())

    context = base_context(project, seam.key, name, module)
    route = wiring.plan(project)
    if not project.has_plugin_module():
        caller = route.new_entry_point[0] if route.new_entry_point else route.through
        render_into(changes, "plugin-module", {**context, "general_plugin": caller}, {})
    if route.new_entry_point:
        changes.keys.append(pyproject_edit.add_entry_point(doc, wiring.PLUGIN_GROUP, *route.new_entry_point))
    if route.edit:
        changes.edit(*route.edit)
    changes.notes += route.notes if seam.registration is not None else _unregistered(seam, route.notes)
    keys, notes = pyproject_edit.add_test_requirement(doc, harness_requirement(seam.harness_extras))
    changes.keys += keys
    changes.notes += notes
    if keys:
        changes.notes.append(HARNESS_INSTALL)
    answers = render_into(changes, seam.template, {**context, **seam_facts(seam)}, data, ask=ask)
    if ask is None:
        changes.notes += defaulted_choices(seam.template, data, answers)
    changes.notes += _name_names_another_op(seam, name, answers)
    _check_single_slots(project, seam, name, answers)
    fields = {**context, **answers}
    answers_file(changes, f"{seam.key}-{name}", seam.template, fields)

    for entry_point in seam.entry_points:
        changes.keys.append(
            pyproject_edit.add_entry_point(
                doc, entry_point.group, entry_point.name.format_map(fields), entry_point.target.format_map(fields)
            )
        )
    component: dict[str, object] = {"seam": seam.key, "name": name, "module": f"{project.package}.{module}"}
    if seam.object:
        component["object"] = seam.object.format_map(fields)
    if seam.parameter:
        component["parameter"] = seam.parameter.format_map(fields)
    if seam.enable:
        component["enable"] = [line.format_map(fields) for line in seam.enable]
    for key in seam.record:
        component[key] = answers[key]
    changes.keys.append(pyproject_edit.add_component(doc, component))
    changes.edit("pyproject.toml", tomlkit.dumps(doc).rstrip("\n") + "\n")

    if seam.registration:
        _add_registration(changes, f"{project.package_dir}/{PLUGIN_MODULE}.py", seam.registration.format_map(fields))
    if (project.root / "README.md").is_file():
        _add_readme_row(changes, seam, name, module, fields)
    return fields


def defaulted_choices(template: str, data: dict[str, str], answers: dict[str, Any]) -> list[str]:
    """A note per question with choices that took its default unasked (`--defaults`, or no terminal): what
    was chosen, and how to choose each other answer. A component's name does not choose for it."""
    from vllm_scaffold.generate.templates import questions

    notes = []
    for key, question in questions(template).items():
        choices = question.get("choices")
        if not choices or key in data or question.get("when", True) is False:
            continue
        offered = [str(value) for value in (choices.values() if isinstance(choices, dict) else choices)]
        others = " or ".join(f"--data {key}={value}" for value in offered if value != str(answers.get(key)))
        notes.append(f"{key}: took the default {answers.get(key)} (another: {others})")
    return notes


def _name_names_another_op(seam: Seam, name: str, answers: dict[str, Any]) -> list[str]:
    """Where a component of a seam that replaces in-tree ops (custom-op) is named after an op it does not
    replace (`fused_rmsnorm` replacing SiluAndMul), a note saying so and how to replace the named one."""
    chosen = str(answers.get("op"))
    squeezed = name.replace("_", "").lower()
    return [
        f"the name '{name}' names {op}, but the component replaces {chosen} (op); to replace {op}, pass --data op={op}"
        for op, facts in seam.ops.items()
        if op != chosen and (op.lower() in squeezed or facts.get("registry_name", "").replace("_", "") in squeezed)
    ]


def _check_single_slots(project: Project, seam: Seam, name: str, answers: dict[str, Any]) -> None:
    """Refuses a second component of `seam` giving an answer that fills one of vLLM's single slots.

    The slot's holder is a component `add` made (its answers file says so) or hand-written code that fills
    it (the registration calls doctor's attention-custom-twice check reads).
    """
    for question, value in seam.single_slot.items():
        if str(answers.get(question)) != value:
            continue
        for holder in _slot_holders(project, seam, question, value):
            raise ScaffoldError(
                f"{seam.title.lower()} {holder} already takes vLLM's single {value} slot in this project, "
                f"and '{name}' would silently replace it",
                f"register '{name}' under a name of its own: --data {question}={name.upper()}",
            )


def _slot_holders(project: Project, seam: Seam, question: str, value: str) -> list[str]:
    """What already fills `seam`'s single slot `value` in the project, each named for the error message."""
    holders = []
    for component in project.components():
        other = component.get("name")
        record = project.root / ANSWERS_DIR / f"{seam.key}-{other}.yml"
        if component.get("seam") != seam.key or not record.is_file():
            continue
        if str(yaml.safe_load(record.read_text(encoding="utf-8"))["answers"].get(question)) == value:
            holders.append(f"'{other}'")
    from vllm_scaffold.doctor.checks.code import SLOT_CLAIMS
    from vllm_scaffold.doctor.reading.package import PluginPackage

    claims = SLOT_CLAIMS.get((seam.key, value))
    if claims is not None:
        package = PluginPackage.load(project.root)
        holders += [f"{target} (registered at {call.where})" for call, target in claims(package)]
    return holders


def _add_registration(changes: Changeset, relpath: str, target: str) -> None:
    """Appends `target` to the COMPONENT_REGISTRATIONS list, leaving it one entry per line with a trailing comma.

    That layout is the one ruff's formatter keeps (the trailing comma holds the list open), so the edited
    module still passes `ruff format --check`; comments inside an already open list survive.
    """
    source = changes.current(relpath)
    node = _registrations_list(source)
    if node is None:
        raise ScaffoldError(
            f"{relpath} has no '{REGISTRATIONS} = [...]' list", f"restore it, or call {target} yourself"
        ) from None
    lines = source.splitlines(keepends=True)
    entry = f'    "{target}",\n'
    assert node.end_lineno is not None and node.end_col_offset is not None
    first, last = node.lineno - 1, node.end_lineno - 1
    if first != last and lines[last].strip() == "]":
        if node.elts and not _has_trailing_comma(lines, node):
            end = node.elts[-1]
            assert end.end_lineno is not None and end.end_col_offset is not None
            row = lines[end.end_lineno - 1]
            lines[end.end_lineno - 1] = row[: end.end_col_offset] + "," + row[end.end_col_offset :]
        lines.insert(last, entry)
    else:  # a list on one line: open it up
        head = lines[first][: node.col_offset]
        tail = lines[last][node.end_col_offset :]
        items = "".join(f"    {ast.get_source_segment(source, item)},\n" for item in node.elts)
        lines[first : last + 1] = [f"{head}[\n{items}{entry}]{tail}"]
    changes.edit(relpath, "".join(lines))
    changes.keys.append(f"{relpath}: {REGISTRATIONS} += {target}")


def _registrations_list(source: str) -> ast.List | None:
    """The list literal assigned to COMPONENT_REGISTRATIONS at module level, if there is one."""
    try:
        module = ast.parse(source)
    except SyntaxError:
        return None
    for statement in module.body:
        if isinstance(statement, ast.AnnAssign | ast.Assign) and isinstance(statement.value, ast.List):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if any(isinstance(target, ast.Name) and target.id == REGISTRATIONS for target in targets):
                return statement.value
    return None


def _has_trailing_comma(lines: list[str], node: ast.List) -> bool:
    end = node.elts[-1]
    assert end.end_lineno is not None and node.end_lineno is not None
    between = "".join(lines[end.end_lineno - 1 : node.end_lineno])[end.end_col_offset :]
    return between.lstrip().startswith(",")


def _add_readme_row(changes: Changeset, seam: Seam, name: str, module: str, fields: dict[str, Any]) -> None:
    text = changes.current("README.md")
    if README_END not in text:
        return
    how = seam.enable[0].format_map(fields) if seam.enable else seam.selection[0]
    row = f"| [`{name}`](docs/{module}.md) | {seam.title} | {seam.process_family} | {how} |\n"
    changes.edit("README.md", text.replace(README_END, row + README_END, 1))


def _unregistered(seam: Seam, notes: list[str]) -> list[str]:
    """The wiring notes for a component that needs no registration (vLLM reaches it through its own entry
    point, or an option names it): the package's general plugin still runs its version check."""
    reached = f"vLLM loads it from its [{seam.group}] entry point" if seam.group else "; ".join(seam.selection)
    kept = [note.replace("registration: through", "version check: through", 1) for note in notes]
    return [*kept, f"registration: none needed: {reached}"]
