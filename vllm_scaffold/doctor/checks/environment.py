"""What goes wrong between the vLLM plugins installed in one environment (`doctor --installed`): two
platforms claiming the machine, two packages on the same registry slot, a VLLM_PLUGINS value that drops one.

Each package is also diagnosed alone; these checks only see what needs two of them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from collections.abc import Mapping

from vllm_scaffold.doctor.reading import installed as vllm_facts
from vllm_scaffold.doctor.reading.package import PluginPackage
from vllm_scaffold.doctor.reading.source import aliases, all_calls, qualified
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.vllm_facts import facts

DETECTION_TIMEOUT_S = 300

# Registry slots two packages cannot share: (api, argument position, keyword) -> what breaks.
_SHARED_NAMES = {
    "register_connector": (0, "name", "env-kv-connector-twice", "KV connector name"),
    "register_quantization_config": (0, "quantization", "env-quantization-twice", "quantization method"),
}


def _claims(packages: list[PluginPackage], api: str, position: int, keyword: str) -> dict[str, list[str]]:
    """Registered name -> "dist (file:line)" of every package that registers it through `api`."""
    found: dict[str, list[str]] = defaultdict(list)
    for package in packages:
        for call in all_calls(package, frozenset({api})):
            name = call.constant(position, keyword)
            if name is not None:
                found[name].append(f"{package.dist_name} ({call.where})")
    return found


def shared_registry_names(packages: list[PluginPackage]) -> list[Finding]:
    findings = []
    for api, (position, keyword, code, what) in _SHARED_NAMES.items():
        for name, owners in sorted(_claims(packages, api, position, keyword).items()):
            dists = {owner.split(" (")[0] for owner in owners}
            if len(dists) < 2:
                continue
            consequence = (
                "the second register_connector raises ValueError in every process, so that plugin's general "
                "plugin fails"
                if code == "env-kv-connector-twice"
                else facts.fact("quant-name-twice-debug").text() + " The plugin loaded last wins"
            )
            findings.append(
                Finding(
                    code,
                    f"{what} '{name}'",
                    f"{len(dists)} installed packages register {what} '{name}': {'; '.join(owners)}; {consequence}",
                    "uninstall one, leave one's general plugin out of VLLM_PLUGINS, or rename one registration",
                )
            )
    return findings


def custom_attention_twice(packages: list[PluginPackage]) -> list[Finding]:
    owners = []
    for package in packages:
        for call in all_calls(package, frozenset({"register_backend"})):
            backend = call.argument(0, "backend")
            name = qualified(backend, aliases(call.module)) if backend is not None else None
            if name is not None and name.endswith(".CUSTOM"):
                owners.append(f"{package.dist_name} ({call.where})")
    if len({owner.split(" (")[0] for owner in owners}) < 2:
        return []
    return [
        Finding(
            "env-custom-attention-twice",
            "AttentionBackendEnum.CUSTOM",
            f"several installed packages register their attention backend as CUSTOM: {'; '.join(owners)}; the "
            "one whose general plugin runs last wins, so --attention-backend CUSTOM selects a backend by "
            "installation order",
            "register all but one under their own upper-case name, or leave the others' general plugins out "
            "of VLLM_PLUGINS",
        )
    ]


def plugins_drops(packages: list[PluginPackage], vllm_plugins: str | None) -> list[Finding]:
    """VLLM_PLUGINS is an allow-list of entry-point names over every filtered group."""
    if vllm_plugins is None:
        return []
    requested = vllm_plugins.split(",")
    findings = []
    for package in packages:
        dropped = [
            ep
            for ep in package.entry_points
            if ep.group in vllm_facts.FILTERED_GROUPS and ep.group != vllm_facts.ENDPOINT and ep.name not in requested
        ]
        if dropped:
            names = ", ".join(f"{ep.name} [{ep.group}]" for ep in dropped)
            findings.append(
                Finding(
                    "env-plugins-drops",
                    f"VLLM_PLUGINS={vllm_plugins!r}",
                    f"{package.dist_name} is installed but VLLM_PLUGINS does not name {names}, so vLLM never loads "
                    "it. " + facts.fact("vllm-plugins-split").text(),
                    f"add {','.join(ep.name for ep in dropped)} to VLLM_PLUGINS, or uninstall {package.dist_name}",
                )
            )
    return findings


_DETECT = """
import json, os
from importlib.metadata import entry_points
allowed = os.environ.get("VLLM_PLUGINS")
claims = {}
for ep in entry_points(group="vllm.platform_plugins"):
    if allowed is not None and ep.name not in allowed.split(","):
        continue
    try:
        claims[ep.name] = repr(ep.load()())
    except Exception as exc:
        claims[ep.name] = f"raised {type(exc).__name__}"
print(json.dumps(claims))
"""


def detected_platforms(environ: Mapping[str, str]) -> dict[str, str]:
    """Entry-point name -> what its detector returned (repr), calling each as vLLM does at start-up, in a
    fresh interpreter with `environ`; {} when that could not run."""
    try:
        completed = subprocess.run(
            [sys.executable, "-c", _DETECT],
            env=dict(environ),
            capture_output=True,
            text=True,
            timeout=DETECTION_TIMEOUT_S,
            check=False,
        )
        return json.loads(completed.stdout.strip().splitlines()[-1]) if completed.returncode == 0 else {}
    except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError):
        return {}


def platforms_conflict(packages: list[PluginPackage], claims: dict[str, str] | None) -> list[Finding]:
    """More than one out-of-tree platform whose detector returns a class path: vLLM refuses to start.
    `claims` is what each detector returned (None: not called)."""
    platforms = [(p.dist_name, ep) for p in packages for ep in p.entry_points_in(vllm_facts.PLATFORM)]
    if len(platforms) < 2:
        return []
    if claims is None:
        listing = "; ".join(f"{dist} ({ep.name} = {ep.value})" for dist, ep in platforms)
        code = "env-platforms-several"
        what = f"{len(platforms)} out-of-tree platforms are installed: {listing} (detectors not run)"
        fix = "keep one platform package per environment, or leave the others out of VLLM_PLUGINS"
    else:
        claiming = [(dist, ep) for dist, ep in platforms if claims.get(ep.name, "None") not in {"None"}]
        claiming = [(dist, ep) for dist, ep in claiming if not claims[ep.name].startswith("raised ")]
        if len(claiming) < 2:
            return []
        names = "; ".join(f"{dist} ({ep.name} returned {claims[ep.name]})" for dist, ep in claiming)
        code = "env-platforms-conflict"
        what = f"on this machine {len(claiming)} platform detectors claim it: {names}"
        fix = "uninstall all but one platform package, or name only one platform plugin in VLLM_PLUGINS"
    return [Finding(code, vllm_facts.PLATFORM, f"{what}. " + facts.fact("platform-one-oot").text(), fix)]
