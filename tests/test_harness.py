"""The pytest plugin's own behaviour, run in a scratch pytest session: the `slow` tier and its option, the
vLLM cache directory it gives each release."""

from __future__ import annotations

import pytest

from vllm_scaffold_testing import engine

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


SHOW_CACHE_ROOT = """
import os

def test_show():
    print("VLLM_CACHE_ROOT=" + os.environ["VLLM_CACHE_ROOT"])
"""


@pytest.mark.parametrize(
    ("inherited", "expected"),
    [
        (None, "{release}"),  # unset: this release's own directory
        ("{cache}/vllm/release-0.0.1", "{release}"),  # another release's test run set it: replaced
        ("{custom}", "{custom}"),  # the user's own choice stays
    ],
)
def test_each_vllm_release_gets_its_own_cache_root(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, inherited: str | None, expected: str
) -> None:
    """vLLM's model-info cache keeps one file per model class whatever the release, so runs of two releases on
    one machine would invalidate each other's and pay a fresh vLLM import at every engine start."""
    cache = pytester.path / "xdg"
    values = {"cache": str(cache), "custom": str(pytester.path / "mine"), "release": ""}
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    release = engine.release_cache_root()
    assert release is not None and release.startswith(f"{cache}/vllm/release-")
    values["release"] = release
    if inherited is None:
        monkeypatch.delenv("VLLM_CACHE_ROOT", raising=False)
    else:
        monkeypatch.setenv("VLLM_CACHE_ROOT", inherited.format(**values))
    pytester.makepyfile(test_show=SHOW_CACHE_ROOT)
    result = pytester.runpytest_subprocess("-q", "-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert f"VLLM_CACHE_ROOT={expected.format(**values)}" in result.stdout.str()


def test_forced_tokens_masks_all_but_the_next_forced_id_of_its_requests() -> None:
    """The logits processor the parser seams' server tests force replies with, on a batch of two requests (one
    forced, one not), step by step: the forced row keeps one finite logit, then is left alone once spent."""
    pytest.importorskip("vllm")
    import torch
    from vllm.sampling_params import SamplingParams
    from vllm.v1.sample.logits_processor import BatchUpdate

    from vllm_scaffold_testing.forced import FORCED_PARAM, ForcedTokens

    processor = ForcedTokens(None, torch.device("cpu"), False)  # type: ignore[arg-type]
    forced_output: list[int] = []
    added = [
        (0, SamplingParams(extra_args={FORCED_PARAM: [3, 1]}), [5], forced_output),
        (1, SamplingParams(), [5], []),
    ]
    processor.update_state(BatchUpdate(batch_size=2, removed=[], added=added, moved=[]))
    for step, expected in enumerate([3, 1]):
        logits = processor.apply(torch.zeros(2, 6))
        assert torch.isfinite(logits[0]).nonzero().flatten().tolist() == [expected], step
        assert torch.isfinite(logits[1]).all()  # the request without forced ids is untouched
        forced_output.append(expected)  # what the engine appends after sampling
    assert torch.isfinite(processor.apply(torch.zeros(2, 6))).all()  # spent: the reply goes on unforced
    with pytest.raises(ValueError, match=FORCED_PARAM):
        ForcedTokens.validate_params(SamplingParams(extra_args={FORCED_PARAM: "3"}))
