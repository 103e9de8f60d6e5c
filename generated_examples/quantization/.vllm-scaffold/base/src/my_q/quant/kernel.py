"""Weight-only int8 GEMM: `y = x @ (w_q * scale[:, None]).T + bias`, dequantizing the weight in the kernel.

Imported by my_q.quant inside every vLLM worker the first time a quantized linear layer runs
(and by the package's tests and benchmark). It imports only torch and triton, so the kernel can be tested and
timed on a machine without vLLM.

- `quantize_per_channel(w)`: symmetric int8, one float32 scale per output channel (row of `w`).
- `int8_weight_only_linear(x, w_q, scale, bias)`: the GEMM. Activations float16, bfloat16 or float32 with any
  leading shape; any M (1 included); N and K need not be multiples of the tile.
- Backends: `triton` (the kernel below: CUDA, or CPU tensors under TRITON_INTERPRET=1) and `torch`
  (dequantize, then `torch.nn.functional.linear`: runs everywhere). `auto` picks Triton whenever it can run.
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

ACTIVATION_DTYPES: tuple[torch.dtype, ...] = (torch.float16, torch.bfloat16, torch.float32)

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


def quantize_per_channel(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-output-channel int8: returns (`w_q` int8 [N, K], `scale` float32 [N])."""
    return quantize_rows(weight)


def dequantize(w_q: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The float weight the int8 weight stands for: `w_q * scale[:, None]`, computed in float32."""
    return (w_q.to(torch.float32) * scale.to(torch.float32)[:, None]).to(dtype)


@triton.jit
def _int8_weight_only_gemm_kernel(
    x_ptr,
    w_ptr,
    scale_ptr,
    bias_ptr,
    out_ptr,
    M,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_wn,
    stride_wk,
    stride_om,
    stride_on,
    HAS_BIAS: tl.constexpr,
    DOT_FP32: tl.constexpr,
    FP32_PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid_m, pid_n = _tile_of_program(M, N, BLOCK_M, BLOCK_N, GROUP_M)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        x, w = _load_k_tiles(
            x_ptr, w_ptr, offs_m, offs_n, k0 + offs_k, M, N, K, stride_xm, stride_xk, stride_wn, stride_wk
        )
        if DOT_FP32:
            # float32 activations, and every dtype under the interpreter (its bfloat16 arithmetic is wrong).
            acc += tl.dot(x.to(tl.float32), w.to(tl.float32), input_precision=FP32_PRECISION)
        else:
            # int8 values are exact in float16 and bfloat16: the tensor cores take the weight in x's dtype.
            acc += tl.dot(x, w.to(x.dtype))
    # Per-channel scale and bias once per output tile, after the K loop.
    scale = tl.load(scale_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
    _store_tile(acc * scale[None, :], bias_ptr, out_ptr, offs_m, offs_n, M, N, stride_om, stride_on, HAS_BIAS)


def _launch_config(m: int, interpreted: bool, aligned: bool = True, fp32: bool = False) -> dict[str, int]:
    """Tile sizes by M and by the activations' dtype."""
    config = tile_config(m, interpreted, aligned, k_tile=64)
    if fp32 and not interpreted:
        # float32 runs as three TF32 products per dot: twice the operand registers of half precision, so a
        # thinner K tile shared by more warps (at the half-precision tiles ptxas spills, sm_80-sm_100).
        config.update(BLOCK_M=min(config["BLOCK_M"], 64), BLOCK_K=32, num_warps=4 if m <= 16 else 8)
    return config


def triton_int8_weight_only_gemm(
    x: torch.Tensor, w_q: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor | None = None
) -> torch.Tensor:
    """`x` [M, K] float, `w_q` [N, K] int8, `scale` [N] float, `bias` [N] or None -> [M, N] in x's dtype."""
    m = x.shape[0]
    n = w_q.shape[0]
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    if m == 0:
        return out
    interpreted = x.device.type == "cpu"
    config = _launch_config(m, interpreted, rows_aligned(x, w_q, out), x.dtype == torch.float32)
    grid = (triton.cdiv(m, config["BLOCK_M"]) * triton.cdiv(n, config["BLOCK_N"]),)
    _int8_weight_only_gemm_kernel[grid](
        x,
        w_q,
        scale,
        bias if bias is not None else scale,  # never read when HAS_BIAS is False
        out,
        *gemm_sizes(x, w_q, out),
        HAS_BIAS=bias is not None,
        DOT_FP32=interpreted or x.dtype == torch.float32,
        # On a GPU float32 goes through the tensor cores as three TF32 products (float32 accuracy): the exact
        # FMA path ("ieee") needs over 255 registers per thread at any useful tile and spills kilobytes.
        FP32_PRECISION="ieee" if interpreted else "tf32x3",
        **config,
    )
    return out


def torch_int8_weight_only_gemm(
    x: torch.Tensor, w_q: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor | None = None
) -> torch.Tensor:
    """The fallback: dequantize the whole weight to x's dtype, then one `F.linear`."""
    return torch.nn.functional.linear(x, dequantize(w_q, scale, x.dtype), bias)


def int8_weight_only_linear(
    x: torch.Tensor,
    w_q: torch.Tensor,
    scale: torch.Tensor,
    bias: torch.Tensor | None = None,
    backend: str = "auto",
) -> torch.Tensor:
    """`x @ (w_q * scale[:, None]).T + bias` for `x` of shape [..., K]; the result has x's dtype."""
    if x.dtype not in ACTIVATION_DTYPES:
        raise TypeError(f"activations must be one of {ACTIVATION_DTYPES}, got {x.dtype}")
    if w_q.dtype != torch.int8 or w_q.dim() != 2 or w_q.shape[1] != x.shape[-1]:
        raise ValueError(f"w_q must be int8 [N, {x.shape[-1]}], got {w_q.dtype} {tuple(w_q.shape)}")
    x_2d = x.reshape(-1, x.shape[-1])
    if select_backend(backend, x.device) == "triton":
        out = triton_int8_weight_only_gemm(x_2d, w_q, scale, bias)
    else:
        out = torch_int8_weight_only_gemm(x_2d, w_q, scale, bias)
    return out.reshape(*x.shape[:-1], w_q.shape[0])


def traffic(m: int, n: int, k: int, dtype: torch.dtype, bias: bool = False) -> tuple[int, int]:
    """(bytes, FLOPs) of one `int8_weight_only_linear` on x [M, K] of `dtype`: x, the int8 weight [N, K], its
    float32 scales and the bias read once, y [M, N] written; 2 FLOPs per multiply-add, plus the scale (and the
    bias add) per output element. Tiles that re-read x or the weight from L2 are not counted."""
    moved = (m * k + m * n + (n if bias else 0)) * dtype.itemsize + n * k + 4 * n
    return moved, 2 * m * n * k + (2 if bias else 1) * m * n


def cuda_launch_configs() -> Iterator[tuple[str, torch.dtype, Callable[[], torch.Tensor]]]:
    """Each tile configuration of the CUDA path x activation dtype, as a call of the host code on shape-only
    tensors (case, dtype, call); the test harness records the launch each call makes and compiles it."""
    for m, n, k in CUDA_CONFIG_SHAPES:
        w_q, scale = shape_only(n, k, dtype=torch.int8), shape_only(n, dtype=torch.float32)
        for dtype in ACTIVATION_DTYPES:
            call = partial(triton_int8_weight_only_gemm, shape_only(m, k, dtype=dtype), w_q, scale)
            yield f"M={m} N={n} K={k}", dtype, call
