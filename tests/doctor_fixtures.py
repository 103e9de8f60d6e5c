"""Every doctor fixture, keyed by the code it shows: one place to ask which package shows a code.

Fixtures come in four forms; this registry reads the three that are packages on disk or written per session:

- a folder, tests/fixtures/doctor/<code>/: a package unique to its pitfall;
- a BROKEN variant of tests/doctor_variants.py: packages that share modules, written once per session;
- a release fixture, tests/fixtures/releases/<subject>/, checked with `--vllm` against each release, with the
  findings it must show on each (RELEASE_FINDINGS, checked by tests/test_releases.py).

The fourth, a package a single test builds inline (tests.helpers.build_file_tree), shows a contrast only its
test needs, and stays in that test.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

import doctor_variants

DOCTOR = Path(__file__).parent / "fixtures" / "doctor"
RELEASES = Path(__file__).parent / "fixtures" / "releases"


@dataclass(frozen=True)
class Fixture:
    form: Literal["folder", "variant", "release"]
    name: str  # the folder's or the variant's name (the code), or the release fixture's subject

    def root(self, variants: Path) -> Path:
        """The package: `variants` is where this session wrote the variants (tests/test_doctor.py)."""
        if self.form == "variant":
            return variants / self.name
        return (DOCTOR if self.form == "folder" else RELEASES) / self.name


@cache
def by_code() -> dict[str, tuple[Fixture, ...]]:
    """Each code a fixture shows, with every fixture that shows it (a folder or variant first)."""
    found: dict[str, list[Fixture]] = {}
    for path in sorted(DOCTOR.iterdir()):
        if path.is_dir() and not path.name.startswith("_") and path.name != "clean":
            found.setdefault(path.name, []).append(Fixture("folder", path.name))
    for name in sorted(doctor_variants.BROKEN):
        found.setdefault(name, []).append(Fixture("variant", name))
    for subject, releases in RELEASE_FINDINGS.items():
        for code in sorted({code for pairs in releases.values() for code, _where in pairs}):
            found.setdefault(code, []).append(Fixture("release", subject))
    return {code: tuple(fixtures) for code, fixtures in found.items()}


def own_package(code: str) -> Fixture | None:
    """The folder or variant that exists to show `code` alone, if there is one."""
    return next((f for f in by_code().get(code, ()) if f.form != "release"), None)


PATCHES = "pyproject.toml [[tool.vllm-scaffold.components]]"
# release fixture -> release -> {(code, where)}: everything doctor --vllm must report on it, and nothing else
# (tests/test_releases.py).
RELEASE_FINDINGS: dict[str, dict[str, set[tuple[str, str]]]] = {
    # vLLM 0.34 removed the V1 runner: a V1-only class and one with no base are refused at start-up; the V2 one,
    # reached through the package's re-export, is not reported.
    # The plugin's own VLLM_* variables, which vLLM's environment check warns about on every release.
    "environment": {
        version: {
            ("env-unknown-vllm-variable", "src/fx_rel_env/__init__.py:5"),
            ("env-unknown-vllm-variable", "src/fx_rel_env/__init__.py:6"),
            ("env-unknown-vllm-variable", "src/fx_rel_env/__init__.py:14"),
        }
        for version in ("0.31.0", "0.34.0")
    },
    "logits-interfaces": {
        "0.33.0": set(),
        "0.34.0": {
            ("logits-processor-not-v2", "src/fx_rel_logits/plain.py:1"),
            ("logits-processor-not-v2", "src/fx_rel_logits/v1_only.py:4"),
            ("vllm-import-missing", "src/fx_rel_logits/v1_only.py:1"),
        },
    },
    "kv-connector": {
        "0.31.0": {
            ("vllm-import-missing", "src/fx_rel_kv/connector.py:6"),
            ("vllm-import-guarded", "src/fx_rel_kv/metrics.py:4"),
            ("vllm-override-not-yet", "src/fx_rel_kv/connector.py:34"),
        },
        "0.32.0": {("vllm-override-not-yet", "src/fx_rel_kv/connector.py:34")},
        "0.33.0": set(),
    },
    "scheduler": {
        "0.31.0": set(),
        "0.32.0": {("vllm-override-signature", "src/fx_rel_sched/async_policy.py:15")},
        "0.33.0": {
            ("vllm-abstract-missing", "src/fx_rel_sched/interface.py:8"),
            ("vllm-override-moved", "src/fx_rel_sched/async_policy.py:11"),
            ("vllm-override-signature", "src/fx_rel_sched/async_policy.py:15"),
        },
    },
    "attention": {
        "0.31.0": {("vllm-argument-type", "src/fx_rel_attn/plugin.py:7")},
        "0.32.0": {
            ("vllm-override-orphaned", "src/fx_rel_attn/builder.py:15"),
            ("vllm-super-missing", "src/fx_rel_attn/builder.py:16"),
            ("vllm-override-orphaned", "src/fx_rel_attn/platform.py:8"),
        },
        "0.33.0": {
            ("vllm-override-orphaned", "src/fx_rel_attn/builder.py:15"),
            ("vllm-super-missing", "src/fx_rel_attn/builder.py:16"),
            ("vllm-override-orphaned", "src/fx_rel_attn/platform.py:8"),
        },
    },
    "moved-modules": {
        "0.31.0": {("vllm-attribute-missing", "src/fx_rel_moved/plugin.py:17")},
        "0.32.0": {
            ("vllm-import-missing", "src/fx_rel_moved/plugin.py:15"),
            ("vllm-attribute-missing", "src/fx_rel_moved/plugin.py:17"),
        },
        "0.33.0": {
            ("vllm-import-missing", "src/fx_rel_moved/plugin.py:15"),
            ("vllm-attribute-missing", "src/fx_rel_moved/plugin.py:17"),
            ("vllm-dotted-path-missing", "src/fx_rel_moved/plugin.py:11"),
        },
    },
    "quantization": {
        "0.31.0": set(),
        "0.32.0": set(),
        "0.33.0": {("vllm-call-signature", "src/fx_rel_quant/plugin.py:21")},
    },
    "endpoint": {
        "0.31.0": {
            ("vllm-endpoint-route-shadowed", "src/fx_rel_route/plugin.py:16"),
            ("vllm-endpoint-route-shadowed", "src/fx_rel_route/plugin.py:21"),
        },
        "0.32.0": set(),
        "0.33.0": set(),
    },
    # Parsers are subclasses like any other: a signature of an older interface, a method the release has not
    # got yet (set_prompt_token_ids arrives in 0.33). The `@abstractmethod` left out (extract_content_ids) is
    # not reported: ReasoningParser is no ABC, so creating the parser raises nothing.
    "parsers": {
        version: {
            ("vllm-override-signature", "src/fx_rel_parsers/tools.py:10"),
            *([("vllm-override-not-yet", "src/fx_rel_parsers/think.py:7")] if version != "0.33.0" else []),
        }
        for version in ("0.31.0", "0.32.0", "0.33.0")
    },
    "clean": {version: set() for version in ("0.31.0", "0.32.0", "0.33.0")},
    "self-attributes": {
        "0.31.0": set(),
        "0.32.0": {("vllm-self-attribute-missing", "src/fx_rel_self/manager.py:8")},
        "0.33.0": {("vllm-self-attribute-missing", "src/fx_rel_self/manager.py:8")},
    },
    "offload-manager": {
        version: {
            ("vllm-super-call-signature", "src/fx_rel_offload/managers.py:10"),
            *([("vllm-super-call-signature", "src/fx_rel_offload/managers.py:17")] if version != "0.33.0" else []),
            # 0.33's OffloadingConnector passes submit_load(..., expedited=True)
            *([("vllm-override-signature", "src/fx_rel_offload/workers.py:12")] if version == "0.33.0" else []),
        }
        for version in ("0.31.0", "0.32.0", "0.33.0")
    },
    "patch": {
        "0.31.0": set(),
        "0.32.0": {("patch-signature-changed", f"{PATCHES} profile")},
        "0.33.0": {
            ("patch-signature-changed", f"{PATCHES} profile"),
            ("patch-source-changed", f"{PATCHES} dcp_layout"),
            ("patch-target-missing", f"{PATCHES} mamba_cache"),
        },
    },
    # Strings naming vLLM: a gone path, a list of places of which the release has none and a missing prefix
    # among others are reported; the older place of a list tried in turn of which the release has one, a
    # logger root, an entry-point group and a tracer scope in vLLM's namespace are not.
    "dotted-paths": {
        version: {
            ("vllm-dotted-path-missing", "src/fx_rel_paths/__init__.py:11"),
            ("vllm-dotted-path-missing", "src/fx_rel_paths/__init__.py:15"),
            ("vllm-dotted-path-missing", "src/fx_rel_paths/__init__.py:17"),
        }
        for version in ("0.31.0", "0.32.0", "0.33.0", "0.34.0")
    },
}
