"""Doctor's JSON on everything it is judged on, as one file: the published corpus (from the download cache),
the doctor and release fixtures, and the golden packages against every shipped release.

A change that must keep doctor's behaviour (a refactor) records this before and after and compares:

    python scripts/doctor_snapshot.py > before.json   # on the old commit
    python scripts/doctor_snapshot.py > after.json && diff before.json after.json

Timings are dropped; everything else (codes, severities, places, messages, fixes, chains) is kept.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vllm_scaffold import vllm_facts  # noqa: E402
from vllm_scaffold.doctor.runner import diagnose, diagnose_releases  # noqa: E402


def _clean(value: Any) -> Any:
    """`value` without timings or this machine's paths, so that two runs compare line for line."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k not in {"timings", "timings_s", "seconds"}}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, str):
        return value.replace(str(ROOT), "<repo>").replace(tempfile.gettempdir(), "<tmp>")
    return value


def corpus_archives() -> list[Path]:
    cache = Path(os.environ.get("VLLMSCAFFOLD_CACHE", tempfile.gettempdir())) / "doctor-corpus"
    plugins = tomllib.loads((ROOT / "tests" / "doctor_corpus.toml").read_text(encoding="utf-8"))["plugin"]
    found = []
    for plugin in plugins:
        into = cache / f"{plugin['name']}-{plugin['version']}-{plugin['kind']}"
        files = sorted(p for p in into.glob("*") if p.is_file()) if into.is_dir() else []
        if files:
            found.append(files[0])
        else:
            print(f"not cached: {into.name}", file=sys.stderr)
    return found


def main() -> None:
    for name in ("VLLM_PLUGINS", "VLLM_USE_V2_MODEL_RUNNER", "VLLM_DISABLED_KERNELS"):
        os.environ.pop(name, None)
    out: dict[str, Any] = {}
    static = [*corpus_archives()]
    static += sorted(p for p in (ROOT / "tests" / "fixtures" / "doctor").iterdir() if not p.name.startswith("_"))
    static += sorted((ROOT / "tests" / "fixtures" / "packages").iterdir())
    for target in static:
        key = f"static:{target.relative_to(target.parents[1])}"
        try:
            out[key] = _clean(diagnose(target, live=False).as_json())
        except Exception as error:  # the snapshot records a crash as behaviour too
            out[key] = f"{type(error).__name__}: {error}"
    releases = [str(v) for v in vllm_facts.shipped_versions()]
    by_release = sorted((ROOT / "generated_examples").iterdir())
    by_release += sorted((ROOT / "tests" / "fixtures" / "releases").iterdir())
    for target in by_release:
        key = f"releases:{target.relative_to(target.parents[1])}"
        try:
            out[key] = _clean([r.as_json() for r in diagnose_releases(target, releases)])
        except Exception as error:
            out[key] = f"{type(error).__name__}: {error}"
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
