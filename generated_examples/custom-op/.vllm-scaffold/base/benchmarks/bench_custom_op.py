"""Bandwidth of the `my_op` Triton op against vLLM's in-tree `SiluAndMul`.

Run by hand; vLLM never loads it:

    python benchmarks/bench_custom_op.py [--dtype bfloat16] [--peak-gbps 4800]

On CUDA: for token counts 1, 64 and 4096 and hidden sizes 4096 and 14336 it times each op with
triton.testing.do_bench and prints GB/s (bytes the op must read and write, from kernel.traffic, / time)
and the share of the device's peak (from a table of known GPUs, or --peak-gbps). The baseline is the in-tree
op as an enabled vLLM CustomOp runs it (forward_cuda) when vLLM is installed, else the eager PyTorch
reference (forward_native's math). Every row first checks the Triton op against the PyTorch reference.
On CPU the kernel runs in the Triton interpreter (TRITON_INTERPRET=1 is set here): the table then uses small
shapes and only shows that the op runs and agrees, nothing about the kernel's speed; a second table models
the CUDA shapes' time at an H200's peak from the kernel's traffic (bytes and FLOPs).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import torch

CUDA = torch.cuda.is_available()
if not CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: the only way it runs on CPU
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from my_op.custom_op import kernel  # noqa: E402

DEVICE = "cuda" if CUDA else "cpu"
CUDA_TOKENS, CUDA_HIDDEN = (1, 64, 4096), (4096, 14336)
TOKENS = CUDA_TOKENS if CUDA else (1, 4)
HIDDEN = CUDA_HIDDEN if CUDA else (256,)


class Case(NamedTuple):
    """One op to measure: the Triton op, its inputs, its (bytes, FLOPs), and the two baselines."""

    triton: Callable[..., object]
    make_args: Callable[[int, int, torch.dtype], tuple]
    traffic: Callable[[int, int, torch.dtype], tuple[int, int]]
    in_tree: Callable[[int, torch.dtype], Callable[..., object]]  # vLLM's module, taking the same arguments
    reference: Callable[..., object]  # forward_native's math in eager PyTorch, for when vLLM is absent


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


def make_args(tokens: int, hidden: int, dtype: torch.dtype) -> tuple[torch.Tensor]:
    """The MLP's gate and up projections side by side: (tokens, 2 * hidden), hidden = intermediate size."""
    return (torch.randn(tokens, 2 * hidden, dtype=dtype, device=DEVICE),)


def in_tree_silu_and_mul(hidden: int, dtype: torch.dtype) -> Callable[..., object]:
    from vllm.model_executor.layers.activation import SiluAndMul

    module = in_tree(SiluAndMul)
    return module.forward_cuda if CUDA else module.forward_cpu


def reference(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    return torch.nn.functional.silu(x[..., :d]) * x[..., d:]


VARIANTS = {"silu_and_mul": Case(kernel.my_op, make_args, kernel.traffic, in_tree_silu_and_mul, reference)}


def vllm_available() -> bool:
    """Whether vLLM is importable; if so, this process builds vLLM's own SiluAndMul, never a replacement."""
    try:
        from vllm.model_executor.custom_op import op_registry_oot
    except ImportError:
        return False
    op_registry_oot.pop("SiluAndMul", None)
    return True


def in_tree(build: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    """An in-tree module built the way the model loader builds it."""
    from vllm.config import VllmConfig, set_current_vllm_config

    with set_current_vllm_config(VllmConfig()):
        return build()


def seconds(fn: Callable[[], object]) -> float:
    if CUDA:
        import triton.testing

        return triton.testing.do_bench(fn, warmup=25, rep=100) / 1e3
    fn()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    dtypes = ["float32", "float16", "bfloat16"]
    parser.add_argument("--dtype", default="bfloat16" if CUDA else "float32", choices=dtypes)
    parser.add_argument("--peak-gbps", type=float, help="peak memory GB/s (default: known-GPU table)")
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    with_vllm = vllm_available()
    device = torch.cuda.get_device_name(0) if CUDA else "CPU, Triton interpreter"
    peak = device_peak(device) if CUDA else None
    if args.peak_gbps:
        peak = (peak or H200)._replace(gbps=args.peak_gbps)
    forward = "forward_cuda" if CUDA else "forward_cpu"
    baseline = f"vLLM SiluAndMul.{forward}" if with_vllm else "PyTorch eager"
    peak_text = f"{peak.gbps:.0f} GB/s" if peak else "unknown GPU" if CUDA else "none (CPU)"
    print(f"# my_op (SiluAndMul) on {device}, {args.dtype}, peak {peak_text}")
    print(f"# baseline: {baseline}")
    if not CUDA:
        print("# interpreter timings: they show that the op runs and agrees, not how fast the kernel is")
    print("| variant | tokens | hidden | Triton | base | speed-up |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for variant, case in VARIANTS.items():
        for hidden in HIDDEN:
            base_fn = case.in_tree(hidden, dtype) if with_vllm else case.reference
            for tokens in TOKENS:
                inputs = case.make_args(tokens, hidden, dtype)
                moved, flops = case.traffic(tokens, hidden, dtype)
                tolerance = 1e-5 if dtype == torch.float32 else 5e-2
                torch.testing.assert_close(
                    case.triton(*inputs), case.reference(*inputs), atol=tolerance, rtol=tolerance
                )
                ours = seconds(lambda: case.triton(*inputs))  # noqa: B023
                theirs = seconds(lambda: base_fn(*inputs))  # noqa: B023
                rates = [achieved(moved, flops, t, peak) for t in (ours, theirs)]
                print(f"| {variant} | {tokens} | {hidden} | {rates[0]} | {rates[1]} | {theirs / ours:.3g}x |")
    if not CUDA:
        print()
        print(f"{H200_MODEL_NOTE}; CUDA shapes in bfloat16")
        print("| variant | tokens | hidden | MB moved | MFLOP | H200 model time |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for variant, case in VARIANTS.items():
            for hidden in CUDA_HIDDEN:
                for tokens in CUDA_TOKENS:
                    moved, flops = case.traffic(tokens, hidden, torch.bfloat16)
                    shape = f"| {variant} | {tokens} | {hidden} |"
                    print(f"{shape} {moved / 1e6:.3g} | {flops / 1e6:.3g} | {h200_model(moved, flops)} |")


if __name__ == "__main__":
    main()
