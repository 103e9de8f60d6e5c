"""The host store's bookkeeping on its own: slots, the three states of a block, and least-recently-used
eviction.

Runs without vLLM and without torch: `store.py` imports only the standard library.
"""

from __future__ import annotations

import pytest

from my_offload.kv_offload.store import BlockStore


def keys(*names: str) -> list[bytes]:
    return [name.encode() for name in names]


def stored(store: BlockStore, *names: str) -> None:
    reservation = store.reserve(keys(*names))
    assert reservation is not None
    store.commit(reservation.keys)


def test_a_block_is_loadable_only_after_its_write_is_committed() -> None:
    store = BlockStore(4)
    (a,) = keys("a")
    assert store.is_ready(a) is None
    reservation = store.reserve([a])
    assert reservation is not None and reservation.keys == [a] and len(set(reservation.slots)) == 1
    assert store.is_ready(a) is False, "a block being written must not be loaded"
    assert store.commit([a]) == [a]
    assert store.is_ready(a) is True
    assert (store.counters.lookups, store.counters.hits, store.counters.blocks_stored) == (3, 1, 1)


def test_blocks_already_in_the_store_get_no_second_slot() -> None:
    store = BlockStore(4)
    stored(store, "a", "b")
    reservation = store.reserve(keys("a", "c", "c", "b", "d"))
    assert reservation is not None
    assert reservation.keys == keys("c", "d") and reservation.evicted == []
    assert len(set(reservation.slots) | {store.slot(b"a"), store.slot(b"b")}) == 4, "slots were shared"


def test_the_least_recently_used_block_is_evicted_first() -> None:
    store = BlockStore(3)
    stored(store, "a", "b", "c")
    store.touch(keys("a"))  # a is now the most recently used
    reservation = store.reserve(keys("d"))
    assert reservation is not None and reservation.evicted == keys("b")
    assert store.slot(b"d") == reservation.slots[0]
    assert b"b" not in store and store.counters.blocks_evicted == 1


def test_pinned_and_unfinished_blocks_are_never_evicted() -> None:
    store = BlockStore(3)
    stored(store, "a", "b")
    assert store.reserve(keys("c")) is not None  # c is being written
    assert store.pin(keys("a")) == [store.slot(b"a")]
    reservation = store.reserve(keys("d"))
    assert reservation is not None and reservation.evicted == keys("b"), "only b was free to go"
    assert store.reserve(keys("e")) is None, "a, c and d are all in use: the store must refuse"
    assert store.counters.stores_refused == 1 and len(store) == 3
    store.unpin(keys("a"))
    refused_then_taken = store.reserve(keys("e"))
    assert refused_then_taken is not None and refused_then_taken.evicted == keys("a")


def test_a_refused_reservation_changes_nothing() -> None:
    store = BlockStore(2)
    stored(store, "a", "b")
    store.pin(keys("a"))
    assert store.reserve(keys("c", "d")) is None, "two slots needed, only b's can be freed"
    assert b"a" in store and b"b" in store and store.counters.blocks_evicted == 0


def test_a_failed_write_frees_its_slot() -> None:
    store = BlockStore(1)
    reservation = store.reserve(keys("a"))
    assert reservation is not None
    assert store.commit(keys("a"), success=False) == []
    assert b"a" not in store
    assert store.reserve(keys("b")) is not None, "the slot of the failed write was not given back"


def test_a_block_being_written_cannot_be_pinned() -> None:
    store = BlockStore(2)
    store.reserve(keys("a"))
    with pytest.raises(KeyError, match="not loadable"):
        store.pin(keys("a"))


def test_clear_keeps_blocks_in_use() -> None:
    store = BlockStore(4)
    stored(store, "a", "b")
    store.reserve(keys("c"))
    store.pin(keys("a"))
    assert store.clear() == keys("b")
    assert b"a" in store and b"c" in store and b"b" not in store


def test_a_store_without_slots_stores_nothing() -> None:
    store = BlockStore(0)
    assert store.reserve(keys("a")) is None
    assert store.reserve([]) is not None, "nothing to store always succeeds"
    with pytest.raises(ValueError, match="capacity"):
        BlockStore(-1)
