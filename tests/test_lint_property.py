"""Property: whatever name and answers the tool accepts, the package it writes passes its own CI's first steps.

Hypothesis draws a seam, a package name up to the length limit, answers to every question of the seam's
template (and the package's description), and a second component added with `add` under another drawn name,
whose module path repeats both names. Each package must pass `ruff check .` and `ruff format --check .` with
its own configuration, compile, install with `pip install --no-deps --target`, and import. The examples are
derandomized and few, so CI runs the same cases every time in a few minutes.
"""

from __future__ import annotations

import compileall
import os
import string
import subprocess
import sys
import tomllib

import pytest
from hypothesis import HealthCheck, Phase, given, reject, settings
from hypothesis import strategies as st

from vllm_scaffold.catalog import templated_keys, templated_seam
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.generate import names
from vllm_scaffold.generate.answers import FALSE, MAX_TEXT_LENGTH, TRUE
from vllm_scaffold.generate.rendering import templates_root
from vllm_scaffold.generate.scaffold import add_to_project, new_package
from vllm_scaffold.generate.wrapping import wrap_prose

LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase


def identifier(first: str, rest: str, max_size: int) -> st.SearchStrategy[str]:
    """Names of every length up to `max_size`, the longest drawn often: it is the one that overflows lines."""

    @st.composite
    def draw_identifier(draw: st.DrawFn) -> str:
        size = draw(st.one_of(st.just(max_size), st.integers(1, max_size)))
        return draw(st.sampled_from(first)) + draw(st.text(rest, min_size=size - 1, max_size=size - 1))

    return draw_identifier()


PACKAGE_NAMES = identifier(LOWER, LOWER + string.digits + "_", names.MAX_NAME_LENGTH)
ENV_NAME = identifier(UPPER, UPPER + string.digits + "_", MAX_TEXT_LENGTH)
CLASS_NAME = identifier(UPPER, string.ascii_letters + string.digits + "_", MAX_TEXT_LENGTH)
BOOL = st.sampled_from([*TRUE, *FALSE, "Yes", "OFF"])
PATH_SEGMENT = st.text(LOWER + string.digits + "_-", min_size=1, max_size=20)
# Parser markers: printable text without spaces, braces, quotes or backslashes (answers never hold the last two).
MARKER = st.text(
    "".join(c for c in string.punctuation + string.ascii_letters if c not in '{}"\\'), min_size=2, max_size=24
)
PARSER_NAME = identifier(LOWER, LOWER + string.digits + "_-", MAX_TEXT_LENGTH)

# One strategy per template question; values a validator refuses (vLLM's own names, the VLLM_ namespace)
# make the example invalid, which hypothesis replaces by another.
ANSWERS: dict[str, dict[str, st.SearchStrategy[str]]] = {
    "package": {
        "description": st.text(string.ascii_letters + string.digits + " .,:;()'-_/", min_size=1, max_size=100),
        "vllm_range": st.sampled_from([">=0.32.0,<0.33", ">=0.32.0,<0.33.0", "~=0.32.0", "==0.32.0"]),
    },
    "logits-processor": {
        "param_name": identifier(LOWER + "_", LOWER + string.digits + "_", MAX_TEXT_LENGTH),
        "param_type": st.sampled_from(["int", "list[int]"]),
    },
    "endpoint": {
        "route_prefix": st.lists(PATH_SEGMENT, min_size=1, max_size=3)
        .map(lambda parts: "/" + "/".join(parts))
        .filter(lambda prefix: len(prefix) <= MAX_TEXT_LENGTH),
    },
    "stat-logger": {
        "path_env": ENV_NAME,
        "default_path": st.lists(PATH_SEGMENT, min_size=1, max_size=3)
        .map(lambda parts: "/".join(parts) + ".jsonl")
        .filter(lambda path: len(path) <= MAX_TEXT_LENGTH),
    },
    "attention-backend": {
        "backend_name": ENV_NAME,
        "cudagraph_support": st.sampled_from(["NEVER", "UNIFORM_SINGLE_TOKEN_DECODE", "UNIFORM_BATCH"]),
        "sliding_window": BOOL,
        "logits_soft_cap": BOOL,
    },
    "quantization": {
        "method_name": identifier(LOWER, LOWER + string.digits + "_-", MAX_TEXT_LENGTH),
        "ignore": st.lists(identifier(LOWER, LOWER + "_.", 20), min_size=1, max_size=3)
        .map(",".join)
        .filter(lambda text: len(text) <= MAX_TEXT_LENGTH),
    },
    "linear-kernel": {"kind": st.sampled_from(["int8", "mp"])},
    "custom-op": {"op": st.sampled_from(["SiluAndMul", "RMSNorm"])},
    "scheduler": {
        "priority_key": identifier(string.ascii_letters + "_", string.ascii_letters + string.digits + "_", 64),
        "max_wait_s": st.floats(min_value=0.001, max_value=1e6, allow_nan=False).map(repr),
    },
    "kv-connector": {"connector_name": CLASS_NAME},
    "kv-offload": {"spec_name": CLASS_NAME, "default_store_mib": st.integers(1, 1 << 20).map(str)},
    "platform": {"enable_env": ENV_NAME},
    "model": {"architecture": CLASS_NAME},
    "io-processor": {"max_texts": st.integers(1, 4096).map(str)},
    "lora-resolver": {"dir_env": ENV_NAME, "check_base_model": BOOL},
    "general-plugin": {},
    "worker-extension": {},
    "tool-parser": {"parser_name": PARSER_NAME, "call_start": MARKER, "call_end": MARKER},
    "reasoning-parser": {"parser_name": PARSER_NAME, "start_marker": MARKER, "end_marker": MARKER},
    "patch": {
        # one target of each kind a patch wraps; none a seam covers (test_patch covers the refusal)
        "target": st.sampled_from(
            [
                "vllm.config.model:ModelConfig.get_vocab_size",
                "vllm.config.model:ModelConfig.get_num_layers",
                "vllm.config.model:ModelConfig.is_moe",
                "vllm.utils.math_utils:cdiv",
                "vllm.sampling_params:SamplingParams.for_sampler_warmup",
                "vllm.v1.sample.sampler:Sampler.apply_temperature",
                # a signature longer than a line: EXPECTED_PARAMETERS and the wrapper must wrap
                "vllm.model_executor.layers.rotary_embedding:get_rope",
            ]
        ),
        "despite_seam": BOOL,
        "why": st.text(string.ascii_letters + string.digits + " .,:;()'-_/#", min_size=1, max_size=MAX_TEXT_LENGTH),
        "remove_when": st.text(
            string.ascii_letters + string.digits + " .,:;()'-_/#", min_size=1, max_size=MAX_TEXT_LENGTH
        ),
        "on_mismatch": st.sampled_from(["raise", "skip"]),
        "reached_in": st.sampled_from(["front-end+worker", "worker", "front-end+engine-core+worker"]),
    },
}


@st.composite
def plugins(draw: st.DrawFn) -> tuple[str, str, dict[str, str], str, str, dict[str, str]]:
    """(seam, package name, its answers, seam added with `add`, component name, its answers)."""
    seam = draw(st.sampled_from(templated_keys()))
    package = draw(PACKAGE_NAMES.filter(_accepted))
    answers = draw(st.fixed_dictionaries({**ANSWERS["package"], **ANSWERS[seam]}))
    added = draw(st.sampled_from(templated_keys()))
    longest = min(names.MAX_NAME_LENGTH, names.MAX_MODULE_PATH_LENGTH - len(package) - 1)
    component_names = identifier(LOWER, LOWER + string.digits + "_", longest)
    component = draw(component_names.filter(_accepted).filter(lambda name: name != package))
    return seam, package, answers, added, component, draw(st.fixed_dictionaries(ANSWERS[added]))


def _accepted(name: str) -> bool:
    try:
        names.check_identifier(name, "NAME")
    except ScaffoldError:
        return False
    return True


def test_every_seam_has_answer_strategies() -> None:
    from vllm_scaffold.generate.rendering import questions

    for template in ["package", *templated_keys()]:
        asked = {key for key, question in questions(template).items() if question.get("when") is not False}
        assert asked == set(ANSWERS[template]), template


@settings(
    max_examples=int(os.environ.get("VLLMSCAFFOLD_PROPERTY_EXAMPLES", "12")),
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # no shrinking: a failure is reported as drawn
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(plugin=plugins())
def test_generated_packages_lint_compile_install_and_import(plugin, tmp_path_factory: pytest.TempPathFactory) -> None:
    seam, package, answers, added, component, added_answers = plugin
    root = tmp_path_factory.mktemp("property") / package
    try:
        new_package(seam, package, root, answers, dry_run=False)
        add_to_project(added, component, root, added_answers, dry_run=False)
    except ScaffoldError as error:
        # Only a template validator may refuse a drawn answer (a name vLLM already uses): draw another.
        assert "--data" in error.fix or "choose" in error.fix, error
        reject()
    run = {"cwd": root, "capture_output": True, "text": True}
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], **run)
    assert lint.returncode == 0, f"{seam}/{package} + {added}/{component}:\n{lint.stdout}"
    formatted = subprocess.run([sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "."], **run)
    assert formatted.returncode == 0, f"{seam}/{package} + {added}/{component}:\n{formatted.stdout}"
    assert compileall.compile_dir(root, quiet=1, force=True)

    site = root.parent / "site"
    install = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--target", site, "."]
    installed = subprocess.run(install, **run)
    assert installed.returncode == 0, installed.stderr
    modules = [package, f"{package}.vllm_plugin", f"{package}.{templated_seam(seam).module}", f"{package}.{component}"]
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    env = {**os.environ, "PYTHONPATH": str(site)}
    # From the scratch folder, away from the source tree: the modules come from the installed copy.
    imported = subprocess.run([sys.executable, "-c", code, *modules], **{**run, "cwd": site, "env": env})
    assert imported.returncode == 0, imported.stderr


def test_a_long_name_pushes_words_into_the_next_line_of_its_paragraph_not_onto_a_line_of_their_own() -> None:
    name = "speculative_decoding_acceptance_sampler"
    source = (
        f"# The plugin {name} registers its backend in every process of the engine;\n"
        "# the workers read it back.\n"
        "# - a bullet stays a paragraph of its own\n"
        "def f() -> None:\n"
        f'    """Runs {name} once per process, before the model is built, in every worker\n'
        "    that vLLM starts.\n"
        "\n"
        "    A second paragraph.\n"
        '    """\n'
    )
    wrapped = wrap_prose(source, 60).splitlines()
    assert all(len(line) <= 60 for line in wrapped), wrapped
    assert wrapped[:4] == [
        "# The plugin speculative_decoding_acceptance_sampler",
        "# registers its backend in every process of the engine; the",
        "# workers read it back.",
        "# - a bullet stays a paragraph of its own",
    ]
    assert wrapped[5:9] == [
        '    """Runs speculative_decoding_acceptance_sampler once per',
        "    process, before the model is built, in every worker that",
        "    vLLM starts.",
        "",
    ]


def test_a_template_file_copied_as_it_is_has_its_prose_wrapped_already() -> None:
    """A template without Jinja renders alike for every name, so its comments and docstrings are written within
    the generated line length: one that is not costs every generated package another formatter pass."""
    pyproject = (templates_root() / "package" / "pyproject.toml.jinja").read_text(encoding="utf-8")
    ruff_table = pyproject[pyproject.index("[tool.ruff]") :].split("\n[", 1)[0]
    width = tomllib.loads(ruff_table)["tool"]["ruff"]["line-length"]
    static = list(templates_root().rglob("*.py"))
    assert static, "the package skeleton copies at least one Python file as it is"
    unwrapped = [
        str(path)
        for path in static
        if wrap_prose(path.read_text(encoding="utf-8"), width) != path.read_text(encoding="utf-8")
    ]
    assert not unwrapped, f"wrap the prose of {unwrapped} to {width} columns"
