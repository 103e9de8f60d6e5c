"""The generation pipeline: `new`, `add` and `update` as library calls, and what they share.

One pass, nothing written before the last step (docs/architecture.md):

- render: `rendering` (copier into scratch space, the shared fragments), `questions` (a template's
  questions), `answers` (`--data` checked against them), `formatting` and `wrapping` (lint-clean output);
- plan: `component` (everything one component adds), `wiring` (which general plugin registers it),
  `pyproject_edit` (tomlkit edits), `names` (package and component names);
- check and write: `changeset` (the one plan type of `new`, `add`, `update` and `migrate`, and the one way
  anything reaches a user's project);
- the commands: `scaffold` (`new`, `add`), `snapshot` (the base snapshot `update` merges against),
  `update` and `merge` (`update`'s three-way merge), `check_update`, `migrate`.

Nothing here prints or asks: the terminal layer passes in what it needs (an `Asker` for copier's questions).
"""
