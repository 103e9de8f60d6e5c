"""my_reasoning: a reasoning parser for vLLM (server and structured outputs), registered as `my_reasoning`."""
