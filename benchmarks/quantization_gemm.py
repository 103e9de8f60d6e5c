"""The quantization seam's weight-only int8 Triton GEMM against an fp16/bf16 `torch.matmul`, in one run.

    python benchmarks/quantization_gemm.py [--dtype float16|bfloat16]

Times the kernel module of the golden package (`generated_examples/quantization`, i.e. what
`new quantization my_q --defaults` generates). On CUDA: M in {1, 16, 128, 2048}, N = K = 4096; TFLOP/s of the
Triton GEMM (int8 weight read and dequantized in the kernel) and of `torch.matmul` on the same weight already
in float16/bfloat16, and the Triton share of it. On CPU the kernel runs under TRITON_INTERPRET=1 on small
shapes: those timings only show that it runs and what the interpreter costs, nothing about GPU speed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

EXAMPLES = Path(__file__).resolve().parent.parent / "generated_examples"
CUDA_SHAPES = [(m, 4096, 4096) for m in (1, 16, 128, 2048)]
CPU_SHAPES = [(1, 256, 256), (16, 256, 256)]


def cuda_present() -> bool:
    import torch

    return torch.cuda.is_available()


def load_kernel(relative: str) -> ModuleType:
    """Imports a golden package's kernel module (torch + triton only) from its file."""
    path = EXAMPLES / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seconds(fn: Callable[[], object], cuda: bool, repeat: int) -> float:
    """Median seconds per call, after a warm-up call (the compile, or the interpreter's first trace)."""
    import torch

    fn()
    if cuda:
        from triton.testing import do_bench

        return do_bench(fn, warmup=25, rep=100) / 1e3
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        timings.append(time.perf_counter() - start)
    torch.cpu.synchronize()
    return statistics.median(timings)


def report(label: str, m: int, n: int, k: int, kernel_s: float, reference_s: float, reference: str) -> None:
    flops = 2 * m * n * k
    print(
        f"{label:<14} M={m:<5} N={n:<5} K={k:<5} triton {kernel_s * 1e3:9.3f} ms {flops / kernel_s / 1e12:8.2f} "
        f"TFLOP/s | {reference} {reference_s * 1e3:9.3f} ms {flops / reference_s / 1e12:8.2f} TFLOP/s | "
        f"share {reference_s / kernel_s:6.1%}"
    )


@dataclass
class Setup:
    kernel: ModuleType
    cuda: bool
    device: str
    dtype: Any  # torch.dtype: torch is imported only after TRITON_INTERPRET is decided
    shapes: list[tuple[int, int, int]]


def setup(description: str, kernel_path: str) -> Setup:
    """Parses --dtype, picks CUDA or the CPU interpreter, loads the golden kernel module."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--dtype", choices=["float16", "bfloat16"], default="float16")
    args = parser.parse_args()
    cuda = cuda_present()
    if not cuda:
        os.environ.setdefault("TRITON_INTERPRET", "1")
        print("CPU: Triton under TRITON_INTERPRET=1, float32, small shapes; timings show correctness, not speed")
    import torch

    dtype = getattr(torch, args.dtype) if cuda else torch.float32
    shapes = CUDA_SHAPES if cuda else CPU_SHAPES
    return Setup(load_kernel(kernel_path), cuda, "cuda" if cuda else "cpu", dtype, shapes)


def main() -> None:
    bench = setup(__doc__.splitlines()[0], "quantization/src/my_q/quant/kernel.py")
    import torch

    kernel, cuda, device, dtype = bench.kernel, bench.cuda, bench.device, bench.dtype
    for m, n, k in bench.shapes:
        x = torch.randn(m, k, device=device, dtype=dtype)
        w_q, scale = kernel.quantize_per_channel(torch.randn(n, k, device=device))
        w = kernel.dequantize(w_q, scale, dtype)
        out = kernel.triton_int8_weight_only_gemm(x, w_q, scale)
        error = (out.float() - (x @ w.T).float()).abs().max().item()
        kernel_s = seconds(lambda x=x, w_q=w_q, s=scale: kernel.triton_int8_weight_only_gemm(x, w_q, s), cuda, 5)
        reference_s = seconds(lambda x=x, w=w: torch.matmul(x, w.T), cuda, 5)
        report("weight-only", m, n, k, kernel_s, reference_s, f"matmul {str(dtype).removeprefix('torch.')}")
        print(f"{'':<14} max |triton - matmul| = {error:.3g}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
