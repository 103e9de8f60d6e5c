"""The custom-op template: its op question, the catalog's op list against vLLM 0.32, and `add` next to
another component (whose whole package then still passes its tests in the CPU engine)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from vllm_scaffold.catalog import get_seam
from vllm_scaffold.rendering import questions

CLI = [sys.executable, "-m", "vllm_scaffold"]
SEAM = get_seam("custom-op")
OPS: dict[str, dict[str, str]] = SEAM.extra["ops"]  # type: ignore[assignment]


def scaffold(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True, check=False)


@pytest.fixture
def host(tmp_path: Path) -> Path:
    assert scaffold("new", "general-plugin", "host", "--defaults", "--dest", "host", cwd=tmp_path).returncode == 0
    return tmp_path / "host"


@pytest.mark.parametrize("op", OPS)
def test_catalog_ops_are_custom_ops_the_llama_model_builds(op: str) -> None:
    pytest.importorskip("vllm")
    from vllm.model_executor.custom_op import CustomOp

    cls = getattr(importlib.import_module(OPS[op]["module"]), op)
    assert issubclass(cls, CustomOp) and cls.__name__ == op
    assert cls.name == OPS[op]["registry_name"]
    assert getattr(importlib.import_module("vllm.model_executor.models.llama"), op) is cls


def test_the_question_offers_exactly_the_catalog_ops() -> None:
    question = questions("custom-op")["op"]
    assert question["default"] == "SiluAndMul"
    for op in OPS:
        assert f"'{op}'" in question["validator"]


@pytest.mark.parametrize("answer", ["silu_and_mul", "RotaryEmbedding", "rmsnorm"])
def test_a_bad_op_is_refused_with_the_fix_and_nothing_is_written(answer: str, tmp_path: Path) -> None:
    done = scaffold("new", "custom-op", "bad_op", "--data", f"op={answer}", "--dest", "out", cwd=tmp_path)
    assert done.returncode == 2
    message = (done.stderr + done.stdout).strip()
    assert f"'{answer}' is not an op this template replaces" in message and "SiluAndMul or RMSNorm" in message
    assert len(message.splitlines()) == 1, message
    assert not (tmp_path / "out").exists()


def test_add_with_an_answer_next_to_a_general_plugin(host: Path) -> None:
    before = {p.relative_to(host) for p in host.rglob("*")}
    assert scaffold("add", "custom-op", "norm", "--data", "op=unknown", cwd=host).returncode == 2
    assert {p.relative_to(host) for p in host.rglob("*")} == before

    done = scaffold("add", "custom-op", "norm", "--data", "op=RMSNorm", cwd=host)
    assert done.returncode == 0, done.stderr
    layer = (host / "src/host/norm/layer.py").read_text()
    assert "class NormRMSNorm(RMSNorm):" in layer and "RMSNorm.register_oot(NormRMSNorm)" in layer
    assert 'FUSED_ADD_OP_NAME = "host::norm_add"' in (host / "src/host/norm/kernel.py").read_text()
    plugin = (host / "src/host/vllm_plugin.py").read_text()
    assert '"host.hooks.registration:register"' in plugin and '"host.norm.layer:register"' in plugin
    manifest = tomllib.loads((host / "pyproject.toml").read_text())["tool"]["vllm-scaffold"]["components"]
    assert [c["seam"] for c in manifest] == ["general-plugin", "custom-op"]
    assert manifest[1]["object"] == "host.norm.layer:NormRMSNorm"
    assert any("'+RMSNorm'" in line for line in manifest[1]["enable"])


@pytest.mark.engine
def test_host_package_with_both_components_passes_its_tests(host: Path, tmp_path: Path) -> None:
    assert scaffold("add", "custom-op", "act", cwd=host).returncode == 0
    env = {**os.environ, "VLLM_SCAFFOLD_CACHE": os.environ.get("VLLM_SCAFFOLD_CACHE", str(tmp_path / "cache"))}
    env.pop("PYTHONPATH", None)
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", "tests/test_vllm_plugin.py",
         "tests/test_act_kernel.py", "tests/test_act_layer.py", "tests/test_act_engine.py"],
        cwd=host, env=env, capture_output=True, text=True, timeout=1800, check=False,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-12000:]
