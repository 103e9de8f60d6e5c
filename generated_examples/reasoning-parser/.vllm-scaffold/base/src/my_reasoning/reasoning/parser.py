"""`MyReasoningReasoningParser`: a reply that opens with `<think>` reasons until `</think>`.

Loaded in two process families, both through `registration.register()` (run by the general plugin in every
vLLM process), which maps the name `my_reasoning` to this class lazily:
- the front end, which builds one while it builds the engine config (to read `reasoning_start_str` and
  `reasoning_end_str`), and, in the API server, splits each chat reply into `reasoning` and `content`,
  streamed or not (text side: `extract_reasoning`, `extract_reasoning_streaming`);
- the engine core, whose structured-output manager looks the class up by name when it is built and asks it,
  for each request with structured outputs, when the reasoning ends: the grammar constrains only the tokens
  after it (token side: `is_reasoning_end`, `is_reasoning_end_streaming`). `extract_content_ids` completes
  vLLM's interface; the structured-output manager does not call it.

The format: a reply that starts with `<think>` is reasoning up to `</think>`, and the answer
after it; a reply cut off before `</think>` is all reasoning; a reply that does not start with
`<think>` is all answer. The token side matches the markers' own token ids (the ids each marker has
when tokenized alone, which a model's special token always has).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from vllm.entrypoints.generate.base.protocol import DeltaMessage
from vllm.reasoning import ReasoningParser

if TYPE_CHECKING:
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.entrypoints.openai.responses.protocol import ResponsesRequest
    from vllm.tokenizers import TokenizerLike

START = "<think>"
END = "</think>"


def split_reasoning(text: str, *, final: bool) -> tuple[str, str]:
    """(reasoning, content) of `text`. With `final` false (a stream so far), a trailing piece that could be
    the beginning of a marker is in neither yet."""
    if not text.startswith(START):
        if not final and START.startswith(text):
            return "", ""  # could still become START
        return "", text
    body = text[len(START) :]
    end = body.find(END)
    if end != -1:
        return body[:end], body[end + len(END) :]
    if not final:
        for length in range(min(len(END) - 1, len(body)), 0, -1):
            if END.startswith(body[-length:]):
                return body[:-length], ""
    return body, ""


def find(ids: Sequence[int], pattern: Sequence[int], *, last: bool = False) -> int:
    """The index of the first (or `last`) occurrence of `pattern` in `ids`; -1 when it does not occur."""
    n = len(pattern)
    positions = range(len(ids) - n, -1, -1) if last else range(len(ids) - n + 1)
    return next((i for i in positions if n and list(ids[i : i + n]) == list(pattern)), -1)


class MyReasoningReasoningParser(ReasoningParser):
    """Splits `<think>reasoning</think>answer`; tells structured outputs where the answer starts."""

    def __init__(self, tokenizer: TokenizerLike, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, *args, **kwargs)
        self.start_ids: list[int] = tokenizer.encode(START, add_special_tokens=False)
        self.end_ids: list[int] = tokenizer.encode(END, add_special_tokens=False)
        self.sent_reasoning = 0  # characters of the stream's reasoning and content already sent
        self.sent_content = 0

    @property
    def reasoning_start_str(self) -> str:
        return START

    @property
    def reasoning_end_str(self) -> str:
        return END

    # Token side: the engine core's structured-output manager --------------------------------------------

    def is_reasoning_end(self, input_ids: Sequence[int]) -> bool:
        """Whether `input_ids` (the prompt, or prompt and output) hold an end marker after the last start."""
        end = find(input_ids, self.end_ids, last=True)
        return end != -1 and end > find(input_ids, self.start_ids, last=True)

    def is_reasoning_end_streaming(self, input_ids: Sequence[int], delta_ids: Iterable[int]) -> bool:
        """Whether the end marker's last token is among this step's `delta_ids` (the tail of `input_ids`)."""
        steps = len(list(delta_ids))
        n = len(self.end_ids)
        return any(
            list(input_ids[len(input_ids) - k - n : len(input_ids) - k]) == self.end_ids
            for k in range(steps)
            if len(input_ids) - k - n >= 0
        )

    def extract_content_ids(self, input_ids: list[int]) -> list[int]:
        """The ids after the last end marker: the answer, which the grammar constrains; [] before it."""
        end = find(input_ids, self.end_ids, last=True)
        return [] if end == -1 else input_ids[end + len(self.end_ids) :]

    # Text side: the API server -------------------------------------------------------------------------

    def extract_reasoning(
        self, model_output: str, request: ChatCompletionRequest | ResponsesRequest
    ) -> tuple[str | None, str | None]:
        reasoning, content = split_reasoning(model_output, final=True)
        if not model_output.startswith(START):
            return None, model_output
        return reasoning, content or None

    def extract_reasoning_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
    ) -> DeltaMessage | None:
        # The text so far is split again each time, so a marker cut across chunks is found once complete.
        reasoning, content = split_reasoning(current_text, final=False)
        new_reasoning, new_content = reasoning[self.sent_reasoning :], content[self.sent_content :]
        self.sent_reasoning, self.sent_content = len(reasoning), len(content)
        if not new_reasoning and not new_content:
            return None
        return DeltaMessage(reasoning=new_reasoning or None, content=new_content or None)
