"""Times the Triton masking kernel of `my_lp.logits` against the eager torch version.

Not loaded by vLLM: run it by hand from the package's root, `python benchmarks/bench_logits.py`
(it imports the package from src/). On CUDA it uses logits of shape
[256, 128256] (a Llama-3 vocabulary, a full decode batch) with half of the rows selected, and prints the
kernel's achieved GB/s (bytes from `kernel.traffic` / time) and its share of the GPU's peak from a table of
known GPUs. Without CUDA it runs the kernel under TRITON_INTERPRET=1 on a small shape, where the numbers only
show that both versions agree, not how fast the kernel is, and prints the time the CUDA shape would take at
an H200's peak bandwidth: a model, not a measurement.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import NamedTuple

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from my_lp.logits.kernel import mask_to_allowed_torch, mask_to_allowed_triton, traffic  # noqa: E402

CUDA_SHAPE = (256, 128256)
CUDA_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


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


def milliseconds(fn: Callable[[], object], cuda: bool, repeats: int) -> float:
    """Median time of `fn` over `repeats` runs after one warm-up run."""
    fn()
    times = []
    for _ in range(repeats):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            begin = time.perf_counter()
            fn()
            times.append((time.perf_counter() - begin) * 1e3)
    return sorted(times)[len(times) // 2]


def main() -> int:
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    shape = CUDA_SHAPE if cuda else (8, 1000)
    dtypes = CUDA_DTYPES if cuda else (torch.float32,)
    repeats = 50 if cuda else 5
    num_rows, vocab = shape
    generator = torch.Generator().manual_seed(0)
    rows = torch.randperm(num_rows, generator=generator)[: num_rows // 2].to(device)
    allowed = torch.randint(0, vocab, (rows.numel(), 1), generator=generator).to(device)
    where = torch.cuda.get_device_name() if cuda else "CPU, Triton interpreter: correctness only, not speed"
    peak = device_peak(where) if cuda else None
    peak_text = f"peak {peak.gbps:.0f} GB/s" if peak else "unknown GPU" if cuda else "no peak"
    print(f"mask_to_allowed, logits {list(shape)}, {rows.numel()} rows selected ({where}, {peak_text})")
    print(f"{'dtype':>10} {'triton ms':>10} {'torch ms':>10} {'speed-up':>9}  same result  triton roofline")
    for dtype in dtypes:
        logits = torch.randn(shape, generator=generator).to(device=device, dtype=dtype)
        out_triton, out_torch = logits.clone(), logits.clone()
        triton_ms = milliseconds(partial(mask_to_allowed_triton, out_triton, rows, allowed), cuda, repeats)
        torch_ms = milliseconds(partial(mask_to_allowed_torch, out_torch, rows, allowed), cuda, repeats)
        same = torch.equal(out_triton, out_torch)
        name = str(dtype).removeprefix("torch.")
        roofline = achieved(*traffic(rows.numel(), vocab, allowed.shape[1], dtype), triton_ms / 1e3, peak)
        times = f"{triton_ms:>10.3f} {torch_ms:>10.3f} {torch_ms / triton_ms:>8.2f}x"
        print(f"{name:>10} {times}  {same!s:<11}  {roofline}")
        if not same:
            return 1
    if not cuda:
        print(f"{H200_MODEL_NOTE}; logits {list(CUDA_SHAPE)}, {CUDA_SHAPE[0] // 2} rows, 1 allowed id")
        for dtype in CUDA_DTYPES:
            moved, flops = traffic(CUDA_SHAPE[0] // 2, CUDA_SHAPE[1], 1, dtype)
            name = str(dtype).removeprefix("torch.")
            print(f"{name:>10} {moved / 1e6:.3g} MB  {h200_model(moved, flops)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
