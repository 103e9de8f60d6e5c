"""The wheel of the test harness (`vllm-scaffold-testing`) that `new` puts in a package's `wheels/` folder.

A generated package's `test` extra requires the harness, which is not on PyPI yet: with its wheel in
`wheels/`, `pip install -e '.[test]' --find-links wheels` installs it on any machine, and the package's CI
does the same from a clone. Once the harness is published, plain `pip install -e '.[test]'` finds it there.

The wheel is built from the harness's sources, which the tool's wheel carries (`vllm_scaffold/harness/`; a
source checkout has them at `harness/`), with hatchling, the harness's own build backend and one of its
dependencies, so it is installed wherever the tool is. Hatchling builds reproducibly: the same sources give
the same bytes, so regenerating a package does not change a committed wheel. About 45 kB: the harness is
pure Python, and nothing of the generator is in it.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from pathlib import Path

from vllm_scaffold.atomic import write_atomically
from vllm_scaffold.errors import ScaffoldError

WHEELS_DIR = "wheels"


def harness_source() -> Path:
    """The harness's project folder: inside the installed wheel, or at the top of a source checkout."""
    package = Path(__file__).resolve().parent.parent  # vllm_scaffold/
    for candidate in (package / "harness", package.parent / "harness"):
        if (candidate / "pyproject.toml").is_file():
            return candidate
    raise ScaffoldError("the test harness's sources are missing from this installation", "reinstall vllm-scaffold")


@functools.cache
def _built() -> tuple[str, bytes]:
    """The harness wheel's file name and bytes, built once per process."""
    from hatchling.builders.wheel import WheelBuilder

    with tempfile.TemporaryDirectory(prefix="vllm-scaffold-harness-") as scratch:
        # A copy, so the build writes nothing next to the installed sources.
        source = shutil.copytree(harness_source(), Path(scratch) / "harness")
        (wheel,) = WheelBuilder(root=str(source)).build(directory=str(Path(scratch) / "dist"), versions=["standard"])
        return Path(wheel).name, Path(wheel).read_bytes()


def wheel() -> tuple[str, bytes]:
    """The harness wheel: its file name (`vllm_scaffold_testing-VERSION-py3-none-any.whl`) and its bytes."""
    return _built()


def wheel_path() -> str:
    """Where `new` writes the harness wheel in a package: `wheels/vllm_scaffold_testing-...whl`."""
    return f"{WHEELS_DIR}/{_built()[0]}"


def write_into(folder: Path) -> Path:
    """Writes the harness wheel into `folder` (created when missing); returns its path."""
    name, content = _built()
    write_atomically(folder / name, content)
    return folder / name
