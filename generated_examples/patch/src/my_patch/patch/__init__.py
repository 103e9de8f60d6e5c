"""my_patch: my_patch's patch of vLLM's `vllm.config.model:ModelConfig.get_vocab_size`, applied from its
general plugin."""
