"""Both vLLM 0.32 logits-processor interfaces accept `MyLpLogitsProcessor`, at the interface level.

Model Runner V2 is exercised here the way its loader does it (`build_custom_logits_processors`: entry
point, type check against the V2 base, `Cls(vllm_config, req_states)`) and then driven as its sampler does
(`add_request`, `apply_staged_writes`, `apply(logits, ctx)`), slot by slot; the V1 side is driven with
hand-made batch updates. tests/test_logits_engine.py runs both in the real engine (V2 on CPU with `--slow`).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

pytest.importorskip("vllm")

from vllm.config import VllmConfig  # noqa: E402
from vllm.exceptions import VLLMValidationError  # noqa: E402
from vllm.sampling_params import SamplingParams  # noqa: E402
from vllm.v1.sample.logits_processor import (  # noqa: E402
    BatchUpdate,
    MoveDirectionality,
    _load_custom_logitsprocs,
    validate_logits_processors_parameters,
)
from vllm.v1.worker.gpu.sample.logits_processor.interface import LogitsContext  # noqa: E402
from vllm.v1.worker.gpu.sample.logits_processor.loader import (  # noqa: E402
    _load_v2_logitsprocs_plugins,
    build_custom_logits_processors,
    build_custom_logits_processors_params_validator,
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


def test_both_loaders_accept_the_entry_point(plugin_site: object) -> None:
    assert MyLpLogitsProcessor in _load_custom_logitsprocs(())  # V1 loader (issubclass V1 base)
    assert MyLpLogitsProcessor in _load_v2_logitsprocs_plugins()  # V2 loader (issubclass V2 base)


def test_masking_changes_the_argmax() -> None:
    # True would make V1 skip the processor for all-greedy batches.
    assert MyLpLogitsProcessor.is_argmax_invariant(object.__new__(MyLpLogitsProcessor)) is False


@pytest.mark.parametrize("front_end", ["v1", "v2"])
def test_front_end_validators_reject_bad_values(front_end: str, plugin_site: object) -> None:
    if front_end == "v1":
        validate = lambda params: validate_logits_processors_parameters(None, params)  # noqa: E731
    else:
        validate = build_custom_logits_processors_params_validator(None)
    validate(SamplingParams())
    validate(with_param(GOOD))
    for bad in BAD_VALUES:
        with pytest.raises(VLLMValidationError, match=PARAM):
            validate(with_param(bad))


def v2_processor() -> MyLpLogitsProcessor:
    """Built by Model Runner V2's own loader, from the entry point, with request state as V2 holds it."""
    req_states = SimpleNamespace(
        device=torch.device("cpu"),
        max_num_reqs=8,
        vocab_size=VOCAB,
        all_token_ids=None,
        prompt_len=None,
        prefill_len=None,
        total_len=None,
    )
    processors = build_custom_logits_processors(VllmConfig(), req_states, is_pooling_model=False)
    (ours,) = [p for p in processors if isinstance(p, MyLpLogitsProcessor)]
    return ours


def v2_context(slots: list[int]) -> LogitsContext:
    mapping = torch.tensor(slots, dtype=torch.int32)
    return LogitsContext(
        expanded_idx_mapping=mapping,
        idx_mapping=mapping,
        idx_mapping_np=np.array(slots, dtype=np.int32),
        expanded_local_pos=torch.zeros(len(slots), dtype=torch.int32),
        input_ids=torch.zeros(len(slots), dtype=torch.int32),
        pos=torch.zeros(len(slots), dtype=torch.int64),
        seq_lens_upper_bound_np=np.ones(len(slots), dtype=np.int32),
    )


def test_model_runner_v2_masks_only_the_slots_that_asked(plugin_site: object) -> None:
    processor = v2_processor()
    assert processor.add_request(6, with_param(GOOD)) is True
    assert processor.add_request(2, SamplingParams()) is False
    assert processor.add_request(4, with_param(OTHER)) is True
    processor.apply_staged_writes()

    ctx = v2_context([2, 6, 4])  # rows are not in slot order
    original = torch.randn(3, VOCAB)
    logits = processor.apply(original.clone(), ctx)
    assert torch.equal(logits[0], original[0])
    assert_masked_to(logits[1], original[1], allowed_ids(GOOD))
    assert_masked_to(logits[2], original[2], allowed_ids(OTHER))

    # Slot 6 is recycled by a request without the parameter: nothing of the old occupant may remain.
    assert processor.add_request(6, SamplingParams()) is False
    processor.apply_staged_writes()
    logits = processor.apply(original[:2].clone(), v2_context([2, 6]))
    assert torch.equal(logits, original[:2])


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
