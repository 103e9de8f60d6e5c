"""The signature rules doctor applies to vLLM's functions and a plugin's overrides of them, shared by the
release check (`check`) and the check of which overrides vLLM really calls (`override_callers`)."""

from __future__ import annotations

from vllm_scaffold.vllm_facts import Signature


def call_problem(signature: Signature, positional: int, keywords: list[str]) -> str | None:
    """Why a call passing `positional` arguments and `keywords` to `signature` raises; None when it binds."""
    params = signature.params
    takes = signature.positional
    if positional > len(takes) and not signature.varargs:
        return f"it takes {len(takes)} positional arguments, the call passes {positional}"
    filled = {p.name for p in takes[:positional]}
    for keyword in keywords:
        param = signature.param(keyword)
        if (param is None or param.kind == "posonly") and not signature.varkw:
            return f"it has no parameter '{keyword}'"
        if keyword in filled and param is not None and param.kind != "posonly":
            return f"the call passes '{keyword}' both by position and by keyword"
    given = filled | set(keywords)
    missing = [
        p.name
        for p in params
        if p.kind in {"positional", "posonly", "kwonly"} and not p.has_default and p.name not in given
    ]
    if missing:
        return f"the call does not pass {', '.join(missing)}"
    return None


def override_problem(base: Signature, override: Signature) -> str | None:
    """Why vLLM, calling the base's signature, cannot call the override; None when it can."""
    if base.decorator != override.decorator and {base.decorator, override.decorator} & {"c", "s"}:
        return None
    base_bound, mine = base.bound(), override.bound()
    required = [p for p in mine.positional if not p.has_default]
    beyond = [p for p in required[len(base_bound.positional) :] if not _passed_by_keyword(base_bound, p.name)]
    if beyond and not base_bound.varargs:  # a base taking *args passes any; its keyword-only ones fill by name
        return f"it requires {len(required)} positional arguments, vLLM passes at most {len(base_bound.positional)}"
    base_required = [p for p in base_bound.positional if not p.has_default]
    # With **kwargs, the rest binds where vLLM passes them by name (`apply(layer=..., x=...)`): only a call
    # site passing them by position fails, which the base's signature alone does not show.
    if len(base_required) > len(mine.positional) and not mine.varargs and not mine.varkw:
        return f"vLLM passes {len(base_required)} positional arguments, it takes {len(mine.positional)}"
    for param in base_bound.params:
        if param.kind in {"kwonly", "positional"} and mine.param(param.name) is None and not mine.varkw:
            if param.kind == "positional" and (
                mine.varargs or base_bound.positional.index(param) < len(mine.positional)
            ):
                continue  # reached by position
            return f"it does not take the argument '{param.name}', which vLLM may pass by keyword"
    for param in mine.params:
        if param.kind == "kwonly" and not param.has_default and base_bound.param(param.name) is None:
            return f"it requires the keyword argument '{param.name}', which vLLM never passes"
    return None


def _passed_by_keyword(base: Signature, name: str) -> bool:
    param = base.param(name)
    return param is not None and param.kind == "kwonly"
