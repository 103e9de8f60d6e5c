"""`MyToolsToolParser` inside vLLM's OpenAI-compatible server: chat requests with `tools` get `tool_calls`.

One server on the tiny model for the module, started with `--tool-call-parser my_tools
--enable-auto-tool-choice`: the name resolves only through this package's general plugin, so a server that
starts at all has found the registration. The tiny random model never writes a tool call by itself, so each
request names the reply it must produce: the harness's `ForcedTokens` logits processor (loaded with
`--logits-processors`) masks every token but the next one of that reply, given in the request's
`vllm_xargs`. Detokenization, the server's parser calls and the response are vLLM's own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("vllm")

from transformers import AutoTokenizer  # noqa: E402
from vllm_scaffold_testing import forced  # noqa: E402

from my_tools.tools.parser import CALL_END, CALL_START  # noqa: E402
from my_tools.tools.registration import PARSER_NAME  # noqa: E402

pytestmark = pytest.mark.engine

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
ARGUMENTS = {"city": "Paris"}
# The reply forced for tool-call requests, in pieces that keep each marker's own tokens.
CALL_REPLY = [
    "Let me check. ",
    CALL_START,
    json.dumps({"name": "get_weather", "arguments": ARGUMENTS}),
    CALL_END,
]


@pytest.fixture(scope="module")
def server(module_server, tmp_path_factory: pytest.TempPathFactory):
    template = forced.chat_template_file(tmp_path_factory.mktemp("chat"))
    args = [*forced.SERVER_ARGS, "--chat-template", str(template)]
    return module_server(
        [*args, "--tool-call-parser", PARSER_NAME, "--enable-auto-tool-choice"], forced.SERVER_ENV
    )


@pytest.fixture(scope="module")
def tokenizer(tiny_llama: Path):
    return AutoTokenizer.from_pretrained(tiny_llama)


def chat(tokenizer, reply: list[str]) -> dict:
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    return {
        "messages": messages,
        "tools": TOOLS,
        "tool_choice": "auto",
        **forced.forced_request(tokenizer, reply),
    }


def test_a_reply_with_a_call_comes_back_as_tool_calls(server, tokenizer) -> None:
    status, body = server.post("/v1/chat/completions", chat(tokenizer, CALL_REPLY))
    assert status == 200, body
    (choice,) = body["choices"]
    message = choice["message"]
    (tool_call,) = message["tool_calls"]
    assert tool_call["type"] == "function" and tool_call["id"]
    assert tool_call["function"]["name"] == "get_weather"
    assert json.loads(tool_call["function"]["arguments"]) == ARGUMENTS
    assert message["content"] == "Let me check. "
    assert choice["finish_reason"] == "tool_calls"


def test_a_streamed_reply_with_a_call_streams_tool_calls(server, tokenizer) -> None:
    status, events = server.post_stream("/v1/chat/completions", chat(tokenizer, CALL_REPLY))
    assert status == 200, events
    deltas = [event["choices"][0]["delta"] for event in events if event["choices"]]
    content = "".join(delta.get("content") or "" for delta in deltas)
    calls = [tool_call for delta in deltas for tool_call in delta.get("tool_calls") or []]
    assert content == "Let me check. "
    assert [call["index"] for call in calls] == [0]
    assert calls[0]["function"]["name"] == "get_weather" and calls[0]["id"]
    assert json.loads("".join(call["function"].get("arguments") or "" for call in calls)) == ARGUMENTS
    finish = [event["choices"][0]["finish_reason"] for event in events if event["choices"]]
    assert finish[-1] == "tool_calls"


def test_a_reply_without_a_call_is_plain_content(server, tokenizer) -> None:
    status, body = server.post("/v1/chat/completions", chat(tokenizer, ["It is sunny in Paris."]))
    assert status == 200, body
    message = body["choices"][0]["message"]
    assert message["content"] == "It is sunny in Paris." and not message.get("tool_calls")
    assert body["choices"][0]["finish_reason"] == "stop"
