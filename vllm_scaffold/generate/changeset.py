"""A set of file creations and edits that is checked as a whole, then shown (dry run) or applied.

Nothing touches the destination until every file has been rendered and checked: Python files must
compile and TOML files must parse, and created Python (and the Python in created Markdown) is formatted
with the project's ruff configuration. Edited files are replaced with `os.replace`, so a reader never sees
a half-written `pyproject.toml`.
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from vllm_scaffold.atomic import write_atomically
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.generate.formatting import format_sources
from vllm_scaffold.project.ruff_settings import RUFF_CONFIG_FILES


@dataclass
class Changeset:
    root: Path
    package: str  # the project's import package, first-party when imports are sorted
    created: dict[str, str] = field(default_factory=dict)  # relative posix path -> content
    edited: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (before, after)
    keys: list[str] = field(default_factory=list)  # human-readable TOML keys that change
    notes: list[str] = field(default_factory=list)  # what the user should know or do about the change

    def create(self, relpath: str, content: str) -> None:
        if relpath in self.created or (self.root / relpath).exists():
            raise ScaffoldError(f"{relpath} already exists in {self.root}", "choose another NAME")
        self.created[relpath] = content

    def edit(self, relpath: str, after: str) -> None:
        if relpath in self.created:
            self.created[relpath] = after
            return
        before = self.edited[relpath][0] if relpath in self.edited else (self.root / relpath).read_text("utf-8")
        self.edited[relpath] = (before, after)

    def current(self, relpath: str) -> str:
        if relpath in self.created:
            return self.created[relpath]
        if relpath in self.edited:
            return self.edited[relpath][1]
        return (self.root / relpath).read_text("utf-8")

    def check(self) -> None:
        """Every Python file compiles and every TOML file parses, or a ScaffoldError names the first that fails.

        Then the created Python and Markdown files are formatted as the project's ruff configuration says.
        """
        contents = {**self.created, **{path: after for path, (_, after) in self.edited.items()}}
        for relpath, content in contents.items():
            try:
                if relpath.endswith(".py"):
                    compile(content, relpath, "exec")
                elif relpath.endswith(".toml"):
                    tomllib.loads(content)
            except (SyntaxError, tomllib.TOMLDecodeError) as error:
                raise ScaffoldError(
                    f"the rendered {relpath} is invalid ({error})", "report this template bug; nothing was written"
                ) from None
        unwritten_config = {name: self.created[name] for name in RUFF_CONFIG_FILES if name in self.created}
        self.created.update(format_sources(self.created, self.root, self.package, unwritten_config))

    def describe(self, prefix: str = "") -> list[str]:
        """One line per created file and TOML key, then a unified diff per edited file; `prefix` before paths."""
        lines = [f"create {prefix}{path}" for path in sorted(self.created)]
        lines += [f"edit   {prefix}{path}" for path in sorted(self.edited)]
        lines += [f"key    {key}" for key in self.keys]
        lines += [f"note   {note}" for note in self.notes]
        for path, (before, after) in sorted(self.edited.items()):
            lines += difflib.unified_diff(
                before.splitlines(), after.splitlines(), f"a/{prefix}{path}", f"b/{prefix}{path}", lineterm=""
            )
        return lines

    def apply(self) -> None:
        """Write new files, then replace edited ones atomically."""
        self.check()
        for relpath, content in self.created.items():
            write_atomically(self.root / relpath, content)
        for relpath, (_, after) in self.edited.items():
            write_atomically(self.root / relpath, after)
