"""Benchmark of the CUSTOM attention kernels: decode bandwidth and prefill throughput.

Run by hand (`python benchmarks/bench_attention.py`); no vLLM process loads it. On CUDA it prints, for
bfloat16 and the shapes below, decode attention bandwidth (GB/s of KV cache read, and the share of the
device's peak from a table of known GPUs) and causal prefill TFLOP/s (and its share of the peak), from the
bytes and FLOPs `kernels.traffic` states, next to torch's scaled_dot_product_attention on contiguous
tensors and every attention backend the installed vLLM's platform selects from (members of
AttentionBackendEnum, asked at run time), all measured in this run. A backend that does not import, or
whose `validate_configuration` refuses the shape on this GPU, is listed with the reason; TRITON_ATTN and
FLASH_ATTN are timed through their kernels on the same paged cache; any other backend that accepts the
shape is listed as such, to be compared end to end (`vllm bench latency`, docs/attention.md). Without
CUDA it times the kernels under TRITON_INTERPRET=1 on a tiny shape: those numbers only show that the
kernels run, not how fast they are; it then prints the time the CUDA shapes would take at an H200's peak, a
roofline model from `kernels.traffic`, not a measurement.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import torch.nn.functional as F  # noqa: E402

from my_attn.attention import kernels  # noqa: E402

DECODE = dict(batch=64, context=4096, num_heads=32, num_kv_heads=8, head_size=128)
PREFILL = dict(batch=4, context=2048, num_heads=32, num_kv_heads=8, head_size=128)
BLOCK_SIZE = 16


class Peak(NamedTuple):
    """A GPU's datasheet peaks: HBM bandwidth and dense (no sparsity) tensor-core throughput."""

    gbps: float
    fp16_tflops: float  # fp16/bf16 inputs
    int8_tops: float


# Matched in order as substrings of torch.cuda.get_device_name(): longer names before their prefixes.
PEAKS = {
    "H200": Peak(4800, 989, 1979),
    "H100 PCIe": Peak(2000, 756, 1513),
    "H100": Peak(3350, 989, 1979),
    "B200": Peak(8000, 2250, 4500),
    "A100": Peak(2039, 312, 624),  # 80 GB; the 40 GB part has 1555 GB/s
    "L40S": Peak(864, 362, 733),
    "L4": Peak(300, 121, 242),
}
H200 = PEAKS["H200"]


def device_peak(name: str) -> Peak | None:
    """The peaks of the GPU called `name`, or None for a GPU the table does not know."""
    return next((peak for key, peak in PEAKS.items() if key in name), None)


def peak_seconds(bytes_moved: int, flops: int, peak: Peak, int8: bool = False) -> tuple[float, bool]:
    """Roofline time at `peak`: the slower of moving the bytes and doing the FLOPs; and whether memory is."""
    memory = bytes_moved / (peak.gbps * 1e9)
    compute = flops / ((peak.int8_tops if int8 else peak.fp16_tflops) * 1e12)
    return max(memory, compute), memory >= compute


def achieved(bytes_moved: int, flops: int, seconds: float, peak: Peak | None, int8: bool = False) -> str:
    """The measured rate of the bounding resource and its share of `peak` if known,
    e.g. '812 GB/s, 17% of peak'."""
    memory_bound = peak_seconds(bytes_moved, flops, peak or H200, int8)[1]
    if memory_bound:
        rate, unit, ceiling = bytes_moved / seconds / 1e9, "GB/s", peak and peak.gbps
    else:
        rate, unit = flops / seconds / 1e12, "TOP/s" if int8 else "TFLOP/s"
        ceiling = peak and (peak.int8_tops if int8 else peak.fp16_tflops)
    share = f", {100 * rate / ceiling:.0f}% of peak" if ceiling else ""
    return f"{rate:.3g} {unit}{share}"


def h200_model(bytes_moved: int, flops: int, int8: bool = False) -> str:
    """Expected time at an H200's peak: a model from the kernel's traffic, not a measurement."""
    seconds, memory_bound = peak_seconds(bytes_moved, flops, H200, int8)
    return f"{seconds * 1e6:.3g} us ({'memory' if memory_bound else 'compute'}-bound)"


H200_MODEL_NOTE = (
    "# H200 model, not a measurement: roofline time at 4.8 TB/s HBM, 989 TFLOP/s fp16/bf16, 1979 TOP/s int8"
)


def paged_batch(
    batch: int,
    context: int,
    query_len: int,
    num_heads: int,
    num_kv_heads: int,
    head_size: int,
    dtype: torch.dtype,
    device: str,
) -> dict[str, torch.Tensor]:
    """`batch` requests of `context` tokens, the last `query_len` of them queries, pages in shuffled order."""
    pages = context // BLOCK_SIZE
    kv_cache = torch.randn(batch * pages, num_kv_heads, BLOCK_SIZE, 2 * head_size, dtype=dtype, device=device)
    block_table = torch.randperm(batch * pages, device=device).to(torch.int32).view(batch, pages)
    return {
        "query": torch.randn(batch * query_len, num_heads, head_size, dtype=dtype, device=device),
        "kv_cache": kv_cache,
        "query_start_loc": torch.arange(0, batch * query_len + 1, query_len, device=device).to(torch.int32),
        "seq_lens": torch.full((batch,), context, dtype=torch.int32, device=device),
        "block_table": block_table,
    }  # fmt: skip


def ours(tensors: dict[str, torch.Tensor], query_len: int) -> Callable[[], object]:
    output = torch.empty_like(tensors["query"])
    batch = tensors["seq_lens"].shape[0]
    num_kv_heads = tensors["kv_cache"].shape[1]
    target = 2 * torch.cuda.get_device_properties(0).multi_processor_count if torch.cuda.is_available() else 0
    splits = kernels.decode_splits(int(tensors["seq_lens"].max()), batch, num_kv_heads, target)
    scale = tensors["query"].shape[-1] ** -0.5
    return lambda: kernels.paged_attention(
        tensors["query"], tensors["kv_cache"], output, tensors["query_start_loc"], tensors["seq_lens"],
        tensors["block_table"], scale, max_query_len=query_len, num_decodes=batch if query_len == 1 else 0,
        num_splits=splits if query_len == 1 else 1,
    )  # fmt: skip


def sdpa(
    batch: int,
    context: int,
    query_len: int,
    num_heads: int,
    num_kv_heads: int,
    head_size: int,
    dtype: torch.dtype,
) -> Callable[[], object]:
    q = torch.randn(batch, num_heads, query_len, head_size, dtype=dtype, device="cuda")
    k = torch.randn(batch, num_kv_heads, context, head_size, dtype=dtype, device="cuda")
    v = torch.randn_like(k)
    return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=query_len > 1, enable_gqa=True)


def token_major(tensors: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """The same keys and values as [blocks, block_size, kv_heads, head] views, the layout the TRITON_ATTN and
    FLASH_ATTN calls below take."""
    head_size = tensors["query"].shape[-1]
    cache = tensors["kv_cache"].transpose(1, 2)
    return cache[..., :head_size], cache[..., head_size:]


def vllm_triton_attn(tensors: dict[str, torch.Tensor], query_len: int) -> Callable[[], object]:
    """vLLM's TRITON_ATTN kernel on the same cache."""
    from vllm.v1.attention.ops.triton_unified_attention import unified_attention

    keys, values = token_major(tensors)
    output = torch.empty_like(tensors["query"])
    return lambda: unified_attention(
        q=tensors["query"], k=keys, v=values, out=output, cu_seqlens_q=tensors["query_start_loc"],
        max_seqlen_q=query_len, seqused_k=tensors["seq_lens"], max_seqlen_k=int(tensors["seq_lens"].max()),
        softmax_scale=tensors["query"].shape[-1] ** -0.5, causal=True, window_size=(-1, -1),
        block_table=tensors["block_table"], softcap=0, q_descale=None, k_descale=None, v_descale=None,
    )  # fmt: skip


def vllm_flash_attn(tensors: dict[str, torch.Tensor], query_len: int) -> Callable[[], object]:
    """vLLM's FLASH_ATTN kernel (vllm_flash_attn, at the version get_flash_attn_version() gives) on the same
    cache."""
    from vllm.v1.attention.backends.fa_utils import flash_attn_varlen_func, get_flash_attn_version

    keys, values = token_major(tensors)
    output = torch.empty_like(tensors["query"])
    head_size = tensors["query"].shape[-1]
    return lambda: flash_attn_varlen_func(
        q=tensors["query"], k=keys, v=values, out=output, cu_seqlens_q=tensors["query_start_loc"],
        max_seqlen_q=query_len, seqused_k=tensors["seq_lens"], max_seqlen_k=int(tensors["seq_lens"].max()),
        softmax_scale=head_size**-0.5, causal=True, block_table=tensors["block_table"],
        fa_version=get_flash_attn_version(head_size=head_size),
    )  # fmt: skip


# The in-tree backends this benchmark calls at kernel level; their signatures are vLLM's, not ours to keep.
KERNEL_CALLS: dict[str, Callable[[dict[str, torch.Tensor], int], Callable[[], object]]] = {
    "TRITON_ATTN": vllm_triton_attn,
    "FLASH_ATTN": vllm_flash_attn,
}


def in_tree_backends(num_heads: int, head_size: int, dtype: torch.dtype) -> dict[str, str | None]:
    """Each attention backend the installed vLLM's platform chooses from for this shape, in its order of
    preference: None if it accepts the shape on this GPU, else why not (it does not import, or its
    `validate_configuration` refuses)."""
    try:
        from vllm.platforms import current_platform
        from vllm.v1.attention.selector import AttentionSelectorConfig
    except Exception as error:  # vLLM absent
        return {"backends": f"not measured ({type(error).__name__}: {error})"}
    platform = type(current_platform)
    if not hasattr(platform, "get_valid_backends"):  # a vLLM build for CPU, say
        return {"backends": f"not measured (vLLM's {platform.__name__} selects among no attention backends)"}
    config = AttentionSelectorConfig(
        head_size=head_size, dtype=dtype, kv_cache_dtype="auto", block_size=BLOCK_SIZE
    )
    capability = current_platform.get_device_capability()
    valid, invalid = current_platform.get_valid_backends(capability, config, num_heads=num_heads)
    found: dict[str, str | None] = {candidate.backend.name: None for candidate in valid}
    found.update({backend.name: f"unavailable: {'; '.join(why)}" for backend, (_, why) in invalid.items()})
    return found


def in_tree_ms(name: str, tensors: dict[str, torch.Tensor], query_len: int) -> float | str:
    """Time of an in-tree backend's kernel that accepted the shape, or why it was not measured."""
    call = KERNEL_CALLS.get(name)
    if call is None:
        return "accepts this shape; no kernel-level call here: compare it end to end (vllm bench latency)"
    try:
        return cuda_ms(call(tensors, query_len))
    except Exception as error:  # a vLLM whose kernel takes other arguments, or that lacks it
        return f"not measured ({type(error).__name__}: {error})"


def cuda_ms(fn: Callable[[], object], repeats: int = 20) -> float:
    import triton.testing

    return float(triton.testing.do_bench(fn, warmup=5, rep=repeats * 5))


def report(label: str, ms: float | str, traffic: tuple[int, int], peak: Peak | None) -> None:
    if isinstance(ms, str):
        print(f"  {label:<28} {ms}")
        return
    print(f"  {label:<28} {ms:8.3f} ms  {achieved(*traffic, ms * 1e-3, peak)}")


def bench_cuda() -> None:
    dtype = torch.bfloat16
    device = torch.cuda.get_device_name(0)
    peak = device_peak(device)
    peak_text = f"peak {peak.gbps:.0f} GB/s, {peak.fp16_tflops:.0f} TFLOP/s" if peak else "unknown GPU"
    print(f"device: {device} ({peak_text}), dtype bfloat16, block size {BLOCK_SIZE}")
    # DECODE and PREFILL share the head shape: one registry pass answers for both.
    backends = in_tree_backends(DECODE["num_heads"], DECODE["head_size"], dtype)
    for label, shape, query_len in (("decode", DECODE, 1), ("prefill", PREFILL, PREFILL["context"])):
        tensors = paged_batch(query_len=query_len, dtype=dtype, device="cuda", **shape)
        traffic = kernels.traffic(query_len=query_len, dtype=dtype, **shape)
        print(f"{label}: {shape}" + (", causal" if query_len > 1 else ""))
        report("CUSTOM (Triton)", cuda_ms(ours(tensors, query_len)), traffic, peak)
        sdpa_ms = cuda_ms(sdpa(query_len=query_len, dtype=dtype, **shape))
        report("scaled_dot_product_attention", sdpa_ms, traffic, peak)
        for name, reason in backends.items():
            report(f"vLLM {name}", reason or in_tree_ms(name, tensors, query_len), traffic, peak)


def bench_interpreter() -> None:
    print("no CUDA device: Triton interpreter on CPU (TRITON_INTERPRET=1), float32, tiny shapes.")
    print("These timings only show that the kernels run; they say nothing about GPU performance.")
    for label, query_len, context in (("decode", 1, 256), ("prefill", 64, 64)):
        tensors = paged_batch(4, context, query_len, 4, 2, 64, torch.float32, "cpu")
        run = ours(tensors, query_len)
        run()  # the interpreter's first call pays for parsing the kernel
        start = time.perf_counter()
        run()
        elapsed_ms = 1e3 * (time.perf_counter() - start)
        print(f"  {label}: batch 4, context {context}, query {query_len}: {elapsed_ms:.1f} ms")
    print(f"{H200_MODEL_NOTE}; bfloat16")
    for label, shape, query_len in (("decode", DECODE, 1), ("prefill", PREFILL, PREFILL["context"])):
        moved, flops = kernels.traffic(query_len=query_len, dtype=torch.bfloat16, **shape)
        amounts = f"{moved / 1e6:.4g} MB, {flops / 1e9:.4g} GFLOP"
        print(f"  {label}: {shape}: {amounts}, {h200_model(moved, flops)}")


if __name__ == "__main__":
    if torch.cuda.is_available():
        bench_cuda()
    else:
        bench_interpreter()
