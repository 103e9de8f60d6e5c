"""The Ray probe, child side: one engine under the Ray executor, and which processes imported the plugin.

Run as `python -m vllm_scaffold.doctor.live.ray_probe_script REQUEST RESULT` by `probe_ray.py`, in a fresh
interpreter whose PYTHONPATH holds the privately installed package. It joins the cluster at RAY_ADDRESS when
there is one (the user's, whose nodes have what they have installed) or starts a bounded one of its own
(whose workers inherit this process's path), runs a tensor-parallel engine on a tiny model with
`distributed_executor_backend="ray"`, and reports, for the front end and each Ray worker, which of the
package's entry-point modules were imported: vLLM imports a plugin's module when it loads the plugin, so a
module missing from a worker means the plugin never ran there. On vLLM's CPU build, whose platform has no Ray
device key, the test harness's Ray CPU platform stands in. The worker-side function travels to the workers
by value: a node does not need vllm-scaffold installed.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def imported(modules: list[str]) -> Callable[[Any], dict[str, Any]]:
    """For `LLM.collective_rpc`: a function telling which of `modules` the process running it imported, and where.

    vLLM sends a callable RPC method to its workers pickled by value (an `apply_model` argument travels by
    name, which a node without this module cannot resolve); a nested function with nothing but its arguments
    pickles by value at every hop.
    """

    def in_this_process(worker: Any) -> dict[str, Any]:
        import os
        import socket
        import sys

        return {"pid": os.getpid(), "host": socket.gethostname(), "imported": [m in sys.modules for m in modules]}

    return in_this_process


def use_ray_cpu_platform(site: str) -> None:
    """On a CPU platform without a Ray device key, puts the harness's Ray CPU platform on this process's path
    and its children's."""
    from vllm.platforms import resolve_current_platform_cls_qualname
    from vllm.platforms.cpu import CpuPlatform

    module_name, _, class_name = resolve_current_platform_cls_qualname().rpartition(".")
    platform = getattr(importlib.import_module(module_name), class_name)
    if not issubclass(platform, CpuPlatform) or platform.ray_device_key:
        return
    from vllm_scaffold_testing.scale_out import ray_platform_site

    ray_platform_site(Path(site))
    sys.path.insert(0, site)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join([site, *paths])
    importlib.invalidate_caches()


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        request = json.load(handle)
    use_ray_cpu_platform(request["platform_site"])
    from vllm import LLM

    from vllm_scaffold_testing.engine import TINY_ENGINE_KWARGS, shutdown_engines
    from vllm_scaffold_testing.scale_out import RAY_TP2_KWARGS, joined_ray_cluster, local_ray_cluster

    modules: list[str] = request["modules"]
    address = os.environ.get("RAY_ADDRESS")
    cluster = joined_ray_cluster(address) if address else local_ray_cluster()
    with cluster:
        llm = LLM(model=request["model"], **{**TINY_ENGINE_KWARGS, **RAY_TP2_KWARGS})
        result = {
            "cluster": f"joined {address}" if address else "started by the front end",
            "front_end": imported(modules)(None),
            "workers": llm.collective_rpc(imported(modules)),
        }
        shutdown_engines([llm])
    with open(sys.argv[2], "w", encoding="utf-8") as handle:
        json.dump(result, handle)


if __name__ == "__main__":
    main()
