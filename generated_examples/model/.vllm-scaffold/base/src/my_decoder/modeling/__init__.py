"""my_decoder: the MyDecoderForCausalLM model architecture, built from vLLM layers and registered lazily."""
