"""`MyToolsToolParser` on its own: whole outputs, partial and malformed ones, and streams cut anywhere.

No engine: the parser is given text directly, and streams are replayed the way the server feeds them (the
text so far and the newest piece), cut into the tiny model's tokens and into single characters, so a marker
split across chunks is exercised. The server test (`test_tools_server.py`) proves the same parser inside
vLLM.
"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

pytest.importorskip("vllm")

from transformers import AutoTokenizer  # noqa: E402
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: E402
from vllm.tool_parsers import ToolParserManager  # noqa: E402

from my_tools.tools import registration  # noqa: E402
from my_tools.tools.parser import CALL_END, CALL_START, MyToolsToolParser  # noqa: E402

WEATHER = {"city": "Paris", "unit": "celsius"}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            },
        },
    }
]


def call(name: str, arguments: object) -> str:
    return CALL_START + json.dumps({"name": name, "arguments": arguments}) + CALL_END


@pytest.fixture(scope="module")
def tokenizer(tiny_llama: Path):
    return AutoTokenizer.from_pretrained(tiny_llama)


@pytest.fixture
def request_() -> ChatCompletionRequest:
    return ChatCompletionRequest(
        model="tiny", messages=[{"role": "user", "content": "weather?"}], tools=TOOLS
    )


def parse(tokenizer, text: str, request_: ChatCompletionRequest):
    return MyToolsToolParser(tokenizer).extract_tool_calls(text, request_)


def stream(tokenizer, pieces: list[str], request_: ChatCompletionRequest) -> tuple[str, list[dict]]:
    """Feeds `pieces` as the server does; returns (the content sent, the tool-call deltas sent)."""
    parser = MyToolsToolParser(tokenizer)
    previous, content, calls = "", "", []
    for piece in pieces:
        current = previous + piece
        delta = parser.extract_tool_calls_streaming(previous, current, piece, [], [], [], request_)
        previous = current
        if delta is None:
            continue
        content += delta.content or ""
        calls += [tool_call.model_dump(exclude_none=True) for tool_call in delta.tool_calls]
    return content, calls


def token_pieces(tokenizer, text: str) -> list[str]:
    """`text` as the tiny model's tokens would stream it: each token's decoded text."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    pieces = [tokenizer.decode(ids[: i + 1]) for i in range(len(ids))]
    return [pieces[0], *(b[len(a) :] for a, b in pairwise(pieces))]


def test_a_call_becomes_a_tool_call_and_the_text_around_it_content(tokenizer, request_) -> None:
    result = parse(tokenizer, "Let me look. " + call("get_weather", WEATHER), request_)
    assert result.tools_called
    (tool_call,) = result.tool_calls
    assert tool_call.function.name == "get_weather" and json.loads(tool_call.function.arguments) == WEATHER
    assert tool_call.id and tool_call.type == "function"
    assert result.content == "Let me look. "


def test_several_calls_keep_their_order(tokenizer, request_) -> None:
    text = call("get_weather", WEATHER) + "\n" + call("get_time", {}) + call("get_weather", {"city": "Oslo"})
    result = parse(tokenizer, text, request_)
    assert [c.function.name for c in result.tool_calls] == ["get_weather", "get_time", "get_weather"]
    assert len({c.id for c in result.tool_calls}) == 3
    assert result.content == "\n"


def test_plain_text_is_content(tokenizer, request_) -> None:
    result = parse(tokenizer, "It is sunny.", request_)
    assert not result.tools_called and result.tool_calls == [] and result.content == "It is sunny."


@pytest.mark.parametrize(
    "broken",
    [
        CALL_START + '{"name": "get_weather", "arguments": {"city": "Par',  # cut off: no end marker
        CALL_START + "not json" + CALL_END,
        CALL_START + '["get_weather"]' + CALL_END,
        CALL_START + '{"arguments": {}}' + CALL_END,
        CALL_START + '{"name": "get_weather", "arguments": "Paris"}' + CALL_END,
        CALL_START + '{"name": "", "arguments": {}}' + CALL_END,
    ],
    ids=["unterminated", "not-json", "not-an-object", "no-name", "arguments-not-an-object", "empty-name"],
)
def test_malformed_or_partial_calls_stay_in_the_content(tokenizer, request_, broken: str) -> None:
    result = parse(tokenizer, "Hi " + broken, request_)
    assert not result.tools_called and result.content == "Hi " + broken
    both = parse(tokenizer, broken + call("get_weather", WEATHER), request_)
    assert [c.function.name for c in both.tool_calls] == ["get_weather"] and both.content == broken


@pytest.mark.parametrize("cut", ["tokens", "characters", "whole"])
def test_streams_give_what_the_whole_output_gives(tokenizer, request_, cut: str) -> None:
    text = "Checking. " + call("get_weather", WEATHER) + " and " + call("get_time", {"zone": "UTC"}) + " done"
    pieces = {"tokens": token_pieces(tokenizer, text), "characters": list(text), "whole": [text]}[cut]
    assert "".join(pieces) == text
    content, calls = stream(tokenizer, pieces, request_)
    whole = parse(tokenizer, text, request_)
    assert content == whole.content == "Checking.  and  done"
    assert [c["index"] for c in calls] == [0, 1]
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == [
        (t.function.name, json.loads(t.function.arguments)) for t in whole.tool_calls
    ]
    assert all(c["id"] and c["type"] == "function" for c in calls)


def test_a_marker_split_across_chunks_is_not_sent_as_content(tokenizer, request_) -> None:
    text = "ok " + call("get_weather", WEATHER)
    cut = len("ok ") + len(CALL_START) // 2
    parser = MyToolsToolParser(tokenizer)
    first = parser.extract_tool_calls_streaming("", text[:cut], text[:cut], [], [], [], request_)
    assert first is not None and first.content == "ok "  # the half marker is held back
    second = parser.extract_tool_calls_streaming(text[:cut], text, text[cut:], [], [], [], request_)
    assert second is not None and second.content is None and len(second.tool_calls) == 1
    assert parser.get_remaining_unstreamed_args() == ""  # nothing left for the server to send at the end


def test_a_held_back_prefix_that_is_no_marker_is_sent_later(tokenizer, request_) -> None:
    text = "a " + CALL_START[:-1] + "x"
    content, calls = stream(tokenizer, list(text), request_)
    assert content == text and calls == []


def test_a_malformed_call_streams_as_content(tokenizer, request_) -> None:
    broken = CALL_START + "{oops}" + CALL_END
    content, calls = stream(tokenizer, token_pieces(tokenizer, "x " + broken), request_)
    assert content == "x " + broken and calls == []


def test_register_is_lazy_idempotent_and_refuses_a_taken_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ToolParserManager, "lazy_parsers", dict(ToolParserManager.lazy_parsers))
    monkeypatch.setattr(ToolParserManager, "tool_parsers", dict(ToolParserManager.tool_parsers))
    ToolParserManager.lazy_parsers.pop(registration.PARSER_NAME, None)
    registration.register()
    registration.register()
    assert ToolParserManager.lazy_parsers[registration.PARSER_NAME] == (
        registration.PARSER_MODULE,
        registration.PARSER_CLASS,
    )
    assert ToolParserManager.get_tool_parser(registration.PARSER_NAME) is MyToolsToolParser

    ToolParserManager.tool_parsers.pop(registration.PARSER_NAME)
    ToolParserManager.lazy_parsers[registration.PARSER_NAME] = ("another_plugin.tools", "OtherToolParser")
    with pytest.raises(ValueError, match="already registered"):
        registration.register()
