"""The Triton kernel of `my_op` and the PyTorch custom op `my_op::my_op` around it.

Loaded by the vLLM worker the first time a `MyOpSiluAndMul` runs forward_cuda or forward_cpu, and by
the tests and the benchmark directly. Imports only torch and triton, so it also runs where vLLM is absent.

`my_op(x)` computes silu(x[..., :d]) * x[..., d:] with d = x.shape[-1] // 2, what vLLM's SiluAndMul does.
On CUDA the op is a `torch.library.triton_op`: torch.compile sees through it to the kernel (Inductor can
schedule it with its neighbours). Under TRITON_INTERPRET=1, `@triton.jit` returns an interpreted function that
wrap_triton cannot trace, and triton_op's functional decomposition would run the interpreter on fake tensors;
there the same function is registered as an opaque `torch.library.custom_op`. Both get the same fake
implementation, so opcheck and torch.compile work in both cases.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import torch
import triton
import triton.language as tl
from torch.library import custom_op, triton_op, wrap_triton

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
OP_NAME = "my_op::my_op"
# Columns per program: the grid is (rows, cdiv(d, BLOCK_D)), so one tile never holds a whole 14336-wide row.
BLOCK_D = 1024


@triton.jit
def _silu_and_mul_kernel(x_ptr, out_ptr, d, stride_x_row, stride_out_row, BLOCK_D: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = cols < d
    # fp32 math whatever the storage dtype (also sidesteps the interpreter's wrong bf16 arithmetic).
    gate = tl.load(x_ptr + row * stride_x_row + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + row * stride_x_row + d + cols, mask=mask, other=0.0).to(tl.float32)
    silu = gate / (1.0 + tl.exp(-gate))
    tl.store(out_ptr + row * stride_out_row + cols, (silu * up).to(out_ptr.dtype.element_ty), mask=mask)


def _silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    rows = x.reshape(-1, x.shape[-1]).contiguous()
    out = torch.empty((rows.shape[0], d), dtype=x.dtype, device=x.device)
    # No branch on the token count: under torch.compile it is symbolic, and a branch would add a guard.
    grid = (rows.shape[0], triton.cdiv(d, BLOCK_D))
    wrap_triton(_silu_and_mul_kernel)[grid](rows, out, d, rows.stride(0), out.stride(0), BLOCK_D=BLOCK_D)
    return out.reshape(*x.shape[:-1], d)


my_op = (custom_op if INTERPRETED else triton_op)(OP_NAME, mutates_args=())(_silu_and_mul)


@my_op.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return x.new_empty((*x.shape[:-1], x.shape[-1] // 2))


def traffic(tokens: int, d: int, dtype: torch.dtype) -> tuple[int, int]:
    """(bytes, FLOPs) of one call on (tokens, 2 * d) input: reads 2 * d and writes d elements per token;
    per output element silu(g) * u = g / (1 + exp(-g)) * u is 5 FLOPs (negate, exp, add, divide, multiply)."""
    return 3 * tokens * d * dtype.itemsize, 5 * tokens * d


def cuda_launch_configs() -> Iterator[tuple[str, torch.dtype, Callable[[], torch.Tensor]]]:
    """The launch of the CUDA path per dtype (the tile does not depend on the shape), as a call of the host
    code; `pytest --cuda-arch` records the launch without running it and compiles it for real GPUs. The
    tensor is an uninitialised CPU one: wrap_triton launches nothing for shape-only ("meta") tensors."""
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        x = torch.empty(256, 2 * 14336, dtype=dtype)
        yield "256 tokens x 14336", dtype, lambda x=x: _silu_and_mul(x)
