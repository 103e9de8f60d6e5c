"""doctor and Ray clusters: the note on every node, the Ray probe's findings, `--executor ray`.

The engine test starts a cluster with `ray start --head` whose nodes lack the plugin, as a multi-node
deployment where the plugin was installed only where the front end runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import build_file_tree, plugin_pyproject, run_cli
from vllm_scaffold.doctor.live.probe_ray import cluster_note, missing_in_workers, worker_entry_points
from vllm_scaffold.doctor.reading.context import Context
from vllm_scaffold.doctor.reading.package import PluginPackage
from vllm_scaffold.doctor.runner import diagnose
from vllm_scaffold_testing import scale_out

REPOSITORY = Path(__file__).resolve().parent.parent
GENERAL_PLUGIN = REPOSITORY / "generated_examples" / "general-plugin"


def context(root: Path) -> Context:
    return Context.build(PluginPackage.load(root), None, {})


def test_the_note_names_the_general_plugin_and_both_ways_onto_the_nodes() -> None:
    (note,) = cluster_note(context(GENERAL_PLUGIN))
    assert note.code == "ray-every-node" and note.severity == "info"
    assert "vllm.general_plugins" in note.where
    assert "install my-plugin" in note.fix and "runtime_env" in note.fix


def test_no_note_for_a_package_with_nothing_loaded_in_workers(tmp_path: Path) -> None:
    logger = plugin_pyproject("only-a-logger", "only_a_logger:Logger", "vllm.stat_logger_plugins")
    build_file_tree({"pyproject.toml": logger, "only_a_logger.py": "class Logger:\n    pass\n"}, tmp_path)
    assert cluster_note(context(tmp_path)) == []


def test_a_logits_processor_is_noted_since_every_worker_loads_it(tmp_path: Path) -> None:
    processor = plugin_pyproject("only-logits", "only_logits:Processor", "vllm.logits_processors")
    build_file_tree({"pyproject.toml": processor, "only_logits.py": "class Processor:\n    pass\n"}, tmp_path)
    (note,) = cluster_note(context(tmp_path))
    assert "vllm.logits_processors" in note.where


@pytest.mark.parametrize(("environ", "noted"), [({}, False), ({"RAY_ADDRESS": "10.0.0.5:6379"}, True)])
def test_the_note_appears_only_where_ray_is_in_play(environ: dict[str, str], noted: bool) -> None:
    report = diagnose(GENERAL_PLUGIN, live=False, environ=environ)
    assert ("ray-every-node" in {f.code for f in report.findings}) == noted
    assert not report.has_error


def test_a_worker_without_the_module_is_an_error_naming_it() -> None:
    ctx = context(GENERAL_PLUGIN)
    entry_points = worker_entry_points(ctx)
    seen = {"pid": 1, "host": "head", "imported": [True]}
    result = {"cluster": "joined 10.0.0.5:6379", "front_end": seen, "workers": [seen, {**seen, "pid": 2, "host": "b"}]}
    assert missing_in_workers(ctx, entry_points, result) == []
    result["workers"][1]["imported"] = [False]
    (finding,) = missing_in_workers(ctx, entry_points, result)
    assert finding.code == "ray-worker-missing-plugin" and finding.severity == "error"
    assert "1 of 2 Ray workers (pid 2 on b; cluster joined 10.0.0.5:6379)" in finding.message


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--executor", "dask"], "unknown --executor 'dask'"),
        (["--executor", "ray", "--no-live"], "--executor runs the plugin in a live engine"),
    ],
)
def test_executor_refusals(args: list[str], message: str) -> None:
    result = run_cli("doctor", str(GENERAL_PLUGIN), *args)
    assert result.exit_code == 2 and message in result.output


# The codes the cluster test below shows (tests/test_doctor_severity.py counts them as shown by a fixture).
SHOWN = {"ray-every-node", "ray-worker-missing-plugin"}


@pytest.mark.engine
@pytest.mark.skipif(not scale_out.ray_available(), reason="Ray is not installed")
def test_the_ray_probe_finds_workers_on_nodes_without_the_plugin(tmp_path: Path) -> None:
    platform = scale_out.ray_platform_site(tmp_path / "ray-platform")  # the nodes run vLLM's CPU build
    cluster = scale_out.RayCluster(scale_out.with_path_first(os.environ, platform))
    try:
        environ = {**os.environ, **cluster.client_env, "RAY_ADDRESS": cluster.address}
        report = diagnose(GENERAL_PLUGIN, environ=environ, executor="ray", use_cache=False)
    finally:
        cluster.stop()
    assert scale_out.ray_processes(cluster.temp_dir) == []
    codes = {f.code: f for f in report.findings}
    assert SHOWN <= set(codes), report.live
    assert "2 of 2 Ray workers" in codes["ray-worker-missing-plugin"].message
    assert f"Ray executor: joined {cluster.address}" in str(report.live)
