"""A plugin class's overrides of vLLM's methods on the release: a signature vLLM cannot call, a member the
release no longer has (or does not have yet), and a member another class of the hierarchy defined before."""

from __future__ import annotations

import ast

from vllm_scaffold.doctor.proof.chain import CLAIM_CALLED
from vllm_scaffold.doctor.reading.callers import CallSite
from vllm_scaffold.doctor.reading.package import Module
from vllm_scaffold.doctor.releases.classes import PluginClasses
from vllm_scaffold.doctor.releases.findings import Findings
from vllm_scaffold.doctor.releases.places import Place, is_dunder
from vllm_scaffold.doctor.releases.signatures import override_problem
from vllm_scaffold.doctor.report.findings import Link
from vllm_scaffold.vllm_facts import Signature, Symbol
from vllm_scaffold.vllm_facts.build import method_signature


def check_overrides(
    classes: PluginClasses, out: Findings, module: Module, node: ast.ClassDef, bases: list[Symbol]
) -> None:
    release = classes.release
    for stmt in node.body:
        if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) or is_dunder(stmt.name):
            continue
        place = Place.unguarded(module, stmt)
        owner, text = release.find(bases, stmt.name)
        if owner is None:
            _orphaned(classes, out, place, node, stmt.name, bases)
            continue
        _moved(classes, out, place, node, stmt.name, bases)
        if text is not None and not text.startswith("@p"):
            # the plugin's signature with @c / @s, as the index writes vLLM's methods
            base, mine = Signature.parse(text), Signature.parse(method_signature(stmt))
            problem = override_problem(base, mine)
            if not problem:
                continue
            calls = out.callers.calls(f"{module.name}.{node.name}", stmt.name, mine, base)
            if not calls.reached and not calls.bypassed:
                continue
            out.report(
                "vllm-override-signature",
                place,
                f"{node.name}.{stmt.name} overrides {owner.name}.{stmt.name}"
                f"{Signature.parse(text).text()} of {release.label}: {problem}",
                f"take the parameters {owner.name}.{stmt.name} has in this release",
                () if calls.reached else (_bypassed(owner.name, stmt.name, calls.bypassed),),
            )


def _bypassed(owner: str, method: str, sites: tuple[CallSite, ...]) -> Link:
    """The unproven link of an override whose failing calls in vLLM all sit in code the plugin replaces."""
    where = ", ".join(site.where for site in sites[:2])
    more = f" and {len(sites) - 2} more" if len(sites) > 2 else ""
    return Link(
        CLAIM_CALLED,
        None,
        f"vLLM's calls of {owner}.{method} that it rejects ({where}{more}) run only from code the plugin's own "
        "runner, override or patch replaces",
    )


def _orphaned(
    classes: PluginClasses, out: Findings, place: Place, node: ast.ClassDef, member: str, bases: list[Symbol]
) -> None:
    release = classes.release
    if not all(classes.index.mro(base)[1] for base in bases):
        return  # a base outside vLLM may define it
    for other in release.others:
        for base in bases:
            there = other.resolve(base.qualname)
            if there.kind == "class" and other.find_member(there, member)[0] is not None:
                newer = release.is_newer(other)
                code = "vllm-override-not-yet" if newer else "vllm-override-orphaned"
                when = f"added in {other.version}" if newer else f"still there in {other.version}"
                out.report(
                    code,
                    place,
                    f"{node.name}.{member} overrides {base.name}.{member}, which {release.label} does not have "
                    f"({when}): vLLM {classes.index.version} never calls it",
                    "move what it does to where this release calls it"
                    if not newer
                    else "nothing to do if the plugin works without it on this release",
                )
                return


def _moved(
    classes: PluginClasses, out: Findings, place: Place, node: ast.ClassDef, member: str, bases: list[Symbol]
) -> None:
    """The overridden member was defined by another class of the hierarchy in an earlier release."""
    release = classes.release
    for other in release.others:
        if release.is_newer(other):
            continue
        for base in bases:
            owner = classes.index.find_member(base, member)[0]
            there = other.resolve(base.qualname)
            if owner is None or there.kind != "class":
                continue
            previous = other.find_member(there, member)[0]
            if previous is not None and previous.qualname != owner.qualname:
                out.report(
                    "vllm-override-moved",
                    place,
                    f"{node.name}.{member} overrides {owner.name}.{member} in {release.label}; in vLLM "
                    f"{other.version} it overrides {previous.name}.{member}: the override still runs, and "
                    f"super().{member} reaches {owner.name}'s version",
                    f"check that the override does what it did with {previous.name}'s version",
                )
                return
