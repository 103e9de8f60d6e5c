"""The reasoning-parser template: its questions, and `add` next to another component."""

from __future__ import annotations

from pathlib import Path

from seam_helpers import add_into, added, assert_lint_clean, assert_registered


def test_add_next_to_a_general_plugin_with_answers(host: Path) -> None:
    add_into(host, "reasoning-parser", "thoughts", "parser_name=host_think", "start_marker=<r>", "end_marker=</r>")
    parser = (host / "src/host/thoughts/parser.py").read_text()
    assert 'START = "<r>"' in parser and 'END = "</r>"' in parser
    assert "class ThoughtsReasoningParser(ReasoningParser):" in parser
    registration = (host / "src/host/thoughts/registration.py").read_text()
    assert 'PARSER_NAME = "host_think"' in registration
    assert_registered(host, "host.thoughts.registration:register")
    manifest = added(host, "reasoning-parser")
    assert manifest[1]["object"] == "host.thoughts.parser:ThoughtsReasoningParser"
    assert manifest[1]["enable"][0] == "--reasoning-parser host_think"
    assert_lint_clean(host, "src/host/thoughts", "tests/test_thoughts_parser.py", "tests/test_thoughts_server.py")
