"""A new user's first hour, rehearsed in fresh virtual environments: the top README's set-up command, then
the commands `new` prints and the generated package's README gives, each run as written.

The venvs are the ones tests/fresh_clone.py makes (this environment's vLLM seen, the tool and the harness
hidden, pip without an index and without build isolation), so the tool can only come from the checkout the
README installs, and the package's harness only from the wheel `new` put in its `wheels/`. The package's
in-engine tests are left to the fresh-clone test, which runs every seam's whole CI; here its unit tests show
that the harness installed from `wheels/` is the one pytest loads.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests import fresh_clone
from vllm_scaffold.generate.scaffold import render_example

SETUP_SECTION = "## Set-up on a fresh machine"


def bash_blocks(markdown: str, section: str) -> list[str]:
    """The commands of every ```bash block in `section` (a `## ` heading) of `markdown`, comments dropped."""
    body = markdown.split(f"\n{section}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", body, flags=re.DOTALL)
    return [
        command
        for block in blocks
        for line in block.splitlines()
        if (command := re.sub(r"\s+#\s.*$", "", line).strip()) and not command.startswith("#")
    ]


def run(command: str, cwd: Path, env: dict[str, str]) -> str:
    completed = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", command],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, f"{command!r} in {cwd} failed:\n{completed.stdout[-8000:]}"
    return completed.stdout


def checkout_copy(dest: Path) -> Path:
    """This checkout's files as a clone would have them (tracked, and new files git does not ignore)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=fresh_clone.REPOSITORY,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for relpath in filter(None, listed.split("\0")):
        source = fresh_clone.REPOSITORY / relpath
        if source.is_file():
            (dest / relpath).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / relpath)
    return dest


@pytest.fixture(scope="module")
def engine_view(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fresh_clone.engine_view(tmp_path_factory.mktemp("engine") / "site-packages")


@pytest.mark.engine
def test_the_readme_and_the_printed_commands_work_in_fresh_venvs(tmp_path: Path, engine_view: Path) -> None:
    cache = Path(os.environ.get("VLLMSCAFFOLD_CACHE", str(tmp_path / "cache")))
    # The tool's README, in a checkout: install the tool and the harness, generate a plugin.
    checkout = checkout_copy(tmp_path / "work" / "vllm-scaffold")
    tool_venv = fresh_clone.runner_venv(tmp_path / "tool-venv", engine_view)
    setup = bash_blocks((checkout / "README.md").read_text(encoding="utf-8"), SETUP_SECTION)[0]
    output = run(setup, checkout, fresh_clone.runner_env(tool_venv, cache))
    printed = fresh_clone.next_line(output)
    assert printed.directory == tmp_path / "work" / "my_plugin", "the package belongs next to the checkout"
    assert not (checkout / "my_plugin").exists()
    package = printed.directory
    harness = f"vllm_scaffold_testing-{importlib.metadata.version('vllm-scaffold-testing')}-py3-none-any.whl"
    assert [wheel.name for wheel in (package / "wheels").iterdir()] == [harness]

    # The package, in a venv of its own that has never seen the tool or the harness: the printed install, then
    # the README's Tests commands in order.
    venv = fresh_clone.runner_venv(tmp_path / "package-venv", engine_view)
    env = fresh_clone.runner_env(venv, cache)
    run(printed.install, package, env)
    test_extra = tomllib.loads((package / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert any(req.startswith("ruff") for req in test_extra["optional-dependencies"]["test"])  # for the lint
    commands = bash_blocks((package / "README.md").read_text(encoding="utf-8"), "## Tests")
    assert commands[0] == printed.install, commands
    assert commands[1] == "ruff check . && ruff format --check .", commands
    assert [command.split()[0] for command in commands[2:]] == [printed.test] * 2, commands
    for command in commands[:2]:
        run(command, package, env)
    tests = run(f"{printed.test} -m 'not engine' -p no:cacheprovider", package, env)
    assert re.search(r"\d+ passed", tests) and "failed" not in tests, tests[-4000:]
    probe = "import vllm_scaffold_testing as h, pytest, ruff; print(h.__file__)"
    (harness_file,) = run(f"python -c '{probe}'", package, env).split()
    assert Path(harness_file).is_relative_to(venv), harness_file  # from wheels/, not this environment


def test_without_the_tools_wheel_ci_skips_doctor_with_a_warning(tmp_path: Path, engine_view: Path) -> None:
    """Before vllm-scaffold is on PyPI, a package that commits only the harness wheel still gets a passing CI:
    the install step for doctor warns, and the doctor steps do nothing."""
    package = render_example("general-plugin", tmp_path / "my_plugin")
    steps = fresh_clone.workflow_steps(package)
    venv = fresh_clone.runner_venv(tmp_path / "venv", engine_view)
    env = fresh_clone.runner_env(venv, Path(os.environ.get("VLLMSCAFFOLD_CACHE", str(tmp_path / "cache"))))
    install = next(step["run"] for step in steps if step["name"].startswith("Install vllm-scaffold"))
    assert "::warning title=doctor skipped::" in run(install, package, env)
    doctors = [step["run"] for step in steps if step["name"].startswith("Doctor")]
    assert doctors and all(run(command, package, env) == "" for command in doctors)
