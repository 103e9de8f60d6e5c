"""The live probe, parent side: install the package privately, run probe_script.py in fresh interpreters.

The package is installed with `pip install --no-deps --target` into a temporary directory put first on
PYTHONPATH of the probe processes only (vllm_scaffold_testing.engine.install_privately): nothing is installed
into the environment, and this process's sys.path and environment are left alone. Results are cached by the
package's content, the installed vLLM and the other installed plugins, so a second run is instant.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vllm_scaffold.atomic import write_atomically
from vllm_scaffold.doctor.checks import worker_extension
from vllm_scaffold.doctor.reading.context import Context
from vllm_scaffold.doctor.reading.installed import GROUPS, cache_dir
from vllm_scaffold.doctor.reading.source import all_calls
from vllm_scaffold.doctor.report.codes import REGISTRY
from vllm_scaffold.doctor.report.findings import Finding

SCRIPT = Path(__file__).with_name("probe_script.py")
# What the script runs and reads: its own modules, and the code registry it takes each severity from.
SCRIPT_FILES = (SCRIPT, *sorted((SCRIPT.parent / "script").glob("*.py")), REGISTRY)
PROBE_TIMEOUT_S = 600
# Variables that change what the probe observes; everything else in the environment is passed through.
# (PYTHONPATH counts through the distributions it adds, part of ctx.others.)
_RELEVANT_ENV = ("VLLM_USE_V2_MODEL_RUNNER", "VLLM_DISABLED_KERNELS", "VLLM_TARGET_DEVICE")


class ProbeFailed(RuntimeError):
    """The probe itself could not run (install failed, interpreter crashed): reported, never a finding."""


def _fingerprint(ctx: Context) -> str:
    digest = hashlib.sha256()
    for name in ("pyproject.toml", "setup.py", "setup.cfg"):
        if (ctx.package.root / name).is_file():
            digest.update((ctx.package.root / name).read_bytes())
    digest.update(repr(ctx.package.entry_points).encode())
    for module in sorted(ctx.package.modules.values(), key=lambda m: m.name):
        digest.update(module.name.encode())
        digest.update(module.path.read_bytes())
    digest.update(repr((ctx.vllm, sorted(map(repr, ctx.others)))).encode())
    digest.update(repr([ctx.environ.get(name) for name in _RELEVANT_ENV]).encode())
    for path in SCRIPT_FILES:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:24]


def _probe_environment(ctx: Context, site: Path) -> dict[str, str]:
    from vllm_scaffold_testing.engine import ENGINE_ENV

    env = {**ctx.environ, **ENGINE_ENV}
    env.pop("VLLM_PLUGINS", None)  # the probe loads this package's plugins explicitly, whatever the allow-list
    env["PYTHONPATH"] = os.pathsep.join([str(site), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]])
    return env


def _run(mode: str, ctx: Context, own: list[dict[str, str]], env: dict[str, str], work: Path) -> list[Finding]:
    apis = sorted({call.api for call in all_calls(ctx.package)})
    request = {"mode": mode, "dist": ctx.package.dist_name, "own": own, "apis": apis}
    if mode == "imports":
        request["extensions"] = [f"{e.module.name}:{e.node.name}" for e in worker_extension.extensions(ctx.package)]
    found = run_script(
        "vllm_scaffold.doctor.live.probe_script", f"the {mode} probe", request, env, work, PROBE_TIMEOUT_S
    )
    return [Finding.from_json(item) for item in found]


def run_script(module: str, what: str, request: object, env: dict[str, str], work: Path, timeout: float) -> Any:
    """`python -m module REQUEST RESULT` in `work`, REQUEST holding `request` as JSON; the JSON it writes to RESULT.

    Raises ProbeFailed when the script does not finish in `timeout` seconds or writes nothing.
    """
    name = module.rpartition(".")[2]
    request_file, result_file = work / f"{name}-request.json", work / f"{name}-result.json"
    request_file.write_text(json.dumps(request), encoding="utf-8")
    try:
        completed = subprocess.run(
            [sys.executable, "-m", module, str(request_file), str(result_file)],
            env=env,
            cwd=work,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ProbeFailed(f"{what} did not finish in {timeout}s") from None
    if completed.returncode != 0 or not result_file.is_file():
        tail = (completed.stdout + completed.stderr)[-2000:]
        raise ProbeFailed(f"{what} exited {completed.returncode}:\n{tail}")
    return json.loads(result_file.read_text(encoding="utf-8"))


@contextlib.contextmanager
def installed_privately(ctx: Context) -> Iterator[tuple[Path, dict[str, str]]]:
    """A scratch directory whose `site/` holds the package, and the environment of probe processes seeing it."""
    from vllm_scaffold_testing.engine import install_privately

    with tempfile.TemporaryDirectory(prefix="vllm-scaffold-doctor-") as scratch:
        work = Path(scratch)
        try:
            install_privately(ctx.package.install_from or ctx.package.root, work / "site")
        except RuntimeError as error:
            raise ProbeFailed(str(error)) from None
        yield work, _probe_environment(ctx, work / "site")


def live_findings(ctx: Context, *, use_cache: bool = True) -> list[Finding]:
    own = [
        {"group": ep.group, "name": ep.name, "value": ep.value} for ep in ctx.package.entry_points if ep.group in GROUPS
    ]
    # The per-request parameter the manifest records for a component's object (a logits processor's
    # extra_args key): the probe sends it, since default SamplingParams never reach the processor's code.
    components = ctx.package.project.manifest.get("components", [])
    parameters = {
        str(c.get("object")): str(c["parameter"]) for c in components if isinstance(c, dict) and c.get("parameter")
    }
    for ep in own:
        if ep["value"] in parameters:
            ep["parameter"] = parameters[ep["value"]]
    cached = cache_dir() / f"{_fingerprint(ctx)}.json"
    if use_cache and cached.is_file():
        return [Finding.from_json(item) for item in json.loads(cached.read_text(encoding="utf-8"))]
    with installed_privately(ctx) as (work, env):
        findings = _run("imports", ctx, own, env, work) + _run("registry", ctx, own, env, work)
    write_atomically(cached, json.dumps([f.as_json() for f in findings]))
    return findings
