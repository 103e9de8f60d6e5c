"""The scheduler side of MyOffloadOffloadingSpec: which prompt blocks have a copy in the host store, and
where.

Created once per engine by `MyOffloadOffloadingSpec.get_manager()`, in the engine core process, when vLLM's
OffloadingConnector builds its scheduler half (`Scheduler.__init__`). The connector asks it, for every new
request, how many leading blocks it can load instead of computing (`lookup`), pins them for the load
(`prepare_load`, `complete_load`), and offers it the blocks the model just computed (`prepare_store`,
`complete_store`). The manager only decides; the workers move the bytes into the slots it names (`worker.py`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from vllm.v1.kv_offload.base import (
    BlockIDsLoadStoreSpec,
    LookupResult,
    Medium,
    OffloadingEvent,
    OffloadingManager,
    OffloadKey,
    PrepareStoreOutput,
    ReqContext,
    RequestOffloadingContext,
)

from my_offload.kv_offload.store import BlockStore, StoreCounters


class HostSlots(BlockIDsLoadStoreSpec):
    """Where blocks are in the host store: one slot index per block, in the order of the blocks they hold.

    Sent from the engine core to the workers inside the connector's metadata, so it must stay picklable.
    """


class MyOffloadOffloadingManager(OffloadingManager):
    """vLLM's `OffloadingManager` interface over a `BlockStore` of `capacity` blocks (LRU eviction)."""

    def __init__(self, capacity: int, enable_events: bool = False) -> None:
        self.store = BlockStore(capacity)
        # vLLM drains take_events() after every step but publishes the events only when KV-cache events are
        # enabled, so they are kept only then.
        self._events: list[OffloadingEvent] | None = [] if enable_events else None

    @property
    def counters(self) -> StoreCounters:
        """Lookups, hits, blocks loaded, stored and evicted since the engine started."""
        return self.store.counters

    def lookup(self, key: OffloadKey, req_context: ReqContext) -> LookupResult:
        ready = self.store.is_ready(key)
        if ready is None:
            return LookupResult.MISS
        return LookupResult.HIT if ready else LookupResult.HIT_PENDING

    def prepare_load(self, keys: Collection[OffloadKey], req_context: ReqContext) -> HostSlots:
        return HostSlots(self.store.pin(list(keys)))

    if hasattr(OffloadingManager, "touch"):
        # OffloadingManager declares touch() up to vLLM 0.33 (0.34 removed it), but the OffloadingConnector of
        # 0.31 to 0.33 never calls it: recency moves when a block is stored or loaded, as on 0.34.

        def touch(self, keys: Collection[OffloadKey], req_context: ReqContext) -> None:
            self.store.touch(keys)

    def complete_load(self, keys: Collection[OffloadKey], req_context: ReqContext) -> None:
        self.store.unpin(keys)

    def prepare_store(
        self, keys: Collection[OffloadKey], req_context: ReqContext
    ) -> PrepareStoreOutput | None:
        reservation = self.store.reserve(list(keys))
        if reservation is None:
            return None  # every slot is being written or read: the blocks are simply not offloaded
        self._record(reservation.evicted, removed=True)
        return PrepareStoreOutput(
            keys_to_store=[OffloadKey(key) for key in reservation.keys],
            store_spec=HostSlots(reservation.slots),
            evicted_keys=[OffloadKey(key) for key in reservation.evicted],
        )

    def complete_store(
        self, keys: Collection[OffloadKey], req_context: ReqContext, success: bool = True
    ) -> None:
        self._record(self.store.commit(keys, success), removed=False)

    def on_new_request(self, req_context: ReqContext) -> RequestOffloadingContext:
        return RequestOffloadingContext()

    def reset_cache(self) -> None:
        self._record(self.store.clear(), removed=True)

    def take_events(self) -> Iterable[OffloadingEvent]:
        if not self._events:
            return ()
        events, self._events = self._events, []
        return events

    def _record(self, keys: list[bytes], *, removed: bool) -> None:
        if self._events is not None and keys:
            self._events.append(
                OffloadingEvent(keys=[OffloadKey(key) for key in keys], medium=Medium.CPU, removed=removed)
            )
