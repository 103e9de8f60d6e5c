"""`vllm-scaffold explain KEY`: one catalog entry in prose: a seam, or a registry without a template."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from vllm_scaffold.cli.options import reporting

if TYPE_CHECKING:
    from vllm_scaffold.catalog import Registry


def command(
    seam: Annotated[str, typer.Argument(metavar="SEAM", help="Seam or registry key ('vllm-scaffold list --all').")],
) -> None:
    """Explain one seam, or a registry of vLLM.

    Which processes load it and when, how a user selects it, what breaks silently, and for a seam the
    --data keys its template asks.
    """
    with reporting():
        from vllm_scaffold.catalog import docs_page, get_seam, load_catalog, load_registries
        from vllm_scaffold.terminal import console

        registries = load_registries()
        registry = registries.get(seam)
        if seam not in load_catalog() and registry is None:
            _refuse_unknown(seam, [*load_catalog(), *registries])
        if seam not in load_catalog() and registry is not None and registry.status != "templated":
            console.paragraphs(_registry_text(registry))
            return
        entry = get_seam(registry.seam if registry is not None and registry.seam else seam)
        page = docs_page(entry.key)
        text = [
            f"# {entry.title} ({entry.key})",
            "",
            entry.summary,
            "",
            # A field stating a fact may end its sentence itself.
            f"Registration: {entry.api.rstrip('.')}.",
            f"Loaded by: {entry.process_family.rstrip('.')}.",
            f"When: {entry.load_timing.rstrip('.')}.",
            f"Duplicates: {entry.duplicate_policy.rstrip('.')}.",
            "",
            "How a user selects it:",
            *(f"  - {line}" for line in entry.selection),
            "",
            "Pitfalls:",
            *(f"  - {line}" for line in entry.pitfalls),
            "",
            f"Template: {'vllm-scaffold new ' + entry.key + ' NAME' if entry.has_template else 'none yet'}.",
        ]
        if entry.has_template:
            from vllm_scaffold.cli.options import data_keys

            text += ["", *data_keys(entry.key, with_package=False)]
        if page:
            text += ["", "More, with the generated files and what to check (shipped with vllm-scaffold):"]
        console.paragraphs(text)
        if page:
            console.lines([str(page)])  # one word: a path is never broken


def _refuse_unknown(key: str, keys: list[str]) -> None:
    import difflib

    from vllm_scaffold.errors import ScaffoldError

    close = difflib.get_close_matches(key, keys, n=1, cutoff=0.5)
    hint = f"did you mean '{close[0]}'?" if close else "run 'vllm-scaffold list --all' for the keys"
    raise ScaffoldError(f"unknown seam or registry '{key}'", hint)


def _registry_text(registry: Registry) -> list[str]:
    """An explained registry in the seams' layout; an internal one with why a plugin should leave it alone."""
    symbols = [*registry.registration, *([f"entry-point group {registry.group}"] if registry.group else [])]
    checked = f"Checked against the source of vLLM {', '.join(registry.releases)} ({registry.source})."
    head = [f"# {registry.title} ({registry.key})", "", registry.summary, ""]
    if registry.status == "internal":
        return [
            *head,
            f"Internal to vLLM: {registry.reason}.",
            "",
            "Registered through:",
            *(f"  - {symbol}" for symbol in symbols),
            "",
            "Template: none (not a plugin seam).",
            checked,
        ]
    return [
        *head,
        f"Registration: {registry.call}.",
        f"Loaded by: {registry.processes.rstrip('.')}.",
        f"Duplicates: {registry.duplicate_policy.rstrip('.')}.",
        "",
        "How a user selects it:",
        *(f"  - {line}" for line in registry.selection),
        "",
        "Pitfalls:",
        *(f"  - {line}" for line in registry.pitfalls),
        "",
        "Registered through:",
        *(f"  - {symbol}" for symbol in symbols),
        "",
        "Template: none yet.",
        checked,
    ]
