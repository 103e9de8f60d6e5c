"""my_plugin: code my_plugin runs in every vLLM process, from its general plugin."""
