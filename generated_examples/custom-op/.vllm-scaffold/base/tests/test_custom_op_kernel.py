"""The Triton kernel of `my_op` against an eager PyTorch reference of vLLM's `SiluAndMul.forward_native`.

Runs without vLLM: it imports only torch, triton, pytest and the kernel module. On CPU the test harness sets
TRITON_INTERPRET=1, so the kernel runs in the Triton interpreter, in fp32 only (the interpreter's bf16
arithmetic is wrong and it is slow). On CUDA the fp16 and bf16 cases (marked `gpu`) run too, and the
torch.compile test finds the Triton kernel itself in Inductor's generated code.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch._inductor.utils import run_and_get_code

from my_op.custom_op import kernel

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# (atol, rtol) per dtype: fp32 differs only in summation order; fp16/bf16 in where the result is rounded.
TOLERANCES = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-2, 1e-2), torch.bfloat16: (5e-2, 2e-2)}
DTYPES = [
    pytest.param(torch.float32, id="fp32"),
    pytest.param(torch.float16, id="fp16", marks=pytest.mark.gpu),
    pytest.param(torch.bfloat16, id="bf16", marks=pytest.mark.gpu),
]

KERNEL_NAME = "_silu_and_mul_kernel"
# (..., 2 * d): a single element, d odd and below one tile, a 3-D input, d straddling two tiles of BLOCK_D.
SHAPES = [(1, 2), (7, 2 * 67), (3, 5, 2 * 255), (5, 2 * (kernel.BLOCK_D + 37))]


def reference(x: torch.Tensor) -> torch.Tensor:
    """vLLM's SiluAndMul.forward_native."""
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


def make_args(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor]:
    return (torch.randn(shape, dtype=dtype, device=DEVICE) * 3,)


VARIANTS: dict[str, tuple[torch._ops.OpOverload, Callable[..., object], Callable[..., tuple]]] = {
    "silu_and_mul": (torch.ops.my_op.my_op.default, reference, make_args),
}


def test_traffic_matches_a_hand_count() -> None:
    """2 tokens, d = 3, bf16: reads 2 x 6 and writes 2 x 3 elements of 2 bytes; 5 FLOPs per output element."""
    assert kernel.traffic(2, 3, torch.bfloat16) == ((12 + 6) * 2, 6 * 5)


def assert_close(actual: object, expected: object, dtype: torch.dtype) -> None:
    atol, rtol = TOLERANCES[dtype]
    torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("variant", VARIANTS)
def test_kernel_matches_reference(variant: str, shape: tuple[int, ...], dtype: torch.dtype) -> None:
    op, ref, make = VARIANTS[variant]
    args = make(shape, dtype)
    assert_close(op(*args), ref(*args), dtype)


@pytest.mark.parametrize("variant", VARIANTS)
def test_custom_op_passes_opcheck(variant: str) -> None:
    """Schema, fake implementation, and (on CUDA) triton_op's functional decomposition for AOT autograd."""
    op, _, make = VARIANTS[variant]
    torch.library.opcheck(op, make(SHAPES[1], torch.float32))


@pytest.mark.parametrize("variant", VARIANTS)
def test_torch_compile_traces_the_op(variant: str) -> None:
    op, ref, make = VARIANTS[variant]
    args = make(SHAPES[1], torch.float32)
    torch._dynamo.reset()
    compiled = torch.compile(op, fullgraph=True, dynamic=False)
    result, code = run_and_get_code(compiled, *args)
    assert_close(result, ref(*args), torch.float32)
    # triton_op lets Inductor put the Triton kernel itself into the generated code; under the interpreter the
    # op is an opaque custom op, which the compiled graph calls.
    op_call = f"torch.ops.{op.name().replace('::', '.')}"
    wanted = op_call if kernel.INTERPRETED else KERNEL_NAME
    assert any(wanted in source for source in code), f"{wanted} not in the generated code"


def test_interpreter_matches_the_device() -> None:
    """custom_op under the interpreter, triton_op on CUDA: the registration follows where the kernel runs."""
    assert kernel.INTERPRETED == (DEVICE == "cpu")
