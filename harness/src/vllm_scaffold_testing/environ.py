"""The harness's own environment variables, outside vLLM's `VLLM_` namespace.

vLLM 0.34 checks every `VLLM_*` variable of the environment when an engine is configured and warns about any
it does not know (or refuses it under `--fail-on-environ-validation`), so the harness's variables are named
`VLLMSCAFFOLD_*`. The names they had before (`VLLM_SCAFFOLD_*`) are still read for one release, with a
deprecation warning.
"""

from __future__ import annotations

import os
import warnings

CACHE_ENV = "VLLMSCAFFOLD_CACHE"
_RENAMED = {CACHE_ENV: "VLLM_SCAFFOLD_CACHE"}


def setting(name: str) -> str | None:
    """The value of the harness variable `name`, else of its former name (with a deprecation warning)."""
    value = os.environ.get(name)
    old = _RENAMED.get(name)
    if value is None and old and (value := os.environ.get(old)) is not None:
        warnings.warn(
            f"{old} is deprecated: set {name} instead (vLLM 0.34 warns about VLLM_ variables it does not know)",
            FutureWarning,
            stacklevel=2,
        )
    return value
