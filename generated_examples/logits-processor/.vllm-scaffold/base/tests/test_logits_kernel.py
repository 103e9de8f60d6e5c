"""The masking kernel against an eager reference: Triton (interpreter on CPU, CUDA with `gpu`) and torch.

Imports only torch, triton, pytest and the kernel module, so it runs where vLLM is absent.
"""

from __future__ import annotations

import pytest
import torch

from my_lp.logits.kernel import (
    mask_to_allowed,
    mask_to_allowed_torch,
    mask_to_allowed_triton,
    traffic,
)

NO_TARGET = -1
# Allowed ids per selected row, padded with NO_TARGET.
Selection = list[list[int]]


def reference(logits: torch.Tensor, rows: list[int], allowed: Selection) -> torch.Tensor:
    """Row by row, column by column: what the kernel must produce."""
    out = logits.clone()
    for row, ids in zip(rows, allowed, strict=True):
        if ids[0] < 0:
            continue
        for col in range(logits.shape[-1]):
            if col not in ids:
                out[row, col] = float("-inf")
    return out


def case(num_rows: int, vocab: int, rows: list[int], allowed: Selection, dtype: torch.dtype, device: str):
    generator = torch.Generator().manual_seed(num_rows * 1000 + vocab)
    logits = torch.randn(num_rows, vocab, generator=generator).to(device=device, dtype=dtype)
    width = max((len(ids) for ids in allowed), default=1)
    table = torch.full((len(allowed), width), NO_TARGET, dtype=torch.int64)
    for i, ids in enumerate(allowed):
        table[i, : len(ids)] = torch.tensor(ids)
    row_tensor = torch.tensor(rows, dtype=torch.int64)
    return logits, row_tensor.to(device), table.to(device)


# (rows in the batch, vocabulary, selected rows, allowed ids per selected row)
CASES = [
    pytest.param(4, 1, [], [], id="empty-selection"),
    pytest.param(3, 7, [1], [[3]], id="vocab-7"),
    pytest.param(5, 513, [4, 0, 2], [[0], [512], [17]], id="vocab-513-first-last-ids"),
    pytest.param(6, 1000, [5, 1, 3], [[2, 999, NO_TARGET], [NO_TARGET] * 3, [7, 7, 8]], id="lists"),
    pytest.param(2, 4097, [1, 0], [[4096], [5000]], id="two-blocks-out-of-range-id"),
    pytest.param(3, 31, [0, 1, 2], [[30], [NO_TARGET], [0]], id="all-rows-some-skipped"),
]


@pytest.mark.parametrize(("num_rows", "vocab", "rows", "allowed"), CASES)
def test_triton_matches_reference_fp32(num_rows: int, vocab: int, rows: list[int], allowed: Selection):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    logits, row_tensor, table = case(num_rows, vocab, rows, allowed, torch.float32, device)
    expected = reference(logits.cpu(), rows, allowed)
    out = mask_to_allowed_triton(logits, row_tensor, table)
    assert out.data_ptr() == logits.data_ptr(), "the kernel works in place"
    torch.testing.assert_close(out.cpu(), expected, rtol=0, atol=0)


@pytest.mark.parametrize(("num_rows", "vocab", "rows", "allowed"), CASES)
def test_torch_fallback_matches_reference(num_rows: int, vocab: int, rows: list[int], allowed: Selection):
    logits, row_tensor, table = case(num_rows, vocab, rows, allowed, torch.float32, "cpu")
    expected = reference(logits, rows, allowed)
    torch.testing.assert_close(mask_to_allowed_torch(logits, row_tensor, table), expected, rtol=0, atol=0)


def test_dispatch_uses_triton_under_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    from my_lp.logits import kernel

    calls: list[str] = []
    monkeypatch.setattr(kernel, "mask_to_allowed_triton", lambda *args: calls.append("triton"))
    monkeypatch.setattr(kernel, "mask_to_allowed_torch", lambda *args: calls.append("torch"))
    logits = torch.zeros(2, 8, device="cuda" if torch.cuda.is_available() else "cpu")
    kernel.mask_to_allowed(logits, torch.tensor([0]), torch.tensor([[1]]))
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    kernel.mask_to_allowed(logits.cpu(), torch.tensor([0]), torch.tensor([[1]]))
    assert calls == ["triton", "torch"]


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("dtype", "shape"),
    [
        (torch.float32, (256, 128256)),
        (torch.float16, (256, 128256)),
        (torch.bfloat16, (256, 128256)),
        (torch.bfloat16, (7, 50257)),
        (torch.float16, (3, 1)),
    ],
)
def test_triton_matches_torch_on_cuda(dtype: torch.dtype, shape: tuple[int, int]) -> None:
    num_rows, vocab = shape
    generator = torch.Generator(device="cuda").manual_seed(0)
    logits = torch.randn(shape, device="cuda", generator=generator).to(dtype)
    rows = torch.randperm(num_rows, device="cuda", generator=generator)[: (num_rows + 1) // 2]
    allowed = torch.randint(0, vocab, (rows.numel(), 3), device="cuda", generator=generator)
    allowed[::3, 0] = NO_TARGET  # some selected rows are skipped
    allowed[1::3, 1:] = NO_TARGET  # some allow a single id
    expected = mask_to_allowed_torch(logits.clone(), rows, allowed)
    out = mask_to_allowed(logits, rows, allowed)
    # Masking copies or overwrites values, it never computes: every dtype must match exactly.
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    assert torch.isfinite(out[rows[allowed[:, 0] >= 0]]).sum() > 0


@pytest.mark.parametrize(
    "device",
    ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)],
)
def test_the_model_runner_v2_call_masks_rows_through_their_slots(device: str) -> None:
    """The call Model Runner V2 makes, the only one from vLLM 0.34: every row of the step, the slot table
    gathered by the row-to-slot mapping (the rows of one request repeat its slot under speculative decoding,
    rows of requests without the parameter carry NO_TARGET)."""
    if device == "cpu" and torch.cuda.is_available():
        pytest.skip("the CUDA case runs instead")
    vocab = 128256 if device == "cuda" else 1031
    slots = torch.full((8, 3), NO_TARGET, dtype=torch.int64)
    slots[2] = torch.tensor([5, 9, vocab - 1])
    slots[6, 0] = 0
    row_to_slot = torch.tensor([6, 2, 2, 2, 4, 0, 6], dtype=torch.int64)  # request in slot 2: 3 draft rows
    generator = torch.Generator().manual_seed(34)
    logits = torch.randn(row_to_slot.numel(), vocab, generator=generator).to(
        device=device, dtype=torch.bfloat16
    )
    expected = mask_to_allowed_torch(logits.clone(), torch.arange(len(row_to_slot)), slots[row_to_slot])
    table = slots.to(device)[row_to_slot.to(device)]
    out = mask_to_allowed(logits, torch.arange(len(row_to_slot), device=device), table)
    torch.testing.assert_close(out.cpu(), expected.cpu(), rtol=0, atol=0)
    assert torch.isneginf(out[4]).sum() == 0 and torch.isneginf(out[5]).sum() == 0  # slots without a target


def test_traffic_matches_a_hand_count() -> None:
    """2 rows of a 10-token vocabulary, 3 allowed ids each, fp16: 2 x 7 logits of 2 bytes written, and
    2 x (1 row index + 3 ids) int64 values of 8 bytes read; no FLOPs."""
    assert traffic(2, 10, 3, torch.float16) == (2 * 7 * 2 + 2 * 4 * 8, 0)
