"""`MyLpLogitsProcessor`: requests that pass `target_token` may only emit that token.

vLLM loads this class through the `vllm.logits_processors` entry point `my_lp` (VLLM_PLUGINS does not
apply to that group: installed means active in every engine of the environment):
- in the worker, when the model runner is built, where it is instantiated once and applied every step;
- in the front end, where its `validate_params` checks each request before it is admitted.

Two logits-processor interfaces read that entry-point group, and each loader refuses a class that does not
derive from its own base:
- Model Runner V2 (`vllm.v1.worker.gpu.sample.logits_processor`), in every release this package supports:
  `Cls(vllm_config, req_states)`, then `add_request(slot, params)`, `apply_staged_writes()` and
  `apply(logits, ctx)`, rows mapped to request slots by `ctx.expanded_idx_mapping`. From vLLM 0.34 it is the
  only one, on CPU too, except the standalone CPU runner of non-x86 machines without Triton, which applies no
  custom logits processor (docs/logits.md).
- the V1 model runner (`vllm.v1.sample.logits_processor`), vLLM 0.31 to 0.33 (the CPU runner, and CUDA with
  VLLM_USE_V2_MODEL_RUNNER=0): `Cls(vllm_config, device, is_pin_memory)`, then `update_state(batch_update)`
  and `apply(logits)` every step, rows being positions in the persistent batch. vLLM 0.34 removed it.
`MyLpLogitsProcessorV2` implements the V2 contract. Where the release has the V1 interface, the
entry point's class adds the V1 contract on top and derives from both bases; where it has not, the entry
point's class is the V2 one alone.
"""

from __future__ import annotations

import logging
from importlib.util import find_spec
from typing import TYPE_CHECKING

import numpy as np
import torch
from vllm.exceptions import VLLMValidationError
from vllm.v1.worker.gpu.sample.logits_processor.interface import LogitsContext, LogitsProcRequestState
from vllm.v1.worker.gpu.sample.logits_processor.interface import LogitsProcessor as V2LogitsProcessor

from my_lp.logits.kernel import mask_to_allowed

if TYPE_CHECKING:
    from vllm.config import VllmConfig
    from vllm.sampling_params import SamplingParams

logger = logging.getLogger(__name__)

PARAM = "target_token"
# Padding of the allowed-token tables; a row whose first entry is NO_TARGET is left untouched by the kernel.
NO_TARGET = -1


class MyLpLogitsProcessorV2(V2LogitsProcessor):
    """Model Runner V2: masks every logit except the allowed token ids of the requests that pass
    `target_token`."""

    def __init__(self, vllm_config: VllmConfig, req_states: LogitsProcRequestState) -> None:
        # A per-slot table, written on the host in add_request and copied to the device in
        # apply_staged_writes.
        self.device = req_states.device
        self.vocab_size = req_states.vocab_size
        width = 1
        self.slot_allowed_np = np.full((req_states.max_num_reqs, width), NO_TARGET, dtype=np.int64)
        self.slot_allowed = torch.from_numpy(self.slot_allowed_np).to(self.device)
        self.slots_dirty = False

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        """Front end, at request admission: a bad value fails that request (HTTP 400), not the engine."""
        value = (sampling_params.extra_args or {}).get(PARAM)
        if value is None:
            return
        if not is_token_id(value):
            raise VLLMValidationError(
                f"{PARAM} must be a non-negative integer token id", parameter=PARAM, value=value
            )

    def allowed_tokens(self, params: SamplingParams) -> tuple[int, ...] | None:
        """The token ids a request may emit, or None when this processor leaves the request alone."""
        value = (params.extra_args or {}).get(PARAM)
        if value is None:
            return None
        allowed = (int(value),)
        if any(token >= self.vocab_size for token in allowed):
            # validate_params cannot know the vocabulary; masking every logit would leave nothing to sample.
            logger.warning(
                "%s=%s is outside the vocabulary (%d ids): left unmasked", PARAM, value, self.vocab_size
            )
            return None
        return allowed

    def add_request(self, req_idx: int, sampling_params: SamplingParams) -> bool:
        """When a request takes slot `req_idx`: rewrites the whole slot (slots are recycled)."""
        allowed = self.allowed_tokens(sampling_params)
        self.slot_allowed_np[req_idx] = NO_TARGET
        if allowed is not None:
            self.slot_allowed_np[req_idx, : len(allowed)] = allowed
        self.slots_dirty = True
        return allowed is not None

    def apply_staged_writes(self) -> None:
        """Before the forward pass of a step that admits requests: copies the slot table to the device if it
        changed."""
        if self.slots_dirty:
            self.slot_allowed.copy_(torch.from_numpy(self.slot_allowed_np))
            self.slots_dirty = False

    def apply(self, logits: torch.Tensor, ctx: LogitsContext) -> torch.Tensor:
        """Masks, in place, the rows of requests that passed `target_token`."""
        # Skip without a device sync when no request of this step is ours; otherwise pass every row, the rows
        # of other requests carrying NO_TARGET, which the kernel leaves untouched.
        if not (self.slot_allowed_np[ctx.idx_mapping_np, 0] >= 0).any():
            return logits
        rows = torch.arange(logits.shape[0], device=logits.device)
        return mask_to_allowed(logits, rows, self.slot_allowed[ctx.expanded_idx_mapping])


# The V1 model runner's interface exists in vLLM 0.31 to 0.33; 0.34 removed it with the runner.
if find_spec("vllm.v1.sample.logits_processor") is not None:
    from vllm.v1.sample.logits_processor import BatchUpdate, process_dict_updates
    from vllm.v1.sample.logits_processor import LogitsProcessor as V1LogitsProcessor

    class MyLpLogitsProcessor(MyLpLogitsProcessorV2, V1LogitsProcessor):
        """The entry point's class where the V1 runner exists: the V2 contract, and the V1 one on top; the two
        runners construct it differently, which is how `__init__` tells them apart."""

        def __init__(
            self,
            vllm_config: VllmConfig,
            device_or_req_states: torch.device | LogitsProcRequestState,
            is_pin_memory: bool = False,
        ) -> None:
            if isinstance(device_or_req_states, LogitsProcRequestState):
                super().__init__(vllm_config, device_or_req_states)
                return
            # V1 runner: sparse {persistent batch row: allowed ids}, mirrored on the device when it changes.
            self.device = device_or_req_states
            self.vocab_size = vllm_config.model_config.get_vocab_size()
            self.allowed_by_row: dict[int, tuple[int, ...]] = {}
            self.rows = torch.empty(0, dtype=torch.int64, device=self.device)
            self.allowed = torch.empty((0, 1), dtype=torch.int64, device=self.device)

        def is_argmax_invariant(self) -> bool:
            """False: masking changes the argmax, so greedy requests must go through apply() too."""
            return False

        def update_state(self, batch_update: BatchUpdate | None) -> None:
            """Every step: applies the batch's removed, added and moved requests to the row table."""
            changed = process_dict_updates(
                self.allowed_by_row,
                batch_update,
                lambda params, _prompt, _output: self.allowed_tokens(params),
            )
            if changed:
                rows = list(self.allowed_by_row)
                self.rows = torch.tensor(rows, dtype=torch.int64, device=self.device)
                self.allowed = padded([self.allowed_by_row[row] for row in rows]).to(self.device)

        def apply(self, logits: torch.Tensor, ctx: LogitsContext | None = None) -> torch.Tensor:
            """V2 passes `ctx`; the V1 runner does not, and its rows are the row table's."""
            if ctx is None:
                return mask_to_allowed(logits, self.rows, self.allowed)
            return super().apply(logits, ctx)

else:

    class MyLpLogitsProcessor(MyLpLogitsProcessorV2):
        """The entry point's class where Model Runner V2 is vLLM's only runner (0.34 on): the V2 contract
        alone."""


def is_token_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def padded(allowed: list[tuple[int, ...]]) -> torch.Tensor:
    """[len(allowed), longest] int64 table of the allowed ids, padded with NO_TARGET."""
    width = max((len(ids) for ids in allowed), default=1)
    table = torch.full((len(allowed), width), NO_TARGET, dtype=torch.int64)
    for i, ids in enumerate(allowed):
        table[i, : len(ids)] = torch.tensor(ids, dtype=torch.int64)
    return table
