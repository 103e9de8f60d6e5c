"""Bandwidth of the `my_op` Triton op against vLLM's in-tree `SiluAndMul`.

Run by hand; vLLM never loads it:

    python benchmarks/bench_custom_op.py [--dtype bfloat16] [--peak-gbps 4800]

On CUDA: for token counts 1, 64 and 4096 and hidden sizes 4096 and 14336 it times each op with
triton.testing.do_bench and prints GB/s (bytes the op must read and write / time) and the share of the
device's peak memory bandwidth. The baseline is the in-tree op as an enabled vLLM CustomOp runs it
(forward_cuda) when vLLM is installed, else the eager PyTorch reference (forward_native's math).
Every row first checks the Triton op against the PyTorch reference. On CPU the kernel runs in the Triton
interpreter (TRITON_INTERPRET=1 is set here): the table then uses small shapes and only shows that the op runs
and agrees, nothing about the kernel's speed.
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
TOKENS = (1, 64, 4096) if CUDA else (1, 4)
HIDDEN = (4096, 14336) if CUDA else (256,)


class Case(NamedTuple):
    """One op to measure: the Triton op, its inputs, the bytes it must move, and the two baselines."""

    triton: Callable[..., object]
    make_args: Callable[[int, int, torch.dtype], tuple]
    bytes_moved: Callable[[int, int, torch.dtype], int]
    in_tree: Callable[[int, torch.dtype], Callable[..., object]]  # vLLM's module, taking the same arguments
    reference: Callable[..., object]  # forward_native's math in eager PyTorch, for when vLLM is absent


def make_args(tokens: int, hidden: int, dtype: torch.dtype) -> tuple[torch.Tensor]:
    """The MLP's gate and up projections side by side: (tokens, 2 * hidden), hidden = intermediate size."""
    return (torch.randn(tokens, 2 * hidden, dtype=dtype, device=DEVICE),)


def bytes_moved(tokens: int, hidden: int, dtype: torch.dtype) -> int:
    """Reads 2 * hidden and writes hidden elements per token."""
    return 3 * tokens * hidden * dtype.itemsize


def in_tree_silu_and_mul(hidden: int, dtype: torch.dtype) -> Callable[..., object]:
    from vllm.model_executor.layers.activation import SiluAndMul

    module = in_tree(SiluAndMul)
    return module.forward_cuda if CUDA else module.forward_cpu


def reference(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    return torch.nn.functional.silu(x[..., :d]) * x[..., d:]


VARIANTS = {"silu_and_mul": Case(kernel.my_op, make_args, bytes_moved, in_tree_silu_and_mul, reference)}


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


def peak_gbps(override: float | None) -> float | None:
    if override or not CUDA:
        return override
    props = torch.cuda.get_device_properties(0)
    clock_khz, bus_bits = getattr(props, "memory_clock_rate", 0), getattr(props, "memory_bus_width", 0)
    return 2 * clock_khz * 1e3 * bus_bits / 8 / 1e9 if clock_khz and bus_bits else None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    dtypes = ["float32", "float16", "bfloat16"]
    parser.add_argument("--dtype", default="bfloat16" if CUDA else "float32", choices=dtypes)
    parser.add_argument("--peak-gbps", type=float, help="peak memory bandwidth (default: from CUDA)")
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    peak = peak_gbps(args.peak_gbps)
    with_vllm = vllm_available()
    device = torch.cuda.get_device_name(0) if CUDA else "CPU, Triton interpreter"
    forward = "forward_cuda" if CUDA else "forward_cpu"
    baseline = f"vLLM SiluAndMul.{forward}" if with_vllm else "PyTorch eager"
    peak_text = f"{peak:.0f} GB/s" if peak else "unknown"
    print(f"# my_op (SiluAndMul) on {device}, {args.dtype}, peak {peak_text}")
    print(f"# baseline: {baseline}")
    if not CUDA:
        print("# interpreter timings: they show that the op runs and agrees, not how fast the kernel is")
    print("| variant | tokens | hidden | Triton GB/s | Triton % peak | base GB/s | base % peak | speed-up |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for variant, case in VARIANTS.items():
        for hidden in HIDDEN:
            base_fn = case.in_tree(hidden, dtype) if with_vllm else case.reference
            for tokens in TOKENS:
                inputs = case.make_args(tokens, hidden, dtype)
                moved = case.bytes_moved(tokens, hidden, dtype)
                tolerance = 1e-5 if dtype == torch.float32 else 5e-2
                torch.testing.assert_close(
                    case.triton(*inputs), case.reference(*inputs), atol=tolerance, rtol=tolerance
                )
                ours = seconds(lambda: case.triton(*inputs))  # noqa: B023
                theirs = seconds(lambda: base_fn(*inputs))  # noqa: B023
                rates = [moved / t / 1e9 for t in (ours, theirs)]
                shares = [f"{100 * rate / peak:.0f}%" if peak else "-" for rate in rates]
                print(
                    f"| {variant} | {tokens} | {hidden} | {rates[0]:.3g} | {shares[0]} | {rates[1]:.3g} | "
                    f"{shares[1]} | {theirs / ours:.3g}x |"
                )


if __name__ == "__main__":
    main()
