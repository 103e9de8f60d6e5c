"""The logits-processor template: its questions, the list[int] variant, and `add` next to a general plugin
(whose package then passes its tests, both components together, in the CPU engine)."""

from __future__ import annotations

import os
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


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("param_name=Target-Token", "is not a valid parameter name: use lower-case letters"),
        ("param_name=1st", "is not a valid parameter name"),
        ("param_type=float", "Invalid choice for 'param_type'"),
    ],
)
def test_bad_answers_are_refused_in_one_line_and_nothing_is_written(host: Path, answer: str, message: str) -> None:
    before = {p.relative_to(host): p.read_bytes() for p in host.rglob("*") if p.is_file()}
    done = scaffold("add", "logits-processor", "only", "--data", answer, cwd=host)
    assert done.returncode == 2
    text = (done.stderr + done.stdout).strip()
    assert message in text and len(text.splitlines()) == 1, text
    assert {p.relative_to(host): p.read_bytes() for p in host.rglob("*") if p.is_file()} == before


def add_list_variant(host: Path) -> None:
    answers = ["--data", "param_name=allowed_ids", "--data", "param_type=list[int]"]
    done = scaffold("add", "logits-processor", "only", *answers, cwd=host)
    assert done.returncode == 0, done.stderr


def test_add_the_list_variant_next_to_a_general_plugin(host: Path) -> None:
    add_list_variant(host)
    pyproject = tomllib.loads((host / "pyproject.toml").read_text())
    assert pyproject["project"]["entry-points"]["vllm.logits_processors"] == {
        "only": "host.only.processor:OnlyLogitsProcessor"
    }
    assert pyproject["project"]["entry-points"]["vllm.general_plugins"] == {"host": "host.vllm_plugin:register"}
    manifest = pyproject["tool"]["vllm-scaffold"]["components"]
    assert [c["seam"] for c in manifest] == ["general-plugin", "logits-processor"]
    assert '"allowed_ids"' in manifest[1]["enable"][0]
    processor = (host / "src/host/only/processor.py").read_text()
    assert 'PARAM = "allowed_ids"' in processor and "MAX_ALLOWED = 64" in processor
    assert "class OnlyLogitsProcessor(V1LogitsProcessor, V2LogitsProcessor):" in processor
    mine = ["src/host/only", "tests/test_only_kernel.py", "tests/test_only_runners.py", "tests/test_only_engine.py",
            "benchmarks/only_masking.py"]  # fmt: skip
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", *mine], cwd=host, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr


@pytest.mark.engine
def test_host_with_both_components_passes_its_tests(host: Path, tmp_path: Path) -> None:
    """The list variant in the engine (the default is covered by the golden package's own run)."""
    add_list_variant(host)
    env = {**os.environ, "VLLM_SCAFFOLD_CACHE": os.environ.get("VLLM_SCAFFOLD_CACHE", str(tmp_path / "cache"))}
    env.pop("PYTHONPATH", None)
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", "tests/test_vllm_plugin.py",
         "tests/test_only_kernel.py", "tests/test_only_runners.py", "tests/test_only_engine.py",
         "-k", "not multiprocessing and not http"],
        cwd=host, env=env, capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-12000:]
    assert " passed" in output.strip().splitlines()[-1]
