"""The worker-extension template: selected by path, so `add` registers nothing; its methods stay clear of every
attribute vLLM's worker classes have, which vLLM would refuse at start-up."""

from __future__ import annotations

import ast
from pathlib import Path

from seam_helpers import add_into, added

from vllm_scaffold import vllm_facts

# The worker classes vLLM's platforms put behind worker_cls on the releases the templates are verified on.
WORKER_CLASSES = ("vllm.v1.worker.cpu_worker.CPUWorker", "vllm.v1.worker.gpu_worker.Worker")


def test_add_next_to_a_general_plugin(host: Path) -> None:
    add_into(host, "worker-extension", "weight_sync")
    extension = (host / "src/host/weight_sync/extension.py").read_text()
    assert "class WeightSyncWorkerExtension:" in extension
    plugin = (host / "src/host/vllm_plugin.py").read_text()
    assert '"host.hooks.registration:register"' in plugin and "weight_sync" not in plugin
    manifest = added(host, "worker-extension")
    path = "host.weight_sync.extension.WeightSyncWorkerExtension"
    assert manifest[1]["object"] == path
    assert manifest[1]["enable"][0] == f"--worker-extension-cls {path}"
    assert f"--worker-extension-cls {path}" in (host / "README.md").read_text()


def test_every_attribute_of_the_extension_is_clear_of_the_worker_classes_on_every_release(host: Path) -> None:
    add_into(host, "worker-extension", "weight_sync")
    tree = ast.parse((host / "src/host/weight_sync/extension.py").read_text())
    (extension,) = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    methods = {node.name for node in extension.body if isinstance(node, ast.FunctionDef)}
    assert methods == {"report_identity", "weight_checksums", "load_weights_from_file"}
    for version in vllm_facts.shipped_versions():
        index = vllm_facts.shipped(version)
        for worker in WORKER_CLASSES:
            classes, _complete = index.mro(index.resolve(worker))
            assert classes, f"{worker} is not a class in the {version} index"
            members = {name for cls in classes for key in ("m", "v") for name in index.class_entry(cls).get(key, ())}
            assert "load_model" in members, f"{worker}'s members were not read from the {version} index"
            assert not methods & members, f"{sorted(methods & members)} clash with {worker} in vLLM {version}"
