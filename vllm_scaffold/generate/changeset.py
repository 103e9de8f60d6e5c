"""A set of file creations, edits and removals that is checked as a whole, then shown (dry run) or applied.

The one plan type of `new`, `add`, `update` and `migrate`: each records what it would change here, and the
dry run's diff, the check and the writes all come from it. Nothing touches the destination until every file
has been rendered and checked: Python files must compile and TOML files must parse, and created Python (and
the Python in created Markdown) is formatted with the project's ruff configuration, once: a checked file is
not checked again unless it changes. Content planned as already checked (a copy of checked files, `update`'s
merge of your edits, `migrate`'s rewrite of your code) is written as it is. Edited files are replaced with
`os.replace`, so a reader never sees a half-written `pyproject.toml`.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from vllm_scaffold.atomic import write_atomically
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.generate.formatting import format_sources
from vllm_scaffold.project.ruff_settings import RUFF_CONFIG_FILES

# What a file holds: text, or the bytes of a binary file (the harness wheel).
Content = str | bytes


def unified_diff(relpath: str, before: Content, after: Content, prefix: str = "") -> list[str]:
    """The unified diff of one file from `before` to `after` ("" for a side that does not exist), as lines."""
    path = f"{prefix}{relpath}"
    if isinstance(before, bytes) or isinstance(after, bytes):
        return [] if before == after else [f"Binary files a/{path} and b/{path} differ"]
    return list(difflib.unified_diff(before.splitlines(), after.splitlines(), f"a/{path}", f"b/{path}", lineterm=""))


@dataclass
class Changeset:
    root: Path
    package: str  # the project's import package, first-party when imports are sorted
    created: dict[str, Content] = field(default_factory=dict)  # relative posix path -> content
    edited: dict[str, tuple[Content, Content]] = field(default_factory=dict)  # path -> (before, after)
    removed: dict[str, Content] = field(default_factory=dict)  # path -> its content before
    keys: list[str] = field(default_factory=list)  # human-readable TOML keys that change
    notes: list[str] = field(default_factory=list)  # what the user should know or do about the change
    # path -> the content check() last passed (or that was planned as already checked): not checked again
    checked: dict[str, Content] = field(default_factory=dict, repr=False)

    def create(self, relpath: str, content: Content, *, checked: bool = False) -> None:
        if relpath in self.created or (self.root / relpath).exists():
            raise ScaffoldError(f"{relpath} already exists in {self.root}", "choose another NAME")
        self.created[relpath] = content
        self._mark(relpath, content, checked)

    def edit(self, relpath: str, after: Content, *, checked: bool = False) -> None:
        if relpath in self.created:
            self.created[relpath] = after
        else:
            before = self.edited[relpath][0] if relpath in self.edited else self._read(relpath)
            self.edited[relpath] = (before, after)
        self._mark(relpath, after, checked)

    def write(self, relpath: str, content: Content, *, checked: bool = False) -> None:
        """Creates `relpath`, or replaces it when the project has it."""
        if relpath in self.created or relpath in self.edited or (self.root / relpath).is_file():
            self.edit(relpath, content, checked=checked)
        else:
            self.create(relpath, content, checked=checked)

    def remove(self, relpath: str) -> None:
        """Deletes `relpath` from the project; the folders it leaves empty go with it."""
        self.removed[relpath] = self._read(relpath)

    def current(self, relpath: str) -> str:
        """The text `relpath` holds once the changeset is applied."""
        content = self._planned(relpath)
        assert isinstance(content, str), f"{relpath} is a binary file"
        return content

    def planned(self, relpath: str) -> Content | None:
        """What the changeset writes to `relpath`, None when it does not write it."""
        if relpath in self.created:
            return self.created[relpath]
        if relpath in self.edited:
            return self.edited[relpath][1]
        return None

    def _planned(self, relpath: str) -> Content:
        content = self.planned(relpath)
        return self._read(relpath) if content is None else content

    def _read(self, relpath: str) -> Content:
        data = (self.root / relpath).read_bytes()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return data

    def _mark(self, relpath: str, content: Content, checked: bool) -> None:
        if checked:
            self.checked[relpath] = content
        else:
            self.checked.pop(relpath, None)

    def check(self) -> None:
        """Every Python file compiles and every TOML file parses, or a ScaffoldError names the first that fails.

        Then the created Python and Markdown files are formatted as the project's ruff configuration says.
        Files check() passed before, unchanged since, are not read again.
        """
        contents = {**self.created, **{path: after for path, (_, after) in self.edited.items()}}
        unchecked = {path: text for path, text in contents.items() if self.checked.get(path) != text}
        for relpath, content in unchecked.items():
            if isinstance(content, bytes):
                continue
            try:
                if relpath.endswith(".py"):
                    compile(content, relpath, "exec")
                elif relpath.endswith(".toml"):
                    tomllib.loads(content)
            except (SyntaxError, tomllib.TOMLDecodeError) as error:
                raise ScaffoldError(
                    f"the rendered {relpath} is invalid ({error})", "report this template bug; nothing was written"
                ) from None
        fresh: dict[str, str] = {
            path: text for path, text in unchecked.items() if path in self.created and isinstance(text, str)
        }
        unwritten_config = {name: text for name in RUFF_CONFIG_FILES if isinstance(text := self.created.get(name), str)}
        self.created.update(format_sources(fresh, self.root, self.package, unwritten_config))
        for path in unchecked:
            self.checked[path] = self._planned(path)

    def diff(self, paths: Iterable[str] | None = None, prefix: str = "") -> list[str]:
        """The unified diff of each planned file in `paths` (default: the edited ones), `prefix` before paths."""
        lines: list[str] = []
        for path in sorted(self.edited) if paths is None else paths:
            if path in self.removed:
                lines += unified_diff(path, self.removed[path], "", prefix)
            elif path in self.created:
                lines += unified_diff(path, "", self.created[path], prefix)
            elif path in self.edited:
                lines += unified_diff(path, *self.edited[path], prefix)
        return lines

    def describe(self, prefix: str = "", *, diffs: bool = True) -> list[str]:
        """One line per created file and TOML key, then (with `diffs`) a unified diff per edited file; `prefix`
        before paths."""
        lines = [f"create {prefix}{path}" for path in sorted(self.created)]
        lines += [f"edit   {prefix}{path}" for path in sorted(self.edited)]
        lines += [f"remove {prefix}{path}" for path in sorted(self.removed)]
        lines += [f"key    {key}" for key in self.keys]
        lines += [f"note   {note}" for note in self.notes]
        return lines + self.diff(prefix=prefix) if diffs else lines

    @property
    def empty(self) -> bool:
        return not (self.created or self.edited or self.removed)

    def apply(self) -> None:
        """Write new files, then replace edited ones atomically, then delete removed ones (checked first)."""
        self.check()
        for relpath, content in self.created.items():
            write_atomically(self.root / relpath, content)
        for relpath, (_, after) in self.edited.items():
            write_atomically(self.root / relpath, after)
        for relpath in self.removed:
            path = self.root / relpath
            path.unlink()
            for parent in path.parents:
                if parent == self.root or any(parent.iterdir()):
                    break
                parent.rmdir()
