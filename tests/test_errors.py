"""Bad input: one line naming the problem and the fix, exit code 2, and the file tree untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run_cli, snapshot


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A generated package, a non-empty directory and a broken project, side by side."""
    assert run_cli("new", "general-plugin", "tracer", "--dest", str(tmp_path / "tracer"), "--defaults").exit_code == 0
    (tmp_path / "occupied").mkdir()
    (tmp_path / "occupied" / "notes.txt").write_text("keep me\n")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "pyproject.toml").write_text('[project\nname = "broken"\n')
    (tmp_path / "bare").mkdir()
    clash = tmp_path / "clash"
    (clash / "src" / "clash").mkdir(parents=True)
    (clash / "src" / "clash" / "__init__.py").write_text("")
    (clash / "pyproject.toml").write_text(
        '[project]\nname = "clash"\nversion = "1"\n\n'
        '[project.entry-points."vllm.logits_processors"]\nboost = "elsewhere:Boost"\n'
    )
    return tmp_path


CASES = {
    "unknown seam": (["new", "atention-backend", "x", "--defaults"], "unknown seam 'atention-backend'", "attention-backend"),
    "unknown seam on add": (["add", "schedular", "x", "--project", "tracer"], "unknown seam", "scheduler"),
    "name not an identifier": (["new", "general-plugin", "my-plugin", "--defaults"], "not a valid Python identifier", "my_plugin"),
    "name starts with a digit": (["new", "general-plugin", "1plugin", "--defaults"], "not a valid Python identifier", "lower-case"),
    "name is a keyword": (["new", "general-plugin", "class", "--defaults"], "is a Python keyword", "choose another name"),
    "name shadows a module": (["new", "general-plugin", "torch", "--defaults"], "would shadow the module 'torch'", "choose another name"),
    "module clash on add": (["add", "general-plugin", "hooks", "--project", "tracer", "--defaults"], "module 'tracer.hooks' already exists", "choose another NAME"),
    "component clash on add": (["add", "general-plugin", "tracer", "--project", "tracer", "--defaults"], "already has a component named 'tracer'", "choose another NAME"),
    "entry point clash on add": (["add", "logits-processor", "boost", "--project", "clash", "--defaults"], "entry point 'boost' already exists", "choose another NAME"),
    "dest not empty": (["new", "general-plugin", "x", "--dest", "occupied", "--defaults"], "exists and is not empty", "--dest"),
    "dest under a file": (["new", "general-plugin", "x", "--dest", "occupied/notes.txt/sub", "--defaults"], "notes.txt, a file", "choose a path under a directory"),
    "dest the system refuses": (["new", "general-plugin", "x", "--dest", "/proc/nope", "--defaults"], "/proc/nope cannot be created", "choose a directory you can write with --dest"),
    "no pyproject": (["add", "general-plugin", "x", "--project", "bare", "--defaults"], "no pyproject.toml", "vllm-scaffold new"),
    "pyproject does not parse": (["add", "general-plugin", "x", "--project", "broken", "--defaults"], "does not parse", "fix the TOML"),
    "data key not a question": (["new", "general-plugin", "x", "--defaults", "--data", "colour=blue"], "--data key 'colour' is not a question", "valid keys"),
    "data not key=value": (["new", "general-plugin", "x", "--defaults", "--data", "colour"], "is not KEY=VALUE", "--data KEY=VALUE"),
    "data value fails validator": (["new", "general-plugin", "x", "--defaults", "--data", "vllm_range=0.32"], "--data vllm_range=0.32: '0.32' is not a PEP 440", "pass another value with --data vllm_range="),
    "vllm_range not PEP 440": (["new", "general-plugin", "x", "--defaults", "--data", "vllm_range=>=0.32,<<0.34"], "is not a PEP 440 version specifier", "--data vllm_range="),
    "vllm_range with no verified release": (["new", "general-plugin", "x", "--defaults", "--data", "vllm_range=>=0.40"], "contains no vLLM release the templates were verified on", "include at least one"),
    "name too long": (["new", "general-plugin", "a" * 41, "--defaults"], "is 41 characters long, more than the 40 allowed", "choose a shorter name"),
    "component name too long on add": (["add", "general-plugin", "b" * 41, "--project", "tracer", "--defaults"], "more than the 40 allowed", "choose a shorter name"),
    "int answer not a whole number": (["new", "io-processor", "x", "--defaults", "--data", "max_texts=abc"], "--data max_texts=abc: max_texts takes a whole number, got 'abc'", "--data max_texts=16"),
    "int answer a fraction": (["new", "io-processor", "x", "--defaults", "--data", "max_texts=2.5"], "max_texts takes a whole number, got '2.5'", "--data max_texts=16"),
    "float answer not a number": (["new", "scheduler", "x", "--defaults", "--data", "max_wait_s=soon"], "--data max_wait_s=soon: max_wait_s takes a number, got 'soon'", "--data max_wait_s=10.0"),
    "float answer not finite": (["new", "scheduler", "x", "--defaults", "--data", "max_wait_s=nan"], "max_wait_s takes a number, got 'nan'", "--data max_wait_s=10.0"),
    "bool answer maybe": (["new", "attention-backend", "x", "--defaults", "--data", "sliding_window=maybe"], "--data sliding_window=maybe: sliding_window takes true or false", "--data sliding_window=true"),
    "bool answer on add": (["add", "lora-resolver", "adapters", "--project", "tracer", "--defaults", "--data", "check_base_model=sure"], "check_base_model takes true or false (also yes/no, on/off, 1/0), got 'sure'", "--data check_base_model=true"),
    "choice not offered": (["new", "attention-backend", "x", "--defaults", "--data", "cudagraph_support=ALWAYS"], "cudagraph_support takes one of NEVER, UNIFORM_SINGLE_TOKEN_DECODE, UNIFORM_BATCH, got 'ALWAYS'", "--data cudagraph_support=NEVER"),
    "choice in the wrong case": (["new", "logits-processor", "x", "--defaults", "--data", "param_type=INT"], "param_type takes one of int, list[int], got 'INT'", "--data param_type=int"),
    "text answer with a quote": (["new", "general-plugin", "x", "--defaults", "--data", 'description=the "fast" plugin'], "description takes text without a double quote", "--data description="),
    "text answer with a line break": (["new", "general-plugin", "x", "--defaults", "--data", "description=two\nlines"], "description takes text without a line break", "--data description="),
    "text answer too long": (["new", "kv-connector", "x", "--defaults", "--data", "connector_name=" + "A" * 65], "connector_name takes at most 64 characters, got 65", "--data connector_name="),
    "patch target gone in a release": (["new", "patch", "x", "--defaults", "--data", "target=vllm.v1.sample.sampler:Sampler.forward", "--data", "vllm_range=>=0.31.0"], "has no module vllm.v1.sample.sampler", "narrow the package's vllm range to '>=0.31.0,<=0.33.0'"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_exit_2_and_writes_nothing(case: str, workspace: Path) -> None:
    args, problem, fix = CASES[case]
    before = snapshot(workspace)
    result = run_cli(*args, cwd=workspace)
    assert result.exit_code == 2, result.output
    message = result.stderr.strip()
    assert "\n" not in message, message
    assert problem in message and fix in message, message
    assert snapshot(workspace) == before


def test_seam_without_template_says_so(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from vllm_scaffold import catalog

    real = catalog.load_catalog()
    untemplated = {**real, "scheduler": dataclasses.replace(real["scheduler"], template=None)}
    monkeypatch.setattr(catalog, "load_catalog", lambda: untemplated)
    before = snapshot(workspace)
    result = run_cli("new", "scheduler", "x", "--defaults", cwd=workspace)
    assert result.exit_code == 2
    assert "seam 'scheduler' has no template yet" in result.stderr and "\n" not in result.stderr.strip()
    assert snapshot(workspace) == before


def test_component_module_path_too_long_on_add(tmp_path: Path) -> None:
    package = "p" * 40
    assert run_cli("new", "general-plugin", package, "--dest", str(tmp_path / package), "--defaults").exit_code == 0
    before = snapshot(tmp_path)
    result = run_cli("add", "platform", "c" * 24, "--project", str(tmp_path / package), "--defaults")
    assert result.exit_code == 2
    message = result.stderr.strip()
    assert "\n" not in message
    assert f"the module path '{package}.{'c' * 24}' is 65 characters long, more than the 64 allowed" in message
    assert "choose a NAME of at most 23 characters" in message
    assert snapshot(tmp_path) == before
