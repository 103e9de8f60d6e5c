"""An override that renames a parameter vLLM's method takes by position or keyword.

`override_problem` (doctor/releases/signatures.py) takes a parameter of the base that the override lacks by
name as reached by position when the override has a parameter at that position: right for the calls that
pass it by position, wrong for those that pass it by keyword, where the call raises TypeError ("unexpected
keyword argument"): vLLM 0.32's GPU model runner, for one, calls `model.embed_multimodal(**mm_kwargs_batch)`,
so a multimodal model renaming one of those parameters fails every multimodal request. `renamed_problem` names the
renaming, so that the release check can follow vLLM's calls of the method (OverrideCallers.can_call binds
each call site's positional count and keywords to the override) and report only where a call passes the
parameter by its vLLM name.
"""

from __future__ import annotations

from vllm_scaffold.vllm_facts import Signature


def renamed(base: Signature, override: Signature) -> list[tuple[str, str]]:
    """(vLLM's name, the override's name) for each positional-or-keyword parameter of `base` that the override
    takes at the same position under another name, without a **kwargs that would catch the old name."""
    theirs, mine = base.bound(), override.bound()
    if mine.varkw:
        return []
    found = []
    for position, param in enumerate(theirs.positional):
        if param.kind != "positional" or mine.param(param.name) is not None or position >= len(mine.positional):
            continue
        found.append((param.name, mine.positional[position].name))
    return found


def renamed_problem(base: Signature, override: Signature) -> str | None:
    """Why a call of the base's signature that passes a parameter by keyword cannot call the override; None
    when the override keeps every name vLLM may pass by keyword."""
    pairs = renamed(base, override)
    if not pairs:
        return None
    shown = ", ".join(f"'{theirs}' as '{mine}'" for theirs, mine in pairs)
    return f"it names vLLM's parameter {shown}, which vLLM may pass by keyword"
