"""Every doctor code's example in codes.toml is an excerpt of a fixture doctor gets the code from, and what the
examples say about vLLM's API on a release is what that release's index says (docs/facts.md, "Examples").

A code's fixture is tests/fixtures/doctor/CODE/ or the variant of that name in tests/doctor_variants.py, which
tests/test_doctor.py runs through doctor (static checks, or the live probe for the codes in its LIVE_ONLY) and
from which it must get exactly the code; for a check of `doctor --vllm`, the package of tests/fixtures/releases/
that tests/test_releases.py expects the code from on a release. An example's code lines, without their `# ...`
notes, are lines of one of the fixture's files, in order; a line `...` skips lines, `...` inside a line stands
for any text, and the fixture's package name reads as `my_plugin`. An example that shows a run (`$ ...` then
doctor's output) is run here with the same allow-list and must report its code, each part of an output line
between `...` being in the finding. The environment codes' examples are the sources of, or doctor's findings on,
two plugins installed side by side (tests/clashing_site.py); `vllm-not-installed`'s is run with vLLM hidden;
the Ray codes' are run with RAY_ADDRESS set and made from a Ray probe's result (ELSEWHERE).
"""

from __future__ import annotations

import re
from pathlib import Path

import doctor_variants
import pytest
from test_doctor import LIVE_ONLY, PLUGINS, STATIC
from test_releases import EXPECTED as RELEASE_EXPECTED
from test_releases import FIXTURES as RELEASE_FIXTURES

from scripts import facts_docs
from tests import clashing_site
from vllm_scaffold import vllm_facts
from vllm_scaffold.doctor.live.probe_ray import missing_in_workers, worker_entry_points
from vllm_scaffold.doctor.reading import context
from vllm_scaffold.doctor.reading.context import Context
from vllm_scaffold.doctor.reading.installed import InstalledVllm
from vllm_scaffold.doctor.reading.package import PluginPackage
from vllm_scaffold.doctor.report import codes
from vllm_scaffold.doctor.runner import diagnose, diagnose_installed
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.vllm_facts import facts

FIXTURES = Path(__file__).parent / "fixtures" / "doctor"
SEVERITIES = ("error", "warning", "info")

# Codes whose example is checked by the tests at the end of this file instead: on a site of installed plugins
# (tests/clashing_site.py), in an environment without vLLM, or against the Ray probe's result.
ELSEWHERE = clashing_site.ENVIRONMENT_CODES | {"vllm-not-installed", "ray-every-node", "ray-worker-missing-plugin"}


def release_fixture(code: str) -> Path | None:
    """The first tests/fixtures/releases/ package tests/test_releases.py expects the code from, on some release."""
    for name, per_release in RELEASE_EXPECTED.items():
        if any(found == code for expected in per_release.values() for found, _where in expected):
            return RELEASE_FIXTURES / name
    return None


@pytest.fixture(scope="module")
def variants(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("example-variants")
    for name, variant in doctor_variants.BROKEN.items():
        doctor_variants.write(name, variant, dest)
    return dest


def fixture_of(code: str, variants: Path) -> Path | None:
    for root in (FIXTURES / code, variants / code):
        if root.is_dir():
            return root
    return release_fixture(code)


def code_lines(text: str) -> list[str]:
    """Each line without its `# ...` note and indentation; a comment line is empty."""
    lines = []
    for line in text.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        lines.append("" if line.startswith("#") else line)
    return lines


def example_chunks(example: str) -> list[list[str]]:
    """The example's runs of code lines between `...` lines, up to doctor's output (a line starting with a
    severity); a run's lines are consecutive in a fixture file."""
    chunks: list[list[str]] = [[]]
    for line in code_lines(example):
        if line.startswith(SEVERITIES):
            break  # doctor's output, to the end
        if line == "...":
            chunks.append([])
        elif line and not line.startswith("$ "):
            chunks[-1].append(line)
    return [chunk for chunk in chunks if chunk]


def _matches(pattern: str, line: str) -> bool:
    return re.fullmatch(".*".join(re.escape(part.strip()) for part in pattern.split("...")), line) is not None


def fixture_files(root: Path) -> list[list[str]]:
    packages = [p.name for p in (root / "src").iterdir() if p.is_dir()] if (root / "src").is_dir() else []
    package = packages[0] if len(packages) == 1 else doctor_variants.package_name(root.name)
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8", errors="replace")
        text = text.replace(package, "my_plugin").replace(package.replace("_", "-"), "my-plugin")
        found.append([line for line in code_lines(text) if line])
    return found


def missing_chunks(example: str, root: Path) -> list[list[str]]:
    files = fixture_files(root)

    def present(chunk: list[str]) -> bool:
        return any(
            all(_matches(want, have) for want, have in zip(chunk, lines[i : i + len(chunk)], strict=True))
            for lines in files
            for i in range(len(lines) - len(chunk) + 1)
        )

    return [chunk for chunk in example_chunks(example) if not present(chunk)]


def test_every_code_has_an_example_fixture(variants: Path) -> None:
    assert ELSEWHERE <= set(codes.codes()), ELSEWHERE - set(codes.codes())
    for code in codes.codes():
        if code in ELSEWHERE:
            continue
        assert fixture_of(code, variants) is not None, f"{code}: no fixture holds its example"
        if release_fixture(code) is None:
            assert code in STATIC or code in LIVE_ONLY, f"{code}: tests/test_doctor.py does not run its fixture"


@pytest.mark.parametrize("code", sorted(set(codes.codes()) - ELSEWHERE))
def test_example_is_an_excerpt_of_its_fixture(code: str, variants: Path) -> None:
    example = codes.codes()[code].example
    root = fixture_of(code, variants)
    assert root is not None
    runs = [line for line in example.splitlines() if line.startswith("$ ")]
    assert example_chunks(example) or runs, f"{code}: the example shows no code and no run"
    missing = missing_chunks(example, root)
    assert not missing, f"{code}: example lines not in {root.name}'s files: {missing}"


def _run_allow_list(command: str) -> str | None:
    if found := re.search(r"--plugins \"([^\"]*)\"", command):
        return found.group(1)
    if found := re.search(r"VLLM_PLUGINS=(\"[^\"]*\"|\S*)", command):
        return found.group(1).strip('"')
    return None


RUNS = sorted(code for code, entry in codes.codes().items() if "\n$ " in "\n" + entry.example and code not in ELSEWHERE)


@pytest.mark.parametrize("code", RUNS)
def test_a_run_in_an_example_reports_what_it_shows(code: str) -> None:
    example = codes.codes()[code].example
    [command] = [line for line in example.splitlines() if line.startswith("$ ")]
    package = doctor_variants.package_name(code)
    allow = _run_allow_list(command)
    assert allow is not None and allow.replace("my_plugin", package) == PLUGINS[code], command
    report = diagnose(FIXTURES / code, live=False, vllm_plugins=PLUGINS[code])
    shown = [line for line in example.splitlines() if line.startswith(SEVERITIES)]
    assert shown
    for line in shown:
        severity, shown_code, rest = line.split(maxsplit=2)
        [finding] = [f for f in report.findings if f.code == shown_code]
        assert finding.severity.value == severity
        text = f"{finding.where}  {finding.message}  {finding.fix}".replace(package, "my_plugin")
        for part in filter(None, (p.strip() for p in rest.split("..."))):
            assert part in text, f"{code}: {part!r} is not in doctor's finding: {text}"


def test_an_example_not_in_its_fixture_is_found(tmp_path: Path) -> None:
    root = tmp_path / "plugins-empty"
    (root / "src").mkdir(parents=True)
    (root / "src" / "plugin.py").write_text("def register() -> None:\n    return None\n")
    assert not missing_chunks("def register() -> None:   # a note\n    ...\n", root)
    assert missing_chunks("def register() -> None:\n    raise RuntimeError()\n", root)
    assert example_chunks("$ VLLM_PLUGINS= vllm-scaffold doctor .\nerror  plugins-empty  ...") == []


def _shows(shown: str, text: str) -> bool:
    """Whether each part of `shown` between `...` stands in `text`, in order."""
    return re.search(".*".join(re.escape(part.strip()) for part in shown.split("...")), text) is not None


@pytest.fixture(scope="module")
def site_findings(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict[str, str]]:
    """The clashing site's sources (with the examples' names), and its environment findings as
    `where: message` with the examples' names: with the live probe, and without it for the code only a
    static reading reports (two platforms installed, detectors not run)."""
    site = clashing_site.build(tmp_path_factory.mktemp("site"), tmp_path_factory.mktemp("sources"))
    live = clashing_site.live_findings(site)
    static = diagnose_installed(live=False, environ=clashing_site.environ_for(site)).environment.findings
    found = {}
    for finding in [*live, *static]:
        text = f"{finding.where}: {finding.message}"
        for ours, theirs in clashing_site.EXAMPLE_NAMES.items():
            text = text.replace(ours, theirs)
        found.setdefault(finding.code, text)
    return clashing_site.sources(site), found


@pytest.mark.parametrize("code", sorted(clashing_site.ENVIRONMENT_CODES))
def test_an_environment_example_is_shown_by_the_clashing_site(
    code: str, site_findings: tuple[list[str], dict[str, str]]
) -> None:
    """A code example is lines of the two plugins' sources; an output example is doctor's finding on them."""
    sources, found = site_findings
    assert code in found, f"{code}: doctor does not report it on the clashing site: {sorted(found)}"
    entry = codes.codes()[code]
    if entry.lang == "python":
        lines = [[line for line in code_lines(text) if line] for text in sources]
        for chunk in example_chunks(entry.example):
            assert any(
                all(_matches(want, have) for want, have in zip(chunk, file[i : i + len(chunk)], strict=True))
                for file in lines
                for i in range(len(file) - len(chunk) + 1)
            ), f"{code}: {chunk} is in neither plugin"
    else:
        for line in filter(None, entry.example.splitlines()):
            assert _shows(line, found[code]), f"{code}: {line!r} is not what doctor reports: {found[code]}"


def test_the_example_without_vllm_is_what_doctor_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(context, "installed_vllm", lambda: InstalledVllm(None, None, None))
    example = codes.codes()["vllm-not-installed"].example
    assert any(line.startswith("$ vllm-scaffold doctor .") for line in example.splitlines())
    report = diagnose(FIXTURES / "custom-op-unknown-target", vllm_plugins=None)
    [finding] = report.findings
    [(severity, code, rest)] = _shown_lines(example)
    assert (finding.severity.value, finding.code) == (severity, code)
    assert _shows(rest, f"{finding.where}  {finding.message}"), f"{rest!r} is not what doctor says: {finding}"


def _shown_lines(example: str) -> list[tuple[str, str, str]]:
    """(severity, code, the rest) of each line of doctor's output an example shows."""
    return [tuple(line.split(maxsplit=2)) for line in example.splitlines() if line.startswith(SEVERITIES)]


def test_the_ray_examples_are_what_doctor_says() -> None:
    """ray-every-node's run is made as shown; ray-worker-missing-plugin's line is what doctor makes of a Ray
    probe whose two workers did not import the plugin (the probe itself needs a cluster:
    tests/test_doctor_ray.py starts one)."""
    general_plugin = Path(__file__).resolve().parents[1] / "generated_examples" / "general-plugin"
    example = codes.codes()["ray-every-node"].example
    [command] = [line for line in example.splitlines() if line.startswith("$ ")]
    address = re.search(r"RAY_ADDRESS=(\S+)", command)
    assert address and "--no-live" in command
    report = diagnose(general_plugin, live=False, environ={"RAY_ADDRESS": address[1]})
    [(severity, code, rest)] = _shown_lines(example)
    [finding] = [f for f in report.findings if f.code == code]
    assert finding.severity.value == severity
    assert _shows(rest, f"{finding.where}  {finding.message}"), f"{rest!r} is not what doctor says: {finding}"

    [line] = codes.codes()["ray-worker-missing-plugin"].example.strip().splitlines()
    ctx = Context.build(PluginPackage.load(general_plugin), None, {})
    entry_points = worker_entry_points(ctx)
    front_end = {"pid": 1, "host": "node-a", "imported": [True] * len(entry_points)}
    workers = [
        {"pid": 4242, "host": "node-b", "imported": [False]},
        {"pid": 4243, "host": "node-c", "imported": [False]},
    ]
    result = {"cluster": "joined 10.0.0.5:6379", "front_end": front_end, "workers": workers}
    [finding] = missing_in_workers(ctx, entry_points, result)
    assert finding.code == "ray-worker-missing-plugin"
    assert _shows(line, finding.message), f"{line!r} is not what doctor says: {finding.message}"


# -- what the examples say about vLLM's API, per release -------------------------------------------------------

# (code, qualified name, {release: what the index has}); what: "missing", "present", or the signature as
# `Signature.text()` writes it (`=…` for a default). Each entry is what a note or a line of the example says.
ALL = ("0.31.0", "0.32.0", "0.33.0", "0.34.0")
QUOTED: list[tuple[str, str, dict[str, str]]] = [
    (
        "vllm-override-signature",
        "vllm.platforms.interface.Platform.get_attn_backend_cls",
        dict.fromkeys(ALL, "(cls, selected_backend, attn_selector_config, num_heads=…)"),
    ),
    (
        "vllm-call-signature",
        "vllm.v1.worker.block_table.get_block_table_width",
        {
            "0.31.0": "(max_num_blocks, block_size, kernel_block_size=…, token_alignment=…)",
            "0.32.0": "(max_num_blocks, block_size, token_alignment=…)",
            "0.33.0": "(max_num_blocks, block_size, token_alignment=…)",
        },
    ),
    (
        "monkeypatch-signature-changed",
        "vllm.v1.sample.rejection_sampler.RejectionSampler.forward",
        dict.fromkeys(ALL[:3], "(self, metadata, draft_probs, logits, sampling_metadata)"),
    ),
    (
        "monkeypatch-call-signature",
        "vllm.model_executor.layers.logits_processor.LogitsProcessor._get_logits",
        dict.fromkeys(ALL, "(self, hidden_states, lm_head, embedding_bias, skip_gather=…)"),
    ),
    (
        "scheduler-missing-connector",
        "vllm.v1.core.sched.interface.SchedulerInterface.__init__",
        dict.fromkeys(
            ALL,
            "(self, vllm_config, kv_cache_config, structured_output_manager, block_size, hash_block_size, "
            "mm_registry=…, include_finished_set=…, log_stats=…)",
        ),
    ),
    ("worker-extension-name-clash", "vllm.v1.worker.gpu_worker.Worker.load_model", dict.fromkeys(ALL, "present")),
    (
        "vllm-self-attribute-missing",
        "vllm.v1.core.kv_cache_manager.KVCacheManager.get_zeroing_block_ids_in_range",
        {"0.31.0": "present", "0.32.0": "missing", "0.33.0": "missing", "0.34.0": "missing"},
    ),
    (
        "monkeypatch-target-missing",
        "vllm.v1.worker.utils.is_residual_scattered_for_sp",
        {"0.31.0": "present", "0.32.0": "missing", "0.33.0": "missing", "0.34.0": "missing"},
    ),
    (
        "vllm-import-guarded",
        "vllm.model_executor.layers.fused_moe.fused_experts_fx",
        {"0.32.0": "missing"},
    ),
    (
        "vllm-abstract-missing",
        "vllm.v1.core.sched.interface.SchedulerInterface.has_request",
        {"0.31.0": "missing", "0.32.0": "missing", "0.33.0": "(self, request_id)", "0.34.0": "(self, request_id)"},
    ),
    (
        "vllm-override-orphaned",
        "vllm.v1.attention.backend.AttentionMetadataBuilder.use_cascade_attention",
        {"0.31.0": "present", "0.32.0": "missing"},
    ),
    (
        "vllm-override-not-yet",
        "vllm.distributed.kv_transfer.kv_connector.v1.base.KVConnectorBase_V1.supports_sleep_mode",
        {"0.31.0": "missing", "0.32.0": "missing", "0.33.0": "(cls, kv_transfer_config)"},
    ),
    (
        "vllm-dotted-path-missing",
        "vllm.entrypoints.launchers.cli_args",
        {"0.32.0": "present", "0.33.0": "missing"},
    ),
    ("vllm-dotted-path-missing", "vllm.entrypoints.common.cli_args", {"0.33.0": "present"}),
    (
        "patch-signature-changed",
        "vllm.entrypoints.llm.LLM.start_profile",
        {
            "0.31.0": "(self, profile_prefix=…)",
            "0.32.0": "(self, profile_prefix=…, delay_iterations=…, max_iterations=…)",
        },
    ),
    (
        "patch-source-changed",
        "vllm.config.vllm.VllmConfig.adjust_dcp_kv_cache_interleave_size",
        {"0.32.0": "(self, kv_cache_config)", "0.33.0": "(self, kv_cache_groups)"},
    ),
    ("logits-processor-not-v2", "vllm.v1.sample.logits_processor.LogitsProcessor", {"0.33.0": "present"}),
    ("logits-processor-not-v2", "vllm.v1.sample.logits_processor.LogitsProcessor", {"0.34.0": "missing"}),
    (
        "vllm-override-moved",
        "vllm.v1.core.sched.async_scheduler.AsyncScheduler._update_request_with_output",
        {"0.31.0": "present", "0.32.0": "present"},
    ),
    ("vllm-attribute-missing", "vllm.envs.VLLM_USE_V1", dict.fromkeys(ALL, "missing")),
    (
        "vllm-super-missing",
        "vllm.v1.attention.backend.AttentionMetadataBuilder.use_cascade_attention",
        {"0.31.0": "present", "0.32.0": "missing"},
    ),
    (
        "vllm-argument-type",
        "vllm.v1.attention.backends.registry.register_backend",
        {
            "0.31.0": "param backend: AttentionBackendEnum, MambaAttentionBackendEnum",
            "0.32.0": "param backend: AttentionBackendEnum, MambaAttentionBackendEnum, str",
        },
    ),
    (
        "vllm-super-call-signature",
        "vllm.v1.kv_offload.cpu.manager.CPUOffloadingManager",
        {
            **dict.fromkeys(
                ALL[:2],
                "(num_chunks, cache_policy=…, cache_policy_module_path=…, enable_events=…, store_threshold=…, "
                "max_tracker_size=…)",
            ),
            **dict.fromkeys(
                ALL[2:],
                "(num_chunks, cache_policy=…, cache_policy_module_path=…, enable_events=…, store_threshold=…, "
                "max_tracker_size=…, info=…)",
            ),
        },
    ),
]


def _what(version: str, qualname: str, expected: str) -> str:
    index = vllm_facts.release(version)
    symbol = index.resolve(qualname)
    if not symbol.exists:
        return "missing"
    signature = index.signature(symbol) if symbol.kind in {"function", "member", "class"} else None
    if expected.startswith("param ") and signature is not None:
        name = expected.removeprefix("param ").partition(":")[0]
        param = signature.param(name)
        return f"param {name}: {', '.join(param.types)}" if param else "missing"
    return signature.text() if signature is not None else "present"


@pytest.mark.parametrize(("code", "qualname", "per_release"), QUOTED, ids=[f"{c}:{q}" for c, q, _ in QUOTED])
def test_what_an_example_says_of_vllm_is_in_the_release_index(
    code: str, qualname: str, per_release: dict[str, str]
) -> None:
    assert code in codes.codes()
    name = qualname.rpartition(".")[2]
    assert name in codes.codes()[code].example, f"{code}'s example does not name {name}"
    for version, expected in per_release.items():
        found = _what(version, qualname, expected)
        if expected == "present":
            assert found != "missing", f"{qualname} is missing from vLLM {version}"
        else:
            assert found == expected, f"{qualname} on vLLM {version}: the index has {found}, {code} says {expected}"


def test_keyword_only_parameters_the_examples_name() -> None:
    """patch-signature-changed's note: 0.32 adds keyword-only delay_iterations, max_iterations."""
    index = vllm_facts.release("0.32.0")
    signature = index.signature(index.resolve("vllm.entrypoints.llm.LLM.start_profile"))
    assert signature is not None
    kinds = {p.name: p.kind for p in signature.params}
    assert kinds["delay_iterations"] == kinds["max_iterations"] == "kwonly"


# What an example's note says of a release that the index cannot answer, read in the release's sources instead:
# (code, file, {release: text}, whether the text is there).
IN_SOURCES: list[tuple[str, str, dict[str, str], bool]] = [
    # SchedulerConfig is a pydantic dataclass: the index lists no members of it ("unknown"), the source does.
    ("vllm-config-attribute-missing", "vllm/config/scheduler.py", dict.fromkeys(ALL, "is_multi_step"), False),
    # ModelConfig likewise.
    (
        "patch-target-missing",
        "vllm/config/model.py",
        dict.fromkeys(ALL[:2], "def supports_mamba_prefix_caching"),
        True,
    ),
    (
        "patch-target-missing",
        "vllm/config/model.py",
        dict.fromkeys(ALL[2:], "def supports_mamba_prefix_caching"),
        False,
    ),
]
# Codes whose example notes name a release for another reason than vLLM's API.
RELEASE_NOTE_ELSEWHERE = {
    "version-range-excludes-release": "the note is about the example's own version test",
    "general-plugin-refuses-release": "the note is about the example's own version pin",
    "vllm-endpoint-route-shadowed": "the code's summary states the fact endpoint-route-order, per release",
    "vllm-range-invalid": "the note is the version specifier the example should write",
}


@pytest.mark.parametrize(
    ("code", "file", "per_release", "present"), IN_SOURCES, ids=[f"{c}-{i}" for i, (c, *_) in enumerate(IN_SOURCES)]
)
def test_what_an_example_says_of_vllm_is_in_the_release_sources(
    code: str, file: str, per_release: dict[str, str], present: bool
) -> None:
    for version, text in per_release.items():
        assert text.removeprefix("def ") in codes.codes()[code].example
        try:
            source = facts.release_sources(version, facts_docs.trees())(file)
        except ScaffoldError as error:
            pytest.skip(f"the sources of vLLM {version} are not at hand: {error}")
        assert source is not None, f"{file} is not in vLLM {version}"
        assert (text in source) == present, f"{code}: {text!r} {'is not' if present else 'is'} in {file} on {version}"


def test_every_example_note_naming_a_release_is_checked() -> None:
    """A note that says what a release has (`# gone in 0.32`, `# vLLM 0.31 to 0.34: ...`) is checked against the
    release's index or sources above, or its code is listed with the reason it is not about vLLM's API."""
    checked = {code for code, *_ in QUOTED} | {code for code, *_ in IN_SOURCES} | set(RELEASE_NOTE_ELSEWHERE)
    naming = {
        code
        for code, entry in codes.codes().items()
        if any(re.search(r"\b0\.\d+\b", note) for note in re.findall(r"#(.*)", entry.example))
    }
    assert naming - checked == set(), f"example notes naming a release, not checked: {sorted(naming - checked)}"
    assert set(RELEASE_NOTE_ELSEWHERE) <= naming
