"""The tool-parser template: its questions, and `add` next to another component."""

from __future__ import annotations

from pathlib import Path

from seam_helpers import add_into, added, assert_lint_clean, assert_registered


def test_add_next_to_a_general_plugin_with_answers(host: Path) -> None:
    add_into(host, "tool-parser", "calls", "parser_name=host-calls", "call_start=[CALL]", "call_end=[/CALL]")
    parser = (host / "src/host/calls/parser.py").read_text()
    assert 'CALL_START = "[CALL]"' in parser and 'CALL_END = "[/CALL]"' in parser
    assert "class CallsToolParser(ToolParser):" in parser
    registration = (host / "src/host/calls/registration.py").read_text()
    assert 'PARSER_NAME = "host-calls"' in registration and 'PARSER_MODULE = "host.calls.parser"' in registration
    assert_registered(host, "host.calls.registration:register")
    manifest = added(host, "tool-parser")
    assert manifest[1]["object"] == "host.calls.parser:CallsToolParser"
    assert manifest[1]["enable"][0] == "--tool-call-parser host-calls --enable-auto-tool-choice"
    assert_lint_clean(host, "src/host/calls", "tests/test_calls_parser.py", "tests/test_calls_server.py")
