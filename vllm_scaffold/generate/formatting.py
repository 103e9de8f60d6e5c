"""Formatting rendered Python with ruff, so a generated package passes its own `ruff check` and `ruff format --check`.

How a rendered line is laid out depends on the names and answers a user gives: a 35-character package name turns
a one-line import into a wrapped one, a long class name pushes a call past the line length. Templates are written
for reading, and every rendered Python file goes through ruff's import sorter and formatter before anything is
written, with the configuration of the project it lands in: the generated `[tool.ruff]` table for `new`, the
project's own ruff configuration for `add` (ruff's defaults where it has none). What the formatter cannot move
(comments, docstrings, string literals) the templates keep short enough for the longest name `names` accepts.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.generate.wrapping import wrap_prose
from vllm_scaffold.project.ruff_settings import RuffSettings, ruff_settings

# What `ruff format` formats: Python modules, and the Python code blocks of Markdown pages.
FORMATTED_SUFFIXES = (".py", ".md")


def ruff_config(settings: RuffSettings, package: str) -> list[str]:
    """The `--config` arguments that make ruff format like a project of `settings`, whose import package is
    `package`.

    The files are formatted in scratch space before the modules they import exist in the project, so ruff cannot
    find `package` on the project's `src` paths: it is named first-party explicitly, next to the project's own list.
    """
    override = f"lint.isort.known-first-party = {[*settings.known_first_party, package]!r}"
    return [
        *(["--config", str(settings.config_file)] if settings.config_file else ["--isolated"]),
        "--config",
        override,
    ]


def format_sources(
    files: Mapping[str, str], root: Path, package: str, unwritten_config: Mapping[str, str] | None = None
) -> dict[str, str]:
    """`files` (relative path -> text) formatted as the project at `root` says.

    Python modules get their imports sorted and are formatted; Markdown files get their Python code blocks
    formatted (what `ruff format` does with them). Other files come back unchanged. `unwritten_config` holds
    the project's ruff configuration files (name -> text) when the project is not written yet (`new`): the
    files are then formatted in scratch space laid out as the project, next to that configuration.
    """
    files = {relpath: text for relpath, text in files.items() if relpath.endswith(FORMATTED_SUFFIXES)}
    if not files:
        return {}
    with tempfile.TemporaryDirectory(prefix="vllm-scaffold-format-") as scratch:
        paths = {relpath: Path(scratch) / relpath for relpath in files}
        for relpath, path in paths.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(files[relpath], encoding="utf-8")
        if unwritten_config:
            for name, text in unwritten_config.items():
                (Path(scratch) / name).write_text(text, encoding="utf-8")
            root = Path(scratch)
        python = {relpath: path for relpath, path in paths.items() if relpath.endswith(".py")}
        settings = ruff_settings(root)
        config = ruff_config(settings, package)
        if python:  # never without paths: ruff would then fix the project itself
            _ruff("check", "--fix-only", "--select", "I", *config, *map(str, python.values()), root=root)
        _ruff("format", *config, *map(str, paths.values()), root=root)
        width = settings.line_length
        wrapped = []
        for path in python.values():
            text = path.read_text(encoding="utf-8")
            if (refilled := wrap_prose(text, width)) != text:
                path.write_text(refilled, encoding="utf-8")
                wrapped.append(path)
        if wrapped:  # a comment moved above its code line can let the formatter join that line again
            _ruff("format", *config, *map(str, wrapped), root=root)
        return {relpath: path.read_text(encoding="utf-8") for relpath, path in paths.items()}


def _ruff(*args: str, root: Path) -> None:
    """Runs ruff from the project root, so paths in its configuration resolve as they will in the project."""
    from ruff import find_ruff_bin

    done = subprocess.run([find_ruff_bin(), *args, "--no-cache", "--quiet"], cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        problem = " ".join((done.stderr or done.stdout).split()) or f"exit code {done.returncode}"
        raise ScaffoldError(
            f"ruff could not format the rendered files ({problem})", "check the project's ruff configuration"
        )
