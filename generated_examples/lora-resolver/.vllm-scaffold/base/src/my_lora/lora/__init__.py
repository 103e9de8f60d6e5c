"""my_lora: a LoRA resolver serving the adapters under the directory named by MY_LORA_ADAPTER_DIR."""
