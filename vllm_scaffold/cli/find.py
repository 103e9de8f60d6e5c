"""`vllm-scaffold find QUERY`: which seam reaches a piece of vLLM, or the smallest route when none does."""

from __future__ import annotations

from typing import Annotated

import typer


def command(
    query: Annotated[
        str,
        typer.Argument(
            help="A vLLM symbol (vllm.v1.sample.sampler.Sampler.forward), a file path in vLLM "
            "(vllm/v1/worker/gpu_model_runner.py), or plain words ('kv cache offload').",
            show_default=False,
        ),
    ],
    release: Annotated[
        str | None,
        typer.Option(
            "--vllm", metavar="VERSION", help="Answer for this shipped release (default: the newest engine-tested)."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the answer as JSON.")] = False,
) -> None:
    """Name the seam that reaches a vLLM symbol or topic.

    QUERY is a symbol, a file in vLLM or plain words; the answer gives the command, or the smallest route.
    """
    from vllm_scaffold.cli.options import reporting

    with reporting():
        from vllm_scaffold import vllm_facts
        from vllm_scaffold.route.find import find

        asked = None if release is None else vllm_facts.Named(release, fetch=False)
        answer = find(query, vllm_facts.which_release(asked).index)
    if as_json:
        import json

        typer.echo(json.dumps({"query": answer.query, "vllm": answer.release, "route": answer.route,
                               "command": answer.command, "lines": answer.lines}, indent=2))  # fmt: skip
        return
    from vllm_scaffold.terminal import console

    console.lines([f"vLLM {answer.release}:", *answer.lines])
