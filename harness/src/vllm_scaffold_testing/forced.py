"""Chat replies of the tiny model made deterministic: a logits processor that forces a token sequence.

The tiny random-weight model never emits a tool call or a reasoning block on its own, so tests of output
parsers (tool-call and reasoning parsers) cannot wait for it to. Instead the test names the reply it wants:
`forced_request(tokenizer, pieces)` turns text pieces into token ids and puts them into the request's
`vllm_xargs`, and `ForcedTokens`, loaded into the engine with `--logits-processors` (see `SERVER_ARGS`),
masks every logit of that request except the next forced id, one step at a time. When the forced ids are
spent it leaves the request alone (the test's own `max_tokens`, a grammar or the forced end-of-sequence id
ends it). Everything downstream (detokenization, the server's parsers, structured outputs) runs exactly as
for a real model's reply.

The tiny model's chat template is `CHAT_TEMPLATE` (its tokenizer has none): `chat_template_file` writes it
for `--chat-template`.

`ForcedTokens` implements Model Runner V2's logits-processor interface, and where the release still has the V1
runner (vLLM 0.31 to 0.33) the V1 interface too, which is the runner `SERVER_ENV` pins there
(VLLM_USE_V2_MODEL_RUNNER=0: the CPU engine runs it anyway, and on CUDA it keeps the forced replies on the
path this harness's own tests run). vLLM 0.34 has only Model Runner V2 and refuses that variable, so there
`SERVER_ENV` is empty. The module imports vLLM and torch: import it only where vLLM is installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from vllm.v1.worker.gpu.sample.logits_processor.interface import LogitsContext, LogitsProcRequestState
from vllm.v1.worker.gpu.sample.logits_processor.interface import LogitsProcessor as V2LogitsProcessor

if TYPE_CHECKING:
    from vllm.config import VllmConfig
    from vllm.sampling_params import SamplingParams

# The V1 model runner and its interface: vLLM 0.31 to 0.33 (0.34 removed both).
HAS_V1_RUNNER = find_spec("vllm.v1.sample.logits_processor") is not None
# The request parameter (SamplingParams.extra_args, "vllm_xargs" over HTTP) holding the forced token ids.
FORCED_PARAM = "forced_token_ids"
SERVER_ARGS: tuple[str, ...] = ("--logits-processors", f"{__name__}:ForcedTokens")
SERVER_ENV: dict[str, str] = {"VLLM_USE_V2_MODEL_RUNNER": "0"} if HAS_V1_RUNNER else {}

# Role-prefixed turns, then the assistant's turn opened: enough for chat requests, tools included (the
# template ignores them; the parser under test does not need the model to have seen them).
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)


def chat_template_file(directory: Path) -> Path:
    """Writes CHAT_TEMPLATE into `directory` and returns its path, for `--chat-template`."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "tiny_chat_template.jinja"
    path.write_text(CHAT_TEMPLATE, encoding="utf-8")
    return path


def forced_ids(tokenizer: Any, pieces: Sequence[str], *, end: bool = True) -> list[int]:
    """The token ids of `pieces`, each tokenized on its own (a marker keeps its own ids), then EOS if `end`.

    Tokenizing each piece separately keeps a marker's ids the same as when it is tokenized alone, which is
    how a parser matching a marker's token ids (a reasoning parser's end check) finds it.
    """
    ids = [token for piece in pieces for token in tokenizer.encode(piece, add_special_tokens=False)]
    return [*ids, tokenizer.eos_token_id] if end else ids


def forced_request(tokenizer: Any, pieces: Sequence[str], *, end: bool = True) -> dict[str, Any]:
    """The request fields that make the reply exactly `"".join(pieces)` (then EOS, when `end`)."""
    ids = forced_ids(tokenizer, pieces, end=end)
    return {"vllm_xargs": {FORCED_PARAM: ids}, "max_tokens": len(ids) + 8, "temperature": 0.0}


def force(logits: torch.Tensor, row: int, token: int) -> None:
    """Masks every logit of `row` except `token`'s. The forced id keeps its own logit: where a grammar
    (structured outputs) already masked it, the row has nothing left to sample and the test sees it, instead
    of the grammar being overridden."""
    keep = logits[row, token].clone()
    logits[row].fill_(float("-inf"))
    logits[row, token] = keep


def requested(params: SamplingParams) -> list[int] | None:
    ids = (params.extra_args or {}).get(FORCED_PARAM)
    return list(ids) if ids else None


class ForcedTokensV2(V2LogitsProcessor):
    """Model Runner V2: masks, for each request passing `forced_token_ids`, every logit except the next id of
    that list, the next one being the request's output position at the row (`ctx.pos` + 1 - its prompt)."""

    def __init__(self, vllm_config: VllmConfig, req_states: LogitsProcRequestState) -> None:
        self.req_states = req_states
        self.forced: list[list[int] | None] = [None] * req_states.max_num_reqs

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        ids = (sampling_params.extra_args or {}).get(FORCED_PARAM)
        if ids is not None and not (isinstance(ids, list) and all(isinstance(i, int) and i >= 0 for i in ids)):
            raise ValueError(f"{FORCED_PARAM} must be a list of non-negative token ids")

    def add_request(self, req_idx: int, sampling_params: SamplingParams) -> bool:
        self.forced[req_idx] = requested(sampling_params)
        return self.forced[req_idx] is not None

    def apply(self, logits: torch.Tensor, ctx: LogitsContext) -> torch.Tensor:
        slots = ctx.expanded_idx_mapping.tolist()
        if not any(0 <= slot < len(self.forced) and self.forced[slot] for slot in slots):
            return logits
        positions = ctx.pos.tolist()
        prompt_lens = self.req_states.prompt_len.np
        for row, slot in enumerate(slots):
            ids = self.forced[slot] if slot >= 0 else None
            step = positions[row] + 1 - int(prompt_lens[slot]) if ids else -1
            if ids and 0 <= step < len(ids):
                force(logits, row, ids[step])
        return logits


if HAS_V1_RUNNER:
    from vllm.v1.sample.logits_processor import BatchUpdate, process_dict_updates
    from vllm.v1.sample.logits_processor import LogitsProcessor as V1LogitsProcessor

    class ForcedTokens(ForcedTokensV2, V1LogitsProcessor):
        """Both runners' contracts (vLLM 0.31 to 0.33); the two construct it differently, which is how
        `__init__` tells them apart."""

        def __init__(
            self,
            vllm_config: VllmConfig,
            device_or_req_states: torch.device | LogitsProcRequestState,
            is_pin_memory: bool = False,
        ) -> None:
            if isinstance(device_or_req_states, LogitsProcRequestState):
                super().__init__(vllm_config, device_or_req_states)
                return
            self.device = device_or_req_states
            # persistent-batch row -> (forced ids, the request's live list of output ids)
            self.rows: dict[int, tuple[list[int], list[int]]] = {}

        def is_argmax_invariant(self) -> bool:
            return False  # it changes the argmax: greedy requests must go through apply()

        def update_state(self, batch_update: BatchUpdate | None) -> None:
            def forced(params: SamplingParams, _prompt: list[int] | None, output: list[int]):
                ids = requested(params)
                return (ids, output) if ids else None

            process_dict_updates(self.rows, batch_update, forced)

        def apply(self, logits: torch.Tensor, ctx: LogitsContext | None = None) -> torch.Tensor:
            if ctx is not None:
                return super().apply(logits, ctx)
            for row, (ids, output) in self.rows.items():
                step = len(output)
                if step < len(ids):
                    force(logits, row, ids[step])
            return logits

else:

    class ForcedTokens(ForcedTokensV2):
        """Model Runner V2's contract alone: vLLM 0.34 has no other runner."""
