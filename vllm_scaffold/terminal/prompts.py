"""Questions on a terminal: word-wrapped to its width, a refused answer explained and the question asked again.

Nothing here runs without a terminal on both stdin and stdout; the commands then take what the command line
gives and report what is missing. Ctrl-C or Ctrl-D at a question ends the command with `Interrupted` before
anything is written.
"""

from __future__ import annotations

import re
import shutil
import sys
import textwrap
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import questionary

from vllm_scaffold.errors import Interrupted, ScaffoldError

REFUSED = "fg:ansired bold"
HEADING = "bold underline"


def wrap(text: str, *, first: str = "", rest: str = "  ") -> str:
    """`text` word-wrapped to the terminal's width, its first line opening with `first`, the others with `rest`."""
    width = max(shutil.get_terminal_size((80, 24)).columns - 1, 20)
    return textwrap.fill(
        " ".join(text.split()), width=width, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False
    )


def say(text: str, *, first: str = "", rest: str = "  ", style: str = "") -> None:
    questionary.print(wrap(text, first=first, rest=rest), style=style or None)


def refuse(reason: str) -> None:
    say(reason, first="  x ", rest="    ", style=REFUSED)


@contextmanager
def asking() -> Iterator[None]:
    """Turns Ctrl-C and Ctrl-D at a question into `Interrupted`."""
    try:
        yield
    except (KeyboardInterrupt, EOFError):
        raise Interrupted() from None


def ask_text(message: str, check: Callable[[str], object]) -> str:
    """Asks until `check` accepts the answer; each ScaffoldError it raises is shown, then the question again,
    holding the name its fix suggests (or, without one, the refused answer) for the user to accept or edit."""
    default = ""
    while True:
        with asking():
            answer = questionary.text(message, default=default).unsafe_ask().strip()
        try:
            check(answer)
        except ScaffoldError as refusal:
            refuse(str(refusal))
            default = refusal.suggestion or answer
            continue
        return answer


def choose(message: str, choices: list[tuple[str, str]]) -> str:
    """One of `choices` (value, title), picked with the arrow keys."""
    with asking():
        return questionary.select(
            message, choices=[questionary.Choice(title, value) for value, title in choices]
        ).unsafe_ask()


@contextmanager
def copier_questions(heading: str, template: str) -> Iterator[None]:
    """While copier asks a template's questions, asks them the way the rest of the tool does.

    Copier hands each question to `questionary.unsafe_prompt` as a questionary structure; questionary shows a
    help text longer than one line cut at the terminal's edge and a refusal in a one-line toolbar. In its
    place the help and every refusal are printed word-wrapped, and questionary asks only for the value.
    `heading` is printed before the first question the template really asks. Each typed answer is checked
    against its question in `template` by the checker `--data` answers go through (vllm_scaffold.generate.answers), so
    both paths refuse a value with the same words, then by the template's own validator.
    """
    from vllm_scaffold.generate.templates import questions

    asked = questions(template)
    import copier

    module = sys.modules[copier.run_copy.__module__]
    if not hasattr(module, "unsafe_prompt"):  # a copier that asks differently: let it ask its own way
        yield
        return
    pending = [heading]

    def ask(questions: list[Mapping[str, Any]], answers: Mapping[str, Any] | None = None, **_: Any) -> dict:
        (question,) = questions
        answers = dict(answers or {})  # copier passes the question's default here
        when = question.get("when")
        if when is not None and not when(answers):
            return answers
        if pending:
            say(pending.pop(), style=HEADING)
        answers[question["name"]] = _ask_copier_question(question, asked.get(question["name"], {}))
        return answers

    original = module.unsafe_prompt
    module.unsafe_prompt = ask
    try:
        yield
    finally:
        module.unsafe_prompt = original


def _ask_copier_question(question: Mapping[str, Any], declared: dict[str, Any]) -> Any:
    name = question["name"]
    # copier's message is the help followed by a line break, or `name (type)` when the question has no help
    help_text = " ".join(str(question.get("message", "")).split())
    if help_text and not re.fullmatch(rf"{re.escape(name)}( \(\w+\))?", help_text):
        say(help_text, first="? ")
    spec = {key: value for key, value in question.items() if key not in {"when", "validate", "filter", "message"}}
    spec.update(message=f"{name}:", qmark=" ")
    validate = question.get("validate")
    while True:
        try:
            raw = questionary.unsafe_prompt([spec])[name]
        except EOFError:
            raise KeyboardInterrupt from None  # copier reports an interrupted question, not a missing terminal
        verdict = _checked(name, raw, declared)
        if verdict is True:
            verdict = validate(raw) if validate else True
        if verdict is True:
            break
        refuse(re.sub(r"^Validation error for question '[^']*': ", "", str(verdict)))
        if spec.get("type") in {"input", "path"}:
            spec["default"] = raw
    cast = question.get("filter")
    return cast(raw) if cast else raw


def _checked(name: str, raw: Any, declared: dict[str, Any]) -> str | bool:
    """True when the answer checker accepts typed text `raw` for question `name`, else its reason."""
    from vllm_scaffold.generate.answers import AnswerRefused, check_answer

    if not isinstance(raw, str) or declared.get("choices"):  # a yes/no or a pick from the offered choices
        return True
    try:
        check_answer(name, raw, declared)
    except AnswerRefused as refusal:
        return refusal.reason
    return True
