"""Bandwidth of the KV connector's block copies: the Triton slot gather/scatter against torch.

    python benchmarks/kv_connector_block_copy.py [--dtype bfloat16] [--repeat 50]

Uses the kernel module of the golden kv-connector package (`generated_examples/kv-connector`), which imports
only torch and triton. For a paged cache shaped like one layer of a Llama-3-8B-class model ([num_blocks, 8
KV heads, 16 tokens, 256 = K and V of head size 128]) it copies a request's blocks out into a contiguous
buffer (gather) and back (scatter), and prints the effective bandwidth (bytes read + bytes written per
second) of:
- `triton`: `gather_slots` / `scatter_slots` with the Triton kernel (per-token slot mapping, token-major
  buffer [tokens, heads, content], what the connector uses);
- `torch slots`: the module's torch fallback, advanced indexing with the same slot mapping;
- `index_select` / `index_copy_`: whole blocks along dim 0 (block-major buffer), the torch baseline.

On CUDA the figures are the comparison. Without CUDA the Triton kernel runs in the interpreter
(TRITON_INTERPRET=1, set here) on a small cache: those timings only show that the path works, not its speed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

if "TRITON_INTERPRET" not in os.environ:
    try:
        import torch as _torch

        if not _torch.cuda.is_available():
            os.environ["TRITON_INTERPRET"] = "1"
    except ImportError:
        pass

import torch

KERNELS = Path(__file__).resolve().parent.parent / "generated_examples/kv-connector/src/my_kv/kv_connector/kernels.py"


def load_kernels():
    spec = importlib.util.spec_from_file_location("kv_block_copy_kernels", KERNELS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def timed(fn: Callable[[], object], repeat: int, cuda: bool) -> float:
    """Median seconds per call after one warm-up call."""
    fn()
    samples = []
    for _ in range(repeat):
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if cuda:
            torch.cuda.synchronize()
        samples.append(time.perf_counter() - start)
    samples.sort()
    return samples[len(samples) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="bfloat16", choices=["float32", "float16", "bfloat16"])
    parser.add_argument("--repeat", type=int, default=0, help="timed calls per case (default: 50 CUDA, 3 CPU)")
    args = parser.parse_args()
    kernels = load_kernels()
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    dtype = getattr(torch, args.dtype)
    repeat = args.repeat or (50 if cuda else 3)
    if cuda:
        num_blocks, heads, block_size, content, request_blocks = 8192, 8, 16, 256, (16, 128, 1024)
        print(f"CUDA: {torch.cuda.get_device_name()}, {args.dtype}")
    else:
        num_blocks, heads, block_size, content, request_blocks = 64, 2, 16, 64, (2, 8)
        print(f"CPU, Triton interpreter, {args.dtype}: timings show correctness only, not kernel speed")
    cache = torch.randn(num_blocks, heads, block_size, content, device=device).to(dtype)
    mib = cache.numel() * cache.element_size() / 2**20
    print(f"cache [{num_blocks}, {heads}, {block_size}, {content}] = {mib:.1f} MiB; GB/s counts bytes read + written")
    print(f"{'blocks':>7} {'MiB':>8} {'op':>8} {'triton GB/s':>12} {'torch slots':>12} {'index_* GB/s':>13}")
    generator = torch.Generator().manual_seed(0)
    for count in request_blocks:
        block_ids = torch.randperm(num_blocks, generator=generator)[:count].to(device)
        for op, rates in measure(kernels, cache, block_ids, repeat, cuda).items():
            nbytes = count * heads * block_size * content * cache.element_size()
            print(f"{count:>7} {nbytes / 2**20:>8.2f} {op:>8} " + " ".join(f"{r:>12.3g}" for r in rates))


def measure(kernels, cache: torch.Tensor, block_ids: torch.Tensor, repeat: int, cuda: bool) -> dict[str, list[float]]:
    """GB/s of (Triton slots, torch slots, torch index_select/index_copy_) for gather and scatter of `block_ids`."""
    block_size = cache.shape[2]
    slots = kernels.slots_for_blocks(block_ids.cpu(), block_size).to(cache.device)
    nbytes = block_ids.numel() * cache[0].numel() * cache.element_size()
    buffer = kernels.gather_slots(cache, slots, backend="torch")
    blocks = cache.index_select(0, block_ids)
    assert torch.equal(kernels.gather_slots(cache, slots, backend="triton"), buffer), "Triton gather differs"
    target = cache.clone()
    cases = {
        "gather": (
            lambda: kernels.gather_slots(cache, slots, backend="triton"),
            lambda: kernels.gather_slots(cache, slots, backend="torch"),
            lambda: cache.index_select(0, block_ids),
        ),
        "scatter": (
            lambda: kernels.scatter_slots(target, slots, buffer, backend="triton"),
            lambda: kernels.scatter_slots(target, slots, buffer, backend="torch"),
            lambda: target.index_copy_(0, block_ids, blocks),
        ),
    }
    return {op: [2 * nbytes / timed(fn, repeat, cuda) / 1e9 for fn in fns] for op, fns in cases.items()}


if __name__ == "__main__":
    main()
