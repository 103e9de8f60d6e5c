"""The Ray probe (`doctor --executor ray`), parent side, and the note on Ray clusters it comes with.

A plugin that registers in worker processes has to be importable on every node of a Ray cluster: vLLM starts
its workers there as Ray actors, with what those nodes have installed plus the `runtime_env` the front end's
Ray session carries. When the plugin is missing there, vLLM says nothing and serves without it. The probe
runs one tensor-parallel engine on a tiny model under the Ray executor (see ray_probe_script.py) and reports
each entry point whose module the front end imported but a Ray worker did not.
"""

from __future__ import annotations

from vllm_scaffold.doctor.live.probe import ProbeFailed, installed_privately, run_script
from vllm_scaffold.doctor.reading.context import Context
from vllm_scaffold.doctor.reading.installed import cache_dir
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.vllm_facts import facts

RAY_PROBE_TIMEOUT_S = 1200
# The groups vLLM loads in its workers (and so in Ray actors): the general plugins and the platform in every
# process, and the logits processors where the model runner is built (facts general-plugins-every-process,
# logits-processor-processes).
WORKER_GROUPS = ("vllm.general_plugins", "vllm.platform_plugins", "vllm.logits_processors")
EXECUTORS = ("ray",)
SECTION = "Ray clusters (`--executor ray`)"  # of codes.toml
# The engine core in its own process (it joins the front end's cluster), and `collective_rpc` allowed to send
# the probe's function from the front end to it.
RAY_PROBE_ENV = {"VLLM_ENABLE_V1_MULTIPROCESSING": "1", "VLLM_ALLOW_INSECURE_SERIALIZATION": "1"}


def worker_entry_points(ctx: Context) -> list[tuple[str, str, str]]:
    """(group, name, value) of each of the package's entry points that vLLM loads in worker processes."""
    return [(ep.group, ep.name, ep.value) for ep in ctx.package.entry_points if ep.group in WORKER_GROUPS]


def _where(group: str, name: str, value: str) -> str:
    return f'entry point [{group}] {name} = "{value}"'


def cluster_note(ctx: Context) -> list[Finding]:
    """When doctor checks for a Ray cluster: what a plugin loaded in workers needs on every node."""
    entry_points = worker_entry_points(ctx)
    if not entry_points:
        return []
    dist = ctx.package.dist_name
    return [
        Finding(
            "ray-every-node",
            _where(*entry_points[0]),
            f"vLLM's Ray workers load {dist} from the node they run on: on a cluster started separately "
            "(`ray start`, multi-node) the plugin reaches them only if it is installed on every node or sent "
            "with the front end's Ray runtime environment; otherwise the workers run without it, silently. "
            + facts.fact("ray-runtime-env-passed").text(),
            f"install {dist} in the same environment on every node, or call "
            f"`ray.init(address=..., runtime_env={{'pip': ['{dist}']}})` (or "
            "`{'env_vars': {'PYTHONPATH': <a directory every node can read>}}`) before creating the engine; "
            f"check the cluster with `vllm-scaffold doctor --executor ray` and RAY_ADDRESS set",
        )
    ]


def ray_findings(ctx: Context) -> tuple[list[Finding], str]:
    """Runs the Ray probe; the findings and where the engine ran. Raises ProbeFailed when it cannot run."""
    entry_points = worker_entry_points(ctx)
    if not entry_points:
        return [], f"the package has no entry point in {', '.join(WORKER_GROUPS)}"
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ProbeFailed("Ray is not installed here: pip install ray (the probe runs vLLM's Ray executor)") from None
    from vllm_scaffold_testing.scale_out import RAY_WORKER_ENV
    from vllm_scaffold_testing.tiny_model import cached_tiny_llama

    modules = [value.partition(":")[0].strip() for _, _, value in entry_points]
    with installed_privately(ctx) as (work, env):
        request = {
            "modules": modules,
            "model": str(cached_tiny_llama(cache_dir() / "models")),
            "platform_site": str(work / "ray-platform"),
        }
        module = "vllm_scaffold.doctor.live.ray_probe_script"
        result = run_script(
            module, "the Ray probe", request, {**env, **RAY_PROBE_ENV, **RAY_WORKER_ENV}, work, RAY_PROBE_TIMEOUT_S
        )
    return missing_in_workers(ctx, entry_points, result), result["cluster"]


def missing_in_workers(ctx: Context, entry_points: list[tuple[str, str, str]], result: dict) -> list[Finding]:
    """One error per entry point the front end imported and at least one Ray worker did not."""
    findings = []
    for index, entry_point in enumerate(entry_points):
        if not result["front_end"]["imported"][index]:
            continue  # not loaded in the front end either: the live probe's findings say why
        missing = [w for w in result["workers"] if not w["imported"][index]]
        if not missing:
            continue
        workers = ", ".join(f"pid {w['pid']} on {w['host']}" for w in missing)
        findings.append(
            Finding(
                "ray-worker-missing-plugin",
                _where(*entry_point),
                f"{ctx.package.dist_name} was imported in the front end but not in {len(missing)} of "
                f"{len(result['workers'])} Ray workers ({workers}; cluster {result['cluster']}), and the engine ran "
                "on them without it",
                f"install {ctx.package.dist_name} on every node of the cluster, or pass it in the front end's "
                f"`ray.init(runtime_env={{'pip': ['{ctx.package.dist_name}']}})` "
                "(or `{'env_vars': {'PYTHONPATH': ...}}`) before creating the engine",
            )
        )
    return findings
