"""my_rl_sync: a worker extension for RL weight sync (`my_rl_sync.worker_ext.extension`).

Imports nothing: each worker process imports `extension` itself when `worker_extension_cls` names its class.
"""
