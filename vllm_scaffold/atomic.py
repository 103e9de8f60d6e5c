"""Writing a file so that a reader, or a concurrent run, sees the old content or the whole new one.

The one way the tool writes a file: a user's project (`changeset`), the shared caches (`vllm_facts.store`,
doctor's probe results) and the shipped indexes (scripts/build_vllm_index.py).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomically(path: Path, data: str | bytes) -> None:
    """Writes `data` (text as UTF-8, line endings as given) through a scratch file beside `path`, then
    `os.replace`; an existing file keeps its permissions, a new one is rw-r--r--."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, scratch = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(scratch, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(scratch, path)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise
