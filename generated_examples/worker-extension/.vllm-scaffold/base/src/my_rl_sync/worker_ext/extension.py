"""MyRlSyncWorkerExtension: methods every vLLM worker gains, called from the front end on every rank.

Loaded in each worker process (every rank of every node), by `WorkerWrapperBase.init_worker` before the
worker is constructed: vLLM resolves `worker_extension_cls`, refuses to start if the worker class already has
an attribute named like one of this class's, and appends this class to the worker class's bases. The front
end only passes the dotted name along; it never imports this module. Call the methods with
`LLM.collective_rpc("method", args=...)`, which returns one result per rank, in rank order.

The methods are the three steps of an RL weight-sync loop: report who answered, fingerprint the weights
each rank holds, and load updated weights from a file the trainer wrote. Every attribute of this class
becomes an attribute of the worker, so it defines nothing else.
"""

from __future__ import annotations

import hashlib
import os
import socket

import torch


class MyRlSyncWorkerExtension:
    """Mixed into vLLM's worker class: `self` is the worker (its `rank`, `device` and `model_runner`)."""

    rank: int
    local_rank: int
    device: torch.device

    def report_identity(self) -> dict[str, object]:
        """Which rank answered, and where: the rank across the engine, the local rank on its node, the
        tensor- and pipeline-parallel ranks, the device, the host and the process."""
        from vllm.distributed.parallel_state import get_pp_group, get_tp_group

        return {
            "rank": self.rank,
            "local_rank": self.local_rank,
            "tp_rank": get_tp_group().rank_in_group,
            "pp_rank": get_pp_group().rank_in_group,
            "device": str(self.device),
            "host": socket.gethostname(),
            "pid": os.getpid(),
        }

    def weight_checksums(self, names: list[str] | None = None) -> dict[str, str]:
        """A SHA-256 prefix of each named parameter as this rank holds it (its shard under tensor
        parallelism), by vLLM's parameter name; every parameter when `names` is None. Equal checksums on
        two ranks mean a replicated parameter; a trainer compares them with its own copy after a sync.

        Parameters that are empty once the model is loaded are left out: on CPU, vLLM can repack a linear
        layer's weight into a GEMM kernel's own format and empty the parameter, where that kernel takes the
        layer (`dispatch_cpu_unquantized_gemm`).
        """
        wanted = None if names is None else set(names)
        checksums = {}
        for name, parameter in self.model_runner.model.named_parameters():  # type: ignore[attr-defined]
            if (wanted is None or name in wanted) and parameter.numel():
                data = parameter.detach().contiguous().cpu().view(-1).view(torch.uint8)
                checksums[name] = hashlib.sha256(data.numpy().tobytes()).hexdigest()[:16]
        if wanted is not None and (missing := wanted - set(checksums)):
            raise KeyError(f"rank {self.rank} has no parameters named {sorted(missing)}")
        return checksums

    def load_weights_from_file(self, path: str) -> list[str]:
        """Loads the full (unsharded) tensors of a safetensors file, named as in the model's checkpoint,
        into the running model; each rank keeps its own shard. Returns the parameters it updated. The file
        may hold any subset of the checkpoint's tensors.

        The KV blocks already cached were computed with the old weights: call `LLM.reset_prefix_cache()`
        after the update, before the next request. On vLLM's CPU backend a linear layer's weight has been
        repacked and emptied after loading (see `weight_checksums`), so only the other tensors (norms,
        embeddings) can be updated in place there; on GPU every tensor can.
        """
        from safetensors.torch import load_file

        tensors = load_file(path, device=str(self.device))
        loaded = self.model_runner.model.load_weights(weights=tensors.items())  # type: ignore[attr-defined]
        return sorted(loaded or ())
