"""Registers `MyToolsToolParser` with vLLM's `ToolParserManager` under the name `my_tools`.

`register()` runs from `my_tools.vllm_plugin.register`, the package's general plugin, once in every vLLM
process. Only the API server uses tool parsers: the server validates `--tool-call-parser my_tools`
against the registered names before it starts the engine, and looks the class up by name when it builds its
chat handler. The registration is lazy (a module path and a class name), so the parser module, with its
OpenAI protocol imports, is imported only by the server that asks for it, not by the engine core or the
workers. It is idempotent, and it refuses to take a name another parser already holds.
"""

from __future__ import annotations

PARSER_NAME = "my_tools"
PARSER_MODULE = "my_tools.tools.parser"
PARSER_CLASS = "MyToolsToolParser"


def register() -> None:
    """Maps PARSER_NAME to the parser class, lazily; raises when another parser holds the name."""
    from vllm.tool_parsers import ToolParserManager

    target = (PARSER_MODULE, PARSER_CLASS)
    eager = ToolParserManager.tool_parsers.get(PARSER_NAME)
    lazy = ToolParserManager.lazy_parsers.get(PARSER_NAME)
    if lazy == target and eager is None:
        return  # already registered in this process
    taken = (
        f"{eager.__module__}.{eager.__qualname__}" if eager is not None else ".".join(lazy) if lazy else None
    )
    if taken is not None and taken != ".".join(target):
        # A lazy entry of the same name would silently replace vLLM's or another plugin's parser.
        raise ValueError(
            f"tool parser name {PARSER_NAME!r} is already registered to {taken}: rename this parser "
            f"(PARSER_NAME in {__name__}) and start the server with --tool-call-parser NEW_NAME"
        )
    ToolParserManager.register_lazy_module(PARSER_NAME, PARSER_MODULE, PARSER_CLASS)
