"""`check-update`: does the package at a path match the installed tool's templates? For CI, so it writes nothing.

The answer comes from the templates digests in `.vllm-scaffold/*.yml` (`identity.py`): when every record holds
the installed templates' digest, the package is up to date and nothing is rendered. Otherwise `update`'s plan
is made (the package rendered again in scratch space, never in the project) to name the files an update would
change; a template change that changes none of the package's files is not an update.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from vllm_scaffold.generate import identity, snapshot
from vllm_scaffold.generate.update import dropped, plan_update, read_records, unresolved, unresolved_line

# The exit code of `vllm-scaffold check-update` when an update is available (0: up to date, 2: bad input).
UPDATE_AVAILABLE = 3
# ... and when none is, but files still hold the conflict markers of an earlier update (as `update` exits).
UNRESOLVED = 1


@dataclass
class UpdateCheck:
    changed: list[str] = field(default_factory=list)  # the records whose templates changed, each saying how
    files: list[str] = field(default_factory=list)  # "update  PATH", "create  PATH", "review  PATH.rej"...
    unresolved: dict[str, int] = field(default_factory=dict)  # files with an earlier update's markers -> line

    @property
    def available(self) -> bool:
        return bool(self.files)

    def lines(self) -> list[str]:
        left = [unresolved_line(relpath, line) for relpath, line in self.unresolved.items()]
        if self.files:
            return [
                f"update available: {len(self.changed)} of the package's templates changed",
                *(f"changed {line}" for line in self.changed),
                *(f"would {line}" for line in self.files),
                *left,
                "run 'vllm-scaffold update --dry-run' to read the diff, then 'vllm-scaffold update'",
            ]
        if left:
            return [
                *(f"changed {line}" for line in self.changed),
                *left,
                f"{len(left)} to resolve by hand: {', '.join(self.unresolved)}",
            ]
        if not self.changed:
            return ["up to date: the package's templates digests match the installed templates"]
        return [
            *(f"changed {line}" for line in self.changed),
            "up to date: the changed templates render the same files; 'vllm-scaffold update' would only "
            "record the new digests",
        ]


def check_update(root: Path) -> UpdateCheck:
    """What `update` would change in the package at `root`, found without writing anything."""
    root = root.absolute()
    records = read_records(root, "check-update")
    changed = identity.changed_templates(records)
    changed += [
        f"{stem}: its component is no longer in [[tool.vllm-scaffold.components]]" for stem in dropped(root, records)
    ]
    left = unresolved(root)
    if not changed:
        return UpdateCheck(unresolved=left)
    plan = plan_update(root)
    ours = f"{snapshot.RECORDS_DIR}/"
    files = [
        line
        for line in plan.lines
        if line.split(" ", 1)[0] in {"create", "update", "remove", "conflict", "review"}
        and not line.split()[1].startswith(ours)
    ]
    return UpdateCheck(changed, files, left)
