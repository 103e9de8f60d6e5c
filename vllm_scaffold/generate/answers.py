"""Checks on `--data KEY=VALUE` answers, by the type and choices each template question declares.

Copier would cast a value itself, and quietly: `maybe` is a true bool, `abc` for an int fails deep inside with
Python's own message. Every answer is checked here first, against its question in the template's copier.yml,
and a bad one is refused with a line naming the question, the value and what it accepts.
"""

from __future__ import annotations

import math
from typing import Any

from vllm_scaffold.errors import ScaffoldError

TRUE = ("true", "yes", "on", "1")
FALSE = ("false", "no", "off", "0")

# Free text ends up in docstrings, string literals and TOML strings of the generated package: one line, and
# short enough that the generated code still fits its line length (the description only lands in prose).
MAX_TEXT_LENGTH = 64
MAX_TEXT_LENGTH_BY_QUESTION = {"description": 100, "target": 96}  # target: a dotted vLLM path
_FORBIDDEN_TEXT = {'"': "a double quote", "\\": "a backslash", "\n": "a line break", "\r": "a line break"}


def check_answers(template: str, data: dict[str, str]) -> dict[str, str]:
    """`data` (answers to questions of `template`) with each value checked and put in the form copier reads."""
    from vllm_scaffold.generate.templates import questions

    asked = questions(template)
    return {key: check_answer(key, value, asked[key]) for key, value in data.items()}


class AnswerRefused(ScaffoldError):
    """An answer its question does not accept. `reason` ("max_texts takes a whole number, got 'abc'") is what
    both paths show: after `--data KEY=VALUE:` on the command line, on its own when asked on a terminal."""

    def __init__(self, key: str, value: str, reason: str, fix: str) -> None:
        super().__init__(f"--data {key}={repr(value)[1:-1]}: {reason}", fix)
        self.reason = reason


def recorded_data(template: str, answers: dict[str, Any]) -> dict[str, str]:
    """The recorded `answers` of a render (from `.vllm-scaffold/*.yml`) as --data for `template`'s questions."""
    from vllm_scaffold.generate.templates import questions

    asked = {key for key, question in questions(template).items() if question.get("when", True) is not False}
    as_text = {True: "true", False: "false"}  # derived (`when: false`) values are left to be computed again
    return {
        key: as_text[value] if isinstance(value, bool) else str(value) for key, value in answers.items() if key in asked
    }


def check_answer(key: str, value: str, question: dict[str, Any]) -> str:
    """`value` for question `key`, normalised (`YES` -> `true`); a one-line AnswerRefused when it is not accepted.

    The `--data` path checks every answer here; a question asked on a terminal checks the typed text here too
    (vllm_scaffold.terminal.prompts), before the template's own validator.
    """
    kind = question.get("type", "str")
    choices = question.get("choices")
    if choices:
        offered = [str(choice) for choice in (choices.values() if isinstance(choices, dict) else choices)]
        if value not in offered:
            raise _refuse(key, value, f"one of {', '.join(offered)}", offered[0])
        return value
    text = value.strip()
    if kind == "bool":
        if text.lower() in TRUE:
            return "true"
        if text.lower() in FALSE:
            return "false"
        raise _refuse(key, value, "true or false (also yes/no, on/off, 1/0)", "true")
    if kind == "int":
        try:
            return str(int(text, 10))
        except ValueError:
            raise _refuse(key, value, "a whole number", _example(question, "1")) from None
    if kind == "float":
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise _refuse(key, value, "a number", _example(question, "1.0"))
        return text
    for character, what in _FORBIDDEN_TEXT.items():
        if character in value:
            raise _refuse(key, value, f"text without {what}", None)
    limit = MAX_TEXT_LENGTH_BY_QUESTION.get(key, MAX_TEXT_LENGTH)
    if len(value) > limit:
        raise _refuse(key, value, f"at most {limit} characters, got {len(value)}", None, show_value=False)
    return value


def _example(question: dict[str, Any], fallback: str) -> str:
    default = question.get("default")
    return fallback if default is None or "{{" in str(default) else str(default)


def _refuse(key: str, value: str, accepted: str, example: str | None, *, show_value: bool = True) -> AnswerRefused:
    got = f", got {value!r}" if show_value else ""  # repr: a line break must not break the one-line message
    fix = f"pass e.g. --data {key}={example}" if example is not None else f"pass another value with --data {key}=..."
    return AnswerRefused(key, value, f"{key} takes {accepted}{got}", fix)
