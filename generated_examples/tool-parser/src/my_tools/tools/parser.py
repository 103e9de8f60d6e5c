"""`MyToolsToolParser`: tool calls written as `<tool_call>{JSON}</tool_call>` become OpenAI `tool_calls`.

Loaded by vLLM's OpenAI-compatible server (the API-server process) only: `registration.register()` maps the
name `my_tools` to this class lazily, and the server imports this module the first time it looks the
name up, once per server process, when started with `--tool-call-parser my_tools
--enable-auto-tool-choice`. The server builds one parser object per chat request.

The format: the model writes each call as `<tool_call>` + a JSON object `{"name": str, "arguments":
object}` + `</tool_call>`. Text outside the calls is the message's content. A block whose JSON does not parse,
or that lacks the name or the arguments object, is not a call: it stays in the content, verbatim, so nothing
the model wrote is lost. Streaming gives the same split: content is sent as it arrives (a trailing piece that
could be the start of `<tool_call>` is held back until the next chunk shows what it is), and each call is
sent whole, with its arguments, once its `</tool_call>` has arrived.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vllm.entrypoints.generate.base.protocol import (
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
    ExtractedToolCallInformation,
    FunctionCall,
    ToolCall,
)
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.tokenizers import TokenizerLike
from vllm.tool_parsers import ToolParser
from vllm.tool_parsers.utils import Tool

CALL_START = "<tool_call>"
CALL_END = "</tool_call>"


@dataclass(frozen=True)
class Call:
    """One parsed tool call: the function's name and its arguments as a JSON object."""

    name: str
    arguments: dict[str, Any]

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False)


@dataclass(frozen=True)
class Split:
    """A model output cut into content and calls, in order; `pending` is what cannot be judged yet."""

    content: str
    calls: tuple[Call, ...]
    pending: str = ""


def parse_call(body: str) -> Call | None:
    """The call a block's body holds, or None when it is not `{"name": str, "arguments": object}`."""
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    name, arguments = value.get("name"), value.get("arguments", {})
    if not isinstance(name, str) or not name or not isinstance(arguments, dict):
        return None
    return Call(name, arguments)


def held_back(text: str) -> int:
    """How many trailing characters of `text` could be the beginning of CALL_START (0 when none)."""
    for length in range(min(len(CALL_START) - 1, len(text)), 0, -1):
        if CALL_START.startswith(text[-length:]):
            return length
    return 0


def split_output(text: str, *, final: bool) -> Split:
    """Cuts `text` into content and calls. With `final` false (a stream so far), an unclosed block and a
    trailing possible start of CALL_START are `pending`; with `final` true they are content."""
    content: list[str] = []
    calls: list[Call] = []
    position = 0
    while (start := text.find(CALL_START, position)) != -1:
        content.append(text[position:start])
        end = text.find(CALL_END, start + len(CALL_START))
        restart = text.find(CALL_START, start + len(CALL_START))
        if restart != -1 and (end == -1 or restart < end):
            # A start marker that another one follows before any end: not a call, and the next may be.
            content.append(text[start:restart])
            position = restart
            continue
        if end == -1:
            rest = text[start:]
            return Split("".join(content) + (rest if final else ""), tuple(calls), "" if final else rest)
        block_end = end + len(CALL_END)
        call = parse_call(text[start + len(CALL_START) : end])
        if call is None:
            content.append(text[start:block_end])
        else:
            calls.append(call)
        position = block_end
    tail = text[position:]
    hold = 0 if final else held_back(tail)
    content.append(tail[: len(tail) - hold])
    return Split("".join(content), tuple(calls), tail[len(tail) - hold :])


class MyToolsToolParser(ToolParser):
    """Extracts `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` tool calls, whole or streamed."""

    def __init__(self, tokenizer: TokenizerLike, tools: list[Tool] | None = None) -> None:
        super().__init__(tokenizer, tools)
        self.sent_content = 0  # characters of the stream's content already sent

    def extract_tool_calls(
        self, model_output: str, request: ChatCompletionRequest
    ) -> ExtractedToolCallInformation:
        split = split_output(model_output, final=True)
        if not split.calls:
            return ExtractedToolCallInformation(tools_called=False, tool_calls=[], content=model_output)
        tool_calls = [
            ToolCall(function=FunctionCall(name=call.name, arguments=call.arguments_json))
            for call in split.calls
        ]
        return ExtractedToolCallInformation(
            tools_called=True, tool_calls=tool_calls, content=split.content or None
        )

    def extract_tool_calls_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
        request: ChatCompletionRequest,
    ) -> DeltaMessage | None:
        # The whole text so far is split again each time, so a marker cut across chunks (or tokens) is found
        # once its last piece arrives; only what was not sent before goes into this delta.
        split = split_output(current_text, final=False)
        content = split.content[self.sent_content :]
        self.sent_content = len(split.content)
        new_calls = split.calls[len(self.prev_tool_call_arr) :]
        deltas = []
        for call in new_calls:
            self.current_tool_id += 1
            # What the server reads when the stream ends to send arguments not yet sent: here, none are left.
            self.prev_tool_call_arr.append({"name": call.name, "arguments": call.arguments})
            self.streamed_args_for_tool.append(call.arguments_json)
            # ToolCall draws the call's id the way the server's non-streamed responses do.
            whole = ToolCall(function=FunctionCall(name=call.name, arguments=call.arguments_json))
            function = DeltaFunctionCall(name=call.name, arguments=call.arguments_json)
            deltas.append(
                DeltaToolCall(index=self.current_tool_id, id=whole.id, type="function", function=function)
            )
        self.current_tool_name_sent = bool(self.prev_tool_call_arr)
        if not content and not deltas:
            return None
        return DeltaMessage(content=content or None, tool_calls=deltas)
