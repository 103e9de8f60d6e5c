"""Where the installed vLLM calls a name (`doctor/reading/callers.py`): call sites read from source text, with
the class and function they sit in, their arguments, and whether they call through self; kept on disk."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import build_file_tree
from vllm_scaffold.doctor.reading.callers import CallSite, CallSites, scan

SOURCES = {
    "vllm/__init__.py": "",
    "vllm/engine.py": """
        from vllm import helpers
        from vllm.helpers import prepare as prep


        class Engine:
            def step(self, batch):
                self.schedule(batch, now=True)
                # self.schedule(commented_out)
                helpers.prepare(batch)
                return prep(*batch)

            def schedule(self, batch, now=False):
                pass


        def run():
            Engine().schedule([])


        ENGINE = make_engine(Engine, name="default")
        """,
    "vllm/helpers.py": """
        def prepare(batch):
            '''Called as prepare(batch) by the engine.'''
            return batch


        HOOKS = [prepare]
        """,
}


def _sites(tmp_path: Path) -> CallSites:
    root = build_file_tree(SOURCES, tmp_path / "src")
    return CallSites(root / "vllm", "0.0.1", tmp_path / "cache")


def test_scan_reads_each_call_with_its_place_and_arguments(tmp_path: Path) -> None:
    root = build_file_tree(SOURCES, tmp_path / "src")
    assert scan(root / "vllm", "schedule") == [
        CallSite("vllm.engine", "vllm.engine.Engine", "step", True, 7, 1, ("now",), False),
        CallSite("vllm.engine", None, "run", False, 17, 1, (), False),
    ]  # the comment and the definition are not calls


def test_a_spread_call_may_pass_anything(tmp_path: Path) -> None:
    sites = _sites(tmp_path).of("prep")
    assert [(s.function, s.spread) for s in sites] == [("step", True)]


def test_receivers_and_imports_tell_a_module_function_from_a_method(tmp_path: Path) -> None:
    calls = _sites(tmp_path)
    prepare = [s for s in calls.of("prepare") if s.module == "vllm.engine"]
    assert [(s.line, calls.receiver(s, "prepare")) for s in prepare] == [(9, "helpers")]
    assert calls.imports("vllm.engine") == {"helpers": "vllm.helpers", "prep": "vllm.helpers.prepare"}
    docstring = [s for s in calls.of("prepare") if s.module == "vllm.helpers"]
    assert [calls.bare(s, "prepare") for s in docstring] == [False]  # text in a docstring is no call


def test_top_level_calls_and_mentions(tmp_path: Path) -> None:
    calls = _sites(tmp_path)
    [site] = calls.of("make_engine")
    found = calls.top_level_call(site, "make_engine")
    assert found is not None and found[0].lineno == 20
    [inside] = [s for s in calls.of("schedule") if s.function == "run"]
    assert calls.top_level_call(inside, "schedule") is None
    assert calls.mentioned("prepare")  # HOOKS = [prepare]
    assert not calls.mentioned("schedule")
    assert calls.mentions("vllm.engine", frozenset({"Engine"}))


def test_what_was_scanned_is_kept_for_the_next_run(tmp_path: Path) -> None:
    calls = _sites(tmp_path)
    first = calls.of("schedule")
    calls.save()
    again = CallSites(calls.source, "0.0.1", tmp_path / "cache")
    assert again.known == {"schedule": first}
    assert not again.dirty
