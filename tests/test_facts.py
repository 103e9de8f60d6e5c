"""The claims about vLLM in vllm_scaffold/vllm_facts/facts.toml hold on every release they name, and every
page, pitfall, doctor summary and message states them from there (docs/facts.md).

Each release's sources: the installed vLLM (the suite's environment), the `.venv-VERSION` environments
scripts/test.sh creates, else the release's wheel from the tool's cache, downloaded once with
`pip download --no-deps` when missing. A release whose sources cannot be had is skipped, with the reason;
with VLLMSCAFFOLD_REQUIRE_SOURCES=1 (scripts/test.sh sets it) it fails instead, so that a download that broke
cannot leave a release's facts unchecked.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from scripts import facts_docs
from tests.helpers import build_file_tree
from vllm_scaffold import vllm_facts
from vllm_scaffold.catalog import load_catalog
from vllm_scaffold.doctor.checks.code import bad_linear_kernel_kinds
from vllm_scaffold.doctor.reading.package import PluginPackage
from vllm_scaffold.doctor.report import codes
from vllm_scaffold.doctor.runner import diagnose_releases
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.vllm_facts import endpoint_routes_replace_core, facts, linear_kernels, shipped_versions

ROOT = Path(__file__).resolve().parents[1]
RELEASES = facts_docs.releases()
# Set to 1, a release whose sources cannot be had fails the evidence tests instead of skipping them.
REQUIRE_SOURCES = "VLLMSCAFFOLD_REQUIRE_SOURCES"


def _sources(version: str) -> facts.Sources:
    try:
        return facts.release_sources(version, facts_docs.trees())
    except ScaffoldError as error:
        if os.environ.get(REQUIRE_SOURCES) == "1":
            pytest.fail(f"the sources of vLLM {version} are not at hand ({REQUIRE_SOURCES}=1): {error}")
        pytest.skip(f"the sources of vLLM {version} are not at hand: {error}")


@pytest.fixture(scope="module")
def lines() -> dict[str, dict[tuple[str, str, str], int]]:
    found = {}
    for version in RELEASES:
        _problems, found[version] = facts.check(version, _sources(version))
    return found


@pytest.mark.parametrize("version", RELEASES)
def test_every_anchor_holds_on_the_release(version: str) -> None:
    problems, _lines = facts.check(version, _sources(version))
    assert not problems, "\n".join(str(p) for p in problems)


def test_facts_name_shipped_releases_only() -> None:
    for key, fact in facts.facts().items():
        assert set(fact.releases) <= set(shipped_versions()), key
        assert len(fact.releases) == len(set(fact.releases)), f"{key} names a release in two `holds`"


def test_a_gone_anchor_fails_naming_the_fact_and_the_file(tmp_path: Path) -> None:
    """A release tree where one anchor moved away and one `absent` text appeared."""
    tree = build_file_tree(
        {
            "vllm/platforms/__init__.py": """
                def resolve_current_platform_cls_qualname() -> str:
                    log = logger.debug if name in builtin_platform_plugins else logger.warning
            """,
        },
        tmp_path,
    )
    problems, found = facts.check("0.32.0", facts.directory_sources(tree))
    text = "\n".join(str(p) for p in problems)
    assert "vLLM fact 'platform-detector-calls' on 0.32.0: vllm/platforms/__init__.py: anchor" in text
    assert "vLLM fact 'platform-detector-failure-log' on 0.32.0: vllm/platforms/__init__.py: 'log = " in text
    assert "vLLM fact 'linear-kernel-kinds' on 0.32.0: vllm/model_executor/kernels/linear/__init__.py: " in text
    anchor = "def resolve_current_platform_cls_qualname() -> str:"
    assert found[("cite-platform-resolve", "vllm/platforms/__init__.py", anchor)] == 1


def test_a_multi_line_anchor_matches_consecutive_lines_without_indentation() -> None:
    text = "x = 1\n    if a:\n        return\n    b()\n"
    assert facts.locate(text, "if a:\nreturn") == [2]
    assert facts.locate(text, "if a:\nb()") == []


def test_pages_state_the_facts_as_the_script_writes_them(lines: dict[str, dict[tuple[str, str, str], int]]) -> None:
    for page, text in facts_docs.pages(lines).items():
        assert page.read_text(encoding="utf-8") == text, f"{page.name} is stale: run python scripts/facts_docs.py"


def test_seam_pages_write_no_line_number_by_hand() -> None:
    """Every `file.py:LINE` citation of a seam page comes from a marker the script fills."""
    for page in facts_docs.PAGES:
        outside = facts.MARKER.sub("", page.read_text(encoding="utf-8"))
        assert not re.findall(r"\.py:\d|`:\d+`", outside), f"{page.name}: a line number outside a fact marker"


# A line number in vLLM's sources, written by hand: `vllm/x.py:123`, `x.py:12,40`, "line 123".
HAND_LINE_NUMBER = re.compile(r"\.py:\d|\blines? \d+")


def _hand_line_numbers(text: str) -> list[str]:
    """The hand-written line numbers of `text`, outside the markers scripts/facts_docs.py fills and outside the
    list it writes into docs/facts.md."""
    head, begin, rest = text.partition(facts_docs.BEGIN)
    text = head + (rest.partition(facts_docs.END)[2] if begin else "")
    text = facts.MARKER.sub("", text)
    return [text[max(0, m.start() - 40) : m.end() + 10] for m in HAND_LINE_NUMBER.finditer(text)]


def test_hand_line_numbers_are_found() -> None:
    assert _hand_line_numbers("see `vllm/plugins/__init__.py:72` and line 40")
    assert _hand_line_numbers("(`registry.py:161`)")
    marked = "<!--cite:cite-register-oot-->`vllm/model_executor/custom_op.py:335`<!--/cite-->"
    assert not _hand_line_numbers(marked)
    assert not _hand_line_numbers("lines of code, a `.py` file, `pkg.mod:Class`")


def test_no_line_number_of_vllm_is_written_by_hand() -> None:
    """Docs, catalog and templates cite vLLM's code through the facts' anchors (a marker or `{fact:KEY}`), whose
    line numbers scripts/facts_docs.py writes per release: a number written by hand drifts between releases."""
    # docs/releases/VERSION.md (scripts/adopt_release.py's report) and docs/measurements/ (doctor and triage
    # judged on published code) cite places in plugins and forks, not vLLM's.
    paths = [
        *(path for path in ROOT.glob("docs/**/*.md") if path.parent.name not in {"releases", "measurements"}),
        *ROOT.glob("vllm_scaffold/catalog/**/*.toml"),
        *(path for path in (ROOT / "templates").rglob("*") if path.is_file()),
    ]
    found = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found += [f"{path.relative_to(ROOT)}: ...{hit}..." for hit in _hand_line_numbers(text)]
    assert len(paths) > 50
    assert not found, "line numbers written by hand (cite through a fact):\n" + "\n".join(found)


def _found(paths: list[Path], pattern: str) -> list[tuple[str, str]]:
    return [(path.name, key) for path in paths for key in re.findall(pattern, path.read_text(encoding="utf-8"))]


def _references() -> list[tuple[str, str]]:
    """(file name, fact key) for every statement of a fact: placeholders, template calls, markers, code."""
    registries = [*ROOT.glob("vllm_scaffold/catalog/*.toml"), ROOT / "vllm_scaffold/doctor/report/codes.toml"]
    return [
        *_found(registries, r"\{fact:([a-z0-9-]+)\}"),
        *_found(list((ROOT / "templates").rglob("*.jinja")), r'vllm_fact\("([a-z0-9-]+)"\)'),
        *[
            (page.name, key)
            for page in (*facts_docs.PAGES, facts_docs.FACTS_PAGE)
            for key in facts.cited(page.read_text())
        ],
        *_found(list((ROOT / "vllm_scaffold").rglob("*.py")), r'facts\.fact\("([a-z0-9-]+)"'),
    ]


def test_every_reference_names_a_fact() -> None:
    references = _references()
    assert len(references) > 40
    unknown = [f"{where}: {key}" for where, key in references if key not in facts.facts()]
    assert not unknown, unknown


def test_every_fact_is_stated_somewhere_or_backs_a_doctor_code() -> None:
    stated = {key for where, key in _references() if where != facts_docs.FACTS_PAGE.name}
    backing = {key for key, fact in facts.facts().items() if fact.backs}
    assert set(facts.facts()) <= stated | backing, set(facts.facts()) - stated - backing
    unknown = {code for fact in facts.facts().values() for code in fact.backs} - set(codes.codes())
    assert not unknown, f"facts back doctor codes codes.toml does not have: {unknown}"
    registry = (ROOT / "vllm_scaffold/doctor/report/codes.toml").read_text(encoding="utf-8")
    for block in registry.split("[[section.code]]")[1:]:
        block = block.split("[[section]]")[0]  # the next section's intro is no part of this code
        code = re.search(r'code = "([a-z0-9-]+)"', block).group(1)  # type: ignore[union-attr]
        for key in re.findall(r"\{fact:([a-z0-9-]+)\}", block):
            assert code in facts.fact(key).backs, f"{code} states {key}: name it in the fact's `backs`"


# The doctor codes whose verdict rests on no claim about how vLLM behaves, and why: every other code must be
# backed by a fact (its `backs`), so a new code that states what vLLM does fails here until its fact exists.
_PACKAGE = "about the package itself, whatever vLLM does"
_INDEX = "compares the package with the release's index (names, signatures, sources): the evidence is the index"
_OBSERVED = "reports what the live probe observed, not what vLLM is said to do"
NO_VLLM_CLAIM = {
    "syntax-error": _PACKAGE,
    "no-modules-read": _PACKAGE,
    "entry-points-unread": _PACKAGE,
    "update-conflict-markers": _PACKAGE,
    "vllm-not-installed": _PACKAGE,
    "vllm-version-outside-range": _PACKAGE,
    "version-range-excludes-release": _PACKAGE,  # the package's own version test, run with the release's version
    "vllm-hard-requirement": "about pip and the distributions' names, not vLLM's code",
    "vllm-version-by-distribution": "about pip and the distributions' names, not vLLM's code",
    "vllm-data-path-missing": _INDEX,
    "pth-runs-code": "about Python's site module, which runs a .pth file's import lines in every process",
    "ray-worker-missing-plugin": _OBSERVED,
    "vllm-import-guarded": _INDEX,
    "vllm-config-attribute-missing": _INDEX,
    "vllm-attribute-missing": _INDEX,
    "vllm-self-attribute-missing": _INDEX,
    "vllm-override-orphaned": _INDEX,
    "vllm-override-not-yet": _INDEX,
    "vllm-override-moved": _INDEX,
    "vllm-super-missing": _INDEX,
    "vllm-override-signature": _INDEX,
    "vllm-override-keyword-renamed": _INDEX,
    "vllm-call-signature": _INDEX,
    "vllm-super-call-signature": _INDEX,
    "vllm-argument-type": _INDEX,
    "vllm-dotted-path-missing": _INDEX,
    "monkeypatch-call-signature": _INDEX,
    "monkeypatch-target-missing": _INDEX,
    "monkeypatch-signature-changed": _INDEX,
    "patch-signature-changed": _INDEX,
    "patch-source-changed": _INDEX,
}


def test_every_code_that_claims_vllm_behaviour_is_backed() -> None:
    backed = {code for fact in facts.facts().values() for code in fact.backs}
    assert set(NO_VLLM_CLAIM) <= set(codes.codes()), set(NO_VLLM_CLAIM) - set(codes.codes())
    unbacked = [code for code in codes.codes() if code not in backed and code not in NO_VLLM_CLAIM]
    assert not unbacked, f"codes stating vLLM behaviour without a fact in facts.toml naming them in `backs`: {unbacked}"
    both = sorted(backed & set(NO_VLLM_CLAIM))
    assert not both, f"backed by a fact, so not free of vLLM claims: {both}"


def test_endpoint_route_gate_follows_the_fact() -> None:
    """The release check reports a shadowed route exactly where the fact says vLLM's own route wins."""
    for version in facts.fact("endpoint-route-order").releases:
        replaces = "replaces vLLM's route" in facts.holding("endpoint-route-order", version).claim
        assert endpoint_routes_replace_core(version) == replaces, version
    replacing = [v for v in shipped_versions() if endpoint_routes_replace_core(v)]
    assert vllm_facts.endpoint_routes_replace_core_from() == replacing[0], "a message's lower bound"


def test_catalog_and_codes_state_the_claims() -> None:
    """The claims the catalog and the doctor codes once got wrong, as they now read."""
    summary = {code: entry.summary for code, entry in codes.codes().items()}
    assert "raise `ValueError: All linear layers should support quant method.`" in summary["quant-linear-method-none"]
    assert "DEBUG log only" in summary["env-quantization-twice"]
    assert "`vllm.logits_processors`" in summary["ep-import-fails"] and "`RuntimeError`" in summary["ep-import-fails"]
    assert "never reads" in summary["endpoint-name-mismatch"]
    assert codes.codes()["endpoint-name-mismatch"].severity == "info"
    assert "is called once" in summary["platform-detector-side-effects"]
    assert "does nothing after its first call" in summary["general-plugin-not-idempotent"]
    assert "vLLM 0.33.0 to 0.34.0: `register_linear_kernel` accepts" in summary["linear-kernel-bad-kind"]
    pitfalls = {key: " ".join(seam.pitfalls) for key, seam in load_catalog().items()}
    assert "only when `--disable-log-stats` is absent" in pitfalls["stat-logger"]
    assert "`TypeError`, `OverflowError`" in pitfalls["io-processor"]
    assert "vLLM 0.33.0 to 0.34.0: An out-of-tree detector that raises is logged at WARNING" in pitfalls["platform"]
    assert "{fact:" not in " ".join([*summary.values(), *pitfalls.values()])


STALE = [
    "at least twice in every process",  # each detector once, the winner again
    "leaves it without weights",  # LinearBase.__init__ raises
    "built unquantized",
    "logs show the object",  # vLLM never reads the endpoint plugin's name
    "logs show this",
    "routes then answer 503",  # the render-only server never loads a plugin that needs `generate`
    "vLLM logs a warning and the package",  # logger.debug
    "only when they are ValueError",  # TypeError, OverflowError, VLLMClientError are 400 too
    "model inspection and tools call",  # load_general_plugins runs once per process
    "works for tools",  # --tool-call-parser is checked before endpoint plugins load
    "passes the server's check",  # the API server checks the name before those plugins load
    "only then does",  # the scheduler drains the connector's events every step
    "the engine core does not call it",  # it does, for structured outputs and MFU metrics
    "runs without the plugin",  # not for a logits processor or a worker extension
    'collective_rpc("device") gets',  # it raises TypeError
    "salt=None",  # VllmConfig.compute_hash(self, include_version=True)
    "before the KV cache exists",  # the spec is built from the KV-cache config
]


def test_no_page_repeats_a_claim_found_false() -> None:
    texts = [
        *ROOT.glob("vllm_scaffold/**/*.toml"),
        *ROOT.glob("vllm_scaffold/**/*.py"),
        *ROOT.glob("docs/**/*.md"),
        *(ROOT / "templates").rglob("*.jinja"),
        *(ROOT / "generated_examples").rglob("*.md"),
    ]
    for path in texts:
        text = path.read_text(encoding="utf-8")
        for stale in STALE:
            assert stale not in text, f"{path.relative_to(ROOT)} still says {stale!r}"


def test_linear_kernel_kinds_are_per_release() -> None:
    assert "fp8_block" in linear_kernels.kinds("0.33.0")
    assert "fp8_block" not in linear_kernels.kinds("0.32.0")
    assert linear_kernels.kinds("0.31.0") == linear_kernels.kinds("0.32.0")
    assert linear_kernels.kinds("0.34.0") == linear_kernels.kinds("0.33.0")  # a newer release: the newest known


def _fp8_block_plugin(root: Path) -> Path:
    return build_file_tree(
        {
            "pyproject.toml": """
                [project]
                name = "fx-block"
                version = "0.1.0"
                dependencies = ["vllm>=0.32"]

                [project.entry-points."vllm.general_plugins"]
                fx_block = "fx_block.plugin:register"
            """,
            "src/fx_block/__init__.py": "",
            "src/fx_block/plugin.py": """
                def register() -> None:
                    from vllm.model_executor.kernels.linear import register_linear_kernel
                    from vllm.platforms import current_platform

                    from fx_block.kernel import FxKernel

                    register_linear_kernel(FxKernel, current_platform._enum, "fp8_block")
            """,
            "src/fx_block/kernel.py": "class FxKernel:\n    pass\n",
        },
        root,
    )


def test_doctor_judges_a_kernel_type_by_the_release(tmp_path: Path) -> None:
    """`fp8_block` is a valid kind on 0.33 and raises ValueError on 0.32: doctor --vllm says so per release."""
    root = _fp8_block_plugin(tmp_path / "plugin")
    package = PluginPackage.load(root)
    assert bad_linear_kernel_kinds(package, "0.33.0") == []
    [found] = bad_linear_kernel_kinds(package, "0.32.0")
    assert found.code == "linear-kernel-bad-kind" and "vLLM 0.32.0" in found.message
    reports = diagnose_releases(root, ["0.32.0", "0.33.0"])
    kinds = [[f.code for f in report.findings if f.code == "linear-kernel-bad-kind"] for report in reports]
    assert kinds == [["linear-kernel-bad-kind"], []]


def test_templates_take_the_claims() -> None:
    import jinja2

    from vllm_scaffold.generate.rendering import VllmReleases

    environment = jinja2.Environment(extensions=[VllmReleases])
    text = environment.from_string('{{ vllm_fact("endpoint-render-server-tasks") }}').render()
    assert text == facts.fact("endpoint-render-server-tasks").text()


def _raw_catalog() -> dict[str, dict[str, object]]:
    import tomllib

    root = Path(__file__).resolve().parent.parent / "vllm_scaffold" / "catalog"
    paths = [path for path in sorted(root.glob("*.toml")) if path.stem != "registries"]
    return {path.stem: tomllib.loads(path.read_text()) for path in paths}


def test_rendered_claim_fields_contain_the_facts_claim_text() -> None:
    from vllm_scaffold.catalog import CLAIM_FIELDS

    catalog = load_catalog()
    checked = 0
    for key, table in _raw_catalog().items():
        for name in (*CLAIM_FIELDS, "pitfalls"):
            raw = table.get(name)
            raws = [raw] if isinstance(raw, str) else list(raw or [])  # type: ignore[arg-type]
            rendered = getattr(catalog[key], name)
            rendered = [rendered] if isinstance(rendered, str) else list(rendered)
            for raw_line, line in zip(raws, rendered, strict=True):
                for fact_key in re.findall(r"\{fact:([^}]+)\}", str(raw_line)):
                    checked += 1
                    assert "{fact:" not in line, (key, name)
                    assert facts.fact(fact_key).text() in line, (key, name, fact_key)
    assert checked > 0


# Catalog claim lines that state nothing about how vLLM behaves, and why; every other line of a claim field or
# pitfall writes `{fact:KEY}`, so its claim is checked on every release it names.
_TEMPLATE = "describes what the generated apply() does, not vLLM"
NOT_A_VLLM_CLAIM: dict[tuple[str, str], str] = {
    ("custom-op", "Python side effects inside forward break torch.compile tracing"): "about torch.compile, not vLLM",
    ("patch", "a wrapper set on the target's module or class by apply(), called from the general plugin"): _TEMPLATE,
    (
        "patch",
        "applied only when the live target's parameters match the ones recorded for the installed release",
    ): _TEMPLATE,
    (
        "patch",
        "a module-level function imported by name elsewhere (`from vllm.x import f`) keeps the old reference in "
        "modules imported before the patch; apply() rebinds the ones in vLLM's modules already imported",
    ): "about Python's name binding and the generated apply()",
    (
        "patch",
        "a method patched on a base class reaches subclasses that do not override it, and no subclass that does",
    ): "about Python's attribute lookup",
    (
        "patch",
        "vLLM may change the target's body without changing its parameters: the run-time check passes, doctor "
        "--vllm warns that the source changed",
    ): "about the generated run-time check and doctor; the source hashes are the release indexes' evidence",
}


def test_every_catalog_claim_states_a_fact() -> None:
    from vllm_scaffold.catalog import CLAIM_FIELDS

    unstated, allowed = [], set()
    for key, table in _raw_catalog().items():
        for name in (*CLAIM_FIELDS, "pitfalls"):
            raw = table.get(name)
            for line in [raw] if isinstance(raw, str) else list(raw or []):  # type: ignore[arg-type]
                if (key, line) in NOT_A_VLLM_CLAIM:
                    allowed.add((key, line))
                elif "{fact:" not in str(line):
                    unstated.append(f"{key}.{name}: {line}")
    assert not unstated, "catalog claims without a {fact:KEY} (write the fact in facts.toml):\n" + "\n".join(unstated)
    gone = set(NOT_A_VLLM_CLAIM) - allowed
    assert not gone, f"allowed lines no longer in the catalog: {gone}"


# -- anchors that prove ----------------------------------------------------------------------------------------

# A line of vLLM's code that would survive the behaviour changing: a `def` or decorator line, a field default or
# declaration (`name: type = literal`), a signature's parameter, a comment, a string alone (a log or error
# message, a flag's name, a docstring). A `class` line is not one: its bases are what an inheritance claim says.
_DEFAULT = (
    r"(None|True|False|\"[^\"]*\"|'[^']*'|-?[\d.]+|\[\]|\{\}|\(\)"
    r"|(dataclasses\.)?field\(.*\)|get_field\(.*\)|Field\(.*\)|[A-Z]\w*(\.\w+)+)"
)
_DECLARATION_LINES = [
    re.compile(r"^(async\s+)?def\s"),
    re.compile(r"^@"),
    re.compile(r"^#"),
    re.compile(r"^(self\.)?\w+\s*:\s*[^=]+(=\s*" + _DEFAULT + r")?,?$"),
    re.compile(r"^\w+,?$"),
    re.compile(r"^\)(\s*->.*)?:$"),
    re.compile(r"^[rbuf]*(\"|')"),
]


def declaration_only(evidence: facts.Evidence) -> bool:
    """Whether an anchor is declarations alone; an `absent` text is a search, never one."""
    if evidence.anchor is None:
        return False
    lines = [line.strip() for line in evidence.anchor.split("\n")]
    return all(not line or any(p.search(line) for p in _DECLARATION_LINES) for line in lines)


# Facts whose claim is a declaration itself, and why.
DECLARATION_IS_THE_CLAIM = {
    "tool-parser-make-tool-call-id-home": "which module defines make_tool_call_id: its def line there is the claim",
}


def test_declaration_only_anchors_are_told_apart() -> None:
    def anchor(text: str) -> facts.Evidence:
        return facts.Evidence("vllm/x.py", anchor=text)

    weak = [
        "def register_connector(cls, name: str, module_path: str, class_name: str) -> None:",
        "def register_module(\ncls,\nname: str | list[str] | None = None,\nforce: bool = True,",
        "@abstractmethod\ndef is_reasoning_end(self, input_ids: Sequence[int]) -> bool:",
        "kv_transfer_config: KVTransferConfig | None = None",
        "backend_per_kind: dict[str, AttentionBackendEnum] = field(default_factory=dict)",
        "self.lora_resolvers: list[LoRAResolver] = []",
        '"--kv-transfer-config", **vllm_kwargs["kv_transfer_config"]',
        "f\"The model requires the '{model_plugin}' IO Processor plugin \"",
        "# * Operations should be processed in the following order:",
    ]
    strong = [
        "cls._registry[name] = loader",
        'raise KeyError(\nf"invalid reasoning parser: {reasoning_parser} "',
        'logger.exception("Failed to load plugin %s", plugin.name)',
        "extra_args: dict[str, Any] = self.vllm_xargs if self.vllm_xargs else {}",
        "def __getattr__(self, attr: str):\nreturn getattr(self.worker, attr)",
        "class VLLMClientError(VLLMError):",
    ]
    assert all(declaration_only(anchor(text)) for text in weak)
    assert not any(declaration_only(anchor(text)) for text in strong)
    assert not declaration_only(facts.Evidence("vllm/x.py", absent="def set_prompt_token_ids"))


def test_no_fact_rests_on_declarations_alone() -> None:
    """For every release a fact names, some anchor is the code that makes the claim true (the call, the raise, the
    loop, the assignment) or a search for what must not be there: a `def` line or a default survives the
    behaviour changing, so a fact resting only on them could pass while false."""
    found = []
    for key, fact in facts.facts().items():
        for holds in fact.holds:
            if key not in DECLARATION_IS_THE_CLAIM and all(declaration_only(e) for e in holds.evidence):
                found.append(f"{key} ({', '.join(holds.releases)})")
    assert not found, "facts whose anchors are declarations only (anchor the code that does it):\n" + "\n".join(found)
    resting = {key for key, fact in facts.facts().items() for h in fact.holds if all(map(declaration_only, h.evidence))}
    assert set(DECLARATION_IS_THE_CLAIM) <= resting, set(DECLARATION_IS_THE_CLAIM) - resting


def test_which_release_answers_each_way_a_release_is_asked_for(tmp_path: Path) -> None:
    from vllm_scaffold.vllm_facts import Installed, Named, Origin, Targeted, which_release

    newest = shipped_versions()[-1]
    assert which_release(Named(newest)) == vllm_facts.Release(newest, Origin.SHIPPED, vllm_facts.shipped(newest))
    default = which_release()
    assert default.origin is Origin.DEFAULT and default.version == vllm_facts.ENGINE_TESTED[-1]
    assert which_release(Installed(None)) == default, "no vLLM installed: the default's facts"
    where = tmp_path / "pyproject.toml"
    assert which_release(Targeted(f">={shipped_versions()[0]}", newest, where)).version == shipped_versions()[-2]
    with pytest.raises(ScaffoldError, match=f"--base {newest}x is neither a vLLM version") as raised:
        which_release(Named(f"{newest}x", flag="--base"))
    assert raised.value.fix == f"pass a version such as {newest}, or a path"
    with pytest.raises(ScaffoldError, match="--vllm 9.9.9 is not a shipped release"):
        which_release(Named("9.9.9", fetch=False))
    with pytest.raises(ScaffoldError, match="declares no \\[tool.vllm-scaffold\\] vllm range") as raised:
        which_release(Targeted("", newest, where))
    assert vllm_facts.declared_range() in raised.value.fix, "the example range is the tool's own"
    assert SpecifierSet(vllm_facts.example_range()).contains(vllm_facts.default_version())
