"""The pytest plugin's own behaviour, run in a scratch pytest session: the `slow` tier and its option."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

TESTS = """
import pytest

def test_quick():
    pass

@pytest.mark.slow
def test_with_a_server():
    pass
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_tiers=TESTS)
    return pytester


def test_slow_tests_are_deselected_by_default(suite: pytest.Pytester) -> None:
    result = suite.runpytest("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, deselected=1)


def test_slow_option_runs_them_too(suite: pytest.Pytester) -> None:
    result = suite.runpytest("-q", "-p", "no:cacheprovider", "--slow")
    result.assert_outcomes(passed=2)


def test_a_marker_expression_naming_slow_selects_by_it(suite: pytest.Pytester) -> None:
    suite.runpytest("-q", "-p", "no:cacheprovider", "-m", "slow").assert_outcomes(passed=1, deselected=1)
    suite.runpytest("-q", "-p", "no:cacheprovider", "-m", "not slow").assert_outcomes(passed=1, deselected=1)


def test_the_marker_and_option_are_documented(suite: pytest.Pytester) -> None:
    assert "--slow" in suite.runpytest("--help").stdout.str()
    assert any(line.startswith("@pytest.mark.slow:") for line in suite.runpytest("--markers").outlines)
