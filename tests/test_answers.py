"""Answers given with --data are read as their question's type says: the usual bool spellings, numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run_cli
from vllm_scaffold.generate.answers import FALSE, TRUE, check_answers


@pytest.mark.parametrize("spelling", [*TRUE, *(s.upper() for s in TRUE), "Yes", " on "])
def test_true_spellings(spelling: str) -> None:
    assert check_answers("attention-backend", {"sliding_window": spelling}) == {"sliding_window": "true"}


@pytest.mark.parametrize("spelling", [*FALSE, *(s.upper() for s in FALSE), "No", "Off"])
def test_false_spellings(spelling: str) -> None:
    assert check_answers("attention-backend", {"sliding_window": spelling}) == {"sliding_window": "false"}


def test_numbers_are_normalised() -> None:
    assert check_answers("io-processor", {"max_texts": " 032 "}) == {"max_texts": "32"}
    assert check_answers("scheduler", {"max_wait_s": "2.5"}) == {"max_wait_s": "2.5"}


def test_a_false_spelling_reaches_the_rendered_package(tmp_path: Path) -> None:
    dest = tmp_path / "attn"
    args = ["new", "attention-backend", "attn", "--dest", str(dest), "--defaults", "--data", "sliding_window=OFF"]
    result = run_cli(*args)
    assert result.exit_code == 0, result.output
    answers = (dest / ".vllm-scaffold" / "attention-backend-attn.yml").read_text()
    assert "sliding_window: false" in answers
