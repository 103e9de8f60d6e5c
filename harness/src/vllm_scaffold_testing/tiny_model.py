"""A tiny random-weight Llama and its tokenizer, built offline for engine tests.

The shapes are the smallest the CPU engine accepts (head size 32 is its floor); the vocabulary is the
tokenizer's own length so the model never emits an id the tokenizer lacks. Weights come from a fixed seed,
so two builds are identical and greedy outputs are reproducible.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "vLLM serves large language models with paged attention and continuous batching.",
    "Plugins extend vLLM without forking it: attention backends, quantization, schedulers.",
    "A kernel reads the key and value cache through a block table and a slot mapping.",
    "Hello world! Numbers 0 1 2 3 4 5 6 7 8 9 and punctuation, too; fine: yes?",
    "Tensor parallel workers each hold a shard of every attention head and every linear layer.",
]

LLAMA_CONFIG = {
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "max_position_embeddings": 512,
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": False,
}
VOCAB_TARGET = 512
SEED = 1234


def _fingerprint() -> str:
    payload = json.dumps({"corpus": CORPUS, "config": LLAMA_CONFIG, "vocab": VOCAB_TARGET, "seed": SEED})
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


def build_tokenizer(directory: Path):
    """A byte-level BPE tokenizer trained on CORPUS, saved as a transformers fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token=None))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_TARGET,
        special_tokens=["<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(CORPUS, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>")
    fast.save_pretrained(directory)
    return fast


def build_tiny_llama(directory: Path, **config_overrides: object) -> Path:
    """Writes tokenizer, config and random float32 weights of a tiny Llama into `directory`."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(directory)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        torch_dtype="float32",
        **{**LLAMA_CONFIG, **config_overrides},
    )
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(config)
    model.save_pretrained(directory, safe_serialization=True)
    return directory


def cached_tiny_llama(cache_dir: Path) -> Path:
    """The tiny Llama under `cache_dir`, built once and shared by every test session that points there."""
    target = cache_dir / f"tiny-llama-{_fingerprint()}"
    if (target / "config.json").is_file():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".tiny-llama-", dir=cache_dir))
    try:
        build_tiny_llama(scratch)
        os.rename(scratch, target)
    except OSError:
        if not (target / "config.json").is_file():  # lost a race with another session: theirs is complete
            raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target
