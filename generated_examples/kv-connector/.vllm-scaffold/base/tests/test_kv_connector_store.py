"""The on-disk store of `my_kv`: keys, atomic entries, and every damaged entry read as a miss.

Runs without vLLM (torch and the store module only).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from my_kv.kv_connector.store import CorruptEntryError, DiskKVStore, block_keys

TOKENS = list(range(100, 200))
LAYERS = ("model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn")


def layers(num_tokens: int = 48) -> dict[str, torch.Tensor]:
    return {name: torch.randn(num_tokens, 2, 64) for name in LAYERS}


def written(tmp_path: Path, world_size: int = 1) -> tuple[DiskKVStore, str, dict[str, torch.Tensor]]:
    store = DiskKVStore(tmp_path / "store", world_size)
    key = block_keys(TOKENS, 16, 3, "model")[-1]
    data = layers()
    for rank in range(world_size):
        store.write_entry(key, rank, data)
    return store, key, data


def test_keys_are_chained_over_prefixes_and_namespaced() -> None:
    keys = block_keys(TOKENS, 16, 6, "model")
    assert block_keys(TOKENS[:40], 16, 2, "model") == keys[:2]
    changed = block_keys(TOKENS[:16] + [0] + TOKENS[17:], 16, 6, "model")  # first token of block 2
    assert changed[0] == keys[0] and all(new != old for new, old in zip(changed[1:], keys[1:], strict=True))
    assert block_keys(TOKENS, 16, 6, "other model") != keys
    assert len(set(keys)) == 6 and all(len(key) == 64 for key in keys)
    with pytest.raises(ValueError, match="fewer than"):
        block_keys(TOKENS, 16, 7, "model")


def test_entry_round_trips_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    store, key, data = written(tmp_path)
    assert store.is_complete(key)
    for name, tensor in data.items():
        assert torch.equal(store.read_layer(key, 0, name), tensor)
    assert not [path for path in (tmp_path / "store").rglob("*") if path.name.endswith(".tmp")]
    assert store.longest_prefix(block_keys(TOKENS, 16, 5, "model")) == 3


def test_every_rank_must_have_written(tmp_path: Path) -> None:
    store, key, _ = written(tmp_path, world_size=2)
    assert store.is_complete(key)
    store.entry_dir(key).joinpath("rank1.json").unlink()
    assert not store.is_complete(key)


def test_truncated_layer_file_is_a_miss_not_an_error(tmp_path: Path) -> None:
    store, key, _ = written(tmp_path)
    (layer_file,) = store.entry_dir(key).glob("rank0-model.layers.1*.kv")
    with open(layer_file, "r+b") as handle:
        handle.truncate(layer_file.stat().st_size // 2)
    assert not store.is_complete(key)
    assert store.longest_prefix(block_keys(TOKENS, 16, 5, "model")) == 0
    with pytest.raises(CorruptEntryError):
        store.read_layer(key, 0, LAYERS[1])


@pytest.mark.parametrize("damage", ["flipped byte", "garbage manifest", "other key in manifest"])
def test_damaged_entries_are_refused(tmp_path: Path, damage: str) -> None:
    store, key, _ = written(tmp_path)
    directory = store.entry_dir(key)
    if damage == "flipped byte":
        (layer_file,) = directory.glob("rank0-model.layers.0*.kv")
        payload = bytearray(layer_file.read_bytes())
        payload[7] ^= 0xFF
        layer_file.write_bytes(bytes(payload))
        assert store.is_complete(key)  # same size: only the checksum on read can tell
    elif damage == "garbage manifest":
        (directory / "rank0.json").write_text("{not json", encoding="utf-8")
        assert not store.is_complete(key)
    else:
        other = block_keys(TOKENS, 16, 2, "model")[-1]
        text = (directory / "rank0.json").read_text(encoding="utf-8")
        (directory / "rank0.json").write_text(text.replace(key, other), encoding="utf-8")
        assert not store.is_complete(key)
    with pytest.raises(CorruptEntryError):
        store.read_layer(key, 0, LAYERS[0])


@pytest.mark.parametrize("key", ["../../etc", "ab/../../x", "A" * 64, "0" * 63, ""])
def test_paths_cannot_leave_the_root(tmp_path: Path, key: str) -> None:
    store = DiskKVStore(tmp_path / "store")
    with pytest.raises(ValueError):
        store.entry_dir(key)
    assert not store.is_complete(key)


def test_symlinked_shard_outside_the_root_is_refused(tmp_path: Path) -> None:
    store = DiskKVStore(tmp_path / "store")
    key = block_keys(TOKENS, 16, 1, "model")[0]
    (tmp_path / "store").mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "store" / key[:2])
    with pytest.raises(ValueError, match="outside"):
        store.write_entry(key, 0, layers())
    assert not any((tmp_path / "elsewhere").iterdir())


def test_odd_layer_names_become_safe_file_names(tmp_path: Path) -> None:
    store = DiskKVStore(tmp_path / "store")
    key = block_keys(TOKENS, 16, 1, "model")[0]
    store.write_entry(key, 0, {"../../escape": torch.ones(16, 1, 8)})
    assert torch.equal(store.read_layer(key, 0, "../../escape"), torch.ones(16, 1, 8))
    assert all(path.resolve().is_relative_to(store.root) for path in store.root.rglob("*"))
