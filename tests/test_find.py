"""`find`: a table of queries (vLLM symbols, file paths, plain words) and the route each must get, read from
the catalog and a shipped release index alone."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import run_cli
from vllm_scaffold import vllm_facts
from vllm_scaffold.catalog.registries import load_registries
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.route import find as find_module
from vllm_scaffold.route.find import Candidate, find, registry_candidates

# query -> (route, the command, or a piece of it): what `find` must answer on 0.32.0.
QUERIES: dict[str, tuple[str, str]] = {
    # symbols
    "vllm.v1.core.sched.scheduler.Scheduler.schedule": ("scheduler", "vllm-scaffold new scheduler NAME"),
    "vllm.v1.core.sched.async_scheduler.AsyncScheduler": ("scheduler", "vllm-scaffold new scheduler NAME"),
    "vllm.model_executor.layers.layernorm.RMSNorm.forward_cuda": ("custom-op", "vllm-scaffold new custom-op NAME"),
    "vllm.v1.attention.backends.flash_attn.FlashAttentionImpl.forward": ("attention-backend", "new attention-backend"),
    "vllm.model_executor.layers.quantization.fp8.Fp8LinearMethod.apply": ("quantization", "new quantization NAME"),
    "vllm.model_executor.layers.quantization:register_quantization_config": ("quantization", "new quantization"),
    "vllm.distributed.kv_transfer.kv_connector.v1.base.KVConnectorBase_V1": ("kv-connector", "new kv-connector"),
    "vllm.platforms.interface.Platform.check_and_update_config": ("platform", "new platform NAME"),
    "vllm.v1.metrics.loggers.LoggingStatLogger.record": ("stat-logger", "new stat-logger NAME"),
    "vllm.lora.resolver.LoRAResolver": ("lora-resolver", "new lora-resolver NAME"),
    "collective rpc on every worker": ("worker-extension", "new worker-extension NAME"),
    "kv offloading spec": ("kv-offload", "new kv-offload NAME"),
    "tool calls": ("tool-parser", "new tool-parser NAME"),
    "reasoning parser": ("reasoning-parser", "new reasoning-parser NAME"),
    "vllm.plugins.io_processors.interface.IOProcessor": ("io-processor", "new io-processor NAME"),
    "vllm.v1.sample.logits_processor.builtin.MinPLogitsProcessor.apply": ("logits-processor", "new logits-processor"),
    "vllm.model_executor.kernels.linear.scaled_mm.ScaledMMLinearKernel.Int8ScaledMMLinearKernel": (
        "linear-kernel",
        "new linear-kernel NAME",
    ),
    "vllm.v1.sample.sampler.Sampler.forward": (
        "patch",
        "vllm-scaffold add patch sampler_forward --data target=vllm.v1.sample.sampler:Sampler.forward",
    ),
    "vllm.v1.worker.gpu_model_runner:GPUModelRunner.execute_model": (
        "patch",
        "--data target=vllm.v1.worker.gpu_model_runner:GPUModelRunner.execute_model",
    ),
    "vllm.model_executor.models.llama.LlamaAttention.forward": ("model", "vllm-scaffold new model NAME"),
    "vllm.model_executor.models.registry.ModelRegistry.register_model": ("model", "new model NAME"),
    "vllm.engine.arg_utils.EngineArgs": ("fork", ""),
    "vllm.v1.attention.backends.utils.NULL_BLOCK_ID": ("fork", ""),
    "vllm.v1.engine.core.HANDSHAKE_TIMEOUT_MINS": ("general-plugin", "new general-plugin NAME"),
    # files
    "vllm/v1/worker/gpu_model_runner.py": ("patch", ""),
    "vllm/model_executor/layers/quantization/fp8.py": ("quantization", "new quantization NAME"),
    "vllm/distributed/kv_transfer/kv_connector/v1/lmcache_connector.py": ("kv-connector", "new kv-connector"),
    "vllm/v1/core/sched/scheduler.py": ("scheduler", "new scheduler NAME"),
    "csrc/attention/attention_kernels.cu": ("fork", ""),
    "./vllm/platforms/cuda.py": ("platform", "new platform NAME"),
    # words
    "kv cache offload": ("kv-offloading-spec", "new kv-offload NAME"),
    "disaggregated prefill": ("kv-connector", "new kv-connector NAME"),
    "my own quantization method": ("quantization", "new quantization NAME"),
    "prometheus metrics": ("stat-logger", "new stat-logger NAME"),
    "request priority scheduling": ("scheduler", "new scheduler NAME"),
    "a new model architecture": ("model", "new model NAME"),
    "ban some tokens when sampling": ("logits-processor", "new logits-processor NAME"),
    "an extra HTTP route on the api server": ("endpoint", "new endpoint NAME"),
    "load lora adapters on demand": ("lora-resolver", "new lora-resolver NAME"),
    "new accelerator device": ("platform", "new platform NAME"),
    "fused rmsnorm triton kernel": ("custom-op", "new custom-op NAME"),
    "w8a8 gemm kernel": ("linear-kernel", "new linear-kernel NAME"),
    "how do I add a custom sampler?": ("logits-processor", "new logits-processor NAME"),
    "sampler": ("logits-processor", "new logits-processor NAME"),
    "sampling temperature": ("logits-processor", "new logits-processor NAME"),
    "weather forecast": ("", ""),
}


@pytest.mark.parametrize("query", list(QUERIES))
def test_query_gets_its_route(query: str) -> None:
    route, command = QUERIES[query]
    answer = find(query, vllm_facts.shipped("0.32.0"))
    assert (answer.route, command in answer.command) == (route, True), "\n".join(answer.lines)
    assert len(answer.lines) <= 20  # one screen


def test_every_templated_seam_is_found_by_some_query() -> None:
    from vllm_scaffold.catalog import templated_keys

    assert set(templated_keys()) <= {route for route, _ in QUERIES.values()}


def test_cli_answers_in_text_and_json_and_refuses_what_vllm_lacks() -> None:
    result = run_cli("find", "vllm.v1.sample.sampler.Sampler.forward", "--vllm", "0.31.0")
    assert result.exit_code == 0
    assert "vllm-scaffold add patch sampler_forward" in result.stdout and "0.31.0" in result.stdout
    answer = json.loads(run_cli("find", "kv connector", "--json").stdout)
    assert answer["route"] == "kv-connector" and answer["vllm"].endswith(vllm_facts.default().version)
    for args in (["vllm.v1.no_such_module.Thing"], ["vllm/no/such/file.py"], ["x", "--vllm", "0.1.0"], ["   "]):
        result = run_cli("find", *args)
        assert result.exit_code == 2, (args, result.output)
        assert len(result.output.strip().splitlines()) == 1, result.output


def test_find_needs_no_vllm_and_help_loads_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from vllm_scaffold.cli import app\n"
        "for args in (['find', '--help'], ['triage', '--help'], ['find', 'vllm.v1.sample.sampler.Sampler.forward']):\n"
        "    try:\n        app(args)\n    except SystemExit:\n        pass\n"
        "print('HEAVY', [m for m in ('copier', 'jinja2', 'torch', 'vllm') if m in sys.modules])\n"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "HEAVY []" in output and "sampler_forward" in output


def test_the_catalog_s_registries_are_candidates_too() -> None:
    """Explained and internal registries (catalog/registries.toml) answer by symbol, file and words, with the
    `explain` command; a templated one gives its seam."""
    index = vllm_facts.shipped("0.32.0")
    expected = {
        "vllm.v1.kv_offload.tiering.factory.SecondaryTierFactory.register_tier": "kv-offload-tier",
        "tokenizer": "tokenizer",
        "sleep mode": "sleep-mode-backend",
    }
    for query, key in expected.items():
        answer = find(query, index)
        assert (answer.route, answer.command) == (key, f"vllm-scaffold explain {key}"), "\n".join(answer.lines)
    candidates = registry_candidates(load_registries().values())
    assert all(isinstance(candidate, Candidate) for candidate in candidates)
    assert {candidate.status for candidate in candidates} == {"templated", "explained", "internal"}


def test_a_seam_s_covers_route_its_classes_and_functions(monkeypatch: pytest.MonkeyPatch) -> None:
    """`covers` in a seam's catalog entry ("vllm.module:Qualname") routes the class's methods, and the
    function itself, to the seam."""
    import dataclasses

    from vllm_scaffold.catalog import load_catalog
    from vllm_scaffold.route import routing

    catalog = dict(load_catalog())
    covers = ("vllm.v1.sample.sampler:Sampler", "vllm.v1.sample.ops.topk_topp_sampler:apply_top_k_top_p")
    catalog["logits-processor"] = dataclasses.replace(catalog["logits-processor"], covers=covers)
    monkeypatch.setattr(routing, "load_catalog", lambda: catalog)
    monkeypatch.setattr(find_module, "load_catalog", lambda: catalog)
    index = vllm_facts.shipped("0.32.0")
    for query in ("vllm.v1.sample.sampler.Sampler.forward", "vllm.v1.sample.ops.topk_topp_sampler.apply_top_k_top_p"):
        assert find(query, index).route == "logits-processor", query


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("how do I add a custom sampler?", "why: 'sampler' in its vocabulary"),
        ("temperature", "why: 'temperature' in its vocabulary"),
        ("prometheus metrics", "why: 'metrics', 'prometheus' in its vocabulary"),
    ],
)
def test_words_say_which_words_matched_and_where(query: str, said: str) -> None:
    answer = find(query, vllm_facts.shipped("0.32.0"))
    whys = [line for line in answer.lines if line.strip().startswith("why:")]
    assert whys and said in whys[0], "\n".join(answer.lines)
    assert all(f"matches '{query}'" not in why for why in whys), "the why line only echoes the query"


def test_generic_words_alone_match_nothing() -> None:
    """ "custom", "plugin", "write"...: every question has them; they must not pick a seam by themselves."""
    with pytest.raises(ScaffoldError, match="has no word to search for"):
        find("how do I write a custom plugin?", vllm_facts.shipped("0.32.0"))


@pytest.mark.parametrize(
    "query", ["custom tool parser", "custom op", "fused rmsnorm triton kernel", "logits processor"]
)
def test_words_list_each_seam_once(query: str) -> None:
    answer = find(query, vllm_facts.shipped("0.32.0"))
    headings = [line.split(" ", 1)[0] for line in answer.lines if not line.startswith(" ")]
    commands = [line for line in answer.lines if line.strip().startswith("command:")]
    assert len(commands) == len(set(commands)), "\n".join(answer.lines)
    assert len(headings) == len(set(headings)), "\n".join(answer.lines)
