"""int8 W8A8 scaled GEMM: `y = (a_q @ w_q.T) * scale_a[m] * scale_w[n] + bias`, int32 accumulation in Triton.

Imported by my_k.gemm.linear_kernel inside each vLLM worker when a quantized layer is built (and
by the package's tests and benchmark). It imports only torch and triton, so the kernel can be tested and timed
where vLLM is absent.

- `quantize_per_token(x)` / `quantize_per_tensor(x, scale)`: symmetric int8 activations.
- `int8_scaled_mm(a_q, w_q, scale_a, scale_w, bias, out_dtype)`: the GEMM for any M (1 included) and N, K off
  the tile grid. `w_q` is the checkpoint's [N, K] int8 weight, read transposed through its strides.
- Backends: `triton` (CUDA, or CPU tensors under TRITON_INTERPRET=1) and `torch` (exact integer products in
  float64: slow, runs everywhere). `auto` picks Triton whenever it can run on the tensor.
- `cuda_launch_configs()`: the launches the CUDA path can choose (`pytest --cuda-arch` compiles them).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from functools import partial
from typing import Literal

import torch
import triton
import triton.language as tl

Backend = Literal["triton", "torch"]
BACKENDS: tuple[str, ...] = ("auto", "triton", "torch")
INT8_MAX = 127
# One (M, N, K) per tile configuration `tile_config` picks on CUDA (M <= 16, M <= 128, larger) at a
# Llama-sized layer, then the same off the 16-element grid: the shapes `cuda_launch_configs()` declares.
CUDA_CONFIG_SHAPES: tuple[tuple[int, int, int], ...] = (
    (16, 4096, 4096),
    (128, 4096, 4096),
    (4096, 4096, 4096),
    (16, 4104, 4104),
    (128, 4104, 4104),
    (4096, 4104, 4104),
)
# K tile for rows that do not start on a 16-element boundary: their loads cannot be vectorized, and with a
# larger K tile the scalar loads of one tile need over 255 registers per thread (ptxas spills, sm_80-sm_100).
UNALIGNED_BLOCK_K = 32


def quantize_rows(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric int8 per row of `t` [R, C]: returns (int8 [R, C], float32 scale [R]).

    An all-zero row gets scale 1 instead of 0, so dequantization never divides by zero.
    """
    tf = t.detach().to(torch.float32)
    amax = tf.abs().amax(dim=1)
    scale = torch.where(amax > 0, amax / INT8_MAX, torch.ones_like(amax))
    return torch.round(tf / scale[:, None]).clamp_(-INT8_MAX, INT8_MAX).to(torch.int8), scale


def triton_can_run(device: torch.device) -> bool:
    """Whether the Triton kernel can run on tensors of `device`: CUDA, or CPU under TRITON_INTERPRET=1."""
    if device.type == "cuda":
        return True
    return device.type == "cpu" and os.environ.get("TRITON_INTERPRET") == "1"


def select_backend(requested: str, device: torch.device) -> Backend:
    """Resolves `auto` for `device`; a forced `triton` that cannot run there is an error, not a fallback."""
    if requested not in BACKENDS:
        raise ValueError(f"unknown int8 GEMM backend {requested!r}: use one of {', '.join(BACKENDS)}")
    if requested == "torch":
        return "torch"
    if triton_can_run(device):
        return "triton"
    if requested == "triton":
        raise RuntimeError(
            f"the Triton int8 GEMM cannot run on {device}: it needs CUDA, or TRITON_INTERPRET=1 on CPU"
        )
    return "torch"


@triton.jit
def _tile_of_program(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(pid_m, pid_n) of this program in grouped order: consecutive programs share rows of the left operand,
    which keeps them in L2 on a GPU."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * num_pid_n
    first_m = (pid // group_size) * GROUP_M
    rows_in_group = tl.minimum(num_pid_m - first_m, GROUP_M)
    return first_m + (pid % group_size) % rows_in_group, (pid % group_size) // rows_in_group


@triton.jit
def _load_k_tiles(x_ptr, w_ptr, offs_m, offs_n, k, M, N, K, stride_xm, stride_xk, stride_wn, stride_wk):
    """At K offsets `k`: the [BLOCK_M, BLOCK_K] tile of the activations x [M, K] at rows `offs_m`, and the
    [BLOCK_K, BLOCK_N] tile of the weight at rows `offs_n`, read transposed straight from its [N, K] layout.
    Elements past M, N or K read as zero, so they add nothing to the dot product."""
    mask_k = k < K
    x = tl.load(
        x_ptr + offs_m[:, None] * stride_xm + k[None, :] * stride_xk,
        mask=(offs_m < M)[:, None] & mask_k[None, :],
        other=0,
    )
    w = tl.load(
        w_ptr + k[:, None] * stride_wk + offs_n[None, :] * stride_wn,
        mask=mask_k[:, None] & (offs_n < N)[None, :],
        other=0,
    )
    return x, w


@triton.jit
def _store_tile(acc, bias_ptr, out_ptr, offs_m, offs_n, M, N, stride_om, stride_on, HAS_BIAS: tl.constexpr):
    """Adds the bias (once per output tile, in float32) to the float32 tile `acc` and writes the sum at rows
    `offs_m`, columns `offs_n` of out [M, N], in out's dtype."""
    mask_n = offs_n < N
    if HAS_BIAS:
        acc += tl.load(bias_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)[None, :]
    tl.store(
        out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on,
        acc.to(out_ptr.dtype.element_ty),
        mask=(offs_m < M)[:, None] & mask_n[None, :],
    )


def tile_config(m: int, interpreted: bool, aligned: bool, k_tile: int) -> dict[str, int]:
    """Tile sizes by M for a kernel whose K tile is `k_tile` (twice as deep for M <= 16). The interpreter pays
    per program instance, so it gets few, large programs."""
    if interpreted:
        return dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=64, GROUP_M=1, num_warps=4, num_stages=1)
    if not aligned:
        return {**tile_config(m, interpreted, True, k_tile), "BLOCK_K": UNALIGNED_BLOCK_K}
    if m <= 16:
        return dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=k_tile * 2, GROUP_M=1, num_warps=4, num_stages=4)
    if m <= 128:
        return dict(BLOCK_M=64, BLOCK_N=128, BLOCK_K=k_tile, GROUP_M=8, num_warps=4, num_stages=4)
    return dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=k_tile, GROUP_M=8, num_warps=8, num_stages=3)


def gemm_sizes(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor) -> tuple[int, ...]:
    """The kernels' size arguments for x [M, K], w [N, K] and out [M, N]: M, N, K, then the row and column
    strides of x, w and out."""
    return (*out.shape, x.shape[1], *x.stride(), *w.stride(), *out.stride())


def shape_only(*shape: int, dtype: torch.dtype) -> torch.Tensor:
    """A tensor with a shape and a dtype but no storage ("meta"): enough to run the host code of a launch."""
    return torch.empty(shape, dtype=dtype, device="meta")


def rows_aligned(*tensors: torch.Tensor) -> bool:
    """Whether every row of `tensors` starts on a 16-element boundary (so the kernel can vectorize loads)."""
    return all(t.stride(0) % 16 == 0 for t in tensors)


def quantize_per_token(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric dynamic int8 per row of `x` [M, K]: returns (x_q int8 [M, K], scale float32 [M])."""
    return quantize_rows(x)


def quantize_per_tensor(x: torch.Tensor, scale: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric static int8 with the calibrated scalar `scale`: returns (x_q int8, scale float32 [M])."""
    scale = scale.to(device=x.device, dtype=torch.float32).reshape(())
    x_q = torch.round(x.to(torch.float32) / scale).clamp_(-INT8_MAX, INT8_MAX).to(torch.int8)
    return x_q, scale.expand(x.shape[0]).contiguous()


@triton.jit
def _int8_scaled_mm_kernel(
    a_ptr,
    w_ptr,
    scale_a_ptr,
    scale_w_ptr,
    bias_ptr,
    out_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_wn,
    stride_wk,
    stride_om,
    stride_on,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid_m, pid_n = _tile_of_program(M, N, BLOCK_M, BLOCK_N, GROUP_M)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k0 in range(0, K, BLOCK_K):
        a, w = _load_k_tiles(
            a_ptr, w_ptr, offs_m, offs_n, k0 + offs_k, M, N, K, stride_am, stride_ak, stride_wn, stride_wk
        )
        acc += tl.dot(a, w, out_dtype=tl.int32)  # exact: int8 x int8 products summed in int32
    scale_a = tl.load(scale_a_ptr + offs_m, mask=offs_m < M, other=0.0)
    scale_w = tl.load(scale_w_ptr + offs_n, mask=offs_n < N, other=0.0)
    out = acc.to(tl.float32) * scale_a[:, None] * scale_w[None, :]
    _store_tile(out, bias_ptr, out_ptr, offs_m, offs_n, M, N, stride_om, stride_on, HAS_BIAS)


def triton_int8_scaled_mm(
    a_q: torch.Tensor,
    w_q: torch.Tensor,
    scale_a: torch.Tensor,
    scale_w: torch.Tensor,
    bias: torch.Tensor | None,
    out_dtype: torch.dtype,
) -> torch.Tensor:
    """`a_q` [M, K] int8, `w_q` [N, K] int8, `scale_a` [M] and `scale_w` [N] float32 -> [M, N] `out_dtype`."""
    m = a_q.shape[0]
    n = w_q.shape[0]
    out = torch.empty((m, n), dtype=out_dtype, device=a_q.device)
    if m == 0:
        return out
    interpreted = a_q.device.type == "cpu"
    config = tile_config(m, interpreted, rows_aligned(a_q, w_q, out), k_tile=128)
    grid = (triton.cdiv(m, config["BLOCK_M"]) * triton.cdiv(n, config["BLOCK_N"]),)
    _int8_scaled_mm_kernel[grid](
        a_q,
        w_q,
        scale_a,
        scale_w,
        bias if bias is not None else scale_w,  # never read when HAS_BIAS is False
        out,
        *gemm_sizes(a_q, w_q, out),
        HAS_BIAS=bias is not None,
        **config,
    )
    return out


def int8_scaled_mm(
    a_q: torch.Tensor,
    w_q: torch.Tensor,
    scale_a: torch.Tensor,
    scale_w: torch.Tensor,
    bias: torch.Tensor | None = None,
    out_dtype: torch.dtype = torch.float32,
    backend: str = "auto",
) -> torch.Tensor:
    """The W8A8 GEMM with per-row activation scales and per-channel weight scales (float32)."""
    if a_q.dtype != torch.int8 or w_q.dtype != torch.int8 or a_q.shape[1] != w_q.shape[1]:
        raise ValueError(
            f"need int8 a_q [M, K] and int8 w_q [N, K]; got {a_q.dtype} {tuple(a_q.shape)}, "
            f"{w_q.dtype} {tuple(w_q.shape)}"
        )
    scale_a = scale_a.to(torch.float32).contiguous()
    scale_w = scale_w.to(torch.float32).contiguous()
    if select_backend(backend, a_q.device) == "triton":
        return triton_int8_scaled_mm(a_q, w_q, scale_a, scale_w, bias, out_dtype)
    # The torch backend: integer products are exact in float64 (|sum| < 2**53 for any realistic K).
    acc = a_q.to(torch.float64) @ w_q.to(torch.float64).T
    out = acc.to(torch.float32) * scale_a[:, None] * scale_w[None, :]
    if bias is not None:
        out = out + bias.to(torch.float32)
    return out.to(out_dtype)


def traffic(m: int, n: int, k: int, out_dtype: torch.dtype, bias: bool = False) -> tuple[int, int]:
    """(bytes, integer and float ops) of one `int8_scaled_mm`: a_q [M, K] and w_q [N, K] int8, their float32
    scales and the bias read once, y [M, N] written in `out_dtype`; 2 ops per int8 multiply-add, plus the two
    scales (and the bias add) per output element. Tiles re-read from L2 are not counted."""
    moved = m * k + n * k + 4 * (m + n) + (m * n + (n if bias else 0)) * out_dtype.itemsize
    return moved, 2 * m * n * k + (3 if bias else 2) * m * n


def cuda_launch_configs() -> Iterator[tuple[str, torch.dtype, Callable[[], torch.Tensor]]]:
    """Each tile configuration of the CUDA path x output dtype, as a call of the host code on shape-only
    tensors (case, dtype, call); the test harness records the launch each call makes and compiles it."""
    for m, n, k in CUDA_CONFIG_SHAPES:
        a_q, w_q = shape_only(m, k, dtype=torch.int8), shape_only(n, k, dtype=torch.int8)
        scale_a, scale_w = shape_only(m, dtype=torch.float32), shape_only(n, dtype=torch.float32)
        for out_dtype in (torch.float16, torch.bfloat16, torch.float32):
            call = partial(triton_int8_scaled_mm, a_q, w_q, scale_a, scale_w, None, out_dtype)
            yield f"M={m} N={n} K={k}", out_dtype, call
