"""Every seam's bad answers, in one table: `add` refuses each in one line naming the problem and the fix,
exits 2, and leaves the host package as it was."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from seam_helpers import assert_refused, general_plugin_host

# seam, component name, --data answer, what the one-line refusal says (refused_answers.toml)
REFUSED = [
    (seam, table["name"], answer, message)
    for seam, table in tomllib.loads((Path(__file__).parent / "refused_answers.toml").read_text()).items()
    for answer, message in table["refused"]
]


@pytest.fixture(scope="module")
def refusing_host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One host for the whole table: every case checks that the host is left exactly as it was."""
    return general_plugin_host(tmp_path_factory.mktemp("refusing"))


@pytest.mark.parametrize(("seam", "name", "answer", "message"), REFUSED, ids=[f"{r[0]}:{r[2]}" for r in REFUSED])
def test_a_bad_answer_is_refused_in_one_line_and_nothing_is_written(
    refusing_host: Path, seam: str, name: str, answer: str, message: str
) -> None:
    assert_refused(refusing_host, [seam, name, "--data", answer], message)
