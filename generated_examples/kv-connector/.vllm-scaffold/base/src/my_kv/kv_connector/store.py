"""The on-disk KV store of my_kv's connector: entries of full prompt blocks, one file per layer and rank.

Used by both halves of the connector: the scheduler side (engine core) only checks which entries are
complete; the worker side (each worker process) writes and reads them. Imports only torch and the standard
library.

Layout under the store's root directory (from kv_connector_extra_config["storage_dir"]):

    <root>/<key[:2]>/<key>/rank<R>.json        manifest of rank R: per layer file, dtype, shape, size, crc32
    <root>/<key[:2]>/<key>/rank<R>-<layer>.kv   that rank's KV of one layer: raw [tokens, heads, content]

An entry holds the first `n` full blocks of a prompt. Its key is a chained SHA-256 over a namespace (model,
dtype, block size, parallel layout, and the request's cache salt, LoRA and multimodal hashes) and the token
ids of blocks 1..n, so the keys of every block-aligned prefix of a prompt come out of one pass. Request data
only ever enters a path through these hex digests, and every path is checked to stay under the root.

Every file is written to a temporary name and renamed into place (atomic on POSIX); a rank's manifest is
renamed last, so an entry counts as present only when each rank's manifest parses and names files of the
right size. Anything else (missing, truncated, foreign or corrupt files) is a miss, never an error. Reads
also check the crc32, so corruption after the size check becomes a load error the engine can recompute.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
import zlib
from array import array
from collections.abc import Sequence
from pathlib import Path

import torch

FORMAT_VERSION = 1
_KEY = re.compile(r"[0-9a-f]{64}\Z")
_SAFE_LAYER = re.compile(r"[A-Za-z0-9_.\-]{1,128}\Z")


class CorruptEntryError(Exception):
    """A stored entry that cannot be used: missing, truncated or altered file, or an unexpected shape."""


def block_keys(token_ids: Sequence[int], block_size: int, num_blocks: int, namespace: str) -> list[str]:
    """Keys of the prefixes of 1..num_blocks full blocks of `token_ids`; each covers its whole prefix."""
    if num_blocks * block_size > len(token_ids):
        raise ValueError(f"{len(token_ids)} tokens hold fewer than {num_blocks} blocks of {block_size}")
    digest = hashlib.sha256(f"v{FORMAT_VERSION}|{namespace}".encode()).digest()
    keys = []
    for start in range(0, num_blocks * block_size, block_size):
        block = array("q", token_ids[start : start + block_size]).tobytes()
        digest = hashlib.sha256(digest + block).digest()
        keys.append(digest.hex())
    return keys


def _layer_file_stem(layer_name: str) -> str:
    """A file-name-safe stem for a layer name; unusual names are hashed rather than trusted."""
    if _SAFE_LAYER.match(layer_name) and layer_name not in {".", ".."}:
        return layer_name
    return "layer-" + hashlib.sha256(layer_name.encode()).hexdigest()[:32]


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


class DiskKVStore:
    """Entries of prompt-prefix KV under `root`, written by `world_size` ranks (tensor x pipeline)."""

    def __init__(self, root: str | os.PathLike[str], world_size: int = 1) -> None:
        self.root = Path(root).expanduser().resolve()
        self.world_size = world_size

    # Paths ------------------------------------------------------------------------------------------

    def entry_dir(self, key: str) -> Path:
        if not _KEY.match(key):
            raise ValueError(f"not a store key: {key!r}")
        path = self.root / key[:2] / key
        if not path.resolve().is_relative_to(self.root):  # a symlinked shard directory pointing elsewhere
            raise ValueError(f"entry {key} resolves outside the store root {self.root}")
        return path

    def _manifest_path(self, key: str, rank: int) -> Path:
        return self.entry_dir(key) / f"rank{int(rank)}.json"

    def _layer_path(self, key: str, rank: int, layer_name: str) -> Path:
        return self.entry_dir(key) / f"rank{int(rank)}-{_layer_file_stem(layer_name)}.kv"

    # Scheduler side ---------------------------------------------------------------------------------

    def is_complete(self, key: str) -> bool:
        """Whether every rank's manifest of `key` is valid and names files of the stated sizes. Reads only."""
        try:
            return all(self._manifest(key, rank) is not None for rank in range(self.world_size))
        except (OSError, ValueError):
            return False

    def longest_prefix(self, keys: Sequence[str], min_blocks: int = 0) -> int:
        """The largest n > min_blocks with a complete entry for keys[n - 1]; 0 when there is none."""
        for num_blocks in range(len(keys), min_blocks, -1):
            if self.is_complete(keys[num_blocks - 1]):
                return num_blocks
        return 0

    def _manifest(self, key: str, rank: int) -> dict | None:
        try:
            manifest = json.loads(self._manifest_path(key, rank).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(manifest, dict) or manifest.get("key") != key:
            return None
        if manifest.get("version") != FORMAT_VERSION:
            return None
        layers = manifest.get("layers")
        if not isinstance(layers, dict) or not layers:
            return None
        for layer_name, info in layers.items():
            try:
                if self._layer_path(key, rank, layer_name).stat().st_size != info["nbytes"]:
                    return None
            except (OSError, KeyError, TypeError):
                return None
        return manifest

    # Worker side ------------------------------------------------------------------------------------

    def write_entry(self, key: str, rank: int, layers: dict[str, torch.Tensor]) -> None:
        """Writes this rank's part of entry `key`: one file per layer, then the manifest, each atomically."""
        if not layers:
            raise ValueError("an entry needs at least one layer")
        directory = self.entry_dir(key)
        directory.mkdir(parents=True, exist_ok=True)
        described = {}
        for layer_name, tensor in layers.items():
            payload = tensor.detach().to("cpu").contiguous().view(torch.uint8).numpy().tobytes()
            _atomic_write(self._layer_path(key, rank, layer_name), payload)
            described[layer_name] = {
                "dtype": _dtype_name(tensor.dtype),
                "shape": list(tensor.shape),
                "nbytes": len(payload),
                "crc32": zlib.crc32(payload),
            }
        manifest = {"version": FORMAT_VERSION, "key": key, "rank": rank, "layers": described}
        _atomic_write(self._manifest_path(key, rank), json.dumps(manifest, sort_keys=True).encode())

    def read_layer(self, key: str, rank: int, layer_name: str) -> torch.Tensor:
        """This rank's KV of one layer of entry `key`, as its manifest describes it, or CorruptEntryError."""
        manifest = self._manifest(key, rank)
        if manifest is None or layer_name not in manifest["layers"]:
            raise CorruptEntryError(f"entry {key}: no valid rank {rank} manifest naming layer {layer_name}")
        info = manifest["layers"][layer_name]
        try:
            payload = self._layer_path(key, rank, layer_name).read_bytes()
            dtype = getattr(torch, info["dtype"])
            shape = [int(size) for size in info["shape"]]
        except (OSError, AttributeError, KeyError, TypeError, ValueError) as error:
            raise CorruptEntryError(f"entry {key}, layer {layer_name}: {error}") from error
        if len(payload) != info["nbytes"] or zlib.crc32(payload) != info["crc32"]:
            raise CorruptEntryError(f"entry {key}, layer {layer_name}: size or checksum does not match")
        try:
            return torch.frombuffer(bytearray(payload), dtype=torch.uint8).view(dtype).reshape(shape)
        except RuntimeError as error:
            raise CorruptEntryError(f"entry {key}, layer {layer_name}: {error}") from error


def _atomic_write(path: Path, payload: bytes) -> None:
    """Writes `payload` to a unique temporary file next to `path`, then renames it over `path`."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temporary, "wb") as handle:
            handle.write(payload)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
