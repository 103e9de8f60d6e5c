"""Static checks of what a general plugin or platform detector does besides registering: patched attributes,
changed environment variables, a detector that always claims its platform."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from vllm_scaffold.doctor.checks.target import Target, check
from vllm_scaffold.doctor.reading import installed as vllm_facts
from vllm_scaffold.doctor.reading.context import Context
from vllm_scaffold.doctor.reading.package import DeclaredEntryPoint, Module
from vllm_scaffold.doctor.reading.reach import FunctionNode, entry_point_reach, steps
from vllm_scaffold.doctor.reading.source import (
    aliases,
    function,
    qualified,
)
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.vllm_facts import facts

_SIDE_EFFECT_CALLS = {
    "os.putenv",
    "os.environ.update",
    "os.environ.setdefault",
    "os.environ.pop",
    "os.environ.clear",
    "torch.cuda.init",
    "torch.cuda.set_device",
    "logging.basicConfig",
    "print",
    "subprocess.run",
    "subprocess.check_call",
    "subprocess.check_output",
    "subprocess.Popen",
    "os.system",
}
_ENVIRON_CALLS = {name for name in _SIDE_EFFECT_CALLS if name.startswith(("os.environ", "os.putenv"))}


@dataclass(frozen=True)
class Effect:
    """One change a function makes outside itself ("writes os.environ", "replaces vllm.x.Y.z"), and the calls
    through which the entry point reaches it. A replaced attribute also names its owner and attribute, which
    the message groups by."""

    what: str
    through: str | None = None  # "register() -> helper() at pkg/mod.py:12"; None when the entry point does it
    owner: str | None = None
    attribute: str | None = None

    @classmethod
    def replacing(cls, name: str) -> Effect:
        owner, _, attribute = name.rpartition(".")
        return cls(f"replaces {name}", None, owner, attribute) if " " not in name else cls(f"replaces {name}")

    def reached_through(self, through: str) -> Effect:
        return Effect(self.what, through, self.owner, self.attribute)

    def __str__(self) -> str:
        return self.what if self.through is None else f"{self.what} (through {self.through})"


def _patched(name: str | None) -> bool:
    return name is not None and name.split(".")[0] in {"torch", "vllm"} and "." in name


def _side_effects(module: Module, nodes: Iterable[ast.AST], *, all_kinds: bool) -> list[tuple[Effect, ast.AST]]:
    """What running `nodes` changes outside itself, each with the node that does it: os.environ writes and
    torch/vLLM attributes replaced (monkeypatching); with `all_kinds` also global rebinding, printing,
    processes, files written, CUDA."""
    table = aliases(module)
    effects: list[tuple[Effect, ast.AST]] = []
    for child in nodes:
        if isinstance(child, ast.Global) and all_kinds:
            effects.append((Effect(f"rebinds global {', '.join(child.names)}"), child))
        elif isinstance(child, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for target in child.targets if isinstance(child, ast.Assign) else [child.target]:
                if isinstance(target, ast.Subscript) and qualified(target.value, table) == "os.environ":
                    effects.append((Effect("writes os.environ"), child))
                elif isinstance(target, ast.Attribute) and _patched(name := qualified(target, table)):
                    effects.append((Effect.replacing(name), child))
        elif isinstance(child, ast.Call):
            name = qualified(child.func, table)
            if name in (_SIDE_EFFECT_CALLS if all_kinds else _ENVIRON_CALLS):
                effects.append((Effect(f"calls {name}()"), child))
            elif name == "setattr" and len(child.args) >= 2 and _patched(owner := qualified(child.args[0], table)):
                if isinstance(child.args[1], ast.Constant):
                    effects.append((Effect.replacing(f"{owner}.{child.args[1].value}"), child))
                else:
                    effects.append((Effect(f"replaces attributes of {owner} named at run time (setattr)"), child))
            elif (
                all_kinds
                and name == "open"
                and any(
                    isinstance(a, ast.Constant) and isinstance(a.value, str) and set(a.value) & set("wax+")
                    for a in [*child.args[1:2], *(k.value for k in child.keywords if k.arg == "mode")]
                )
            ):
                effects.append((Effect("opens a file for writing"), child))
    return effects


def _effects_through_calls(
    ctx: Context, module: Module, start: FunctionNode, *, all_kinds: bool
) -> tuple[list[Effect], list[Effect], list[str]]:
    """The side effects of loading and calling the entry point `start`, each saying through which step: those
    of the call (its own and those of every package function it reaches), those of what vLLM's import of its
    module runs (the package modules imported, their import-time code and the functions it calls), and where
    each of the latter is."""
    called: list[Effect] = []
    imported: list[Effect] = []
    places: list[str] = []
    at_load, at_call = entry_point_reach(ctx.package, module, start)
    for reached in at_load:
        for effect, node in _side_effects(reached.module, reached.running(), all_kinds=all_kinds):
            imported.append(effect.reached_through(f"{steps(reached.via)} at {reached.module.where(node)}"))
            places.append(reached.module.where(node))
    for reached in at_call:
        for effect, node in _side_effects(reached.module, reached.running(), all_kinds=all_kinds):
            if len(reached.via) == 1:
                called.append(effect)
            else:
                at = reached.module.where(node) if reached.at_import else reached.where
                called.append(effect.reached_through(f"{steps(reached.via)} at {at}"))
    return list(dict.fromkeys(called)), list(dict.fromkeys(imported)), list(dict.fromkeys(places))


def _entry_point_functions(ctx: Context, group: str) -> Iterator[tuple[DeclaredEntryPoint, Module, FunctionNode]]:
    for ep in ctx.package.entry_points_in(group):
        module = ctx.package.modules.get(ep.module)
        node = function(module, ep.attr or "") if module else None
        if module is not None and node is not None:
            yield ep, module, node


def _side_effect_warnings(
    ctx: Context, group: str, code: str, *, all_kinds: bool, consequence: str, fix: str
) -> Iterator[tuple[DeclaredEntryPoint, Module, FunctionNode, Finding | None]]:
    """Each function an entry point of `group` names, with a `code` warning when it has side effects:
    "<what> <attr>() <effects>: <consequence>"."""
    what = "platform detector" if group == vllm_facts.PLATFORM else "general plugin"
    for ep, module, node in _entry_point_functions(ctx, group):
        called, imported, places = _effects_through_calls(ctx, module, node, all_kinds=all_kinds)
        effects = called + imported
        if not effects:
            yield ep, module, node, None
            continue
        where, subject = module.where(node), f"{what} {ep.attr}()"
        if not called:  # only the import does it: the finding points at the first line that does
            where, subject = places[0], f"importing the {what} {ep.module}:{ep.attr}"
        elif imported:
            subject += ", with the package modules vLLM imports to load it,"
        message = f"{subject} {summarise_effects(effects)}: {consequence}"
        yield ep, module, node, Finding(code, where, message, fix, details=tuple(str(e) for e in effects))


# A side-effects message names at most this many attributes of one owner and this many kinds of change.
NAMES_SHOWN = 4
KINDS_SHOWN = 3


def summarise_effects(effects: list[Effect]) -> str:
    """The effects in a few words: attributes replaced on one owner grouped ("replaces 14 attributes of
    vllm...Scheduler: schedule, ... (+10 more)"), repeats and the calls they are reached through left to the
    finding's details."""
    groups: dict[str, list[str]] = {}
    through = False
    for effect in effects:
        through |= effect.through is not None
        if effect.owner is not None and effect.attribute is not None:
            replaced = groups.setdefault(f"replaces:{effect.owner}", [])
            if effect.attribute not in replaced:
                replaced.append(effect.attribute)
        else:
            groups.setdefault(effect.what, [])
    parts = []
    for key, attributes in groups.items():
        if not key.startswith("replaces:"):
            parts.append(key)
            continue
        owner = key.partition(":")[2]
        if len(attributes) == 1:
            parts.append(f"replaces {owner}.{attributes[0]}")
            continue
        shown = ", ".join(attributes[:NAMES_SHOWN])
        more = f" (+{len(attributes) - NAMES_SHOWN} more)" if len(attributes) > NAMES_SHOWN else ""
        parts.append(f"replaces {len(attributes)} attributes of {owner}: {shown}{more}")
    text = "; ".join(parts[:KINDS_SHOWN])
    if len(parts) > KINDS_SHOWN:
        text += f"; and {len(parts) - KINDS_SHOWN} more"
    if through or len(parts) > KINDS_SHOWN or any(len(a) > NAMES_SHOWN for a in groups.values()):
        text += " (each one, with the calls that reach it, in --json)"
    return text


@check("platform-detector-always-claims", "platform-detector-side-effects")
def platform_detectors(target: Target) -> list[Finding]:
    """vLLM calls every detector once in every process, and the winning one again (facts.toml)."""
    ctx = target.environment
    findings = []
    for ep, module, detector, side_effects in _side_effect_warnings(
        ctx,
        vllm_facts.PLATFORM,
        "platform-detector-side-effects",
        all_kinds=True,
        consequence=facts.fact("platform-detector-calls").text(),
        fix="only probe and return the Platform's dotted path or None; move setup into the Platform class "
        "(check_and_update_config, pre_register_and_update)",
    ):
        findings += [side_effects] if side_effects else []
        if not _can_return_none(detector):
            findings.append(
                Finding(
                    "platform-detector-always-claims",
                    module.where(detector),
                    f"platform detector {ep.attr}() never returns None, so it claims the platform on every "
                    "machine: on a GPU host it replaces CUDA, and next to another out-of-tree platform vLLM "
                    "raises because two platforms are active",
                    "return the Platform's dotted path only when the device is present (a device file, a driver "
                    "library, an environment variable), and None otherwise",
                )
            )
    return findings


def _can_return_none(node: FunctionNode) -> bool:
    """Whether the function can return None: `return`, `return None`, a value that may be None, or falling off
    its end. Only a function whose every exit returns a non-None literal or name-free expression claims always."""
    returns = [n for n in ast.walk(node) if isinstance(n, ast.Return)]
    for ret in returns:
        value = ret.value
        if value is None or not isinstance(value, (ast.Constant, ast.JoinedStr, ast.BinOp)):
            return True  # a bare return, a variable, a call or a conditional may be None
        if isinstance(value, ast.Constant) and value.value is None:
            return True
    return _falls_through(node.body)


def _falls_through(body: list[ast.stmt]) -> bool:
    if not body:
        return True
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return False
    if isinstance(last, ast.If):
        return _falls_through(last.body) or _falls_through(last.orelse)
    if isinstance(last, (ast.Try, ast.TryStar)):
        return _falls_through(last.body + last.orelse) or any(_falls_through(h.body) for h in last.handlers)
    if isinstance(last, (ast.With, ast.AsyncWith)):
        return _falls_through(last.body)
    return True


@check("general-plugin-side-effects")
def general_plugin_side_effects(target: Target) -> list[Finding]:
    """register() runs in every vLLM process: environment writes and monkeypatches there apply everywhere."""
    ctx = target.environment
    found = _side_effect_warnings(
        ctx,
        vllm_facts.GENERAL,
        "general-plugin-side-effects",
        all_kinds=False,
        consequence=facts.fact("general-plugins-every-process").text()
        + " The change applies there to every model, and a patched vLLM or torch attribute breaks silently when "
        "that attribute is renamed",
        fix="use vLLM's registration APIs; set environment in the launcher or the Platform class; if the patch "
        "is intended, mark it with # doctor: ignore[general-plugin-side-effects]",
    )
    return [finding for *_, finding in found if finding is not None]
