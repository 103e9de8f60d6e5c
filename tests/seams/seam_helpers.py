"""Helpers for the per-seam tests: make a host package, check a refused answer, run a package's tests."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.helpers import run_cli, run_pytest, snapshot


def general_plugin_host(tmp_path: Path) -> Path:
    """A package made by `new general-plugin host`, to `add` components into."""
    assert run_cli("new", "general-plugin", "host", "--defaults", "--dest", "host", cwd=tmp_path).exit_code == 0
    return tmp_path / "host"


def add_into(host: Path, seam: str, name: str, *answers: str) -> None:
    """`add SEAM NAME --data ANSWER...` into the host, which must succeed."""
    done = run_cli("add", seam, name, *(arg for answer in answers for arg in ("--data", answer)), cwd=host)
    assert done.exit_code == 0, done.output


def entry_points(host: Path, group: str) -> dict[str, str]:
    """The host's entry points in `group`, by name."""
    return tomllib.loads((host / "pyproject.toml").read_text())["project"]["entry-points"][group]


def added(host: Path, seam: str) -> list[dict]:
    """The host's manifest components after adding one of `seam`: the host's general plugin, then it."""
    manifest = tomllib.loads((host / "pyproject.toml").read_text())["tool"]["vllm-scaffold"]["components"]
    assert [c["seam"] for c in manifest] == ["general-plugin", seam]
    return manifest


def assert_registered(host: Path, target: str) -> None:
    """The host's general plugin runs its own registration and then `target`."""
    plugin = (host / "src/host/vllm_plugin.py").read_text()
    assert '"host.hooks.registration:register"' in plugin and f'"{target}"' in plugin


def assert_refused(host: Path, args: list[str], message: str) -> None:
    """`add ARGS` exits 2 with a one-line message containing `message` and leaves `host` as it was."""
    before = snapshot(host)
    done = run_cli("add", *args, cwd=host)
    assert done.exit_code == 2
    text = (done.stderr + done.stdout).strip()
    assert message in text and len(text.splitlines()) == 1, text
    assert snapshot(host) == before


def assert_lint_clean(package: Path, *paths: str) -> None:
    """`ruff check PATHS` with the package's own configuration."""
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", *paths], cwd=package, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def run_package_tests(package: Path, cache: Path, *pytest_args: str) -> None:
    """`python -m pytest -x PYTEST_ARGS` in `package` (the default tier, as its author would run it).

    Fails with the output tail. The slow tier of every seam runs with the golden packages' own suites.
    """
    env = {**os.environ, "VLLMSCAFFOLD_CACHE": os.environ.get("VLLMSCAFFOLD_CACHE", str(cache))}
    env.pop("PYTHONPATH", None)
    completed = run_pytest(package, "-x", *pytest_args, env=env)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-12000:]
    assert " passed" in output.strip().splitlines()[-1]
