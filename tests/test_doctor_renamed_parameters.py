"""An override renaming a parameter vLLM may pass by keyword is named, for the release check to follow."""

from __future__ import annotations

import pytest

from vllm_scaffold.doctor.releases.signatures import renamed, renamed_problem
from vllm_scaffold.vllm_facts import Signature


@pytest.mark.parametrize(
    ("base", "override", "pairs"),
    [
        # a parameter at the same position under another name: a call passing vLLM's name by keyword fails
        ("self,input_ids,positions", "self,input_ids,pos", [("positions", "pos")]),
        # the same names, or a **kwargs catching the old name: nothing to report
        ("self,input_ids,positions", "self,input_ids,positions", []),
        ("self,input_ids,positions", "self,input_ids,pos,**kwargs", []),
        # a positional-only parameter of vLLM's is never passed by keyword
        ("self,x,/,y", "self,z,/,y", []),
        # an override with fewer positional parameters is override_problem's case, not a renaming
        ("self,a,b", "self,a", []),
    ],
)
def test_renamed_parameters(base: str, override: str, pairs: list[tuple[str, str]]) -> None:
    assert renamed(Signature.parse(base), Signature.parse(override)) == pairs


def test_the_problem_names_each_renaming() -> None:
    problem = renamed_problem(Signature.parse("self,x,mm_data"), Signature.parse("self,x,multi_modal_data"))
    assert problem == "it names vLLM's parameter 'mm_data' as 'multi_modal_data', which vLLM may pass by keyword"
    assert renamed_problem(Signature.parse("self,x"), Signature.parse("self,x")) is None
