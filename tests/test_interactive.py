"""`new` and `add` without SEAM or NAME: asked on a terminal (driven through a pseudo-terminal the way a user
types, at 80 columns), refused with a one-line error everywhere else."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.helpers import run_cli, snapshot
from tests.terminal import Terminal, flat
from vllm_scaffold.catalog import load_catalog
from vllm_scaffold.generate.rendering import questions
from vllm_scaffold.terminal.seam_picker import SeamPicker

CATALOG = load_catalog()
SEAM_QUESTION = "Which seam should the new package plug into?"


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A short scratch directory instead of pytest's: the paths these tests read on an 80-column screen then fit
    on one line. Pytest's own (longer under pytest-xdist: `.../popen-gw1/<test name>`) is one word wider than
    the screen, which the program can only break mid-word."""
    scratch = Path(tempfile.mkdtemp(prefix="vs-"))
    yield scratch
    shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    """Every Terminal a test opens, closed (the program killed if still running) when it ends."""
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


@pytest.fixture
def run(terminals: list[Terminal], tmp_path: Path):
    def start(*args: str, cwd: Path = tmp_path, rows: int = 30) -> Terminal:  # always 80 columns
        terminal = Terminal(*args, cwd=cwd, rows=rows)
        terminals.append(terminal)
        return terminal

    return start


def listed_order() -> list[str]:
    """Seam keys in the order the list shows them: by category, then by catalog order."""
    return [seam.key for seam in SeamPicker("", list(CATALOG.values()), {}).seams]


def accept_defaults(terminal: Terminal, template: str) -> None:
    """Presses Enter at each question `template` asks, once that question is on the screen."""
    for key, spec in questions(template).items():
        if "when" not in spec:
            terminal.wait_for(f"{key}:")
            terminal.press("enter")


def test_typing_matches_keys_and_titles_first_then_what_a_seam_says() -> None:
    picker = SeamPicker("", list(CATALOG.values()), {})
    picker.type("kv")
    assert [seam.key for seam in picker.shown()] == ["kv-connector", "kv-offload"]
    picker.type("cache")  # in no key or title: the summaries and process lists decide, not the category names
    found = {seam.key for seam in picker.shown()}
    assert {"kv-connector", "attention-backend"} <= found and "logits-processor" not in found
    picker.type("zzq")
    assert picker.shown() == [] and picker.current() is None


def test_new_lists_every_seam_grouped_then_asks_name_and_the_seams_questions(run, tmp_path: Path) -> None:
    terminal = run("new", rows=48)  # every seam fits a 48-row terminal at once
    screen = terminal.wait_for(SEAM_QUESTION)
    for seam in CATALOG.values():  # every seam, title and key, under their category headings, at 80 columns
        assert seam.key in screen and seam.title in screen and seam.category in screen, seam.key
    first = CATALOG[listed_order()[0]]
    terminal.wait_for(f"{first.title} ({first.key})", first.summary, f"Runs in: {first.process_family.rstrip('.')}.")

    steps = listed_order().index("scheduler")
    terminal.press(*["down"] * steps)
    scheduler = CATALOG["scheduler"]
    runs_in, loaded = scheduler.process_family.rstrip("."), scheduler.load_timing.rstrip(".")
    terminal.wait_for("> scheduler", f"Runs in: {runs_in}.", f"Loaded: {loaded}.")
    terminal.press("enter")

    terminal.wait_for("Package name")
    terminal.answer("my-sched")
    terminal.wait_for("NAME 'my-sched' is not a valid Python identifier", "e.g. 'my_sched'")
    # Asked again holding the suggested name, not the refused one: Enter accepts it.
    terminal.wait_until(
        lambda lines: [line.strip() for line in lines if line.strip()][-1].endswith("my_sched"),
        "the package name asked again with the suggested name",
    )
    terminal.press("enter")

    terminal.wait_for("Questions about the package")
    accept_defaults(terminal, "package")
    terminal.wait_for(
        "Questions about the scheduler component my_sched", questions("scheduler")["priority_key"]["help"]
    )
    # The question's input holds its default once drawn: keys sent earlier can reach it before it clears (a busy
    # machine), and Ctrl-U would then clear nothing.
    terminal.wait_until(
        lambda lines: [line.strip() for line in lines if line.strip()][-1] == "priority_key: priority",
        "priority_key asked with its default",
    )
    terminal.answer("urgency!")
    # The question is asked again holding the refused answer; keys sent before it is drawn would be lost.
    terminal.wait_until(
        lambda lines: (
            any("priority_key must be an identifier" in line for line in lines)
            and [line.strip() for line in lines if line.strip()][-1] == "priority_key: urgency!"
        ),
        "priority_key asked again with the refused answer",
    )
    terminal.answer("urgency")
    terminal.wait_for("max_wait_s:")
    terminal.answer("2.5")
    terminal.wait_for(f"created {tmp_path / 'my_sched'}")
    assert terminal.exit_status() == 0

    record = yaml.safe_load((tmp_path / "my_sched/.vllm-scaffold/scheduler-my_sched.yml").read_text())
    assert record["answers"]["priority_key"] == "urgency" and record["answers"]["max_wait_s"] == 2.5
    manifest = tomllib.loads((tmp_path / "my_sched/pyproject.toml").read_text())["tool"]["vllm-scaffold"]
    assert [component["seam"] for component in manifest["components"]] == ["scheduler"]


def test_a_short_terminal_scrolls_the_list_and_shows_a_scroll_bar(run) -> None:
    order = listed_order()
    terminal = run("new", rows=24)
    first = CATALOG[order[0]]
    terminal.wait_for(SEAM_QUESTION, f"> {order[0]}", f"Loaded: {first.load_timing.rstrip('.')}.")
    terminal.wait_until(lambda lines: any(len(line) == 80 and line.endswith("v") for line in lines), "scroll bar")
    assert not any(line.startswith(f"  {order[-1]} ") for line in terminal.lines())  # below the fold
    terminal.press(*["down"] * (len(order) - 1))
    terminal.wait_for(f"> {order[-1]}", f"{CATALOG[order[-1]].title} ({order[-1]})")
    assert not any(line.startswith(f"  {order[0]} ") for line in terminal.lines())  # scrolled out at the top
    terminal.press("ctrl-c")
    assert terminal.exit_status() == 130


def test_typing_narrows_the_list_and_ctrl_c_at_the_name_leaves_nothing(run, tmp_path: Path) -> None:
    terminal = run("new")
    terminal.wait_for(SEAM_QUESTION)
    terminal.type("kv")
    screen = terminal.wait_for("filter: kv", "> kv-connector", "KV connector (kv-connector)")
    rows = [line for line in screen.splitlines() if line.startswith(("> ", "  ")) and "  " in line.strip()]
    assert not any("attention-backend" in row for row in rows), screen
    terminal.press("enter")
    terminal.wait_for("Package name (its import name, e.g. my_kv)")
    terminal.type("half_typed")
    terminal.press("ctrl-c")
    terminal.wait_for("error: interrupted; nothing was written")
    assert terminal.exit_status() == 130
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_at_a_seam_question_removes_the_half_made_package(run, tmp_path: Path) -> None:
    terminal = run("new", "attention-backend")  # SEAM given: only NAME and the questions are asked
    terminal.wait_for("Package name")
    terminal.answer("my_attn")
    accept_defaults(terminal, "package")
    help_text = questions("attention-backend")["backend_name"]["help"]
    terminal.wait_for(help_text, "backend_name: CUSTOM")  # the whole help, word-wrapped at 80 columns
    terminal.answer("flash_attn")
    terminal.wait_for("backend_name 'flash_attn' must be upper-case letters", "e.g. FLASH_ATTN")
    terminal.press("ctrl-c")
    terminal.wait_for("error: interrupted; nothing was written")
    assert terminal.exit_status() == 130
    assert list(tmp_path.iterdir()) == []  # neither the package nor its scratch directory


def test_long_help_and_refusals_wrap_at_80_columns_on_word_boundaries(run, tmp_path: Path) -> None:
    """A line cut at the terminal's edge splits a word, and the split word no longer reads whole on the screen."""
    terminal = run("new", "attention-backend", "my_attn")
    accept_defaults(terminal, "package")
    help_text = flat(questions("attention-backend")["cudagraph_support"]["help"])
    assert len(help_text) > 3 * 80
    terminal.wait_for("backend_name: CUSTOM")
    terminal.answer("custom")
    refusal = "backend_name 'custom' must be upper-case letters, digits and underscores starting with a letter"
    terminal.wait_for(refusal, "(vLLM upper-cases the name a user passes before looking it up), e.g. CUSTOM")
    terminal.answer("MY_ATTN")
    screen = terminal.wait_for(help_text, "cudagraph_support:", "NEVER", "UNIFORM_BATCH")
    assert all(len(line) <= 80 for line in screen.splitlines())
    assert sum(1 for line in screen.splitlines() if line.strip() and line.strip() in help_text) >= 4
    terminal.press("ctrl-c")
    assert terminal.exit_status() == 130


def test_the_next_line_wraps_between_words_on_a_terminal(run, tmp_path: Path) -> None:
    terminal = run("new", "general-plugin", "my_plugin", "--defaults")
    command = "pip install -e '.[test]' --find-links wheels && pytest"
    next_line = f"next: cd {tmp_path / 'my_plugin'}; install vLLM (README.md), then: {command}"
    assert len(next_line) > 80
    screen = terminal.wait_for(next_line)  # whole once line breaks read as spaces: no word is split
    assert terminal.exit_status() == 0
    assert all(len(line) <= 80 for line in screen.splitlines())


def test_a_question_with_two_valid_answers_is_a_choice_list(run, tmp_path: Path) -> None:
    terminal = run("new", "custom-op", "my_norm")
    terminal.wait_for("Questions about the package")
    accept_defaults(terminal, "package")
    titles = list(questions("custom-op")["op"]["choices"])
    terminal.wait_for("op:", *titles)  # both in-tree ops and what each is, not a free-text answer
    terminal.press("down", "enter")
    terminal.wait_for(f"created {tmp_path / 'my_norm'}")
    assert terminal.exit_status() == 0
    record = yaml.safe_load((tmp_path / "my_norm/.vllm-scaffold/custom-op-my_norm.yml").read_text())
    assert record["answers"]["op"] == "RMSNorm"


def test_add_shows_the_projects_components_and_refuses_a_taken_name(run, tmp_path: Path) -> None:
    assert run_cli("new", "general-plugin", "tracer", "--dest", str(tmp_path / "tracer"), "--defaults").exit_code == 0
    project = tmp_path / "tracer"
    terminal = run("add", cwd=project)
    terminal.wait_for(
        "Which seam should the new component of tracer plug into?",
        f"tracer ({project}) has 1 component: tracer (general-plugin, tracer.hooks) (* marks their seams)",
        "> general-plugin     General plugin  *",  # the first row is the seam it has
        "* this project has: tracer",
    )
    terminal.type("logits")
    terminal.wait_for("> logits-processor")
    terminal.press("enter")
    terminal.wait_for("Component name")
    terminal.answer("tracer")
    terminal.wait_for("the project already has a component named 'tracer'")
    terminal.answer("target_token")
    accept_defaults(terminal, "logits-processor")
    assert terminal.exit_status() == 0
    manifest = tomllib.loads((project / "pyproject.toml").read_text())["tool"]["vllm-scaffold"]
    assert [c["name"] for c in manifest["components"]] == ["tracer", "target_token"]


def test_the_bare_command_prints_the_help_and_offers_a_guided_start(run, tmp_path: Path) -> None:
    terminal = run()
    terminal.wait_for("Usage: vllm-scaffold", "Commands:", "Start now?", "Create a new plugin package")
    terminal.press("enter")
    terminal.wait_for(SEAM_QUESTION)
    terminal.press("ctrl-c")
    terminal.wait_for("error: interrupted; nothing was written")
    assert terminal.exit_status() == 130
    assert list(tmp_path.iterdir()) == []


def test_copier_still_asks_through_the_function_the_tool_stands_in_for() -> None:
    """The wrapped help and refusals rely on copier asking each question through questionary.unsafe_prompt."""
    import copier

    assert hasattr(sys.modules[copier.run_copy.__module__], "unsafe_prompt")


def test_defaults_on_a_terminal_ask_nothing(run, tmp_path: Path) -> None:
    terminal = run("new", "--defaults")
    terminal.wait_for("error: missing SEAM and NAME")
    assert terminal.exit_status() == 2
    assert SEAM_QUESTION not in terminal.text()


NO_TERMINAL = {
    "new without SEAM and NAME": (["new"], "missing SEAM and NAME"),
    "new without NAME": (["new", "general-plugin"], "missing NAME"),
    "new without NAME, with options": (["new", "general-plugin", "--dry-run"], "missing NAME"),
    "add without SEAM and NAME": (["add"], "missing SEAM and NAME"),
    "add without NAME": (["add", "logits-processor", "--project", "."], "missing NAME"),
}


@pytest.mark.parametrize("case", list(NO_TERMINAL))
def test_without_a_terminal_a_missing_argument_is_one_line_naming_list(case: str, tmp_path: Path) -> None:
    args, problem = NO_TERMINAL[case]
    before = snapshot(tmp_path)
    result = run_cli(*args, cwd=tmp_path)
    assert result.exit_code == 2, result.output
    message = result.stderr.strip()
    assert "\n" not in message and problem in message and "vllm-scaffold list" in message, message
    assert snapshot(tmp_path) == before


def test_from_a_pipe_nothing_is_asked(tmp_path: Path) -> None:
    """stdin a terminal is not enough: piped output (or input) means no one to answer."""
    scaffold = [sys.executable, "-m", "vllm_scaffold"]
    result = subprocess.run([*scaffold, "new"], cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "vllm-scaffold list" in result.stderr
    bare = subprocess.run(scaffold, cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    assert "Commands:" in bare.stdout + bare.stderr and "Start now?" not in bare.stdout + bare.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_typed_answer_is_refused_in_the_words_of_the_data_option(run, tmp_path: Path) -> None:
    """Typed answers go through the `--data` checker first (then the template's validator): the same reason."""
    data = run_cli("new", "io-processor", "my_io", "--dest", str(tmp_path / "data"), "--data", "max_texts=abc")
    assert data.exit_code == 2
    reason = "max_texts takes a whole number, got 'abc'"
    assert f"--data max_texts=abc: {reason}" in " ".join(data.stderr.split())
    terminal = run("new", "io-processor", "my_io", "--dest", "asked")
    accept_defaults(terminal, "package")
    terminal.wait_for("max_texts:")
    terminal.answer("abc")
    terminal.wait_for(reason)
    terminal.answer("0")  # a whole number, out of the template's range: its own validator speaks
    terminal.wait_for("max_texts 0 must be between 1 and 4096")
    terminal.answer("8")
    terminal.wait_for(f"created {tmp_path / 'asked'}")
    assert terminal.exit_status() == 0
    assert (tmp_path / "asked" / "pyproject.toml").is_file()
