"""`MyOpSiluAndMul` as vLLM builds it: registration, the `custom_ops` names, and its kernel path
against the in-tree `SiluAndMul.forward_native`.

Needs vLLM (skipped without it) but no engine: modules are built inside `set_current_vllm_config`, which is
what the model loader does. On CPU the kernel path is forward_cpu under TRITON_INTERPRET=1 (fp32); on CUDA it
is forward_cuda in fp16 and bf16 too.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

pytest.importorskip("vllm")

from vllm.config import CompilationConfig, VllmConfig, set_current_vllm_config  # noqa: E402
from vllm.model_executor.custom_op import op_registry_oot  # noqa: E402

from my_op.custom_op import kernel, layer  # noqa: E402
from my_op.custom_op.layer import SiluAndMul  # noqa: E402

REPLACEMENT = layer.MyOpSiluAndMul

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"
FAST_PATH = "forward_cuda" if CUDA else "forward_cpu"
TOLERANCES = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-2, 1e-2), torch.bfloat16: (5e-2, 2e-2)}
DTYPES = [
    pytest.param(torch.float32, id="fp32"),
    pytest.param(torch.float16, id="fp16", marks=pytest.mark.gpu),
    pytest.param(torch.bfloat16, id="bf16", marks=pytest.mark.gpu),
]


@pytest.fixture(autouse=True)
def registered() -> Iterator[None]:
    """The state the general plugin leaves in every vLLM process, with fresh call counters."""
    layer.register()
    layer.CALLS.clear()
    yield
    layer.CALLS.clear()


def vllm_config(*custom_ops: str) -> VllmConfig:
    return VllmConfig(compilation_config=CompilationConfig(custom_ops=list(custom_ops)))


# (..., 2 * d), as LlamaMLP hands it over: one token, an odd d, a 3-D input.
SHAPES = [(1, 2 * 8), (7, 2 * 67), (3, 5, 2 * 255)]


def build_in_tree_op() -> SiluAndMul:
    """What LlamaMLP builds."""
    return SiluAndMul()


def same_parameters(
    ours: SiluAndMul, in_tree: SiluAndMul, dtype: torch.dtype
) -> tuple[SiluAndMul, SiluAndMul]:
    return ours, in_tree


def make_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> list[tuple[torch.Tensor, ...]]:
    return [(torch.randn(shape, dtype=dtype, device=DEVICE) * 3,)]


def test_register_replaces_the_in_tree_op_and_is_idempotent() -> None:
    layer.register()
    assert op_registry_oot[SiluAndMul.__name__] is REPLACEMENT
    assert REPLACEMENT.name == "SiluAndMul"  # register_oot renamed it: the custom_ops key
    with set_current_vllm_config(vllm_config("all")):
        assert type(build_in_tree_op()) is REPLACEMENT


def test_register_refuses_to_override_another_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    other = type("OtherSiluAndMul", (SiluAndMul,), {})
    monkeypatch.setitem(op_registry_oot, SiluAndMul.__name__, other)
    with pytest.raises(RuntimeError, match="already replaced by .*OtherSiluAndMul"):
        layer.register()


@pytest.mark.parametrize(
    ("custom_ops", "forward"),
    [
        (["all"], FAST_PATH),
        (["all", "-SiluAndMul"], "forward_native"),
        (["all", "-silu_and_mul"], FAST_PATH),  # the registry name no longer reaches the replacement
        (["none"], "forward_native"),
        (["none", "+SiluAndMul"], FAST_PATH),
        (["none", "+silu_and_mul"], "forward_native"),
    ],
    ids=str,
)
def test_custom_ops_select_the_forward_by_class_name(custom_ops: list[str], forward: str) -> None:
    with set_current_vllm_config(vllm_config(*custom_ops)):
        module = build_in_tree_op()
    assert module._forward_method.__name__ == forward


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_kernel_path_matches_in_tree_forward_native(
    shape: tuple[int, ...], dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    with set_current_vllm_config(vllm_config("all")):
        ours = build_in_tree_op()
        with monkeypatch.context() as patch:
            patch.delitem(op_registry_oot, SiluAndMul.__name__)
            in_tree = build_in_tree_op()
    assert type(in_tree) is SiluAndMul
    ours, in_tree = same_parameters(ours, in_tree, dtype)
    atol, rtol = TOLERANCES[dtype]
    for args in make_inputs(shape, dtype):
        expected = in_tree.forward_native(*[a.clone() for a in args])
        calls = layer.CALLS["triton"]
        actual = getattr(ours, FAST_PATH)(*[a.clone() for a in args])
        torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol)
        assert layer.CALLS["triton"] == calls + 1


def test_forward_cpu_without_the_interpreter_runs_pytorch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Triton cannot compile for CPU: without TRITON_INTERPRET=1, forward_cpu is vLLM's PyTorch path."""
    monkeypatch.setattr(kernel, "INTERPRETED", False)
    with set_current_vllm_config(vllm_config("all")):
        module = build_in_tree_op()
    for args in make_inputs(SHAPES[0], torch.float32):
        module.forward_cpu(*[a.cpu() for a in args])
    assert layer.CALLS == {"native": len(make_inputs(SHAPES[0], torch.float32))}
