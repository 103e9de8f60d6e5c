"""my_device: an out-of-tree vLLM platform, CPU-backed, active only with MY_DEVICE_PLATFORM=1."""
