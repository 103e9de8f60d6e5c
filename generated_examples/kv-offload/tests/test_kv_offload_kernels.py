"""The block-copy kernels of `my_offload` against plain row indexing, on the byte pages vLLM hands a spec.

Runs without vLLM: it imports only torch, pytest and the kernel module. On CPU the test harness sets
TRITON_INTERPRET=1, so `backend="triton"` runs the Triton kernel in the interpreter (small pages only). Copies
move bytes without arithmetic, so every case must come back bit for bit. Tests marked `gpu` repeat the cases
on CUDA with pages of a real model's size, where `backend="auto"` must pick Triton.
"""

from __future__ import annotations

import pytest
import torch

from my_offload.kv_offload import kernels

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BACKENDS = ["triton", "torch"]


def byte_pages(num_blocks: int, page_bytes: int, block_stride: int | None = None, device: str = DEVICE):
    """[num_blocks, page_bytes] int8 rows, `block_stride` bytes apart in one allocation (as when several
    layers share a KV-cache tensor), filled with random bytes."""
    stride = block_stride or page_bytes
    storage = torch.randint(-128, 128, (num_blocks * stride,), dtype=torch.int8, device=device)
    return storage.as_strided((num_blocks, page_bytes), (stride, 1))


PAGES = [
    pytest.param((6, 4096, None), id="contiguous"),
    pytest.param((5, 1000, 3000), id="strided-odd"),
    pytest.param((9, 256, None), id="small"),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", PAGES)
def test_gather_and_scatter_match_row_indexing(layout: tuple, backend: str) -> None:
    num_blocks, page_bytes, stride = layout
    pages = byte_pages(num_blocks, page_bytes, stride)
    for blocks in ([3, 0, num_blocks - 1], [2], []):
        rows = kernels.gather_pages(pages, blocks, backend=backend)
        assert rows.is_contiguous() and rows.shape == (len(blocks), page_bytes)
        assert torch.equal(rows, pages[blocks]), blocks

        new_rows = torch.randint(-128, 128, (len(blocks), page_bytes), dtype=torch.int8, device=DEVICE)
        target = byte_pages(num_blocks, page_bytes, stride)
        expected = target.clone()
        expected[blocks] = new_rows
        kernels.scatter_pages(target, blocks, new_rows, backend=backend)
        assert torch.equal(target, expected), blocks


@pytest.mark.parametrize("backend", BACKENDS)
def test_bytes_between_strided_rows_are_left_alone(backend: str) -> None:
    storage = torch.zeros(4 * 64, dtype=torch.int8, device=DEVICE)
    pages = storage.as_strided((4, 48), (64, 1))
    kernels.scatter_pages(pages, [1, 3], torch.ones(2, 48, dtype=torch.int8, device=DEVICE), backend=backend)
    written = storage.view(4, 64)
    assert written[[1, 3], :48].eq(1).all() and not written[:, 48:].any() and not written[[0, 2]].any()


def test_bad_shapes_are_refused() -> None:
    pages = byte_pages(4, 64)
    with pytest.raises(ValueError, match="num_blocks, page_bytes"):
        kernels.gather_pages(pages.t(), [0])
    with pytest.raises(ValueError, match="rows must be"):
        kernels.scatter_pages(pages, [0, 1], torch.zeros(3, 64, dtype=torch.int8, device=DEVICE))


@pytest.mark.gpu
def test_auto_backend_uses_triton_on_cuda_and_matches() -> None:
    pages = byte_pages(512, 65536, device="cuda")
    assert kernels.triton_usable(pages)
    blocks = torch.randperm(512, device="cuda")[:64]
    assert torch.equal(kernels.gather_pages(pages, blocks), pages[blocks])
    rows = torch.randint(-128, 128, (64, 65536), dtype=torch.int8, device="cuda")
    expected = pages.clone()
    expected[blocks] = rows
    kernels.scatter_pages(pages, blocks, rows)
    assert torch.equal(pages, expected)
