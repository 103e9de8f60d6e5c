"""The V1 model runner's interface accepts `MyLpLogitsProcessor`: vLLM 0.31 to 0.33.

vLLM 0.34 removed the V1 runner and its interface; there this module is skipped. The V1 side is driven with
hand-made batch updates, as the V1 runner's `update_state`/`apply` calls do; tests/test_logits_engine.py
runs it in the real engine on the CPU builds that have it.
"""

from __future__ import annotations

from importlib.util import find_spec
from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("vllm")
if find_spec("vllm.v1.sample.logits_processor") is None:
    pytest.skip("this vLLM has no V1 model runner (removed in 0.34)", allow_module_level=True)

from vllm.exceptions import VLLMValidationError  # noqa: E402
from vllm.sampling_params import SamplingParams  # noqa: E402
from vllm.v1.sample.logits_processor import (  # noqa: E402
    BatchUpdate,
    MoveDirectionality,
    _load_custom_logitsprocs,
    validate_logits_processors_parameters,
)

from my_lp.logits.processor import PARAM, MyLpLogitsProcessor  # noqa: E402

VOCAB = 37
GOOD, OTHER = 5, 11
BAD_VALUES = [-1, "5", 2.0, True, [5]]


def allowed_ids(value: int) -> list[int]:
    return [value]


def with_param(value: object) -> SamplingParams:
    return SamplingParams(extra_args={PARAM: value})


def assert_masked_to(row: torch.Tensor, original: torch.Tensor, ids: list[int]) -> None:
    keep = torch.zeros(VOCAB, dtype=torch.bool)
    keep[ids] = True
    assert torch.equal(row[keep], original[keep])
    assert torch.isneginf(row[~keep]).all()


def test_the_v1_loader_accepts_the_entry_point(plugin_site: object) -> None:
    assert MyLpLogitsProcessor in _load_custom_logitsprocs(())  # issubclass of the V1 base


def test_masking_changes_the_argmax() -> None:
    # True would make V1 skip the processor for all-greedy batches.
    assert MyLpLogitsProcessor.is_argmax_invariant(object.__new__(MyLpLogitsProcessor)) is False


def test_the_v1_front_end_validator_rejects_bad_values(plugin_site: object) -> None:
    validate_logits_processors_parameters(None, SamplingParams())
    validate_logits_processors_parameters(None, with_param(GOOD))
    for bad in BAD_VALUES:
        with pytest.raises(VLLMValidationError, match=PARAM):
            validate_logits_processors_parameters(None, with_param(bad))


def v1_processor() -> MyLpLogitsProcessor:
    config = SimpleNamespace(model_config=SimpleNamespace(get_vocab_size=lambda: VOCAB))
    return MyLpLogitsProcessor(config, torch.device("cpu"), False)


def test_v1_update_state_applies_removed_added_moved_in_order() -> None:
    processor = v1_processor()
    added = [(0, with_param(GOOD), None, []), (1, SamplingParams(), None, [])]
    processor.update_state(BatchUpdate(batch_size=3, removed=[], added=added, moved=[]))
    # Row 0 finishes; a new request with OTHER takes row 2; then rows 1 and 2 swap.
    processor.update_state(
        BatchUpdate(
            batch_size=3,
            removed=[0],
            added=[(2, with_param(OTHER), None, [])],
            moved=[(1, 2, MoveDirectionality.SWAP)],
        )
    )
    # Row 2 moves to the freed row 0 (condensing the batch).
    moved = [(1, 0, MoveDirectionality.UNIDIRECTIONAL)]
    processor.update_state(BatchUpdate(batch_size=2, removed=[], added=[], moved=moved))
    processor.update_state(None)

    original = torch.randn(2, VOCAB)
    logits = processor.apply(original.clone())
    assert_masked_to(logits[0], original[0], allowed_ids(OTHER))
    assert torch.equal(logits[1], original[1])


def test_ids_outside_the_vocabulary_leave_the_request_unmasked() -> None:
    processor = v1_processor()
    out_of_range = VOCAB
    added = [(0, with_param(out_of_range), None, [])]
    processor.update_state(BatchUpdate(batch_size=1, removed=[], added=added, moved=[]))
    original = torch.randn(1, VOCAB)
    assert torch.equal(processor.apply(original.clone()), original)
