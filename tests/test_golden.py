"""Every template, rendered fresh with default answers, equals its golden copy in generated_examples/."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from scripts.examples import EXAMPLES_DIR
from tests.helpers import snapshot
from vllm_scaffold.catalog import templated_keys
from vllm_scaffold.generate.harness_wheel import WHEELS_DIR
from vllm_scaffold.generate.harness_wheel import wheel_path as harness_wheel_path
from vllm_scaffold.generate.scaffold import render_example

REGENERATE = "python scripts/examples.py {key}"


@pytest.mark.parametrize("key", templated_keys())
def test_golden_copy_is_up_to_date(key: str, tmp_path: Path) -> None:
    golden = EXAMPLES_DIR / key
    assert golden.is_dir(), f"generated_examples/{key} is missing: run `{REGENERATE.format(key=key)}`"
    rendered = snapshot(render_example(key, tmp_path / key))
    # The harness wheel `new` builds is no render (tests/test_first_hour.py installs it).
    fresh = {path: content for path, content in rendered.items() if not path.startswith(f"{WHEELS_DIR}/")}
    assert set(rendered) - set(fresh) == {harness_wheel_path()}
    stored = snapshot(golden)
    assert sorted(fresh) == sorted(stored), f"file lists differ: run `{REGENERATE.format(key=key)}`"
    for relpath, content in fresh.items():
        if content != stored[relpath]:
            diff = "\n".join(
                difflib.unified_diff(
                    stored[relpath].decode().splitlines(), content.decode().splitlines(), "golden", "fresh", lineterm=""
                )
            )
            pytest.fail(f"{key}/{relpath} differs from its golden copy; run `{REGENERATE.format(key=key)}`\n{diff}")
