"""The live probe, run by `vllm_scaffold.doctor.live.probe` in a fresh interpreter:
`python -m vllm_scaffold.doctor.live.probe_script IN OUT`.

It imports the standard library, vLLM, its own modules under `script/`, the group names of
vllm_scaffold.doctor.reading.installed and the code registry (which import nothing else of the tool); the only
plugin package added to this interpreter is the one under test, installed privately and put on PYTHONPATH.
Mode "imports" (script/imports.py) imports the package's entry-point modules before anything else and reports
what that costs (torch, CUDA initialisation). Mode "registry" (here) imports vLLM's registries, then loads and
calls the package's plugins and every other installed general plugin one at a time, diffing the registries
around each call and checking each loaded object (script/objects.py). Findings go to OUT as JSON.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.metadata
import json
import re
import sys

from vllm_scaffold.doctor.live.script.common import describe, findings, report, where
from vllm_scaffold.doctor.live.script.imports import probe_extension_imports, probe_imports
from vllm_scaffold.doctor.live.script.objects import (
    check_endpoint,
    check_kernels,
    check_logits_processor,
    check_quantization,
    load,
    object_fits,
)
from vllm_scaffold.doctor.reading.installed import ENDPOINT, GENERAL, LOGITS, STAT_LOGGER
from vllm_scaffold.vllm_facts import facts, linear_kernels

# --- mode "registry": what the plugins register ------------------------------------------------------------------


class Registries:
    """vLLM's per-process registries, captured, diffed and restored around each plugin call."""

    def __init__(self, apis: list[str]) -> None:
        """Imports only the registries the package's source can reach (by the register_* names it calls)."""
        self.dicts: dict[str, dict] = {}
        self.lists: dict[str, list] = {}
        self.kernels: dict[str, dict] = {}
        if "register_backend" in apis:
            from vllm.v1.attention.backends import registry as attention

            self.dicts["attention"] = attention._ATTN_OVERRIDES
            self.dicts["mamba_attention"] = attention._MAMBA_ATTN_OVERRIDES
        if "register_quantization_config" in apis:
            import vllm.model_executor.layers.quantization as quant

            self.dicts["quantization"] = quant._CUSTOMIZED_METHOD_TO_QUANT_CONFIG
            self.lists["quantization_methods"] = quant.QUANTIZATION_METHODS
        if "register_oot" in apis:
            from vllm.model_executor import custom_op

            self.dicts["custom_op"] = custom_op.op_registry_oot
        if "register_connector" in apis:
            from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory

            self.dicts["kv_connector"] = KVConnectorFactory._registry
        if "register_spec" in apis:
            from vllm.v1.kv_offload.factory import OffloadingSpecFactory

            self.dicts["offloading_spec"] = OffloadingSpecFactory._registry
        if "register_model" in apis:
            from vllm.model_executor.models.registry import ModelRegistry

            self.dicts["model"] = ModelRegistry.models
        if "register_linear_kernel" in apis:
            import vllm
            import vllm.model_executor.kernels.linear as linear

            accepted = linear_kernels.kinds(vllm.__version__)
            self.kernels = {kind: getattr(linear, linear_kernels.table(kind)) for kind in accepted}

    def capture(self) -> dict:
        return {
            "dicts": {name: dict(d) for name, d in self.dicts.items()},
            "lists": {name: list(values) for name, values in self.lists.items()},
            "kernels": {kind: {p: list(v) for p, v in d.items()} for kind, d in self.kernels.items()},
        }

    def restore(self, state: dict) -> None:
        for name, d in self.dicts.items():
            d.clear()
            d.update(state["dicts"][name])
        for name, values in self.lists.items():
            values[:] = state["lists"][name]
        for kind, d in self.kernels.items():
            d.clear()
            d.update({p: list(v) for p, v in state["kernels"][kind].items()})

    @staticmethod
    def diff(before: dict, after: dict) -> dict[str, dict]:
        """registry -> {key: value} for entries added or replaced; kernels: (kind, platform) -> [classes]."""
        changed: dict[str, dict] = {}
        for name, entries in after["dicts"].items():
            old = before["dicts"][name]
            new = {k: v for k, v in entries.items() if k not in old or old[k] is not v}
            if new:
                changed[name] = new
        for kind, platforms in after["kernels"].items():
            for platform, kernels in platforms.items():
                old = before["kernels"][kind].get(platform, [])
                if len(kernels) > len(old):
                    changed.setdefault("kernels", {})[(kind, platform)] = kernels[len(old) :]
        return changed


def key_name(key: object) -> str:
    return getattr(key, "name", None) or str(key)


def summary(changes: dict[str, dict]) -> str:
    parts = []
    for registry, entries in changes.items():
        if registry == "kernels":
            parts += [f"{k[0]} kernel {c.__name__}" for k, classes in entries.items() for c in classes]
        else:
            parts += [f"{registry} {key_name(k)}" for k in entries]
    return ", ".join(parts)


def call_counted(registries: Registries, function) -> tuple[dict, BaseException | None]:
    before = registries.capture()
    try:
        function()
        failure = None
    except BaseException as error:  # noqa: BLE001 - vLLM does not guard general plugins: anything is fatal
        failure = error
    return Registries.diff(before, registries.capture()), failure


def vllm_attributes() -> dict[str, int]:
    """id() of every module-level object and class attribute of the vllm modules loaded now, by dotted name:
    what a monkeypatch replaces."""
    found: dict[str, int] = {}
    for name, module in list(sys.modules.items()):
        if not (name == "vllm" or name.startswith("vllm.")) or module is None:
            continue
        for attribute, value in list(vars(module).items()):
            found[f"{name}.{attribute}"] = id(value)
            if isinstance(value, type) and value.__module__ == name:
                for member, inner in list(vars(value).items()):
                    found[f"{name}.{attribute}.{member}"] = id(inner)
    return found


def replaced_again(before: dict[str, int], after: dict[str, int]) -> list[str]:
    """The attributes present before that now hold another object."""
    return sorted(name for name, identity in before.items() if after.get(name, identity) != identity)


CONFLICTS = {
    "attention": ("attention-backend-conflict", "attention backend {key}"),
    "mamba_attention": ("attention-backend-conflict", "mamba attention backend {key}"),
    "custom_op": ("custom-op-conflict", "the CustomOp replacement for {key}"),
    "kv_connector": ("kv-connector-name-taken", "KV connector name {key}"),
    "offloading_spec": ("offloading-spec-name-taken", "KV offloading spec name {key}"),
}
CONFLICT_FIX = {
    "attention-backend-conflict": "select one package (uninstall the other, or exclude its general plugin "
    "from VLLM_PLUGINS); register under a new upper-case name instead of a shared member",
    "custom-op-conflict": "keep one plugin that replaces the op: uninstall the other, or exclude its general plugin "
    "from VLLM_PLUGINS",
    "kv-connector-name-taken": "register the connector under a name no other installed plugin uses",
    "offloading-spec-name-taken": "register the spec under a name no other installed plugin uses, or select it "
    "with spec_module_path in kv_connector_extra_config instead of registering it",
}


# The fact that says what a second registration of a name does in each registry: the attention overrides keep the
# last one; the others raise, and the general plugin that makes the second registration stops the process.
SECOND_REGISTRATION = {
    "attention": "attention-override-overwrites",
    "mamba_attention": "attention-override-overwrites",
    "custom_op": "custom-op-duplicate-asserts",
    "kv_connector": "kv-connector-duplicate-raises",
    "offloading_spec": "offloading-spec-duplicate-raises",
}


def conflict_outcome(registry: str) -> str:
    """What vLLM does when two installed general plugins register one name in `registry`."""
    second = facts.fact(SECOND_REGISTRATION[registry]).text()
    if registry in ("attention", "mamba_attention"):
        return f"{second} {facts.fact('general-plugins-discovery-order').text()}"
    return f"{second} {facts.fact('general-plugin-unguarded').text()}"


def check_conflicts(own_changes: dict, registries: Registries, baseline: dict, others: list[dict]) -> None:
    if not set(own_changes) & set(CONFLICTS):
        return  # nothing another plugin could collide with: do not pay for loading them
    for ep in others:
        registries.restore(baseline)
        before = registries.capture()
        try:
            function = load(ep)
            function()
        except BaseException:  # noqa: BLE001,S112 - another package's failure is its own doctor's business
            pass
        theirs = Registries.diff(before, registries.capture())
        for registry, (code, label) in CONFLICTS.items():
            for key in set(own_changes.get(registry, {})) & set(theirs.get(registry, {})):
                report(
                    code,
                    label.format(key=key_name(key)),
                    f"{label.format(key=key_name(key))} is registered by this package and by {ep['dist']} "
                    f"(general plugin {ep['name']}): {conflict_outcome(registry)}",
                    CONFLICT_FIX[code],
                )
    registries.restore(baseline)


def probe_registry(own: list[dict[str, str]], others: list[dict[str, str]], apis: list[str]) -> None:
    registries = Registries(apis)
    baseline = registries.capture()
    objects = {}
    for ep in own:
        try:
            objects[ep["name"], ep["group"]] = load(ep)
        except AttributeError as error:
            report(
                "ep-target-missing",
                where(ep),
                f"the module imports but has no '{ep['value'].partition(':')[2]}' ({describe(error)})",
                "point the entry point at the function or class that exists",
            )
        except BaseException:  # noqa: BLE001,S112 - import failures were reported by the imports probe
            continue
    for (name, group), obj in objects.items():
        ep = next(e for e in own if e["name"] == name and e["group"] == group)
        problem = object_fits(ep, obj)
        if problem:
            report(
                "ep-object-mismatch",
                where(ep),
                f"the object does not fit {group}: {problem}",
                {
                    STAT_LOGGER: "point the entry point at the StatLoggerBase subclass itself",
                    LOGITS: "point the entry point at the LogitsProcessor subclass",
                }.get(group, "point the entry point at a function (or class) that takes no arguments"),
            )
        elif group == LOGITS:
            check_logits_processor(ep, obj)
        elif group == ENDPOINT:
            check_endpoint(ep, obj)
    own_changes = Registries.diff(baseline, registries.capture())  # registrations made at import
    for (name, group), obj in objects.items():
        if group != GENERAL or object_fits({"group": group}, obj):
            continue
        ep = next(e for e in own if e["name"] == name and e["group"] == group)
        first, failure = call_counted(registries, obj)
        for registry, entries in first.items():
            own_changes.setdefault(registry, {}).update(entries)
        if failure is not None:
            report(
                "general-plugin-raises",
                where(ep),
                f"calling it raises {describe(failure)}; vLLM calls general plugins unguarded, so every vLLM "
                "process dies at startup",
                "catch what can fail inside the function (or fix it); log and return instead of raising",
            )
            continue
        patched = vllm_attributes()
        second, failure = call_counted(registries, obj)
        rewrapped = replaced_again(patched, vllm_attributes()) if failure is None else []
        if failure is not None or second or rewrapped:
            if failure is not None:
                what = f"raises {describe(failure)}"
            elif second:
                what = f"registers again: {summary(second)}"
            else:
                shown = ", ".join(rewrapped[:4]) + (f" (+{len(rewrapped) - 4} more)" if len(rewrapped) > 4 else "")
                what = (
                    f"replaces {shown} again: each call wraps the replacement the call before installed, so the "
                    "patch runs once per call, and a wrapper that reaches the original through an attribute it "
                    "set itself calls itself until RecursionError"
                )
            report(
                "general-plugin-not-idempotent",
                where(ep),
                f"called a second time in the same process it {what}. "
                + facts.fact("general-plugins-once-per-process").text(),
                "guard the body with a module-level flag set at its first line, as generated plugins do",
            )
    for name, config_cls in own_changes.get("quantization", {}).items():
        check_quantization(name, config_cls)
    check_kernels(own_changes)
    check_conflicts(own_changes, registries, baseline, others)


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        request = json.load(handle)
    own = request["own"]
    if request["mode"] == "imports":
        probe_imports(own)
        probe_extension_imports(request.get("extensions", []))
    else:
        own_dist = re.sub(r"[-_.]+", "-", request["dist"]).lower()
        others = []
        for dist in importlib.metadata.distributions():
            name = dist.metadata["Name"] or "?"
            if re.sub(r"[-_.]+", "-", name).lower() == own_dist:
                continue
            others += [
                {"dist": name, "group": e.group, "name": e.name, "value": e.value}
                for e in dist.entry_points
                if e.group == GENERAL
            ]
        unique = {(o["dist"], o["name"]): o for o in others}
        probe_registry(own, list(unique.values()), request["apis"])
    with open(sys.argv[2], "w", encoding="utf-8") as handle:
        json.dump(findings, handle)


if __name__ == "__main__":
    main()
