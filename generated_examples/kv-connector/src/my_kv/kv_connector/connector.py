"""A vLLM KV connector that saves prompt-prefix KV blocks to local disk and loads them back.

vLLM imports this module in three places once `kv_transfer_config.kv_connector` is "MyKvConnector"
(registered by `registration.register()` from the package's general plugin in every process):
- the front end, in VllmConfig.__post_init__, to ask the class whether it supports the hybrid KV-cache
  manager (it does not: vLLM then disables HMA with a warning);
- the engine core, where Scheduler.__init__ builds the SCHEDULER-role instance: it decides, per request,
  how many prompt tokens can come from disk and which blocks to save, and sends that to the workers as
  `MyKvConnectorMetadata` with every scheduler step;
- each worker, where the WORKER-role instance is built at KV-transfer initialisation: it copies blocks
  between vLLM's paged KV cache and the store with the Triton kernels of `kernels.py`.

What is stored: for a prompt of T tokens, its first (T - 1) // block_size full blocks (the last prompt token
is always recomputed, since it produces the first sampled token), once their KV has been computed, as one
entry of `store.DiskKVStore` under kv_connector_extra_config["storage_dir"]. A later request whose prompt
starts with the same blocks (same model, dtype, block size, parallel layout, cache salt, LoRA and images)
loads them before its forward pass instead of recomputing them; `RequestOutput.num_cached_tokens` counts
them. Loads and saves are synchronous within the step; a missing or damaged entry is a miss.

kv_connector_extra_config keys: "storage_dir" (default: my_kv-kv-store in the temporary directory),
"copy_backend" ("auto": Triton on GPU tensors, torch otherwise; "triton"; "torch").
kv_role: "kv_both" saves and loads, "kv_producer" only saves, "kv_consumer" only loads.
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from vllm.distributed.kv_transfer.kv_connector.v1.base import (
    KVConnectorBase_V1,
    KVConnectorMetadata,
    KVConnectorRole,
)

from my_kv.kv_connector.kernels import gather_slots, scatter_slots, slots_for_blocks
from my_kv.kv_connector.store import CorruptEntryError, DiskKVStore, block_keys

try:
    from vllm.v1.metrics.cache_hit_source import CacheHitSource
except ImportError:  # vLLM 0.31: no cache-hit metrics by source
    CacheHitSource = None

if TYPE_CHECKING:
    from vllm.config import VllmConfig
    from vllm.forward_context import ForwardContext
    from vllm.v1.core.kv_cache_manager import KVCacheBlocks
    from vllm.v1.core.sched.output import SchedulerOutput
    from vllm.v1.kv_cache_interface import KVCacheConfig
    from vllm.v1.request import Request

logger = logging.getLogger(__name__)

STORAGE_DIR_KEY = "storage_dir"
COPY_BACKEND_KEY = "copy_backend"
DEFAULT_STORAGE_DIR = os.path.join(tempfile.gettempdir(), "my_kv-kv-store")
COPY_BACKENDS = ("auto", "triton", "torch")


@dataclass
class Transfer:
    """One entry to move for one request: tokens [first_token, num_tokens) of its leading blocks."""

    request_id: str
    key: str
    block_ids: list[int]  # the request's blocks holding tokens [0, num_tokens), in order
    first_token: int  # loads: tokens before this are already in the paged cache (a local prefix-cache hit)
    num_tokens: int


@dataclass
class MyKvConnectorMetadata(KVConnectorMetadata):
    """What the workers do in one step: loads before the forward pass, saves during it."""

    loads: list[Transfer] = field(default_factory=list)
    saves: list[Transfer] = field(default_factory=list)


@dataclass
class _SavePlan:
    """A request whose storable prefix is not on disk yet, saved in the step that finishes computing it."""

    key: str
    num_tokens: int
    block_ids: list[int]


class MyKvConnector(KVConnectorBase_V1):
    """Local-disk prefix store with a scheduler half (engine core) and a worker half (each worker)."""

    if CacheHitSource is not None:  # vLLM 0.32+ counts the tokens it loads as cache hits from local disk
        _cache_hit_source = CacheHitSource.DISK

    def __init__(
        self, vllm_config: VllmConfig, role: KVConnectorRole, kv_cache_config: KVCacheConfig
    ) -> None:
        super().__init__(vllm_config=vllm_config, role=role, kv_cache_config=kv_cache_config)
        transfer = self._kv_transfer_config
        extra = transfer.kv_connector_extra_config
        self.copy_backend = extra.get(COPY_BACKEND_KEY, "auto")
        if self.copy_backend not in COPY_BACKENDS:
            raise ValueError(
                f"kv_connector_extra_config[{COPY_BACKEND_KEY!r}] must be one of {COPY_BACKENDS}, "
                f"got {self.copy_backend!r}"
            )
        self.block_size = vllm_config.cache_config.block_size
        parallel = vllm_config.parallel_config
        world_size = parallel.tensor_parallel_size * parallel.pipeline_parallel_size
        self.store = DiskKVStore(extra.get(STORAGE_DIR_KEY, DEFAULT_STORAGE_DIR), world_size)
        model = vllm_config.model_config
        # Entries are only valid for the same weights, dtypes, block size and sharding.
        self.namespace = "|".join(
            [
                str(model.model),
                str(model.revision),
                str(model.dtype),
                str(vllm_config.cache_config.cache_dtype),
                f"block={self.block_size}",
                f"tp={parallel.tensor_parallel_size}",
                f"pp={parallel.pipeline_parallel_size}",
            ]
        )
        self.loads_enabled = transfer.is_kv_consumer
        self.saves_enabled = transfer.is_kv_producer

        # Scheduler side, engine-core thread only.
        self._requests: dict[str, Request] = {}
        # request id -> tokens to load, from update_state_after_alloc
        self._pending_loads: dict[str, int] = {}
        self._save_plans: dict[str, _SavePlan] = {}

        # Worker side.
        self.rank = self._worker_rank() if role == KVConnectorRole.WORKER else 0
        self._kv_caches: dict[str, torch.Tensor] = {}
        self._staged: dict[str, dict[str, torch.Tensor]] = {}  # entry key -> layer name -> gathered KV (CPU)
        self._failed_block_ids: set[int] = set()

    @property
    def requires_kv_delivery(self) -> bool:
        """A best-effort cache: a save lost to preemption is a later miss, not a failed hand-off."""
        return False

    # ==============================================================================================
    # Scheduler side (engine core)
    # ==============================================================================================

    def storable_blocks(self, request: Request) -> int:
        """Full blocks of the prompt minus its last token: what one entry of this request holds."""
        token_ids = request.prompt_token_ids
        if token_ids is None:  # prompt embeddings: nothing to key on
            return 0
        return max(len(token_ids) - 1, 0) // self.block_size

    def request_keys(self, request: Request, num_blocks: int) -> list[str]:
        """Store keys of the request's first 1..num_blocks blocks."""
        lora = request.lora_request.lora_name if request.lora_request is not None else ""
        images = ",".join(feature.identifier for feature in request.mm_features or ())
        namespace = f"{self.namespace}|salt={request.cache_salt or ''}|lora={lora}|mm={images}"
        return block_keys(request.prompt_token_ids or [], self.block_size, num_blocks, namespace)

    def get_num_new_matched_tokens(
        self, request: Request, num_computed_tokens: int
    ) -> tuple[int | None, bool]:
        """Prompt tokens beyond `num_computed_tokens` (block aligned) that a stored entry covers.

        vLLM may call this several times for one request (each time the request is considered and not
        admitted), so it only reads: the store's manifests, never this object's state. Loads are
        synchronous (False): they run in the worker before the forward pass of the admitting step.
        """
        num_blocks = self.storable_blocks(request) if self.loads_enabled else 0
        if num_blocks * self.block_size <= num_computed_tokens:
            return 0, False
        keys = self.request_keys(request, num_blocks)
        hit_blocks = self.store.longest_prefix(keys, min_blocks=num_computed_tokens // self.block_size)
        if hit_blocks == 0:
            return 0, False
        return hit_blocks * self.block_size - num_computed_tokens, False

    def update_state_after_alloc(
        self, request: Request, blocks: KVCacheBlocks, num_external_tokens: int
    ) -> None:
        """Remembers that the request was admitted with `num_external_tokens` to load from disk."""
        if num_external_tokens > 0:
            self._pending_loads[request.request_id] = num_external_tokens

    def on_new_request(self, request: Request) -> None:
        self._requests[request.request_id] = request

    def build_connector_meta(self, scheduler_output: SchedulerOutput) -> KVConnectorMetadata:
        """This step's loads and saves, for the workers. Reads scheduler_output, never changes it."""
        meta = MyKvConnectorMetadata()
        for new in scheduler_output.scheduled_new_reqs:
            request = self._requests[new.req_id]
            num_scheduled = scheduler_output.num_scheduled_tokens[new.req_id]
            block_ids = list(new.block_ids[0])
            self._plan_step(meta, request, block_ids, True, new.num_computed_tokens, num_scheduled)
        cached = scheduler_output.scheduled_cached_reqs
        for index, request_id in enumerate(cached.req_ids):
            resumed = request_id in cached.resumed_req_ids
            if not resumed and request_id not in self._save_plans:
                continue
            new_block_ids = cached.new_block_ids[index]
            self._plan_step(
                meta,
                self._requests[request_id],
                list(new_block_ids[0]) if new_block_ids is not None else [],
                resumed,  # a resumed request gets its whole block list again
                cached.num_computed_tokens[index],
                scheduler_output.num_scheduled_tokens[request_id],
            )
        return meta

    def _plan_step(
        self,
        meta: MyKvConnectorMetadata,
        request: Request,
        block_ids: list[int],
        full_block_list: bool,
        num_computed: int,
        num_scheduled: int,
    ) -> None:
        request_id = request.request_id
        block_size = self.block_size
        num_external = self._pending_loads.pop(request_id, 0)
        if num_external and full_block_list:
            # num_computed = local prefix-cache hit + the tokens on disk; both end on a block boundary.
            loaded_blocks = num_computed // block_size
            key = self.request_keys(request, loaded_blocks)[-1]
            first = num_computed - num_external
            meta.loads.append(Transfer(request_id, key, block_ids[:loaded_blocks], first, num_computed))

        plan = self._save_plans.get(request_id)
        if plan is None and full_block_list and self.saves_enabled:
            num_blocks = self.storable_blocks(request)
            key = self.request_keys(request, num_blocks)[-1] if num_blocks else None
            if key is not None and not self.store.is_complete(key):
                plan = self._save_plans[request_id] = _SavePlan(key, num_blocks * block_size, [])
        if plan is None:
            return
        plan.block_ids = block_ids if full_block_list else plan.block_ids + block_ids
        if num_computed + num_scheduled >= plan.num_tokens:
            # This step's forward pass computes the last tokens of the prefix: save it during that pass.
            num_blocks = plan.num_tokens // block_size
            meta.saves.append(Transfer(request_id, plan.key, plan.block_ids[:num_blocks], 0, plan.num_tokens))
            del self._save_plans[request_id]

    def request_finished(self, request: Request, block_ids: list[int]) -> tuple[bool, dict[str, Any] | None]:
        """Forgets the request. Saves finish within their step, so vLLM may free its blocks at once."""
        self._requests.pop(request.request_id, None)
        self._pending_loads.pop(request.request_id, None)
        self._save_plans.pop(request.request_id, None)
        return False, None

    # ==============================================================================================
    # Worker side (each worker process)
    # ==============================================================================================

    @staticmethod
    def _worker_rank() -> int:
        """This worker's index among the tensor x pipeline parallel ranks that each store their own shard."""
        from vllm.distributed.parallel_state import get_pp_group, get_tp_group

        tp = get_tp_group()
        return tp.rank_in_group + tp.world_size * get_pp_group().rank_in_group

    def register_kv_caches(self, kv_caches: dict[str, torch.Tensor]) -> None:
        """Keeps each attention layer's paged cache: [num_blocks, num_heads, block_size, content] views."""
        for layer_name, cache in kv_caches.items():
            if cache.dim() != 4 or cache.shape[2] != self.block_size:
                raise ValueError(
                    f"{type(self).__name__} expects each layer's KV cache as [num_blocks, num_heads, "
                    f"{self.block_size}, content]; layer {layer_name} has shape {tuple(cache.shape)}. "
                    "Hybrid or MLA models need their own block mapping."
                )
        self._kv_caches = dict(kv_caches)

    def start_load_kv(self, forward_context: ForwardContext, **kwargs: Any) -> None:
        """Loads every entry of this step into the paged cache, all layers, before the forward pass."""
        meta = self._get_connector_metadata()
        assert isinstance(meta, MyKvConnectorMetadata)
        for load in meta.loads:
            slots = slots_for_blocks(load.block_ids, self.block_size)[load.first_token : load.num_tokens]
            try:
                buffers = {name: self.store.read_layer(load.key, self.rank, name) for name in self._kv_caches}
                for name, cache in self._kv_caches.items():
                    buffer = buffers[name][load.first_token : load.num_tokens]
                    if tuple(buffer.shape) != (slots.numel(), cache.shape[1], cache.shape[3]):
                        raise CorruptEntryError(f"layer {name}: stored shape {tuple(buffer.shape)} differs")
                    scatter_slots(cache, slots, buffer.to(cache.dtype), backend=self.copy_backend)
            except CorruptEntryError as error:
                # Reported through get_block_ids_with_load_errors: vLLM recomputes or fails the request
                # according to kv_transfer_config.kv_load_failure_policy.
                logger.warning("request %s: stored KV unusable, not loaded: %s", load.request_id, error)
                self._failed_block_ids.update(load.block_ids[load.first_token // self.block_size :])

    def wait_for_layer_load(self, layer_name: str) -> None:
        """Nothing to wait for: start_load_kv has already written every layer."""

    def save_kv_layer(
        self, layer_name: str, kv_layer: torch.Tensor, attn_metadata: Any, **kwargs: Any
    ) -> None:
        """Copies this layer's blocks of each entry saved this step out of the paged cache (to CPU memory)."""
        meta = self._get_connector_metadata()
        assert isinstance(meta, MyKvConnectorMetadata)
        for save in meta.saves:
            slots = slots_for_blocks(save.block_ids, self.block_size, save.num_tokens)
            gathered = gather_slots(kv_layer, slots, backend=self.copy_backend)
            self._staged.setdefault(save.key, {})[layer_name] = gathered.to("cpu")

    def wait_for_save(self) -> None:
        """Writes this step's staged entries to disk (atomically); a failed write is logged and skipped."""
        staged, self._staged = self._staged, {}
        for key, layers in staged.items():
            try:
                self.store.write_entry(key, self.rank, layers)
            except OSError as error:
                logger.warning("KV entry %s not saved: %s", key, error)

    def get_finished(self, finished_req_ids: set[str]) -> tuple[set[str] | None, set[str] | None]:
        """No transfer outlives its step here, so no request waits on this connector: (None, None)."""
        return None, None

    def get_block_ids_with_load_errors(self) -> set[int]:
        failed, self._failed_block_ids = self._failed_block_ids, set()
        return failed
