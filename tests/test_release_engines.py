"""The generated packages' in-engine tests inside the CPU engine of every other engine-tested vLLM release.

The suite's own release runs each package's whole CI, `pytest --slow` included, from a fresh clone
(test_generated_packages.py). Each other engine-tested release (tests/release_engines.py: `.venv-VERSION`,
created by scripts/test.sh) runs a representative set per seam, to keep the suite's time bounded: the tests
of the default tier marked `engine`, which start the release's engine with the plugin in it (`pytest -m engine`
in the package, no `--slow`). The kernel and unit tests left out run on the same torch and Triton in both
environments and do not depend on which vLLM is installed.

Skipped, with the reason, only when the release's environment could not be created.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests import release_engines
from vllm_scaffold import vllm_facts
from vllm_scaffold.catalog import templated_keys
from vllm_scaffold.generate.scaffold import render_example

# What each release runs: the in-engine tests of the default tier, quiet, with the reasons for skips.
REPRESENTATIVE = ["-m", "engine", "-q", "-rs", "-p", "no:cacheprovider"]


def release_env(version: str, cache: Path) -> dict[str, str]:
    """The environment of a pytest run in `.venv-VERSION`: its bin/ first, nothing of this environment."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(
        PATH=os.pathsep.join([str(release_engines.python(version).parent), env.get("PATH", "")]),
        VIRTUAL_ENV=str(release_engines.environment(version)),
        VLLMSCAFFOLD_CACHE=str(cache),
    )
    return env


@pytest.mark.engine
@pytest.mark.parametrize("version", release_engines.other_releases())
@pytest.mark.parametrize("key", templated_keys())
def test_in_engine_tests_pass_on_release(key: str, version: str, tmp_path: Path) -> None:
    reason = release_engines.missing_reason(version)
    if reason:
        pytest.skip(reason)
    package = render_example(key, tmp_path / key)
    cache = Path(os.environ.get("VLLMSCAFFOLD_CACHE", str(tmp_path / "cache")))
    completed = subprocess.run(
        [str(release_engines.python(version)), "-m", "pytest", *REPRESENTATIVE],
        cwd=package,
        env=release_env(version, cache),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    summary = completed.stdout.strip().splitlines()[-1:]
    print(f"{key} on vLLM {version}: {summary}")
    assert completed.returncode == 0, f"{key} on vLLM {version}:\n{completed.stdout[-12000:]}"
    # The engine ran: nothing was skipped for want of vLLM in that environment.
    assert "could not import 'vllm'" not in completed.stdout, completed.stdout[-4000:]
    assert " passed" in summary[0], summary


def test_the_suite_runs_the_newest_engine_tested_release() -> None:
    """scripts/test.sh's `.venv` holds the newest engine-tested release, which runs every test of every package
    (test_generated_packages.py); only the older ones run the representative set above."""
    assert release_engines.suite_release() == vllm_facts.ENGINE_TESTED[-1]
