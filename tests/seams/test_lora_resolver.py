"""The lora-resolver template: its questions, `add` next to another component, and what it registers."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "vllm_scaffold"]


def scaffold(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True, check=False)


@pytest.fixture
def host(tmp_path: Path) -> Path:
    assert scaffold("new", "general-plugin", "host", "--defaults", "--dest", "host", cwd=tmp_path).returncode == 0
    return tmp_path / "host"


def test_add_next_to_a_general_plugin_with_answers(host: Path) -> None:
    done = scaffold("add", "lora-resolver", "adapters", "--data", "dir_env=HOST_LORAS", "--data",
                    "check_base_model=false", cwd=host)
    assert done.returncode == 0, done.stderr
    source = (host / "src/host/adapters/resolver.py").read_text()
    assert 'DIR_ENV = "HOST_LORAS"' in source and "CHECK_BASE_MODEL = False" in source
    plugin = (host / "src/host/vllm_plugin.py").read_text()
    assert '"host.hooks.registration:register"' in plugin and '"host.adapters.resolver:register"' in plugin
    manifest = tomllib.loads((host / "pyproject.toml").read_text())["tool"]["vllm-scaffold"]["components"]
    assert [c["seam"] for c in manifest] == ["general-plugin", "lora-resolver"]
    assert manifest[1]["object"] == "host.adapters.resolver:AdaptersResolver"


@pytest.mark.parametrize(
    ("answer", "message"),
    [("dir_env=lora_dir", "upper-case environment variable"), ("dir_env=VLLM_LORA_DIR", "VLLM_ namespace")],
)
def test_bad_answers_are_refused_and_nothing_is_written(host: Path, answer: str, message: str) -> None:
    before = sorted(p.relative_to(host) for p in host.rglob("*"))
    done = scaffold("add", "lora-resolver", "adapters", "--data", answer, cwd=host)
    assert done.returncode == 2
    assert message in done.stderr + done.stdout
    assert sorted(p.relative_to(host) for p in host.rglob("*")) == before
