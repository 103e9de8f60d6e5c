"""Replacements of vLLM's functions and methods (`Cls.method = fn`, `setattr(module, "f", fn)`), compared with
what they replace on the release: the target must exist, and the replacement must take the arguments vLLM's
own calls of the original pass."""

from __future__ import annotations

import ast

from vllm_scaffold.doctor.reading.callers import CallSite
from vllm_scaffold.doctor.reading.package import Module
from vllm_scaffold.doctor.reading.source import qualified
from vllm_scaffold.doctor.releases.classes import PluginClasses
from vllm_scaffold.doctor.releases.findings import Findings
from vllm_scaffold.doctor.releases.places import Place, is_dunder
from vllm_scaffold.doctor.releases.replacements import Function, functions_by_name, replacement_function, replacements
from vllm_scaffold.doctor.releases.signatures import call_problem, override_problem
from vllm_scaffold.vllm_facts import Signature, Symbol
from vllm_scaffold.vllm_facts.build import method_signature

_MAYBE_ADDED = (
    " (unproven: no indexed release has {label}, so it may be a name the plugin adds for its own callers, which"
    " nothing of the release needs)"
)
_PATCH_FIX = "or manage it as a patch: vllm-scaffold add patch NAME --data target=vllm.module:Qualname"


def check_monkeypatches(classes: PluginClasses, out: Findings, module: Module) -> None:
    release, index = classes.release, classes.index
    table = classes.tables[module.name]
    functions: dict[str, list[Function]] = {}
    for node, owner_expr, attr, value in replacements(module):
        owner = qualified(owner_expr, table) if isinstance(owner_expr, ast.Name | ast.Attribute) else None
        if not owner or owner.split(".")[0] != "vllm" or is_dunder(attr):
            continue
        owner_symbol = index.resolve(owner)
        if owner_symbol.kind not in {"class", "module"}:
            continue
        if not functions:
            functions = functions_by_name(module)
        replacement = replacement_function(value, node, functions)
        if replacement is None:
            continue  # a value (a flag, a setting) or a wrapper's result: nothing to compare
        target = index.resolve(f"{owner}.{attr}")
        place = Place(module, node)
        label = f"{owner}.{attr}"
        if target.kind == "missing":
            elsewhere = release.elsewhere(label)
            # in no indexed release: an attribute the plugin adds for its own callers looks the same
            added = "" if elsewhere or not release.others else _MAYBE_ADDED.format(label=label)
            message = (
                f"the plugin replaces {label}, which {release.label} does not have{elsewhere}: "
                "vLLM never calls the replacement, so what it adds does not happen"
            )
            out.report(
                "monkeypatch-target-missing",
                place,
                message + added,
                f"patch what this release calls instead; {_PATCH_FIX}",
            )
            continue
        original = index.signature(target) if target.kind in {"member", "function"} else None
        if original is None or original.decorator == "p":
            continue
        is_method = target.kind == "member"
        mine = Signature.parse(
            _lambda_signature(replacement) if isinstance(replacement, ast.Lambda) else method_signature(replacement)
        )
        if is_method and original.decorator in {"c", "s"} and not mine.decorator:
            mine = Signature(mine.params, original.decorator)  # wrapped in classmethod()/staticmethod()
        base = original if is_method else Signature.parse("__f," + _signature_text(original))
        theirs = mine if is_method else Signature.parse("__f," + _signature_text(mine))
        problem = override_problem(base, theirs)
        if problem is None:
            continue
        breaking = _breaking_site(out, owner_symbol, attr, theirs.bound(), is_method)
        if breaking is not None:
            site, why = breaking
            out.report(
                "monkeypatch-call-signature",
                place,
                f"the replacement of {label} cannot be called as {release.label} calls the original "
                f"{attr}{original.text()}: at {site.where} {why}: TypeError",
                f"take the parameters {label} has in this release (or *args, **kwargs, handed to the "
                f"original); {_PATCH_FIX}",
            )
        else:
            out.report(
                "monkeypatch-signature-changed",
                place,
                f"the replacement of {label} does not match the original {attr}{original.text()} of "
                f"{release.label}: {problem}",
                f"take the parameters {label} has in this release; {_PATCH_FIX}",
            )


def _breaking_site(
    out: Findings, owner: Symbol, attr: str, replacement: Signature, is_method: bool
) -> tuple[CallSite, str] | None:
    """A call of the original in the installed vLLM that the replacement cannot bind and that surely
    reaches it: `self.attr(...)` written in the patched class or one deriving from it, or, for a module
    function, a call written in its own module. None without the installed vLLM's call sites."""
    sites = out.callers.sites
    if sites is None:
        return None
    index = out.classes.index
    for site in sites.of(attr):
        why = None if site.spread else call_problem(replacement, site.positional, list(site.keywords))
        if why is None:
            continue
        if is_method:
            if not (site.on_self and site.cls):
                continue
            cls = index.resolve(site.cls)
            if cls.kind == "class" and owner.qualname in {c.qualname for c in index.mro(cls)[0]}:
                return site, why
        elif site.module == owner.qualname and not site.on_self and sites.bare(site, attr):
            return site, why
    return None


def _lambda_signature(node: ast.Lambda) -> str:
    args = node.args
    parts = [a.arg for a in [*args.posonlyargs, *args.args]]
    defaults = len(args.defaults)
    if defaults:
        parts[-defaults:] = [p + "=" for p in parts[-defaults:]]
    if args.vararg:
        parts.append("*" + args.vararg.arg)
    elif args.kwonlyargs:
        parts.append("*")
    parts += [a.arg + ("=" if d is not None else "") for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    if args.kwarg:
        parts.append("**" + args.kwarg.arg)
    return ",".join(parts)


def _signature_text(signature: Signature) -> str:
    """The index's text of a signature, without its decorator mark."""
    parts = []
    for p in signature.params:
        prefix = {"varargs": "*", "varkw": "**"}.get(p.kind, "")
        parts.append(prefix + p.name + ("=" if p.has_default else ""))
    kwonly = [i for i, p in enumerate(signature.params) if p.kind == "kwonly"]
    if kwonly and not signature.varargs:
        parts.insert(kwonly[0], "*")
    return ",".join(parts)
