"""`MyReasoningReasoningParser` on its own: text split whole and streamed, and the token-side checks.

No engine: the parser is given text and token ids of the tiny model's tokenizer directly. Streams are replayed
as the server feeds them, cut into the tiny model's tokens and into single characters, so markers split across
chunks are exercised. `test_reasoning_server.py` proves the same parser in the server and the engine core.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

pytest.importorskip("vllm")

from transformers import AutoTokenizer  # noqa: E402
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: E402
from vllm.reasoning import ReasoningParserManager  # noqa: E402

from my_reasoning.reasoning import registration  # noqa: E402
from my_reasoning.reasoning.parser import END, START, MyReasoningReasoningParser  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer(tiny_llama: Path):
    return AutoTokenizer.from_pretrained(tiny_llama)


@pytest.fixture
def parser(tokenizer) -> MyReasoningReasoningParser:
    return MyReasoningReasoningParser(tokenizer)


REQUEST = ChatCompletionRequest(model="tiny", messages=[{"role": "user", "content": "2+2?"}])


def stream(parser: MyReasoningReasoningParser, pieces: list[str]) -> tuple[str, str]:
    """Feeds `pieces` as the server does; returns (the reasoning sent, the content sent)."""
    previous, reasoning, content = "", "", ""
    for piece in pieces:
        current = previous + piece
        delta = parser.extract_reasoning_streaming(previous, current, piece, [], [], [])
        previous = current
        if delta is not None:
            reasoning += delta.reasoning or ""
            content += delta.content or ""
    return reasoning, content


def token_pieces(tokenizer, text: str) -> list[str]:
    ids = tokenizer.encode(text, add_special_tokens=False)
    pieces = [tokenizer.decode(ids[: i + 1]) for i in range(len(ids))]
    return [pieces[0], *(b[len(a) :] for a, b in pairwise(pieces))]


def ids(tokenizer, *pieces: str) -> list[int]:
    return [token for piece in pieces for token in tokenizer.encode(piece, add_special_tokens=False)]


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (f"{START}Two and two.{END}4", ("Two and two.", "4")),
        (f"{START}still thinking", ("still thinking", None)),  # cut off before the end marker
        (f"{START}{END}4", ("", "4")),
        (f"{START}done{END}", ("done", None)),
        ("4, without reasoning", (None, "4, without reasoning")),
        (f"no start{END}4", (None, f"no start{END}4")),
    ],
    ids=["both", "unterminated", "empty-reasoning", "no-answer", "no-reasoning", "end-without-start"],
)
def test_whole_replies_split_into_reasoning_and_content(parser, output: str, expected) -> None:
    assert parser.extract_reasoning(output, REQUEST) == expected


@pytest.mark.parametrize("cut", ["tokens", "characters", "whole"])
@pytest.mark.parametrize(
    "output",
    [f"{START}Two and two make four.{END}The answer is 4.", f"{START}cut off", "plain answer", f"<{END}"],
)
def test_streams_give_what_the_whole_reply_gives(parser, tokenizer, output: str, cut: str) -> None:
    pieces = {"tokens": token_pieces(tokenizer, output), "characters": list(output), "whole": [output]}[cut]
    assert "".join(pieces) == output
    whole_reasoning, whole_content = MyReasoningReasoningParser(tokenizer).extract_reasoning(output, REQUEST)
    assert stream(parser, pieces) == (whole_reasoning or "", whole_content or "")


def test_a_marker_split_across_chunks_is_held_back(parser) -> None:
    cut = len(START) + len("why") + len(END) // 2
    text = f"{START}why{END}because"
    first = parser.extract_reasoning_streaming("", text[:cut], text[:cut], [], [], [])
    assert first is not None and first.reasoning == "why" and first.content is None
    second = parser.extract_reasoning_streaming(text[:cut], text, text[cut:], [], [], [])
    assert second is not None and second.reasoning is None and second.content == "because"


def test_token_side_finds_the_end_of_reasoning(parser, tokenizer) -> None:
    prompt = ids(tokenizer, "user: 2+2?\nassistant: ")
    reasoning = [*prompt, *ids(tokenizer, START, "two and two")]
    ended = [*reasoning, *ids(tokenizer, END)]
    answer = ids(tokenizer, "4")
    assert not parser.is_reasoning_end(prompt) and not parser.is_reasoning_end(reasoning)
    assert parser.is_reasoning_end(ended) and parser.is_reasoning_end([*ended, *answer])
    # A new reasoning block after an earlier one (a previous turn in the prompt) is open again.
    assert not parser.is_reasoning_end([*ended, *answer, *ids(tokenizer, START, "more")])
    assert parser.extract_content_ids([*ended, *answer]) == answer
    assert parser.extract_content_ids(reasoning) == []
    # Step by step, as the engine core asks: true only at the step whose tokens complete the end marker.
    steps = [parser.is_reasoning_end_streaming(ended[: i + 1], ended[i : i + 1]) for i in range(len(ended))]
    assert steps == [False] * (len(ended) - 1) + [True]
    assert parser.is_reasoning_end_streaming(ended, ended[-2:])  # two tokens in one step (speculative)
    assert not parser.is_reasoning_end_streaming([*ended, *answer], answer)


def test_register_is_lazy_idempotent_and_refuses_a_taken_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ReasoningParserManager, "lazy_parsers", dict(ReasoningParserManager.lazy_parsers))
    monkeypatch.setattr(
        ReasoningParserManager, "reasoning_parsers", dict(ReasoningParserManager.reasoning_parsers)
    )
    ReasoningParserManager.lazy_parsers.pop(registration.PARSER_NAME, None)
    registration.register()
    registration.register()
    assert ReasoningParserManager.lazy_parsers[registration.PARSER_NAME] == (
        registration.PARSER_MODULE,
        registration.PARSER_CLASS,
    )
    assert ReasoningParserManager.get_reasoning_parser(registration.PARSER_NAME) is MyReasoningReasoningParser

    ReasoningParserManager.reasoning_parsers.pop(registration.PARSER_NAME)
    ReasoningParserManager.lazy_parsers[registration.PARSER_NAME] = (
        "another_plugin.reasoning",
        "OtherReasoningParser",
    )
    with pytest.raises(ValueError, match="already registered"):
        registration.register()
