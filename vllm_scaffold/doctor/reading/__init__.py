"""What doctor reads: the plugin package (each module parsed once), its source as syntax trees, the guards
around its code, what its entry points reach, and the installed vLLM (its entry points and call sites).
Nothing here judges; the checks do.
"""
