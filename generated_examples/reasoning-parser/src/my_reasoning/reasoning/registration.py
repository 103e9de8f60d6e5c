"""Registers `MyReasoningReasoningParser` with vLLM's `ReasoningParserManager` as `my_reasoning`.

`register()` runs from `my_reasoning.vllm_plugin.register`, the package's general plugin, once in every vLLM
process. Two process families need the name: the front end (the API server validates
`--reasoning-parser my_reasoning` before it builds the engine, building the engine config constructs the
parser once, and the server splits replies) and the engine core, whose structured-output manager looks the
name up when the engine core is built, after the general plugins ran there. A registration made only from a
plugin the API server loads after its check (an endpoint, IO-processor or stat-logger plugin) is refused
there with a KeyError. The registration is lazy (a module path and a class name), so the parser module is
imported only where the name is looked up. It is idempotent, and it refuses a name another parser holds.
"""

from __future__ import annotations

PARSER_NAME = "my_reasoning"
PARSER_MODULE = "my_reasoning.reasoning.parser"
PARSER_CLASS = "MyReasoningReasoningParser"


def register() -> None:
    """Maps PARSER_NAME to the parser class, lazily; raises when another parser holds the name."""
    from vllm.reasoning import ReasoningParserManager

    target = (PARSER_MODULE, PARSER_CLASS)
    eager = ReasoningParserManager.reasoning_parsers.get(PARSER_NAME)
    lazy = ReasoningParserManager.lazy_parsers.get(PARSER_NAME)
    if lazy == target and eager is None:
        return  # already registered in this process
    taken = (
        f"{eager.__module__}.{eager.__qualname__}" if eager is not None else ".".join(lazy) if lazy else None
    )
    if taken is not None and taken != ".".join(target):
        # A lazy entry of the same name would silently replace vLLM's or another plugin's parser.
        raise ValueError(
            f"reasoning parser name {PARSER_NAME!r} is already registered to {taken}: rename this parser "
            f"(PARSER_NAME in {__name__}) and start the server with --reasoning-parser NEW_NAME"
        )
    ReasoningParserManager.register_lazy_module(PARSER_NAME, PARSER_MODULE, PARSER_CLASS)
