"""my_q: the `my_q` quantization method (weight-only int8, per-output-channel scales).

Imports nothing, so the kernel module can be used where vLLM is absent. vLLM reaches the method through
`my_q.quant.config:register`, which the package's general plugin calls in every vLLM process.
"""
