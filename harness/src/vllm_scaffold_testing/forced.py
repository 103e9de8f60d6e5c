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

`ForcedTokens` is vLLM's V1 logits-processor interface, the one the V1 model runner loads (the CPU engine,
and CUDA with VLLM_USE_V2_MODEL_RUNNER=0, which `SERVER_ENV` sets). Its module imports vLLM and torch:
import it only where vLLM is installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, process_dict_updates

if TYPE_CHECKING:
    from vllm.config import VllmConfig
    from vllm.sampling_params import SamplingParams

# The request parameter (SamplingParams.extra_args, "vllm_xargs" over HTTP) holding the forced token ids.
FORCED_PARAM = "forced_token_ids"
SERVER_ARGS: tuple[str, ...] = ("--logits-processors", f"{__name__}:ForcedTokens")
SERVER_ENV: dict[str, str] = {"VLLM_USE_V2_MODEL_RUNNER": "0"}

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


class ForcedTokens(LogitsProcessor):
    """Masks, for each request passing `forced_token_ids`, every logit except the next id of that list."""

    def __init__(self, vllm_config: VllmConfig, device: torch.device, is_pin_memory: bool) -> None:
        self.device = device
        # persistent-batch row -> (forced ids, the request's live list of output ids)
        self.rows: dict[int, tuple[list[int], list[int]]] = {}

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        ids = (sampling_params.extra_args or {}).get(FORCED_PARAM)
        if ids is not None and not (isinstance(ids, list) and all(isinstance(i, int) and i >= 0 for i in ids)):
            raise ValueError(f"{FORCED_PARAM} must be a list of non-negative token ids")

    def is_argmax_invariant(self) -> bool:
        return False  # it changes the argmax: greedy requests must go through apply()

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        def forced(params: SamplingParams, _prompt: list[int] | None, output: list[int]):
            ids = (params.extra_args or {}).get(FORCED_PARAM)
            return (list(ids), output) if ids else None

        process_dict_updates(self.rows, batch_update, forced)

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        for row, (ids, output) in self.rows.items():
            step = len(output)
            if step < len(ids):
                # The forced id keeps its own logit: where a grammar (structured outputs) already masked it,
                # the row has nothing left to sample and the test sees it, instead of the grammar being overridden.
                token = ids[step]
                keep = logits[row, token].clone()
                logits[row].fill_(float("-inf"))
                logits[row, token] = keep
        return logits
