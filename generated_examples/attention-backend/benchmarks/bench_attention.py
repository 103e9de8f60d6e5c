"""Benchmark of the CUSTOM attention kernels: decode bandwidth and prefill throughput.

Run by hand (`python benchmarks/bench_attention.py`); no vLLM process loads it. On CUDA it prints, for
bfloat16 and the shapes below, decode attention bandwidth (GB/s of KV cache read, and the share of the
device's peak) and causal prefill TFLOP/s, next to torch's scaled_dot_product_attention on contiguous
tensors and, when vLLM for CUDA is installed, vLLM's own TRITON_ATTN kernel on the same paged cache, all
measured in this run. Without CUDA it times the kernels under TRITON_INTERPRET=1 on a tiny shape: those
numbers only show that the kernels run, not how fast they are.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import torch.nn.functional as F  # noqa: E402

from my_attn.attention import kernels  # noqa: E402

DECODE = dict(batch=64, context=4096, num_heads=32, num_kv_heads=8, head_size=128)
PREFILL = dict(batch=4, context=2048, num_heads=32, num_kv_heads=8, head_size=128)
BLOCK_SIZE = 16


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


def vllm_triton_attn(tensors: dict[str, torch.Tensor], query_len: int) -> Callable[[], object] | str:
    """vLLM's TRITON_ATTN kernel on the same cache, or why it cannot run here."""
    try:
        from vllm.v1.attention.ops.triton_unified_attention import unified_attention
    except Exception as error:  # vLLM absent, or a build without CUDA kernels
        return f"not measured ({type(error).__name__}: {error})"
    head_size = tensors["query"].shape[-1]
    token_major = tensors["kv_cache"].transpose(1, 2)  # [blocks, block_size, kv_heads, 2 * head]
    output = torch.empty_like(tensors["query"])
    context = int(tensors["seq_lens"].max())
    return lambda: unified_attention(
        q=tensors["query"], k=token_major[..., :head_size], v=token_major[..., head_size:], out=output,
        cu_seqlens_q=tensors["query_start_loc"], max_seqlen_q=query_len, seqused_k=tensors["seq_lens"],
        max_seqlen_k=context, softmax_scale=head_size**-0.5, causal=True, window_size=(-1, -1),
        block_table=tensors["block_table"], softcap=0, q_descale=None, k_descale=None, v_descale=None,
    )  # fmt: skip


def cuda_ms(fn: Callable[[], object], repeats: int = 20) -> float:
    import triton.testing

    return float(triton.testing.do_bench(fn, warmup=5, rep=repeats * 5))


def vllm_ms(run: Callable[[], object] | str) -> float | str:
    """Time of vLLM's kernel, or why it was not measured (its signature is vLLM's, not ours to keep)."""
    if isinstance(run, str):
        return run
    try:
        return cuda_ms(run)
    except Exception as error:  # a vLLM whose unified_attention takes other arguments
        return f"not measured ({type(error).__name__}: {error})"


def peak_bandwidth_gbs() -> float:
    """The device's peak DRAM bandwidth from its memory clock and bus width (0 when torch does not say)."""
    props = torch.cuda.get_device_properties(0)
    clock_khz = getattr(props, "memory_clock_rate", 0)
    bus_bits = getattr(props, "memory_bus_width", 0)
    return 2 * clock_khz * 1e3 * bus_bits / 8 / 1e9


def report(label: str, ms: float | str, amount: float, unit: str, peak: float = 0.0) -> None:
    if isinstance(ms, str):
        print(f"  {label:<28} {ms}")
        return
    rate = amount / (ms * 1e-3)
    share = f"  ({100 * rate / peak:.0f}% of peak {peak:.0f} {unit})" if peak else ""
    print(f"  {label:<28} {ms:8.3f} ms  {rate:9.1f} {unit}{share}")


def bench_cuda() -> None:
    dtype = torch.bfloat16
    print(f"device: {torch.cuda.get_device_name(0)}, dtype bfloat16, block size {BLOCK_SIZE}")

    shape = DECODE
    tensors = paged_batch(query_len=1, dtype=dtype, device="cuda", **shape)
    kv_bytes = 2 * shape["batch"] * shape["context"] * shape["num_kv_heads"] * shape["head_size"] * 2
    print(f"decode: {shape}; GB/s of KV cache read")
    peak = peak_bandwidth_gbs()
    report("CUSTOM (Triton)", cuda_ms(ours(tensors, 1)), kv_bytes / 1e9, "GB/s", peak)
    sdpa_ms = cuda_ms(sdpa(query_len=1, dtype=dtype, **shape))
    report("scaled_dot_product_attention", sdpa_ms, kv_bytes / 1e9, "GB/s", peak)
    report("vLLM TRITON_ATTN", vllm_ms(vllm_triton_attn(tensors, 1)), kv_bytes / 1e9, "GB/s", peak)

    shape = PREFILL
    tensors = paged_batch(query_len=shape["context"], dtype=dtype, device="cuda", **shape)
    # Causal: half of the QK^T and PV products, 2 FLOPs per multiply-add.
    flops = 2 * 2 * shape["batch"] * shape["num_heads"] * shape["context"] ** 2 * shape["head_size"] / 2
    print(f"prefill: {shape}; causal TFLOP/s")
    report("CUSTOM (Triton)", cuda_ms(ours(tensors, shape["context"])), flops / 1e12, "TFLOP/s")
    report("scaled_dot_product_attention", cuda_ms(sdpa(query_len=shape["context"], dtype=dtype, **shape)),
           flops / 1e12, "TFLOP/s")  # fmt: skip
    report("vLLM TRITON_ATTN", vllm_ms(vllm_triton_attn(tensors, shape["context"])), flops / 1e12, "TFLOP/s")


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


if __name__ == "__main__":
    if torch.cuda.is_available():
        bench_cuda()
    else:
        bench_interpreter()
