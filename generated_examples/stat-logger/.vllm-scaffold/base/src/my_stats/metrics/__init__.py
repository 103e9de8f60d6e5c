"""my_stats: a stat logger the OpenAI-compatible server and AsyncLLM load from `vllm.stat_logger_plugins`."""
