"""`MyDecoderForCausalLM`: a decoder-only transformer built from vLLM's own layers.

Imported only by the processes that build the model (the workers, and the architecture-inspection
subprocess of the front end), through the lazy registration in `registration.py`. Every layer is vLLM's:
column/row-parallel linear layers shard the weights over tensor-parallel ranks, `get_rope` gives the
rotary embedding, `Attention` reads and writes the paged KV cache through whichever attention backend the
platform picks, and RMSNorm and SiluAndMul are CustomOps with per-platform kernels.

The checkpoint has its own layout (see `checkpoint.py`): separate q/k/v and gate/up matrices under their
own names. `load_weights` maps each checkpoint tensor onto vLLM's fused parameters, and each parameter's
`weight_loader` keeps only this rank's shard.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import torch
from torch import nn
from vllm.compilation.decorators import support_torch_compile
from vllm.config import VllmConfig
from vllm.distributed import get_tensor_model_parallel_world_size
from vllm.model_executor.layers.activation import SiluAndMul
from vllm.model_executor.layers.attention import Attention
from vllm.model_executor.layers.layernorm import RMSNorm
from vllm.model_executor.layers.linear import (
    MergedColumnParallelLinear,
    QKVParallelLinear,
    RowParallelLinear,
)
from vllm.model_executor.layers.logits_processor import LogitsProcessor
from vllm.model_executor.layers.rotary_embedding import get_rope
from vllm.model_executor.layers.vocab_parallel_embedding import ParallelLMHead, VocabParallelEmbedding
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.models.utils import maybe_prefix
from vllm.sequence import IntermediateTensors

# Checkpoint name -> (parameter name, shard): a shard id for the fused parameters, None otherwise.
_LAYER = r"layers\.(\d+)\."
CHECKPOINT_NAMES: tuple[tuple[re.Pattern[str], str, str | int | None], ...] = tuple(
    (re.compile(pattern + r"\Z"), target, shard)
    for pattern, target, shard in (
        (r"tok_embeddings\.weight", "model.embed_tokens.weight", None),
        (_LAYER + r"attention_norm\.weight", r"model.layers.\1.input_layernorm.weight", None),
        (_LAYER + r"attention\.wq\.weight", r"model.layers.\1.self_attn.qkv_proj.weight", "q"),
        (_LAYER + r"attention\.wk\.weight", r"model.layers.\1.self_attn.qkv_proj.weight", "k"),
        (_LAYER + r"attention\.wv\.weight", r"model.layers.\1.self_attn.qkv_proj.weight", "v"),
        (_LAYER + r"attention\.wo\.weight", r"model.layers.\1.self_attn.o_proj.weight", None),
        (_LAYER + r"ffn_norm\.weight", r"model.layers.\1.post_attention_layernorm.weight", None),
        (_LAYER + r"feed_forward\.w1\.weight", r"model.layers.\1.mlp.gate_up_proj.weight", 0),
        (_LAYER + r"feed_forward\.w3\.weight", r"model.layers.\1.mlp.gate_up_proj.weight", 1),
        (_LAYER + r"feed_forward\.w2\.weight", r"model.layers.\1.mlp.down_proj.weight", None),
        (r"norm\.weight", "model.norm.weight", None),
        (r"output\.weight", "lm_head.weight", None),
    )
)


def parameter_for(checkpoint_name: str) -> tuple[str, str | int | None]:
    """The model parameter a checkpoint tensor loads into, and its shard in a fused parameter."""
    for pattern, target, shard in CHECKPOINT_NAMES:
        match = pattern.match(checkpoint_name)
        if match:
            return match.expand(target), shard
    raise ValueError(f"{checkpoint_name!r} is not a tensor of a MyDecoderForCausalLM checkpoint")


class MyDecoderAttention(nn.Module):
    def __init__(self, vllm_config: VllmConfig, prefix: str) -> None:
        super().__init__()
        config = vllm_config.model_config.hf_config
        tp_size = get_tensor_model_parallel_world_size()
        total_heads = config.num_attention_heads
        total_kv_heads = getattr(config, "num_key_value_heads", total_heads)
        if total_heads % tp_size or (total_kv_heads % tp_size and tp_size % total_kv_heads):
            raise ValueError(
                f"{total_heads} query / {total_kv_heads} key-value heads cannot be split over {tp_size} ranks"
            )
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // total_heads
        self.num_heads = total_heads // tp_size
        # Fewer key-value heads than ranks: each rank holds a replica of one.
        self.num_kv_heads = max(1, total_kv_heads // tp_size)
        self.q_size = self.num_heads * self.head_dim
        self.kv_size = self.num_kv_heads * self.head_dim
        self.qkv_proj = QKVParallelLinear(
            config.hidden_size,
            self.head_dim,
            total_heads,
            total_kv_heads,
            bias=False,
            quant_config=vllm_config.quant_config,
            prefix=f"{prefix}.qkv_proj",
        )
        self.o_proj = RowParallelLinear(
            total_heads * self.head_dim,
            config.hidden_size,
            bias=False,
            quant_config=vllm_config.quant_config,
            prefix=f"{prefix}.o_proj",
        )
        self.rotary_emb = get_rope(
            self.head_dim,
            max_position=config.max_position_embeddings,
            rope_parameters=getattr(config, "rope_parameters", None),
            is_neox_style=True,
        )
        self.attn = Attention(
            self.num_heads,
            self.head_dim,
            self.head_dim**-0.5,
            num_kv_heads=self.num_kv_heads,
            cache_config=vllm_config.cache_config,
            quant_config=vllm_config.quant_config,
            prefix=f"{prefix}.attn",
        )

    def forward(self, positions: torch.Tensor, hidden_states: torch.Tensor) -> torch.Tensor:
        qkv, _ = self.qkv_proj(hidden_states)
        q, k, v = qkv.split([self.q_size, self.kv_size, self.kv_size], dim=-1)
        q, k = self.rotary_emb(positions, q, k)
        output, _ = self.o_proj(self.attn(q, k, v))
        return output


class MyDecoderMLP(nn.Module):
    def __init__(self, vllm_config: VllmConfig, prefix: str) -> None:
        super().__init__()
        config = vllm_config.model_config.hf_config
        self.gate_up_proj = MergedColumnParallelLinear(
            config.hidden_size,
            [config.intermediate_size] * 2,
            bias=False,
            quant_config=vllm_config.quant_config,
            prefix=f"{prefix}.gate_up_proj",
        )
        self.down_proj = RowParallelLinear(
            config.intermediate_size,
            config.hidden_size,
            bias=False,
            quant_config=vllm_config.quant_config,
            prefix=f"{prefix}.down_proj",
        )
        self.act_fn = SiluAndMul()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate_up, _ = self.gate_up_proj(x)
        output, _ = self.down_proj(self.act_fn(gate_up))
        return output


class MyDecoderDecoderLayer(nn.Module):
    def __init__(self, vllm_config: VllmConfig, prefix: str) -> None:
        super().__init__()
        config = vllm_config.model_config.hf_config
        self.input_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.self_attn = MyDecoderAttention(vllm_config, prefix=f"{prefix}.self_attn")
        self.post_attention_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.mlp = MyDecoderMLP(vllm_config, prefix=f"{prefix}.mlp")

    def forward(
        self, positions: torch.Tensor, hidden_states: torch.Tensor, residual: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # RMSNorm(x, residual) adds the residual and normalises in one kernel, returning both.
        if residual is None:
            residual = hidden_states
            hidden_states = self.input_layernorm(hidden_states)
        else:
            hidden_states, residual = self.input_layernorm(hidden_states, residual)
        hidden_states = self.self_attn(positions, hidden_states)
        hidden_states, residual = self.post_attention_layernorm(hidden_states, residual)
        return self.mlp(hidden_states), residual


@support_torch_compile(dynamic_arg_dims={"input_ids": 0, "positions": 0, "inputs_embeds": 0})
class MyDecoderModel(nn.Module):
    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__()
        config = vllm_config.model_config.hf_config
        self.embed_tokens = VocabParallelEmbedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            MyDecoderDecoderLayer(vllm_config, prefix=f"{prefix}.layers.{index}")
            for index in range(config.num_hidden_layers)
        )
        self.norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def embed_input_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.embed_tokens(input_ids)

    def forward(
        self,
        input_ids: torch.Tensor | None,
        positions: torch.Tensor,
        inputs_embeds: torch.Tensor | None = None,
    ) -> torch.Tensor:
        hidden_states = inputs_embeds if inputs_embeds is not None else self.embed_input_ids(input_ids)
        residual = None
        for layer in self.layers:
            hidden_states, residual = layer(positions, hidden_states, residual)
        hidden_states, _ = self.norm(hidden_states, residual)
        return hidden_states


class MyDecoderForCausalLM(nn.Module):
    """The class vLLM instantiates for checkpoints whose config.json lists "MyDecoderForCausalLM"."""

    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__()
        config = vllm_config.model_config.hf_config
        self.config = config
        self.model = MyDecoderModel(vllm_config=vllm_config, prefix=maybe_prefix(prefix, "model"))
        lm_head_prefix = maybe_prefix(prefix, "lm_head")
        self.lm_head = ParallelLMHead(config.vocab_size, config.hidden_size, prefix=lm_head_prefix)
        self.logits_processor = LogitsProcessor(config.vocab_size)

    def embed_input_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model.embed_input_ids(input_ids)

    def forward(
        self,
        input_ids: torch.Tensor | None,
        positions: torch.Tensor,
        intermediate_tensors: IntermediateTensors | None = None,
        inputs_embeds: torch.Tensor | None = None,
    ) -> torch.Tensor:
        # Not a SupportsPP model: one pipeline stage holds every layer, and intermediate_tensors is always
        # None.
        return self.model(input_ids, positions, inputs_embeds)

    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor | None:
        return self.logits_processor(self.lm_head, hidden_states)

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> set[str]:
        """Loads checkpoint tensors into this rank's parameters; returns the parameter names loaded."""
        parameters = dict(self.named_parameters())
        loaded: set[str] = set()
        for checkpoint_name, tensor in weights:
            name, shard = parameter_for(checkpoint_name)
            parameter = parameters[name]
            weight_loader = getattr(parameter, "weight_loader", default_weight_loader)
            if shard is None:
                weight_loader(parameter, tensor)
            else:
                weight_loader(parameter, tensor, shard)
            loaded.add(name)
        return loaded
