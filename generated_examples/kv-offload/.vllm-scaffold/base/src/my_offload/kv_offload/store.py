"""The bookkeeping of my_offload's offloaded KV blocks: a bounded set of slots with least-recently-used
eviction.

Used by the scheduler side of the offloading spec (`manager.py`, in the engine core process): it decides which
blocks have a copy in the host store, which slot of the store holds each one, and which block gives up its
slot when the store is full. The bytes themselves live in the workers (`worker.py`); this module never sees
them, and imports only the standard library, so the policy is tested on its own.

A block goes through three states. `reserve()` gives it a slot while its bytes are being written (it can be
neither loaded nor evicted); `commit()` makes it loadable; `pin()` protects a loadable block while a load
reads it, until `unpin()`. Only loadable, unpinned blocks are evicted, oldest use first (`touch()` and `pin()`
count as uses). Keys are opaque bytes (vLLM's `OffloadKey`: a block hash and its KV-cache group).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


@dataclass
class _Entry:
    slot: int
    ready: bool = False
    pins: int = 0


@dataclass
class StoreCounters:
    """What the store did since it was created; `manager.py` exposes them as the spec's counters."""

    lookups: int = 0
    hits: int = 0
    blocks_loaded: int = 0
    blocks_stored: int = 0
    blocks_evicted: int = 0
    stores_refused: int = 0


@dataclass
class Reservation:
    """Slots reserved by one `reserve()` call: `slots[i]` will hold `keys[i]`; `evicted` gave up theirs."""

    keys: list[bytes]
    slots: list[int]
    evicted: list[bytes] = field(default_factory=list)


class BlockStore:
    """`capacity` slots of host memory, and which block each holds (not thread-safe: the manager is its only
    user)."""

    def __init__(self, capacity: int) -> None:
        if capacity < 0:
            raise ValueError(f"capacity must be 0 or more slots, got {capacity}")
        self.capacity = capacity
        self.counters = StoreCounters()
        self._entries: OrderedDict[bytes, _Entry] = OrderedDict()  # least recently used first
        self._free = list(range(capacity - 1, -1, -1))

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: bytes) -> bool:
        return key in self._entries

    def is_ready(self, key: bytes) -> bool | None:
        """True: loadable; False: still being written; None: not in the store. Counted as a lookup."""
        self.counters.lookups += 1
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.ready:
            self.counters.hits += 1
        return entry.ready

    def slot(self, key: bytes) -> int:
        return self._entries[key].slot

    def touch(self, keys: Iterable[bytes]) -> None:
        """Marks blocks as just used, so they are evicted last; keys not in the store are ignored."""
        for key in keys:
            if key in self._entries:
                self._entries.move_to_end(key)

    def pin(self, keys: Sequence[bytes]) -> list[int]:
        """Protects loadable blocks from eviction while a load reads them; returns their slots in order."""
        slots = []
        for key in keys:
            entry = self._entries[key]
            if not entry.ready:
                raise KeyError(f"block {key.hex()} is not loadable yet")
            entry.pins += 1
            slots.append(entry.slot)
            self._entries.move_to_end(key)
        self.counters.blocks_loaded += len(keys)
        return slots

    def unpin(self, keys: Iterable[bytes]) -> None:
        for key in keys:
            entry = self._entries.get(key)
            if entry is not None and entry.pins > 0:
                entry.pins -= 1

    def reserve(self, keys: Sequence[bytes]) -> Reservation | None:
        """Slots for the blocks of `keys` not in the store yet, evicting the least recently used loadable,
        unpinned blocks as needed. None, and nothing changed, when there are not enough slots to free."""
        new_keys = list(dict.fromkeys(key for key in keys if key not in self._entries))
        shortfall = len(new_keys) - len(self._free)
        victims: list[bytes] = []
        if shortfall > 0:
            for key, entry in self._entries.items():
                if len(victims) == shortfall:
                    break
                if entry.ready and entry.pins == 0:
                    victims.append(key)
            if len(victims) < shortfall:
                self.counters.stores_refused += 1
                return None
        for key in victims:
            self._free.append(self._entries.pop(key).slot)
        self.counters.blocks_evicted += len(victims)
        slots = [self._free.pop() for _ in new_keys]
        for key, slot in zip(new_keys, slots, strict=True):
            self._entries[key] = _Entry(slot)
        return Reservation(new_keys, slots, victims)

    def commit(self, keys: Iterable[bytes], success: bool = True) -> list[bytes]:
        """Ends the writes of reserved blocks: loadable on success, their slots freed otherwise. Returns the
        keys that became loadable."""
        done = []
        for key in keys:
            entry = self._entries.get(key)
            if entry is None or entry.ready:
                continue
            if success:
                entry.ready = True
                done.append(key)
            else:
                self._free.append(self._entries.pop(key).slot)
        self.counters.blocks_stored += len(done)
        return done

    def clear(self) -> list[bytes]:
        """Drops every loadable, unpinned block (blocks being written or read stay); returns the keys
        dropped."""
        dropped = [key for key, entry in self._entries.items() if entry.ready and entry.pins == 0]
        for key in dropped:
            self._free.append(self._entries.pop(key).slot)
        return dropped
