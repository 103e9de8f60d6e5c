"""The custom-op template: its op question, the catalog's op list against vLLM 0.32, and `add` next to
another component (whose package then still passes its tests in the CPU engine)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from seam_helpers import add_into, added, assert_lint_clean, assert_registered, run_package_tests

from tests.helpers import run_cli
from vllm_scaffold.catalog import get_seam
from vllm_scaffold.generate.rendering import questions

OPS = get_seam("custom-op").ops


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
    assert list(question["choices"].values()) == list(OPS)  # a choice list on a terminal


def test_new_with_a_bad_op_writes_nothing(tmp_path: Path) -> None:
    done = run_cli("new", "custom-op", "bad_op", "--data", "op=rms_norm", "--dest", "out", cwd=tmp_path)
    assert done.exit_code == 2 and "op takes one of SiluAndMul, RMSNorm, got 'rms_norm'" in done.stderr
    assert not (tmp_path / "out").exists()


def test_defaults_say_which_op_is_replaced_and_a_name_naming_another_op_is_pointed_out(tmp_path: Path) -> None:
    done = run_cli("new", "custom-op", "fused_rmsnorm", "--defaults", "--dest", "out", cwd=tmp_path)
    assert done.exit_code == 0, done.output
    assert "note   op: took the default SiluAndMul (another: --data op=RMSNorm)" in done.stdout
    assert (
        "note   the name 'fused_rmsnorm' names RMSNorm, but the component replaces SiluAndMul (op); to replace "
        "RMSNorm, pass --data op=RMSNorm"
    ) in done.stdout
    chosen = run_cli("new", "custom-op", "fused_rmsnorm", "--data", "op=RMSNorm", "--dest", "two", cwd=tmp_path)
    assert chosen.exit_code == 0 and "note   op" not in chosen.stdout and "names" not in chosen.stdout


def test_add_with_an_answer_next_to_a_general_plugin(host: Path) -> None:
    add_into(host, "custom-op", "norm", "op=RMSNorm")
    layer = (host / "src/host/norm/layer.py").read_text()
    assert "class NormRMSNorm(RMSNorm):" in layer and "RMSNorm.register_oot(NormRMSNorm)" in layer
    assert 'FUSED_ADD_OP_NAME = "host::norm_add"' in (host / "src/host/norm/kernel.py").read_text()
    assert_registered(host, "host.norm.layer:register")
    manifest = added(host, "custom-op")
    assert manifest[1]["object"] == "host.norm.layer:NormRMSNorm"
    assert any("'+RMSNorm'" in line for line in manifest[1]["enable"])
    assert_lint_clean(host, "src/host/norm", "tests/test_norm_kernel.py", "tests/test_norm_layer.py",
                      "tests/test_norm_engine.py", "benchmarks/bench_norm.py")  # fmt: skip


def test_host_with_both_components_passes_its_tests(host: Path, tmp_path: Path) -> None:
    assert run_cli("add", "custom-op", "act", cwd=host).exit_code == 0
    # Everything that starts no engine: with default answers the engine tests are the golden package's own.
    run_package_tests(host, tmp_path / "cache", "tests/test_vllm_plugin.py", "tests/test_act_kernel.py",
                      "tests/test_act_layer.py", "-m", "not engine")  # fmt: skip
