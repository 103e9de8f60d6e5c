"""`MyReasoningReasoningParser` in vLLM's OpenAI server and in its engine core (structured outputs).

One server on the tiny model for the module, started with `--reasoning-parser my_reasoning`. Both processes
look the name up: the API server to split replies into `reasoning` and `content`, the engine core's
structured-output manager when it is built, so a server that starts has found the registration in both. The
tiny random model never reasons by itself, so each request names the reply it must produce: the harness's
`ForcedTokens` logits processor (loaded with `--logits-processors`) masks every token but the next one of that
reply, given in the request's `vllm_xargs`. The structured-output test forces only the reasoning: the answer
after it is chosen by the model under vLLM's grammar, which the engine core applies only once this parser
says the reasoning has ended.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("vllm")

from transformers import AutoTokenizer  # noqa: E402
from vllm_scaffold_testing import forced  # noqa: E402

from my_reasoning.reasoning.parser import END, START  # noqa: E402
from my_reasoning.reasoning.registration import PARSER_NAME  # noqa: E402

pytestmark = pytest.mark.engine

REPLY = [START, "Two and two make four.", END, "4"]


@pytest.fixture(scope="module")
def server(module_server, tmp_path_factory: pytest.TempPathFactory):
    template = forced.chat_template_file(tmp_path_factory.mktemp("chat"))
    args = [*forced.SERVER_ARGS, "--chat-template", str(template), "--reasoning-parser", PARSER_NAME]
    return module_server(args, forced.SERVER_ENV)


@pytest.fixture(scope="module")
def tokenizer(tiny_llama: Path):
    return AutoTokenizer.from_pretrained(tiny_llama)


def chat(tokenizer, reply: list[str], *, end: bool = True) -> dict:
    messages = [{"role": "user", "content": "What is two and two?"}]
    return {"messages": messages, **forced.forced_request(tokenizer, reply, end=end)}


def test_a_reply_is_split_into_reasoning_and_content(server, tokenizer) -> None:
    status, body = server.post("/v1/chat/completions", chat(tokenizer, REPLY))
    assert status == 200, body
    message = body["choices"][0]["message"]
    assert message["reasoning"] == "Two and two make four."
    assert message["content"] == "4"


def test_a_streamed_reply_is_split_the_same_way(server, tokenizer) -> None:
    status, events = server.post_stream("/v1/chat/completions", chat(tokenizer, REPLY))
    assert status == 200, events
    deltas = [event["choices"][0]["delta"] for event in events if event["choices"]]
    assert "".join(delta.get("reasoning") or "" for delta in deltas) == "Two and two make four."
    assert "".join(delta.get("content") or "" for delta in deltas) == "4"


def test_the_engine_core_constrains_only_the_answer_after_the_reasoning(server, tokenizer) -> None:
    request = chat(tokenizer, [START, "Pick one.", END], end=False)
    request["structured_outputs"] = {"choice": ["yes", "no"]}
    status, body = server.post("/v1/chat/completions", request)
    assert status == 200, body
    message = body["choices"][0]["message"]
    # Forced reasoning passed the grammar untouched: the engine core found this parser and asked it when the
    # reasoning ended; the answer after it obeys the grammar.
    assert message["reasoning"] == "Pick one."
    assert message["content"] in {"yes", "no"}
