"""Engines beyond one process per role: Ray clusters on the CPU build, pipeline and data parallelism.

A plugin has to load in every process that runs the model, and those multiply when an engine scales out:

- Ray (`distributed_executor_backend="ray"`): the front end, the engine core and one Ray actor per worker.
  On the CPU build this needs `RayCpuPlatform` (see `ray_platform`), made visible through a private
  `vllm.platform_plugins` entry point (`ray_platform_site`). Either the front end starts a bounded local
  cluster (`local_ray_cluster`, in the engine script) or it joins one started separately (`RayCluster`, the
  multi-node layout), in which case the workers see only what the cluster's nodes have installed plus what
  the front end passes in `runtime_env`.
- Pipeline parallelism (`PP2_KWARGS`): two stages with the multiprocessing executor. Not in eager mode: the
  CPU model runner only allocates the tensors passed between stages during the warm-up that
  `enforce_eager=True` skips, and the first request then fails an assertion.
- Data parallelism (`DP2_KWARGS`): two engine cores with one worker each, through `AsyncLLM` (the server's
  path); the offline `LLM` refuses `data_parallel_size > 1`.

Every Ray process started here carries a unique temporary directory on its command line, which is how
`ray_processes` finds them afterwards and `stop_processes` ends exactly those (`ray stop` would end every
Ray process of the user on the machine).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from vllm_scaffold_testing.engine import TP2_ENV, entry_point_site

# Ray's resources on this machine's scale: two CPUs, two "GPUs" (one per worker, see RayCpuPlatform), no
# dashboard, a 256 MiB object store (Ray's default takes 30% of the machine's memory).
RAY_CLUSTER_BOUNDS: dict[str, Any] = {
    "num_cpus": 2,
    "num_gpus": 2,
    "include_dashboard": False,
    "object_store_memory": 256 << 20,
}

# Where an engine script's Ray processes keep their files; its path on their command lines identifies them.
RAY_TEMP_DIR_ENV = "VLLMSCAFFOLD_RAY_TEMP_DIR"

# Ray starts its workers at niceness 15, behind every other process of a busy machine; vLLM's workers are the
# engine here. Read by the Ray daemons a process starts.
RAY_WORKER_ENV: dict[str, str] = {"RAY_worker_niceness": "0"}
# Ray engines run the engine core in its own process (it joins the front end's cluster through RAY_ADDRESS).
RAY_ENGINE_ENV: dict[str, str] = {"VLLM_ENABLE_V1_MULTIPROCESSING": "1", **RAY_WORKER_ENV}
RAY_TP2_KWARGS: dict[str, Any] = {"tensor_parallel_size": 2, "distributed_executor_backend": "ray"}

PP2_ENV: dict[str, str] = TP2_ENV
PP2_KWARGS: dict[str, Any] = {"pipeline_parallel_size": 2, "distributed_executor_backend": "mp", "enforce_eager": False}

# Each engine core of a data-parallel pair runs its one worker on its own core.
DP2_ENV: dict[str, str] = {"VLLM_ENABLE_V1_MULTIPROCESSING": "1"}
DP2_KWARGS: dict[str, Any] = {"data_parallel_size": 2}

_PLATFORM_ENTRY_POINT = "vllm_scaffold_testing.ray_platform:activate"
# How long processes get to exit on SIGTERM before SIGKILL; waited on as a condition, not slept.
_STOP_GRACE_S = 30.0


def ray_available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def ray_platform_site(directory: Path) -> Path:
    """A directory that, on PYTHONPATH, makes vLLM resolve its platform to RayCpuPlatform in that process."""
    return entry_point_site(
        directory, "vllm-scaffold-ray-cpu", "vllm.platform_plugins", "ray_cpu", _PLATFORM_ENTRY_POINT
    )


def with_path_first(env: Mapping[str, str], *paths: Path, drop: Path | None = None) -> dict[str, str]:
    """`env` with `paths` first on PYTHONPATH, and `drop` (e.g. the private plugin site) taken off it."""
    current = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(drop)]
    ordered = [str(path) for path in paths] + [p for p in current if p not in {str(path) for path in paths}]
    return {**env, "PYTHONPATH": os.pathsep.join(ordered)}


@contextlib.contextmanager
def local_ray_cluster(**init_kwargs: Any) -> Iterator[str]:
    """In the engine script: starts a bounded Ray cluster from this process (the front end) and shuts it down.

    Sets RAY_ADDRESS so the engine core joins this cluster instead of starting another. The workers inherit
    this process's environment, PYTHONPATH included. Shut the engine down inside the block.
    """
    import ray

    temp_dir = os.environ.get(RAY_TEMP_DIR_ENV)
    ray.init(**RAY_CLUSTER_BOUNDS, **({"_temp_dir": temp_dir} if temp_dir else {}), **init_kwargs)
    os.environ["RAY_ADDRESS"] = ray.get_runtime_context().gcs_address
    try:
        yield os.environ["RAY_ADDRESS"]
    finally:
        ray.shutdown()
        os.environ.pop("RAY_ADDRESS", None)


@contextlib.contextmanager
def joined_ray_cluster(address: str, runtime_env: Mapping[str, Any] | None = None) -> Iterator[str]:
    """In the engine script: joins a separately started cluster, passing `runtime_env` on to vLLM's workers.

    vLLM reads the runtime environment of the front end's Ray session and starts its workers with it.
    """
    import ray

    ray.init(address=address, runtime_env=dict(runtime_env or {}))
    os.environ["RAY_ADDRESS"] = address
    try:
        yield address
    finally:
        ray.shutdown()
        os.environ.pop("RAY_ADDRESS", None)


def generate(engine_kwargs: Mapping[str, Any], prompts: Sequence[str], max_tokens: int = 4) -> list[list[int]]:
    """In the engine script: greedy tokens from an offline `vllm.LLM`, shut down before returning."""
    from vllm_scaffold_testing.engine import shutdown_engines, start_llm
    from vllm_scaffold_testing.offline import greedy_token_ids

    llms = [start_llm(**engine_kwargs)]
    try:
        return greedy_token_ids(llms[0], prompts, max_tokens)
    finally:
        shutdown_engines(llms)


def generate_async(engine_kwargs: Mapping[str, Any], prompts: Sequence[str], max_tokens: int = 4) -> list[list[int]]:
    """In the engine script: greedy tokens through `AsyncLLM`, the server's engine and the way to run DP > 1."""
    import asyncio

    from vllm import SamplingParams
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.v1.engine.async_llm import AsyncLLM

    params = SamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=True)

    async def complete(engine: AsyncLLM, index: int, prompt: str) -> list[int]:
        async for output in engine.generate(prompt, params, request_id=f"request-{index}"):
            if output.finished:
                return list(output.outputs[0].token_ids)
        raise RuntimeError(f"request {index} ended unfinished")

    async def run() -> list[list[int]]:
        engine = AsyncLLM.from_engine_args(AsyncEngineArgs(**engine_kwargs))
        try:
            return list(await asyncio.gather(*(complete(engine, i, p) for i, p in enumerate(prompts))))
        finally:
            engine.shutdown()

    return asyncio.run(run())


def ray_actor_id(model: object = None) -> str | None:
    """Pass to `LLM.apply_model`: the Ray actor each worker runs in, None where it is not one."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    return ray.get_runtime_context().get_actor_id()


def new_ray_temp_dir() -> Path:
    """A short, unique directory for one cluster's files (Ray's socket paths must stay under 108 bytes)."""
    return Path(tempfile.mkdtemp(prefix="vsray-", dir="/tmp"))


def ray_processes(marker: Path) -> list[int]:
    """Processes of this user that belong to the cluster whose temporary directory is `marker`.

    Ray's daemons name it on their command line; its workers and agents retitle themselves (`ray::IDLE`)
    but keep their log files in it open.
    """
    needle = os.fsencode(str(marker))
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if entry.stat().st_uid == os.getuid() and (
                needle in (entry / "cmdline").read_bytes() or _holds(entry, marker)
            ):
                found.append(int(entry.name))
        except OSError:  # exited meanwhile
            continue
    return found


def _holds(process: Path, marker: Path) -> bool:
    """Whether `process` has a file under `marker` open."""
    for fd in (process / "fd").iterdir():
        with contextlib.suppress(OSError):
            if os.readlink(fd).startswith(str(marker)):
                return True
    return False


def stop_processes(pids: list[int], grace_s: float = _STOP_GRACE_S) -> None:
    """SIGTERM to each of `pids`, then SIGKILL to any still running once `grace_s` has passed."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_running(pid) for pid in pids):
        time.sleep(0.2)
    for pid in pids:
        if _running(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    while any(_running(pid) for pid in pids):  # SIGKILL cannot be ignored: this ends
        time.sleep(0.1)


def stop_cluster(marker: Path) -> list[int]:
    """Ends every process of the cluster whose temporary directory is `marker`; returns their pids.

    In the order `ray stop` uses: the raylet, then the other daemons and workers, then the GCS server. Sent
    SIGTERM together, the GCS server and the autoscaler's monitor wait on each other until the grace period
    ends (30 s per cluster); in this order the cluster is gone in about a second.
    """
    pids = ray_processes(marker)
    programs = {pid: _executable(pid) for pid in pids}
    raylet = [pid for pid, name in programs.items() if name == "raylet"]
    gcs_server = [pid for pid, name in programs.items() if name == "gcs_server"]
    for group in (raylet, [pid for pid in pids if pid not in raylet + gcs_server], gcs_server):
        stop_processes(group)
    return pids


def _executable(pid: int) -> str:
    """The file name of the program `pid` runs ("raylet", "gcs_server", "python3.11"); "" once it has exited."""
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return ""


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def free_ports(count: int) -> list[int]:
    """`count` distinct ports free on 127.0.0.1 now. The probe sockets stay bound until all are picked: ports
    probed one at a time can come back equal, which makes `ray start` refuse its own port set."""
    with contextlib.ExitStack() as stack:
        probes = [stack.enter_context(socket.socket()) for _ in range(count)]
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [int(probe.getsockname()[1]) for probe in probes]


class RayCluster:
    """A Ray cluster started with `ray start --head`, as on the head node of a multi-node deployment.

    Its processes see `env` (give it the node's installed packages, not the plugin under test), so a plugin
    reaches the workers only through the `runtime_env` the front end passes, or by being installed. A front
    end joins it with `client_env` (the cluster's authentication token) in its environment.
    """

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self.temp_dir = new_ray_temp_dir()
        gcs, client, dashboard, agent = free_ports(4)
        self.address = f"127.0.0.1:{gcs}"
        # `ray start` turns on token authentication; a token of its own keeps ~/.ray/auth_token out of it.
        self.client_env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
        bounds = RAY_CLUSTER_BOUNDS
        command = [sys.executable, "-c", "from ray.scripts.scripts import main; main()", "start", "--head"]
        command += ["--node-ip-address", "127.0.0.1", "--port", self.address.rsplit(":", 1)[1]]
        # Ports Ray would otherwise take at fixed numbers, which a second cluster on the machine also wants.
        command += ["--ray-client-server-port", str(client), "--dashboard-port", str(dashboard)]
        command += ["--dashboard-agent-listen-port", str(agent)]
        command += ["--num-cpus", str(bounds["num_cpus"]), "--num-gpus", str(bounds["num_gpus"])]
        command += ["--include-dashboard", "false", "--object-store-memory", str(bounds["object_store_memory"])]
        command += ["--temp-dir", str(self.temp_dir), "--disable-usage-stats"]
        started = subprocess.run(
            command, env={**env, **RAY_WORKER_ENV, **self.client_env}, capture_output=True, text=True, check=False
        )
        if started.returncode != 0:
            self.stop()
            raise RuntimeError(f"`ray start --head` failed:\n{started.stdout}\n{started.stderr}")

    def runtime_env(self, *paths: Path | None) -> dict[str, Any]:
        """The `runtime_env` that puts `paths` (e.g. the private plugin site) first on the workers' path."""
        pythonpath = with_path_first(self.env, *(path for path in paths if path is not None))["PYTHONPATH"]
        return {"env_vars": {"PYTHONPATH": pythonpath}}

    def stop(self) -> list[int]:
        """Ends every process of this cluster (`stop_cluster`); returns the pids that were still running."""
        return stop_cluster(self.temp_dir)
