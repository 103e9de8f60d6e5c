"""The harness's scale-out support without an engine: the Ray platform entry point, paths, process cleanup.

The engines themselves (Ray, pipeline and data parallel) run in the generated general plugin's slow tier.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vllm_scaffold_testing import scale_out

pytest_plugins = ["pytester"]


def test_platform_site_makes_vllm_pick_the_ray_cpu_platform(tmp_path: Path) -> None:
    site = scale_out.ray_platform_site(tmp_path)
    (distribution,) = importlib.metadata.distributions(path=[str(site)])
    (entry_point,) = distribution.entry_points
    assert entry_point.group == "vllm.platform_plugins"
    qualname = entry_point.load()()
    module_name, _, class_name = qualname.rpartition(".")
    platform = getattr(importlib.import_module(module_name), class_name)
    from vllm.platforms.cpu import CpuPlatform

    assert issubclass(platform, CpuPlatform) and platform.ray_device_key == "GPU"
    assert CpuPlatform.ray_device_key == ""  # vLLM's own stays as it is


def test_path_first_puts_paths_in_front_and_drops_one(tmp_path: Path) -> None:
    first, kept, dropped = tmp_path / "first", tmp_path / "kept", tmp_path / "dropped"
    env = {"PYTHONPATH": os.pathsep.join([str(dropped), str(kept), str(first)]), "OTHER": "1"}
    result = scale_out.with_path_first(env, first, drop=dropped)
    assert result == {"PYTHONPATH": os.pathsep.join([str(first), str(kept)]), "OTHER": "1"}


def test_processes_are_found_by_their_marker_and_stopped_even_when_they_ignore_sigterm(tmp_path: Path) -> None:
    marker = scale_out.new_ray_temp_dir()
    ignores_term = "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True)\n"
    ignores_term += "while True: time.sleep(1)"
    children = [
        subprocess.Popen([sys.executable, "-c", ignores_term, str(marker)], stdout=subprocess.PIPE),
        subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(1)", str(marker)]),
    ]
    assert children[0].stdout is not None and children[0].stdout.readline()  # its handler is in place
    try:
        assert sorted(scale_out.ray_processes(marker)) == sorted(child.pid for child in children)
        scale_out.stop_processes(scale_out.ray_processes(marker), grace_s=1.0)
        assert [child.wait() for child in children] == [-9, -15]
        assert scale_out.ray_processes(marker) == []
    finally:
        for child in children:
            child.kill()
        marker.rmdir()


def test_a_cluster_stops_its_raylet_first_and_its_gcs_server_last(tmp_path: Path) -> None:
    """Stand-ins named like Ray's daemons (copies of bash) log the SIGTERM they get, in the order it came."""
    marker = scale_out.new_ray_temp_dir()
    log, ready = tmp_path / "terminated", tmp_path / "ready"
    children = []
    for name in ("gcs_server", "python3", "raylet"):
        program = tmp_path / name
        shutil.copy(shutil.which("bash") or "/bin/bash", program)
        script = f"trap 'echo {name} >> {log}; exit 0' TERM; echo {name} >> {ready}; while :; do sleep 0.05; done"
        children.append(subprocess.Popen([program, "-c", script, str(marker)]))
    try:
        while not ready.is_file() or len(ready.read_text().split()) < len(children):  # every trap is in place
            assert all(child.poll() is None for child in children)
            time.sleep(0.05)
        assert sorted(scale_out.stop_cluster(marker)) == sorted(child.pid for child in children)
        assert log.read_text().split() == ["raylet", "python3", "gcs_server"]
        assert [child.wait() for child in children] == [0, 0, 0]
    finally:
        for child in children:
            child.kill()
        marker.rmdir()


def test_ray_fixtures_skip_with_the_install_hint_when_ray_is_missing(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml("[project]\nname = 'not-a-plugin'\n")
    pytester.makeconftest("import sys\nsys.modules['ray'] = None\n")
    pytester.makepyfile("def test_ray(ray_engine_env):\n    pass\n\ndef test_cluster(ray_cluster):\n    pass\n")
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=2)
    assert result.stdout.str().count("Ray is not installed: pip install 'vllm-scaffold-testing[ray]'") == 2


@pytest.mark.skipif(not scale_out.ray_available(), reason="Ray is not installed")
def test_a_separately_started_cluster_leaves_no_process_behind() -> None:
    cluster = scale_out.RayCluster(os.environ)
    try:
        assert scale_out.ray_processes(cluster.temp_dir), "`ray start --head` left no process to stop"
        assert cluster.runtime_env(Path("/plugin"))["env_vars"]["PYTHONPATH"].startswith("/plugin")
    finally:
        cluster.stop()
    assert scale_out.ray_processes(cluster.temp_dir) == []


def test_the_ports_a_cluster_takes_are_distinct() -> None:
    from vllm_scaffold_testing.scale_out import free_ports

    for _ in range(50):
        ports = free_ports(4)
        assert len(set(ports)) == 4, ports
